//! A uniform linear array receiving plane waves: the signals of `elements` antennas spaced
//! `spacing` wavelengths apart, at complex baseband around the carrier, with independent
//! Gaussian noise per antenna (the convention of `beamform.rs`: a wave from θ reaches element
//! `k` earlier by `spacing · k · sin θ` carrier periods).
//!
//! Tones and FM signals are computed at each element's own (fractionally advanced) time, so
//! they are exact true-time-delayed plane waves, wideband included; noise sources are
//! narrowband (the same sample at every element, turned by the carrier phase).

use num_complex::Complex32;
use std::f64::consts::TAU;

use super::DspError;

/// What a plane-wave source sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Emission {
    /// A tone at `offset` Hz from the carrier.
    Tone,
    /// Complex Gaussian noise (narrowband model).
    Noise,
    /// FM around `offset`: a 1 kHz modulating tone at `deviation` Hz peak deviation.
    Fm {
        /// Peak deviation, Hz.
        deviation: f64,
    },
}

/// One plane wave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlaneWave {
    /// Arrival angle, degrees from broadside.
    pub angle: f64,
    /// Frequency offset from the carrier, Hz.
    pub offset: f64,
    /// Amplitude (RMS for noise).
    pub amplitude: f64,
    /// The waveform.
    pub emission: Emission,
}

/// The FM modulating frequency, Hz.
const FM_RATE: f64 = 1000.0;

/// Generates the element signals; see the module docs.
#[derive(Debug, Clone)]
pub struct ArrayGenerator {
    elements: usize,
    /// Per (source, element): arrival advance in seconds.
    advance: Vec<f64>,
    /// Per (source, element): carrier phase turn.
    turn: Vec<Complex32>,
    sources: Vec<PlaneWave>,
    sample_rate: f64,
    noise: f32,
    rngs: Vec<crate::Gaussian>,
    /// Per source: that source's noise sample (shared by the elements).
    draws: Vec<Complex32>,
    t: u64,
}

impl ArrayGenerator {
    /// `elements` antennas `spacing` wavelengths apart at `carrier` Hz, sampled at
    /// `sample_rate` Hz, receiving `sources`, with noise of RMS `noise` per antenna; `seed`
    /// makes the noise repeatable.
    pub fn new(
        elements: usize,
        spacing: f64,
        carrier: f64,
        sample_rate: f64,
        sources: Vec<PlaneWave>,
        noise: f64,
        seed: u64,
    ) -> Result<Self, DspError> {
        let bad = |name, value: f64, expected| DspError::InvalidParameter {
            name,
            value: value.to_string(),
            expected,
        };
        if elements == 0 || elements > 4096 {
            return Err(bad("elements", elements as f64, "1 to 4096"));
        }
        for (name, v) in [
            ("spacing", spacing),
            ("carrier", carrier),
            ("sample_rate", sample_rate),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(bad(name, v, "a positive number"));
            }
        }
        if !(noise >= 0.0 && noise.is_finite()) {
            return Err(bad("noise", noise, "a number >= 0"));
        }
        let mut advance = Vec::new();
        let mut turn = Vec::new();
        for s in &sources {
            if !(-90.0..=90.0).contains(&s.angle)
                || !s.offset.is_finite()
                || !s.amplitude.is_finite()
            {
                return Err(bad(
                    "angle",
                    s.angle,
                    "sources within ±90 degrees, finite offsets and amplitudes",
                ));
            }
            for k in 0..elements {
                let cycles = spacing * k as f64 * s.angle.to_radians().sin();
                advance.push(cycles / carrier);
                let p = TAU * cycles;
                turn.push(Complex32::new(p.cos() as f32, p.sin() as f32));
            }
        }
        Ok(ArrayGenerator {
            elements,
            advance,
            turn,
            draws: vec![Complex32::default(); sources.len()],
            sources,
            sample_rate,
            noise: noise as f32 * std::f32::consts::FRAC_1_SQRT_2,
            rngs: (0..=elements as u64)
                .map(|k| crate::Gaussian::new(seed.wrapping_add(k)))
                .collect(),
            t: 0,
        })
    }

    /// The number of antennas.
    pub fn elements(&self) -> usize {
        self.elements
    }

    /// Fills `m = outputs[0].len()` samples of every antenna (`outputs.len()` = elements).
    pub fn generate(&mut self, outputs: &mut [&mut [Complex32]]) {
        assert_eq!(outputs.len(), self.elements, "array generator outputs");
        let m = outputs[0].len();
        for j in 0..m {
            let time = (self.t + j as u64) as f64 / self.sample_rate;
            for (s, src) in self.sources.iter().enumerate() {
                if src.emission == Emission::Noise {
                    let (a, b) = self.rngs[self.elements].pair();
                    let scale = (src.amplitude * std::f64::consts::FRAC_1_SQRT_2) as f32;
                    self.draws[s] = Complex32::new(a, b) * scale;
                }
            }
            for (k, out) in outputs.iter_mut().enumerate() {
                let (a, b) = self.rngs[k].pair();
                let mut y = Complex32::new(a, b) * self.noise;
                for (s, src) in self.sources.iter().enumerate() {
                    let p = s * self.elements + k;
                    let t = time + self.advance[p];
                    y += match src.emission {
                        Emission::Tone => polar(src.amplitude, TAU * src.offset * t) * self.turn[p],
                        Emission::Fm { deviation } => {
                            let phase = TAU * src.offset * t
                                + deviation / FM_RATE * (TAU * FM_RATE * t).sin();
                            polar(src.amplitude, phase) * self.turn[p]
                        }
                        Emission::Noise => self.draws[s] * self.turn[p],
                    };
                }
                out[j] = y;
            }
        }
        self.t += m as u64;
    }
}

