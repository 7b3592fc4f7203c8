//! Signal source: a tone or Gaussian noise, real or complex.

use super::sample::{Gaussian, Sample};
use sluice_runtime::{
    control, metadata, ControlSpec, Node, NodeError, Ports, TagValue, Work, WorkIo,
};

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

/// Generates a tone or noise forever (bound it with a head or by the sink). Its `frequency`
/// (tones) and `amplitude` can be changed while it runs; a new frequency continues from the
/// phase the tone had reached (no phase jump).
#[derive(Debug)]
pub struct SignalSource<S> {
    waveform: Waveform,
    amplitude: f32,
    /// Phase advance per sample, in radians.
    step: f64,
    phase: f64,
    sample_rate: f64,
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
            sample_rate,
            rng: Gaussian::new(seed),
            rate_tag: Some(sample_rate),
            _sample: std::marker::PhantomData,
        })
    }

    /// Retunes a tone to `frequency` Hz from the next sample on, continuing from the phase the
    /// tone has reached. An error for noise, or for a frequency that is not finite.
    pub fn set_frequency(&mut self, frequency: f64) -> Result<(), NodeError> {
        let Waveform::Tone { .. } = self.waveform else {
            return Err(NodeError::msg("a noise source has no frequency"));
        };
        if !frequency.is_finite() {
            return Err(NodeError::BadValue {
                expected: FREQUENCY.expects.to_string(),
            });
        }
        self.waveform = Waveform::Tone { frequency };
        self.step = std::f64::consts::TAU * frequency / self.sample_rate;
        Ok(())
    }

    /// Changes the amplitude from the next sample on (must be finite).
    pub fn set_amplitude(&mut self, amplitude: f64) -> Result<(), NodeError> {
        if !amplitude.is_finite() {
            return Err(NodeError::BadValue {
                expected: AMPLITUDE.expects.to_string(),
            });
        }
        self.amplitude = amplitude as f32;
        Ok(())
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

/// The run-time parameter `frequency` (tones only).
const FREQUENCY: ControlSpec = ControlSpec {
    name: "frequency",
    expects: "a finite number of Hz",
    help: "tone frequency; the tone goes on from the phase it reached",
};

/// The run-time parameter `amplitude`.
const AMPLITUDE: ControlSpec = ControlSpec {
    name: "amplitude",
    expects: "a finite number",
    help: "peak amplitude (tone) or RMS (noise)",
};

impl<S: Sample> Node for SignalSource<S> {
    fn ports(&self) -> Ports {
        Ports::new().output::<S>("out")
    }

    fn controls(&self) -> Vec<ControlSpec> {
        match self.waveform {
            Waveform::Tone { .. } => vec![FREQUENCY, AMPLITUDE],
            Waveform::Noise { .. } => vec![AMPLITUDE],
        }
    }

    fn set_control(&mut self, name: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        match name {
            "frequency" => self.set_frequency(control::number(value, FREQUENCY.expects)?),
            _ => self.set_amplitude(control::number(value, AMPLITUDE.expects)?),
        }
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

    /// The tone at sample `n` when the frequency changes from `f1` to `f2` at sample `at`:
    /// phase-continuous, as the formula gives it.
    fn retuned(n: u64, at: u64, f1: f64, f2: f64, rate: f64) -> f64 {
        let (before, after) = (n.min(at) as f64, n.saturating_sub(at) as f64);
        std::f64::consts::TAU * (f1 * before + f2 * after) / rate
    }

    fn close(s: Complex32, phase: f64, amplitude: f32) -> bool {
        (s.re - amplitude * phase.cos() as f32).abs() < 1e-4
            && (s.im - amplitude * phase.sin() as f32).abs() < 1e-4
    }

    #[test]
    fn retune_continues_from_the_phase_reached() {
        let mut src =
            SignalSource::<Complex32>::new(Waveform::Tone { frequency: 1000.0 }, 1.0, 48000.0)
                .unwrap();
        let mut a = vec![Complex32::default(); 100];
        let mut b = vec![Complex32::default(); 100];
        src.generate(&mut a);
        for (param, value) in [
            ("frequency", TagValue::F64(-3000.0)),
            ("amplitude", 2.into()),
        ] {
            src.set_control(param, &value, 100).unwrap();
        }
        src.generate(&mut b);
        for (n, s) in a.iter().chain(&b).enumerate() {
            let amplitude = if n < 100 { 1.0 } else { 2.0 };
            let phase = retuned(n as u64, 100, 1000.0, -3000.0, 48000.0);
            assert!(close(*s, phase, amplitude), "sample {n}: {s}");
        }
        assert!(matches!(
            src.set_control("frequency", &TagValue::Str("high".into()), 200),
            Err(NodeError::BadValue { .. })
        ));
    }

    /// Retuning a running source through the graph's control handle: the frequency changes
    /// exactly at the offset `set` returns, where the `set:frequency` tag sits.
    #[test]
    fn retune_while_running_changes_the_tone_at_the_tagged_offset() {
        use crate::blocks::{test_support::wait_for_items, Throttle, VectorSink};
        use sluice_runtime::{Graph, RunOptions, StopHandle};
        let (f1, f2, rate) = (1000.0, 5000.0, 48000.0);
        let mut g = Graph::new();
        let src = g
            .add(
                "src",
                SignalSource::<Complex32>::new(Waveform::Tone { frequency: f1 }, 0.5, rate)
                    .unwrap(),
            )
            .unwrap();
        let pace = g
            .add("pace", Throttle::<Complex32>::new(1e6).unwrap())
            .unwrap();
        let (sink, data) = VectorSink::<Complex32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", pace, "in").unwrap();
        g.connect(pace, "out", sink, "in").unwrap();
        let control = g.control_handle();
        let stop = StopHandle::new();
        let opts = RunOptions {
            stop: Some(stop.clone()),
            ..RunOptions::default()
        };
        let running = std::thread::spawn(move || g.run(&opts));
        // Some samples at the first frequency reach the sink before the change.
        wait_for_items(&data, 1000);
        let at = control.set("src", "frequency", TagValue::F64(f2)).unwrap();
        assert!(at >= 1000);
        let items = wait_for_items(&data, at + 1000);
        stop.stop();
        running.join().unwrap().unwrap();
        for (n, s) in items.iter().enumerate() {
            let phase = retuned(n as u64, at, f1, f2, rate);
            assert!(close(*s, phase, 0.5), "sample {n} (change at {at}): {s}");
        }
        let tags: Vec<_> = data
            .tags()
            .into_iter()
            .filter(|t| &*t.key == "set:frequency")
            .map(|t| (t.index, t.value, t.source))
            .collect();
        assert_eq!(tags, vec![(at, TagValue::F64(f2), Some("src".into()))]);
    }

    #[test]
    fn bad_sample_rate_is_an_error() {
        let err =
            SignalSource::<f32>::new(Waveform::Tone { frequency: 1.0 }, 1.0, 0.0).unwrap_err();
        assert_eq!(err.to_string(), "sample rate must be positive, not 0");
    }
}
