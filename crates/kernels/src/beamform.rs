//! Delay-and-sum beamforming of a uniform linear array (ULA): the steering geometry
//! ([`Steering`]: weights and delays) and the narrowband phase-steering kernel
//! ([`PhaseBeamformer`]: `out[b][t] = Σ_k w[b][k] · in[k][t]`, a complex matrix product over
//! windows read in place). The wideband true-time-delay kernel is in `beamform_ttd.rs`.
//!
//! Convention: element `k` sits at `k · spacing` wavelengths along the array; a plane wave
//! from angle θ (degrees from broadside, positive towards higher element indices) reaches
//! element `k` with phase `+2π · spacing · k · sin θ` relative to element 0. The weight of
//! element `k` for a beam steered to θ is `taper[k] · e^{−j2π·spacing·k·sin θ} / Σ taper`, so a
//! unit plane wave from θ comes out of that beam with unit gain. Weights always come from the
//! **full** array: an instance covering elements `first..first + n` (partial-sum mode) gets
//! the columns `first..first + n`, and the outputs of instances covering the whole array add
//! up to the full beam.

use num_complex::Complex32;
use std::f64::consts::TAU;

#[cfg(target_arch = "x86_64")]
use super::beamform_x86;
use super::{simd, DspError, SimdLevel, Window};

/// The most antennas one kernel instance holds (more: split the array into partial sums).
pub const MAX_ANTENNAS: usize = 64;
/// The most beams one kernel instance forms.
pub const MAX_BEAMS: usize = 32;

/// Where the beams of a uniform linear array point, and how its elements are weighted.
#[derive(Debug, Clone, PartialEq)]
pub struct Steering {
    /// Elements in the full array.
    pub elements: usize,
    /// Element spacing in wavelengths (at the carrier).
    pub spacing: f64,
    /// One steering angle per beam, degrees from broadside.
    pub angles: Vec<f64>,
    /// Amplitude taper over the full array (`None`: uniform).
    pub taper: Option<Window>,
}

impl Steering {
    /// Checks the geometry: at least one element and one beam, a positive finite spacing,
    /// angles within ±90°.
    pub fn check(&self) -> Result<(), DspError> {
        if self.elements == 0 {
            return Err(bad("elements", 0.0, "at least 1"));
        }
        if !(self.spacing > 0.0 && self.spacing.is_finite()) {
            return Err(bad(
                "spacing",
                self.spacing,
                "a positive number of wavelengths",
            ));
        }
        if self.angles.is_empty() || self.angles.len() > MAX_BEAMS {
            return Err(bad("beams", self.angles.len() as f64, "1 to 32 angles"));
        }
        for &a in &self.angles {
            if !(-90.0..=90.0).contains(&a) {
                return Err(bad("angle", a, "degrees between -90 and 90"));
            }
        }
        Ok(())
    }

    /// The taper of the full array, normalised so that it sums to 1.
    fn taper(&self) -> Result<Vec<f64>, DspError> {
        let t = match self.taper {
            None => vec![1.0; self.elements],
            Some(w) => w.coefficients(self.elements)?,
        };
        let sum: f64 = t.iter().sum();
        Ok(t.iter().map(|x| x / sum).collect())
    }

    /// The weights of elements `first..first + n` for every beam, beam-major
    /// (`w[b * n + k]` for element `first + k`).
    pub fn weights(&self, first: usize, n: usize) -> Result<Vec<Complex32>, DspError> {
        self.check()?;
        self.check_range(first, n)?;
        let taper = self.taper()?;
        let mut w = Vec::with_capacity(self.angles.len() * n);
        for &angle in &self.angles {
            let s = angle.to_radians().sin();
            for (k, a) in taper.iter().enumerate().skip(first).take(n) {
                let phase = -TAU * self.spacing * k as f64 * s;
                let (sin, cos) = phase.sin_cos();
                w.push(Complex32::new((a * cos) as f32, (a * sin) as f32));
            }
        }
        Ok(w)
    }

