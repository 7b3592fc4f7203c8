//! Signal source: a tone or Gaussian noise, real or complex.

use super::sample::{Gaussian, Sample};
use sluice_runtime::{metadata, Node, NodeError, Ports, Work, WorkIo};

/// What a [`SignalSource`] generates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Waveform {
    /// A tone at `frequency` Hz (negative frequencies are meaningful for complex output).
    Tone {
        /// Frequency in Hz.
        frequency: f64,
    },
    /// White Gaussian noise from `seed`.
    Noise {
        /// Seed of the generator: the same seed gives the same stream.
        seed: u64,
    },
}

/// Generates a tone or noise forever (bound it with a head or by the sink).
#[derive(Debug)]
pub struct SignalSource<S> {
    waveform: Waveform,
    amplitude: f32,
    /// Phase advance per sample, in radians.
    step: f64,
    phase: f64,
    rng: Gaussian,
    /// The sample rate, tagged on the first item (stream metadata) and then cleared.
    rate_tag: Option<f64>,
    _sample: std::marker::PhantomData<S>,
}

impl<S: Sample> SignalSource<S> {
    /// A source of `waveform` at `amplitude` for `sample_rate` samples per second.
    pub fn new(waveform: Waveform, amplitude: f32, sample_rate: f64) -> Result<Self, NodeError> {
        if !(sample_rate.is_finite() && sample_rate > 0.0) {
            return Err(NodeError::msg(format!(
                "sample rate must be positive, not {sample_rate}"
            )));
        }
        let (step, seed) = match waveform {
            Waveform::Tone { frequency } => (std::f64::consts::TAU * frequency / sample_rate, 0),
            Waveform::Noise { seed } => (0.0, seed),
        };
        Ok(SignalSource {
            waveform,
            amplitude,
            step,
            phase: 0.0,
            rng: Gaussian::new(seed),
            rate_tag: Some(sample_rate),
            _sample: std::marker::PhantomData,
        })
    }

    /// Fills `out` with the next samples.
    pub fn generate(&mut self, out: &mut [S]) {
        match self.waveform {
            Waveform::Tone { .. } => {
                for (i, s) in out.iter_mut().enumerate() {
                    *s = S::tone(self.phase + self.step * i as f64, self.amplitude);
                }
                // Keep the phase small so precision does not decay over long runs.
                self.phase = (self.phase + self.step * out.len() as f64) % std::f64::consts::TAU;
            }
            Waveform::Noise { .. } => {
                for s in out.iter_mut() {
                    let (a, b) = self.rng.pair();
                    *s = S::noise(a, b, self.amplitude);
                }
            }
        }
    }
}

/// Samples generated per work call at most, so a fast source does not fill whole rings at once.
const CHUNK: usize = 8192;

impl<S: Sample> Node for SignalSource<S> {
    fn ports(&self) -> Ports {
        Ports::new().output::<S>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let out = io.outputs.get::<S>(0)?;
        if let Some(rate) = self.rate_tag.take() {
            out.add_tag(
                out.items_written(),
                metadata::SAMPLE_RATE,
                metadata::sample_rate(rate),
            );
        }
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min(CHUNK);
        self.generate(&mut space[..n]);
        out.commit(n);
        Ok(Work::Progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex32;

    #[test]
    fn tone_matches_the_formula_across_chunks() {
        let mut src =
            SignalSource::<Complex32>::new(Waveform::Tone { frequency: 1000.0 }, 0.5, 48000.0)
                .unwrap();
        let mut a = vec![Complex32::default(); 7];
        let mut b = vec![Complex32::default(); 100];
        src.generate(&mut a);
        src.generate(&mut b);
        for (n, s) in a.iter().chain(&b).enumerate() {
            let phase = std::f64::consts::TAU * 1000.0 * n as f64 / 48000.0;
            assert!((s.re - 0.5 * phase.cos() as f32).abs() < 1e-5);
            assert!((s.im - 0.5 * phase.sin() as f32).abs() < 1e-5);
        }
    }

    #[test]
    fn noise_is_reproducible_per_seed() {
        let make = |seed| {
            let mut s = SignalSource::<f32>::new(Waveform::Noise { seed }, 1.0, 1.0).unwrap();
            let mut v = vec![0.0; 64];
            s.generate(&mut v);
            v
        };
        assert_eq!(make(5), make(5));
        assert_ne!(make(5), make(6));
    }

    #[test]
    fn bad_sample_rate_is_an_error() {
        let err =
            SignalSource::<f32>::new(Waveform::Tone { frequency: 1.0 }, 1.0, 0.0).unwrap_err();
        assert_eq!(err.to_string(), "sample rate must be positive, not 0");
    }
}
