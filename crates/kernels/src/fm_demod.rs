//! FM quadrature demodulator: `out[n] = gain · arg(x[n] · conj(x[n − 1]))`, the phase step
//! between consecutive samples (GNU Radio's `quadrature_demod_cf`), for one channel or for
//! `N` channels interleaved in frames of `N` samples (a channelizer's vector output), each
//! channel against its own previous sample.
//!
//! The arctangent is a branch-free vectorised approximation: the ratio `min(|re|,|im|) /
//! max(|re|,|im|)` in 0…1 goes through a degree-9 odd minimax polynomial (fitted to `atan`
//! for this kernel; 1.2e-5 rad worst case in f32), then the octant is restored with selects.
//! Against f64 `atan2` of the conjugate product the phase error stays below 1.3e-5 rad (the
//! tests check 2e-5), inside the 1e-4 asked of it. `arg(0) = 0`, so silence demodulates
//! to zero, and so does the first sample of a stream (its predecessor is taken as 0).

use super::simd;
use super::{DspError, SimdLevel};
use num_complex::Complex32;
use std::f32::consts::{FRAC_PI_2, PI};

/// `atan(t) ≈ t·P(t²)` on 0 ≤ t ≤ 1, lowest power first: a degree-9 odd minimax fit,
/// 1.2e-5 rad worst case in f32 (a quarter of the polynomial work of a 1e-7 fit, and still
/// eight times inside the 1e-4 rad asked of the demodulator).
pub(super) const ATAN: [f32; 5] = [
    0.999_866_3,
    -0.330_304_77,
    0.180_159_29,
    -0.085_156_34,
    0.020_845_108,
];

/// Lanes per step of the vector loop.
const LANES: usize = 8;

/// An FM demodulator over `channels` interleaved channels; see the module docs.
#[derive(Debug, Clone)]
pub struct FmDemod {
    gain: f32,
    /// The previous frame (one sample per channel).
    prev: Vec<Complex32>,
    level: SimdLevel,
}

impl FmDemod {
    /// A demodulator scaling the phase step (radians per sample) by `gain`, over `channels`
    /// interleaved channels (1 for a plain stream). GNU Radio's gain for a deviation `Δf` at
    /// sample rate `fs` is `fs / (2π·Δf)`, which maps the peak deviation to ±1.
    pub fn new(gain: f32, channels: usize) -> Result<Self, DspError> {
        if !gain.is_finite() {
            return Err(DspError::InvalidDesign {
                name: "gain",
                value: gain.to_string(),
                expected: "a finite number",
            });
        }
        if channels == 0 {
            return Err(DspError::InvalidDesign {
                name: "channels",
                value: "0".into(),
                expected: "at least 1",
            });
        }
        Ok(FmDemod {
            gain,
            prev: vec![Complex32::default(); channels],
            level: simd::best(),
        })
    }

    /// The same demodulator running the kernel at `level` (tests compare levels).
    pub fn with_level(mut self, level: SimdLevel) -> Result<Self, DspError> {
        if !simd::usable(level) {
            return Err(DspError::SimdUnavailable(level.name()));
        }
        self.level = level;
        Ok(self)
    }

    /// Samples per frame.
    pub fn channels(&self) -> usize {
        self.prev.len()
    }

    /// Forgets the previous samples (the next frame is demodulated against zeros).
    pub fn reset(&mut self) {
        self.prev.fill(Complex32::default());
    }

    /// Demodulates as many whole frames as `input` and `output` hold; returns `(consumed,
    /// produced)`, equal and a multiple of the channel count.
    pub fn process(&mut self, input: &[Complex32], output: &mut [f32]) -> (usize, usize) {
        let c = self.prev.len();
        let n = input.len().min(output.len()) / c * c;
        if n == 0 {
            return (0, 0);
        }
        // The first frame against the stored one, the rest against the input itself.
        self.demod(&input[..c], &self.prev, &mut output[..c]);
        let (cur, prev) = (&input[c..n], &input[..n - c]);
        self.demod(cur, prev, &mut output[c..n]);
        self.prev.copy_from_slice(&input[n - c..n]);
        (n, n)
    }

