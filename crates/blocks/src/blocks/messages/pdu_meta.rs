//! PDU metadata blocks: `pdu_set` (sets a key), `add_system_time` (stamps the wall clock) and
//! `time_delta` (the time since that stamp, as GNU Radio's `pdu.time_delta` measures
//! latency), all one [`PduMap`]: one PDU in, one PDU out, in order.

use sluice_runtime::{
    Inbox, Message, MessageIn, MessageKind, MessageOut, Node, NodeError, Pdu, Ports, Recv, Sent,
    TagValue, Work, WorkIo,
};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// A change made to every PDU passing through.
pub type PduFn = Box<dyn FnMut(&mut Pdu) -> Result<(), NodeError> + Send>;

/// A node that applies a function to every PDU of its input `pdus` and sends the result on
/// its output `pdus`. Messages that are not PDUs are an error naming what came.
pub struct PduMap {
    f: PduFn,
    held: Option<Message>,
    inp: MessageIn,
    out: MessageOut,
    ports: Ports,
}

impl PduMap {
    /// Applies `f` to every PDU.
    pub fn new(f: PduFn) -> Self {
        let mut ports = Ports::new();
        let inp = ports.add_message_input("pdus", MessageKind::Pdu, Inbox::DEFAULT);
        let out = ports.add_message_output("pdus", MessageKind::Pdu);
        PduMap {
            f,
            held: None,
            inp,
            out,
            ports,
        }
    }
}

impl Node for PduMap {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let out = io.outputs.message(self.out.index())?;
        let input = io.inputs.message(self.inp.index())?;
        loop {
            let msg = match self.held.take() {
                Some(msg) => msg,
                None => match input.recv()? {
                    Recv::Message(mut msg) => {
                        apply_in_place(&mut msg, &mut self.f)?;
                        msg
                    }
                    Recv::Empty => return Ok(self.inp.need()),
                    Recv::Ended => return Ok(Work::Done),
                },
            };
            if let Sent::Full(msg) = out.send(msg)? {
                self.held = Some(msg);
                return Ok(self.out.need());
            }
        }
    }
}

/// Applies `f` to the PDU that `msg` holds, in place: the metadata and the vector move out of
/// the message's pair into a [`Pdu`] and back, so a PDU passes through with no allocation and
/// no copy (a `Pdu::from_message` would clone every metadata entry, `into_message` box a new
/// pair). A message that is no PDU (see [`Pdu::from_message`]) is an error saying what came.
fn apply_in_place(msg: &mut Message, f: &mut PduFn) -> Result<(), NodeError> {
    let not_a_pdu = |msg: &Message| {
        NodeError::msg(format!(
            "expected a PDU, got {}",
            sluice_runtime::message::message_text(msg)
        ))
    };
    let is_pdu = matches!(msg, TagValue::Pair(pair)
        if matches!(pair.0, TagValue::Dict(_) | TagValue::Null)
            && matches!(pair.1, TagValue::Uniform(_)));
    let (true, TagValue::Pair(pair)) = (is_pdu, &mut *msg) else {
        return Err(not_a_pdu(msg));
    };
    let meta = match std::mem::replace(&mut pair.0, TagValue::Null) {
        TagValue::Dict(entries) => entries,
        _ => Vec::new(), // nil: GNU Radio's empty dict
    };
    let data = match std::mem::replace(&mut pair.1, TagValue::Null) {
        TagValue::Uniform(data) => data,
        other => {
            pair.1 = other; // not reached: checked above
            return Err(NodeError::msg("expected a PDU's vector"));
        }
    };
    let mut pdu = Pdu { meta, data };
    let result = f(&mut pdu);
    pair.0 = TagValue::Dict(pdu.meta);
    pair.1 = TagValue::Uniform(pdu.data);
    result
}

/// [`Pdu::set`] with a key the block holds already: a new entry shares it instead of
/// allocating its own copy of the text for every PDU.
fn set_shared(pdu: &mut Pdu, key: &Arc<str>, value: TagValue) {
    match pdu
        .meta
        .iter_mut()
        .find(|(k, _)| matches!(k, TagValue::Str(s) if **s == **key))
    {
        Some(entry) => entry.1 = value,
        None => pdu.meta.push((TagValue::Str(Arc::clone(key)), value)),
    }
}

/// `pdu_set`: sets metadata `key` to `value` in every PDU.
pub struct PduSet;

impl PduSet {
    /// The node.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(key: &str, value: TagValue) -> PduMap {
        let key: Arc<str> = key.into();
        PduMap::new(Box::new(move |pdu| {
            set_shared(pdu, &key, value.clone());
            Ok(())
        }))
    }
}

/// Seconds since the Unix epoch, as GNU Radio's `add_system_time` stamps them.
fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `add_system_time`: sets metadata `key` to the wall clock, in seconds since the epoch.
pub struct AddSystemTime;

impl AddSystemTime {
    /// The node.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(key: &str) -> PduMap {
        let key: Arc<str> = key.into();
        PduMap::new(Box::new(move |pdu| {
            set_shared(pdu, &key, TagValue::F64(now_seconds()));
            Ok(())
        }))
    }
}

