//! `zmq_pull_source`, `zmq_sub_source`, `zmq_req_source`: gr-zeromq's sources. A message's
//! items are read from the socket straight into the output queue's reservation (gr-zeromq
//! copies each message out of libzmq's buffer instead); the tag header, when `pass_tags` is on,
//! is parsed from the read-ahead buffer, and its tags are put on the items they name.
//!
//! A message's offset (in the tag header) tells how many items the sender produced before it:
//! when it is beyond where the last message ended, this end missed items (a SUB that
//! reconnected, or a PUB that dropped at its high-water mark), and the first item after the
//! hole gets a [`GAP`](sluice_runtime::metadata::GAP) tag with the count.

use crate::tag_header::{self, HeaderError};
use crate::{Sent, Socket, SocketOptions, SocketType, ZmqError, ZmqOptions, READ_AHEAD};
use sluice_runtime::{metadata, Item, Node, NodeError, Output, Ports, Tag, TagValue, Work, WorkIo};
use std::marker::PhantomData;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between messages.
    Idle,
    /// Skipping a frame (the PUB key).
    Skip,
    /// Reading the tag header of a frame.
    Header,
    /// Reading items: `left` still to come of the message, `done` committed.
    Payload { left: u64, done: u64 },
    /// Reading a message of `items` that fits the output queue: its bytes go into one
    /// reservation and are committed when the last one came, so that a peer that stops in
    /// the middle leaves nothing of its message in the stream.
    Whole { items: u64 },
}

/// A gr-zeromq-compatible source of `T` items over a PULL, SUB or REQ socket.
#[derive(Debug)]
pub struct ZmqSource<T> {
    socket: Socket,
    opts: ZmqOptions,
    state: State,
    /// Bytes of an incomplete item at the start of the reservation.
    partial: usize,
    /// The current message's tags, indexed from its first item.
    tags: Vec<Tag>,
    /// REQ: a request is out and its reply has not come.
    asked: bool,
    /// SUB: the key frame was skipped; the next frame is the message (with its header).
    after_key: bool,
    /// The sender's offset after the last message (from tag headers).
    next_offset: Option<u64>,
    missed: u64,
    gaps: u64,
    lost_messages: u64,
    messages: u64,
    _items: PhantomData<T>,
}

enum Step {
    Moved,
    Idle,
    NeedOutput(usize),
}

impl<T: Item> ZmqSource<T> {
    /// A source on a socket of `kind` (PULL, SUB or REQ) with `opts`.
    pub fn new(kind: SocketType, opts: ZmqOptions) -> Result<Self, ZmqError> {
        if !matches!(kind, SocketType::Pull | SocketType::Sub | SocketType::Req) {
            return Err(ZmqError::Config(format!(
                "a source needs a PULL, SUB or REQ socket, not {}",
                kind.name()
            )));
        }
        let sopts = SocketOptions {
            subscribe: opts.key.clone(),
            ..opts.socket_options()
        };
        Ok(ZmqSource {
            socket: Socket::new(kind, &opts.address, opts.bind, sopts)?,
            opts,
            state: State::Idle,
            partial: 0,
            tags: Vec::new(),
            asked: false,
            after_key: false,
            next_offset: None,
            missed: 0,
            gaps: 0,
            lost_messages: 0,
            messages: 0,
            _items: PhantomData,
        })
    }

