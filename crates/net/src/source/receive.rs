//! The receive loop of a connected `tcp_source` (greeting or streaming): each turn reads what
//! the decoder needs, control bytes through a small read-ahead, a DATA frame's payload
//! straight into the output queue's reservation, and takes the event that completes. A
//! frame's items are committed, with their tags (rebased from stream offsets to queue
//! indices), once the whole frame is there.

use super::ledger::Ledger;
use super::TcpSource;
use crate::conn::{io_err, Conn, Recv};
use crate::decoder::{Decoder, Event, Need};
use crate::options::TcpOptions;
use crate::wire::{CRC_LEN, DATA_HEAD_LEN, HEADER_LEN};
use crate::NetError;
use sluice_runtime::{metadata, Item, NodeError, Output, Tag, TagValue, Work};
use std::io::IoSliceMut;

/// Control bytes read ahead after a payload: the most that can follow a payload before the
/// next payload byte (a CRC trailer and the 28-byte head of the next DATA frame).
const STASH: usize = CRC_LEN + HEADER_LEN + DATA_HEAD_LEN;

/// A DATA frame whose payload is at most this many bytes is small: after it, the receiver
/// reads ahead up to [`READ_AHEAD`] bytes at once and copies the next small frames' payloads
/// from there, one copy instead of two system calls per frame (libzmq's decoder does the same
/// for every message). Larger frames are read straight into the queue.
const SMALL_FRAME: usize = 8 << 10;

/// The read-ahead buffer of small frames (it also holds the stash).
const READ_AHEAD: usize = 64 << 10;

/// Receive loop turns that read the socket per `work` call, so that a fast peer does not keep
/// the node from returning to the scheduler (turns served from the read-ahead do not count:
/// it holds at most [`READ_AHEAD`] bytes).
const TURNS: usize = 64;

/// The DATA frame being received.
#[derive(Debug)]
struct Frame {
    items: usize,
    tags: Vec<Tag>,
    /// Where the reservation started when the first payload bytes went in.
    at: Option<usize>,
}

/// A connection to the sender, and what its receive loop keeps between turns.
#[derive(Debug)]
pub(super) struct Session {
    pub(super) conn: Conn,
    pub(super) decoder: Decoder,
    /// What the sender's HELLO asked for: CRC trailers, and messages (false until it came).
    pub(super) crc: bool,
    pub(super) messages: bool,
    frame: Option<Frame>,
    /// Bytes read ahead of the decoder: `stash_at..stash_len` (at most [`STASH`] after a large
    /// frame, up to [`READ_AHEAD`] after a small one).
    stash: Vec<u8>,
    stash_at: usize,
    stash_len: usize,
    /// Whether the last DATA frame was small (see [`SMALL_FRAME`]).
    small: bool,
    /// Whether the last read took all the socket had (it returned less than asked for): the
    /// next read waits for `poll` to say more came.
    drained: bool,
}

/// What one read of the receive loop gave.
enum Read {
    /// The bytes the decoder took, and the event they completed, if any.
    Event(Option<Event>),
    /// Nothing more to read now.
    Idle,
    /// The output queue has no room for the frame's items.
    NeedOutput(usize),
}

/// How the receive loop ended its turns.
pub(super) enum Step {
    Moved,
    Idle,
    NeedOutput(usize),
    End(u64),
    /// A message came: hand it on before reading more.
    Message,
}

impl<T: Item> TcpSource<T> {
    /// Greeting or streaming: runs the receive loop, acknowledges what came when an ACK is
    /// due, and then ends (END), waits for room, or waits on the socket.
    pub(super) fn stream(&mut self, out: &mut Output<T>) -> Result<Work, NodeError> {
        self.look_for_replicas(out)?;
        if !self.state.connected() {
            return Ok(Work::Progress);
        }
        let capacity = out.capacity();
        let (outcome, moved) = match self.turns(out) {
            Ok(turns) => turns,
            Err(e) => {
                self.lose(e)?;
                return Ok(Work::Progress);
            }
        };
        let received = self.received(out);
        let idle = !matches!(outcome, Step::Moved);
        if let Err(e) = self.acknowledge_due(received, capacity, idle) {
            self.lose(e)?;
            return Ok(Work::Progress);
        }
        match outcome {
            Step::End(end) => self.end(end, capacity),
            Step::NeedOutput(items) => Ok(Work::NeedOutput { port: 0, items }),
            _ if moved => {
                self.backoff.reset();
                self.spun = false;
                Ok(Work::Progress)
            }
            _ => self.idle(received),
        }
    }

