//! `tcp_sink`: sends its input stream to a peer, straight from the input queue's window.
//!
//! Items stay unconsumed in the input queue until the peer acknowledges them: the queue *is*
//! the retention window, and the node reads ahead of what it consumed to send. Each DATA
//! frame leaves in one `sendmsg`: the header and tags from a small buffer, the payload from
//! the queue's memory, the CRC trailer from the stack. After a lost connection the peer's
//! WELCOME says where it stands and sending resumes from there.
//!
//! Retention also keeps the `history` items the receiver declared before what it
//! acknowledged, so that a receiver taking over may resume that far back and prime its
//! filters. When retention is full while the peer is away, the sink blocks upstream, or with
//! [`RetentionFull::DropOldest`](crate::RetentionFull::DropOldest) drops the oldest items, counts them, and sends a GAP.
//!
//! A sink with a [`fence`](crate::fence) is one replica of a partition with a hot standby.
//! As a standby (revision 0) it connects and sends nothing: the receiver tells it, in its
//! WELCOME and ACKs, what it has received from the primary, and the sink releases that much of
//! its own (identical) stream. Once promoted it reconnects as primary and sends from the
//! receiver's resume offset, even one it has not reached yet. A `replica` sink feeds one of
//! such a pair: it gives its receiver up (with a warning) the moment the connection is lost,
//! and consumes its input from then on, so that the other replica's stream never waits.
//!
//! With [`TcpOptions::messages`] the sink also has a message input: each message is bound to
//! the stream position at which it arrives and kept in an [`Outbox`] until the receiver has
//! it; it goes out as a MESSAGE frame between the DATA frames (see [`message`](crate::message)).
//!
//! The node is a state machine ([`state`]): it waits for a receiver (connecting, then
//! resuming after a loss), greets it, streams (or stands by), drains after its END, and ends
//! closed (or abandoned, a replica). Its parts:
//!
//! * [`state`]: the states and the moves between them (a lost connection, a timeout);
//! * [`connect`]: getting a connection (connecting, or a listener's acceptor) and the HELLO;
//! * [`acks`]: what the receiver says (WELCOME, ACK, CREDIT) and what it lets go;
//! * [`send`]: the connected sink's turn: DATA and MESSAGE frames in batches, the END;
//! * [`retention`]: the input queue as the retention window (tags, drops, the input's end);
//! * [`replica`]: a fenced sink's standby and promotion, a replica's abandon, warm starts.

mod acks;
mod connect;
mod replica;
mod retention;
mod send;
mod state;

use crate::accept::Acceptor;
use crate::conn::Endpoint;
use crate::message::Outbox;
use crate::options::{Backoff, TcpOptions};
use crate::secure::Link;
use crate::wire;
use crate::NetError;
use retention::consume_all;
use sluice_runtime::metadata;
use sluice_runtime::{
    Inbox, Item, MessageKind, Node, NodeError, Ports, Tag, TagPolicy, Work, WorkIo,
};
use state::SinkState;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// How long a small control frame (HELLO, END, ERROR) may wait for room in the socket.
const CONTROL_WAIT: Duration = Duration::from_secs(1);

/// The index of the message input of a sink with messages (after the stream input).
const MSG_PORT: usize = 1;

/// Sends a stream of `T` over TCP (see the crate docs and `docs/net/wire.md`).
#[derive(Debug)]
pub struct TcpSink<T> {
    endpoint: Endpoint,
    /// A listening sink's acceptor (started when the sink first waits for a receiver): new
    /// connections complete their handshake there, off the sending thread.
    acceptor: Option<Acceptor<Link>>,
    opts: TcpOptions,
    /// Where the sink stands: waiting for a receiver, connected to one, or ended.
    state: SinkState,
    acked: u64,
    /// Tags taken from the input whose items are not acknowledged yet, in index order.
    tags: VecDeque<Tag>,
    /// The latest tag of each metadata key, for HELLO.
    metadata: Vec<Tag>,
    /// The last peer refused by authentication, and why (for the timeout's message).
    refused: Option<String>,
    /// Refusals of peers that failed before their WELCOME (a listening sink), rate-limited.
    refusals: crate::accept::RateLog,
    backoff: Backoff,
    /// Acknowledged items kept for a receiver that re-primes (the largest history a WELCOME
    /// declared).
    history: u64,
    /// Items dropped while the peer was away (retention full,
    /// [`RetentionFull::DropOldest`](crate::RetentionFull::DropOldest)), and how many times.
    dropped: u64,
    drops: u64,
    /// The latest metadata tag of each key among dropped items: re-sent on the first item
    /// after the gap, so that the receiver learns what changed in it.
    carried: Vec<Tag>,
    /// A fenced sink was welcomed as primary: it owes the receiver the stream's END.
    was_primary: bool,
    /// The stream offset of its input's first item: 0, but for a warm partition's sender,
    /// whose fresh nodes start where its first WELCOME says (see [`fence`](crate::fence)).
    origin: u64,
    /// A warm partition's sender has learnt its origin: the offset its receiver stood at.
    warm_resume: Option<u64>,
    /// Messages taken from the message input and not known to be received.
    outbox: Outbox,
    /// The message input has ended (or has no connection).
    msg_ended: bool,
    /// Messages that could not be sent (no PMT serialization, or too long), and the last why.
    unsendable: u64,
    last_unsendable: Option<String>,
    _items: PhantomData<T>,
}

