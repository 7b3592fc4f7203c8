//! `tagged_stream_to_pdu`: cuts a tagged stream into PDUs (GNU Radio's length-tag convention:
//! a tag `packet_len` = n on the first item of each packet of n items).

use super::{PduItem, PACKET_LEN};
use sluice_runtime::{
    InPort, Message, MessageKind, MessageOut, Node, NodeError, Pdu, Ports, Sent, Tag, TagPolicy,
    TagValue, Work, WorkIo,
};
use std::sync::Arc;

/// Metadata entries a PDU leaves with room for, beyond its own.
const META_ROOM: usize = 8;

/// Turns each packet of its stream input into one PDU: the packet's items as the vector, and
/// the other tags on its items as the metadata (key → value, a later tag of a key replacing
/// an earlier one). Items outside packets are an error naming the item, as in GNU Radio; a
/// packet cut short by the end of the stream is dropped and reported.
pub struct TaggedStreamToPdu<T> {
    length_key: Arc<str>,
    max_items: usize,
    /// The length of the packet at the input's next item, once its tag was read.
    packet: Option<usize>,
    meta: Vec<(TagValue, TagValue)>,
    /// A PDU refused by a full inbox, sent again first (its items are not consumed yet).
    held: Option<Message>,
    tags: Vec<Tag>,
    cut_short: Option<(u64, usize, usize)>,
    inp: InPort<T>,
    out: MessageOut,
    ports: Ports,
}

impl<T: PduItem> TaggedStreamToPdu<T> {
    /// PDUs from packets marked by `length_key` tags, of at most `max_items` items each.
    pub fn new(length_key: &str, max_items: usize) -> Self {
        let mut ports = Ports::new();
        let max_items = max_items.max(1);
        let inp = ports.add_input_window::<T>("in", max_items);
        let out = ports.add_message_output("pdus", MessageKind::Pdu);
        TaggedStreamToPdu {
            length_key: length_key.into(),
            max_items,
            packet: None,
            meta: Vec::new(),
            held: None,
            tags: Vec::new(),
            cut_short: None,
            inp,
            out,
            ports,
        }
    }

    /// With GNU Radio's key, `packet_len`.
    pub fn with_default_key(max_items: usize) -> Self {
        Self::new(PACKET_LEN, max_items)
    }
}

impl<T: PduItem> Node for TaggedStreamToPdu<T> {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop // the tags become the PDUs' metadata
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.port(self.inp);
        let out = io.outputs.message(self.out.index())?;
        loop {
            if let Some(msg) = self.held.take() {
                if let Sent::Full(msg) = out.send(msg)? {
                    self.held = Some(msg);
                    return Ok(self.out.need());
                }
                let n = self.packet.take().unwrap_or(0);
                input.consume(n);
            }
            let at = input.items_read();
            let len = match self.packet {
                Some(len) => len,
                None => {
                    match input.window(1)? {
                        None => return Ok(self.inp.need(1)),
                        Some([]) => return Ok(Work::Done),
                        Some(_) => {}
                    }
                    self.tags.clear();
                    input.take_tags(at + 1, &mut self.tags);
                    let len = self
                        .tags
                        .iter()
                        .rev()
                        .find(|t| t.index == at && t.key == self.length_key)
                        .map(|t| t.value.clone());
                    let len = match len {
                        Some(TagValue::I64(n)) if n > 0 => n as usize,
                        Some(TagValue::U64(n)) if n > 0 => n as usize,
                        Some(other) => {
                            return Err(NodeError::msg(format!(
                                "item {at}: length tag '{}' must be a positive whole number, not {other:?}",
                                self.length_key
                            )))
                        }
                        None => {
                            return Err(NodeError::msg(format!(
                                "item {at} starts no packet: expected a '{}' tag on it (is the stream tagged, e.g. by stream_to_tagged_stream?)",
                                self.length_key
                            )))
                        }
                    };
                    if len > self.max_items {
                        return Err(NodeError::msg(format!(
                            "item {at}: a packet of {len} items is longer than max_items = {}",
                            self.max_items
                        )));
                    }
                    self.meta.clear();
                    let key = self.length_key.clone();
                    add_meta(&mut self.meta, self.tags.drain(..).filter(|t| t.key != key));
                    self.packet = Some(len);
                    len
                }
            };
            let Some(x) = input.window(len)? else {
                return Ok(self.inp.need(len));
            };
            if x.len() < len {
                // The stream ended inside the packet.
                self.cut_short = Some((at, x.len(), len));
                let n = x.len();
                input.consume(n);
                self.packet = None;
                return Ok(Work::Done);
            }
            let data = T::to_uniform(&x[..len]);
            input.take_tags(at + len as u64, &mut self.tags);
            let key = self.length_key.clone();
            add_meta(&mut self.meta, self.tags.drain(..).filter(|t| t.key != key));
            // The PDU's metadata leaves with room for the few keys that blocks downstream
            // usually add (pdu_set, add_system_time, time_delta), so that they do not grow it
            // twice per PDU.
            let mut meta = Vec::with_capacity(self.meta.len() + META_ROOM);
            meta.append(&mut self.meta);
            let pdu = Pdu { meta, data };
            self.held = Some(pdu.into_message());
        }
    }

    fn warnings(&mut self) -> Vec<String> {
        match self.cut_short {
            Some((at, got, len)) => vec![format!(
                "the stream ended inside the packet at item {at}: {got} of its {len} items came; it was dropped"
            )],
            None => Vec::new(),
        }
    }
}

