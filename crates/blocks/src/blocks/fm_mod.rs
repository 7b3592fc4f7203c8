//! `fm_mod`: the FM modulator, or voltage-controlled oscillator — each input sample sets the
//! instantaneous frequency, `deviation · x` Hz, and the phase integrates it. GNU Radio's
//! `frequency_modulator_fc` and `vco_c`/`vco_f` in one block.

use super::sample::{for_sample, Sample};
use crate::graph_blocks::param_sample;
use sluice_graph::{BlockType, Family, ItemDecl, Memory, Param, ParamError};
use sluice_runtime::{ControlSpec, FixedRate, InputRate, NodeError, Ports, Rated, TagValue};
use std::f64::consts::{PI, TAU};

const DEVIATION: ControlSpec = ControlSpec {
    name: "deviation",
    expects: "a finite number of Hz",
    help: "Hz of frequency per unit of input",
};

/// `out[n] = amplitude · e^{jφ[n]}` (or `cos φ[n]` for real output), `φ[n] = φ[n−1] + 2π ·
/// deviation · x[n] / sample_rate`. The phase is kept in f64 and wrapped, so a long run keeps
/// the precision of its first second.
#[derive(Debug)]
pub struct FmModulator<S> {
    /// Radians per sample per unit of input.
    step: f64,
    sample_rate: f64,
    amplitude: f32,
    phase: f64,
    _out: std::marker::PhantomData<S>,
}

impl<S: Sample> FmModulator<S> {
    /// A modulator of `deviation` Hz per unit of input at `sample_rate`.
    pub fn new(deviation: f64, sample_rate: f64, amplitude: f32) -> Result<Self, NodeError> {
        if !(sample_rate > 0.0 && sample_rate.is_finite() && deviation.is_finite()) {
            return Err(NodeError::msg(format!(
                "needs a positive sample rate and a finite deviation (got {sample_rate} Hz and {deviation} Hz)"
            )));
        }
        Ok(FmModulator {
            step: TAU * deviation / sample_rate,
            sample_rate,
            amplitude,
            phase: 0.0,
            _out: std::marker::PhantomData,
        })
    }
}

impl<S: Sample> FixedRate<1, 1> for FmModulator<S> {
    type In = f32;
    type Out = S;

    fn ports(&self) -> Ports {
        Ports::new().input::<f32>("in").output::<S>("out")
    }

    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(1)]
    }

    fn output_rates(&self) -> [usize; 1] {
        [1]
    }

    fn fire(&mut self, _: usize, [x]: [&[f32]; 1], [out]: [&mut [S]; 1]) -> Result<(), NodeError> {
        let mut phase = self.phase;
        for (y, &v) in out.iter_mut().zip(x) {
            phase += self.step * f64::from(v);
            *y = S::tone(phase, self.amplitude);
        }
        // Once per window: the phase stays in [−π, π) whatever the run's length.
        self.phase = (phase + PI).rem_euclid(TAU) - PI;
        Ok(())
    }

    fn controls(&self) -> Vec<ControlSpec> {
        vec![DEVIATION]
    }

    fn set_control(&mut self, name: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        debug_assert_eq!(name, DEVIATION.name);
        let hz = sluice_runtime::control::number(value, DEVIATION.expects)?;
        if !hz.is_finite() {
            return Err(NodeError::msg(format!(
                "deviation must be finite, not {hz}"
            )));
        }
        self.step = TAU * hz / self.sample_rate;
        Ok(())
    }
}

/// The `fm_mod` block.
pub fn fm_mod() -> BlockType {
    BlockType::new("fm_mod", Family::Radio, "FM modulator / VCO: each input sample x sets the frequency to deviation · x Hz; complex (or, with item = \"f32\", real cosine) output.")
        .gnuradio(&["frequency_modulator", "vco"])
        .input("in", ItemDecl::fixed("f32"))
        .output("out", ItemDecl::item())
        .param(param_sample())
        .param(Param::number("deviation", DEVIATION.help).unit("Hz").settable())
        .param(Param::number("amplitude", "output amplitude").default(1.0))
        .param(Param::number("sample_rate", "the stream's rate").follows_stream())
        .example(r#"deviation = 5000.0, sample_rate = 48000.0"#)
        .memory(|_| Ok(Memory::Infinite))
        .build(|p| {
            let (deviation, rate) = (p.f64("deviation")?, p.f64("sample_rate")?);
            let amplitude = p.f32("amplitude")?;
            let bad = |e: NodeError| ParamError::new("sample_rate", e.to_string());
            for_sample!(p, S => Rated::new(
                FmModulator::<S>::new(deviation, rate, amplitude).map_err(bad)?,
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{VectorSink, VectorSource};
    use num_complex::Complex32;
    use sluice_kernels::FmDemod;
    use sluice_runtime::Graph;

    fn modulate(x: &[f32], deviation: f64, rate: f64) -> Vec<Complex32> {
        let mut g = Graph::new();
        let src = g.add("src", VectorSource::new(x.to_vec())).unwrap();
        let m = g
            .add(
                "fm",
                Rated::new(FmModulator::<Complex32>::new(deviation, rate, 1.0).unwrap()),
            )
            .unwrap();
        let (sink, data) = VectorSink::<Complex32>::new();
        let s = g.add("snk", sink).unwrap();
        g.connect(src, "out", m, "in").unwrap();
        g.connect(m, "out", s, "in").unwrap();
        g.run_stepped().unwrap();
        data.items()
    }

    #[test]
    fn the_phase_is_the_integral_of_the_frequency() {
        let x: Vec<f32> = (0..100_000).map(|n| ((n as f32) * 0.001).sin()).collect();
        let y = modulate(&x, 5000.0, 48_000.0);
        // The reference, in f64 without wrapping.
        let mut phase = 0.0f64;
        for (n, (&v, got)) in x.iter().zip(&y).enumerate() {
            phase += TAU * 5000.0 * f64::from(v) / 48_000.0;
            let want = Complex32::new(phase.cos() as f32, phase.sin() as f32);
            assert!((want - got).norm() < 1e-4, "sample {n}: {got} != {want}");
        }
    }

    #[test]
    fn fm_demod_gives_back_what_fm_mod_sent() {
        let (deviation, rate) = (5000.0, 48_000.0);
        let x: Vec<f32> = (0..4800)
            .map(|n| (TAU * 1000.0 * n as f64 / rate).sin() as f32 * 0.8)
            .collect();
        let y = modulate(&x, deviation, rate);
        let mut demod = FmDemod::new((rate / (TAU * deviation)) as f32, 1).unwrap();
        let mut back = vec![0.0f32; y.len()];
        demod.process(&y, &mut back);
        for (n, (a, b)) in x.iter().zip(&back).enumerate().skip(1) {
            assert!((a - b).abs() < 1e-3, "sample {n}: {b} != {a}");
        }
    }
}
