//! [`Interleave`] (N streams → one stream of N-item frames) and [`Deinterleave`] (back), the
//! frame layout of the multi-channel blocks (`channels = N`). Windows and reservations of up
//! to eight ports are held at once and written straight between queues, for any N without
//! allocating.
//!
//! Tags keep to their frame: a tag on item `n` of stream `c` lands on the first item of frame
//! `n` (index `n·N`), and a tag anywhere in frame `n` lands on item `n` of every output. The
//! sample rate (`rx_rate`) is each channel's and does not change.

use sluice_kernels::{deinterleave, interleave};
use sluice_runtime::{Item, Node, NodeError, Ports, Tag, TagPolicy, Work, WorkIo};
use std::marker::PhantomData;

/// Ports whose windows or reservations are held together.
const HELD: usize = 8;

/// The most streams one node interleaves.
pub const MAX_STREAMS: usize = 1 << 16;

fn check(n: usize) -> Result<(), NodeError> {
    if (1..=MAX_STREAMS).contains(&n) {
        Ok(())
    } else {
        Err(NodeError::msg(format!(
            "{n} streams: between 1 and {MAX_STREAMS} can be interleaved"
        )))
    }
}

/// Inputs `in0` … `in(N−1)` of `T` into output `out` of `T[N]`; ends with the shortest input.
#[derive(Debug)]
pub struct Interleave<T> {
    streams: usize,
    tags: Vec<Tag>,
    _items: PhantomData<T>,
}

impl<T: Item> Interleave<T> {
    /// Interleaves `streams` streams.
    pub fn new(streams: usize) -> Result<Self, NodeError> {
        check(streams)?;
        Ok(Interleave {
            streams,
            tags: Vec::new(),
            _items: PhantomData,
        })
    }
}

impl<T: Item> Node for Interleave<T> {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        for c in 0..self.streams {
            ports.add_input::<T>(&format!("in{c}"));
        }
        ports.add_output_vectors::<T>("out", self.streams, 0);
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let n = self.streams;
        let mut frames = usize::MAX;
        for (port, input) in io.inputs.all::<T>()?.enumerate() {
            match input.window(1)? {
                Some([]) => return Ok(Work::Done),
                Some(x) => frames = frames.min(x.len()),
                None => return Ok(Work::NeedInput { port, items: 1 }),
            }
        }
        let out = io.outputs.get::<T>(0)?;
        let written = out.items_written();
        let Some(space) = out.reserve(n)? else {
            return Ok(Work::NeedOutput { port: 0, items: n });
        };
        let frames = frames.min(space.len() / n);
        let space = &mut space[..frames * n];
        let mut inputs = io.inputs.all::<T>()?;
        let mut first = 0;
        while inputs.len() > 0 {
            let mut held: [&[T]; HELD] = [&[]; HELD];
            let mut k = 0;
            for input in inputs.by_ref().take(HELD) {
                // Every input held `frames` items a moment ago, so this window holds them.
                held[k] = input.window(frames)?.unwrap_or_default();
                k += 1;
            }
            interleave(&held[..k], n, first, space);
            first += k;
        }
        drop(inputs);
        for input in io.inputs.all::<T>()? {
            let read = input.items_read();
            input.take_tags(read + frames as u64, &mut self.tags);
            for mut tag in self.tags.drain(..) {
                tag.index = written + (tag.index - read) * n as u64;
                out.push_tag(tag);
            }
            input.consume(frames);
        }
        out.commit(frames * n);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

/// Input `in` of `T[N]` into outputs `out0` … `out(N−1)` of `T`.
#[derive(Debug)]
pub struct Deinterleave<T> {
    streams: usize,
    tags: Vec<Tag>,
    _items: PhantomData<T>,
}

impl<T: Item> Deinterleave<T> {
    /// Splits frames of `streams` items.
    pub fn new(streams: usize) -> Result<Self, NodeError> {
        check(streams)?;
        Ok(Deinterleave {
            streams,
            tags: Vec::new(),
            _items: PhantomData,
        })
    }
}

impl<T: Item> Node for Deinterleave<T> {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        ports.add_input_vectors::<T>("in", self.streams, 0);
        for c in 0..self.streams {
            ports.add_output::<T>(&format!("out{c}"));
        }
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let n = self.streams;
        let input = io.inputs.get::<T>(0)?;
        let read = input.items_read();
        let Some(x) = input.window(n)? else {
            return Ok(Work::NeedInput { port: 0, items: n });
        };
        if x.len() < n {
            return Ok(Work::Done);
        }
        let mut frames = x.len() / n;
        for (port, output) in io.outputs.all::<T>()?.enumerate() {
            match output.reserve(1)? {
                Some(y) => frames = frames.min(y.len()),
                None => return Ok(Work::NeedOutput { port, items: 1 }),
            }
        }
        let mut outputs = io.outputs.all::<T>()?;
        let mut first = 0;
        while outputs.len() > 0 {
            let mut held: [&mut [T]; HELD] = std::array::from_fn(|_| <&mut [T]>::default());
            let mut k = 0;
            for output in outputs.by_ref().take(HELD) {
                // Every output had room for `frames` a moment ago, so it has it still.
                if let Some(y) = output.reserve(frames)? {
                    held[k] = &mut y[..frames];
                }
                k += 1;
            }
            deinterleave(x, n, first, &mut held[..k]);
            first += k;
        }
        drop(outputs);
        input.take_tags(read + (frames * n) as u64, &mut self.tags);
        for output in io.outputs.all::<T>()? {
            let written = output.items_written();
            for tag in &self.tags {
                let mut tag = tag.clone();
                tag.index = written + (tag.index - read) / n as u64;
                output.push_tag(tag);
            }
            output.commit(frames);
        }
        self.tags.clear();
        input.consume(frames * n);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{VectorSink, VectorSource, VectorToStream};
    use sluice_runtime::{Graph, Rated, RunOptions, TagValue};

