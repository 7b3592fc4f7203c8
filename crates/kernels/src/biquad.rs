//! IIR filtering as a cascade of second-order sections (biquads), on N interleaved channels.
//!
//! Each section is `H(z) = (b0 + b1 z⁻¹ + b2 z⁻²) / (1 + a1 z⁻¹ + a2 z⁻²)`, run in transposed
//! direct form II with its state and the samples between sections in `f64` (an `f32` cascade
//! with poles near z = 1, as a low audio cutoff or a DC blocker has, loses bits to rounding
//! that `f64` keeps). Input and output are `f32` or `Complex32` (real coefficients).
//!
//! Frames of `channels` samples (one per channel) come in and go out, as the multi-channel
//! `fir` takes them; the inner loop runs across channels, so 333 channels cost one pass of each
//! section over 333 samples per frame, with no per-channel call.
//!
//! **The state has infinite memory**: every output depends on every input since the start (or
//! the last [`BiquadCascade::reset`]). A restarted filter (after a failover) converges to the
//! same output only as its impulse response decays; it cannot be rebuilt from a window of
//! recent input.

use super::DspError;
use num_complex::{Complex32, Complex64};
use std::ops::{Add, Mul, Sub};

/// One second-order section, normalised so that `a0 = 1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Biquad {
    /// Numerator `b0, b1, b2`.
    pub b: [f64; 3],
    /// Denominator `a1, a2` (`a0 = 1`).
    pub a: [f64; 2],
}

impl Biquad {
    /// The section `(b0 + b1 z⁻¹ + b2 z⁻²) / (a0 + a1 z⁻¹ + a2 z⁻²)`, divided through by `a0`.
    /// Non-finite coefficients, `a0 = 0` and an unstable section (a pole on or outside the unit
    /// circle) are errors.
    pub fn new(b: [f64; 3], a: [f64; 3]) -> Result<Self, DspError> {
        let bad = |expected| {
            Err(DspError::InvalidParameter {
                name: "sos",
                value: format!("{b:?} / {a:?}"),
                expected,
            })
        };
        if !b.iter().chain(&a).all(|v| v.is_finite()) {
            return bad("finite coefficients");
        }
        if a[0] == 0.0 {
            return bad("a0 must not be 0");
        }
        let section = Biquad {
            b: b.map(|v| v / a[0]),
            a: [a[1] / a[0], a[2] / a[0]],
        };
        // Both roots of z² + a1 z + a2 inside the unit circle (the stability triangle).
        let [a1, a2] = section.a;
        if !(a2.abs() < 1.0 && a1.abs() < 1.0 + a2) {
            return bad("a stable section: poles inside the unit circle");
        }
        Ok(section)
    }

    /// The frequency response at `f` cycles per sample.
    pub fn response(&self, f: f64) -> Complex64 {
        let z1 = Complex64::from_polar(1.0, -2.0 * std::f64::consts::PI * f);
        let z2 = z1 * z1;
        (self.b[0] + z1 * self.b[1] + z2 * self.b[2]) / (1.0 + z1 * self.a[0] + z2 * self.a[1])
    }
}

/// Samples an IIR filters: `f32` (computed in `f64`) and `Complex32` (in `Complex64`).
pub trait IirSample: Copy + Default + Send {
    /// The type the arithmetic runs in.
    type Wide: Copy
        + Default
        + Send
        + std::fmt::Debug
        + Add<Output = Self::Wide>
        + Sub<Output = Self::Wide>
        + Mul<f64, Output = Self::Wide>;
    /// The sample in the wide type.
    fn widen(self) -> Self::Wide;
    /// A wide value back as a sample.
    fn narrow(w: Self::Wide) -> Self;
}

impl IirSample for f32 {
    type Wide = f64;
    #[inline]
    fn widen(self) -> f64 {
        f64::from(self)
    }
    #[inline]
    fn narrow(w: f64) -> f32 {
        w as f32
    }
}