fn polar(amplitude: f64, phase: f64) -> Complex32 {
    let (s, c) = phase.sin_cos();
    Complex32::new((amplitude * c) as f32, (amplitude * s) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PhaseBeamformer, Steering};

    /// Power of the beams steered over −90..90° (0.25° steps) on 16 elements receiving two
    /// sources: the two strongest local maxima lie within half a beamwidth of the sources.
    #[test]
    fn beam_pattern_peaks_lie_within_half_a_beamwidth_of_the_sources() {
        let n = 16;
        let wave = |angle, offset, emission| PlaneWave {
            angle,
            offset,
            amplitude: 1.0,
            emission,
        };
        let sources = vec![
            wave(-31.0, 1000.0, Emission::Tone),
            wave(24.5, -3000.0, Emission::Fm { deviation: 2000.0 }),
        ];
        let mut g = ArrayGenerator::new(n, 0.5, 1e9, 48_000.0, sources, 0.5, 3).unwrap();
        let len = 4800;
        let mut x = vec![vec![Complex32::default(); len]; n];
        let mut outs: Vec<&mut [Complex32]> = x.iter_mut().map(|v| &mut v[..]).collect();
        g.generate(&mut outs);
        let inputs: Vec<&[Complex32]> = x.iter().map(|v| &v[..]).collect();
        let angles: Vec<f64> = (0..=720).map(|i| -90.0 + 0.25 * i as f64).collect();
        let mut power = Vec::new();
        for chunk in angles.chunks(32) {
            let s = Steering {
                elements: n,
                spacing: 0.5,
                angles: chunk.to_vec(),
                taper: None,
            };
            let k = PhaseBeamformer::new(n, chunk.len(), &s.weights(0, n).unwrap()).unwrap();
            let mut y = vec![vec![Complex32::default(); len]; chunk.len()];
            let mut outs: Vec<&mut [Complex32]> = y.iter_mut().map(|v| &mut v[..]).collect();
            k.process(&inputs, &mut outs, false);
            power.extend(
                y.iter()
                    .map(|b| b.iter().map(|v| v.norm_sqr() as f64).sum::<f64>()),
            );
        }
        let mut peaks: Vec<(f64, f64)> = (1..power.len() - 1)
            .filter(|&i| power[i] > power[i - 1] && power[i] >= power[i + 1])
            .map(|i| (power[i], angles[i]))
            .collect();
        peaks.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut top: Vec<f64> = peaks.iter().take(2).map(|p| p.1).collect();
        top.sort_by(f64::total_cmp);
        for (found, truth) in top.iter().zip([-31.0f64, 24.5]) {
            // Half-power beamwidth of a uniform ULA: 0.886 / (N · d · cos θ) radians.
            let width = (0.886 / (n as f64 * 0.5 * truth.to_radians().cos())).to_degrees();
            assert!(
                (found - truth).abs() <= width / 2.0,
                "peak {found} for {truth} (beamwidth {width:.2})"
            );
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(ArrayGenerator::new(0, 0.5, 1e9, 1e6, vec![], 0.1, 1).is_err());
        assert!(ArrayGenerator::new(4, 0.0, 1e9, 1e6, vec![], 0.1, 1).is_err());
        let far = PlaneWave {
            angle: 95.0,
            offset: 0.0,
            amplitude: 1.0,
            emission: Emission::Tone,
        };
        assert!(ArrayGenerator::new(4, 0.5, 1e9, 1e6, vec![far], 0.1, 1).is_err());
    }
}
