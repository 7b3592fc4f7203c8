//! Flush-to-zero and denormals-are-zero: the floating-point mode the real-time paths run in.
//!
//! Denormals in a decaying reverb tail can slow FFTs and multiply-accumulates by 100x, so the
//! convolution engine's callback and workers, and the live JACK callback, set FTZ (MXCSR bit 15)
//! and DAZ (bit 6). On targets other than x86_64 both calls do nothing.

/// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6) bits.
#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = 0x8040;

/// Sets flush-to-zero and denormals-are-zero in the calling thread's floating-point mode for
/// good (a thread that runs nothing else, like a JACK callback thread).
pub fn set_flush_to_zero() {
    #[cfg(target_arch = "x86_64")]
    {
        let v = read_mxcsr() | FTZ_DAZ;
        // SAFETY: `v` is the thread's current MXCSR (valid) with only FTZ and DAZ added, both
        // supported by every x86_64 CPU (SSE2).
        unsafe { write_mxcsr(v) };
    }
}

/// Flush-to-zero and denormals-are-zero for the calling thread while it lives; dropping it
/// restores the mode it found. Not `Send`: the mode belongs to the thread that set it.
#[derive(Debug)]
pub struct DenormalGuard {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl DenormalGuard {
    /// Sets FTZ and DAZ, remembering the previous mode.
    #[inline]
    #[must_use = "the mode is restored when the guard is dropped"]
    pub fn new() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let saved = read_mxcsr();
            // SAFETY: only the FTZ and DAZ bits change; every x86_64 CPU with SSE2 supports
            // both, and neither affects memory safety, only how tiny floats round.
            unsafe { write_mxcsr(saved | FTZ_DAZ) };
            Self {
                saved,
                _not_send: std::marker::PhantomData,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Self {
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Default for DenormalGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for DenormalGuard {
    #[inline]
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: restores the value read from this same thread's MXCSR in `new` (the guard is
        // not `Send`, so it is dropped on that thread).
        unsafe {
            write_mxcsr(self.saved)
        };
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_mxcsr() -> u32 {
    let mut v: u32 = 0;
    // SAFETY: `stmxcsr` stores the 32-bit MXCSR into the local we point at; no other effect.
    unsafe {
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut v as *mut u32, options(nostack, preserves_flags));
    }
    v
}

/// Loads MXCSR (replaces the deprecated `_mm_setcsr`).
///
/// # Safety
/// `v` must be a valid MXCSR value (reserved bits clear), otherwise the CPU raises #GP.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn write_mxcsr(v: u32) {
    // SAFETY: the caller guarantees `v` is a valid MXCSR value; `ldmxcsr` reads 4 bytes from
    // the local we point at.
    unsafe {
        std::arch::asm!("ldmxcsr [{}]", in(reg) &v as *const u32, options(nostack, readonly, preserves_flags));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn half_of_the_smallest_normal() -> f32 {
        std::hint::black_box(std::hint::black_box(f32::MIN_POSITIVE) * 0.5)
    }

    #[test]
    fn the_guard_flushes_and_restores() {
        std::thread::spawn(|| {
            assert_ne!(half_of_the_smallest_normal(), 0.0);
            {
                let _g = DenormalGuard::new();
                #[cfg(target_arch = "x86_64")]
                assert_eq!(half_of_the_smallest_normal(), 0.0);
            }
            assert_ne!(half_of_the_smallest_normal(), 0.0);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn set_flush_to_zero_stays_set() {
        std::thread::spawn(|| {
            set_flush_to_zero();
            #[cfg(target_arch = "x86_64")]
            assert_eq!(half_of_the_smallest_normal(), 0.0);
        })
        .join()
        .unwrap();
    }
}
