//! `message_strobe`: sends one message every period (GNU Radio's `blocks.message_strobe`).

use sluice_runtime::{
    sleep, Message, MessageKind, MessageOut, Node, NodeError, Pdu, Ports, Sent, Work, WorkIo,
};
use std::time::{Duration, Instant};

/// The longest it sleeps at once, so that a stop is seen promptly.
const SLICE: Duration = Duration::from_millis(20);

/// Sends `message` every `period`, `count` times (or until stopped). The first message leaves
/// at once; the following ones at whole periods from the start, so the rate does not drift.
pub struct MessageStrobe {
    message: Message,
    period: Duration,
    count: Option<u64>,
    sent: u64,
    start: Option<Instant>,
    out: MessageOut,
    ports: Ports,
}

impl MessageStrobe {
    /// `message` every `period`; `count` messages in all, or without end if `None`. Its
    /// output carries PDUs if `message` is one, else any message.
    pub fn new(message: Message, period: Duration, count: Option<u64>) -> Self {
        let kind = match Pdu::from_message(&message) {
            Some(_) => MessageKind::Pdu,
            None => MessageKind::Any,
        };
        Self::with_kind(message, period, count, kind)
    }

    /// Like [`MessageStrobe::new`], its output declared as carrying `kind`.
    pub fn with_kind(
        message: Message,
        period: Duration,
        count: Option<u64>,
        kind: MessageKind,
    ) -> Self {
        let mut ports = Ports::new();
        let out = ports.add_message_output("out", kind);
        MessageStrobe {
            message,
            period,
            count,
            sent: 0,
            start: None,
            out,
            ports,
        }
    }
}

impl Node for MessageStrobe {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn length(&self) -> Option<u64> {
        self.count
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.count.is_some_and(|n| self.sent >= n) || io.stop_requested() {
            return Ok(Work::Done);
        }
        let start = *self.start.get_or_insert_with(Instant::now);
        let due = start
            + self
                .period
                .saturating_mul(self.sent.min(u32::MAX as u64) as u32);
        let now = Instant::now();
        if due > now {
            sleep((due - now).min(SLICE));
            return Ok(Work::Progress);
        }
        match io
            .outputs
            .message(self.out.index())?
            .send(self.message.clone())?
        {
            Sent::Delivered => {
                self.sent += 1;
                Ok(Work::Progress)
            }
            Sent::Full(_) => Ok(self.out.need()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::messages::MessageDebug;
    use sluice_runtime::{Graph, RunOptions, TagValue};

    #[test]
    fn sends_count_messages_a_period_apart() {
        let mut g = Graph::new();
        let msg = TagValue::Str("tick".into());
        let s = g
            .add(
                "strobe",
                MessageStrobe::new(msg.clone(), Duration::from_millis(10), Some(5)),
            )
            .unwrap();
        let (debug, log) = MessageDebug::new(false, true);
        let d = g.add("debug", debug).unwrap();
        g.connect(s, "out", d, "in").unwrap();
        let began = Instant::now();
        g.run(&RunOptions::default()).unwrap();
        assert!(began.elapsed() >= Duration::from_millis(40));
        assert_eq!(log.count(), 5);
        assert_eq!(log.messages(), vec![msg; 5]);
    }
}
