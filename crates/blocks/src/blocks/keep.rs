//! Keep one in N: the simplest rate-changing block (decimation without filtering).

use sluice_runtime::{Item, Node, NodeError, Ports, TagPolicy, Work, WorkIo};
use std::marker::PhantomData;

/// Passes item 0, N, 2N, … and drops the rest. Tags are rescaled by 1/N.
#[derive(Debug)]
pub struct KeepOneInN<T> {
    n: usize,
    _items: PhantomData<T>,
}

impl<T> KeepOneInN<T> {
    /// Keeps one item in `n` (n ≥ 1).
    pub fn new(n: usize) -> Result<Self, NodeError> {
        if n == 0 {
            return Err(NodeError::msg("keep-one-in-n needs n of at least 1"));
        }
        Ok(KeepOneInN {
            n,
            _items: PhantomData,
        })
    }
}

impl<T: Item> Node for KeepOneInN<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in").output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        let output = io.outputs.get::<T>(0)?;
        let Some(x) = input.window(self.n)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: self.n,
            });
        };
        if x.len() < self.n {
            // End of stream with a partial group left: its first item is still kept (items
            // 0, n, 2n, … of the stream), the rest of the group is dropped.
            let rest = x.len();
            if rest > 0 {
                let Some(y) = output.reserve(1)? else {
                    return Ok(Work::NeedOutput { port: 0, items: 1 });
                };
                y[0] = x[0];
                output.commit(1);
                input.consume(rest);
                return Ok(Work::Progress);
            }
            return Ok(Work::Done);
        }
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let k = (x.len() / self.n).min(y.len());
        for (o, group) in y[..k].iter_mut().zip(x.chunks_exact(self.n)) {
            *o = group[0];
        }
        input.consume(k * self.n);
        output.commit(k);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Ratio {
            interpolation: 1,
            decimation: self.n as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10 items, keep one in 4: items 0, 4 and 8. The last group (8, 9) is partial at end of
    /// stream; its first item used to be dropped.
    #[test]
    fn the_first_item_of_a_partial_last_group_is_kept() {
        for chunk in [1, 3, 10] {
            let mut g = Graph::new();
            let src = g
                .add(
                    "src",
                    VectorSource::new((0..10u32).collect()).max_chunk(chunk),
                )
                .unwrap();
            let keep = g.add("keep", KeepOneInN::<u32>::new(4).unwrap()).unwrap();
            let (sink, data) = VectorSink::<u32>::new();
            let sink = g.add("sink", sink).unwrap();
            g.connect(src, "out", keep, "in").unwrap();
            g.connect(keep, "out", sink, "in").unwrap();
            g.run_stepped().unwrap();
            assert_eq!(data.items(), vec![0, 4, 8], "chunks of {chunk}");
        }
    }
    use crate::blocks::basic::Copy;
    use crate::blocks::vector::{VectorSink, VectorSource};
    use sluice_runtime::{Graph, RunOptions, Tag, TagValue};

    #[test]
    fn tags_pass_one_to_one_nodes_and_rescale_through_decimation() {
        let mut g = Graph::new();
        let src = VectorSource::new((0..10_000u32).collect())
            .max_chunk(333)
            .with_tag(0, "start", TagValue::Bool(true))
            .with_tag(4000, "freq", TagValue::F64(1e6))
            .with_tag(9999, "last", TagValue::I64(9999));
        let src = g.add("src", src).unwrap();
        let copy = g.add("copy", Copy::<u32>::new()).unwrap();
        let keep = g.add("keep", KeepOneInN::<u32>::new(4).unwrap()).unwrap();
        let (sink, data) = VectorSink::<u32>::new();
        let sink = g.add("sink", sink.max_chunk(100)).unwrap();
        g.connect(src, "out", copy, "in").unwrap();
        g.connect(copy, "out", keep, "in").unwrap();
        g.connect(keep, "out", sink, "in").unwrap();
        g.run(&RunOptions::default()).unwrap();
        let items = data.items();
        assert_eq!(items, (0..10_000u32).step_by(4).collect::<Vec<_>>());
        assert_eq!(
            data.tags(),
            vec![
                Tag::new(0, "start", TagValue::Bool(true)),
                Tag::new(1000, "freq", TagValue::F64(1e6)),
                Tag::new(2499, "last", TagValue::I64(9999)),
            ]
        );
        // The tag on item 4000 sits beside the item that carries input 4000.
        assert_eq!(items[1000], 4000);
    }
}