    /// The turns of the receive loop (at most [`TURNS`] that read the socket): how they ended,
    /// and whether anything moved.
    fn turns(&mut self, out: &mut Output<T>) -> Result<(Step, bool), NetError> {
        let mut moved = false;
        let mut turns = 0;
        while turns < TURNS {
            let Some(s) = self.state.session_mut() else {
                break;
            };
            if s.stash_at == s.stash_len {
                turns += 1;
            }
            let event = match s.read(out)? {
                Read::Event(event) => event,
                Read::Idle => return Ok((Step::Idle, moved)),
                Read::NeedOutput(items) => return Ok((Step::NeedOutput(items), moved)),
            };
            let step = match event {
                None => Step::Moved,
                Some(Event::Hello(hello)) => {
                    self.welcome(hello, out)?;
                    Step::Moved
                }
                Some(event) => {
                    if let Event::DataBegin { .. } = event {
                        self.fenced.items_came();
                    }
                    s.take(event, &mut self.ledger, &self.opts, out)?
                }
            };
            match step {
                Step::Moved => moved = true,
                Step::Message => return Ok((Step::Idle, true)),
                step => return Ok((step, moved)),
            }
        }
        Ok((Step::Idle, moved))
    }

    /// Nothing came: the peer is lost once silent for `peer_timeout`; else, once after
    /// something came, look for more without sleeping (`opts.spin`), then wait on the socket.
    fn idle(&mut self, received: u64) -> Result<Work, NodeError> {
        let Some(s) = self.state.session_mut() else {
            return Ok(Work::Progress);
        };
        let silent = s.conn.last_rx.elapsed();
        if silent > self.opts.peer_timeout {
            let cause = NetError::Silent {
                peer: s.conn.peer.clone(),
                offset: received,
                secs: silent.as_secs_f64(),
            };
            self.lose(cause)?;
            return Ok(Work::Progress);
        }
        if !self.spun && !self.opts.spin.is_zero() {
            self.spun = true;
            if s.conn.spin_readable(self.opts.spin) {
                s.drained = false;
                return Ok(Work::Progress);
            }
        }
        s.conn.wait(false, self.backoff.next());
        s.drained = false;
        Ok(Work::Progress)
    }
}

impl Session {
    /// A new connection's session, its decoder at the resume offset.
    pub(super) fn new(conn: Conn, decoder: Decoder) -> Session {
        Session {
            conn,
            decoder,
            crc: false,
            messages: false,
            frame: None,
            stash: vec![0; READ_AHEAD],
            stash_at: 0,
            stash_len: 0,
            small: false,
            drained: false,
        }
    }

    /// One read of the receive loop: what the decoder needs next, from the read-ahead or the
    /// socket (a payload into the output queue's reservation).
    fn read<T: Item>(&mut self, out: &mut Output<T>) -> Result<Read, NetError> {
        match self.decoder.need() {
            Need::Control(n) => self.read_control(n),
            Need::Payload(remaining) => self.read_payload(out, remaining),
        }
    }

