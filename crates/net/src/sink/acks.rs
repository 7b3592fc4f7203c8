//! What a `tcp_sink` hears from its receiver: the WELCOME (where to resume, the credit, the
//! largest frame, the history to keep), the ACKs (what it may release, messages too) and the
//! CREDITs (how far it may send); each checked against what this sink sent and kept.

use super::state::SinkState;
use super::{TcpSink, CONTROL_WAIT};
use crate::conn::{io_err, Recv};
use crate::decoder::{Event, Need};
use crate::wire::{self, Welcome};
use crate::NetError;
use sluice_runtime::Item;
use std::time::{Duration, Instant};

/// While nothing presses (see `TcpSink::rx_due`), the peer's ACKs and CREDITs are read at
/// most this often: a read that finds nothing would cost a system call per frame.
const RX_INTERVAL: Duration = Duration::from_millis(1);

impl<T: Item> TcpSink<T> {
    /// Whether to read the peer's frames now (with `unacked` items not acknowledged, of an
    /// input queue of `capacity`): before its WELCOME (a standby: always), after a wait on the
    /// socket (something came), when credit or retention runs short, after the END; else at
    /// most every [`RX_INTERVAL`] (the ACKs of many frames are then read at once).
    pub(super) fn rx_due(&self, unacked: u64, capacity: usize) -> bool {
        match &self.state {
            SinkState::Greeting { .. } | SinkState::Standby { .. } | SinkState::Draining { .. } => {
                true
            }
            SinkState::Streaming { session: s } => {
                s.waited
                    || s.sent >= s.credit
                    || unacked >= (capacity / 4) as u64
                    || s.rx_checked.elapsed() >= RX_INTERVAL
            }
            _ => false,
        }
    }

    /// Reads and handles every frame the peer has sent so far; `read..written` is what the
    /// input queue (of `capacity` items) holds.
    pub(super) fn pump_rx(
        &mut self,
        read: u64,
        written: u64,
        capacity: usize,
    ) -> Result<(), NetError> {
        let Some(s) = self.state.session_mut() else {
            return Ok(());
        };
        s.decoder.set_offset(self.acked);
        (s.rx_checked, s.waited) = (Instant::now(), false);
        while let Some((event, peer)) = self.next_event()? {
            if self.state.session().is_some_and(|s| s.standby) {
                self.standby_heard(event, &peer)?;
                continue;
            }
            match event {
                Event::Welcome(w) => self.on_welcome(w, &peer, read, written, capacity)?,
                Event::Ack(a) => self.on_ack(a, None, &peer)?,
                Event::AckMessages { acked, messages } => {
                    self.on_ack(acked, Some(messages), &peer)?;
                }
                Event::Credit(c) => {
                    if let Some(s) = self.state.session_mut() {
                        s.credit = s.credit.max(c);
                    }
                }
                Event::Heartbeat => {}
                other => unreachable!("a sender's decoder gives no {other:?}"),
            }
        }
        Ok(())
    }

    /// The peer's next frame, from what came so far (only control frames come from a
    /// receiver: as many bytes as came are read at once), and the peer's address; `None` once
    /// nothing more came.
    fn next_event(&mut self) -> Result<Option<(Event, String)>, NetError> {
        let acked = self.acked;
        let Some(s) = self.state.session_mut() else {
            return Ok(None);
        };
        loop {
            let Need::Control(n) = s.decoder.need() else {
                unreachable!("a sender's decoder reads no payload");
            };
            if s.rx_at == s.rx_len {
                match s.conn.recv(&mut s.rx) {
                    Ok(Recv::Got(k)) => (s.rx_at, s.rx_len) = (0, k),
                    Ok(Recv::WouldBlock) => return Ok(None),
                    Ok(Recv::Eof) => {
                        s.decoder.eof()?;
                        return Err(NetError::Closed {
                            peer: s.conn.peer.clone(),
                            offset: acked,
                        });
                    }
                    Err(e) => return Err(io_err(&s.conn.peer, acked, "recv", &e)),
                }
            }
            let got = n.min(s.rx_len - s.rx_at);
            s.decoder.control_space()[..got].copy_from_slice(&s.rx[s.rx_at..s.rx_at + got]);
            s.rx_at += got;
            if let Some(event) = s.decoder.control_filled(got)? {
                s.greeted = true;
                return Ok(Some((event, s.conn.peer.clone())));
            }
        }
    }

