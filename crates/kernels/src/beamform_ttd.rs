//! Wideband delay-and-sum: true-time delays per (beam, antenna), integer plus fractional.
//!
//! Each delay `D = I + μ` (samples, `0 ≤ μ < 1`) is realised by a 16-tap Kaiser-windowed sinc
//! centred at `7 + μ` ([`fractional_delay`]), designed for the exact `μ` whenever the steering
//! changes (no phase table, so no quantisation of μ), folded with the beam's complex weight into
//! one 16-tap complex filter per (beam, antenna). The kernel then runs
//! `out[b][j] (+)= Σ_k Σ_q g[b][k][q] · in[k][j + s[b][k] + q]`: every output has a fixed
//! latency of [`DelayBeamformer::latency`] samples, the same for every steering and every
//! partial instance of one array, so partial sums add up.
//!
//! The band where the delay is accurate to −60 dB is |f| ≤ 0.2 of the sample rate (the test
//! checks it against an f64 delay).

use num_complex::Complex32;
use std::f64::consts::PI;

#[cfg(target_arch = "x86_64")]
use super::beamform_x86;
use super::{design::bessel_i0, simd, DspError, SimdLevel};

/// Taps of each fractional-delay filter.
pub const FD_TAPS: usize = 16;
/// The Kaiser shape of the fractional-delay filters (about 65 dB stop band).
const KAISER_BETA: f64 = 6.5;

/// The 16 taps `h[m]` of a filter delaying by `7 + mu` samples (`0 ≤ mu < 1`):
/// `y[n] = Σ_m h[m] · x[n − m] ≈ x(n − 7 − mu)`, unit gain at DC.
pub fn fractional_delay(mu: f64) -> [f64; FD_TAPS] {
    let mut h = [0.0; FD_TAPS];
    let half = FD_TAPS as f64 / 2.0;
    for (m, tap) in h.iter_mut().enumerate() {
        let t = m as f64 - (half - 1.0) - mu;
        let sinc = if t.abs() < 1e-12 {
            1.0
        } else {
            (PI * t).sin() / (PI * t)
        };
        let r = t / half;
        let win = if r.abs() < 1.0 {
            bessel_i0(KAISER_BETA * (1.0 - r * r).sqrt()) / bessel_i0(KAISER_BETA)
        } else {
            0.0
        };
        *tap = sinc * win;
    }
    let sum: f64 = h.iter().sum();
    h.map(|x| x / sum)
}

/// True-time-delay beams over `antennas` inputs: see the module docs.
#[derive(Debug, Clone)]
pub struct DelayBeamformer {
    antennas: usize,
    beams: usize,
    /// Per (beam, antenna): 16 taps, weight folded in, in input order.
    taps: Vec<Complex32>,
    /// Per (beam, antenna): the offset into the input window of the first tap.
    offsets: Vec<usize>,
    latency: usize,
    level: SimdLevel,
}

impl DelayBeamformer {
    /// `beams` beams over `antennas` inputs, delays up to `max_delay` samples.
    pub fn new(
        antennas: usize,
        beams: usize,
        max_delay: f64,
        weights: &[Complex32],
        delays: &[f64],
    ) -> Result<Self, DspError> {
        Self::with_level(antennas, beams, max_delay, weights, delays, simd::best())
    }

    /// As [`DelayBeamformer::new`] at SIMD level `level`.
    pub fn with_level(
        antennas: usize,
        beams: usize,
        max_delay: f64,
        weights: &[Complex32],
        delays: &[f64],
        level: SimdLevel,
    ) -> Result<Self, DspError> {
        if !(0.0..1e6).contains(&max_delay) {
            return Err(DspError::InvalidParameter {
                name: "max_delay",
                value: max_delay.to_string(),
                expected: "0 to 1e6 samples",
            });
        }
        if !simd::usable(level) {
            return Err(DspError::SimdUnavailable(level.name()));
        }
        let pairs = antennas * beams;
        let mut k = DelayBeamformer {
            antennas,
            beams,
            taps: vec![Complex32::default(); pairs * FD_TAPS],
            offsets: vec![0; pairs],
            latency: max_delay.floor() as usize + FD_TAPS / 2 + 1,
            level,
        };
        k.set(weights, delays)?;
        Ok(k)
    }

    /// Replaces weights and delays (one per (beam, antenna), beam-major); allocates nothing.
    pub fn set(&mut self, weights: &[Complex32], delays: &[f64]) -> Result<(), DspError> {
        let pairs = self.offsets.len();
        if weights.len() != pairs || delays.len() != pairs {
            return Err(DspError::InvalidParameter {
                name: "weights/delays",
                value: format!("{}/{}", weights.len(), delays.len()),
                expected: "one per antenna per beam",
            });
        }
        let limit = (self.latency - FD_TAPS / 2 - 1) as f64 + 1.0;
        for (p, (&w, &d)) in weights.iter().zip(delays).enumerate() {
            if !(d >= 0.0 && d < limit) {
                return Err(DspError::InvalidParameter {
                    name: "delay",
                    value: d.to_string(),
                    expected: "between 0 and the largest delay of the array",
                });
            }
            let (whole, mu) = (d.floor(), d - d.floor());
            let h = fractional_delay(mu);
            // y[j] = Σ_m h[m] x[j + L − I + 7 − m]: tap q reads x[j + s + q], m = 15 − q.
            self.offsets[p] = self.latency - whole as usize - FD_TAPS / 2;
            let w = num_complex::Complex64::new(w.re.into(), w.im.into());
            for (q, g) in self.taps[p * FD_TAPS..(p + 1) * FD_TAPS]
                .iter_mut()
                .enumerate()
            {
                let c = w * h[FD_TAPS - 1 - q];
                *g = Complex32::new(c.re as f32, c.im as f32);
            }
        }
        Ok(())
    }

