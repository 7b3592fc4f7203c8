//! The `array_source` block: the antennas of a uniform linear array receiving plane waves
//! (see [`ArrayGenerator`]), one output per antenna.

use num_complex::Complex32;
use sluice_kernels::ArrayGenerator;
use sluice_runtime::{metadata, Node, NodeError, Ports, Work, WorkIo};

/// Samples generated per work call at most.
const CHUNK: usize = 4096;
/// Elements whose outputs `work` holds on the stack; beyond, it allocates a vector per call.
const HELD: usize = 64;

/// Outputs `out0..out(N−1)`: the N antennas' signals, for `items` samples (or endless).
#[derive(Debug)]
pub struct ArraySource {
    generator: ArrayGenerator,
    left: Option<u64>,
    /// The sample rate, tagged (`rx_rate`) on every output's first item.
    rate_tag: Option<f64>,
}

impl ArraySource {
    /// A source of `items` samples per antenna (`None`: endless).
    pub fn new(generator: ArrayGenerator, items: Option<u64>) -> Self {
        ArraySource {
            generator,
            left: items,
            rate_tag: None,
        }
    }

    /// Tags each antenna's first sample with the stream's rate, `hz` (as every source does).
    pub fn with_rate_tag(mut self, hz: f64) -> Self {
        self.rate_tag = Some(hz);
        self
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
        if let Some(hz) = self.rate_tag.take() {
            for out in io.outputs.all::<Complex32>()? {
                let at = out.items_written();
                out.add_tag(at, metadata::SAMPLE_RATE, metadata::sample_rate(hz));
            }
        }
        for (port, out) in io.outputs.all::<Complex32>()?.enumerate() {
            match out.reserve(1)? {
                None => return Ok(Work::NeedOutput { port, items: 1 }),
                Some(space) => m = m.min(space.len()),
            }
        }
        // The outputs' slices, on the stack for arrays of up to HELD elements (no allocation in
        // `work`); larger arrays gather them in a vector.
        let elements = self.generator.elements();
        let mut held: [&mut [Complex32]; HELD] = std::array::from_fn(|_| Default::default());
        let mut more: Vec<&mut [Complex32]> = Vec::new();
        if elements > HELD {
            more.reserve_exact(elements);
        }
        for (k, out) in io.outputs.all::<Complex32>()?.enumerate() {
            let y = out.reserve(m)?.map(|s| &mut s[..m]).unwrap_or_default();
            match held.get_mut(k) {
                Some(slot) if elements <= HELD => *slot = y,
                _ => more.push(y),
            }
        }
        if elements <= HELD {
            self.generator.generate(&mut held[..elements]);
        } else {
            self.generator.generate(&mut more);
        }
        drop((held, more));
        for out in io.outputs.all::<Complex32>()? {
            out.commit(m);
        }
        if let Some(left) = &mut self.left {
            *left -= m as u64;
        }
        Ok(Work::Progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::VectorSink;
    use sluice_runtime::{Graph, TagValue};

    #[test]
    fn every_antenna_carries_the_stream_rate() {
        let gen = ArrayGenerator::new(2, 0.5, 1e9, 250_000.0, vec![], 0.1, 1).unwrap();
        let mut g = Graph::new();
        let src = g
            .add(
                "ula",
                ArraySource::new(gen, Some(10)).with_rate_tag(250_000.0),
            )
            .unwrap();
        let mut data = Vec::new();
        for k in 0..2 {
            let (sink, d) = VectorSink::<Complex32>::new();
            let s = g.add(&format!("s{k}"), sink).unwrap();
            g.connect(src, &format!("out{k}"), s, "in").unwrap();
            data.push(d);
        }
        g.run_stepped().unwrap();
        for d in data {
            let tags = d.tags();
            assert_eq!(tags.len(), 1);
            assert_eq!(
                (tags[0].index, &*tags[0].key, &tags[0].value),
                (0, metadata::SAMPLE_RATE, &TagValue::F64(250_000.0))
            );
            assert_eq!(d.items().len(), 10);
        }
    }
}
