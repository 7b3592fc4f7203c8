//! Messages beside the stream: the MESSAGE frame, and the sender's retention of messages.
//!
//! A sender that carries messages (HELLO flag [`FLAG_MSG`]) sends each
//! message its `tcp_sink` takes as one MESSAGE frame, bound to a stream **offset**: the
//! sink's stream position when the message arrived (the offset of the next item it had not
//! seen). Its body is the offset (u64), the message's **sequence number** (u64, 0 for the
//! stream's first message, counting up by one) and the message as one GNU Radio PMT value
//! ([`sluice_pmt`]), at most [`MAX_MESSAGE`] bytes.
//!
//! **Order.** A MESSAGE bound to offset `o` goes after every DATA item below `o` and before
//! any item at `o` or beyond (the sender ends a DATA frame at the offset of the next message),
//! so a receiver gets it exactly when it has received `o` items: it checks the offset against
//! its own, and the sequence number against the next it expects.
//!
//! **Resume.** The receiver's WELCOME answers a HELLO with the flag with the sequence number of
//! the first message it does not have; the sender resends every message from there, before
//! the DATA it resumes. A message at offset `o` is therefore re-sent iff the receiver does not
//! have it, which is iff its resume offset is ≤ `o` and it had not yet taken the messages
//! bound to its resume offset: nothing is lost or duplicated. The sender keeps each message
//! (`Outbox`) until the receiver acknowledges it (its ACKs carry, with the flag, the number
//! of the first message it lacks) or an item beyond its offset (that item came after it), or
//! the stream's END.
//!
//! **Bad input.** A MESSAGE frame longer than [`MAX_CONTROL`], shorter than its fixed part,
//! at another offset or sequence number than expected, or whose PMT does not decode (or
//! leaves bytes over) is [`NetError::Message`](crate::NetError::Message): the receiver drops
//! that connection only and waits for the sender to come back, as after any lost connection.

use crate::wire::{self, Kind, FLAG_MSG, HEADER_LEN, MAX_CONTROL};
use sluice_pmt as pmt;
use sluice_queue::TagValue;
use std::collections::VecDeque;

/// Bytes of a MESSAGE frame's fixed part: offset (8) and sequence number (8).
pub const MESSAGE_HEAD_LEN: usize = 16;

/// The most bytes of one message's PMT serialization: a MESSAGE body is at most
/// [`MAX_CONTROL`] bytes.
pub const MAX_MESSAGE: usize = MAX_CONTROL - MESSAGE_HEAD_LEN;

/// The most messages a sender keeps unacknowledged; beyond it, its message input waits.
pub const MAX_RETAINED: usize = 1024;

/// The bytes of messages (their frames) at which a sender stops taking more until some are
/// acknowledged.
pub const MAX_RETAINED_BYTES: usize = 4 << 20;

/// Why a message cannot be sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Unsendable {
    /// It has no PMT serialization (nested too deep, a symbol too long).
    Pmt(pmt::PmtError),
    /// Its serialization is longer than [`MAX_MESSAGE`] bytes.
    TooLong(usize),
}

impl std::fmt::Display for Unsendable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsendable::Pmt(e) => write!(f, "it has no PMT serialization: {e}"),
            Unsendable::TooLong(n) => write!(
                f,
                "its PMT serialization is {n} bytes, above the limit of {MAX_MESSAGE} bytes a MESSAGE frame carries"
            ),
        }
    }
}

/// A whole MESSAGE frame: `message` bound to stream offset `offset`, sequence number `seq`.
pub fn frame(offset: u64, seq: u64, message: &TagValue) -> Result<Vec<u8>, Unsendable> {
    let mut f = Vec::with_capacity(HEADER_LEN + MESSAGE_HEAD_LEN + 64);
    f.extend_from_slice(&[0; HEADER_LEN]);
    f.extend_from_slice(&offset.to_le_bytes());
    f.extend_from_slice(&seq.to_le_bytes());
    pmt::encode(message, &mut f).map_err(Unsendable::Pmt)?;
    let value = f.len() - HEADER_LEN - MESSAGE_HEAD_LEN;
    if value > MAX_MESSAGE {
        return Err(Unsendable::TooLong(value));
    }
    let body = (f.len() - HEADER_LEN) as u32;
    f[..HEADER_LEN].copy_from_slice(&wire::header(Kind::Message, 0, body));
    Ok(f)
}

/// A MESSAGE frame's body, read: `(offset, seq, message)`, or what is wrong with it (the
/// words of a PMT error are the decoder's, never the peer's bytes).
pub fn parse(body: &[u8]) -> Result<(u64, u64, TagValue), String> {
    if body.len() <= MESSAGE_HEAD_LEN {
        return Err(format!(
            "body of {} bytes, expected an offset and a sequence number ({MESSAGE_HEAD_LEN} bytes) and a PMT value",
            body.len()
        ));
    }
    let u64_at = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&body[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let (offset, seq) = (u64_at(0), u64_at(8));
    let value = &body[MESSAGE_HEAD_LEN..];
    let (message, used) = pmt::decode(value).map_err(|e| format!("message {seq}: {e}"))?;
    if used != value.len() {
        return Err(format!(
            "message {seq}: {} bytes left after its PMT value of {used} bytes (a MESSAGE carries exactly one)",
            value.len() - used
        ));
    }
    Ok((offset, seq, message))
}

/// Whether `flags` of a HELLO or WELCOME say "messages".
pub fn flagged(flags: u16) -> bool {
    flags & FLAG_MSG != 0
}

/// A message the sender keeps until the receiver has it.
#[derive(Debug, Clone)]
pub(crate) struct Retained {
    /// Its sequence number.
    pub seq: u64,
    /// The stream offset it is bound to.
    pub offset: u64,
    /// Its MESSAGE frame, encoded once (the offset inside is rewritten by [`Outbox::rebind`]).
    pub frame: Vec<u8>,
}

/// The sender's messages not yet known to be received, in sequence (and offset) order.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    kept: VecDeque<Retained>,
    bytes: usize,
    /// The sequence number the next message gets.
    next: u64,
    /// The offset of the last message taken: offsets never go back.
    last_offset: u64,
}

