//! Real FFTs of `2S` points straight to and from the packed split spectra of [`crate::kernel`].
//!
//! The classic half-size trick: the `2S` real samples are read as `S` complex numbers
//! `z[m] = x[2m] + i x[2m+1]`, transformed by one complex FFT of size `S`, and the spectrum of
//! `x` is recovered from bins `k` and `S - k`. We write that twiddle step ourselves because it
//! is where `realfft` spent more time than in the complex FFT itself (perf, 2^16 IR, 256
//! channels: 18 % of all cycles), and because doing it here writes the split `re`/`im` arrays
//! the MAC reads directly, without a separate interleaved-to-split pass. The loops have no
//! dependencies between bins, so the compiler vectorises them (reverse loads for `S - k`).
//!
//! Scaling follows `realfft`: the forward transform is unnormalised and the inverse returns
//! `2S` times the signal.

use std::sync::Arc;

use num_complex::Complex;
use rustfft::{Fft, FftPlanner};

/// Forward and inverse real FFT of `2 * size` points with split packed spectra: the engine's
/// transform, public so it can be benchmarked and reused for other FDL code.
///
/// ```
/// use rustfft::FftPlanner;
/// use sluice_conv::SplitRealFft;
/// let mut fft = SplitRealFft::new(&mut FftPlanner::new(), 4);
/// let x = [1.0f32, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]; // a unit impulse: a flat spectrum
/// let (mut re, mut im) = ([0.0f32; 4], [0.0f32; 4]);
/// fft.forward(&x[..3], &x[3..], &mut re, &mut im);
/// assert_eq!((re, im), ([1.0; 4], [1.0, 0.0, 0.0, 0.0])); // im[0] holds the Nyquist bin
/// // Multiply by a delay of 5 samples, e^(-2 pi i 5k/8), and come back: 2S times the shifted
/// // impulse, of which the last S samples are kept.
/// for k in 1..4 {
///     let a = -2.0 * std::f32::consts::PI * 5.0 * k as f32 / 8.0;
///     (re[k], im[k]) = (a.cos(), a.sin());
/// }
/// im[0] = -1.0; // e^(-i pi 5) at Nyquist
/// let mut tail = [0.0f32; 4];
/// fft.inverse_tail(&re, &im, &mut tail);
/// let want = [0.0, 8.0, 0.0, 0.0];
/// assert!(tail.iter().zip(want).all(|(t, w)| (t - w).abs() < 1e-5));
/// ```
pub struct SplitRealFft {
    size: usize,
    fwd: Arc<dyn Fft<f32>>,
    inv: Arc<dyn Fft<f32>>,
    /// `W^k`, `W = exp(-2 pi i / 2S)`, for `k < size`.
    tw_re: Vec<f32>,
    tw_im: Vec<f32>,
    /// The `S` complex points transformed in place.
    z: Vec<Complex<f32>>,
    scratch: Vec<Complex<f32>>,
    avx2: bool,
}

impl SplitRealFft {
    /// Plans the transforms of `2 * size` real points (`size >= 1`; a power of two is fastest).
    ///
    /// # Panics
    /// If `size` is 0.
    pub fn new(planner: &mut FftPlanner<f32>, size: usize) -> Self {
        assert!(size >= 1, "real FFT of size 0");
        let fwd = planner.plan_fft_forward(size);
        let inv = planner.plan_fft_inverse(size);
        let scratch_len = fwd
            .get_inplace_scratch_len()
            .max(inv.get_inplace_scratch_len());
        let n = (2 * size) as f64;
        let angle = |k: usize| -2.0 * std::f64::consts::PI * k as f64 / n;
        #[cfg(target_arch = "x86_64")]
        let avx2 = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        Self {
            size,
            fwd,
            inv,
            tw_re: (0..size).map(|k| angle(k).cos() as f32).collect(),
            tw_im: (0..size).map(|k| angle(k).sin() as f32).collect(),
            z: vec![Complex::new(0.0, 0.0); size],
            scratch: vec![Complex::new(0.0, 0.0); scratch_len],
            avx2,
        }
    }

    /// The `2S` time samples as a float slice over the complex buffer.
    fn z_floats(&mut self) -> &mut [f32] {
        // SAFETY: `Complex<f32>` is `repr(C)` with two `f32` fields, so `S` of them are `2S`
        // contiguous, aligned `f32`s; the borrow of `self.z` is held by the result.
        unsafe { std::slice::from_raw_parts_mut(self.z.as_mut_ptr().cast::<f32>(), 2 * self.size) }
    }