impl IirSample for Complex32 {
    type Wide = Complex64;
    #[inline]
    fn widen(self) -> Complex64 {
        Complex64::new(self.re.into(), self.im.into())
    }
    #[inline]
    fn narrow(w: Complex64) -> Complex32 {
        Complex32::new(w.re as f32, w.im as f32)
    }
}

/// A biquad cascade on `channels` interleaved channels; see the module docs.
#[derive(Debug, Clone)]
pub struct BiquadCascade<S: IirSample> {
    sections: Vec<Biquad>,
    channels: usize,
    /// `state[(2·s + k)·channels + c]`: state `k` (0, 1) of section `s`, channel `c`.
    state: Vec<S::Wide>,
    /// One frame between sections.
    frame: Vec<S::Wide>,
}

impl<S: IirSample> BiquadCascade<S> {
    /// `sections` in order (at least one), on `channels` (at least 1) channels, at rest.
    pub fn new(sections: &[Biquad], channels: usize) -> Result<Self, DspError> {
        if sections.is_empty() {
            return Err(DspError::InvalidParameter {
                name: "sos",
                value: "no sections".into(),
                expected: "at least one second-order section",
            });
        }
        if channels == 0 {
            return Err(DspError::InvalidParameter {
                name: "channels",
                value: "0".into(),
                expected: "at least 1",
            });
        }
        Ok(BiquadCascade {
            sections: sections.to_vec(),
            channels,
            state: vec![S::Wide::default(); 2 * sections.len() * channels],
            frame: vec![S::Wide::default(); channels],
        })
    }

    /// Samples per frame.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The sections.
    pub fn sections(&self) -> &[Biquad] {
        &self.sections
    }

    /// Back to rest (all state zero): the next output is what a new cascade would give.
    pub fn reset(&mut self) {
        self.state.fill(S::Wide::default());
    }

    /// Filters the whole frames of `x` that fit `out`; returns the samples done (a multiple of
    /// `channels`: consumed and produced).
    pub fn process(&mut self, x: &[S], out: &mut [S]) -> usize {
        let c = self.channels;
        let frames = x.len().min(out.len()) / c;
        for (xf, yf) in x.chunks_exact(c).zip(out.chunks_exact_mut(c)).take(frames) {
            for (w, &v) in self.frame.iter_mut().zip(xf) {
                *w = v.widen();
            }
            self.run_frame();
            for (y, &w) in yf.iter_mut().zip(&self.frame) {
                *y = S::narrow(w);
            }
        }
        frames * c
    }

    /// Filters the whole frames of `buf` in place; returns the samples done.
    pub fn process_in_place(&mut self, buf: &mut [S]) -> usize {
        let c = self.channels;
        let frames = buf.len() / c;
        for f in buf.chunks_exact_mut(c) {
            for (w, &v) in self.frame.iter_mut().zip(f.iter()) {
                *w = v.widen();
            }
            self.run_frame();
            for (y, &w) in f.iter_mut().zip(&self.frame) {
                *y = S::narrow(w);
            }
        }
        frames * c
    }

