//! Frequency shift (rotator): `out[n] = in[n] · e^{j(φ₀ + 2π·f·n)}`, phase-continuous across
//! calls and across retuning (GNU Radio's `rotator_cc`).
//!
//! A table holds `e^{j·2π·f·k}` for `k < BLOCK`, computed in f64 when the frequency is set.
//! The stream is cut into blocks of `BLOCK` samples counted from the start (or the last retune),
//! not from each call: each block takes its start phasor `e^{jφ}` from the f64 phase
//! accumulator (one `sin_cos` per block and call) and each sample is multiplied by the start
//! phasor times its table entry, both products in registers (AVX2+FMA: four samples per step,
//! with the `fmaddsub` complex product of `cmac_x86.rs`; a call's last one to three samples go
//! through the same vector code, zero-padded). So the phase never drifts (the f64 accumulator
//! is wrapped to ±π each block, and no phasor is ever multiplied by itself), every output is
//! within a few f32 roundings of the exact product, an output's bits do not depend on how the
//! stream was cut into calls (a graph spread over machines writes what one machine writes),
//! and a retune changes the increment from the next sample on, continuing from the phase
//! reached.

use super::DspError;
use num_complex::Complex32;
use std::f64::consts::TAU;

/// Samples per table (and per start phasor).
const BLOCK: usize = 1024;

/// A frequency shifter; see the module docs.
#[derive(Debug, Clone)]
pub struct Rotator {
    /// Cycles per sample.
    frequency: f64,
    /// Phase of the current block's first sample, in radians, within ±π.
    block_phase: f64,
    /// Position of the next sample in the current block (0 … BLOCK − 1).
    pos: usize,
    /// `e^{j·2π·f·k}` for `k < BLOCK`.
    table: Vec<Complex32>,
}

impl Rotator {
    /// A shift by `frequency` cycles per sample (Hz divided by the sample rate; any finite
    /// value, negative shifts down), starting at phase 0.
    pub fn new(frequency: f64) -> Result<Self, DspError> {
        let mut r = Rotator {
            frequency: 0.0,
            block_phase: 0.0,
            pos: 0,
            table: vec![Complex32::new(1.0, 0.0); BLOCK],
        };
        r.set_frequency(frequency)?;
        Ok(r)
    }

    /// Retunes to `frequency` cycles per sample from the next sample on, continuing from the
    /// phase reached. `Err` (and no change) if it is not finite.
    pub fn set_frequency(&mut self, frequency: f64) -> Result<(), DspError> {
        if !frequency.is_finite() {
            return Err(DspError::InvalidDesign {
                name: "frequency",
                value: frequency.to_string(),
                expected: "a finite number",
            });
        }
        // The new increment starts a block at the phase reached.
        self.set_phase(self.phase());
        // Only the fractional part matters; keeping it small keeps the f64 products exact.
        self.frequency = frequency - frequency.round();
        for (k, t) in self.table.iter_mut().enumerate() {
            let (s, c) = (TAU * self.frequency * k as f64).sin_cos();
            *t = Complex32::new(c as f32, s as f32);
        }
        Ok(())
    }

    /// The shift, in cycles per sample (reduced to −0.5 … 0.5).
    pub fn frequency(&self) -> f64 {
        self.frequency
    }

    /// The phase the next sample is rotated by, in radians (−π … π).
    pub fn phase(&self) -> f64 {
        wrap(self.block_phase + TAU * self.frequency * self.pos as f64)
    }

    /// Sets the phase of the next sample (radians); a new block starts there.
    pub fn set_phase(&mut self, phase: f64) {
        self.block_phase = wrap(phase);
        self.pos = 0;
    }

    /// Back to phase 0 (the frequency stays).
    pub fn reset(&mut self) {
        self.set_phase(0.0);
    }

    /// Advances the phase over `n` samples without rotating any (they are dropped), exactly
    /// as [`Rotator::process`] would have (one step per block skipped: 10⁹ samples take a few
    /// milliseconds).
    pub fn skip(&mut self, n: usize) {
        for _ in 0..(self.pos + n) / BLOCK {
            self.next_block();
        }
        self.pos = (self.pos + n) % BLOCK;
    }

