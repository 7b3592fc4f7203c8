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

use crate::accept::{Acceptor, Admission, Prepare};
use crate::conn::{io_err, Conn, Endpoint, Recv};
use crate::decoder::{Decoder, Event, Need, Role};
use crate::options::{AckHandle, Acknowledge, Backoff, TcpOptions};
use crate::secure::Link;
use crate::tag_budget::TagWindow;
use crate::wire::{self, Hello, Kind, Welcome, CRC_LEN, DATA_HEAD_LEN, HEADER_LEN};
use crate::NetError;
use sluice_runtime::{
    metadata, Item, ItemType, MessageKind, Node, NodeError, Output, Ports, Sent, Tag, TagValue,
    Work, WorkIo,
};
use std::io::IoSliceMut;
use std::marker::PhantomData;
use std::time::{Duration, Instant, SystemTime};

/// How long a small control frame (WELCOME, ACK, CREDIT) may wait for room in the socket.
const CONTROL_WAIT: Duration = Duration::from_secs(1);

/// With nothing to read, the receiver acknowledges what it received once this long passed
/// since its last ACK (and after every quarter queue, and at END, at once): one ACK for many
/// small frames instead of one each.
const ACK_DELAY: Duration = Duration::from_millis(1);

/// A fenced receiver that has a primary looks for new connections (a standby, a newer primary)
/// at most this often: takeovers take a second, and the receive loop runs per frame.
const ACCEPT_EVERY: Duration = Duration::from_millis(5);

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

#[derive(Debug)]
struct Frame {
    items: usize,
    tags: Vec<Tag>,
    /// Where the reservation started when the first payload bytes went in.
    at: Option<usize>,
}

/// A fenced receiver's change of primary.
#[derive(Debug)]
struct Takeover {
    /// The stream offset at which the new primary resumed.
    offset: u64,
    /// The old and the new primary's lease revisions.
    from: u64,
    to: u64,
    /// When and why the old primary was declared lost (`None`: the new one displaced a
    /// connected one), and when the new one was welcomed.
    lost: Option<(SystemTime, String)>,
    resumed: SystemTime,
    /// When the new primary's first item came (a warm standby connects before its fresh
    /// partition has produced anything).
    first_item: Option<SystemTime>,
}