    /// Reads up to `n` control bytes (a header, a frame's fixed part or tags).
    fn read_control(&mut self, n: usize) -> Result<Read, NetError> {
        if self.stash_at == self.stash_len && self.decoder.between_frames() {
            if self.drained {
                return Ok(Read::Idle);
            }
            // At a frame boundary the next 28 bytes are control bytes whatever comes (a DATA
            // frame's header and fixed part, or control frames and the start of the next):
            // one read takes them all instead of one per header part.
            let ahead = if self.small {
                READ_AHEAD
            } else {
                HEADER_LEN + DATA_HEAD_LEN
            };
            match self.conn.recv(&mut self.stash[..ahead]) {
                Ok(Recv::Got(k)) => {
                    (self.stash_at, self.stash_len, self.drained) = (0, k, k < ahead);
                }
                Ok(Recv::WouldBlock) => return Ok(Read::Idle),
                Ok(Recv::Eof) => return Err(self.eof()),
                Err(e) => return Err(self.recv_err(&e)),
            }
        }
        let got = if self.stash_at < self.stash_len {
            let k = n.min(self.stash_len - self.stash_at);
            self.decoder.control_space()[..k]
                .copy_from_slice(&self.stash[self.stash_at..self.stash_at + k]);
            self.stash_at += k;
            k
        } else {
            match self.conn.recv(self.decoder.control_space()) {
                Ok(Recv::Got(k)) => k,
                Ok(Recv::WouldBlock) => return Ok(Read::Idle),
                Ok(Recv::Eof) => return Err(self.eof()),
                Err(e) => return Err(self.recv_err(&e)),
            }
        };
        Ok(Read::Event(self.decoder.control_filled(got)?))
    }

