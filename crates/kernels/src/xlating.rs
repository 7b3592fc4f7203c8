//! Frequency-translating decimating FIR (GNU Radio's `freq_xlating_fir_filter_ccf`): shift
//! the band centred on `f` cycles/sample down to 0, low-pass it with real taps designed for
//! baseband, keep one output in `D`:
//!
//! `y[m] = Σ_k h[k] · x[mD − k] · e^{−j2πf(mD − k)}`, with `x[n] = 0` for `n < 0`.
//!
//! As GNU Radio does, the taps are rotated to the band, `c[k] = h[k]·e^{j2πfk}`, and each
//! output rotated back: `y[m] = e^{−j2πf·mD} · Σ_k c[k]·x[mD − k]`, the same sum. Only every
//! `D`-th window is filtered, straight from the input (no per-sample mixing pass), four windows
//! at a time so each tap vector loaded serves four outputs ([`crate::fir::multi_dot`]). The output
//! rotation comes from an f64 phase accumulator (one `sin_cos` per output), so it does not
//! drift. Retuning re-rotates the taps (as GNU Radio's `set_center_freq` does) and the output
//! phase goes on from where it was.

use super::DspError;
use crate::fir::multi_dot::{complex_dots, GROUP};
use num_complex::Complex32;
use std::f64::consts::TAU;

/// Input samples buffered per round (beyond the history).
const ROUND: usize = 4096;

/// A frequency-translating decimating FIR; see the module docs.
#[derive(Debug, Clone)]
pub struct XlatingFir {
    /// The baseband taps.
    taps: Vec<f32>,
    /// The rotated taps reversed, real and imaginary parts each written twice.
    re_dup: Vec<f32>,
    im_dup: Vec<f32>,
    decimation: usize,
    /// Cycles per sample moved to 0.
    center: f64,
    /// The next output's rotation, in cycles (−0.5 … 0.5).
    phase: f64,
    /// Input samples; `buf[0]` is the first sample of the next output's window.
    buf: Vec<Complex32>,
    filled: usize,
    /// Input samples no window reads (decimation beyond the taps), still to be dropped.
    skip: usize,
}

impl XlatingFir {
    /// Shifts `center` cycles/sample (centre frequency ÷ sample rate) to 0, filters with
    /// `taps` (real, designed for baseband) and keeps one output in `decimation`.
    pub fn new(taps: &[f32], decimation: usize, center: f64) -> Result<Self, DspError> {
        if taps.is_empty() {
            return Err(DspError::EmptyTaps);
        }
        if decimation == 0 {
            return Err(DspError::InvalidDecimation(decimation));
        }
        let len = taps.len();
        let mut k = XlatingFir {
            taps: taps.to_vec(),
            re_dup: vec![0.0; 2 * len],
            im_dup: vec![0.0; 2 * len],
            decimation,
            center: 0.0,
            phase: 0.0,
            buf: vec![Complex32::default(); len - 1 + ROUND.max(decimation * GROUP)],
            filled: len - 1,
            skip: 0,
        };
        k.set_center(center)?;
        Ok(k)
    }

    /// Number of taps.
    pub fn taps(&self) -> usize {
        self.taps.len()
    }

    /// The decimation factor `D`.
    pub fn decimation(&self) -> usize {
        self.decimation
    }

    /// The centre frequency shifted to 0, in cycles/sample.
    pub fn center(&self) -> f64 {
        self.center
    }

    /// Retunes to `center` cycles/sample: the taps are rotated to the new band, the output
    /// phase goes on from where it was. `Err` (and no change) if it is not finite.
    pub fn set_center(&mut self, center: f64) -> Result<(), DspError> {
        if !center.is_finite() {
            return Err(DspError::InvalidDesign {
                name: "center",
                value: center.to_string(),
                expected: "a finite number",
            });
        }
        self.center = center - center.round();
        let len = self.taps.len();
        for (k, &h) in self.taps.iter().enumerate() {
            let (s, c) = (TAU * (self.center * k as f64).fract()).sin_cos();
            let i = len - 1 - k; // reversed: tap k multiplies window item L − 1 − k
            let (re, im) = ((f64::from(h) * c) as f32, (f64::from(h) * s) as f32);
            self.re_dup[2 * i..2 * i + 2].fill(re);
            self.im_dup[2 * i..2 * i + 2].fill(im);
        }
        Ok(())
    }

    /// Back to the initial state: zero history, phase 0.
    pub fn reset(&mut self) {
        self.buf.fill(Complex32::default());
        self.filled = self.taps() - 1;
        self.skip = 0;
        self.phase = 0.0;
    }

