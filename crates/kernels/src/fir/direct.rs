//! Direct-form FIR filter over a sliding window, optionally decimating.
//!
//! # Window contract
//! `filter(input, output)` treats `input` as a window whose first `taps − 1` items are
//! history (the previous call's last items, or zeros/whatever the stream starts with).
//! Output `j` is `Σ_k taps[k] · input[j + taps − 1 − k]`. With `m = input.len()` it produces
//! `n = min(m − (taps − 1), output.len())` outputs (0 if `m < taps`) and reports `n` items
//! consumed: the caller drops `n` items from the front of its queue and keeps the rest as the
//! next window's history. A reader of a sluice queue does exactly this with
//! `window(n + taps − 1)` / `consume(n)`, so the filter never copies history.
//!
//! # Decimation
//! [`Fir::decimating`] computes only every `D`-th output: output `j` is the dot product of the
//! taps with `input[j·D .. j·D + taps]`, i.e. it is aligned with input item `j·D + taps − 1`. A
//! call produces `n = min((m − taps)/D + 1, output.len())` outputs (0 if `m < taps`) from a
//! window of `m` items and consumes `n·D`, so the next window starts on the next output's phase.
//! With `D = 1` consecutive outputs go through the multi-output kernels (no reduction per
//! output).
//!
//! The kernel keeps no state between calls, so it needs no `reset`: the history lives in the
//! caller's window.
//!
//! Supported combinations: real taps × real items ([`RealTaps`], `f32 → f32`), real taps ×
//! complex items ([`RealTaps`], `Complex32 → Complex32`), complex taps × complex items
//! ([`ComplexTaps`], `Complex32 → Complex32`).

use super::FirTaps;
#[cfg(doc)]
use super::{ComplexTaps, RealTaps};
use crate::DspError;

/// A direct-form FIR filter over prepared taps `T`, keeping one output in `D` (see the module
/// docs for the window contract).
#[derive(Debug, Clone)]
pub struct Fir<T> {
    taps: T,
    decimation: usize,
}

impl<T> Fir<T> {
    /// A filter with these prepared taps ([`RealTaps::new`] or [`ComplexTaps::new`] check them),
    /// computing every output.
    pub fn new(taps: T) -> Self {
        Fir {
            taps,
            decimation: 1,
        }
    }

    /// A filter keeping one output in `decimation`; `Err` if `decimation` is 0.
    pub fn decimating(taps: T, decimation: usize) -> Result<Self, DspError> {
        if decimation == 0 {
            return Err(DspError::InvalidDecimation(decimation));
        }
        Ok(Fir { taps, decimation })
    }

    /// The prepared taps.
    pub fn taps(&self) -> &T {
        &self.taps
    }

    /// The decimation factor `D` (1 unless made by [`Fir::decimating`]).
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

    /// Items of history a window must start with (`taps − 1`).
    pub fn history<I>(&self) -> usize
    where
        T: FirTaps<I>,
    {
        self.taps.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ComplexTaps, RealTaps};
    use super::*;
    use crate::test_util::{assert_close, chunked, direct_f64, rand_c, rand_r};
    use num_complex::Complex32;
    use rand::SeedableRng;

    fn c(x: f32) -> Complex32 {
        Complex32::new(x, 0.0)
    }

    #[test]
    fn all_combinations_match_the_f64_reference() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for taps in [1, 2, 7, 16, 33, 130] {
            let (hr, hc) = (rand_r(taps, &mut rng), rand_c(taps, &mut rng));
            let (xr, xc) = (rand_r(500, &mut rng), rand_c(500, &mut rng));
            let n = 500 - (taps - 1);

            let mut out = vec![0.0f32; n];
            let mut f = Fir::new(RealTaps::new(&hr).unwrap());
            assert_eq!(f.filter(&xr[..], &mut out), (n, n));
            let hr_c: Vec<Complex32> = hr.iter().map(|&t| c(t)).collect();
            let xr_c: Vec<Complex32> = xr.iter().map(|&t| c(t)).collect();
            let out_c: Vec<Complex32> = out.iter().map(|&t| c(t)).collect();
            assert_close(&out_c, &direct_f64(&hr_c, &xr_c, 1), "rrf");

            let mut out = vec![Complex32::default(); n];
            assert_eq!(f.filter(&xc[..], &mut out), (n, n));
            assert_close(&out, &direct_f64(&hr_c, &xc, 1), "ccf");

            let mut f = Fir::new(ComplexTaps::new(&hc).unwrap());
            assert_eq!(f.filter(&xc[..], &mut out), (n, n));
            assert_close(&out, &direct_f64(&hc, &xc, 1), "ccc");
        }
    }

    #[test]
    fn random_chunking_equals_one_shot() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(12);
        let (h, x) = (rand_c(21, &mut rng), rand_c(3000, &mut rng));
        let mut f = Fir::new(ComplexTaps::new(&h).unwrap());
        let mut once = vec![Complex32::default(); 3000];
        let (_, n) = f.filter(&x[..], &mut once);
        once.truncate(n);
        let streamed = chunked(&x, 20, 1, &mut rng, |w, o| f.filter(w, o));
        assert_eq!(streamed, once);
    }

    #[test]
    fn short_windows_and_outputs_limit_the_work() {
        let mut f = Fir::new(RealTaps::new(&[1.0, 2.0, 3.0]).unwrap());
        let mut out = [0.0f32; 8];
        assert_eq!(f.filter(&[1.0f32, 1.0][..], &mut out), (0, 0));
        assert_eq!(f.filter(&[1.0f32; 10][..], &mut out[..3]), (3, 3));
        assert_eq!(out[..3], [6.0, 6.0, 6.0]);
        assert_eq!(f.history::<f32>(), 2);
    }

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
            let mut f = Fir::decimating(ComplexTaps::new(&hc).unwrap(), d).unwrap();
            assert_eq!(f.filter(&x[..], &mut out), (n * d, n));
            assert_close(&out[..n], &direct_f64(&hc, &x, d), "ccc");
            let hr_c: Vec<Complex32> = hr.iter().map(|&t| Complex32::new(t, 0.0)).collect();
            let mut f = Fir::decimating(RealTaps::new(&hr).unwrap(), d).unwrap();
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
    fn decimating_random_chunking_equals_one_shot() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(22);
        let (h, x) = (rand_c(24, &mut rng), rand_c(4000, &mut rng));
        let mut f = Fir::decimating(ComplexTaps::new(&h).unwrap(), 5).unwrap();
        let mut once = vec![Complex32::default(); 4000];
        let (_, n) = f.filter(&x[..], &mut once);
        once.truncate(n);
        let streamed = chunked(&x, 30, 5, &mut rng, |w, o| f.filter(w, o));
        assert_eq!(streamed, once);
    }

    #[test]
    fn zero_decimation_is_refused() {
        let e = Fir::decimating(RealTaps::new(&[1.0]).unwrap(), 0).unwrap_err();
        assert_eq!(e.to_string(), "decimation factor 0 is invalid (at least 1)");
    }
}