    /// Reads up to `remaining` bytes of the frame's payload into its reservation in `out`
    /// (and, for a large frame, the control bytes that follow into the stash).
    fn read_payload<T: Item>(
        &mut self,
        out: &mut Output<T>,
        remaining: usize,
    ) -> Result<Read, NetError> {
        let items = self.frame.as_ref().map_or(0, |f| f.items);
        let Some(space) = out
            .reserve(items)
            .map_err(|e| NetError::Config(e.to_string()))?
        else {
            return Ok(Read::NeedOutput(items));
        };
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut space[..items]);
        let frame = self.frame.as_mut().expect("a payload belongs to a frame");
        let here = bytes.as_ptr() as usize;
        if *frame.at.get_or_insert(here) != here {
            return Err(NetError::Config(format!(
                "queue '{}' moved a reservation between calls; tcp_source needs the mirrored queue",
                "out"
            )));
        }
        let done = self.decoder.payload_done();
        let dest = &mut bytes[done..done + remaining];
        let got = if self.stash_at < self.stash_len {
            // Small frames read ahead (or a frame shorter than the stash): the payload moves
            // from the stash.
            let k = remaining.min(self.stash_len - self.stash_at);
            dest[..k].copy_from_slice(&self.stash[self.stash_at..self.stash_at + k]);
            self.stash_at += k;
            k
        } else {
            let ahead = if self.small {
                READ_AHEAD
            } else if self.crc {
                STASH
            } else {
                STASH - CRC_LEN
            };
            let (dest_len, stash) = (dest.len(), &mut self.stash[..ahead]);
            let mut iov = [IoSliceMut::new(dest), IoSliceMut::new(stash)];
            match self.conn.recv_vectored(&mut iov) {
                Ok(Recv::Got(k)) => {
                    self.drained = k < dest_len + ahead;
                    if k > dest_len {
                        self.stash_at = 0;
                        self.stash_len = k - dest_len;
                    }
                    k.min(dest_len)
                }
                Ok(Recv::WouldBlock) => return Ok(Read::Idle),
                Ok(Recv::Eof) => return Err(self.eof()),
                Err(e) => return Err(self.recv_err(&e)),
            }
        };
        Ok(Read::Event(
            self.decoder.payload_filled(&bytes[done..done + got])?,
        ))
    }

    /// The peer closed: the decoder's error if it was inside a frame, else `Closed`.
    fn eof(&self) -> NetError {
        match self.decoder.eof() {
            Err(e) => e,
            Ok(()) => NetError::Closed {
                peer: self.conn.peer.clone(),
                offset: self.decoder.offset(),
            },
        }
    }

    fn recv_err(&self, e: &std::io::Error) -> NetError {
        io_err(&self.conn.peer, self.decoder.offset(), "recv", e)
    }

    /// Takes an event of the stream (any but the HELLO, which the sender's WELCOME answers).
    fn take<T: Item>(
        &mut self,
        event: Event,
        ledger: &mut Ledger,
        opts: &TcpOptions,
        out: &mut Output<T>,
    ) -> Result<Step, NetError> {
        match event {
            Event::DataBegin {
                offset,
                items,
                tags,
            } => {
                let size = std::mem::size_of::<T>();
                self.begin_frame(ledger, opts, (offset, items, tags), size, out.capacity())?;
            }
            Event::Gap { from, to } => ledger.gap(out, to - from),
            Event::DataEnd { items, .. } => self.commit_frame(out, items as usize)?,
            Event::End(end) => return Ok(Step::End(end)),
            Event::Heartbeat => {}
            Event::Message { seq, message, .. } => {
                ledger.next_message = seq + 1;
                ledger.held = Some(message);
                return Ok(Step::Message);
            }
            other => unreachable!("a receiver's decoder gives no {other:?}"),
        }
        Ok(Step::Moved)
    }

    /// A DATA frame of `items` items at `offset` begins: it must fit the queue (of `capacity`
    /// items of `size` bytes) and the tag budget; its tags move from stream offsets to queue
    /// indices.
    fn begin_frame(
        &mut self,
        ledger: &mut Ledger,
        opts: &TcpOptions,
        (offset, items, tags): (u64, u32, Vec<Tag>),
        size: usize,
        capacity: usize,
    ) -> Result<(), NetError> {
        if items as usize > capacity {
            return Err(NetError::Protocol {
                peer: self.conn.peer.clone(),
                offset,
                kind: "DATA",
                what: format!(
                    "{items} items in one frame, more than the {capacity} this end said it takes"
                ),
            });
        }
        let end = offset.saturating_add(u64::from(items));
        let cost = (tags.len(), self.decoder.last_tag_bytes());
        let limits = (opts.tag_budget, opts.tag_budget_bytes);
        if let Err(what) = ledger.tag_window.admit(end, capacity as u64, cost, limits) {
            return Err(NetError::TagBudget {
                peer: self.conn.peer.clone(),
                offset,
                what,
            });
        }
        self.small = items as usize * size <= SMALL_FRAME;
        // Tags travel by stream offset (inside the frame, checked by the decoder); the queue
        // counts only the items it has.
        let skipped = ledger.skipped;
        let tags = tags
            .into_iter()
            .map(|mut t| {
                t.index = t.index.saturating_sub(skipped);
                t
            })
            .collect();
        self.frame = Some(Frame {
            items: items as usize,
            tags,
            at: None,
        });
        Ok(())
    }

    /// The frame's payload is all there (and its CRC matched): its `items` are committed,
    /// with its tags.
    fn commit_frame<T: Item>(&mut self, out: &mut Output<T>, items: usize) -> Result<(), NetError> {
        let frame = self.frame.take().expect("DataEnd follows DataBegin");
        // Re-reserve (the same space) so that the commit belongs to this call.
        if out
            .reserve(items)
            .map_err(|e| NetError::Config(e.to_string()))?
            .is_none()
        {
            unreachable!("the frame's space was reserved and nothing else writes");
        }
        for tag in frame.tags {
            out.push_tag(tag);
        }
        out.commit(items);
        Ok(())
    }
}

impl Ledger {
    /// The sender reported a gap of `lost` items (dropped while this end was away): marked
    /// with a [`GAP`](metadata::GAP) tag on the first item after it.
    fn gap<T: Item>(&mut self, out: &mut Output<T>, lost: u64) {
        out.push_tag(Tag::new(
            out.items_written(),
            metadata::GAP,
            TagValue::U64(lost),
        ));
        self.skipped = self.skipped.saturating_add(lost);
        self.gaps += 1;
        self.gap_items = self.gap_items.saturating_add(lost);
    }
}