    fn demod(&self, cur: &[Complex32], prev: &[Complex32], out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if self.level == SimdLevel::Avx512 && simd::usable(SimdLevel::Avx2Fma) {
            // SAFETY: `new`/`with_level` keep the AVX-512 level only where `simd::usable`
            // found avx512f and fma, and avx2 was checked just above; `cur` and `prev` hold
            // `out.len()` samples (callers above).
            return unsafe { super::fm_demod_x86::demod512(self.gain, cur, prev, out) };
        }
        #[cfg(target_arch = "x86_64")]
        if self.level != SimdLevel::Portable {
            // SAFETY: `new`/`with_level` keep a vector level only where `simd::usable` found
            // avx2 and fma; `cur` and `prev` hold `out.len()` samples (callers above).
            return unsafe { super::fm_demod_x86::demod(self.gain, cur, prev, out) };
        }
        demod_lanes(self.gain, cur, prev, out)
    }
}

/// `out[i] = gain · arg(cur[i] · conj(prev[i]))`, `LANES` at a time, then the remainder
/// through the same lane code (zero-padded), so every sample is computed alike.
#[inline(always)]
fn demod_lanes(gain: f32, cur: &[Complex32], prev: &[Complex32], out: &mut [f32]) {
    let mut i = 0;
    let n = out.len();
    while i < n {
        let m = LANES.min(n - i);
        let (mut re, mut im) = ([0.0f32; LANES], [0.0f32; LANES]);
        if m == LANES {
            let a: &[Complex32; LANES] = cur[i..i + LANES].try_into().unwrap_or(&ZEROS);
            let b: &[Complex32; LANES] = prev[i..i + LANES].try_into().unwrap_or(&ZEROS);
            for l in 0..LANES {
                re[l] = a[l].re * b[l].re + a[l].im * b[l].im;
                im[l] = a[l].im * b[l].re - a[l].re * b[l].im;
            }
        } else {
            for l in 0..m {
                let (a, b) = (cur[i + l], prev[i + l]);
                re[l] = a.re * b.re + a.im * b.im;
                im[l] = a.im * b.re - a.re * b.im;
            }
        }
        let phase = atan2_lanes(im, re);
        for (o, p) in out[i..i + m].iter_mut().zip(phase) {
            *o = gain * p;
        }
        i += m;
    }
}

const ZEROS: [Complex32; LANES] = [Complex32 { re: 0.0, im: 0.0 }; LANES];

/// `atan2(y, x)` lane by lane (see the module docs); `atan2(0, 0) = 0`. Written as simple
/// lane loops with compare-selects (no `f32::min`, whose NaN rules block vectorisation).
#[inline(always)]
fn atan2_lanes(y: [f32; LANES], x: [f32; LANES]) -> [f32; LANES] {
    let mut t = [0.0f32; LANES];
    let mut swap = [false; LANES];
    for l in 0..LANES {
        let (ax, ay) = (x[l].abs(), y[l].abs());
        swap[l] = ay > ax;
        let lo = if swap[l] { ax } else { ay };
        let hi = if swap[l] { ay } else { ax };
        let hi = if hi > f32::MIN_POSITIVE {
            hi
        } else {
            f32::MIN_POSITIVE
        };
        t[l] = lo / hi;
    }
    let mut out = [0.0f32; LANES];
    for l in 0..LANES {
        let u = t[l] * t[l];
        let mut p = ATAN[4];
        for &c in ATAN[..4].iter().rev() {
            p = p * u + c;
        }
        let mut a = p * t[l];
        a = if swap[l] { FRAC_PI_2 - a } else { a };
        a = if x[l] < 0.0 { PI - a } else { a };
        out[l] = if y[l] < 0.0 { -a } else { a };
    }
    out
}