    /// Rotates `min(input.len(), output.len())` samples; returns `(consumed, produced)`.
    pub fn process(&mut self, input: &[Complex32], output: &mut [Complex32]) -> (usize, usize) {
        let n = input.len().min(output.len());
        let mut done = 0;
        while done < n {
            let m = (BLOCK - self.pos).min(n - done);
            let range = done..done + m;
            rotate(
                self.start(),
                &self.table[self.pos..self.pos + m],
                &input[range.clone()],
                &mut output[range],
            );
            self.step(m);
            done += m;
        }
        (n, n)
    }

    /// Rotates `data` in place.
    pub fn process_in_place(&mut self, data: &mut [Complex32]) {
        let mut block = [Complex32::default(); BLOCK];
        let mut done = 0;
        while done < data.len() {
            let m = (BLOCK - self.pos).min(data.len() - done);
            let chunk = &mut data[done..done + m];
            block[..m].copy_from_slice(chunk);
            rotate(
                self.start(),
                &self.table[self.pos..self.pos + m],
                &block[..m],
                chunk,
            );
            self.step(m);
            done += m;
        }
    }

    /// The current block's start phasor.
    fn start(&self) -> Complex32 {
        let (s, c) = self.block_phase.sin_cos();
        Complex32::new(c as f32, s as f32)
    }

    /// Moves `m` samples on within the current block (`pos + m ≤ BLOCK`).
    fn step(&mut self, m: usize) {
        self.pos += m;
        if self.pos == BLOCK {
            self.next_block();
            self.pos = 0;
        }
    }

    fn next_block(&mut self) {
        self.block_phase = wrap(self.block_phase + TAU * self.frequency * BLOCK as f64);
    }
}

/// `y[k] = x[k] · (start · table[k])` for `k < x.len()` (all three the same length).
fn rotate(start: Complex32, table: &[Complex32], x: &[Complex32], y: &mut [Complex32]) {
    assert!(table.len() == x.len() && y.len() == x.len());
    #[cfg(target_arch = "x86_64")]
    if super::simd::usable(super::SimdLevel::Avx2Fma) {
        // SAFETY: avx2 and fma were detected just above; the three slices have equal lengths.
        let done = unsafe { x86::rotate(start, table, x, y) };
        let rest = x.len() - done;
        if rest > 0 {
            // The last samples through the same vector code, zero-padded to four.
            let (mut t, mut v, mut w) = (
                [Complex32::default(); 4],
                [Complex32::default(); 4],
                [Complex32::default(); 4],
            );
            t[..rest].copy_from_slice(&table[done..]);
            v[..rest].copy_from_slice(&x[done..]);
            // SAFETY: as above; the three arrays hold four samples each.
            unsafe { x86::rotate(start, &t, &v, &mut w) };
            y[done..].copy_from_slice(&w[..rest]);
        }
        return;
    }
    for k in 0..x.len() {
        y[k] = x[k] * (start * table[k]);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use num_complex::Complex32;
    use std::arch::x86_64::*;

    /// The vector part of `rotate`, four samples per step; returns how many it did (a
    /// multiple of 4).
    ///
    /// # Safety
    /// The CPU must support avx2 and fma; the three slices must have equal lengths.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn rotate(
        start: Complex32,
        table: &[Complex32],
        x: &[Complex32],
        y: &mut [Complex32],
    ) -> usize {
        let n = x.len() / 4 * 4;
        let (sr, si) = (_mm256_set1_ps(start.re), _mm256_set1_ps(start.im));
        let (pt, px, py) = (
            table.as_ptr().cast::<f32>(),
            x.as_ptr().cast::<f32>(),
            y.as_mut_ptr().cast::<f32>(),
        );
        let mut k = 0;
        while k < n {
            // SAFETY: k + 4 ≤ n ≤ each slice's length: 8 floats at 2k in each.
            unsafe {
                let t = _mm256_loadu_ps(pt.add(2 * k));
                // z = start · t, then x · z: fmaddsub(a, re(b), swap(a)·im(b)) = a·b.
                let z = _mm256_fmaddsub_ps(t, sr, _mm256_mul_ps(_mm256_permute_ps::<0xB1>(t), si));
                let v = _mm256_loadu_ps(px.add(2 * k));
                let w = _mm256_mul_ps(_mm256_permute_ps::<0xB1>(v), _mm256_movehdup_ps(z));
                _mm256_storeu_ps(
                    py.add(2 * k),
                    _mm256_fmaddsub_ps(v, _mm256_moveldup_ps(z), w),
                );
            }
            k += 4;
        }
        n
    }
}

