//! `tcp_source`: receives a stream from a peer straight into the output queue's reservation.
//!
//! Each DATA frame's payload is read from the socket into the reservation for its items (the
//! ring is the receive buffer); only headers and tags pass through a small buffer. A frame's
//! items are committed, with their tags, once the whole frame is there (and its CRC matched,
//! when on), so what the graph receives is always whole frames: after a lost connection the
//! WELCOME of the next one asks the sender to resume at the first item not committed.
//!
//! Stream offsets and the output queue's item indices differ by what this receiver never
//! had: the items before its start offset and the gaps the sender reported (items it
//! dropped while this end was away). A gap is marked with a [`GAP`](metadata::GAP) tag on
//! the first item after it.
//!
//! A `fenced` receiver serves a partition that runs as primary and hot standby (see
//! [`fence`](crate::fence)): it keeps accepting connections while one is open. A standby's
//! (HELLO revision 0) is kept and told, in a WELCOME and then in every ACK, what has been
//! received; a primary's displaces the current primary if its lease revision is at least as
//! new, and is refused if it is older, so a primary that lost its lease never writes again.
//! With `fenced_by`, a revision above the current one must first pass the process's
//! [`RevisionCheck`](crate::fence::RevisionCheck) (a cluster worker asks etcd): a forged one
//! is refused and the current primary keeps the stream.
//! The promoted standby resumes at the receiver's offset like any reconnecting sender.
//!
//! With [`TcpOptions::messages`] the source also has a message output: the MESSAGE frames of
//! the stream (see [`message`](crate::message)) are sent on it in order, each once the items
//! below its offset are committed; a full inbox holds the receive loop back, as a full output
//! queue does. Its WELCOME tells a reconnecting sender the first message it lacks.
//!
//! The node is a state machine ([`state`]): it waits for a sender (connecting, then resuming
//! after a loss), greets it, streams, and ends closed or, after an error, draining. Its parts:
//!
//! * [`state`]: the states and the moves between them (a lost connection, a timeout);
//! * [`connect`]: getting a connection (connecting, or a listener's acceptor) and refusing one;
//! * [`receive`]: the receive loop of a connected source, frame by frame into the queue;
//! * [`ledger`]: what was received and what the sender was told (WELCOME, ACK, CREDIT);
//! * [`fenced`]: a fenced receiver's primary and standbys, and its takeovers.

mod connect;
mod fenced;
mod ledger;
mod receive;
mod state;

use crate::accept::Acceptor;
use crate::conn::Endpoint;
use crate::decoder::{Decoder, Role};
use crate::options::{Backoff, TcpOptions};
use crate::NetError;
use connect::Arrival;
use fenced::Fenced;
use ledger::Ledger;
use sluice_runtime::{
    metadata, Item, ItemType, MessageKind, Node, NodeError, Output, Ports, Sent, Tag, Work, WorkIo,
};
use state::SourceState;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// How long a small control frame (WELCOME, ACK, CREDIT) may wait for room in the socket.
const CONTROL_WAIT: Duration = Duration::from_secs(1);

/// The index of the message output of a source with messages (after the stream output).
const MSG_PORT: usize = 1;

/// What `work` answers while the message output's inbox is full.
const MESSAGE_OUTPUT_FULL: Work = Work::NeedOutput {
    port: MSG_PORT,
    items: 1,
};

/// Receives a stream of `T` over TCP (see the crate docs and `docs/net/wire.md`).
#[derive(Debug)]
pub struct TcpSource<T> {
    endpoint: Endpoint,
    /// A listening source's acceptor (started when the source first waits for a sender):
    /// new connections complete their handshake and HELLO there, off the receive thread.
    acceptor: Option<Acceptor<Arrival>>,
    /// The acceptor's warning, kept when it closed with the stream's end.
    accept_warning: Option<String>,
    /// The last peer refused by authentication, and why (for the timeout's message).
    refused: Option<String>,
    opts: TcpOptions,
    /// Where the source stands: waiting for a sender, connected to one, or ended.
    state: SourceState,
    /// What was received and what the sender was told.
    ledger: Ledger,
    /// Fenced: the current primary's lease revision, the standbys, the takeovers.
    fenced: Fenced,
    backoff: Backoff,
    /// Whether the spin (`opts.spin`) after the last frame was spent already.
    spun: bool,
    /// The stream offset at which a stop ended the stream while no sender was connected.
    cut_by_stop: Option<u64>,
    _items: PhantomData<T>,
}

impl<T: Item> TcpSource<T> {
    /// A source for `url` (`tcp://host:port` connects, `tcp-listen://host:port` listens).
    pub fn new(url: &str, opts: TcpOptions) -> Result<Self, NetError> {
        crate::sink::check_vlen(&opts)?;
        let start = opts.start_offset;
        if !start.is_multiple_of(opts.vlen() as u64) {
            return Err(NetError::Config(format!(
                "start offset {start} lies inside a vector of {} items (vlen): a receiver starts at a whole vector",
                opts.vlen()
            )));
        }
        if opts.messages && (opts.fenced || opts.warm_fence.is_some()) {
            return Err(NetError::Config(
                "messages beside the stream are not carried by a fenced or warm receiver (a takeover's receiver would start without them)".into(),
            ));
        }
        let endpoint = Endpoint::parse(url)?;
        opts.check_listener(&endpoint)?;
        if opts.fenced && !matches!(endpoint, Endpoint::Listen(_)) {
            return Err(NetError::Config(format!(
                "a fenced receiver listens (tcp-listen://host:port) for its primary and standbys, not '{url}'"
            )));
        }
        Ok(TcpSource {
            endpoint,
            acceptor: None,
            accept_warning: None,
            refused: None,
            opts,
            state: SourceState::Connecting {
                since: Instant::now(),
            },
            ledger: Ledger::new(start),
            fenced: Fenced::default(),
            backoff: Backoff::new(),
            spun: false,
            cut_by_stop: None,
            _items: PhantomData,
        })
    }

