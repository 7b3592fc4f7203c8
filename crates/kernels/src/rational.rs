//! Rational resampler (polyphase): interpolate by `I`, filter, decimate by `D`, computing only
//! the outputs kept (GNU Radio's `rational_resampler_ccf`). With `u` the input with `I − 1`
//! zeros after every sample (`u[nI] = x[n]`) and `h` the `L` taps at the interpolated rate:
//!
//! `y[m] = Σ_k h[k] · u[mD − k] = Σ_i h[p + iI] · x[n − i]`, `n = ⌊mD/I⌋`, `p = mD mod I`,
//!
//! so each output is one short dot product with sub-filter `p` (`⌈L/I⌉` taps). The phase
//! pattern repeats every `I` outputs, which advance the input by exactly `D`: outputs
//! `m, m + I, m + 2I, m + 3I` use the same sub-filter on windows `D` apart, and are computed
//! together so each tap vector loaded serves four windows ([`crate::fir::multi_dot`]).
//! History lives in an internal buffer (zeros before the first sample).

use super::DspError;
use crate::fir::multi_dot::{Dots, Periods, GROUP};
use num_complex::Complex32;

/// Input samples buffered per round at most (beyond the history).
const ROUND: usize = 4096;

/// A rational resampler; see the module docs.
#[derive(Debug, Clone)]
pub struct RationalResampler {
    interpolation: usize,
    decimation: usize,
    /// Taps per sub-filter (`⌈L/I⌉`).
    per_phase: usize,
    /// Sub-filter `p`, reversed, each tap written twice, zero-padded to `per_phase`:
    /// `phases[p][2k] = h[p + (per_phase − 1 − k)·I]`.
    phases: Vec<Vec<f32>>,
    /// Input samples; `buf[pos]` is the newest sample the next output reads.
    buf: Vec<Complex32>,
    filled: usize,
    pos: usize,
    /// The next output's phase `p`.
    phase: usize,
    /// The dot-product kernel, chosen once.
    dots: Dots,
    /// `D / I` and `D mod I`: how far one output moves the input position and the phase.
    step: (usize, usize),
    /// One period of `I` outputs starting at phase `steps_from`: each output's sub-filter and
    /// how far (in floats) its window starts after the first's.
    steps: Vec<(usize, usize)>,
    steps_from: usize,
}

impl RationalResampler {
    /// Resamples by `interpolation / decimation` with `taps` designed at the interpolated
    /// rate (`interpolation ×` the input rate; a gain of `interpolation` keeps the level).
    pub fn new(interpolation: usize, decimation: usize, taps: &[f32]) -> Result<Self, DspError> {
        if taps.is_empty() {
            return Err(DspError::EmptyTaps);
        }
        if decimation == 0 {
            return Err(DspError::InvalidDecimation(decimation));
        }
        if interpolation == 0 {
            return Err(DspError::InvalidDesign {
                name: "interpolation",
                value: "0".into(),
                expected: "at least 1",
            });
        }
        let per_phase = taps.len().div_ceil(interpolation);
        let phases = (0..interpolation)
            .map(|p| {
                (0..per_phase)
                    .rev()
                    .map(|i| taps.get(p + i * interpolation).copied().unwrap_or(0.0))
                    .flat_map(|t| [t, t])
                    .collect()
            })
            .collect();
        let history = per_phase - 1;
        Ok(RationalResampler {
            interpolation,
            decimation,
            per_phase,
            phases,
            buf: vec![Complex32::default(); history + ROUND + GROUP * decimation],
            filled: history,
            pos: history,
            phase: 0,
            dots: Dots::new(),
            step: (decimation / interpolation, decimation % interpolation),
            steps: Vec::new(),
            steps_from: usize::MAX,
        })
    }

    /// Interpolation factor `I`.
    pub fn interpolation(&self) -> usize {
        self.interpolation
    }

    /// Decimation factor `D`.
    pub fn decimation(&self) -> usize {
        self.decimation
    }

    /// Back to the initial state (zero history, phase 0).
    pub fn reset(&mut self) {
        self.buf.fill(Complex32::default());
        self.filled = self.per_phase - 1;
        self.pos = self.filled;
        self.phase = 0;
    }

    /// Consumes input (all of it, unless `output` fills up first) and writes the outputs it
    /// completes; returns `(consumed, produced)`.
    pub fn process(&mut self, input: &[Complex32], output: &mut [Complex32]) -> (usize, usize) {
        let (mut consumed, mut produced) = (0, 0);
        loop {
            produced += self.run(&mut output[produced..]);
            // Drop what no later output reads, then take new input into the room made.
            let keep_from = self.pos + 1 - self.per_phase;
            self.buf.copy_within(keep_from..self.filled, 0);
            self.filled -= keep_from;
            self.pos -= keep_from;
            let room = (self.buf.len() - self.filled).min(input.len() - consumed);
            if room == 0 || produced == output.len() && self.pos < self.filled {
                return (consumed, produced);
            }
            self.buf[self.filled..self.filled + room]
                .copy_from_slice(&input[consumed..consumed + room]);
            self.filled += room;
            consumed += room;
        }
    }

