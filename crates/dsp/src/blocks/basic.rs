//! Plumbing blocks generic over the item type: null source and sink, head, copy.

use sluice_runtime::{Item, Node, NodeError, Ports, Work, WorkIo};
use std::marker::PhantomData;

/// Produces zero-valued items forever (bound it with a [`Head`] downstream).
#[derive(Debug, Default)]
pub struct NullSource<T>(PhantomData<T>);

impl<T> NullSource<T> {
    /// A null source.
    pub fn new() -> Self {
        NullSource(PhantomData)
    }
}

impl<T: Item> Node for NullSource<T> {
    fn ports(&self) -> Ports {
        Ports::new().output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let out = io.outputs.get::<T>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        // The ring's memory is reused: clear what we hand on, so the stream is truly zeros.
        space.fill(T::zeroed());
        let n = space.len();
        out.commit(n);
        Ok(Work::Progress)
    }
}

/// Consumes and discards every item.
#[derive(Debug, Default)]
pub struct NullSink<T>(PhantomData<T>);

impl<T> NullSink<T> {
    /// A null sink.
    pub fn new() -> Self {
        NullSink(PhantomData)
    }
}

impl<T: Item> Node for NullSink<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        let Some(window) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if window.is_empty() {
            return Ok(Work::Done);
        }
        let n = window.len();
        input.consume(n);
        Ok(Work::Progress)
    }
}

/// Passes the first `limit` items through, then ends the stream.
#[derive(Debug)]
pub struct Head<T> {
    left: u64,
    _items: PhantomData<T>,
}

impl<T> Head<T> {
    /// Passes `limit` items.
    pub fn new(limit: u64) -> Self {
        Head {
            left: limit,
            _items: PhantomData,
        }
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
    let Some(x) = input.window(1)? else {
        return Ok((Work::NeedInput { port: 0, items: 1 }, 0));
    };
    if x.is_empty() {
        return Ok((Work::Done, 0));
    }
    let Some(y) = output.reserve(1)? else {
        return Ok((Work::NeedOutput { port: 0, items: 1 }, 0));
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

impl<T: Item> Node for Head<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in").output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.left == 0 {
            return Ok(Work::Done);
        }
        let (work, n) = pass_through::<T>(io, self.left)?;
        self.left -= n as u64;
        Ok(if self.left == 0 { Work::Done } else { work })
    }
}

/// Copies its input to its output (one memcpy per window): the unit of the chain benchmark.
#[derive(Debug, Default)]
pub struct Copy<T>(PhantomData<T>);

impl<T> Copy<T> {
    /// A copy block.
    pub fn new() -> Self {
        Copy(PhantomData)
    }
}

impl<T: Item> Node for Copy<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in").output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        Ok(pass_through::<T>(io, u64::MAX)?.0)
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