    /// The address a listening source is bound to.
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.endpoint.local_addr()
    }

    /// The stream metadata the sender's last HELLO carried.
    pub fn metadata(&self) -> &[Tag] {
        &self.ledger.metadata
    }

    /// A receiver's decoder for a connection with `peer` that resumes at `received`.
    fn decoder(&self, peer: &str, received: u64) -> Decoder {
        let item = ItemType::of::<T>();
        let decoder = Decoder::new(
            Role::Receiver,
            peer,
            self.opts.max_frame,
            Some((item.name(), item.size() as u32)),
            received,
        )
        .with_vlen(self.opts.vlen() as u32)
        .with_max_tags(self.opts.max_tags_per_frame);
        if self.opts.messages {
            decoder.with_messages(self.ledger.next_message)
        } else {
            decoder
        }
    }

    /// The stream offset this end has received up to (the first it does not have).
    fn received(&self, out: &Output<T>) -> u64 {
        self.ledger.received(out.items_written())
    }

    /// Sends the message received last to the message output: false while its inbox is full
    /// (the node waits for room before it reads more).
    fn hand_on(&mut self, io: &mut WorkIo<'_>) -> Result<bool, NodeError> {
        let Some(message) = self.ledger.held.take() else {
            return Ok(true);
        };
        match io.outputs.message(MSG_PORT)?.send(message) {
            Ok(Sent::Delivered) => Ok(true),
            Ok(Sent::Full(message)) => {
                self.ledger.held = Some(message);
                Ok(false)
            }
            Err(NodeError::OutputClosed { .. }) => {
                // Nobody reads messages any more: the stream goes on without them.
                self.ledger.msg_unread += 1;
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    /// A graph told to stop that kept this source running (a cluster host's stream receiver,
    /// see `RunOptions::spared_by_stop`) ends it with its sender's stream; but with no sender
    /// connected (it failed, or never came) there is nothing to wait for.
    fn cut(&mut self, out: &Output<T>) -> Work {
        self.cut_by_stop = Some(self.received(out));
        Work::Done
    }

    /// Draining (failed): first let downstream take every item already received (the queue
    /// is drained when all of it is free again), then report the error.
    fn drain(&mut self, out: &mut Output<T>) -> Result<Work, NodeError> {
        let capacity = out.capacity();
        if out.reserve(capacity)?.is_none() {
            return Ok(Work::NeedOutput {
                port: 0,
                items: capacity,
            });
        }
        match std::mem::replace(&mut self.state, SourceState::Closed) {
            SourceState::Draining { error } => Err(error),
            _ => Ok(Work::Done),
        }
    }
}

impl<T: Item> Node for TcpSource<T> {
    fn ports(&self) -> Ports {
        let items = self.opts.frame_items(std::mem::size_of::<T>());
        let mut ports = Ports::new();
        ports.add_output_vectors::<T>("out", self.opts.vlen(), items);
        if self.opts.messages {
            ports.add_message_output("msg", MessageKind::Any);
        }
        ports
    }

    fn init(&mut self) -> Result<(), NodeError> {
        if let SourceState::Connecting { since } = &mut self.state {
            *since = Instant::now();
        }
        Ok(())
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if !self.hand_on(io)? {
            return Ok(MESSAGE_OUTPUT_FULL);
        }
        let stopping = io.stop_requested();
        let out = io.outputs.get::<T>(0)?;
        let received = match &self.state {
            SourceState::Draining { .. } => return self.drain(out),
            _ if stopping && !self.state.connected() => return Ok(self.cut(out)),
            SourceState::Closed => return Ok(Work::Done),
            SourceState::Connecting { .. } | SourceState::Resuming { .. } => self.wait(out),
            SourceState::Greeting { .. } | SourceState::Streaming { .. } => self.stream(out),
        };
        match received {
            Ok(work) => Ok(if self.hand_on(io)? {
                work
            } else {
                MESSAGE_OUTPUT_FULL
            }),
            // An error ends the stream once downstream has what arrived.
            Err(error) => {
                self.state = SourceState::Draining { error };
                self.drain(out)
            }
        }
    }

    fn stop(&mut self) {
        if self.state.connected() {
            self.state = SourceState::Closed;
        }
    }

    fn warnings(&mut self) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .acceptor
            .iter()
            .filter_map(Acceptor::warning)
            .chain(self.accept_warning.clone())
            .collect();
        warnings.extend(self.fenced.failovers());
        if self.ledger.msg_unread > 0 {
            warnings.push(format!(
                "{} messages arrived after every receiver of the message output had ended",
                self.ledger.msg_unread
            ));
        }
        if let Some(offset) = self.cut_by_stop {
            warnings.push(format!(
                "stopped while no sender was connected: the stream ends at offset {offset}"
            ));
        }
        if self.ledger.gaps == 0 {
            return warnings;
        }
        warnings.push(format!(
            "the sender dropped {} items in {} gaps while this end was away (its retention was full); each gap is marked with a '{}' tag",
            self.ledger.gap_items,
            self.ledger.gaps,
            metadata::GAP
        ));
        warnings
    }
}
