//! `message_to_param`: a message sets a run-time parameter of another node, as
//! `sluice ctl set` does: the change is applied between two `work` calls of the target, at an
//! item offset the target reports and tags (`set:<param>`).

use sluice_runtime::{
    sleep, ControlHandle, Inbox, MessageIn, MessageKind, Node, NodeError, Pdu, PendingChange,
    Ports, Recv, TagValue, Work, WorkIo,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The changes a [`MessageToParam`] made: (value, item offset where it took effect).
pub type Applied = Arc<Mutex<Vec<(TagValue, u64)>>>;

/// Sets parameter `param` of node `node` from every message it receives: the message itself
/// (a number or a text), or, with `key`, the value under that key of a PDU's metadata or of a
/// dict. `scale` multiplies numbers (e.g. −1 to turn a measured offset into a correction).
/// With `accumulate`, each message moves the parameter by its value instead (starting from
/// `start`): a tracking loop, as a decoder measuring a residual offset needs.
/// It never blocks in `work`: changes are posted and their outcomes collected later; a change
/// the target refuses is reported as a warning, and the node goes on.
pub struct MessageToParam {
    node: String,
    param: String,
    key: Option<String>,
    scale: f64,
    /// The running total when accumulating.
    total: Option<f64>,
    control: Option<ControlHandle>,
    pending: Vec<(TagValue, PendingChange)>,
    applied: Applied,
    refused: Vec<String>,
    inp: MessageIn,
    ports: Ports,
}

impl MessageToParam {
    /// Sets `node`.`param` from messages (see the type's docs); returns the node and the list
    /// of changes it made.
    pub fn new(node: &str, param: &str, key: Option<&str>, scale: f64) -> (Self, Applied) {
        let mut ports = Ports::new();
        let inp = ports.add_message_input("in", MessageKind::Any, Inbox::DEFAULT);
        let applied = Applied::default();
        let node = MessageToParam {
            node: node.to_string(),
            param: param.to_string(),
            key: key.map(str::to_string),
            scale,
            total: None,
            control: None,
            pending: Vec::new(),
            applied: Arc::clone(&applied),
            refused: Vec::new(),
            inp,
            ports,
        };
        (node, applied)
    }

    /// Makes each message move the parameter by its (scaled) value, from `start`.
    pub fn accumulate(mut self, start: f64) -> Self {
        self.total = Some(start);
        self
    }

    /// The value a message carries for the parameter, if it carries one.
    fn value_of(&mut self, msg: &TagValue) -> Option<TagValue> {
        let value = match &self.key {
            None => msg.clone(),
            Some(key) => {
                let entries = match Pdu::from_message(msg) {
                    Some(pdu) => pdu.meta,
                    None => match msg {
                        TagValue::Dict(entries) => entries.clone(),
                        _ => return None,
                    },
                };
                entries
                    .into_iter()
                    .find(|(k, _)| matches!(k, TagValue::Str(s) if **s == **key))?
                    .1
            }
        };
        if let Some(total) = &mut self.total {
            *total += sluice_runtime::control::number(&value, "").ok()? * self.scale;
            return Some(TagValue::F64(*total));
        }
        Some(match value {
            TagValue::F64(x) => TagValue::F64(x * self.scale),
            TagValue::I64(i) if self.scale != 1.0 => TagValue::F64(i as f64 * self.scale),
            TagValue::U64(u) if self.scale != 1.0 => TagValue::F64(u as f64 * self.scale),
            other => other,
        })
    }

    /// Collects the outcomes of posted changes; true when none is pending.
    fn collect(&mut self) -> bool {
        let applied = &self.applied;
        let refused = &mut self.refused;
        self.pending
            .retain(|(value, change)| match change.outcome() {
                None => true,
                Some(Ok(at)) => {
                    applied
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((value.clone(), at));
                    false
                }
                Some(Err(e)) => {
                    refused.push(e.to_string());
                    false
                }
            });
        self.pending.is_empty()
    }
}

impl Node for MessageToParam {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn attach_control(&mut self, handle: ControlHandle) {
        self.control = Some(handle);
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        self.collect();
        let Some(control) = self.control.clone() else {
            return Err(NodeError::msg(
                "message_to_param runs only in a graph (it sets another node's parameter)",
            ));
        };
        loop {
            match io.inputs.message(self.inp.index())?.recv()? {
                Recv::Message(msg) => {
                    let Some(value) = self.value_of(&msg) else {
                        self.refused.push(format!(
                            "a message without {}: {}",
                            self.key.as_deref().unwrap_or("a value"),
                            sluice_runtime::message::message_text(&msg)
                        ));
                        continue;
                    };
                    let change = control
                        .post(&self.node, &self.param, value.clone())
                        .map_err(|e| NodeError::msg(e.to_string()))?;
                    self.pending.push((value, change));
                }
                Recv::Empty => return Ok(self.inp.need()),
                Recv::Ended => {
                    // Every change is applied or refused before the node ends, so that its
                    // report is complete; the target answers within its next firing.
                    if self.collect() {
                        return Ok(Work::Done);
                    }
                    sleep(Duration::from_millis(1));
                    return Ok(Work::Progress);
                }
            }
        }
    }

    fn warnings(&mut self) -> Vec<String> {
        self.collect();
        let mut out: Vec<String> = self
            .refused
            .iter()
            .take(5)
            .map(|r| format!("change of {}.{} refused: {r}", self.node, self.param))
            .collect();
        if self.refused.len() > 5 {
            out.push(format!("… {} changes refused in all", self.refused.len()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::messages::MessageStrobe;
    use crate::blocks::rotator::FrequencyShift;
    use crate::blocks::{Throttle, VectorSink, VectorSource};
    use num_complex::Complex32;
    use sluice_runtime::{Graph, Rated, RunOptions};

    #[test]
    fn a_message_retunes_a_rotator_at_the_item_it_reports() {
        let (fs, f) = (48_000.0, 1_200.0);
        let n = 48_000;
        let mut g = Graph::new();
        let src = g
            .add("src", VectorSource::new(vec![Complex32::new(1.0, 0.0); n]))
            .unwrap();
        // Paced, so that the message arrives while samples still flow.
        let pace = g
            .add("pace", Throttle::<Complex32>::new(480_000.0).unwrap())
            .unwrap();
        let rot = g
            .add("rot", Rated::new(FrequencyShift::new(0.0, fs).unwrap()))
            .unwrap();
        let (sink, got) = VectorSink::<Complex32>::new();
        let sink = g.add("sink", sink).unwrap();
        let strobe = g
            .add(
                "strobe",
                MessageStrobe::new(TagValue::F64(f), Duration::from_millis(20), Some(1)),
            )
            .unwrap();
        let (to_param, applied) = MessageToParam::new("rot", "frequency", None, 1.0);
        let set = g.add("set", to_param).unwrap();
        g.connect(src, "out", pace, "in").unwrap();
        g.connect(pace, "out", rot, "in").unwrap();
        g.connect(rot, "out", sink, "in").unwrap();
        g.connect(strobe, "out", set, "in").unwrap();
        g.run(&RunOptions::default()).unwrap();
        let applied = applied.lock().unwrap().clone();
        assert_eq!(applied.len(), 1);
        let at = applied[0].1 as usize;
        assert!(at < n, "applied at {at}");
        let y = got.items();
        // Before the change: no rotation; from it on: the phase advances 2πf/fs per sample.
        assert!(y[..at]
            .iter()
            .all(|s| (s - Complex32::new(1.0, 0.0)).norm() < 1e-5));
        let step = 2.0 * std::f64::consts::PI * f / fs;
        for (k, s) in y[at..].iter().enumerate().take(1000).skip(1) {
            let expected = Complex32::from_polar(1.0, (step * k as f64) as f32);
            assert!(
                (s - expected).norm() < 1e-3,
                "item {}: {s} vs {expected}",
                at + k
            );
        }
        let tag = got.tags().into_iter().find(|t| &*t.key == "set:frequency");
        assert_eq!(tag.map(|t| t.index), Some(at as u64));
    }
}