    /// Runs `self.frame` through every section.
    #[inline]
    fn run_frame(&mut self) {
        let c = self.channels;
        for (s, q) in self.sections.iter().zip(self.state.chunks_exact_mut(2 * c)) {
            let (z1, z2) = q.split_at_mut(c);
            let ([b0, b1, b2], [a1, a2]) = (s.b, s.a);
            for ((w, z1), z2) in self.frame.iter_mut().zip(z1).zip(z2) {
                let v = *w;
                let y = v * b0 + *z1;
                *z1 = v * b1 - y * a1 + *z2;
                *z2 = v * b2 - y * a2;
                *w = y;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{chunked, rand_c};
    use rand::SeedableRng;

    fn sections() -> Vec<Biquad> {
        vec![
            Biquad::new([0.2, 0.4, 0.2], [1.0, -0.9, 0.5]).unwrap(),
            Biquad::new([1.0, -1.0, 0.0], [2.0, -1.98, 0.0]).unwrap(),
            Biquad::new([0.5, 0.1, -0.3], [1.0, 0.3, 0.8]).unwrap(),
        ]
    }

    /// Each section's difference equation (direct form I) over the whole signal, in f64.
    fn reference(sections: &[Biquad], x: &[Complex64]) -> Vec<Complex64> {
        let mut v = x.to_vec();
        for s in sections {
            let mut y = vec![Complex64::default(); v.len()];
            for n in 0..v.len() {
                let at = |s: &[Complex64], k: usize| if n >= k { s[n - k] } else { 0.0.into() };
                y[n] = v[n] * s.b[0] + at(&v, 1) * s.b[1] + at(&v, 2) * s.b[2]
                    - at(&y, 1) * s.a[0]
                    - at(&y, 2) * s.a[1];
            }
            v = y;
        }
        v
    }

    #[test]
    fn every_channel_matches_the_f64_difference_equations() {
        let channels = 7;
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let x = rand_c(400 * channels, &mut rng);
        let mut iir = BiquadCascade::<Complex32>::new(&sections(), channels).unwrap();
        let mut y = vec![Complex32::default(); x.len() + 3];
        assert_eq!(iir.process(&x, &mut y), x.len());
        for c in 0..channels {
            let xc: Vec<Complex64> = x
                .iter()
                .skip(c)
                .step_by(channels)
                .map(|v| v.widen())
                .collect();
            for (n, want) in reference(&sections(), &xc).iter().enumerate() {
                let got = y[n * channels + c].widen();
                assert!(
                    (got - want).norm() <= 1e-5 * (1.0 + want.norm()),
                    "ch {c} n {n}"
                );
            }
        }
    }

    #[test]
    fn chunking_and_reset_give_the_same_output() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let x = rand_c(3 * 500, &mut rng);
        let mut iir = BiquadCascade::<Complex32>::new(&sections(), 3).unwrap();
        let mut whole = vec![Complex32::default(); x.len()];
        iir.process(&x, &mut whole);
        iir.reset();
        let pieces = chunked(&x, 40, 3, &mut rng, |w, out| {
            let n = iir.process(w, out);
            (n, n)
        });
        assert_eq!(pieces, whole);
        let mut real = BiquadCascade::<f32>::new(&sections(), 1).unwrap();
        let xr: Vec<f32> = x.iter().map(|v| v.re).collect();
        let mut yr = vec![0.0f32; xr.len()];
        real.process(&xr, &mut yr);
        let want = reference(
            &sections(),
            &xr.iter()
                .map(|&v| Complex64::new(v.into(), 0.0))
                .collect::<Vec<_>>(),
        );
        for (g, w) in yr.iter().zip(&want) {
            assert!((f64::from(*g) - w.re).abs() <= 1e-5 * (1.0 + w.re.abs()));
        }
    }

    #[test]
    fn bad_sections_are_errors() {
        assert!(Biquad::new([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]).is_err());
        assert!(Biquad::new([f64::NAN, 0.0, 0.0], [1.0, 0.0, 0.0]).is_err());
        let unstable = Biquad::new([1.0, 0.0, 0.0], [1.0, -2.0, 1.0]).unwrap_err();
        assert!(
            unstable
                .to_string()
                .contains("poles inside the unit circle"),
            "{unstable}"
        );
        assert!(BiquadCascade::<f32>::new(&[], 1).is_err());
        assert!(BiquadCascade::<f32>::new(&sections(), 0).is_err());
        let lp = Biquad::new([0.25, 0.5, 0.25], [1.0, 0.0, 0.0]).unwrap();
        assert!((lp.response(0.0).norm() - 1.0).abs() < 1e-12);
        assert!(lp.response(0.5).norm() < 1e-12);
    }
}
