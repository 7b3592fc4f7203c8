//! Plumbing blocks generic over the item type: null source and sink, head, copy. They use the
//! typed port handles ([`InPort`], [`OutPort`]): the handle's type is the declared one, so no
//! port lookup in `work` can fail.

use sluice_runtime::{InPort, Input, Item, Node, NodeError, OutPort, Output, Ports, Work, WorkIo};

/// Produces zero-valued items forever (bound it with a [`Head`] downstream).
#[derive(Debug)]
pub struct NullSource<T> {
    ports: Ports,
    out: OutPort<T>,
}

impl<T: Item> NullSource<T> {
    /// A null source.
    pub fn new() -> Self {
        let mut ports = Ports::new();
        let out = ports.add_output("out");
        NullSource { ports, out }
    }
}

impl<T: Item> Default for NullSource<T> {
    fn default() -> Self {
        NullSource::new()
    }
}

impl<T: Item> Node for NullSource<T> {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let out = io.outputs.port(self.out);
        let Some(space) = out.reserve(1)? else {
            return Ok(self.out.need(1));
        };
        // The ring's memory is reused: clear what we hand on, so the stream is truly zeros.
        space.fill(T::zeroed());
        let n = space.len();
        out.commit(n);
        Ok(Work::Progress)
    }
}

/// Consumes and discards every item.
#[derive(Debug)]
pub struct NullSink<T> {
    ports: Ports,
    input: InPort<T>,
}

impl<T: Item> NullSink<T> {
    /// A null sink.
    pub fn new() -> Self {
        let mut ports = Ports::new();
        let input = ports.add_input("in");
        NullSink { ports, input }
    }
}

impl<T: Item> Default for NullSink<T> {
    fn default() -> Self {
        NullSink::new()
    }
}

impl<T: Item> Node for NullSink<T> {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.port(self.input);
        let Some(window) = input.window(1)? else {
            return Ok(self.input.need(1));
        };
        if window.is_empty() {
            return Ok(Work::Done);
        }
        let n = window.len();
        input.consume(n);
        Ok(Work::Progress)
    }
}

/// One input `in` and one output `out` of the same type: the ports of the 1:1 plumbing blocks.
#[derive(Debug, Clone)]
struct InOut<T> {
    ports: Ports,
    input: InPort<T>,
    output: OutPort<T>,
}

impl<T: Item> InOut<T> {
    fn new() -> Self {
        let mut ports = Ports::new();
        let input = ports.add_input("in");
        let output = ports.add_output("out");
        InOut {
            ports,
            input,
            output,
        }
    }

    /// [`pass_through`] on these ports.
    fn pass(&self, io: &mut WorkIo<'_>, limit: u64) -> Result<(Work, usize), NodeError> {
        let input = io.inputs.port(self.input);
        let output = io.outputs.port(self.output);
        move_items(
            input,
            output,
            (self.input.need(1), self.output.need(1)),
            limit,
        )
    }
}

/// Moves up to `limit` items from input 0 to output 0 with one copy into the output's queue.
/// Returns the outcome and the number of items moved.
pub(crate) fn pass_through<T: Item>(
    io: &mut WorkIo<'_>,
    limit: u64,
) -> Result<(Work, usize), NodeError> {
    let input = io.inputs.get::<T>(0)?;
    let output = io.outputs.get::<T>(0)?;
    let needs = (
        Work::NeedInput { port: 0, items: 1 },
        Work::NeedOutput { port: 0, items: 1 },
    );
    move_items(input, output, needs, limit)
}

/// The copy of [`pass_through`]; `needs` are what to answer when input or output is short.
fn move_items<T: Item>(
    input: &mut Input<T>,
    output: &mut Output<T>,
    (need_input, need_output): (Work, Work),
    limit: u64,
) -> Result<(Work, usize), NodeError> {
    let Some(x) = input.window(1)? else {
        return Ok((need_input, 0));
    };
    if x.is_empty() {
        return Ok((Work::Done, 0));
    }
    let Some(y) = output.reserve(1)? else {
        return Ok((need_output, 0));
    };
    let n = x
        .len()
        .min(y.len())
        .min(usize::try_from(limit).unwrap_or(usize::MAX));
    y[..n].copy_from_slice(&x[..n]);
    input.consume(n);
    output.commit(n);
    Ok((Work::Progress, n))
}

/// Passes the first `limit` items through, then ends the stream.
#[derive(Debug)]
pub struct Head<T> {
    ports: InOut<T>,
    limit: u64,
    left: u64,
}

impl<T: Item> Head<T> {
    /// Passes `limit` items.
    pub fn new(limit: u64) -> Self {
        Head {
            ports: InOut::new(),
            limit,
            left: limit,
        }
    }
}

impl<T: Item> Node for Head<T> {
    fn ports(&self) -> Ports {
        self.ports.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.left == 0 {
            return Ok(Work::Done);
        }
        let (work, n) = self.ports.pass(io, self.left)?;
        self.left -= n as u64;
        Ok(if self.left == 0 { Work::Done } else { work })
    }

    fn length(&self) -> Option<u64> {
        Some(self.limit)
    }
}

/// Copies its input to its output (one memcpy per window): the unit of the chain benchmark.
#[derive(Debug)]
pub struct Copy<T> {
    ports: InOut<T>,
}

impl<T: Item> Copy<T> {
    /// A copy block.
    pub fn new() -> Self {
        Copy {
            ports: InOut::new(),
        }
    }
}

impl<T: Item> Default for Copy<T> {
    fn default() -> Self {
        Copy::new()
    }
}

impl<T: Item> Node for Copy<T> {
    fn ports(&self) -> Ports {
        self.ports.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        Ok(self.ports.pass(io, u64::MAX)?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::vector::{VectorSink, VectorSource};
    use sluice_runtime::{Graph, RunOptions};

    #[test]
    fn head_passes_exactly_its_limit_through_copies() {
        let mut g = Graph::new();
        let src = g.add("src", NullSource::<f32>::new()).unwrap();
        let head = g.add("head", Head::<f32>::new(1_000_003)).unwrap();
        let copy = g.add("copy", Copy::<f32>::new()).unwrap();
        let (sink, data) = VectorSink::<f32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", head, "in").unwrap();
        g.connect(head, "out", copy, "in").unwrap();
        g.connect(copy, "out", sink, "in").unwrap();
        let report = g.run(&RunOptions::default()).unwrap();
        assert_eq!(data.items().len(), 1_000_003);
        assert!(data.items().iter().all(|&x| x == 0.0));
        assert_eq!(report.node("copy").unwrap().items_out, 1_000_003);
    }

    #[test]
    fn null_sink_drains_a_vector_source() {
        let mut g = Graph::new();
        let src = g.add("src", VectorSource::new(vec![1u8; 10_000])).unwrap();
        let sink = g.add("sink", NullSink::<u8>::new()).unwrap();
        g.connect(src, "out", sink, "in").unwrap();
        let report = g.run_stepped().unwrap();
        assert_eq!(report.node("sink").unwrap().items_in, 10_000);
    }
}
