//! The `beam_pattern` sink: the power of beams steered over a range of angles, accumulated
//! over the whole stream of every antenna, drawn as a PNG (power against steering angle) when
//! the stream ends.

use num_complex::Complex32;
use sluice_kernels::{PhaseBeamformer, Steering, MAX_ANTENNAS, MAX_BEAMS};
use sluice_plot::beam_pattern_png;
use sluice_runtime::{Node, NodeError, Ports, Work, WorkIo};
use std::path::PathBuf;

/// Items per work call at most.
const CHUNK: usize = 2048;

/// Scans `angles` with beams over all N inputs and plots the power (see the module docs).
#[derive(Debug)]
pub struct BeamPattern {
    antennas: usize,
    angles: Vec<f64>,
    kernels: Vec<PhaseBeamformer>,
    power: Vec<f64>,
    scratch: Vec<Vec<Complex32>>,
    path: PathBuf,
    marks: Vec<f64>,
    done: bool,
}

impl BeamPattern {
    /// Beams of `steering` (its `angles` are the scan, every element an input), the picture
    /// at `path` with vertical marks at `marks`.
    pub fn new(steering: Steering, path: PathBuf, marks: Vec<f64>) -> Result<Self, NodeError> {
        let n = steering.elements;
        let all = steering.angles.clone();
        let mut kernels = Vec::new();
        for chunk in all.chunks(MAX_BEAMS) {
            let s = Steering {
                angles: chunk.to_vec(),
                ..steering.clone()
            };
            let w = s.weights(0, n).map_err(NodeError::from_error)?;
            let k = PhaseBeamformer::new(n, chunk.len(), &w);
            kernels.push(k.map_err(NodeError::from_error)?);
        }
        Ok(BeamPattern {
            antennas: n,
            power: vec![0.0; all.len()],
            angles: all,
            kernels,
            scratch: vec![vec![Complex32::default(); CHUNK]; MAX_BEAMS],
            path,
            marks,
            done: false,
        })
    }

    /// The accumulated power per angle (linear, summed over the items seen).
    pub fn power(&self) -> &[f64] {
        &self.power
    }

    fn finish(&mut self) -> Result<Work, NodeError> {
        let db: Vec<f64> = self
            .power
            .iter()
            .map(|p| 10.0 * p.max(1e-30).log10())
            .collect();
        let title = format!("beam pattern, {} elements", self.antennas);
        beam_pattern_png(&self.path, &title, &self.angles, &db, &self.marks)
            .map_err(NodeError::from_error)?;
        self.done = true;
        Ok(Work::Done)
    }
}

impl Node for BeamPattern {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        for k in 0..self.antennas {
            let _ = ports.add_input::<Complex32>(&format!("in{k}"));
        }
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let mut m = CHUNK;
        for (port, input) in io.inputs.all::<Complex32>()?.enumerate() {
            match input.window(1)? {
                None => return Ok(Work::NeedInput { port, items: 1 }),
                Some([]) => return self.finish(),
                Some(x) => m = m.min(x.len()),
            }
        }
        let mut held: [&[Complex32]; MAX_ANTENNAS] = [&[]; MAX_ANTENNAS];
        for (h, input) in held.iter_mut().zip(io.inputs.all::<Complex32>()?) {
            *h = input.window(m)?.unwrap_or_default();
        }
        let held = &held[..self.antennas];
        let mut base = 0;
        for k in &self.kernels {
            let mut outs: [&mut [Complex32]; MAX_BEAMS] = Default::default();
            for (o, v) in outs.iter_mut().zip(&mut self.scratch) {
                *o = &mut v[..m];
            }
            let outs = &mut outs[..k.beams()];
            k.process(held, outs, false);
            for (p, y) in self.power[base..].iter_mut().zip(outs.iter()) {
                *p += y.iter().map(|v| f64::from(v.norm_sqr())).sum::<f64>();
            }
            base += k.beams();
        }
        for input in io.inputs.all::<Complex32>()? {
            input.consume(m);
        }
        Ok(Work::Progress)
    }
}
