//! The `beamformer` block: delay-and-sum beams of a uniform linear array, phase-steered
//! (narrowband) or true-time-delayed (wideband), over all or part of the array.
//!
//! Inputs `in0..in(n−1)` are elements `first..first + n` of an array of `elements`; outputs
//! `beam0..beam(B−1)` are the beams steered to the `B` angles. In partial-sum mode
//! (`first > 0` or `n < elements`) each output is this instance's share of the full beam: the
//! outputs of instances covering the whole array, added beam by beam (`sum` blocks), equal the
//! full beam. The node holds a window of every input at once and writes every beam straight
//! into its output's reservation. Angles and taper can be changed while running.

use num_complex::Complex32;
use sluice_kernels::{DelayBeamformer, DspError, PhaseBeamformer, Steering, Window};
use sluice_kernels::{MAX_ANTENNAS, MAX_BEAMS};
use sluice_runtime::{ControlSpec, Node, NodeError, OutPort, Ports, TagValue, Work, WorkIo};

/// Items formed per work call at most.
const CHUNK: usize = 4096;

/// The run-time parameter `angles`.
const ANGLES: ControlSpec = ControlSpec {
    name: "angles",
    expects: "one angle per beam in degrees (a number, or a comma-separated list)",
    help: "steering angles, degrees from broadside",
};

/// The run-time parameter `taper`.
const TAPER: ControlSpec = ControlSpec {
    name: "taper",
    expects: "rect, hamming, blackman or kaiser:<beta>",
    help: "amplitude taper over the full array",
};

/// How the beams are steered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SteeringMode {
    /// Narrowband: one complex weight per element and beam.
    Phase,
    /// Wideband: a true time delay (integer + 16-tap fractional) per element and beam, then the
    /// weight; `samples_per_cycle` is the sample rate over the carrier frequency.
    Delay {
        /// Sample rate / carrier.
        samples_per_cycle: f64,
    },
}

#[derive(Debug)]
enum Kernel {
    Phase(PhaseBeamformer),
    Delay(DelayBeamformer),
}

/// The `beamformer` block (see the module docs).
#[derive(Debug)]
pub struct Beamformer {
    ports: Ports,
    steering: Steering,
    first: usize,
    antennas: usize,
    mode: SteeringMode,
    kernel: Kernel,
}

/// A taper by name: `rect`, `hamming`, `blackman` or `kaiser:<beta>`.
pub fn parse_taper(text: &str) -> Result<Option<Window>, NodeError> {
    let bad = || NodeError::BadValue {
        expected: TAPER.expects.to_string(),
    };
    match text.trim() {
        "rect" | "uniform" => Ok(None),
        "hamming" => Ok(Some(Window::Hamming)),
        "blackman" => Ok(Some(Window::Blackman)),
        t => match t.strip_prefix("kaiser:").map(|b| b.trim().parse::<f64>()) {
            Some(Ok(beta)) if beta >= 0.0 && beta.is_finite() => Ok(Some(Window::Kaiser { beta })),
            _ => Err(bad()),
        },
    }
}

fn dsp(e: DspError) -> NodeError {
    NodeError::from_error(e)
}

impl Beamformer {
    /// Beams `steering.angles` from elements `first..first + antennas` of the array.
    pub fn new(
        steering: Steering,
        first: usize,
        antennas: usize,
        mode: SteeringMode,
    ) -> Result<Self, NodeError> {
        let beams = steering.angles.len();
        if antennas > MAX_ANTENNAS || beams > MAX_BEAMS {
            return Err(NodeError::msg(format!(
                "{antennas} antennas x {beams} beams: one node takes at most {MAX_ANTENNAS} x \
                 {MAX_BEAMS} (split the array into partial sums)"
            )));
        }
        let w = steering.weights(first, antennas).map_err(dsp)?;
        let kernel = match mode {
            SteeringMode::Phase => {
                Kernel::Phase(PhaseBeamformer::new(antennas, beams, &w).map_err(dsp)?)
            }
            SteeringMode::Delay { samples_per_cycle } => {
                let d = steering
                    .delays(first, antennas, samples_per_cycle)
                    .map_err(dsp)?;
                let max = steering.max_delay(samples_per_cycle);
                Kernel::Delay(DelayBeamformer::new(antennas, beams, max, &w, &d).map_err(dsp)?)
            }
        };
        let mut ports = Ports::new();
        for k in 0..antennas {
            ports.add_input::<Complex32>(&format!("in{k}"));
        }
        for b in 0..beams {
            let _: OutPort<Complex32> = ports.add_output(&format!("beam{b}"));
        }
        Ok(Beamformer {
            ports,
            steering,
            first,
            antennas,
            mode,
            kernel,
        })
    }

