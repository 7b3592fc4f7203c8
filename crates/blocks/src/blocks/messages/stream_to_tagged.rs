//! `stream_to_tagged_stream`: marks a stream as packets of a fixed length (GNU Radio's
//! `blocks.stream_to_tagged_stream`): a length tag on every `packet_len`-th item.

use sluice_runtime::{InPort, Item, Node, NodeError, OutPort, Ports, Tag, TagValue, Work, WorkIo};
use std::sync::Arc;

/// Copies its input and tags item `k·packet_len` with `length_key` = `packet_len`.
pub struct StreamToTaggedStream<T> {
    packet_len: u64,
    length_key: Arc<str>,
    inp: InPort<T>,
    out: OutPort<T>,
    ports: Ports,
}

impl<T: Item> StreamToTaggedStream<T> {
    /// Packets of `packet_len` items (at least 1) marked with `length_key`.
    pub fn new(packet_len: u64, length_key: &str) -> Result<Self, NodeError> {
        if packet_len == 0 {
            return Err(NodeError::msg("packet_len must be at least 1"));
        }
        let mut ports = Ports::new();
        let inp = ports.add_input::<T>("in");
        let out = ports.add_output::<T>("out");
        Ok(StreamToTaggedStream {
            packet_len,
            length_key: length_key.into(),
            inp,
            out,
            ports,
        })
    }
}

impl<T: Item> Node for StreamToTaggedStream<T> {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.port(self.inp);
        let out = io.outputs.port(self.out);
        let x = match input.window(1)? {
            None => return Ok(self.inp.need(1)),
            Some([]) => return Ok(Work::Done),
            Some(x) => x,
        };
        let first = out.items_written();
        let Some(y) = out.reserve(1)? else {
            return Ok(self.out.need(1));
        };
        let n = x.len().min(y.len());
        y[..n].copy_from_slice(&x[..n]);
        out.commit(n);
        input.consume(n);
        let len = TagValue::I64(self.packet_len as i64);
        let mut at = first.div_ceil(self.packet_len) * self.packet_len;
        while at < first + n as u64 {
            // The key is shared, not copied: tagging allocates nothing.
            out.push_tag(Tag {
                index: at,
                key: self.length_key.clone(),
                value: len.clone(),
                source: None,
            });
            at += self.packet_len;
        }
        Ok(Work::Progress)
    }
}
