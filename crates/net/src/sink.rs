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
//! [`RetentionFull::DropOldest`] drops the oldest items, counts them, and sends a GAP.
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

use crate::accept::{Acceptor, Prepare};
use crate::conn::{io_err, Conn, Endpoint};
use crate::decoder::{Decoder, Event, Need, Role};
use crate::message::Outbox;
use crate::options::{Backoff, RetentionFull, TcpOptions};
use crate::secure::Link;
use crate::wire::{self, Hello, Kind, CRC_LEN, DATA_HEAD_LEN, HEADER_LEN};
use crate::NetError;
use sluice_runtime::metadata;
use sluice_runtime::{
    Inbox, Input, Item, ItemType, MessageKind, Node, NodeError, Ports, Recv as MessageRecv, Tag,
    TagPolicy, Work, WorkIo,
};
use std::collections::VecDeque;
use std::io::IoSlice;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a small control frame (HELLO, END, ERROR) may wait for room in the socket.
const CONTROL_WAIT: Duration = Duration::from_secs(1);

/// While nothing presses (see `TcpSink::rx_due`), the peer's ACKs and CREDITs are read at
/// most this often: a read that finds nothing would cost a system call per frame.
const RX_INTERVAL: Duration = Duration::from_millis(1);

/// The most DATA frames one `sendmsg` carries (three iovecs each, below IOV_MAX = 1024).
const BATCH_FRAMES: usize = 128;

/// Frames are added to a batch while it holds fewer bytes than this: many small frames share
/// a system call, a large frame goes alone.
const BATCH_BYTES: usize = 1 << 20;

/// One DATA frame of a batch.
#[derive(Debug)]
struct FrameRef {
    offset: u64,
    items: usize,
    /// Where its header, fixed part and tags end in [`Pending::heads`].
    head_end: usize,
    trailer: [u8; CRC_LEN],
    /// Bytes of `trailer` sent (0 without CRC, and for a MESSAGE, whose frame is all head).
    trailer_len: usize,
}

/// DATA frames built, and partly sent, in one batch: consecutive frames whose heads lie in
/// one buffer and whose payloads are the input window's items, sent by one `sendmsg`.
#[derive(Debug, Default)]
struct Pending {
    frames: Vec<FrameRef>,
    heads: Vec<u8>,
    written: usize,
    total: usize,
    /// The sequence number of the first message after this batch's.
    messages_to: u64,
}

#[derive(Debug)]
struct Session {
    conn: Conn,
    decoder: Decoder,
    /// The peer's first frame was decoded (a failure before it is a refusal on a listening
    /// sink, see [`TcpSink::lose`]).
    greeted: bool,
    welcomed: bool,
    sent: u64,
    credit: u64,
    max_items: usize,
    pending: Option<Pending>,
    /// Bytes of `TcpSink::rx` read from this connection and not yet decoded: `rx_at..rx_len`.
    rx_at: usize,
    rx_len: usize,
    /// When the socket was last read, and whether the node waited on it since.
    rx_checked: Instant,
    waited: bool,
    /// A standby's connection (HELLO revision 0): it sends nothing.
    standby: bool,
    /// The sequence number of the next message to send on this connection.
    msg_sent: u64,
}

/// Sends a stream of `T` over TCP (see the crate docs and `docs/net/wire.md`).
#[derive(Debug)]
pub struct TcpSink<T> {
    endpoint: Endpoint,
    /// A listening sink's acceptor (started when the sink first waits for a receiver): new
    /// connections complete their handshake there, off the sending thread.
    acceptor: Option<Acceptor<Link>>,
    opts: TcpOptions,
    session: Option<Session>,
    acked: u64,
    /// Tags taken from the input whose items are not acknowledged yet, in index order.
    tags: VecDeque<Tag>,
    /// The latest tag of each metadata key, for HELLO.
    metadata: Vec<Tag>,
    lost: Option<(Instant, NetError)>,
    /// The last peer refused by authentication, and why (for the timeout's message).
    refused: Option<String>,
    /// Refusals of peers that failed before their WELCOME (a listening sink), rate-limited.
    refusals: crate::accept::RateLog,
    waiting_since: Instant,
    end_sent: Option<u64>,
    backoff: Backoff,
    rx: [u8; 256],
    /// Acknowledged items kept for a receiver that re-primes (the largest history a WELCOME
    /// declared).
    history: u64,
    /// Items dropped while the peer was away (retention full, [`RetentionFull::DropOldest`]),
    /// and how many times.
    dropped: u64,
    drops: u64,
    /// The latest metadata tag of each key among dropped items: re-sent on the first item
    /// after the gap, so that the receiver learns what changed in it.
    carried: Vec<Tag>,
    /// A `replica` sink that gave its receiver up: the offset it had acknowledged then and why
    /// (it consumes its input from then on).
    abandoned: Option<(u64, String)>,
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

/// The index of the message input of a sink with messages (after the stream input).
const MSG_PORT: usize = 1;

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
            session: None,
            acked: 0,
            tags: VecDeque::new(),
            metadata: Vec::new(),
            lost: None,
            refused: None,
            refusals: crate::accept::RateLog::default(),
            waiting_since: Instant::now(),
            end_sent: None,
            backoff: Backoff::new(),
            rx: [0; 256],
            history: 0,
            dropped: 0,
            drops: 0,
            carried: Vec::new(),
            abandoned: None,
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