    /// Consumes input (all of it, unless `output` fills up first) and writes the outputs it
    /// completes; returns `(consumed, produced)`.
    pub fn process(&mut self, input: &[Complex32], output: &mut [Complex32]) -> (usize, usize) {
        let (len, d) = (self.taps(), self.decimation);
        let (mut consumed, mut produced) = (0, 0);
        loop {
            // Outputs whose windows the buffer holds, as many as there is room for.
            let ready = if self.filled >= len {
                (self.filled - len) / d + 1
            } else {
                0
            };
            let n = ready.min(output.len() - produced);
            self.filter(n, &mut output[produced..produced + n]);
            produced += n;
            if n * d > self.filled {
                // The next window starts after everything buffered (D > L).
                self.skip += n * d - self.filled;
                self.filled = 0;
            } else if n > 0 {
                self.buf.copy_within(n * d..self.filled, 0);
                self.filled -= n * d;
            }
            let dropped = self.skip.min(input.len() - consumed);
            self.skip -= dropped;
            consumed += dropped;
            let room = (self.buf.len() - self.filled).min(input.len() - consumed);
            if room == 0 || n < ready {
                return (consumed, produced);
            }
            self.buf[self.filled..self.filled + room]
                .copy_from_slice(&input[consumed..consumed + room]);
            self.filled += room;
            consumed += room;
        }
    }

    /// Outputs `0..n` from the buffer's windows `j·D .. j·D + L`, rotated back.
    fn filter(&mut self, n: usize, out: &mut [Complex32]) {
        let x: &[f32] = bytemuck::cast_slice(&self.buf[..self.filled]);
        let (w, step) = (self.re_dup.len(), 2 * self.decimation);
        let mut j = 0;
        while j < n {
            let g = GROUP.min(n - j);
            // A short last group repeats its last window (the extra sums are not used).
            let windows: [&[f32]; GROUP] =
                std::array::from_fn(|i| &x[(j + i.min(g - 1)) * step..][..w]);
            let sums = complex_dots(&self.re_dup, &self.im_dup, windows);
            for (o, s) in out[j..j + g].iter_mut().zip(sums) {
                let (sin, cos) = (TAU * self.phase).sin_cos();
                *o = Complex32::new(s[0], s[1]) * Complex32::new(cos as f32, sin as f32);
                let next = self.phase - self.center * self.decimation as f64;
                self.phase = next - next.round();
            }
            j += g;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;
    use rand::{Rng, SeedableRng};
    use std::f64::consts::TAU;

    fn noise(n: usize, seed: u64) -> Vec<Complex32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| Complex32::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
            .collect()
    }

    /// The definition in the module docs, in f64.
    fn reference(h: &[f32], x: &[Complex32], d: usize, f: f64) -> Vec<Complex64> {
        let mut out = Vec::new();
        let mut m = 0;
        while m * d < x.len() {
            let mut acc = Complex64::default();
            for (k, &t) in h.iter().enumerate() {
                let Some(n) = (m * d).checked_sub(k) else {
                    break;
                };
                let v = Complex64::new(x[n].re.into(), x[n].im.into());
                let phase = -TAU * (f * n as f64).fract();
                acc += v * Complex64::from_polar(1.0, phase) * f64::from(t);
            }
            out.push(acc);
            m += 1;
        }
        out
    }

    #[test]
    fn matches_the_f64_definition_in_random_chunks() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        for (taps, d, f) in [
            (1, 1, 0.0),
            (256, 100, 0.1),
            (31, 3, -0.27),
            (5, 7, 0.49),
            (64, 1, 0.01),
        ] {
            let h: Vec<f32> = (0..taps).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let x = noise(20_000, taps as u64);
            let want = reference(&h, &x, d, f);
            let mut k = XlatingFir::new(&h, d, f).unwrap();
            let mut got = Vec::new();
            let mut at = 0;
            let mut out = vec![Complex32::default(); 64];
            while at < x.len() || got.len() < want.len() {
                let chunk = rng.gen_range(0..5000).min(x.len() - at);
                let cap = rng.gen_range(0..=out.len());
                let (c, p) = k.process(&x[at..at + chunk], &mut out[..cap]);
                got.extend_from_slice(&out[..p]);
                at += c;
                assert!(c <= chunk && p <= cap);
            }
            assert_eq!(got.len(), want.len(), "taps {taps} D {d}");
            let scale = (taps as f64).sqrt();
            for (m, (g, w)) in got.iter().zip(&want).enumerate() {
                let err = (Complex64::new(g.re.into(), g.im.into()) - w).norm();
                assert!(
                    err < 2e-6 * scale,
                    "taps {taps} D {d} output {m}: {g} vs {w}"
                );
            }
        }
    }

    #[test]
    fn a_tone_at_the_centre_comes_out_at_dc_and_reset_starts_over() {
        let h = super::super::lowpass(101, 0.02, super::super::Window::Hamming).unwrap();
        let x: Vec<Complex32> = (0..10_000)
            .map(|n| Complex32::from_polar(1.0, (TAU * (0.2 * n as f64).fract()) as f32))
            .collect();
        let mut k = XlatingFir::new(&h, 10, 0.2).unwrap();
        let mut out = vec![Complex32::default(); 1000];
        assert_eq!(k.process(&x, &mut out), (10_000, 1000));
        for y in &out[20..] {
            assert!((y - Complex32::new(1.0, 0.0)).norm() < 1e-3, "{y}");
        }
        k.reset();
        let mut again = vec![Complex32::default(); 1000];
        k.process(&x, &mut again);
        assert_eq!(again, out);
    }

    #[test]
    fn invalid_configurations_are_refused() {
        assert!(XlatingFir::new(&[], 2, 0.1).is_err());
        assert!(XlatingFir::new(&[1.0], 0, 0.1).is_err());
        assert!(XlatingFir::new(&[1.0], 2, f64::NAN).is_err());
    }
}
