//! The `array_source` block: the antennas of a uniform linear array receiving plane waves
//! (see [`ArrayGenerator`]), one output per antenna.

use num_complex::Complex32;
use sluice_kernels::ArrayGenerator;
use sluice_runtime::{Node, NodeError, Ports, Work, WorkIo};

/// Samples generated per work call at most.
const CHUNK: usize = 4096;

/// Outputs `out0..out(N−1)`: the N antennas' signals, for `items` samples (or endless).
#[derive(Debug)]
pub struct ArraySource {
    generator: ArrayGenerator,
    left: Option<u64>,
}

impl ArraySource {
    /// A source of `items` samples per antenna (`None`: endless).
    pub fn new(generator: ArrayGenerator, items: Option<u64>) -> Self {
        ArraySource {
            generator,
            left: items,
        }
    }
}

impl Node for ArraySource {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        for k in 0..self.generator.elements() {
            let _ = ports.add_output::<Complex32>(&format!("out{k}"));
        }
        ports
    }

    fn length(&self) -> Option<u64> {
        self.left
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let mut m = self.left.map_or(CHUNK, |l| l.min(CHUNK as u64) as usize);
        if m == 0 {
            return Ok(Work::Done);
        }
        for (port, out) in io.outputs.all::<Complex32>()?.enumerate() {
            match out.reserve(1)? {
                None => return Ok(Work::NeedOutput { port, items: 1 }),
                Some(space) => m = m.min(space.len()),
            }
        }
        let mut outs: Vec<&mut [Complex32]> = Vec::with_capacity(self.generator.elements());
        for out in io.outputs.all::<Complex32>()? {
            outs.push(out.reserve(m)?.map(|s| &mut s[..m]).unwrap_or_default());
        }
        self.generator.generate(&mut outs);
        drop(outs);
        for out in io.outputs.all::<Complex32>()? {
            out.commit(m);
        }
        if let Some(left) = &mut self.left {
            *left -= m as u64;
        }
        Ok(Work::Progress)
    }
}