#[derive(Debug)]
struct Session {
    conn: Conn,
    decoder: Decoder,
    hello: Option<Hello>,
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

impl Session {
    /// A new connection's session, its decoder at the resume offset.
    fn new(conn: Conn, decoder: Decoder) -> Session {
        Session {
            conn,
            decoder,
            hello: None,
            frame: None,
            stash: vec![0; READ_AHEAD],
            stash_at: 0,
            stash_len: 0,
            small: false,
            drained: false,
        }
    }
}

/// Receives a stream of `T` over TCP (see the crate docs and `docs/net/wire.md`).
#[derive(Debug)]
pub struct TcpSource<T> {
    endpoint: Endpoint,
    /// A listening source's acceptor (started when the source first waits for a sender):
    /// new connections complete their handshake and HELLO there, off the receive thread.
    acceptor: Option<Acceptor<Arrival>>,
    /// The acceptor's warning, kept when it closed with the stream's end.
    accept_warning: Option<String>,
    opts: TcpOptions,
    session: Option<Session>,
    /// The stream offset last acknowledged, and the credit last given.
    acked: u64,
    credited: u64,
    /// Stream offsets passed without items in the output queue: the start offset, then every
    /// gap. Stream offset = items written + skipped.
    skipped: u64,
    gaps: u64,
    gap_items: u64,
    /// A new connection was welcomed: acknowledge (again) what may be released.
    ack_due: bool,
    lost: Option<(Instant, NetError)>,
    /// Fenced: when the primary was lost (wall clock, for the takeover's record).
    lost_wall: SystemTime,
    /// The last peer refused by authentication, and why (for the timeout's message).
    refused: Option<String>,
    waiting_since: Instant,
    done: bool,
    backoff: Backoff,
    metadata: Vec<Tag>,
    failing: Option<NodeError>,
    /// Whether the spin (`opts.spin`) after the last frame was spent already.
    spun: bool,
    /// When the last ACK went out.
    last_ack: Instant,
    /// The stream offset at which a stop ended the stream while no sender was connected.
    cut_by_stop: Option<u64>,
    /// Fenced: the current primary's lease revision (0 before the first), the standbys'
    /// connections, and every change of primary.
    revision: u64,
    /// Fenced: the static key the current revision's holder proved, when the revision check
    /// bound it to one.
    bound_key: Option<[u8; 32]>,
    standbys: Vec<Conn>,
    takeovers: Vec<Takeover>,
    /// Fenced: when the listener was last looked at while a primary sent.
    last_accept: Instant,
    /// The sequence number of the next message expected (= messages received), and the one
    /// the last ACK said.
    next_message: u64,
    msg_acked: u64,
    /// A message received and not yet taken by the message output's inbox.
    held: Option<TagValue>,
    /// Messages received after every receiver of the message output had ended.
    msg_unread: u64,
    /// The tags of the frames within the last queue's worth of items (the tag budget).
    tag_window: TagWindow,
    _items: PhantomData<T>,
}

/// The index of the message output of a source with messages (after the stream output).
const MSG_PORT: usize = 1;

enum Step {
    Moved,
    Idle,
    NeedOutput(usize),
    End(u64),
    /// A message came: hand it on before reading more.
    Message,
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
            opts,
            session: None,
            acked: start,
            credited: start,
            skipped: start,
            gaps: 0,
            gap_items: 0,
            ack_due: false,
            lost: None,
            lost_wall: SystemTime::now(),
            refused: None,
            waiting_since: Instant::now(),
            cut_by_stop: None,
            done: false,
            backoff: Backoff::new(),
            metadata: Vec::new(),
            failing: None,
            spun: false,
            last_ack: Instant::now(),
            revision: 0,
            bound_key: None,
            standbys: Vec::new(),
            takeovers: Vec::new(),
            last_accept: Instant::now(),
            next_message: 0,
            msg_acked: 0,
            held: None,
            msg_unread: 0,
            tag_window: TagWindow::default(),
            _items: PhantomData,
        })
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
            decoder.with_messages(self.next_message)
        } else {
            decoder
        }
    }

    /// The address a listening source is bound to.
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.endpoint.local_addr()
    }

    /// The stream metadata the sender's last HELLO carried.
    pub fn metadata(&self) -> &[Tag] {
        &self.metadata
    }

    fn lose(&mut self, cause: NetError) -> Result<(), NodeError> {
        if let Some(s) = self.session.take() {
            // A frame begun and not committed comes again from where the stream stands.
            self.tag_window.forget_after(s.decoder.offset());
            if cause.is_fatal() && !matches!(cause, NetError::Remote { .. }) {
                let _ = s
                    .conn
                    .send_control(&wire::error(&cause.to_string()), CONTROL_WAIT);
            }
        }
        if cause.is_fatal() || self.opts.resume_timeout.is_zero() {
            return Err(cause.into());
        }
        if self.lost.is_none() {
            self.lost = Some((Instant::now(), cause));
            self.lost_wall = SystemTime::now();
        }
        Ok(())
    }

    fn establish(&mut self, out: &mut Output<T>) -> Result<bool, NodeError> {
        let received = self.received(out);
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
                    offset: received,
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
        if !self.warm_started(out) {
            return Ok(false);
        }
        let received = self.received(out);
        if self.opts.fenced {
            self.accept_fenced(out, Duration::from_millis(20))?;
            return Ok(self.session.is_some());
        }
        if matches!(self.endpoint, Endpoint::Listen(_)) {
            let Some((hello, decoder, link)) = self.arrival(Duration::from_millis(20), received)?
            else {
                return Ok(false);
            };
            let conn = Conn::new(link, self.opts.heartbeat)
                .map_err(|e| io_err(&self.endpoint.describe(), received, "socket setup", &e))?;
            self.session = Some(Session::new(conn, decoder));
            let (size, capacity) = (std::mem::size_of::<T>(), out.capacity());
            if let Err(e) = self.on_event(Some(Event::Hello(hello)), out, size, capacity) {
                self.lose(e)?;
                return Ok(false);
            }
            return Ok(true);
        }
        let Some(stream) = self
            .endpoint
            .establish(Duration::from_millis(20), received)?
        else {
            return Ok(false);
        };
        let Some(link) = crate::auth::guard(&self.endpoint, stream, &self.opts, &mut self.refused)?
        else {
            return Ok(false);
        };
        let conn = Conn::new(link, self.opts.heartbeat)
            .map_err(|e| io_err(&self.endpoint.describe(), received, "socket setup", &e))?;
        let decoder = self.decoder(&conn.peer, received);
        self.session = Some(Session::new(conn, decoder));
        Ok(true)
    }

    /// A listening source's next sender that completed its handshake and HELLO (waiting at
    /// most `wait`): its HELLO, its decoder (past the HELLO, at `received`) and its link. The
    /// acceptor starts on the first call.
    fn arrival(
        &mut self,
        wait: Duration,
        received: u64,
    ) -> Result<Option<(Hello, Decoder, Link)>, NetError> {
        if self.acceptor.is_none() {
            let Endpoint::Listen(listener) = &self.endpoint else {
                return Ok(None);
            };
            // A configuration error shows now, not as every peer's refusal.
            self.opts.credentials()?;
            let setup = |e: std::io::Error| {
                NetError::Config(format!(
                    "cannot accept on {}: {e}",
                    self.endpoint.describe()
                ))
            };
            let listener = listener.try_clone().map_err(setup)?;
            let prepare = self.prepare();
            let acceptor =
                Acceptor::start(listener, "tcp_source", self.opts.accept_options(), prepare)
                    .map_err(setup)?;
            self.acceptor = Some(acceptor);
        }
        let Some(acceptor) = &self.acceptor else {
            return Ok(None);
        };
        let Some(arrival) = acceptor.next(wait) else {
            return Ok(None);
        };
        // The HELLO again, through a decoder at this end's offset now (the acceptor's took it
        // at offset 0, before the node knew when it would take the connection).
        let mut decoder = self.decoder(&arrival.peer, received);
        match replay(&mut decoder, &arrival.raw) {
            Ok(hello) => Ok(Some((hello, decoder, arrival.link))),
            Err(e) => {
                refuse(arrival.link, &arrival.peer, &e.to_string());
                Ok(None)
            }
        }
    }

    /// What an acceptor's helper does with a new connection: the secure handshake (with
    /// credentials), then the HELLO, all within the budget (`auth_timeout`). A HELLO this
    /// source cannot take (another item type, vector length or fence) refuses the connection.
    fn prepare(&self) -> std::sync::Arc<Prepare<Arrival>> {
        let opts = self.opts.clone();
        let item = ItemType::of::<T>();
        let (name, size) = (item.name().to_string(), item.size() as u32);
        std::sync::Arc::new(move |stream, admission: &Admission| {
            let peer = admission.peer.to_string();
            let mut link = crate::auth::admit(stream, &opts, admission)?;
            let mut decoder = Decoder::new(
                Role::Receiver,
                &peer,
                opts.max_frame,
                Some((&name, size)),
                0,
            )
            .with_vlen(opts.vlen() as u32);
            if opts.messages {
                decoder = decoder.with_messages(0);
            }
            let refused = |link: Link, why: String| {
                refuse_quietly(link, &why);
                why
            };
            let (hello, raw) = match read_first_hello(&mut link, &mut decoder, admission) {
                Ok(got) => got,
                Err(e) => return Err(refused(link, e.to_string())),
            };
            if hello.fence.is_some() != opts.fenced {
                let why = if opts.fenced {
                    "this receiver takes fenced senders only (the replicas of a partition with a standby): the sender has no fence"
                } else {
                    "a fenced sender (one replica of a partition with a standby) needs a receiver with fenced = true"
                };
                return Err(refused(link, why.to_string()));
            }
            Ok(Arrival { link, peer, raw })
        })
    }

    /// The input of a warm partition starts where the partition's sender says (see
    /// [`fence`](crate::fence)): false until it has said so. Others have started.
    fn warm_started(&mut self, out: &Output<T>) -> bool {
        let Some(fence) = &self.opts.warm_fence else {
            return true;
        };
        if self.session.is_some() || out.items_written() > 0 {
            return true;
        }
        let Some(start) = fence.start() else {
            // (Not long: the partition's sender connects within milliseconds.)
            std::thread::sleep(Duration::from_millis(1));
            return false;
        };
        (self.acked, self.credited, self.skipped) = (start, start, start);
        true
    }

    /// The stream offset this end has received up to (the first it does not have).
    fn received(&self, out: &Output<T>) -> u64 {
        out.items_written().saturating_add(self.skipped)
    }

    /// What may be acknowledged of the `received` items (see [`Acknowledge`]).
    fn ackable(&self, received: u64) -> u64 {
        match &self.opts.ack {
            Acknowledge::Received => received,
            Acknowledge::External(handle) => {
                let vlen = self.opts.vlen() as u64;
                (received.min(handle.get()) / vlen * vlen).max(self.acked)
            }
        }
    }

    /// The room of an output queue of `capacity` items, in whole vectors' worth of items.
    fn room(&self, capacity: usize) -> u64 {
        let vlen = self.opts.vlen();
        (capacity / vlen * vlen) as u64
    }

    /// Sends ACK (what may be released) and CREDIT (received + queue capacity).
    fn acknowledge(&mut self, received: u64, capacity: usize) -> Result<(), NetError> {
        let Some(s) = self.session.as_ref() else {
            return Ok(());
        };
        let ack = self.ackable(received);
        let credit = received.saturating_add(self.room(capacity));
        let mut both = [0u8; 2 * (HEADER_LEN + 8)];
        both[..HEADER_LEN + 8].copy_from_slice(&wire::offset_frame(Kind::Ack, ack));
        both[HEADER_LEN + 8..].copy_from_slice(&wire::offset_frame(Kind::Credit, credit));
        let messages = s.hello.as_ref().is_some_and(|h| h.messages);
        let sent = if messages {
            // The ACK that acknowledges messages too (the sender asked for them).
            let mut frames = wire::ack_messages(ack, self.next_message).to_vec();
            frames.extend_from_slice(&both[HEADER_LEN + 8..]);
            s.conn.send_control(&frames, CONTROL_WAIT)
        } else {
            s.conn.send_control(&both, CONTROL_WAIT)
        };
        sent.map_err(|e| io_err(&s.conn.peer, received, "send ACK", &e))?;
        if messages {
            self.msg_acked = self.next_message;
        }
        if !self.standbys.is_empty() {
            self.tell_standbys(&both[..HEADER_LEN + 8]);
        }
        self.acked = ack;
        self.credited = credit;
        self.ack_due = false;
        self.last_ack = Instant::now();
        Ok(())
    }

    /// One turn of the receive loop.
    fn step(&mut self, out: &mut Output<T>) -> Result<Step, NetError> {
        let size = std::mem::size_of::<T>();
        let capacity = out.capacity();
        let s = self.session.as_mut().expect("connected");
        match s.decoder.need() {
            Need::Control(n) => {
                if s.stash_at == s.stash_len && s.decoder.between_frames() {
                    if s.drained {
                        return Ok(Step::Idle);
                    }
                    // At a frame boundary the next 28 bytes are control bytes whatever comes
                    // (a DATA frame's header and fixed part, or control frames and the start of
                    // the next): one read takes them all instead of one per header part.
                    let ahead = if s.small {
                        READ_AHEAD
                    } else {
                        HEADER_LEN + DATA_HEAD_LEN
                    };
                    match s.conn.recv(&mut s.stash[..ahead]) {
                        Ok(Recv::Got(k)) => {
                            (s.stash_at, s.stash_len, s.drained) = (0, k, k < ahead);
                        }
                        Ok(Recv::WouldBlock) => return Ok(Step::Idle),
                        Ok(Recv::Eof) => return Err(self.eof()),
                        Err(e) => return Err(io_err(&s.conn.peer, s.decoder.offset(), "recv", &e)),
                    }
                }
                let got = if s.stash_at < s.stash_len {
                    let k = n.min(s.stash_len - s.stash_at);
                    s.decoder.control_space()[..k]
                        .copy_from_slice(&s.stash[s.stash_at..s.stash_at + k]);
                    s.stash_at += k;
                    k
                } else {
                    match s.conn.recv(s.decoder.control_space()) {
                        Ok(Recv::Got(k)) => k,
                        Ok(Recv::WouldBlock) => return Ok(Step::Idle),
                        Ok(Recv::Eof) => return Err(self.eof()),
                        Err(e) => return Err(io_err(&s.conn.peer, s.decoder.offset(), "recv", &e)),
                    }
                };
                let event = s.decoder.control_filled(got)?;
                self.on_event(event, out, size, capacity)
            }
            Need::Payload(remaining) => {
                let items = s.frame.as_ref().map_or(0, |f| f.items);
                let Some(space) = out
                    .reserve(items)
                    .map_err(|e| NetError::Config(e.to_string()))?
                else {
                    return Ok(Step::NeedOutput(items));
                };
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut space[..items]);
                let frame = s.frame.as_mut().expect("a payload belongs to a frame");
                let here = bytes.as_ptr() as usize;
                if *frame.at.get_or_insert(here) != here {
                    return Err(NetError::Config(format!(
                        "queue '{}' moved a reservation between calls; tcp_source needs the mirrored queue",
                        "out"
                    )));
                }
                let done = s.decoder.payload_done();
                let dest = &mut bytes[done..done + remaining];
                let got = if s.stash_at < s.stash_len {
                    // Small frames read ahead (or a frame shorter than the stash): the payload
                    // moves from the stash.
                    let k = remaining.min(s.stash_len - s.stash_at);
                    dest[..k].copy_from_slice(&s.stash[s.stash_at..s.stash_at + k]);
                    s.stash_at += k;
                    k
                } else {
                    let crc = s.hello.as_ref().is_some_and(|h| h.crc);
                    let ahead = if s.small {
                        READ_AHEAD
                    } else if crc {
                        STASH
                    } else {
                        STASH - CRC_LEN
                    };
                    let (dest_len, stash) = (dest.len(), &mut s.stash[..ahead]);
                    let mut iov = [IoSliceMut::new(dest), IoSliceMut::new(stash)];
                    match s.conn.recv_vectored(&mut iov) {
                        Ok(Recv::Got(k)) => {
                            s.drained = k < dest_len + ahead;
                            if k > dest_len {
                                s.stash_at = 0;
                                s.stash_len = k - dest_len;
                            }
                            k.min(dest_len)
                        }
                        Ok(Recv::WouldBlock) => return Ok(Step::Idle),
                        Ok(Recv::Eof) => return Err(self.eof()),
                        Err(e) => return Err(io_err(&s.conn.peer, s.decoder.offset(), "recv", &e)),
                    }
                };
                let event = s.decoder.payload_filled(&bytes[done..done + got])?;
                self.on_event(event, out, size, capacity)
            }
        }
    }

    fn eof(&self) -> NetError {
        let s = self.session.as_ref().expect("connected");
        match s.decoder.eof() {
            Err(e) => e,
            Ok(()) => NetError::Closed {
                peer: s.conn.peer.clone(),
                offset: s.decoder.offset(),
            },
        }
    }

    fn on_event(
        &mut self,
        event: Option<Event>,
        out: &mut Output<T>,
        size: usize,
        capacity: usize,
    ) -> Result<Step, NetError> {
        let s = self.session.as_mut().expect("connected");
        let Some(event) = event else {
            return Ok(Step::Moved);
        };
        match event {
            Event::Hello(h) => {
                if h.fence.is_some() && !self.opts.fenced {
                    return Err(NetError::Protocol {
                        peer: s.conn.peer.clone(),
                        offset: self.received(out),
                        kind: "HELLO",
                        what: "a fenced sender (one replica of a partition with a standby) needs a receiver with fenced = true".into(),
                    });
                }
                let received = self.received(out);
                let mut welcome = self.welcome_for(received, capacity, size, true)?;
                welcome.messages = h.messages.then_some(self.next_message);
                let welcome = wire::welcome(&welcome);
                let s = self.session.as_mut().expect("connected");
                s.conn
                    .send_control(&welcome, CONTROL_WAIT)
                    .map_err(|e| io_err(&s.conn.peer, received, "send WELCOME", &e))?;
                self.metadata = h.metadata.clone();
                s.hello = Some(h);
                self.lost = None;
                // A WELCOME says where to resume, not what the sender may release: an ACK
                // follows once this turn of the receive loop is over.
                self.ack_due = true;
            }
            Event::DataBegin {
                offset,
                items,
                tags,
            } => {
                if let Some(t) = self.takeovers.last_mut().filter(|t| t.first_item.is_none()) {
                    t.first_item = Some(SystemTime::now());
                }
                if items as usize > capacity {
                    return Err(NetError::Protocol {
                        peer: s.conn.peer.clone(),
                        offset,
                        kind: "DATA",
                        what: format!(
                            "{items} items in one frame, more than the {capacity} this end said it takes"
                        ),
                    });
                }
                let end = offset.saturating_add(u64::from(items));
                let cost = (tags.len(), s.decoder.last_tag_bytes());
                let limits = (self.opts.tag_budget, self.opts.tag_budget_bytes);
                if let Err(what) = self.tag_window.admit(end, capacity as u64, cost, limits) {
                    return Err(NetError::TagBudget {
                        peer: s.conn.peer.clone(),
                        offset,
                        what,
                    });
                }
                s.small = items as usize * size <= SMALL_FRAME;
                // Tags travel by stream offset (inside the frame, checked by the decoder); the
                // queue counts only the items it has.
                let skipped = self.skipped;
                let tags = tags
                    .into_iter()
                    .map(|mut t| {
                        t.index = t.index.saturating_sub(skipped);
                        t
                    })
                    .collect();
                s.frame = Some(Frame {
                    items: items as usize,
                    tags,
                    at: None,
                });
            }
            Event::Gap { from, to } => {
                let lost = to - from;
                out.push_tag(Tag::new(
                    out.items_written(),
                    metadata::GAP,
                    TagValue::U64(lost),
                ));
                self.skipped = self.skipped.saturating_add(lost);
                self.gaps += 1;
                self.gap_items = self.gap_items.saturating_add(lost);
            }
            Event::DataEnd { items, .. } => {
                let frame = s.frame.take().expect("DataEnd follows DataBegin");
                // Re-reserve (the same space) so that the commit belongs to this call.
                if out
                    .reserve(items as usize)
                    .map_err(|e| NetError::Config(e.to_string()))?
                    .is_none()
                {
                    unreachable!("the frame's space was reserved and nothing else writes");
                }
                for tag in frame.tags {
                    out.push_tag(tag);
                }
                out.commit(items as usize);
            }
            Event::End(end) => return Ok(Step::End(end)),
            Event::Heartbeat => {}
            Event::Message { seq, message, .. } => {
                self.next_message = seq + 1;
                self.held = Some(message);
                return Ok(Step::Message);
            }
            other => unreachable!("a receiver's decoder gives no {other:?}"),
        }
        Ok(Step::Moved)
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
        self.waiting_since = Instant::now();
        Ok(())
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if !self.hand_on(io)? {
            return Ok(Work::NeedOutput {
                port: MSG_PORT,
                items: 1,
            });
        }
        let stopping = io.stop_requested();
        let out = io.outputs.get::<T>(0)?;
        // A graph told to stop that kept this source running (a cluster host's stream
        // receiver, see `RunOptions::spared_by_stop`) ends it with its sender's stream; but
        // with no sender connected (it failed, or never came) there is nothing to wait for.
        if stopping && self.session.is_none() && self.failing.is_none() {
            self.cut_by_stop = Some(out.items_written() + self.skipped);
            return Ok(Work::Done);
        }
        if self.failing.is_none() {
            match self.receive(out) {
                Err(e) => {
                    self.session = None;
                    self.failing = Some(e);
                }
                Ok(work) => {
                    if !self.hand_on(io)? {
                        return Ok(Work::NeedOutput {
                            port: MSG_PORT,
                            items: 1,
                        });
                    }
                    return Ok(work);
                }
            }
        }
        // Failing: first let downstream take every item already received (the queue is
        // drained when all of it is free again), then report the error.
        let capacity = out.capacity();
        if out.reserve(capacity)?.is_some() {
            return Err(self.failing.take().expect("set above"));
        }
        Ok(Work::NeedOutput {
            port: 0,
            items: capacity,
        })
    }

    fn stop(&mut self) {
        self.session = None;
    }

    fn warnings(&mut self) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .acceptor
            .iter()
            .filter_map(Acceptor::warning)
            .chain(self.accept_warning.clone())
            .collect();
        let unix = |t: SystemTime| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64())
        };
        for t in &self.takeovers {
            let how = match &t.lost {
                Some((at, cause)) => format!(
                    "{:.0} ms after the primary was lost at unix time {:.3} s: {cause}",
                    t.resumed
                        .duration_since(*at)
                        .unwrap_or_default()
                        .as_secs_f64()
                        * 1e3,
                    unix(*at)
                ),
                None => "displacing the connected primary".to_string(),
            };
            let first = t.first_item.map_or(String::new(), |f| {
                format!(", its first new item at unix time {:.3} s", unix(f))
            });
            warnings.push(format!(
                "failover at offset {}: the primary of lease revision {} took over from revision {} at unix time {:.3} s ({how}); the stream resumed at the offset it stood at{first}",
                t.offset,
                t.to,
                t.from,
                unix(t.resumed)
            ));
        }
        if self.msg_unread > 0 {
            warnings.push(format!(
                "{} messages arrived after every receiver of the message output had ended",
                self.msg_unread
            ));
        }
        if let Some(offset) = self.cut_by_stop {
            warnings.push(format!(
                "stopped while no sender was connected: the stream ends at offset {offset}"
            ));
        }
        if self.gaps == 0 {
            return warnings;
        }
        warnings.push(format!(
            "the sender dropped {} items in {} gaps while this end was away (its retention was full); each gap is marked with a '{}' tag",
            self.gap_items,
            self.gaps,
            metadata::GAP
        ));
        warnings
    }
}

