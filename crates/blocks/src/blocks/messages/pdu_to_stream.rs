//! `pdu_to_tagged_stream`: writes PDUs into a stream, each marked by a length tag on its
//! first item (GNU Radio's convention), its metadata as tags on that item.

use super::{PduItem, PACKET_LEN};
use sluice_runtime::{
    Inbox, MessageIn, MessageKind, Node, NodeError, OutPort, Pdu, Ports, Recv, TagPolicy, TagValue,
    Work, WorkIo,
};
use std::sync::Arc;

/// Writes the vector of each PDU it receives to its stream output, tags the first item with
/// `length_key` = the vector's length and with each metadata entry whose key is a symbol. A
/// PDU of another element type is an error naming both types.
pub struct PduToTaggedStream<T> {
    length_key: Arc<str>,
    /// The PDU being written and how many of its items are written.
    current: Option<(Pdu, usize)>,
    inp: MessageIn,
    out: OutPort<T>,
    ports: Ports,
}

impl<T: PduItem> PduToTaggedStream<T> {
    /// Marks packets with `length_key` tags.
    pub fn new(length_key: &str) -> Self {
        let mut ports = Ports::new();
        let inp = ports.add_message_input("pdus", MessageKind::Pdu, Inbox::DEFAULT);
        let out = ports.add_output::<T>("out");
        PduToTaggedStream {
            length_key: length_key.into(),
            current: None,
            inp,
            out,
            ports,
        }
    }

    /// With GNU Radio's key, `packet_len`.
    pub fn with_default_key() -> Self {
        Self::new(PACKET_LEN)
    }
}

impl<T: PduItem> Node for PduToTaggedStream<T> {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        loop {
            if self.current.is_none() {
                match io.inputs.message(self.inp.index())?.recv()? {
                    Recv::Message(msg) => {
                        let pdu = Pdu::from_message(&msg).ok_or_else(|| {
                            NodeError::msg(format!(
                                "expected a PDU (a pair of a dict and a {} vector), got {}",
                                T::NAME,
                                sluice_runtime::message::message_text(&msg)
                            ))
                        })?;
                        if T::from_uniform(&pdu.data).is_none() {
                            return Err(NodeError::msg(format!(
                                "a PDU of {} samples reached a stream of {}",
                                pdu.data.type_name(),
                                T::NAME
                            )));
                        }
                        if pdu.data.is_empty() {
                            continue; // no item to carry its tags
                        }
                        let out = io.outputs.port(self.out);
                        let first = out.items_written();
                        out.add_tag(
                            first,
                            &self.length_key,
                            TagValue::I64(pdu.data.len() as i64),
                        );
                        for (k, v) in &pdu.meta {
                            if let TagValue::Str(key) = k {
                                out.add_tag(first, key, v.clone());
                            }
                        }
                        self.current = Some((pdu, 0));
                    }
                    Recv::Empty => return Ok(self.inp.need()),
                    Recv::Ended => return Ok(Work::Done),
                }
            }
            let Some((pdu, done)) = &mut self.current else {
                continue;
            };
            let items = T::from_uniform(&pdu.data).unwrap_or(&[]);
            let out = io.outputs.port(self.out);
            let Some(space) = out.reserve(1)? else {
                return Ok(self.out.need(1));
            };
            let n = space.len().min(items.len() - *done);
            space[..n].copy_from_slice(&items[*done..*done + n]);
            out.commit(n);
            *done += n;
            if *done == items.len() {
                self.current = None;
            }
        }
    }
}
