//! The input queue as a `tcp_sink`'s retention window: its items stay unconsumed until the
//! receiver acknowledges them, their tags wait in the sink for their frames, and with
//! [`RetentionFull::DropOldest`] the oldest are dropped while the receiver is away. Also the
//! message input, whose messages are bound to the stream position at which they arrive.

use super::state::SinkState;
use super::{TcpSink, MSG_PORT};
use crate::options::RetentionFull;
use sluice_runtime::{metadata, Input, Item, NodeError, Recv as MessageRecv, Tag, Work, WorkIo};

impl<T: Item> TcpSink<T> {
    /// The stream offset of the input's next item to consume.
    pub(super) fn read_offset(&self, input: &Input<T>) -> u64 {
        self.origin + input.items_read()
    }

    /// Moves the input's tags below `end` into the retained list (and metadata).
    pub(super) fn take_tags(&mut self, input: &Input<T>, end: u64, buf: &mut Vec<Tag>) {
        input.take_tags(end - self.origin, buf);
        for mut tag in buf.drain(..) {
            tag.index += self.origin;
            if metadata_key(&tag.key) {
                self.metadata.retain(|m| m.key != tag.key);
                self.metadata.push(tag.clone());
            }
            self.tags.push_back(tag);
        }
    }

    /// With [`RetentionFull::DropOldest`], while the peer is away and retention is more than
    /// three quarters full, drops the oldest items down to half full (their tags too, keeping
    /// the latest metadata to re-send after the gap), so that upstream never waits.
    pub(super) fn drop_if_full(&mut self, input: &mut Input<T>) -> Result<(), NodeError> {
        let away = match &self.state {
            SinkState::Standby { .. }
            | SinkState::Streaming { .. }
            | SinkState::Draining { .. } => false,
            SinkState::Greeting { session, .. } => !session.standby,
            _ => true,
        };
        if self.opts.retention_full != RetentionFull::DropOldest || !away {
            return Ok(());
        }
        let capacity = input.capacity();
        // Ask for more than the threshold: a shorter request may be answered from what the
        // queue saw last time.
        let threshold = capacity / 4 * 3;
        let avail = match input.window(threshold + 1)? {
            Some(w) if w.len() > threshold => w.len(),
            _ => return Ok(()),
        };
        let read = self.read_offset(input);
        let vlen = self.opts.vlen();
        let k = (avail - capacity / 2) / vlen * vlen;
        if k == 0 {
            return Ok(());
        }
        let mut buf = Vec::new();
        self.take_tags(input, read + avail as u64, &mut buf);
        input.consume(k);
        let kept_from = read + k as u64;
        self.outbox.rebind(kept_from);
        while self.tags.front().is_some_and(|t| t.index < kept_from) {
            let tag = self.tags.pop_front().expect("checked");
            if metadata_key(&tag.key) {
                self.carried.retain(|m| m.key != tag.key);
                self.carried.push(tag);
            }
        }
        self.dropped += k as u64;
        self.drops += 1;
        Ok(())
    }

    /// Takes the messages waiting at the message input (as many as the outbox has room for)
    /// and binds them to the stream position: the end of the input as it stands after they
    /// were taken, so that a message comes after every item its sender committed before it.
    pub(super) fn take_messages(&mut self, io: &mut WorkIo<'_>) -> Result<(), NodeError> {
        let mut taken = Vec::new();
        let room = self.outbox.room();
        let messages = io.inputs.message(MSG_PORT)?;
        while taken.len() < room {
            match messages.recv()? {
                MessageRecv::Message(m) => taken.push(m),
                MessageRecv::Empty => break,
                MessageRecv::Ended => {
                    self.msg_ended = true;
                    break;
                }
            }
        }
        if taken.is_empty() {
            return Ok(());
        }
        let input = io.inputs.get::<T>(0)?;
        let vlen = self.opts.vlen() as u64;
        let at = (self.read_offset(input) + available(input)? as u64) / vlen * vlen;
        for m in taken {
            if let Err(why) = self.outbox.push(at, &m) {
                self.unsendable += 1;
                self.last_unsendable = Some(why.to_string());
            }
        }
        Ok(())
    }
}

/// Whether `key` is stream metadata (sample rate, centre frequency, time).
fn metadata_key(key: &str) -> bool {
    matches!(
        key,
        metadata::SAMPLE_RATE | metadata::CENTER_FREQUENCY | metadata::TIME
    )
}

/// Every item the input holds now. The queue's reader answers a request from what it saw
/// when it last looked while that covers the request, so a sink that holds unacknowledged
/// items asks for one more than it holds to see the items that came since.
pub(super) fn available<T: Item>(input: &mut Input<T>) -> Result<usize, NodeError> {
    let cached = input.window(1)?.map_or(0, |w| w.len());
    if cached == 0 || cached >= input.capacity() {
        return Ok(cached);
    }
    Ok(match input.window(cached + 1)? {
        Some(w) => w.len(),
        None => input.window(1)?.map_or(0, |w| w.len()),
    })
}

/// Whether the input has ended (its writer is done and everything it wrote is in the window).
pub(super) fn ended<T: Item>(input: &mut Input<T>) -> Result<bool, NodeError> {
    let avail = available(input)?;
    Ok(avail < input.capacity() && input.window(avail + 1)?.is_some_and(|w| w.len() == avail))
}

/// A sink that gave its receiver up consumes its input to the end.
pub(super) fn consume_all<T: Item>(input: &mut Input<T>) -> Result<Work, NodeError> {
    let avail = available(input)?;
    input.consume(avail);
    if avail == 0 && ended(input)? {
        return Ok(Work::Done);
    }
    Ok(Work::NeedInput { port: 0, items: 1 })
}