    /// 11 streams (more than one group of held ports) interleaved and split again, threaded.
    #[test]
    fn eleven_streams_round_trip_through_frames_with_their_tags() {
        let n = 11;
        let mut g = Graph::new();
        let inter = g.add("inter", Interleave::<u32>::new(n).unwrap()).unwrap();
        let flat = g
            .add("flat", Rated::new(VectorToStream::<u32>::new(n)))
            .unwrap();
        let (framed, frames) = VectorSink::<u32>::new();
        let framed = g.add("framed", framed).unwrap();
        let deinter = g
            .add("deinter", Deinterleave::<u32>::new(n).unwrap())
            .unwrap();
        for c in 0..n {
            let x: Vec<u32> = (0..3000 - c as u32).map(|i| i * 100 + c as u32).collect();
            let src = VectorSource::new(x).max_chunk(50 + 37 * c);
            let src = g.add(
                &format!("src{c}"),
                src.with_tag(5, "c", TagValue::U64(c as u64)),
            );
            g.connect(src.unwrap(), "out", inter, &format!("in{c}"))
                .unwrap();
        }
        // One output feeding two readers: both get every frame.
        g.connect(inter, "out", deinter, "in").unwrap();
        g.connect(inter, "out", flat, "in").unwrap();
        g.connect(flat, "out", framed, "in").unwrap();
        let mut sinks = Vec::new();
        for c in 0..n {
            let (sink, data) = VectorSink::<u32>::new();
            let sink = g.add(&format!("sink{c}"), sink.max_chunk(333)).unwrap();
            g.connect(deinter, &format!("out{c}"), sink, "in").unwrap();
            sinks.push(data);
        }
        g.run(&RunOptions::default()).unwrap();
        let frames_out = 3000 - (n as u32 - 1);
        for (c, data) in sinks.iter().enumerate() {
            let want: Vec<u32> = (0..frames_out).map(|i| i * 100 + c as u32).collect();
            assert_eq!(data.items(), want, "stream {c}");
            let tags: Vec<u64> = data.tags().iter().map(|t| t.index).collect();
            assert_eq!(tags, vec![5; n], "stream {c}: every stream's tag on item 5");
        }
        for (i, v) in frames.items().iter().enumerate() {
            assert_eq!(
                *v,
                (i / n) as u32 * 100 + (i % n) as u32,
                "interleaved item {i}"
            );
        }
        assert_eq!(frames.items().len(), frames_out as usize * n);
        assert!(Interleave::<u32>::new(0).is_err());
        assert!(Deinterleave::<u32>::new(MAX_STREAMS + 1).is_err());
    }
}
