//! Contiguous copies, by size: an inline `memcpy` for small ones, `rep movsb` in the middle
//! (fast on CPUs with ERMS/FSRM), and non-temporal vector stores above the cache size so a
//! large copy does not evict everything else (AVX-512 when the CPU has it, else AVX2, else the
//! plain copy).

use std::ptr;

use super::Strategy;

/// How one contiguous piece is copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `ptr::copy_nonoverlapping` (the C library's `memcpy`, usually inlined for small sizes).
    Inline,
    /// `rep movsb`.
    RepMovsb,
    /// Streaming (non-temporal) vector stores, then `sfence`.
    NonTemporal,
}

impl Strategy {
    /// The method for a piece of `len` bytes belonging to an operation of `total` bytes.
    pub fn method(&self, len: usize, total: usize) -> Method {
        if total >= self.non_temporal_from && len >= 256 && self.has_nt() {
            Method::NonTemporal
        } else if len >= self.rep_movsb_from && self.rep_movsb {
            Method::RepMovsb
        } else {
            Method::Inline
        }
    }

    fn has_nt(&self) -> bool {
        self.avx512 || self.avx2
    }
}

/// Copies `len` bytes with `method`.
///
/// # Safety
///
/// `src` is valid for reads and `dst` for writes of `len` bytes; the ranges do not overlap.
pub(crate) unsafe fn copy_with(
    s: &Strategy,
    method: Method,
    dst: *mut u8,
    src: *const u8,
    len: usize,
) {
    match method {
        // SAFETY: the caller's contract.
        Method::Inline => unsafe { ptr::copy_nonoverlapping(src, dst, len) },
        // SAFETY: the caller's contract.
        Method::RepMovsb => unsafe { rep_movsb(dst, src, len) },
        // SAFETY: the caller's contract.
        Method::NonTemporal => unsafe { copy_nt(s, dst, src, len) },
    }
}

/// Copies `len` bytes with the method `s` picks for that size.
///
/// # Safety
///
/// As for [`copy_with`].
pub(crate) unsafe fn copy(s: &Strategy, dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: the caller's contract.
    unsafe { copy_with(s, s.method(len, len), dst, src, len) }
}

/// `rep movsb` (the portable copy elsewhere).
///
/// # Safety
///
/// As for [`copy_with`].
#[inline]
pub(crate) unsafe fn rep_movsb(dst: *mut u8, src: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rep movsb copies rcx bytes from [rsi] to [rdi] upwards (the ABI guarantees DF is
    // clear); the ranges are valid and disjoint by the caller's contract.
    unsafe {
        std::arch::asm!(
            "rep movsb",
            inout("rcx") len => _,
            inout("rdi") dst => _,
            inout("rsi") src => _,
            options(nostack, preserves_flags)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract.
    unsafe {
        ptr::copy_nonoverlapping(src, dst, len)
    }
}

/// Non-temporal copy: head up to 64-byte destination alignment, streaming stores, tail.
///
/// # Safety
///
/// As for [`copy_with`].
pub(crate) unsafe fn copy_nt(s: &Strategy, dst: *mut u8, src: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if s.avx512 {
            // SAFETY: AVX-512F was detected at run time; the caller's contract.
            return unsafe { x86::copy_nt_avx512(dst, src, len) };
        }
        if s.avx2 {
            // SAFETY: AVX2 was detected at run time; the caller's contract.
            return unsafe { x86::copy_nt_avx2(dst, src, len) };
        }
    }
    let _ = s;
    // SAFETY: the caller's contract.
    unsafe { ptr::copy_nonoverlapping(src, dst, len) }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use std::arch::x86_64::*;
    use std::ptr;

    /// # Safety
    ///
    /// The CPU has AVX-512F; `src` is valid for reads and `dst` for writes of `len` bytes; the
    /// ranges do not overlap.
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn copy_nt_avx512(dst: *mut u8, src: *const u8, len: usize) {
        let head = dst.align_offset(64).min(len);
        // SAFETY: within the caller's ranges; every access below stays below `len`, and the
        // streaming stores are 64-byte aligned (`dst + head` is aligned, steps are 64).
        unsafe {
            ptr::copy_nonoverlapping(src, dst, head);
            let mut i = head;
            while i + 256 <= len {
                let a = _mm512_loadu_si512(src.add(i).cast());
                let b = _mm512_loadu_si512(src.add(i + 64).cast());
                let c = _mm512_loadu_si512(src.add(i + 128).cast());
                let d = _mm512_loadu_si512(src.add(i + 192).cast());
                _mm512_stream_si512(dst.add(i).cast(), a);
                _mm512_stream_si512(dst.add(i + 64).cast(), b);
                _mm512_stream_si512(dst.add(i + 128).cast(), c);
                _mm512_stream_si512(dst.add(i + 192).cast(), d);
                i += 256;
            }
            while i + 64 <= len {
                let a = _mm512_loadu_si512(src.add(i).cast());
                _mm512_stream_si512(dst.add(i).cast(), a);
                i += 64;
            }
            _mm_sfence();
            ptr::copy_nonoverlapping(src.add(i), dst.add(i), len - i);
        }
    }

    /// # Safety
    ///
    /// The CPU has AVX2; otherwise as for [`copy_nt_avx512`].
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn copy_nt_avx2(dst: *mut u8, src: *const u8, len: usize) {
        let head = dst.align_offset(32).min(len);
        // SAFETY: as in `copy_nt_avx512`, with 32-byte alignment and steps.
        unsafe {
            ptr::copy_nonoverlapping(src, dst, head);
            let mut i = head;
            while i + 128 <= len {
                let a = _mm256_loadu_si256(src.add(i).cast());
                let b = _mm256_loadu_si256(src.add(i + 32).cast());
                let c = _mm256_loadu_si256(src.add(i + 64).cast());
                let d = _mm256_loadu_si256(src.add(i + 96).cast());
                _mm256_stream_si256(dst.add(i).cast(), a);
                _mm256_stream_si256(dst.add(i + 32).cast(), b);
                _mm256_stream_si256(dst.add(i + 64).cast(), c);
                _mm256_stream_si256(dst.add(i + 96).cast(), d);
                i += 128;
            }
            _mm_sfence();
            ptr::copy_nonoverlapping(src.add(i), dst.add(i), len - i);
        }
    }

    /// Streams the 64-byte-aligned body of a fill: `nvec` vectors from `dst` (aligned), the
    /// `k`-th taken from `block[(k % p) * 64..]`.
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512F; `dst` is 64-byte aligned and valid for writes of `64 * nvec`
    /// bytes; `block` holds `64 * p` bytes.
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn fill_nt_avx512(dst: *mut u8, nvec: usize, block: &[u8], p: usize) {
        debug_assert!(block.len() >= 64 * p);
        let mut j = 0;
        for k in 0..nvec {
            // SAFETY: `j < p`, so the load stays inside `block`; the store is the k-th aligned
            // vector of the caller's range.
            unsafe {
                let v = _mm512_loadu_si512(block.as_ptr().add(j * 64).cast());
                _mm512_stream_si512(dst.add(k * 64).cast(), v);
            }
            j += 1;
            if j == p {
                j = 0;
            }
        }
        _mm_sfence();
    }
}