    fn peer(&self) -> String {
        self.session
            .as_ref()
            .map_or_else(|| self.endpoint.describe(), |s| s.conn.peer.clone())
    }

    /// Drops the connection for `cause`. A fatal cause fails the node (after telling the peer
    /// in an ERROR frame); otherwise the sink waits for a new connection and resumes.
    fn lose(&mut self, cause: NetError) -> Result<(), NodeError> {
        self.end_sent = None;
        let ungreeted = self.session.as_ref().is_some_and(|s| !s.greeted);
        if ungreeted && matches!(self.endpoint, Endpoint::Listen(_)) {
            // A listening sink's peer that failed before its first frame decoded (an HTTP
            // probe, garbage, silence, an ERROR: a receiver that refused this stream) costs
            // that connection only: anyone may connect to a listener, so no such peer may end
            // the stream. The sink waits on (its timeout's error names the last refusal).
            // What a valid WELCOME asks (a resume beyond retention) still fails as before.
            if let Some(s) = self.session.take() {
                if !matches!(cause, NetError::Remote { .. }) {
                    let _ = s
                        .conn
                        .send_control(&wire::error(&cause.to_string()), Duration::from_millis(100));
                }
                let line = format!(
                    "{}: {}",
                    crate::escape::text(&s.conn.peer),
                    crate::escape::text(&cause.to_string())
                );
                self.refusals
                    .line(Duration::from_secs(1), &format!("tcp_sink: refused {line}"));
                self.refused = Some(line);
            }
            return Ok(());
        }
        if let Some(s) = self.session.take() {
            if cause.is_fatal() && !matches!(cause, NetError::Remote { .. }) {
                let _ = s
                    .conn
                    .send_control(&wire::error(&cause.to_string()), CONTROL_WAIT);
            }
        }
        if self.opts.replica {
            // Waiting for the replica would hold up the other one's stream, and a replica that
            // missed items cannot be primary any more: it fails, and its partner goes on.
            self.abandon(cause.to_string());
            return Ok(());
        }
        if cause.is_fatal() || self.opts.resume_timeout.is_zero() {
            return Err(cause.into());
        }
        if self.lost.is_none() {
            self.lost = Some((Instant::now(), cause));
        }
        Ok(())
    }

    /// A `replica` sink gives its receiver up: the other replica carries the stream.
    fn abandon(&mut self, why: String) {
        self.session = None;
        self.lost = None;
        self.abandoned = Some((self.acked, why));
    }

    /// The fence's revision: `Some(0)` standby, `Some(r)` primary, `None` unfenced.
    fn revision(&self) -> Option<u64> {
        self.opts.fence.as_ref().map(crate::Fence::revision)
    }