    /// The delay in samples that aligns element `first + k` for beam `b`
    /// (`d[b * n + k]`), at `samples_per_cycle` = sample rate / carrier: the wave reaches
    /// element `k` earlier by `spacing · k · sin θ` carrier periods; each element is delayed
    /// so that all line up with the latest one of the full array (every delay ≥ 0, at most
    /// [`Steering::max_delay`]).
    pub fn delays(
        &self,
        first: usize,
        n: usize,
        samples_per_cycle: f64,
    ) -> Result<Vec<f64>, DspError> {
        self.check()?;
        self.check_range(first, n)?;
        if !(samples_per_cycle > 0.0 && samples_per_cycle.is_finite()) {
            return Err(bad("sample_rate / carrier", samples_per_cycle, "positive"));
        }
        let last = (self.elements - 1) as f64;
        let mut d = Vec::with_capacity(self.angles.len() * n);
        for &angle in &self.angles {
            let s = angle.to_radians().sin() * self.spacing * samples_per_cycle;
            for k in first..first + n {
                // Advance of element k: k·s samples; the latest element has the least.
                let latest = if s >= 0.0 { 0.0 } else { last * s };
                d.push(k as f64 * s - latest);
            }
        }
        Ok(d)
    }

    /// The largest delay any steering angle can need on the full array, in samples.
    pub fn max_delay(&self, samples_per_cycle: f64) -> f64 {
        (self.elements - 1) as f64 * self.spacing * samples_per_cycle
    }

    fn check_range(&self, first: usize, n: usize) -> Result<(), DspError> {
        if n == 0 || n > MAX_ANTENNAS || first + n > self.elements {
            return Err(DspError::InvalidParameter {
                name: "antennas",
                value: format!("{first}..{}", first + n),
                expected: "1 to 64 elements inside the array",
            });
        }
        Ok(())
    }
}

fn bad(name: &'static str, value: f64, expected: &'static str) -> DspError {
    DspError::InvalidParameter {
        name,
        value: value.to_string(),
        expected,
    }
}

/// Narrowband beams: `out[b][t] (+)= Σ_k w[b][k] · in[k][t]` for `n` inputs and `B` beams,
/// on windows read in place. The weights are kept twice, expanded for the vector loop
/// (`[wr, wi]` and `[−wi, wr]` repeated over a vector), so `set_weights` allocates nothing.
#[derive(Debug, Clone)]
pub struct PhaseBeamformer {
    antennas: usize,
    beams: usize,
    weights: Vec<Complex32>,
    /// Per (beam, antenna): L × `[wr, wi]`, then L × `[−wi, wr]` (4L f32), L = complex per
    /// vector (4 for AVX2 and the portable loop, 8 for AVX-512), in cache lines so that no
    /// vector load of a weight straddles two lines (a 64-byte load from a 16-byte aligned
    /// `Vec<f32>` does three times in four, which made the AVX-512 loop slower than AVX2's).
    expanded: Vec<Line>,
    lanes: usize,
    level: SimdLevel,
}

impl PhaseBeamformer {
    /// `beams` beams over `antennas` inputs with weights `w[b * antennas + k]`.
    pub fn new(antennas: usize, beams: usize, weights: &[Complex32]) -> Result<Self, DspError> {
        Self::with_level(antennas, beams, weights, simd::best())
    }

    /// As [`PhaseBeamformer::new`], at SIMD level `level` (tests compare levels).
    pub fn with_level(
        antennas: usize,
        beams: usize,
        weights: &[Complex32],
        level: SimdLevel,
    ) -> Result<Self, DspError> {
        if !(1..=MAX_ANTENNAS).contains(&antennas) || !(1..=MAX_BEAMS).contains(&beams) {
            return Err(DspError::InvalidParameter {
                name: "antennas x beams",
                value: format!("{antennas} x {beams}"),
                expected: "1 to 64 antennas and 1 to 32 beams",
            });
        }
        if !simd::usable(level) {
            return Err(DspError::SimdUnavailable(level.name()));
        }
        let lanes = if level == SimdLevel::Avx512 { 8 } else { 4 };
        let mut k = PhaseBeamformer {
            antennas,
            beams,
            weights: vec![Complex32::default(); antennas * beams],
            expanded: vec![Line::default(); antennas * beams * lanes / 4],
            lanes,
            level,
        };
        k.set_weights(weights)?;
        Ok(k)
    }

