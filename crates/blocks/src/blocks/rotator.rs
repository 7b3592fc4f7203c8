//! Frequency shift (GNU Radio's `rotator_cc`) whose shift can be changed while it runs.

use num_complex::Complex32;
use sluice_kernels::Rotator;
use sluice_runtime::{control, ControlSpec, FixedRate, InputRate, NodeError, Ports, TagValue};

/// The run-time parameter `frequency`.
const FREQUENCY: ControlSpec = ControlSpec {
    name: "frequency",
    expects: "a finite number of Hz",
    help: "the shift; the rotation goes on from the phase it reached",
};

/// `out[n] = in[n] · e^{j2π·f·n/fs}`: shifts a complex stream by `f` Hz (negative shifts
/// down). The shift can be changed while running (`frequency`); the new shift applies from
/// the output item whose offset the change returns, continuing from the phase reached. Add it
/// to a graph as `Rated::new(FrequencyShift::new(f, fs)?)`.
#[derive(Debug)]
pub struct FrequencyShift {
    rotator: Rotator,
    sample_rate: f64,
}

impl FrequencyShift {
    /// A shift by `frequency` Hz of a stream sampled at `sample_rate` Hz.
    pub fn new(frequency: f64, sample_rate: f64) -> Result<Self, NodeError> {
        if !(sample_rate.is_finite() && sample_rate > 0.0) {
            return Err(NodeError::msg(format!(
                "sample rate must be positive, not {sample_rate}"
            )));
        }
        let rotator = Rotator::new(frequency / sample_rate).map_err(|_| NodeError::BadValue {
            expected: FREQUENCY.expects.to_string(),
        })?;
        Ok(FrequencyShift {
            rotator,
            sample_rate,
        })
    }

    /// Changes the shift from the next sample on (phase-continuous).
    pub fn set_frequency(&mut self, frequency: f64) -> Result<(), NodeError> {
        self.rotator
            .set_frequency(frequency / self.sample_rate)
            .map_err(|_| NodeError::BadValue {
                expected: FREQUENCY.expects.to_string(),
            })
    }
}

impl FixedRate<1, 1> for FrequencyShift {
    type In = Complex32;
    type Out = Complex32;

    fn ports(&self) -> Ports {
        Ports::new()
            .input::<Complex32>("in")
            .output::<Complex32>("out")
    }

    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(1)]
    }

    fn output_rates(&self) -> [usize; 1] {
        [1]
    }

    fn fire(
        &mut self,
        _: usize,
        [x]: [&[Complex32]; 1],
        [y]: [&mut [Complex32]; 1],
    ) -> Result<(), NodeError> {
        self.rotator.process(x, y);
        Ok(())
    }

    fn controls(&self) -> Vec<ControlSpec> {
        vec![FREQUENCY]
    }

    fn set_control(&mut self, _: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        self.set_frequency(control::number(value, FREQUENCY.expects)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{test_support::wait_for_items, Throttle, VectorSink, VectorSource};
    use num_complex::Complex64;
    use sluice_runtime::{Graph, Rated, RunOptions, StopHandle};
    use std::f64::consts::TAU;

    /// Retuning a running shifter through the graph's control handle: the shift changes at the
    /// offset `set` returns, phase-continuously, as the f64 formula says.
    #[test]
    fn retune_while_running_changes_the_shift_at_the_tagged_offset() {
        let (f1, f2, rate) = (1000.0, -7000.0, 48000.0);
        let ones = vec![Complex32::new(1.0, 0.0); 1000];
        let mut g = Graph::new();
        let src = g
            .add("src", VectorSource::new(ones).repeat(1_000_000))
            .unwrap();
        let pace = g
            .add("pace", Throttle::<Complex32>::new(1e6).unwrap())
            .unwrap();
        let shift = g
            .add("shift", Rated::new(FrequencyShift::new(f1, rate).unwrap()))
            .unwrap();
        let (sink, data) = VectorSink::<Complex32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", pace, "in").unwrap();
        g.connect(pace, "out", shift, "in").unwrap();
        g.connect(shift, "out", sink, "in").unwrap();
        let control = g.control_handle();
        let stop = StopHandle::new();
        let opts = RunOptions {
            stop: Some(stop.clone()),
            ..RunOptions::default()
        };
        let running = std::thread::spawn(move || g.run(&opts));
        wait_for_items(&data, 1000);
        let at = control
            .set("shift", "frequency", TagValue::F64(f2))
            .unwrap();
        let bad = control.set("shift", "frequency", TagValue::Str("up".into()));
        assert!(bad.unwrap_err().to_string().contains("finite number of Hz"));
        let items = wait_for_items(&data, at + 1000);
        stop.stop();
        running.join().unwrap().unwrap();
        for (n, s) in items.iter().enumerate() {
            let n = n as u64;
            let (before, after) = (n.min(at) as f64, n.saturating_sub(at) as f64);
            let cycles = (f1 * before / rate).fract() + (f2 * after / rate).fract();
            let want = Complex64::from_polar(1.0, TAU * cycles);
            let err = (Complex64::new(s.re.into(), s.im.into()) - want).norm();
            assert!(err < 1e-5, "sample {n} (change at {at}): {s} vs {want}");
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(FrequencyShift::new(1.0, 0.0).is_err());
        assert!(FrequencyShift::new(f64::NAN, 1.0).is_err());
    }
}