/// `phase` wrapped to −π … π.
fn wrap(phase: f64) -> f64 {
    phase - TAU * (phase / TAU).round()
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;
    use rand::{Rng, SeedableRng};

    fn noise(n: usize, seed: u64) -> Vec<Complex32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| Complex32::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
            .collect()
    }

    /// `x[n] · e^{j·2π·Σ f}`, in f64, with the frequency changing at the given samples. The
    /// phase is taken from exact cycle counts (`f·n` reduced to its fraction), not summed, so
    /// the reference does not drift over a million samples.
    fn reference(x: &[Complex32], changes: &[(usize, f64)]) -> Vec<Complex64> {
        x.iter()
            .enumerate()
            .map(|(n, v)| {
                let mut cycles = 0.0f64;
                for (i, &(at, f)) in changes.iter().enumerate() {
                    let end = changes.get(i + 1).map_or(n, |c| c.0.min(n));
                    if n > at {
                        cycles += (f * (end - at) as f64).fract();
                    }
                }
                Complex64::new(v.re.into(), v.im.into()) * Complex64::from_polar(1.0, TAU * cycles)
            })
            .collect()
    }

    fn max_error(got: &[Complex32], want: &[Complex64]) -> f64 {
        got.iter()
            .zip(want)
            .map(|(g, w)| (Complex64::new(g.re.into(), g.im.into()) - w).norm())
            .fold(0.0, f64::max)
    }

    #[test]
    fn matches_the_f64_rotation_over_a_million_samples_in_random_chunks() {
        let x = noise(1 << 20, 1);
        let mut r = Rotator::new(0.123_456_789).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let mut got = vec![Complex32::default(); x.len()];
        let mut at = 0;
        while at < x.len() {
            let k = rng.gen_range(1..3000).min(x.len() - at);
            let cap = rng.gen_range(0..=k);
            let (c, p) = r.process(&x[at..at + k], &mut got[at..at + cap]);
            assert_eq!((c, p), (cap, cap));
            at += c;
        }
        let err = max_error(&got, &reference(&x, &[(0, 0.123_456_789)]));
        assert!(err < 1e-6, "max error {err}");
    }

    #[test]
    fn retuning_is_phase_continuous_and_in_place_agrees() {
        let x = noise(5000, 3);
        let mut r = Rotator::new(-0.01).unwrap();
        let mut got = x.clone();
        r.process_in_place(&mut got[..1234]);
        r.set_frequency(0.3 + 7.0).unwrap(); // whole cycles per sample do not matter
        assert!((r.frequency() - 0.3).abs() < 1e-12);
        r.process_in_place(&mut got[1234..]);
        let err = max_error(&got, &reference(&x, &[(0, -0.01), (1234, 0.3)]));
        assert!(err < 1e-6, "max error {err}");
        r.reset();
        assert_eq!(r.phase(), 0.0);
    }

    /// A stream split over machines or resumed after a failover is cut into other calls: the
    /// output must not change by a bit.
    #[test]
    fn any_chunking_gives_the_same_bits() {
        let x = noise(10_000, 4);
        let mut whole = vec![Complex32::default(); x.len()];
        Rotator::new(-0.000_5).unwrap().process(&x, &mut whole);
        let mut r = Rotator::new(-0.000_5).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let mut got = x.clone();
        let mut at = 0;
        while at < x.len() {
            let k = rng.gen_range(1..1500).min(x.len() - at);
            if rng.gen_bool(0.5) {
                r.process(&x[at..at + k], &mut got[at..at + k]);
            } else {
                r.process_in_place(&mut got[at..at + k]);
            }
            at += k;
        }
        assert!(got == whole, "the chunked output differs");
        // Skipping lands on the same phase as rotating.
        let mut a = Rotator::new(0.37).unwrap();
        let mut b = a.clone();
        a.process(&x[..7_777], &mut got[..7_777]);
        b.skip(3_000);
        b.skip(4_777);
        assert_eq!(a.phase(), b.phase());
    }

    #[test]
    fn bad_frequencies_are_refused() {
        assert!(Rotator::new(f64::NAN).is_err());
        let mut r = Rotator::new(0.1).unwrap();
        let e = r.set_frequency(f64::INFINITY).unwrap_err();
        assert!(e.to_string().contains("frequency"), "{e}");
        assert_eq!(r.frequency(), 0.1);
    }
}
