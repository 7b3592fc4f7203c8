//! Which instruction-set level the radio kernels run at.
//!
//! Each hot kernel has a portable loop and an AVX2+FMA loop (`std::arch`), chosen at run time:
//! [`best`] is the level [`SimdLevel::detect`] reports if it is usable. The multi-window dot
//! products of the decimating filters (`fir/multi_dot.rs`) have AVX-512 loops; the other kernels run
//! their AVX2 loops on AVX-512 CPUs (see `fir/rcf_x86.rs` for why). Kernels that can
//! be told a level (`*_with`, `with_level`) let the tests check every level the CPU has
//! against the same f64 reference.

use super::SimdLevel;

/// Whether `level` can run here: AVX-512 and AVX2 builds also need FMA (every CPU with
/// AVX-512F has it; AVX2 CPUs without it exist).
pub(super) fn usable(level: SimdLevel) -> bool {
    match level {
        SimdLevel::Portable => true,
        #[cfg(target_arch = "x86_64")]
        _ => level.is_supported() && is_x86_feature_detected!("fma"),
        #[cfg(not(target_arch = "x86_64"))]
        _ => false,
    }
}

/// The level the kernels use by default: the best [`usable`] one.
pub(super) fn best() -> SimdLevel {
    let level = SimdLevel::detect();
    if usable(level) {
        level
    } else if usable(SimdLevel::Avx2Fma) {
        SimdLevel::Avx2Fma
    } else {
        SimdLevel::Portable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_level_is_usable() {
        assert!(usable(SimdLevel::Portable) && usable(best()));
    }
}