/// After the stream's END, with [`Acknowledge::External`]: a thread of its own keeps the
/// connection and acknowledges the last items as `handle` reaches them, so that the sender
/// releases them only then (it stays done when `handle` reaches `end`), until the peer closes
/// or `limit` passes.
/// `(acked, end, vlen)`: what was acknowledged, the stream's end, and its vector length
/// (ACKs cover whole vectors).
fn ack_until_end(
    conn: crate::conn::Conn,
    handle: AckHandle,
    (mut acked, end, vlen): (u64, u64, u64),
    limit: Duration,
) {
    let spawned = std::thread::Builder::new()
        .name("tcp_source ack".into())
        .spawn(move || {
            let started = Instant::now();
            while acked < end && started.elapsed() < limit {
                let now = handle.get().min(end) / vlen * vlen;
                if now > acked {
                    if conn
                        .send_control(&wire::offset_frame(Kind::Ack, now), CONTROL_WAIT)
                        .is_err()
                    {
                        return;
                    }
                    acked = now;
                } else {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        });
    // Without a thread the sender learns nothing more and fails after its resume timeout,
    // which is what a lost connection would give: nothing is released that should not be.
    drop(spawned);
}

impl<T: Item> TcpSource<T> {
    /// Sends the message received last to the message output: false while its inbox is full
    /// (the node waits for room before it reads more).
    fn hand_on(&mut self, io: &mut WorkIo<'_>) -> Result<bool, NodeError> {
        let Some(message) = self.held.take() else {
            return Ok(true);
        };
        match io.outputs.message(MSG_PORT)?.send(message) {
            Ok(Sent::Delivered) => Ok(true),
            Ok(Sent::Full(message)) => {
                self.held = Some(message);
                Ok(false)
            }
            Err(NodeError::OutputClosed { .. }) => {
                // Nobody reads messages any more: the stream goes on without them.
                self.msg_unread += 1;
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    /// The WELCOME for a sender at `received`: a primary gets credit for the queue's room, a
    /// standby (`primary` false) none.
    fn welcome_for(
        &self,
        received: u64,
        capacity: usize,
        size: usize,
        primary: bool,
    ) -> Result<Welcome, NetError> {
        let vlen = self.opts.vlen();
        let max_items = capacity
            .min(self.opts.max_frame as usize / size)
            .min(u32::MAX as usize)
            / vlen
            * vlen;
        if max_items == 0 {
            return Err(NetError::Config(format!(
                "max_frame {} bytes holds no whole vector of {vlen} items of {size} bytes: raise max_frame to at least {}",
                self.opts.max_frame,
                vlen * size + DATA_HEAD_LEN + CRC_LEN
            )));
        }
        let room = if primary { self.room(capacity) } else { 0 };
        Ok(Welcome {
            resume: received,
            credit: received.saturating_add(room),
            max_items: max_items as u32,
            heartbeat_ms: self.opts.heartbeat.as_millis().min(u32::MAX as u128) as u32,
            history: self.opts.history.div_ceil(vlen as u64) * vlen as u64,
            messages: None,
        })
    }

    /// Fenced: takes the connections waiting on the listener (waiting up to `wait` for one):
    /// standbys join the list, a primary at least as new as the current one replaces it, an
    /// older one or an unfenced sender is refused (and logged), and so is a bad HELLO: the
    /// stream goes on either way.
    fn accept_fenced(&mut self, out: &mut Output<T>, wait: Duration) -> Result<(), NodeError> {
        let size = std::mem::size_of::<T>();
        let capacity = out.capacity();
        let mut wait = wait;
        loop {
            let received = self.received(out);
            let Some((hello, decoder, stream)) = self.arrival(wait, received)? else {
                return Ok(());
            };
            // Take whatever else is ready, without waiting.
            wait = Duration::ZERO;
            let peer = stream
                .stream
                .peer_addr()
                .map_or_else(|_| "(unknown peer)".to_string(), |a| a.to_string());
            let revision = match hello.fence {
                None => {
                    refuse(stream, &peer, "this receiver takes fenced senders only (the replicas of a partition with a standby): the sender has no fence");
                    continue;
                }
                Some(r) if r > 0 && r < self.revision => {
                    refuse(stream, &peer, &format!(
                        "fenced: lease revision {r} is older than the current primary's {}; this sender's partition was taken over by its standby",
                        self.revision
                    ));
                    continue;
                }
                Some(r) => r,
            };
            // A raise (the first primary included) displaces whoever sends now: the revision
            // is checked first where a check can be had. A revision already accepted (the
            // primary reconnecting) is not asked about again.
            let bound = if revision > self.revision {
                match self.check_raise(revision, &stream, &peer) {
                    Ok(bound) => bound,
                    Err(why) => {
                        refuse(stream, &peer, &format!(
                            "fenced: lease revision {revision} of {} not confirmed: {why}; the current primary (revision {}) keeps the stream",
                            self.opts.fenced_by.as_deref().unwrap_or(""),
                            self.revision
                        ));
                        continue;
                    }
                }
            } else {
                self.bound_key
            };
            // The same revision again (the primary reconnecting): where the check bound it to
            // its holder's key, only that key may send under it.
            if revision > 0 && revision == self.revision {
                if let Some(key) = self.bound_key.filter(|k| stream.peer_key != Some(*k)) {
                    refuse(stream, &peer, &format!(
                        "fenced: lease revision {revision} belongs to the host of identity {}; this sender proved another",
                        crate::secure::keys::hex32(&key)
                    ));
                    continue;
                }
            }
            let conn = Conn::new(stream, self.opts.heartbeat)
                .map_err(|e| io_err(&peer, received, "socket setup", &e))?;
            if revision == 0 {
                let welcome = wire::welcome(&self.welcome_for(received, capacity, size, false)?);
                if conn.send_control(&welcome, CONTROL_WAIT).is_ok() {
                    self.standbys.push(conn);
                }
                continue;
            }
            if let Some(old) = self.session.take() {
                if revision > self.revision {
                    let _ = old.conn.send_control(
                        &wire::error(&format!(
                            "fenced: displaced by the primary of lease revision {revision} (this one has {})",
                            self.revision
                        )),
                        Duration::from_millis(10),
                    );
                }
            }
            if revision > self.revision && self.revision > 0 {
                self.takeovers.push(Takeover {
                    offset: received,
                    from: self.revision,
                    to: revision,
                    lost: self
                        .lost
                        .as_ref()
                        .map(|(_, cause)| (self.lost_wall, cause.to_string())),
                    resumed: SystemTime::now(),
                    first_item: None,
                });
            }
            self.revision = revision;
            self.bound_key = bound;
            self.session = Some(Session::new(conn, decoder));
            if let Err(e) = self.on_event(Some(Event::Hello(hello)), out, size, capacity) {
                self.lose(e)?;
            }
        }
    }

    /// Fenced with `fenced_by`: asks the process's revision check whether `revision`, claimed
    /// by the sender on `link`, is the lease's (see [`fence`](crate::fence)); `Ok` without a
    /// `fenced_by` or a check (the revision is believed).
    fn check_raise(
        &self,
        revision: u64,
        link: &Link,
        peer: &str,
    ) -> Result<Option<[u8; 32]>, String> {
        let (Some(fence), Some(check)) = (&self.opts.fenced_by, crate::fence::revision_check())
        else {
            return Ok(None);
        };
        let claim = crate::fence::RevisionClaim {
            fence: fence.clone(),
            revision,
            peer_key: link.peer_key,
            peer: peer.to_string(),
        };
        crate::fence::verify(check, &claim, crate::fence::CHECK_TIMEOUT)
    }

    /// Tells the standbys a frame (an ACK), reading and dropping what they sent (heartbeats);
    /// a standby that closed or does not take the frame at once is dropped.
    fn tell_standbys(&mut self, frame: &[u8]) {
        let mut scratch = [0u8; 256];
        self.standbys.retain_mut(|c| {
            for _ in 0..16 {
                match c.recv(&mut scratch) {
                    Ok(Recv::Got(_)) => {}
                    Ok(Recv::WouldBlock) => break,
                    Ok(Recv::Eof) | Err(_) => return false,
                }
            }
            c.send_control(frame, Duration::from_millis(10)).is_ok()
        });
    }

    /// The receiving `work`; an error ends the stream once downstream has what arrived.
    fn receive(&mut self, out: &mut Output<T>) -> Result<Work, NodeError> {
        if self.done {
            return Ok(Work::Done);
        }
        if self.session.is_none() && !self.establish(out)? {
            return Ok(Work::Progress);
        }
        if self.opts.fenced && self.last_accept.elapsed() >= ACCEPT_EVERY {
            // A standby, or a newer primary, may come while the primary sends.
            self.last_accept = Instant::now();
            self.accept_fenced(out, Duration::ZERO)?;
            if self.session.is_none() {
                return Ok(Work::Progress);
            }
        }
        let capacity = out.capacity();
        let mut outcome = Step::Idle;
        let mut moved = false;
        let mut turns = 0;
        while turns < TURNS {
            if self
                .session
                .as_ref()
                .is_none_or(|s| s.stash_at == s.stash_len)
            {
                turns += 1;
            }
            match self.step(out) {
                Ok(Step::Moved) => moved = true,
                Ok(Step::Message) => {
                    moved = true;
                    break;
                }
                Ok(step) => {
                    outcome = step;
                    break;
                }
                Err(e) => {
                    self.lose(e)?;
                    return Ok(Work::Progress);
                }
            }
        }
        let received = self.received(out);
        let ack_every = (capacity / 4).max(1) as u64;
        let idle = !matches!(outcome, Step::Moved);
        // How far the sender's view lags: what it may release, and the room it may fill.
        // (Messages received since the last ACK count too: the sender keeps them till then.)
        let behind = (self.ackable(received) - self.acked)
            .max(
                received
                    .saturating_add(capacity as u64)
                    .saturating_sub(self.credited),
            )
            .max(self.next_message - self.msg_acked);
        let welcomed = self.session.as_ref().is_some_and(|s| s.hello.is_some());
        let delayed = idle && self.last_ack.elapsed() >= ACK_DELAY;
        if welcomed && (self.ack_due || (behind > 0 && (delayed || behind >= ack_every))) {
            if let Err(e) = self.acknowledge(received, capacity) {
                self.lose(e)?;
                return Ok(Work::Progress);
            }
        }
        match outcome {
            Step::End(end) => {
                // acknowledge() above covered everything received; the END's offset is the
                // data's end.
                if self.acked < self.ackable(end) {
                    if let Err(e) = self.acknowledge(end, capacity) {
                        self.lose(e)?;
                        return Ok(Work::Progress);
                    }
                }
                self.done = true;
                // The standbys have their last ACK: they end with their input. A sender that
                // comes now (a standby promoted after the stream ended) is refused at once.
                self.standbys.clear();
                self.endpoint.close();
                // (What it counted stays for the warnings.)
                self.accept_warning = self.acceptor.take().and_then(|a| a.warning());
                if let (Acknowledge::External(handle), Some(s)) =
                    (&self.opts.ack, self.session.take())
                {
                    if self.acked < end {
                        // The stream ends here, but the sender may release the last items
                        // only as they are acknowledged downstream.
                        ack_until_end(
                            s.conn,
                            handle.clone(),
                            (self.acked, end, self.opts.vlen() as u64),
                            self.opts.resume_timeout,
                        );
                    }
                }
                self.session = None;
                Ok(Work::Done)
            }
            Step::NeedOutput(items) => Ok(Work::NeedOutput { port: 0, items }),
            _ if moved => {
                self.backoff.reset();
                self.spun = false;
                Ok(Work::Progress)
            }
            _ => {
                let s = self.session.as_mut().expect("connected");
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
                // Once after something came, look for more without sleeping (opts.spin).
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
    }
}

/// Refuses a connection: an ERROR frame to the peer (best effort) and a line on stderr.
fn refuse(mut stream: Link, peer: &str, why: &str) {
    // At most a line a second (a peer that reconnects in a loop must not flood the log).
    static REFUSALS: std::sync::Mutex<crate::accept::RateLog> =
        std::sync::Mutex::new(crate::accept::RateLog::new());
    REFUSALS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .line(
            Duration::from_secs(1),
            &format!("refused {peer}: {}", crate::escape::text(why)),
        );
    let _ = stream
        .stream
        .set_write_timeout(Some(Duration::from_millis(100)));
    let _ = stream.write_all(&wire::error(why));
}

/// A connection that completed its handshake and HELLO on an acceptor's helper.
struct Arrival {
    link: Link,
    /// The peer's address, for messages.
    peer: String,
    /// The HELLO frame's bytes, as received (at most a header and `MAX_CONTROL` bytes).
    raw: Vec<u8>,
}

/// Reads a new connection's first frame, which must be a HELLO, within the admission's budget
/// (blocking: this runs on an acceptor's helper): the HELLO and its bytes.
fn read_first_hello(
    link: &mut Link,
    decoder: &mut Decoder,
    admission: &Admission,
) -> Result<(Hello, Vec<u8>), NetError> {
    let peer = admission.peer.to_string();
    link.stream
        .set_nonblocking(false)
        .map_err(|e| io_err(&peer, 0, "socket setup", &e))?;
    let mut raw = Vec::new();
    loop {
        let Need::Control(n) = decoder.need() else {
            unreachable!("a connection starts with control frames");
        };
        // Each read waits at most for what is left of the budget; the acceptor shuts the
        // socket down when the budget ends, so a trickle of bytes cannot stretch it.
        let left = admission.left();
        if left.is_zero() {
            return Err(io_err(
                &peer,
                0,
                "read HELLO",
                &std::io::ErrorKind::TimedOut.into(),
            ));
        }
        link.stream
            .set_read_timeout(Some(left))
            .map_err(|e| io_err(&peer, 0, "socket setup", &e))?;
        let space = decoder.control_space();
        link.read_exact(space)
            .map_err(|e| io_err(&peer, 0, "read HELLO", &e))?;
        raw.extend_from_slice(space);
        match decoder.control_filled(n)? {
            None => {}
            Some(Event::Hello(h)) => return Ok((h, raw)),
            Some(other) => {
                return Err(NetError::Protocol {
                    peer,
                    offset: 0,
                    kind: "HELLO",
                    what: format!("expected HELLO first, got {other:?}"),
                })
            }
        }
    }
}

/// Feeds a HELLO's bytes (from [`read_first_hello`]) through `decoder`.
fn replay(decoder: &mut Decoder, mut raw: &[u8]) -> Result<Hello, NetError> {
    while let Need::Control(n) = decoder.need() {
        if raw.len() < n {
            break;
        }
        decoder.control_space().copy_from_slice(&raw[..n]);
        raw = &raw[n..];
        if let Some(Event::Hello(h)) = decoder.control_filled(n)? {
            return Ok(h);
        }
    }
    Err(NetError::Config(
        "a HELLO taken by the acceptor did not decode again (a bug)".into(),
    ))
}

/// Refuses a connection on an acceptor's helper: an ERROR frame to the peer (best effort);
/// the acceptor logs why.
fn refuse_quietly(mut stream: Link, why: &str) {
    let _ = stream
        .stream
        .set_write_timeout(Some(Duration::from_millis(100)));
    let _ = stream.write_all(&wire::error(why));
}