    /// Re-steers to `steering` (same array, same number of beams); allocates only for the
    /// new weights, never in `work`.
    pub fn resteer(&mut self, steering: Steering) -> Result<(), NodeError> {
        if steering.angles.len() != self.steering.angles.len()
            || steering.elements != self.steering.elements
        {
            return Err(NodeError::msg(format!(
                "re-steering must keep {} beams on {} elements",
                self.steering.angles.len(),
                self.steering.elements
            )));
        }
        let w = steering.weights(self.first, self.antennas).map_err(dsp)?;
        match (&mut self.kernel, self.mode) {
            (Kernel::Phase(k), _) => k.set_weights(&w).map_err(dsp)?,
            (Kernel::Delay(k), SteeringMode::Delay { samples_per_cycle }) => {
                let d = steering
                    .delays(self.first, self.antennas, samples_per_cycle)
                    .map_err(dsp)?;
                k.set(&w, &d).map_err(dsp)?
            }
            (Kernel::Delay(_), SteeringMode::Phase) => unreachable!("kernel follows the mode"),
        }
        self.steering = steering;
        Ok(())
    }

    /// Samples every output lags the inputs (0 for phase steering).
    pub fn latency(&self) -> usize {
        match &self.kernel {
            Kernel::Phase(_) => 0,
            Kernel::Delay(k) => k.latency(),
        }
    }

    fn history(&self) -> usize {
        match &self.kernel {
            Kernel::Phase(_) => 0,
            Kernel::Delay(k) => k.history(),
        }
    }
}

/// Angles from a control value: one number, or a comma-separated list.
fn angles(value: &TagValue) -> Result<Vec<f64>, NodeError> {
    let bad = || NodeError::BadValue {
        expected: ANGLES.expects.to_string(),
    };
    match value {
        TagValue::F64(x) => Ok(vec![*x]),
        TagValue::I64(x) => Ok(vec![*x as f64]),
        TagValue::Str(s) => s
            .split(',')
            .map(|a| a.trim().parse::<f64>().map_err(|_| bad()))
            .collect(),
        _ => Err(bad()),
    }
}

impl Node for Beamformer {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn controls(&self) -> Vec<ControlSpec> {
        vec![ANGLES, TAPER]
    }

    fn set_control(&mut self, name: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        let mut steering = self.steering.clone();
        match name {
            "taper" => match value {
                TagValue::Str(s) => steering.taper = parse_taper(s)?,
                _ => return Err(parse_taper("").unwrap_err()),
            },
            _ => steering.angles = angles(value)?,
        }
        self.resteer(steering)
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let history = self.history();
        let mut m = CHUNK;
        for (port, input) in io.inputs.all::<Complex32>()?.enumerate() {
            match input.window(history + 1)? {
                None => {
                    return Ok(Work::NeedInput {
                        port,
                        items: history + 1,
                    })
                }
                Some(x) if x.len() <= history => return Ok(Work::Done),
                Some(x) => m = m.min(x.len() - history),
            }
        }
        for (port, out) in io.outputs.all::<Complex32>()?.enumerate() {
            match out.reserve(1)? {
                None => return Ok(Work::NeedOutput { port, items: 1 }),
                Some(space) => m = m.min(space.len()),
            }
        }
        let mut held: [&[Complex32]; MAX_ANTENNAS] = [&[]; MAX_ANTENNAS];
        for (h, input) in held.iter_mut().zip(io.inputs.all::<Complex32>()?) {
            // Every input held m + history items a moment ago, and still does.
            *h = input.window(m + history)?.unwrap_or_default();
        }
        let mut outs: [&mut [Complex32]; MAX_BEAMS] = Default::default();
        for (o, out) in outs.iter_mut().zip(io.outputs.all::<Complex32>()?) {
            *o = out.reserve(m)?.map(|s| &mut s[..m]).unwrap_or_default();
        }
        let (held, outs) = (
            &held[..self.antennas],
            &mut outs[..self.steering.angles.len()],
        );
        match &self.kernel {
            Kernel::Phase(k) => k.process(held, outs, false),
            Kernel::Delay(k) => k.process(held, outs, false),
        }
        for input in io.inputs.all::<Complex32>()? {
            input.consume(m);
        }
        for out in io.outputs.all::<Complex32>()? {
            out.commit(m);
        }
        Ok(Work::Progress)
    }
}

#[cfg(test)]
mod tests;
