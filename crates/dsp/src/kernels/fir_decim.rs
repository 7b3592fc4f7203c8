//! Decimating direct-form FIR filter over a sliding window.
//!
//! Same window contract as [`super::Fir`] (the first `taps − 1` items of `input` are history),
//! but only every `D`-th output is computed: output `j` is the dot product of the taps with
//! `input[j·D .. j·D + taps]`, i.e. it is aligned with input item `j·D + taps − 1`. A call
//! produces `n = min((m − taps)/D + 1, output.len())` outputs (0 if `m < taps`) from a window
//! of `m` items and consumes `n·D`, so the next window starts on the next output's phase.
//! No state is kept between calls (no `reset` needed).

use super::{DspError, FirTaps};

/// A decimating FIR filter over prepared taps `T`.
#[derive(Debug, Clone)]
pub struct FirDecim<T> {
    taps: T,
    decimation: usize,
}

impl<T> FirDecim<T> {
    /// A filter keeping one output in `decimation`; `Err` if `decimation` is 0.
    pub fn new(taps: T, decimation: usize) -> Result<Self, DspError> {
        if decimation == 0 {
            return Err(DspError::InvalidDecimation(decimation));
        }
        Ok(FirDecim { taps, decimation })
    }

    /// The decimation factor `D`.
    pub fn decimation(&self) -> usize {
        self.decimation
    }

    /// Filters one window: returns `(consumed, produced)` = `(n·D, n)`.
    pub fn filter<I>(&mut self, input: &[I], output: &mut [T::Output]) -> (usize, usize)
    where
        T: FirTaps<I>,
    {
        let len = self.taps.len();
        let d = self.decimation;
        let n = if input.len() < len {
            0
        } else {
            (input.len() - len) / d + 1
        }
        .min(output.len());
        if d == 1 {
            // Consecutive outputs: the multi-output kernels, no reduction per output.
            if n > 0 {
                self.taps
                    .filter_run(&input[..n + len - 1], &mut output[..n]);
            }
            return (n, n);
        }
        for (j, out) in output[..n].iter_mut().enumerate() {
            *out = self.taps.dot(&input[j * d..j * d + len]);
        }
        (n * d, n)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{assert_close, chunked, direct_f64, rand_c, rand_r};
    use super::super::{ComplexTaps, RealTaps};
    use super::*;
    use num_complex::Complex32;
    use rand::SeedableRng;

    #[test]
    fn matches_every_dth_output_of_the_f64_reference() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(21);
        for (taps, d) in [(1, 1), (5, 2), (17, 3), (64, 4), (31, 7)] {
            let (hr, hc, x) = (
                rand_r(taps, &mut rng),
                rand_c(taps, &mut rng),
                rand_c(700, &mut rng),
            );
            let n = (700 - taps) / d + 1;
            let mut out = vec![Complex32::default(); n + 5];
            let mut f = FirDecim::new(ComplexTaps::new(&hc).unwrap(), d).unwrap();
            assert_eq!(f.filter(&x[..], &mut out), (n * d, n));
            assert_close(&out[..n], &direct_f64(&hc, &x, d), "ccc");
            let hr_c: Vec<Complex32> = hr.iter().map(|&t| Complex32::new(t, 0.0)).collect();
            let mut f = FirDecim::new(RealTaps::new(&hr).unwrap(), d).unwrap();
            assert_eq!(f.filter(&x[..], &mut out), (n * d, n));
            assert_close(&out[..n], &direct_f64(&hr_c, &x, d), "ccf");
            let xr: Vec<f32> = x.iter().map(|v| v.re).collect();
            let mut outr = vec![0.0f32; n];
            assert_eq!(f.filter(&xr[..], &mut outr), (n * d, n));
            let xr_c: Vec<Complex32> = xr.iter().map(|&t| Complex32::new(t, 0.0)).collect();
            let outr_c: Vec<Complex32> = outr.iter().map(|&t| Complex32::new(t, 0.0)).collect();
            assert_close(&outr_c, &direct_f64(&hr_c, &xr_c, d), "rrf");
        }
    }

    #[test]
    fn random_chunking_equals_one_shot() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(22);
        let (h, x) = (rand_c(24, &mut rng), rand_c(4000, &mut rng));
        let mut f = FirDecim::new(ComplexTaps::new(&h).unwrap(), 5).unwrap();
        let mut once = vec![Complex32::default(); 4000];
        let (_, n) = f.filter(&x[..], &mut once);
        once.truncate(n);
        let streamed = chunked(&x, 30, 5, &mut rng, |w, o| f.filter(w, o));
        assert_eq!(streamed, once);
    }

    #[test]
    fn zero_decimation_is_refused() {
        let e = FirDecim::new(RealTaps::new(&[1.0]).unwrap(), 0).unwrap_err();
        assert_eq!(e.to_string(), "decimation factor 0 is invalid (at least 1)");
    }
}