    /// The input position and phase of the output after one at (`pos`, `p`): `D` further at
    /// the interpolated rate. Without a division (this runs once per output).
    #[inline]
    fn advance(&self, pos: usize, p: usize) -> (usize, usize) {
        let (whole, rem) = self.step;
        let t = p + rem;
        if t >= self.interpolation {
            (pos + whole + 1, t - self.interpolation)
        } else {
            (pos + whole, t)
        }
    }

    /// The sub-filters and window offsets of one period starting at the current phase.
    fn plan_period(&mut self) {
        let (mut pos, mut p) = (0, self.phase);
        self.steps.clear();
        for _ in 0..self.interpolation {
            self.steps.push((p, 2 * pos));
            (pos, p) = self.advance(pos, p);
        }
        self.steps_from = self.phase;
    }

    /// Every output the buffer holds the input for, as many as `out` has room for.
    fn run(&mut self, out: &mut [Complex32]) -> usize {
        let (i, d, w) = (self.interpolation, self.decimation, 2 * self.per_phase);
        let mut done = 0;
        // Whole groups: GROUP periods of I outputs, each period D samples further on; the
        // period's last output reads at most D samples past its first's.
        let groups =
            (out.len() / (GROUP * i)).min(self.filled.saturating_sub(self.pos + 1) / (GROUP * d));
        if groups > 0 && self.steps_from != self.phase {
            self.plan_period();
        }
        let x: &[f32] = bytemuck::cast_slice(&self.buf[..self.filled]);
        if groups > 0 {
            let job = Periods {
                phases: &self.phases,
                steps: &self.steps,
                stride: 2 * d,
                base: 2 * (self.pos + 1 - self.per_phase),
                count: groups * GROUP,
            };
            let sums: &mut [[f32; 2]] =
                bytemuck::cast_slice_mut(&mut out[done..done + groups * GROUP * i]);
            self.dots.periods(&job, x, sums);
            // After I outputs the phase is back and the input D further on.
            self.pos += groups * GROUP * d;
            done += groups * GROUP * i;
        }
        // Then one at a time.
        while done < out.len() && self.pos < self.filled {
            let at = 2 * (self.pos + 1 - self.per_phase);
            let window = &x[at..at + w];
            let s = self.dots.run(&self.phases[self.phase], [window; GROUP])[0];
            out[done] = Complex32::new(s[0], s[1]);
            done += 1;
            (self.pos, self.phase) = self.advance(self.pos, self.phase);
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;
    use rand::{Rng, SeedableRng};

    /// `y[m] = Σ_j h[mD − jI] · x[j]` in f64, for every `m` with `⌊mD/I⌋ < x.len()`.
    fn reference(i: usize, d: usize, h: &[f32], x: &[Complex32]) -> Vec<Complex64> {
        let mut out = Vec::new();
        let mut m = 0;
        while m * d / i < x.len() {
            let mut acc = Complex64::default();
            for (j, v) in x.iter().enumerate() {
                let Some(k) = (m * d).checked_sub(j * i) else {
                    break;
                };
                if let Some(&t) = h.get(k) {
                    acc += Complex64::new(v.re.into(), v.im.into()) * f64::from(t);
                }
            }
            out.push(acc);
            m += 1;
        }
        out
    }

    #[test]
    fn matches_the_f64_definition_in_random_chunks() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(31);
        for (i, d, taps) in [
            (3, 2, 144),
            (1, 1, 5),
            (2, 3, 20),
            (5, 1, 11),
            (1, 4, 9),
            (7, 5, 70),
            (4, 4, 16),
        ] {
            let h: Vec<f32> = (0..taps).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let x: Vec<Complex32> = (0..3000)
                .map(|_| Complex32::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
                .collect();
            let want = reference(i, d, &h, &x);
            let mut r = RationalResampler::new(i, d, &h).unwrap();
            let (mut got, mut at) = (Vec::new(), 0);
            let mut out = vec![Complex32::default(); 100];
            while at < x.len() || got.len() < want.len() {
                let chunk = rng.gen_range(0..700).min(x.len() - at);
                let cap = rng.gen_range(0..=out.len());
                let (c, p) = r.process(&x[at..at + chunk], &mut out[..cap]);
                got.extend_from_slice(&out[..p]);
                at += c;
            }
            assert_eq!(got.len(), want.len(), "{i}/{d}");
            for (m, (g, w)) in got.iter().zip(&want).enumerate() {
                let err = (Complex64::new(g.re.into(), g.im.into()) - w).norm();
                assert!(err < 1e-5, "{i}/{d} output {m}: {g} vs {w}");
            }
            r.reset();
            let mut again = vec![Complex32::default(); want.len()];
            let (_, p) = r.process(&x, &mut again);
            assert_eq!(again[..p], got[..p], "{i}/{d} after reset");
        }
    }

    #[test]
    fn invalid_configurations_are_refused() {
        assert!(RationalResampler::new(3, 2, &[]).is_err());
        assert!(RationalResampler::new(0, 2, &[1.0]).is_err());
        let e = RationalResampler::new(3, 0, &[1.0]).unwrap_err();
        assert!(e.to_string().contains("decimation"), "{e}");
    }
}