    /// Spectrum of the `2S` samples `head ++ tail` into packed split `re`/`im` (`S` each; the
    /// Nyquist bin's real part goes into `im[0]`). Two pieces so a wrapped ring window needs
    /// no staging; pass `&[]` as `tail` for one piece.
    ///
    /// # Panics
    /// If `head.len() + tail.len() != 2S` or `re`/`im` are shorter than `S`.
    pub fn forward(&mut self, head: &[f32], tail: &[f32], re: &mut [f32], im: &mut [f32]) {
        let s = self.size;
        assert_eq!(head.len() + tail.len(), 2 * s, "forward needs 2S samples");
        let zf = self.z_floats();
        zf[..head.len()].copy_from_slice(head);
        zf[head.len()..].copy_from_slice(tail);
        self.fwd
            .process_with_scratch(&mut self.z, &mut self.scratch);
        let (re, im) = (&mut re[..s], &mut im[..s]);
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: `avx2` is only true when the CPU reported AVX2 and FMA.
            unsafe { untangle_avx2(&self.z, &self.tw_re, &self.tw_im, re, im) };
            return;
        }
        untangle(&self.z, &self.tw_re, &self.tw_im, re, im);
    }

    /// Inverse of [`forward`](Self::forward) times `2S`, keeping only the last `S` samples
    /// (the valid part of overlap-save) in `out`.
    ///
    /// # Panics
    /// If `re`, `im` or `out` are shorter than `S`.
    pub fn inverse_tail(&mut self, re: &[f32], im: &[f32], out: &mut [f32]) {
        let s = self.size;
        let (re, im) = (&re[..s], &im[..s]);
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: `avx2` is only true when the CPU reported AVX2 and FMA.
            unsafe { tangle_avx2(re, im, &self.tw_re, &self.tw_im, &mut self.z) };
        } else {
            tangle(re, im, &self.tw_re, &self.tw_im, &mut self.z);
        }
        #[cfg(not(target_arch = "x86_64"))]
        tangle(re, im, &self.tw_re, &self.tw_im, &mut self.z);
        self.inv
            .process_with_scratch(&mut self.z, &mut self.scratch);
        out[..s].copy_from_slice(&self.z_floats()[s..]);
    }
}

/// Spectrum of `x` from the FFT `z` of its even/odd packing:
/// `X[k] = E[k] + W^k O[k]`, `E = (Z[k] + conj Z[S-k]) / 2`, `O = (Z[k] - conj Z[S-k]) / 2i`.
#[inline(always)]
fn untangle_body(z: &[Complex<f32>], tw_re: &[f32], tw_im: &[f32], re: &mut [f32], im: &mut [f32]) {
    let s = z.len();
    let (tw_re, tw_im) = (&tw_re[..s], &tw_im[..s]);
    let (re, im) = (&mut re[..s], &mut im[..s]);
    for k in 1..s {
        let a = z[k];
        let c = z[s - k];
        let sum_re = a.re + c.re;
        let diff_re = c.re - a.re;
        let sum_im = a.im + c.im;
        let diff_im = a.im - c.im;
        re[k] = 0.5 * (sum_re + tw_re[k] * sum_im - tw_im[k] * diff_re);
        im[k] = 0.5 * (diff_im + tw_re[k] * diff_re + tw_im[k] * sum_im);
    }
    // DC and Nyquist are the sum and difference of the even and odd sums.
    re[0] = z[0].re + z[0].im;
    im[0] = z[0].re - z[0].im;
}