/// The approximation alone, for tests and benches: `atan2(y, x)` at the default level.
pub fn fast_atan2(y: f32, x: f32) -> f32 {
    let mut yy = [0.0; LANES];
    let mut xx = [0.0; LANES];
    yy[0] = y;
    xx[0] = x;
    atan2_lanes(yy, xx)[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// f64 `atan2` of the conjugate product, computed from the same f32 samples.
    fn reference(cur: Complex32, prev: Complex32) -> f64 {
        let (ar, ai, br, bi) = (
            f64::from(cur.re),
            f64::from(cur.im),
            f64::from(prev.re),
            f64::from(prev.im),
        );
        let (re, im) = (ar * br + ai * bi, ai * br - ar * bi);
        // arg(0) = 0 (f64's atan2 of signed zeros would say ±π).
        if re == 0.0 && im == 0.0 {
            0.0
        } else {
            im.atan2(re)
        }
    }

    fn noise(n: usize, seed: u64) -> Vec<Complex32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                // Magnitudes over six decades, phases everywhere.
                let mag = 10f32.powf(rng.gen_range(-3.0..3.0));
                Complex32::from_polar(mag, rng.gen_range(-PI..PI))
            })
            .collect()
    }

    #[test]
    fn approximation_is_within_1_3e_5_rad_of_f64_atan2_everywhere() {
        let mut worst = 0.0f64;
        let steps = 200_000;
        for k in 0..=steps {
            let angle =
                -std::f64::consts::PI + 2.0 * std::f64::consts::PI * k as f64 / steps as f64;
            for mag in [1e-30f64, 1e-3, 1.0, 7.5e3, 1e30] {
                let (y, x) = ((mag * angle.sin()) as f32, (mag * angle.cos()) as f32);
                let want = f64::from(y).atan2(f64::from(x));
                let got = f64::from(fast_atan2(y, x));
                let mut err = (got - want).abs();
                err = err.min((err - 2.0 * std::f64::consts::PI).abs()); // ±π are the same angle
                worst = worst.max(err);
            }
        }
        assert!(worst < 1.3e-5, "worst error {worst} rad");
        assert_eq!(fast_atan2(0.0, 0.0), 0.0);
        assert_eq!(fast_atan2(0.0, -1.0), PI);
        assert_eq!(fast_atan2(1.0, 0.0), FRAC_PI_2);
    }

    #[test]
    fn every_level_and_any_chunking_matches_the_f64_reference() {
        let x = noise(10_000, 1);
        let mut want = vec![reference(x[0], Complex32::default())];
        want.extend(x.windows(2).map(|w| reference(w[1], w[0])));
        for level in SimdLevel::supported() {
            let mut fm = FmDemod::new(2.0, 1).unwrap().with_level(level).unwrap();
            let mut rng = rand::rngs::StdRng::seed_from_u64(2);
            let mut got = vec![0.0f32; x.len()];
            let mut at = 0;
            while at < x.len() {
                let k = rng.gen_range(1..100).min(x.len() - at);
                let (c, p) = fm.process(&x[at..at + k], &mut got[at..at + k]);
                assert_eq!((c, p), (k, k));
                at += k;
            }
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                let err = (f64::from(g) / 2.0 - w).abs();
                assert!(err < 2e-5, "{level:?} sample {i}: {} vs {w}", g / 2.0);
            }
        }
    }

    /// A stream split over machines, resumed after a failover or read with other queue sizes
    /// is cut into other chunks: the output must not change by a bit.
    #[test]
    fn any_chunking_gives_the_same_bits() {
        let x = noise(5_000, 4);
        for level in SimdLevel::supported() {
            let mut whole = vec![0.0f32; x.len()];
            FmDemod::new(1.5, 1)
                .unwrap()
                .with_level(level)
                .unwrap()
                .process(&x, &mut whole);
            let mut fm = FmDemod::new(1.5, 1).unwrap().with_level(level).unwrap();
            let mut rng = rand::rngs::StdRng::seed_from_u64(5);
            let mut got = vec![0.0f32; x.len()];
            let mut at = 0;
            while at < x.len() {
                let k = rng.gen_range(1..40).min(x.len() - at);
                fm.process(&x[at..at + k], &mut got[at..at + k]);
                at += k;
            }
            for (i, (g, w)) in got.iter().zip(&whole).enumerate() {
                assert_eq!(g.to_bits(), w.to_bits(), "{level:?} sample {i}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn channels_are_demodulated_each_against_its_own_previous_sample() {
        let channels = 333;
        let x = noise(channels * 20, 3);
        let mut fm = FmDemod::new(1.0, channels).unwrap();
        let mut got = vec![0.0f32; x.len()];
        // Whole frames only: 1.5 frames of input give one frame.
        assert_eq!(
            fm.process(&x[..channels * 3 / 2], &mut got),
            (channels, channels)
        );
        let (c, p) = fm.process(&x[channels..], &mut got[channels..]);
        assert_eq!((c, p), (x.len() - channels, x.len() - channels));
        for (i, &g) in got.iter().enumerate() {
            let prev = if i < channels {
                Complex32::default()
            } else {
                x[i - channels]
            };
            let err = (f64::from(g) - reference(x[i], prev)).abs();
            assert!(err < 2e-5, "sample {i} (channel {})", i % channels);
        }
        fm.reset();
        let mut out = vec![0.0f32; channels];
        fm.process(&x[..channels], &mut out);
        assert_eq!(out, got[..channels]);
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(FmDemod::new(f32::NAN, 1).is_err());
        let e = FmDemod::new(1.0, 0).unwrap_err();
        assert!(e.to_string().contains("channels"), "{e}");
        for level in [SimdLevel::Avx2Fma, SimdLevel::Avx512] {
            if !simd::usable(level) {
                assert!(FmDemod::new(1.0, 1).unwrap().with_level(level).is_err());
            }
        }
    }
}