    /// The bound address, for a source that binds.
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.socket.local_addr()
    }

    /// Items the sender produced that never arrived (from tag header offsets).
    pub fn missed(&self) -> u64 {
        self.missed
    }

    fn bad(&self, what: String) -> ZmqError {
        ZmqError::TagHeader {
            peer: self.opts.address.clone(),
            what,
        }
    }

    /// Starts the payload of a frame of `len` bytes, into an output of `capacity` items.
    fn begin_payload(&mut self, len: u64, capacity: usize) -> Result<(), ZmqError> {
        let size = std::mem::size_of::<T>() as u64;
        if !len.is_multiple_of(size) {
            return Err(ZmqError::Protocol {
                peer: self.opts.address.clone(),
                what: format!(
                    "a message of {len} bytes is not a whole number of {size}-byte items (item type or pass_tags differ from the sender's?)"
                ),
            });
        }
        let items = len / size;
        self.state = if items <= capacity as u64 {
            State::Whole { items }
        } else {
            State::Payload {
                left: items,
                done: 0,
            }
        };
        Ok(())
    }

    /// A peer error while a message was coming (the peer left, stalled, or sent what cannot
    /// be taken): what came of the message is dropped and the source goes on with the next.
    fn lost(&mut self, e: ZmqError) -> Result<Step, NodeError> {
        if !e.is_peer() {
            return Err(e.into());
        }
        if self.state != State::Idle || self.partial > 0 {
            self.lost_messages += 1;
        }
        self.partial = 0;
        self.state = State::Idle;
        self.after_key = false;
        self.asked = false;
        self.tags.clear();
        Ok(Step::Moved)
    }

    /// A message this end cannot take: its peer is closed (counted, logged) and the message
    /// dropped.
    fn refuse(&mut self, e: ZmqError) -> Result<Step, NodeError> {
        self.socket.refuse_current(&e);
        self.lost(e)
    }

    fn step(&mut self, out: &mut Output<T>) -> Result<Step, NodeError> {
        match self.state {
            State::Idle => {
                if self.socket.kind() == SocketType::Req && !self.asked {
                    let Some(space) = out.reserve(1)? else {
                        return Ok(Step::NeedOutput(1));
                    };
                    let n = u32::try_from(space.len()).unwrap_or(u32::MAX).to_le_bytes();
                    match self.socket.send(&[&[&n]])? {
                        Sent::Done => self.asked = true,
                        Sent::Pending | Sent::NoPeer => return Ok(Step::Idle),
                    }
                }
                let Some(frame) = self.socket.next_frame()? else {
                    return Ok(Step::Idle);
                };
                if !frame.more {
                    self.asked = false;
                }
                self.tags.clear();
                if self.socket.kind() == SocketType::Sub
                    && !self.opts.key.is_empty()
                    && frame.first
                    && frame.more
                {
                    self.state = State::Skip;
                } else if self.opts.pass_tags && (frame.first || self.after_key) {
                    self.after_key = false;
                    self.state = State::Header;
                } else if let Err(e) = self.begin_payload(frame.len, out.capacity()) {
                    return self.refuse(e);
                }
                Ok(Step::Moved)
            }
            State::Skip => {
                let left = self.socket.remaining();
                match self.socket.skip(left) {
                    Ok(0) if left > 0 => return Ok(Step::Idle),
                    Ok(_) => {}
                    Err(e) => return self.lost(e),
                }
                if self.socket.remaining() == 0 {
                    self.state = State::Idle;
                    self.after_key = true;
                }
                Ok(Step::Moved)
            }
            State::Header => {
                let remaining = self.socket.remaining() as usize;
                let mut n = remaining.min(256);
                loop {
                    let bytes = match self.socket.peek(n) {
                        Ok(Some(bytes)) => bytes,
                        Ok(None) => return Ok(Step::Idle),
                        Err(e) => return self.lost(e),
                    };
                    match tag_header::decode(bytes) {
                        Ok((h, len)) => {
                            if let Err(e) = self.socket.skip(len as u64) {
                                return self.lost(e);
                            }
                            let rest = self.socket.remaining();
                            if let Err(e) = self.begin_payload(rest, out.capacity()) {
                                return self.refuse(e);
                            }
                            let items = match self.state {
                                State::Payload { left, .. } => left,
                                State::Whole { items } => items,
                                _ => 0,
                            };
                            // The offset is the peer's: one that would pass u64::MAX is its
                            // protocol error, not an overflow here.
                            let Some(next) = h.offset.checked_add(items) else {
                                let e = self.bad(format!(
                                    "offset {} plus {items} items passes the largest offset",
                                    h.offset
                                ));
                                return self.refuse(e);
                            };
                            self.on_header(h.offset, h.tags, out);
                            self.next_offset = Some(next);
                            return Ok(Step::Moved);
                        }
                        // A PMT cut short can read as malformed (a length beyond the end):
                        // decide only once every byte the header may take is there.
                        Err(_) if n < remaining.min(READ_AHEAD) => {
                            n = (2 * n).min(remaining).min(READ_AHEAD);
                        }
                        Err(HeaderError::Truncated) => {
                            let e = self.bad(format!(
                                "the header does not end within the message's first {n} bytes"
                            ));
                            return self.refuse(e);
                        }
                        Err(HeaderError::Bad(m)) => {
                            let e = self.bad(m);
                            return self.refuse(e);
                        }
                    }
                }
            }
            State::Payload { left, done } => {
                if left == 0 {
                    self.state = State::Idle;
                    self.messages += 1;
                    return Ok(Step::Moved);
                }
                let size = std::mem::size_of::<T>();
                let Some(space) = out.reserve(1)? else {
                    return Ok(Step::NeedOutput(1));
                };
                let k = space.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut space[..k]);
                let got = match self.socket.read_into(&mut bytes[self.partial..]) {
                    Ok(got) => got,
                    // The peer left mid-message: what it sent of it is dropped.
                    Err(e) => return self.lost(e),
                };
                if got == 0 {
                    return Ok(Step::Idle);
                }
                self.partial += got;
                let whole = self.partial / size;
                if whole > 0 {
                    let base = out.items_written();
                    let end = done.saturating_add(whole as u64);
                    for t in self
                        .tags
                        .iter()
                        .filter(|t| t.index >= done && t.index < end)
                    {
                        out.push_tag(Tag {
                            index: base + (t.index - done),
                            ..t.clone()
                        });
                    }
                    out.commit(whole);
                    self.partial -= whole * size;
                    self.state = State::Payload {
                        left: left.saturating_sub(whole as u64),
                        done: end,
                    };
                }
                Ok(Step::Moved)
            }
            State::Whole { items } => {
                // ≤ the queue's capacity: the message fits one reservation.
                let n = items as usize;
                let Some(space) = out.reserve(n.max(1))? else {
                    return Ok(Step::NeedOutput(n.max(1)));
                };
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut space[..n]);
                let total = bytes.len();
                let got = if self.partial < total {
                    match self.socket.read_into(&mut bytes[self.partial..]) {
                        Ok(got) => got,
                        // The peer left or stalled mid-message: nothing of it was committed.
                        Err(e) => return self.lost(e),
                    }
                } else {
                    0
                };
                self.partial += got;
                if self.partial < total {
                    return Ok(if got == 0 { Step::Idle } else { Step::Moved });
                }
                let base = out.items_written();
                for t in self.tags.iter().filter(|t| t.index < items) {
                    out.push_tag(Tag {
                        index: base + t.index,
                        ..t.clone()
                    });
                }
                out.commit(n);
                self.partial = 0;
                self.state = State::Idle;
                self.messages += 1;
                Ok(Step::Moved)
            }
        }
    }

    /// Takes a message's header: its tags (made relative to the message) and the offset check.
    fn on_header(&mut self, offset: u64, tags: Vec<Tag>, out: &Output<T>) {
        if let Some(expected) = self.next_offset {
            if offset > expected {
                let lost = offset - expected;
                self.missed = self.missed.saturating_add(lost);
                self.gaps += 1;
                out.push_tag(Tag::new(
                    out.items_written(),
                    metadata::GAP,
                    TagValue::U64(lost),
                ));
            }
        }
        self.tags = tags
            .into_iter()
            .filter(|t| t.index >= offset)
            .map(|t| Tag {
                index: t.index - offset,
                ..t
            })
            .collect();
    }
}