/// Adds tags to a PDU's metadata: key → value, replacing an earlier entry of the same key.
fn add_meta(meta: &mut Vec<(TagValue, TagValue)>, tags: impl Iterator<Item = Tag>) {
    for tag in tags {
        let key = TagValue::Str(tag.key.clone());
        match meta.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = tag.value,
            None => meta.push((key, tag.value)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::messages::{MessageDebug, PduToTaggedStream, StreamToTaggedStream};
    use crate::blocks::{VectorSink, VectorSource};
    use sluice_runtime::{Graph, RunOptions, Uniform};

    #[test]
    fn packets_become_pdus_and_back_with_their_tags() {
        let data: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        let mut g = Graph::new();
        let src = g
            .add(
                "src",
                VectorSource::new(data.clone())
                    .with_tag(150, "gain", TagValue::F64(2.5))
                    .max_chunk(37),
            )
            .unwrap();
        let tag = g
            .add(
                "tag",
                StreamToTaggedStream::<f32>::new(100, PACKET_LEN).unwrap(),
            )
            .unwrap();
        let to_pdu = g
            .add("to_pdu", TaggedStreamToPdu::<f32>::with_default_key(256))
            .unwrap();
        let back = g
            .add("back", PduToTaggedStream::<f32>::with_default_key())
            .unwrap();
        let (sink, got) = VectorSink::<f32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", tag, "in").unwrap();
        g.connect(tag, "out", to_pdu, "in").unwrap();
        g.connect(to_pdu, "pdus", back, "pdus").unwrap();
        g.connect(back, "out", sink, "in").unwrap();
        g.run(&RunOptions::default()).unwrap();
        assert_eq!(got.items(), data);
        let tags = got.tags();
        let lengths: Vec<u64> = tags
            .iter()
            .filter(|t| &*t.key == PACKET_LEN)
            .map(|t| t.index)
            .collect();
        assert_eq!(lengths, (0..10).map(|k| k * 100).collect::<Vec<_>>());
        // A tag inside packet 1 travels in its PDU's metadata, back onto its first item.
        let gain: Vec<&Tag> = tags.iter().filter(|t| &*t.key == "gain").collect();
        assert_eq!(gain.len(), 1);
        assert_eq!((gain[0].index, &gain[0].value), (100, &TagValue::F64(2.5)));
    }

    #[test]
    fn the_pdus_hold_the_packets_items() {
        let mut g = Graph::new();
        let src = g
            .add("src", VectorSource::new((0..10u8).collect::<Vec<u8>>()))
            .unwrap();
        let tag = g
            .add(
                "tag",
                StreamToTaggedStream::<u8>::new(4, PACKET_LEN).unwrap(),
            )
            .unwrap();
        let to_pdu = g
            .add("to_pdu", TaggedStreamToPdu::<u8>::with_default_key(16))
            .unwrap();
        let (debug, log) = MessageDebug::new(false, true);
        let d = g.add("debug", debug).unwrap();
        g.connect(src, "out", tag, "in").unwrap();
        g.connect(tag, "out", to_pdu, "in").unwrap();
        g.connect(to_pdu, "pdus", d, "in").unwrap();
        let report = g.run_stepped().unwrap();
        let pdus: Vec<Vec<u8>> = log
            .messages()
            .iter()
            .map(|m| match Pdu::from_message(m).unwrap().data {
                Uniform::U8(v) => v.to_vec(),
                other => panic!("{other:?}"),
            })
            .collect();
        // The last packet (items 8, 9 of 4) is cut short by the end of the stream: reported.
        assert_eq!(pdus, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        let warnings = &report.node("to_pdu").unwrap().warnings;
        assert!(warnings[0].contains("2 of its 4 items"), "{warnings:?}");
    }

    #[test]
    fn an_untagged_stream_is_an_error_naming_the_item_and_the_key() {
        let mut g = Graph::new();
        let src = g.add("src", VectorSource::new(vec![1.0f32; 8])).unwrap();
        let to_pdu = g
            .add("to_pdu", TaggedStreamToPdu::<f32>::with_default_key(16))
            .unwrap();
        let (debug, _) = MessageDebug::new(false, false);
        let d = g.add("debug", debug).unwrap();
        g.connect(src, "out", to_pdu, "in").unwrap();
        g.connect(to_pdu, "pdus", d, "in").unwrap();
        let err = g.run_stepped().unwrap_err().to_string();
        assert!(
            err.contains("to_pdu")
                && err.contains("item 0 starts no packet")
                && err.contains("packet_len"),
            "{err}"
        );
    }
}