impl Outbox {
    /// How many more messages it takes now: none once it holds [`MAX_RETAINED`] messages or
    /// [`MAX_RETAINED_BYTES`] bytes.
    pub fn room(&self) -> usize {
        if self.bytes >= MAX_RETAINED_BYTES {
            return 0;
        }
        MAX_RETAINED - self.kept.len()
    }

    /// The sequence number the next message gets (= messages taken so far).
    pub fn next_seq(&self) -> u64 {
        self.next
    }

    /// Takes `message`, bound to offset `at` (or the last message's offset, if that is later).
    pub fn push(&mut self, at: u64, message: &TagValue) -> Result<(), Unsendable> {
        let offset = at.max(self.last_offset);
        let frame = frame(offset, self.next, message)?;
        self.bytes += frame.len();
        self.kept.push_back(Retained {
            seq: self.next,
            offset,
            frame,
        });
        self.next += 1;
        self.last_offset = offset;
        Ok(())
    }

    /// Forgets the messages bound below `acked` (the receiver has an item after each) or, with
    /// `all`, every message (the stream's END was acknowledged).
    pub fn release(&mut self, acked: u64, all: bool) {
        while self.kept.front().is_some_and(|m| all || m.offset < acked) {
            let m = self.kept.pop_front().expect("checked");
            self.bytes -= m.frame.len();
        }
    }

    /// Forgets the messages numbered below `messages` (the receiver acknowledged them).
    pub fn release_seq(&mut self, messages: u64) {
        while self.kept.front().is_some_and(|m| m.seq < messages) {
            let m = self.kept.pop_front().expect("checked");
            self.bytes -= m.frame.len();
        }
    }

    /// The items below `from` were dropped (retention full while the receiver was away): the
    /// messages bound to them go with the first item kept.
    pub fn rebind(&mut self, from: u64) {
        for m in self.kept.iter_mut().filter(|m| m.offset < from) {
            m.offset = from;
            m.frame[HEADER_LEN..HEADER_LEN + 8].copy_from_slice(&from.to_le_bytes());
        }
        self.last_offset = self.last_offset.max(from);
    }

    /// The message numbered `seq`, if it is kept.
    pub fn get(&self, seq: u64) -> Option<&Retained> {
        let first = self.kept.front()?.seq;
        self.kept
            .get(usize::try_from(seq.checked_sub(first)?).ok()?)
    }

    /// Checks a WELCOME's `messages` (the first message the receiver lacks) against what is
    /// kept, for a stream that resumes at offset `from`: `Err` says what is wrong.
    pub fn check_resume(&self, messages: u64, from: u64) -> Result<(), String> {
        let first = self.kept.front().map_or(self.next, |m| m.seq);
        if messages < first || messages > self.next {
            return Err(format!(
                "the receiver lacks messages from number {messages} on, but this sender has sent {} and keeps those from number {first} on (the others were acknowledged)",
                self.next
            ));
        }
        if let Some(m) = self.get(messages).filter(|m| m.offset < from) {
            return Err(format!(
                "the receiver resumes at offset {from} but lacks message {} bound to offset {} before it",
                m.seq, m.offset
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_frame_round_trips() {
        let m = TagValue::Str("retune".into());
        let f = frame(7, 3, &m).unwrap();
        assert_eq!(f[5], Kind::Message as u8);
        assert_eq!(parse(&f[HEADER_LEN..]).unwrap(), (7, 3, m));
        assert!(parse(&f[HEADER_LEN..HEADER_LEN + 16]).is_err());
        let mut extra = f[HEADER_LEN..].to_vec();
        extra.push(0);
        assert!(parse(&extra).unwrap_err().contains("left after"));
    }

    #[test]
    fn the_outbox_keeps_order_rebinds_and_releases() {
        let mut o = Outbox::default();
        o.push(5, &TagValue::U64(0)).unwrap();
        o.push(3, &TagValue::U64(1)).unwrap(); // offsets never go back
        o.push(9, &TagValue::U64(2)).unwrap();
        assert_eq!(o.get(1).unwrap().offset, 5);
        o.rebind(6);
        assert_eq!(o.get(0).unwrap().offset, 6);
        assert_eq!(parse(&o.get(1).unwrap().frame[HEADER_LEN..]).unwrap().0, 6);
        assert!(o.check_resume(1, 6).is_ok());
        assert!(o.check_resume(1, 7).is_err());
        assert!(o.check_resume(4, 0).is_err());
        o.release(7, false);
        assert_eq!(o.get(2).unwrap().seq, 2);
        assert!(o.get(1).is_none());
        assert!(o.check_resume(1, 0).is_err());
        o.release(0, true);
        assert!(o.get(2).is_none());
        assert_eq!(o.next_seq(), 3);
    }
}