    /// Output `j` is aligned on input `j + latency` minus the element's delay.
    pub fn latency(&self) -> usize {
        self.latency
    }

    /// The folded taps, 16 per (beam, antenna), beam-major: `out[b][j] (+)= Σ_q taps[q] ·
    /// in[k][j + offsets[b·n + k] + q]` (peers in benches run the same filters).
    pub fn taps(&self) -> &[Complex32] {
        &self.taps
    }

    /// The window offset of each (beam, antenna)'s first tap.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Items each input window must hold beyond the `m` outputs formed from it.
    pub fn history(&self) -> usize {
        self.latency + FD_TAPS / 2
    }

    /// Forms `m = outputs[0].len()` items of every beam from windows of `m +`
    /// [`history`](Self::history) items of every input; adds to the outputs if `accumulate`.
    /// Panics on wrong counts or short slices.
    pub fn process(
        &self,
        inputs: &[&[Complex32]],
        outputs: &mut [&mut [Complex32]],
        accumulate: bool,
    ) {
        assert_eq!(inputs.len(), self.antennas, "delay beamformer inputs");
        assert_eq!(outputs.len(), self.beams, "delay beamformer outputs");
        let m = outputs[0].len();
        let need = m + self.history();
        assert!(
            inputs.iter().all(|x| x.len() >= need) && outputs.iter().all(|y| y.len() == m),
            "delay beamformer: every input must hold {need} items and every output {m}"
        );
        for (b, out) in outputs.iter_mut().enumerate() {
            if !accumulate {
                out.fill(Complex32::default());
            }
            for (k, x) in inputs.iter().enumerate() {
                let p = b * self.antennas + k;
                let g = &self.taps[p * FD_TAPS..(p + 1) * FD_TAPS];
                let x = &x[self.offsets[p]..];
                let done = match self.level {
                    #[cfg(target_arch = "x86_64")]
                    SimdLevel::Avx2Fma | SimdLevel::Avx512 => {
                        // SAFETY: AVX2+FMA checked usable at construction; x holds
                        // m + history − offset ≥ m + 15 items (offset ≤ latency − 8 + 8).
                        unsafe { beamform_x86::fir_accumulate(x, g, out) }
                    }
                    _ => 0,
                };
                for (j, y) in out.iter_mut().enumerate().skip(done) {
                    *y += g.iter().zip(&x[j..]).map(|(g, x)| g * x).sum::<Complex32>();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;

    /// Tones up to 0.2 of the sample rate, delayed by the kernel and by the f64 formula: the
    /// error is below −60 dB of the signal for delays across whole and fractional values.
    #[test]
    fn fractional_delay_matches_an_f64_delay_to_minus_60_db() {
        let tones = [(0.013, 1.0), (0.071, 0.7), (0.137, 0.5), (0.2, 0.4)];
        let signal = |t: f64| -> Complex64 {
            tones
                .iter()
                .map(|&(f, a)| Complex64::from_polar(a, 2.0 * PI * f * t + f * 7.0))
                .sum()
        };
        let len = 4096;
        let x: Vec<Complex32> = (0..len)
            .map(|t| {
                let s = signal(t as f64);
                Complex32::new(s.re as f32, s.im as f32)
            })
            .collect();
        for level in SimdLevel::supported() {
            for &d in &[0.0, 0.25, 0.5, 3.77, 9.999, 12.3] {
                let k = DelayBeamformer::with_level(
                    1,
                    1,
                    12.5,
                    &[Complex32::new(1.0, 0.0)],
                    &[d],
                    level,
                )
                .unwrap();
                let m = len - k.history();
                let mut y = vec![Complex32::default(); m];
                k.process(&[&x], &mut [&mut y], false);
                let (mut err, mut sig) = (0.0, 0.0);
                for (j, y) in y.iter().enumerate() {
                    let want = signal((j + k.latency()) as f64 - d);
                    err += (Complex64::new(y.re.into(), y.im.into()) - want).norm_sqr();
                    sig += want.norm_sqr();
                }
                let db = 10.0 * (err / sig).log10();
                assert!(db < -60.0, "{level:?}, delay {d}: error {db:.1} dB");
            }
        }
    }

    #[test]
    fn bad_delays_are_refused() {
        let w = [Complex32::new(1.0, 0.0)];
        assert!(DelayBeamformer::new(1, 1, 4.0, &w, &[5.5]).is_err());
        assert!(DelayBeamformer::new(1, 1, 4.0, &w, &[-0.1]).is_err());
        assert!(DelayBeamformer::new(1, 1, f64::NAN, &w, &[0.0]).is_err());
        assert!(DelayBeamformer::new(1, 2, 4.0, &w, &[0.0]).is_err());
    }
}