    /// Tries to connect (or accept), waiting a little: true once connected and HELLO is sent.
    fn establish(&mut self) -> Result<bool, NodeError> {
        let (started, limit) = match &self.lost {
            Some((t, _)) => (*t, self.opts.resume_timeout),
            None => (self.waiting_since, self.opts.connect_timeout),
        };
        let elapsed = started.elapsed();
        if elapsed > limit {
            let secs = elapsed.as_secs_f64();
            return Err(match self.lost.take() {
                Some((_, cause)) => NetError::Lost {
                    cause: Box::new(cause),
                    secs,
                },
                None => NetError::Io {
                    peer: self.endpoint.describe(),
                    offset: self.acked,
                    what: "connect",
                    message: match self
                        .refused
                        .clone()
                        .or_else(|| self.acceptor.as_ref().and_then(Acceptor::last_refusal))
                    {
                        Some(r) => format!(
                            "no connection within {secs:.1} s (the last peer was refused: {r})"
                        ),
                        None => format!("no connection within {secs:.1} s"),
                    },
                },
            }
            .into());
        }
        let Some(link) = self.link()? else {
            return Ok(false);
        };
        let conn = Conn::new(link, self.opts.heartbeat)
            .map_err(|e| io_err(&self.endpoint.describe(), self.acked, "socket setup", &e))?;
        let item = ItemType::of::<T>();
        let fence = self.revision();
        let hello = wire::hello(&Hello {
            item_name: item.name().to_string(),
            item_size: item.size() as u32,
            vlen: self.opts.vlen() as u32,
            crc: self.opts.crc,
            heartbeat_ms: self.opts.heartbeat.as_millis().min(u32::MAX as u128) as u32,
            metadata: self.metadata.clone(),
            fence,
            messages: self.opts.messages,
        })
        .map_err(|e| NodeError::caused("encoding HELLO metadata", e))?;
        if let Err(e) = conn.send_control(&hello, CONTROL_WAIT) {
            let cause = io_err(&conn.peer, self.acked, "send HELLO", &e);
            self.lose(cause)?;
            return Ok(false);
        }
        let mut decoder = Decoder::new(Role::Sender, &conn.peer, 1 << 16, None, self.acked);
        if self.opts.messages {
            decoder = decoder.with_messages(0);
        }
        self.session = Some(Session {
            conn,
            decoder,
            greeted: false,
            welcomed: false,
            sent: self.acked,
            credit: self.acked,
            max_items: 1,
            pending: None,
            rx_at: 0,
            rx_len: 0,
            rx_checked: Instant::now(),
            waited: false,
            standby: fence == Some(0),
            msg_sent: 0,
        });
        Ok(true)
    }

    /// A new connection, waiting a little: a listening sink's next one that completed its
    /// handshake on the acceptor (started on the first call), or one made to the peer.
    fn link(&mut self) -> Result<Option<Link>, NetError> {
        let wait = Duration::from_millis(20);
        let Endpoint::Listen(listener) = &self.endpoint else {
            let Some(stream) = self.endpoint.establish(wait, self.acked)? else {
                return Ok(None);
            };
            return crate::auth::guard(&self.endpoint, stream, &self.opts, &mut self.refused);
        };
        if self.acceptor.is_none() {
            // A configuration error shows now, not as every peer's refusal.
            self.opts.credentials()?;
            let setup = |e: std::io::Error| {
                NetError::Config(format!(
                    "cannot accept on {}: {e}",
                    self.endpoint.describe()
                ))
            };
            let listener = listener.try_clone().map_err(setup)?;
            let opts = self.opts.clone();
            let prepare: Arc<Prepare<Link>> =
                Arc::new(move |stream, admission| crate::auth::admit(stream, &opts, admission));
            let acceptor =
                Acceptor::start(listener, "tcp_sink", self.opts.accept_options(), prepare)
                    .map_err(setup)?;
            self.acceptor = Some(acceptor);
        }
        Ok(self.acceptor.as_ref().and_then(|a| a.next(wait)))
    }