fn untangle(z: &[Complex<f32>], tw_re: &[f32], tw_im: &[f32], re: &mut [f32], im: &mut [f32]) {
    untangle_body(z, tw_re, tw_im, re, im)
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn untangle_avx2(
    z: &[Complex<f32>],
    tw_re: &[f32],
    tw_im: &[f32],
    re: &mut [f32],
    im: &mut [f32],
) {
    untangle_body(z, tw_re, tw_im, re, im)
}

/// The even/odd packing `Z` (times 2) whose inverse FFT is `2S x`:
/// `Z[k] = (Y[k] + conj Y[S-k]) + i W^-k (Y[k] - conj Y[S-k])`.
#[inline(always)]
fn tangle_body(re: &[f32], im: &[f32], tw_re: &[f32], tw_im: &[f32], z: &mut [Complex<f32>]) {
    let s = z.len();
    let (re, im) = (&re[..s], &im[..s]);
    let (tw_re, tw_im) = (&tw_re[..s], &tw_im[..s]);
    for k in 1..s {
        let (yr, yi) = (re[k], im[k]);
        let (dr, di) = (re[s - k], im[s - k]);
        let (pr, pi) = (yr + dr, yi - di);
        let (mr, mi) = (yr - dr, yi + di);
        // i * conj(W^k) * M
        let qr = mr * tw_re[k] + mi * tw_im[k];
        let qi = mi * tw_re[k] - mr * tw_im[k];
        z[k] = Complex::new(pr - qi, pi + qr);
    }
    // Bin 0 pairs DC (re[0]) with Nyquist (im[0]).
    z[0] = Complex::new(re[0] + im[0], re[0] - im[0]);
}

fn tangle(re: &[f32], im: &[f32], tw_re: &[f32], tw_im: &[f32], z: &mut [Complex<f32>]) {
    tangle_body(re, im, tw_re, tw_im, z)
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tangle_avx2(
    re: &[f32],
    im: &[f32],
    tw_re: &[f32],
    tw_im: &[f32],
    z: &mut [Complex<f32>],
) {
    tangle_body(re, im, tw_re, tw_im, z)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct DFT in f64.
    fn dft(x: &[f32]) -> Vec<(f64, f64)> {
        let n = x.len();
        (0..=n / 2)
            .map(|k| {
                let mut acc = (0.0, 0.0);
                for (t, &v) in x.iter().enumerate() {
                    let a = -2.0 * std::f64::consts::PI * (k * t % n) as f64 / n as f64;
                    acc.0 += v as f64 * a.cos();
                    acc.1 += v as f64 * a.sin();
                }
                acc
            })
            .collect()
    }

    fn signal(n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 7919 % 1013) as f32 / 1013.0 - 0.5) + (i as f32 * 0.01).sin())
            .collect()
    }

    #[test]
    fn forward_matches_direct_dft_and_inverse_restores_the_tail() {
        let mut planner = FftPlanner::new();
        for s in [1usize, 2, 4, 8, 16, 64, 256, 1024] {
            let x = signal(2 * s);
            let mut f = SplitRealFft::new(&mut planner, s);
            let (mut re, mut im) = (vec![0.0; s], vec![0.0; s]);
            let split = s / 3;
            f.forward(&x[..split], &x[split..], &mut re, &mut im);
            let want = dft(&x);
            let peak = want.iter().map(|c| c.0.hypot(c.1)).fold(0.0, f64::max);
            let tol = 1e-6 * peak * (2.0 * s as f64).log2().max(1.0);
            assert!((re[0] as f64 - want[0].0).abs() <= tol, "S={s} DC");
            assert!((im[0] as f64 - want[s].0).abs() <= tol, "S={s} Nyquist");
            for k in 1..s {
                assert!((re[k] as f64 - want[k].0).abs() <= tol, "S={s} re[{k}]");
                assert!((im[k] as f64 - want[k].1).abs() <= tol, "S={s} im[{k}]");
            }
            let mut out = vec![0.0; s];
            f.inverse_tail(&re, &im, &mut out);
            for (t, &v) in out.iter().enumerate() {
                let want = 2.0 * s as f32 * x[s + t];
                assert!((v - want).abs() <= 1e-4 * 2.0 * s as f32, "S={s} t={t}");
            }
        }
    }

    #[test]
    fn portable_and_avx2_untangle_agree() {
        let mut planner = FftPlanner::new();
        let s = 512;
        let mut f = SplitRealFft::new(&mut planner, s);
        if !f.avx2 {
            return;
        }
        let x = signal(2 * s);
        let (mut re1, mut im1) = (vec![0.0; s], vec![0.0; s]);
        f.forward(&x, &[], &mut re1, &mut im1);
        let mut out1 = vec![0.0; s];
        f.inverse_tail(&re1, &im1, &mut out1);
        f.avx2 = false;
        let (mut re2, mut im2) = (vec![0.0; s], vec![0.0; s]);
        f.forward(&x, &[], &mut re2, &mut im2);
        let mut out2 = vec![0.0; s];
        f.inverse_tail(&re2, &im2, &mut out2);
        for k in 0..s {
            assert!((re1[k] - re2[k]).abs() <= 1e-3 && (im1[k] - im2[k]).abs() <= 1e-3);
            assert!((out1[k] - out2[k]).abs() <= 1e-2, "t={k}");
        }
    }
}