/// The delays a [`TimeDelta`] measured, in seconds, readable while and after it runs.
pub type Delays = Arc<Mutex<Vec<f64>>>;

/// `time_delta`: sets metadata `delta_key` to the milliseconds since the time in `time_key`
/// (stamped by [`AddSystemTime`]) and records each delay. A PDU without the stamp is an error.
pub struct TimeDelta;

impl TimeDelta {
    /// The node and the delays it records.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(delta_key: &str, time_key: &str) -> (PduMap, Delays) {
        let (delta_key, time_key): (Arc<str>, Arc<str>) = (delta_key.into(), time_key.into());
        let delays = Delays::default();
        let record = Arc::clone(&delays);
        let node = PduMap::new(Box::new(move |pdu| {
            let Some(TagValue::F64(then)) = pdu.get(&time_key) else {
                return Err(NodeError::msg(format!(
                    "a PDU without a '{time_key}' time (add_system_time stamps it)"
                )));
            };
            let delay = now_seconds() - then;
            set_shared(pdu, &delta_key, TagValue::F64(delay * 1e3));
            record.lock().unwrap_or_else(|e| e.into_inner()).push(delay);
            Ok(())
        }));
        (node, delays)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::messages::{MessageDebug, MessageStrobe};
    use sluice_runtime::{Graph, Uniform};
    use std::time::Duration;

    #[test]
    fn metadata_is_set_stamped_and_measured() {
        let pdu = Pdu::new(Uniform::F32(vec![1.0; 4].into())).into_message();
        let mut g = Graph::new();
        let s = g
            .add("strobe", MessageStrobe::new(pdu, Duration::ZERO, Some(3)))
            .unwrap();
        let set = g
            .add("set", PduSet::new("channel", TagValue::I64(7)))
            .unwrap();
        let stamp = g.add("stamp", AddSystemTime::new("system_time")).unwrap();
        let (delta, delays) = TimeDelta::new("delta_ms", "system_time");
        let delta = g.add("delta", delta).unwrap();
        let (debug, log) = MessageDebug::new(false, true);
        let d = g.add("debug", debug).unwrap();
        g.connect(s, "out", set, "pdus").unwrap();
        g.connect(set, "pdus", stamp, "pdus").unwrap();
        g.connect(stamp, "pdus", delta, "pdus").unwrap();
        g.connect(delta, "pdus", d, "in").unwrap();
        g.run_stepped().unwrap();
        let got = log.messages();
        assert_eq!(got.len(), 3);
        for m in &got {
            let p = Pdu::from_message(m).unwrap();
            assert_eq!(p.get("channel"), Some(&TagValue::I64(7)));
            assert!(
                matches!(p.get("delta_ms"), Some(TagValue::F64(ms)) if *ms >= 0.0 && *ms < 5000.0)
            );
            assert_eq!(p.data.len(), 4);
        }
        assert_eq!(delays.lock().unwrap().len(), 3);
    }

    #[test]
    fn a_pdu_with_nil_metadata_gets_a_dict_and_keeps_its_vector() {
        // GNU Radio writes an empty dict as nil: `(nil . vector)` is a PDU too.
        let data = Uniform::C32(vec![Default::default(); 3].into());
        let msg = TagValue::Pair(Box::new((TagValue::Null, TagValue::Uniform(data.clone()))));
        let mut g = Graph::new();
        let s = g
            .add("strobe", MessageStrobe::new(msg, Duration::ZERO, Some(2)))
            .unwrap();
        let set = g.add("set", PduSet::new("k", TagValue::I64(1))).unwrap();
        let (debug, log) = MessageDebug::new(false, true);
        let d = g.add("debug", debug).unwrap();
        g.connect(s, "out", set, "pdus").unwrap();
        g.connect(set, "pdus", d, "in").unwrap();
        g.run_stepped().unwrap();
        let got = log.messages();
        assert_eq!(got.len(), 2);
        for m in &got {
            let p = Pdu::from_message(m).unwrap();
            assert_eq!(p.meta, vec![(TagValue::Str("k".into()), TagValue::I64(1))]);
            assert_eq!(p.data, data);
        }
    }

    #[test]
    fn a_message_that_is_not_a_pdu_is_an_error_saying_what_came() {
        let mut g = Graph::new();
        let s = g
            .add(
                "strobe",
                // Declared as sending PDUs, so that the connection is accepted and the
                // block itself sees what came.
                MessageStrobe::with_kind(
                    TagValue::I64(5),
                    Duration::ZERO,
                    Some(1),
                    sluice_runtime::MessageKind::Pdu,
                ),
            )
            .unwrap();
        let set = g.add("set", PduSet::new("k", TagValue::Null)).unwrap();
        g.connect(s, "out", set, "pdus").unwrap();
        let err = g.run_stepped().unwrap_err().to_string();
        assert!(
            err.contains("set") && err.contains("expected a PDU, got 5"),
            "{err}"
        );
    }
}
