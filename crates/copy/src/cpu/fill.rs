//! Pattern fills: `memset` for one byte, a doubling copy of the pattern for 2-16 bytes, and
//! non-temporal stores of a precomputed pattern block above the cache size.

use std::ptr;

use super::Strategy;

/// Writes `pat` repeatedly over `len` bytes at `dst`, phase 0 at `dst`.
///
/// # Safety
///
/// `dst` is valid for writes of `len` bytes; `pat` holds 1 to 16 bytes.
pub(crate) unsafe fn fill(s: &Strategy, dst: *mut u8, len: usize, pat: &[u8]) {
    let p = pat.len();
    if len == 0 || p == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if len >= s.non_temporal_from && s.avx512 && s.nt_fill {
        // SAFETY: forwarded contract; AVX-512F detected.
        return unsafe { fill_nt(dst, len, pat) };
    }
    let _ = s;
    if p == 1 {
        // SAFETY: the caller's contract.
        return unsafe { ptr::write_bytes(dst, pat[0], len) };
    }
    // SAFETY: every write below is inside `dst..dst + len`; the copies read an already
    // written prefix and write past it (disjoint).
    unsafe {
        let first = p.min(len);
        ptr::copy_nonoverlapping(pat.as_ptr(), dst, first);
        // Double the written prefix (a multiple of p) up to a block of about 4 KiB …
        let mut filled = first;
        while filled < len && filled < 4096 {
            let n = filled.min(len - filled);
            ptr::copy_nonoverlapping(dst, dst.add(filled), n);
            filled += n;
        }
        // … then repeat that block, which stays in L1.
        let block = filled;
        while filled < len {
            let n = block.min(len - filled);
            ptr::copy_nonoverlapping(dst, dst.add(filled), n);
            filled += n;
        }
    }
}

/// # Safety
///
/// As for [`fill`], and the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
unsafe fn fill_nt(dst: *mut u8, len: usize, pat: &[u8]) {
    let p = pat.len();
    let head = dst.align_offset(64).min(len);
    let nvec = (len - head) / 64;
    let body = nvec * 64;
    // The body starts at phase head % p; a block of 64·p bytes covers whole vectors and
    // whole patterns, so vector k is block[(k % p) * 64..][..64].
    let mut block = [0u8; 64 * 16];
    for (j, b) in block[..64 * p].iter_mut().enumerate() {
        *b = pat[(head + j) % p];
    }
    // SAFETY: head, body and tail partition `dst..dst + len`; `dst + head` is 64-aligned.
    unsafe {
        for i in 0..head {
            *dst.add(i) = pat[i % p];
        }
        super::copy::x86::fill_nt_avx512(dst.add(head), nvec, &block, p);
        for i in head + body..len {
            *dst.add(i) = pat[i % p];
        }
    }
}