    /// The receiver's WELCOME: checked (whole vectors; a resume offset within what was kept,
    /// or sent; a history retention can hold), then the stream resumes where it says. Items
    /// below what the queue still holds were dropped while the peer was away: a GAP says so.
    fn on_welcome(
        &mut self,
        w: Welcome,
        peer: &str,
        read: u64,
        written: u64,
        capacity: usize,
    ) -> Result<(), NetError> {
        self.check_welcome(&w, peer, written, capacity)?;
        self.history = self.history.max(w.history);
        self.state.welcomed();
        if self.opts.fence.is_some() {
            self.acked = self.acked.max(w.resume);
            self.was_primary = true;
        }
        let SinkState::Streaming { session: s } = &mut self.state else {
            return Ok(());
        };
        // Items below what the queue still holds were dropped while the peer was away: say
        // so, and go on from the oldest item kept.
        let from = w.resume.max(read);
        if let Some(m) = w.messages {
            self.outbox
                .check_resume(m, from)
                .map_err(|what| NetError::Protocol {
                    peer: peer.to_string(),
                    offset: self.acked,
                    kind: "WELCOME",
                    what,
                })?;
            s.msg_sent = m;
        }
        if from > w.resume {
            s.conn
                .send_control(&wire::gap(w.resume, from), CONTROL_WAIT)
                .map_err(|e| io_err(peer, w.resume, "send GAP", &e))?;
            for mut tag in self.carried.drain(..) {
                tag.index = from;
                self.tags.push_front(tag);
            }
        }
        s.sent = from;
        // The receiver's credit counts from its resume offset; the gap is room.
        s.credit = w.credit.saturating_add(from - w.resume).max(from);
        let vlen = self.opts.vlen();
        s.max_items = w.max_items as usize / vlen * vlen;
        Ok(())
    }

    /// Refuses a WELCOME this sink cannot follow; a warm partition's first one sets where
    /// its input starts (see [`fence`](crate::fence)).
    fn check_welcome(
        &mut self,
        w: &Welcome,
        peer: &str,
        written: u64,
        capacity: usize,
    ) -> Result<(), NetError> {
        let (vlen, acked) = (self.opts.vlen() as u64, self.acked);
        let refuse = |what: String| NetError::Protocol {
            peer: peer.to_string(),
            offset: acked,
            kind: "WELCOME",
            what,
        };
        if !w.resume.is_multiple_of(vlen)
            || !w.history.is_multiple_of(vlen)
            || u64::from(w.max_items) < vlen
        {
            return Err(refuse(format!(
                "resume offset {}, history {} and largest frame {} items must be whole vectors of {vlen} items (this sender's vlen)",
                w.resume, w.history, w.max_items
            )));
        }
        self.warm_origin(w.resume);
        let floor = self.acked.saturating_sub(self.history);
        // A promoted standby may be behind the receiver: it releases what the receiver has as
        // it comes, and sends from there.
        let beyond = w.resume > written && self.opts.fence.is_none();
        if w.resume < floor {
            return Err(refuse(format!(
                "the receiver resumes at offset {} but acknowledged {} already and declared {} items of history (a receiver that lost what it acknowledged)",
                w.resume, acked, self.history
            )));
        }
        if beyond {
            return Err(refuse(format!(
                "the receiver resumes at offset {} beyond the {written} items this sender has had",
                w.resume
            )));
        }
        if w.history > capacity as u64 / 2 {
            return Err(refuse(format!(
                "the receiver declares {} items of history, but this sender's retention holds {capacity} items, and must keep room to send; raise retention_bytes to at least {} bytes",
                w.history,
                w.history
                    .saturating_mul(2)
                    .saturating_mul(std::mem::size_of::<T>() as u64)
            )));
        }
        Ok(())
    }

    /// An ACK of offset `a` (and, with messages, of the messages below `messages`): checked
    /// against what was sent and acknowledged, then what it covers is released.
    fn on_ack(&mut self, a: u64, messages: Option<u64>, peer: &str) -> Result<(), NetError> {
        let vlen = self.opts.vlen() as u64;
        // A receiver that took over may acknowledge less than its predecessor did, by up to
        // the history it re-primes from.
        let floor = self.acked.saturating_sub(self.history);
        whole_vectors(a, vlen, peer, self.acked)?;
        let Some(s) = self.state.session_mut() else {
            return Ok(());
        };
        // The frames of a batch that is partly written may be acknowledged already.
        let sent = s
            .pending
            .as_ref()
            .and_then(|p| p.frames.last())
            .map_or(s.sent, |f| f.offset + f.items as u64)
            .max(self.acked);
        if a < floor || a > sent {
            return Err(NetError::Protocol {
                peer: peer.to_string(),
                offset: self.acked,
                kind: "ACK",
                what: format!(
                    "acknowledges offset {a}, expected one between {floor} (acknowledged, less the history) and {sent} (sent)"
                ),
            });
        }
        self.acked = self.acked.max(a);
        s.decoder.set_offset(self.acked);
        // An item beyond a message's offset came after the message.
        self.outbox.release(self.acked, false);
        if let Some(messages) = messages {
            let sent = s.pending.as_ref().map_or(s.msg_sent, |p| p.messages_to);
            if messages > sent {
                return Err(NetError::Protocol {
                    peer: peer.to_string(),
                    offset: self.acked,
                    kind: "ACK",
                    what: format!(
                        "acknowledges messages below number {messages}, but this sender sent those below {sent}"
                    ),
                });
            }
            self.outbox.release_seq(messages);
        }
        self.warm_acknowledged();
        Ok(())
    }
}

/// Refuses an ACK of offset `a` inside a vector of `vlen` items (an ACK covers whole vectors).
pub(super) fn whole_vectors(a: u64, vlen: u64, peer: &str, acked: u64) -> Result<(), NetError> {
    if a.is_multiple_of(vlen) {
        return Ok(());
    }
    Err(NetError::Protocol {
        peer: peer.to_string(),
        offset: acked,
        kind: "ACK",
        what: format!(
            "acknowledges offset {a}, inside a vector of {vlen} items (an ACK covers whole vectors)"
        ),
    })
}