impl<T: Item> TcpSink<T> {
    /// A sink for `url` (`tcp://host:port` connects, `tcp-listen://host:port` listens).
    pub fn new(url: &str, opts: TcpOptions) -> Result<Self, NetError> {
        check_vlen(&opts)?;
        if opts.warm.is_some() && (opts.fence.is_none() || opts.vlen() > 1) {
            return Err(NetError::Config(
                "a warm partition's sender (warm_decimation) needs a fence and a plain stream (vlen 1)".into(),
            ));
        }
        if opts.messages && (opts.fence.is_some() || opts.replica) {
            return Err(NetError::Config(
                "messages beside the stream are not carried by a fenced or replica sink (a takeover's receiver would start without them)".into(),
            ));
        }
        let endpoint = Endpoint::parse(url)?;
        opts.check_listener(&endpoint)?;
        Ok(TcpSink {
            endpoint,
            acceptor: None,
            opts,
            state: SinkState::Connecting {
                since: Instant::now(),
            },
            acked: 0,
            tags: VecDeque::new(),
            metadata: Vec::new(),
            refused: None,
            refusals: crate::accept::RateLog::default(),
            backoff: Backoff::new(),
            history: 0,
            dropped: 0,
            drops: 0,
            carried: Vec::new(),
            was_primary: false,
            origin: 0,
            warm_resume: None,
            outbox: Outbox::default(),
            msg_ended: false,
            unsendable: 0,
            last_unsendable: None,
            _items: PhantomData,
        })
    }

    /// Items dropped so far because retention was full while the peer was away.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The address a listening sink is bound to.
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.endpoint.local_addr()
    }
}

impl<T: Item> Node for TcpSink<T> {
    fn ports(&self) -> Ports {
        let size = std::mem::size_of::<T>();
        let retention = self.opts.retention_bytes / size;
        let mut ports = Ports::new();
        ports.add_input_vectors::<T>(
            "in",
            self.opts.vlen(),
            (retention / 2).max(self.opts.frame_items(size)),
        );
        if self.opts.messages {
            ports.add_message_input("msg", MessageKind::Any, Inbox::DEFAULT);
        }
        ports
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn batch_wait(&self) -> Option<Duration> {
        Some(self.opts.flush)
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let stopping = io.stop_requested();
        if self.opts.messages && !self.msg_ended {
            self.take_messages(io)?;
        }
        let input = io.inputs.get::<T>(0)?;
        if let SinkState::Abandoned { .. } = self.state {
            return consume_all(input);
        }
        if self.opts.fence.is_some() && self.replica_done(input)? {
            return Ok(Work::Done);
        }
        if stopping {
            self.give_up_lost()?;
        }
        self.drop_if_full(input)?;
        match self.state {
            SinkState::Connecting { .. } | SinkState::Resuming { .. } => self.wait(input),
            SinkState::Greeting { .. }
            | SinkState::Standby { .. }
            | SinkState::Streaming { .. }
            | SinkState::Draining { .. } => self.serve(input),
            SinkState::Abandoned { .. } => consume_all(input),
            SinkState::Closed => Ok(Work::Done),
        }
    }

    fn init(&mut self) -> Result<(), NodeError> {
        if let SinkState::Connecting { since } = &mut self.state {
            *since = Instant::now();
        }
        Ok(())
    }

    fn stop(&mut self) {
        if self.state.session().is_some() {
            self.state = SinkState::Closed;
        }
    }

    fn warnings(&mut self) -> Vec<String> {
        let mut warnings: Vec<String> =
            self.acceptor.iter().filter_map(Acceptor::warning).collect();
        warnings.extend(self.replica_warnings());
        if self.unsendable > 0 {
            warnings.push(format!(
                "{} messages were not sent; the last because {}",
                self.unsendable,
                self.last_unsendable.as_deref().unwrap_or("?")
            ));
        }
        if self.dropped == 0 {
            return warnings;
        }
        warnings.push(format!(
            "dropped {} items in {} gaps while the peer was away and retention was full (retention_full = drop_oldest); the receiver marks each gap with a '{}' tag",
            self.dropped,
            self.drops,
            metadata::GAP
        ));
        warnings
    }
}

/// Refuses a `vlen` out of range (0 is taken as 1).
pub(crate) fn check_vlen(opts: &TcpOptions) -> Result<(), NetError> {
    if opts.vlen() > wire::MAX_VLEN as usize {
        return Err(NetError::Config(format!(
            "vlen {} is too large (at most {})",
            opts.vlen,
            wire::MAX_VLEN
        )));
    }
    Ok(())
}