impl<T: Item> Node for ZmqSource<T> {
    fn ports(&self) -> Ports {
        Ports::new().output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if io.stop_requested() {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<T>(0)?;
        let mut moved = false;
        for _ in 0..256 {
            match self.step(out)? {
                Step::Moved => moved = true,
                Step::NeedOutput(items) if !moved => {
                    return Ok(Work::NeedOutput { port: 0, items })
                }
                Step::NeedOutput(_) => break,
                Step::Idle => {
                    if !moved {
                        // Nothing came: a downstream that has gone ends this node here
                        // (OutputClosed), not only when the next message arrives.
                        out.reserve(1)?;
                        self.socket.wait(self.opts.slice(), false);
                    }
                    break;
                }
            }
        }
        Ok(Work::Progress)
    }

    fn stop(&mut self) {
        self.socket.linger(std::time::Duration::from_millis(100));
    }

    fn warnings(&mut self) -> Vec<String> {
        let mut w = Vec::new();
        if self.missed > 0 {
            w.push(format!(
                "missed {} items in {} gaps (the sender's offsets jumped: a reconnect, or its high-water mark); each gap is marked with a '{}' tag",
                self.missed,
                self.gaps,
                metadata::GAP
            ));
        }
        if self.lost_messages > 0 {
            w.push(format!(
                "{} messages were cut short by a peer that left or stalled mid-message, or was refused, and dropped",
                self.lost_messages
            ));
        }
        w.extend(crate::sink::refusals(&self.socket));
        w
    }
}