    /// Replaces the weights (`antennas × beams`, beam-major) without allocating.
    pub fn set_weights(&mut self, weights: &[Complex32]) -> Result<(), DspError> {
        if weights.len() != self.weights.len() {
            return Err(DspError::InvalidParameter {
                name: "weights",
                value: weights.len().to_string(),
                expected: "one per antenna per beam",
            });
        }
        self.weights.copy_from_slice(weights);
        let l = self.lanes;
        let expanded = flat_mut(&mut self.expanded);
        for (w, e) in weights.iter().zip(expanded.chunks_exact_mut(4 * l)) {
            for i in 0..l {
                e[2 * i..2 * i + 2].copy_from_slice(&[w.re, w.im]);
                e[2 * l + 2 * i..2 * l + 2 * i + 2].copy_from_slice(&[-w.im, w.re]);
            }
        }
        Ok(())
    }

    /// The number of inputs.
    pub fn antennas(&self) -> usize {
        self.antennas
    }

    /// The number of beams.
    pub fn beams(&self) -> usize {
        self.beams
    }

    /// Forms `m = outputs[0].len()` items of every beam from the first `m` items of every
    /// input; adds to what the outputs hold if `accumulate`. Panics if the counts of inputs or
    /// outputs differ from the kernel's, or an input or output is shorter than `m`.
    pub fn process(
        &self,
        inputs: &[&[Complex32]],
        outputs: &mut [&mut [Complex32]],
        accumulate: bool,
    ) {
        assert_eq!(inputs.len(), self.antennas, "beamformer inputs");
        assert_eq!(outputs.len(), self.beams, "beamformer outputs");
        let m = outputs[0].len();
        assert!(
            inputs.iter().all(|x| x.len() >= m) && outputs.iter().all(|y| y.len() == m),
            "beamformer: every input must hold {m} items and every output exactly {m}"
        );
        let expanded = flat(&self.expanded);
        let (start, done) = match self.level {
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => {
                // The vector loop starts where the first input's items begin a cache line
                // (windows of a queue, like the bench's buffers, share their alignment), so
                // that its 64-byte loads do not straddle two lines; the items before are
                // formed by the plain loop.
                let start = (inputs[0].as_ptr().align_offset(64)).min(m);
                // SAFETY: the level was checked usable (AVX-512F) at construction; every
                // input holds ≥ m items and every output m (asserted above), start <= m; the
                // expanded weights hold 32 f32 per (beam, antenna) at this level.
                let end = unsafe {
                    beamform_x86::phase_avx512(
                        inputs,
                        outputs,
                        expanded,
                        self.antennas,
                        accumulate,
                        start,
                    )
                };
                (start, end)
            }
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2Fma => {
                // SAFETY: the level was checked usable (AVX2 and FMA) at construction; every
                // input holds ≥ m items and every output m (asserted above); the expanded
                // weights hold 16 f32 per (beam, antenna) at this level.
                let end = unsafe {
                    beamform_x86::phase_avx2(inputs, outputs, expanded, self.antennas, accumulate)
                };
                (0, end)
            }
            _ => (0, 0),
        };
        self.portable(inputs, outputs, accumulate, 0..start);
        self.portable(inputs, outputs, accumulate, done..m);
    }

    /// The plain loop for items `range`.
    fn portable(
        &self,
        inputs: &[&[Complex32]],
        outputs: &mut [&mut [Complex32]],
        accumulate: bool,
        range: std::ops::Range<usize>,
    ) {
        if range.is_empty() {
            return;
        }
        for (b, out) in outputs.iter_mut().enumerate() {
            let out = &mut out[range.clone()];
            if !accumulate {
                out.fill(Complex32::default());
            }
            let w = &self.weights[b * self.antennas..(b + 1) * self.antennas];
            for (x, &w) in inputs.iter().zip(w) {
                for (y, &x) in out.iter_mut().zip(&x[range.clone()]) {
                    *y += w * x;
                }
            }
        }
    }
}

/// One cache line of expanded weights.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line([f32; 16]);

/// The f32 of `lines`, in order.
fn flat(lines: &[Line]) -> &[f32] {
    // SAFETY: `Line` is `repr(C)` over `[f32; 16]` with no padding (64 bytes, align 64), so
    // the lines are `16 · len` contiguous, initialised f32.
    unsafe { std::slice::from_raw_parts(lines.as_ptr().cast(), lines.len() * 16) }
}

/// The f32 of `lines`, in order, writable.
fn flat_mut(lines: &mut [Line]) -> &mut [f32] {
    // SAFETY: as in `flat`; the borrow is exclusive.
    unsafe { std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast(), lines.len() * 16) }
}

#[cfg(test)]
mod tests;
