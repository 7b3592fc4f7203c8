//! When to filter with overlap-save instead of the direct form, and at which FFT size.
//!
//! Both figures were measured on this project's development machine, not derived: see
//! [`FFT_CROSSOVER_TAPS`].

/// Filters with at least this many (complex) taps run faster per sample with
/// [`super::OverlapSave`] (FFT size from [`fft_size_for_taps`]) than with the direct form
/// [`super::Fir`], for complex items and complex taps.
///
/// Measured 2026-11-21 (00:54 UTC; an earlier run at 2026-11-20 23:55 UTC gave the same
/// crossover) on the development machine (Intel Xeon, 2 logical cores shared with other jobs,
/// AVX-512, Linux 6.18, rustc 1.95, release profile) with
/// `sluice bench fir-crossover --taps 4,6,8,10,12,14,16,20,24,32,48,64,128,256,512,1024`
/// (median of 3 trials of 100 ms per point; each variant filters a cache-resident block):
/// the direct form (AVX2+FMA multi-output kernel) cost 2.03 ns/sample at 14 taps and 2.37 ns
/// at 16; overlap-save at its best FFT size cost 2.32 and 2.24 ns, and stayed below the
/// direct form for every longer length (3.0 vs 15.4 ns at 128 taps, 5.0 vs 122 ns at 1024).
/// The table is `docs/overlap-save/fir-crossover.csv`. A third run (00:57 UTC, busier
/// machine, `fir-crossover-rerun.csv`) put the crossover at 24 taps, with 20 taps a 2 % tie:
/// the crossover lies between 16 and 24 taps and 16 is the value two of three runs gave.
/// Real taps on complex items cost the
/// direct form about half as much, so for them the crossover is higher (not measured).
pub const FFT_CROSSOVER_TAPS: usize = 16;

/// The FFT size to use for `taps` taps: the next power of two at or above
/// `FFT_SIZE_FACTOR × taps`, and at least [`MIN_FFT_SIZE`] (so always at least `taps`).
pub fn fft_size_for_taps(taps: usize) -> usize {
    // Absurd lengths saturate to a size OverlapSave::new then refuses, rather than overflow.
    taps.max(1)
        .saturating_mul(FFT_SIZE_FACTOR)
        .checked_next_power_of_two()
        .unwrap_or(usize::MAX)
        .max(MIN_FFT_SIZE)
}

/// Ratio of FFT size to taps. In the measurement behind [`FFT_CROSSOVER_TAPS`], repeated three
/// times for 24–1024 taps, the cheapest FFT size was 4·L to 8·L (16·L once), and the size
/// [`fft_size_for_taps`] picks was the cheapest or within 12 % of it at every length, except
/// 512 taps in one run (24 %; 7 % and 0 % in the others). 8·L would double the latency for no
/// clear gain.
pub const FFT_SIZE_FACTOR: usize = 4;

/// The smallest FFT size [`fft_size_for_taps`] picks: below 256 points the per-block overhead
/// dominates (at 16 taps a 256-point FFT cost 2.15 ns/sample and a 64-point one 3.36 ns, in
/// the 2026-11-20 run).
pub const MIN_FFT_SIZE: usize = 256;

/// Whether a filter of `taps` taps should use overlap-save.
pub fn prefer_overlap_save(taps: usize) -> bool {
    taps >= FFT_CROSSOVER_TAPS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fft_size_fits_the_taps_and_is_a_power_of_two() {
        for taps in [1, 2, 3, 17, 64, 100, 1024, 5000] {
            let n = fft_size_for_taps(taps);
            assert!(
                n.is_power_of_two() && n >= taps && n >= MIN_FFT_SIZE,
                "{taps} -> {n}"
            );
            assert!(n >= FFT_SIZE_FACTOR * taps);
            assert!(n < 2 * FFT_SIZE_FACTOR * taps.max(MIN_FFT_SIZE));
        }
        assert!(!prefer_overlap_save(1) || FFT_CROSSOVER_TAPS <= 1);
        assert!(prefer_overlap_save(FFT_CROSSOVER_TAPS));
    }
}