    /// Reads and handles every frame the peer has sent so far; `read..written` is what the
    /// input queue (of `capacity` items) holds.
    fn pump_rx(&mut self, read: u64, written: u64, capacity: usize) -> Result<(), NetError> {
        let Some(s) = self.session.as_mut() else {
            return Ok(());
        };
        s.decoder.set_offset(self.acked);
        (s.rx_checked, s.waited) = (Instant::now(), false);
        let vlen = self.opts.vlen() as u64;
        loop {
            let Need::Control(n) = s.decoder.need() else {
                unreachable!("a sender's decoder reads no payload");
            };
            if s.rx_at == s.rx_len {
                // Only control frames come from the receiver: read as many bytes as came.
                match s.conn.recv(&mut self.rx) {
                    Ok(crate::conn::Recv::Got(k)) => (s.rx_at, s.rx_len) = (0, k),
                    Ok(crate::conn::Recv::WouldBlock) => return Ok(()),
                    Ok(crate::conn::Recv::Eof) => {
                        s.decoder.eof()?;
                        return Err(NetError::Closed {
                            peer: s.conn.peer.clone(),
                            offset: self.acked,
                        });
                    }
                    Err(e) => return Err(io_err(&s.conn.peer, self.acked, "recv", &e)),
                }
            }
            let got = n.min(s.rx_len - s.rx_at);
            s.decoder.control_space()[..got].copy_from_slice(&self.rx[s.rx_at..s.rx_at + got]);
            s.rx_at += got;
            let Some(event) = s.decoder.control_filled(got)? else {
                continue;
            };
            s.greeted = true;
            let peer = s.conn.peer.clone();
            if s.standby {
                // A standby learns from the WELCOME and the ACKs what the receiver has from
                // the primary, and releases as much of its own copy of the stream.
                let has = match event {
                    Event::Welcome(w) => Some(w.resume),
                    Event::Ack(a) => Some(a),
                    _ => None,
                };
                if let Some(a) = has {
                    whole_vectors(a, vlen, &peer, self.acked)?;
                    self.acked = self.acked.max(a);
                    self.lost = None;
                }
                continue;
            }
            match event {
                Event::Welcome(w) => {
                    if w.resume % vlen != 0
                        || w.history % vlen != 0
                        || u64::from(w.max_items) < vlen
                    {
                        return Err(NetError::Protocol {
                            peer,
                            offset: self.acked,
                            kind: "WELCOME",
                            what: format!(
                                "resume offset {}, history {} and largest frame {} items must be whole vectors of {vlen} items (this sender's vlen)",
                                w.resume, w.history, w.max_items
                            ),
                        });
                    }
                    if let (Some(map), None) = (self.opts.warm, self.warm_resume) {
                        // A warm partition starts its input far enough back that its fresh
                        // nodes are exact again at `resume`, and drops the outputs before.
                        let (input, output) = map.start_for(w.resume);
                        self.origin = output;
                        self.warm_resume = Some(w.resume);
                        if let Some(fence) = &self.opts.fence {
                            fence.set_start(input);
                        }
                    }
                    let floor = self.acked.saturating_sub(self.history);
                    // A promoted standby may be behind the receiver: it releases what the
                    // receiver has as it comes, and sends from there.
                    let beyond = w.resume > written && self.opts.fence.is_none();
                    if w.resume < floor || beyond {
                        let what = if w.resume < floor {
                            format!(
                                "the receiver resumes at offset {} but acknowledged {} already and declared {} items of history (a receiver that lost what it acknowledged)",
                                w.resume, self.acked, self.history
                            )
                        } else {
                            format!(
                                "the receiver resumes at offset {} beyond the {written} items this sender has had",
                                w.resume
                            )
                        };
                        return Err(NetError::Protocol {
                            peer,
                            offset: self.acked,
                            kind: "WELCOME",
                            what,
                        });
                    }
                    if w.history > capacity as u64 / 2 {
                        return Err(NetError::Protocol {
                            peer,
                            offset: self.acked,
                            kind: "WELCOME",
                            what: format!(
                                "the receiver declares {} items of history, but this sender's retention holds {capacity} items, and must keep room to send; raise retention_bytes to at least {} bytes",
                                w.history,
                                w.history.saturating_mul(2).saturating_mul(std::mem::size_of::<T>() as u64)
                            ),
                        });
                    }
                    self.history = self.history.max(w.history);
                    self.lost = None;
                    if self.opts.fence.is_some() {
                        self.acked = self.acked.max(w.resume);
                        self.was_primary = true;
                    }
                    // Items below what the queue still holds were dropped while the peer was
                    // away: say so, and go on from the oldest item kept.
                    let from = w.resume.max(read);
                    if let Some(m) = w.messages {
                        self.outbox
                            .check_resume(m, from)
                            .map_err(|what| NetError::Protocol {
                                peer: peer.clone(),
                                offset: self.acked,
                                kind: "WELCOME",
                                what,
                            })?;
                        s.msg_sent = m;
                    }
                    if from > w.resume {
                        s.conn
                            .send_control(&wire::gap(w.resume, from), CONTROL_WAIT)
                            .map_err(|e| io_err(&peer, w.resume, "send GAP", &e))?;
                        for mut tag in self.carried.drain(..) {
                            tag.index = from;
                            self.tags.push_front(tag);
                        }
                    }
                    s.sent = from;
                    // The receiver's credit counts from its resume offset; the gap is room.
                    s.credit = w.credit.saturating_add(from - w.resume).max(from);
                    s.max_items = w.max_items as usize / vlen as usize * vlen as usize;
                    s.welcomed = true;
                }
                Event::Ack(a) | Event::AckMessages { acked: a, .. } => {
                    // A receiver that took over may acknowledge less than its predecessor did,
                    // by up to the history it re-primes from.
                    let floor = self.acked.saturating_sub(self.history);
                    whole_vectors(a, vlen, &peer, self.acked)?;
                    // The frames of a batch that is partly written may be acknowledged already.
                    let sent = s
                        .pending
                        .as_ref()
                        .and_then(|p| p.frames.last())
                        .map_or(s.sent, |f| f.offset + f.items as u64)
                        .max(self.acked);
                    if a < floor || a > sent {
                        return Err(NetError::Protocol {
                            peer,
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
                    if let Event::AckMessages { messages, .. } = event {
                        let sent = s.pending.as_ref().map_or(s.msg_sent, |p| p.messages_to);
                        if messages > sent {
                            return Err(NetError::Protocol {
                                peer,
                                offset: self.acked,
                                kind: "ACK",
                                what: format!(
                                    "acknowledges messages below number {messages}, but this sender sent those below {sent}"
                                ),
                            });
                        }
                        self.outbox.release_seq(messages);
                    }
                    if let (Some(map), Some(fence)) = (self.opts.warm, &self.opts.fence) {
                        fence
                            .input_acknowledged()
                            .advance(map.input_for(self.acked));
                    }
                }
                Event::Credit(c) => s.credit = s.credit.max(c),
                Event::Heartbeat => {}
                other => unreachable!("a sender's decoder gives no {other:?}"),
            }
        }
    }

    /// Takes the messages waiting at the message input (as many as the outbox has room for)
    /// and binds them to the stream position: the end of the input as it stands after they
    /// were taken, so that a message comes after every item its sender committed before it.
    fn take_messages(&mut self, io: &mut WorkIo<'_>) -> Result<(), NodeError> {
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

    /// Whether to read the peer's frames now: before its WELCOME, after a wait on the socket
    /// (something came), when credit or retention runs short, at the end of the stream; else
    /// at most every [`RX_INTERVAL`] (the ACKs of many frames are then read at once).
    fn rx_due(&self, unacked: u64, capacity: usize) -> bool {
        let Some(s) = self.session.as_ref() else {
            return false;
        };
        !s.welcomed
            || s.waited
            || s.sent >= s.credit
            || self.end_sent.is_some()
            || unacked >= (capacity / 4) as u64
            || s.rx_checked.elapsed() >= RX_INTERVAL
    }

    /// The stream offset of the input's next item to consume.
    fn read_offset(&self, input: &Input<T>) -> u64 {
        self.origin + input.items_read()
    }

    /// The stream is delivered: the sink is done (and a warm partition's input is all
    /// reflected in acknowledged outputs).
    fn delivered(&mut self) -> Work {
        if let Some(s) = self.session.take() {
            s.conn.close_after_peer(Duration::from_millis(200));
        }
        if let (Some(_), Some(fence)) = (self.opts.warm, &self.opts.fence) {
            fence.input_acknowledged().advance(u64::MAX);
        }
        Work::Done
    }

    /// Moves the input's tags below `end` into the retained list (and metadata).
    fn take_tags(&mut self, input: &Input<T>, end: u64, buf: &mut Vec<Tag>) {
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
    fn drop_if_full(&mut self, input: &mut Input<T>) -> Result<(), NodeError> {
        let away = !self
            .session
            .as_ref()
            .is_some_and(|s| s.welcomed || s.standby);
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

    /// Adds the DATA frame of `items` items from `offset` over `payload` to `batch`: its head
    /// (and tags) go straight into the batch's buffer.
    fn frame(
        &self,
        batch: &mut Pending,
        offset: u64,
        payload: &[u8],
        items: usize,
    ) -> Result<(), NodeError> {
        let end = offset + items as u64;
        let start = batch.heads.len();
        batch.heads.resize(start + HEADER_LEN + DATA_HEAD_LEN, 0);
        let in_frame = |t: &&Tag| t.index >= offset && t.index < end;
        if self.tags.iter().any(|t| in_frame(&t)) {
            let tags: Vec<Tag> = self.tags.iter().filter(in_frame).cloned().collect();
            wire::encode_tags(&tags, &mut batch.heads)
                .map_err(|e| NodeError::caused(format!("encoding tags at offset {offset}"), e))?;
        }
        let tag_bytes = batch.heads.len() - start - HEADER_LEN - DATA_HEAD_LEN;
        if tag_bytes > wire::MAX_CONTROL {
            return Err(NodeError::msg(format!(
                "the tags on items {offset}..{end} take {tag_bytes} bytes, more than a frame carries ({})",
                wire::MAX_CONTROL
            )));
        }
        let fixed = wire::data_head(
            offset,
            items as u32,
            tag_bytes as u32,
            payload.len(),
            self.opts.crc,
        )
        .ok_or_else(|| NodeError::msg("DATA frame too long for its length field"))?;
        let head = &mut batch.heads[start..];
        head[..HEADER_LEN + DATA_HEAD_LEN].copy_from_slice(&fixed);
        let (trailer, trailer_len) = if self.opts.crc {
            let crc = crc32c::crc32c_append(crc32c::crc32c(head), payload);
            (crc.to_le_bytes(), CRC_LEN)
        } else {
            ([0; CRC_LEN], 0)
        };
        batch.total += head.len() + payload.len() + trailer_len;
        batch.frames.push(FrameRef {
            offset,
            items,
            head_end: batch.heads.len(),
            trailer,
            trailer_len,
        });
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
fn available<T: Item>(input: &mut Input<T>) -> Result<usize, NodeError> {
    let cached = input.window(1)?.map_or(0, |w| w.len());
    if cached == 0 || cached >= input.capacity() {
        return Ok(cached);
    }
    Ok(match input.window(cached + 1)? {
        Some(w) => w.len(),
        None => input.window(1)?.map_or(0, |w| w.len()),
    })
}

/// Refuses an ACK of offset `a` inside a vector of `vlen` items (an ACK covers whole vectors).
fn whole_vectors(a: u64, vlen: u64, peer: &str, acked: u64) -> Result<(), NetError> {
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

/// Whether the input has ended (its writer is done and everything it wrote is in the window).
fn ended<T: Item>(input: &mut Input<T>) -> Result<bool, NodeError> {
    let avail = available(input)?;
    Ok(avail < input.capacity() && input.window(avail + 1)?.is_some_and(|w| w.len() == avail))
}

/// A sink that gave its receiver up consumes its input to the end.
fn drain<T: Item>(input: &mut Input<T>) -> Result<Work, NodeError> {
    let avail = available(input)?;
    input.consume(avail);
    if avail == 0 && ended(input)? {
        return Ok(Work::Done);
    }
    Ok(Work::NeedInput { port: 0, items: 1 })
}

/// The slices of a batch still to send, after `written` bytes of it went out: each frame's
/// head, payload (from `window`, whose first item is at offset `read`) and trailer.
fn rest<'a>(p: &'a Pending, window: &'a [u8], read: u64, size: usize) -> Vec<IoSlice<'a>> {
    let mut out = Vec::with_capacity(3 * p.frames.len());
    let mut written = p.written;
    let mut head_start = 0;
    for f in &p.frames {
        let from = (f.offset - read) as usize * size;
        let parts = [
            &p.heads[head_start..f.head_end],
            &window[from..from + f.items * size],
            &f.trailer[..f.trailer_len],
        ];
        head_start = f.head_end;
        for part in parts {
            if written >= part.len() {
                written -= part.len();
                continue;
            }
            out.push(IoSlice::new(&part[written..]));
            written = 0;
        }
    }
    out
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
        if self.abandoned.is_some() {
            return drain(input);
        }
        if self.opts.fence.is_some() {
            if self.session.as_ref().is_some_and(|s| s.standby) && self.revision() > Some(0) {
                // Promoted: the standby's connection makes way for a primary's.
                self.session = None;
                self.lost = None;
                self.waiting_since = Instant::now();
            }
            // The receiver has all this replica would send, and its END came from the other
            // replica: the stream is delivered.
            let end = self.read_offset(input) + available(input)? as u64;
            if !self.was_primary && self.acked >= end && ended(input)? {
                self.session = None;
                return Ok(Work::Done);
            }
        }
        // The graph is stopping (another host failed, or a stop while this end was away):
        // a lost receiver is not waited for.
        if stopping && self.session.is_none() {
            if let Some((_, cause)) = self.lost.take() {
                return Err(NodeError::msg(format!(
                    "{cause}; the graph is stopping, so the stream from offset {} on is not delivered",
                    self.acked
                )));
            }
        }
        self.drop_if_full(input)?;
        if self.session.is_none() && !self.establish()? {
            return Ok(Work::Progress);
        }
        let mut moved = false;
        let mut tag_buf = Vec::new();
        let size = std::mem::size_of::<T>();
        let frame_items = self.opts.frame_items(size);
        let vlen = self.opts.vlen() as u64;
        let mut blocked_write = false;
        loop {
            let read = self.read_offset(input);
            let avail = available(input)?;
            let unacked = (read + avail as u64).saturating_sub(self.acked);
            let due = self.rx_due(unacked, input.capacity());
            let pumped = if due {
                self.pump_rx(read, read + avail as u64, input.capacity())
            } else {
                Ok(())
            };
            if let Err(e) = pumped {
                if self.end_sent.is_some_and(|end| end == self.acked) {
                    // The peer acknowledged the END and closed: the stream is delivered.
                    return Ok(self.delivered());
                }
                self.lose(e)?;
                return Ok(Work::Progress);
            }
            // (A warm partition's first WELCOME sets the origin.)
            let read = self.read_offset(input);
            // Release what the peer has, but for the history it declared, and not the items
            // of a batch still being written (its slices point into the window).
            let mut release = self.acked.saturating_sub(self.history);
            if let Some(s) = self.session.as_ref().filter(|s| s.pending.is_some()) {
                release = release.min(s.sent);
            }
            // (A standby's or a promoted one's receiver may have more than it has.)
            if release > read && avail > 0 {
                let k = ((release - read) as usize).min(avail);
                input.consume(k);
                while self.tags.front().is_some_and(|t| t.index < release) {
                    self.tags.pop_front();
                }
                moved = true;
                continue;
            }
            let Some(s) = self.session.as_ref() else {
                return Ok(Work::Progress);
            };
            if !s.welcomed {
                break;
            }
            let end = read + avail as u64;
            self.take_tags(input, end, &mut tag_buf);
            let s = self.session.as_mut().expect("checked above");
            let window = input.window(1)?.unwrap_or(&[]);
            if s.pending.is_none() {
                // Whole vectors only (a vector's items are committed together upstream; the
                // credit counts whole vectors from a receiver of the same vlen).
                let limit = end.min(s.credit) / vlen * vlen;
                let (mut at, max_items, mut seq) = (s.sent, s.max_items, s.msg_sent);
                let message_due =
                    |seq: u64, at: u64| self.outbox.get(seq).filter(|m| m.offset <= at).is_some();
                if s.sent >= limit && !message_due(seq, at) {
                    break;
                }
                // As many frames as are ready, up to a batch: one system call for them all.
                // A message goes between the items below its offset and the items from it on.
                let mut batch = Pending::default();
                while batch.frames.len() < BATCH_FRAMES && batch.total < BATCH_BYTES {
                    if let Some(m) = self.outbox.get(seq).filter(|m| m.offset <= at) {
                        batch.heads.extend_from_slice(&m.frame);
                        batch.total += m.frame.len();
                        batch.frames.push(FrameRef {
                            offset: at,
                            items: 0,
                            head_end: batch.heads.len(),
                            trailer: [0; CRC_LEN],
                            trailer_len: 0,
                        });
                        seq += 1;
                        continue;
                    }
                    if at >= limit {
                        break;
                    }
                    let mut items = ((limit - at) as usize).min(frame_items).min(max_items);
                    if let Some(m) = self.outbox.get(seq) {
                        // (Offsets are whole vectors: the frame stays whole vectors.)
                        items = items.min((m.offset - at) as usize);
                    }
                    let from = (at - read) as usize;
                    let payload: &[u8] = bytemuck::cast_slice(&window[from..from + items]);
                    self.frame(&mut batch, at, payload, items)?;
                    at += items as u64;
                }
                batch.messages_to = seq;
                self.session.as_mut().expect("checked above").pending = Some(batch);
            }
            let s = self.session.as_mut().expect("checked above");
            let p = s.pending.as_mut().expect("set above");
            let bytes: &[u8] = bytemuck::cast_slice(window);
            let iov = rest(p, bytes, read, size);
            match s.conn.send_vectored(&iov) {
                Ok(k) => {
                    drop(iov);
                    p.written += k;
                    if p.written == p.total {
                        let last = p.frames.last().expect("a batch has a frame");
                        s.sent = last.offset + last.items as u64;
                        s.msg_sent = p.messages_to;
                        s.pending = None;
                        moved = true;
                    } else {
                        if k > 0 {
                            moved = true;
                        }
                        blocked_write = true;
                        break;
                    }
                }
                Err(e) => {
                    let cause = io_err(&s.conn.peer, self.acked, "send", &e);
                    self.lose(cause)?;
                    return Ok(Work::Progress);
                }
            }
        }
        if moved {
            self.backoff.reset();
            return Ok(Work::Progress);
        }
        let read = self.read_offset(input);
        let avail = available(input)?;
        let s = self.session.as_mut().expect("connected above");
        let whole = (read + avail as u64) / vlen * vlen;
        let all_sent = s.welcomed
            && s.pending.is_none()
            && s.sent == whole
            && s.msg_sent == self.outbox.next_seq();
        // Messages may still come: poll for them (the scheduler wakes a node for one input).
        let polling = self.opts.messages && !self.msg_ended;
        // End of stream: the window is shorter than asked for (and no message can follow).
        let ended = all_sent
            && !polling
            && avail < input.capacity()
            && input.window(avail + 1)?.is_some_and(|w| w.len() == avail);
        if ended {
            let end = read + avail as u64;
            if end != whole {
                return Err(NodeError::msg(format!(
                    "the input ended at item {end}, inside a vector of {vlen} items (vlen {vlen}): {} items of a last vector never came",
                    end - whole
                )));
            }
            if self.acked == end && self.end_sent == Some(end) {
                return Ok(self.delivered());
            }
            if self.end_sent != Some(end) {
                if let Err(e) = s
                    .conn
                    .send_control(&wire::offset_frame(Kind::End, end), CONTROL_WAIT)
                {
                    let cause = io_err(&s.conn.peer, self.acked, "send END", &e);
                    self.lose(cause)?;
                    return Ok(Work::Progress);
                }
                self.end_sent = Some(end);
                return Ok(Work::Progress);
            }
        } else if all_sent && avail == 0 && !polling {
            // Nothing to send and nothing to wait for: wait for input. The keeper thread sends
            // heartbeats meanwhile.
            return Ok(Work::NeedInput { port: 0, items: 1 });
        } else if all_sent && avail < input.capacity() / 2 && !polling {
            // Everything is sent and only acknowledgements are outstanding, with room to spare
            // in the retention window: wait for new input (waiting on the socket instead would
            // hold new items back until an ACK came). The ACKs are read at the next call, as
            // they are when the input is all acknowledged and the peer is not watched.
            return Ok(Work::NeedInput {
                port: 0,
                items: avail + 1,
            });
        }
        // Waiting on the peer: for a WELCOME, an ACK, credit, or room in the socket.
        let silent = s.conn.last_rx.elapsed();
        if silent > self.opts.peer_timeout {
            let cause = NetError::Silent {
                peer: self.peer(),
                offset: self.acked,
                secs: silent.as_secs_f64(),
            };
            self.lose(cause)?;
            return Ok(Work::Progress);
        }
        let wait = self.backoff.next();
        if let Some(s) = self.session.as_mut() {
            s.conn.wait(blocked_write, wait);
            s.waited = true;
        }
        Ok(Work::Progress)
    }

    fn init(&mut self) -> Result<(), NodeError> {
        self.waiting_since = Instant::now();
        Ok(())
    }

    fn stop(&mut self) {
        self.session = None;
    }

    fn warnings(&mut self) -> Vec<String> {
        let mut warnings: Vec<String> =
            self.acceptor.iter().filter_map(Acceptor::warning).collect();
        if let Some((offset, why)) = &self.abandoned {
            warnings.push(format!(
                "gave its receiver {} up at offset {offset} ({why}): it is one replica of a primary/standby pair, and the other carries the stream",
                self.endpoint.describe()
            ));
        }
        if let (Some(map), Some(start)) = (self.opts.warm, self.warm_resume) {
            if start > 0 {
                warnings.push(format!(
                    "warm start: the receiver stood at offset {start}, so the partition started afresh at input offset {} and its first {} outputs (offsets {}..{start}, the fresh blocks' warm-up) were released unsent",
                    self.origin * map.decimation,
                    start - self.origin,
                    self.origin
                ));
            }
        }
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
