//! `zmq_pub_msg_sink`, `zmq_push_msg_sink`, `zmq_rep_msg_sink`, `zmq_sub_msg_source`,
//! `zmq_pull_msg_source`, `zmq_req_msg_source`: gr-zeromq's message blocks. Each message
//! travels as one ZeroMQ frame holding its PMT serialization (GNU Radio's
//! `pmt::serialize_str`, which [`sluice_pmt`] writes byte for byte), so these blocks talk to
//! GNU Radio's blocks of the same names and to any libzmq peer that sends such frames.
//!
//! REQ/REP is gr-zeromq's: the REQ source asks for one message at a time (a 4-byte request
//! holding the integer 1, as GNU Radio sends it) and asks again once the reply came and its
//! output had room; the REP sink answers each request with its next message, and reads a
//! request only when it has a message to answer with, as GNU Radio's does.
//!
//! A source never trusts its peers: a frame longer than `max_frame` closes that peer's
//! connection before any of it is kept (the socket refuses it from its header), the bytes of a
//! frame are kept only as they arrive (a peer that announces a long frame and sends nothing
//! costs nothing), and a frame that is not one whole PMT value is dropped, counted and reported
//! with the peer's address and the first bytes in hex, never printed as it came.
//!
//! A message of several frames (GNU Radio never sends one) is taken frame by frame, each frame
//! a message of its own, as GNU Radio's sources take it.

use crate::{Sent, Socket, SocketOptions, SocketType, ZmqError, ZmqOptions};
use sluice_runtime::{
    Inbox, Message, MessageIn, MessageKind, MessageOut, Node, NodeError, Ports, Recv, Work, WorkIo,
};
use std::fmt::Write as _;
use std::time::Duration;

/// Bytes of a frame taken from the socket at once: a frame's buffer grows by at most this
/// much beyond what has come.
const CHUNK: usize = 64 << 10;

/// A buffer larger than this is given back after its message instead of kept for the next.
const KEEP: usize = 1 << 20;

/// How many messages one `work` call handles before it returns to the scheduler.
const BATCH: usize = 256;

/// Bytes of an undecodable frame shown in its warning.
const SHOWN: usize = 16;

/// A gr-zeromq-compatible message sink over a PUB, PUSH or REP socket: every message of its
/// input `in` leaves as one frame of its PMT serialization.
#[derive(Debug)]
pub struct ZmqMsgSink {
    socket: Socket,
    opts: ZmqOptions,
    inp: MessageIn,
    ports: Ports,
    /// The serialization of a message the socket has not taken yet.
    pending: Option<Vec<u8>>,
    /// REP: a request came whole and waits for its answer.
    requested: bool,
    /// REP: a frame of a request is being taken; whether it is the request's last.
    in_request: Option<bool>,
    /// REP: answers not sent because their requester left (the message went to the next).
    orphaned: u64,
    /// Messages never sent: the graph stopped while no peer would take them.
    unsent: u64,
    messages: u64,
    /// Messages that have no PMT serialization (nested too deep, a symbol too long).
    unencodable: u64,
    last_unencodable: Option<String>,
}

impl ZmqMsgSink {
    /// A sink on a socket of `kind` (PUB, PUSH or REP) with `opts` (`address`, `bind`,
    /// `timeout` and the socket's limits; the stream options are not used).
    pub fn new(kind: SocketType, opts: ZmqOptions) -> Result<Self, ZmqError> {
        if !matches!(kind, SocketType::Pub | SocketType::Push | SocketType::Rep) {
            return Err(ZmqError::Config(format!(
                "a message sink needs a PUB, PUSH or REP socket, not {}",
                kind.name()
            )));
        }
        let socket = Socket::new(kind, &opts.address, opts.bind, opts.socket_options())?;
        let mut ports = Ports::new();
        let inp = ports.add_message_input("in", MessageKind::Any, Inbox::DEFAULT);
        Ok(ZmqMsgSink {
            socket,
            opts,
            inp,
            ports,
            pending: None,
            requested: false,
            in_request: None,
            orphaned: 0,
            unsent: 0,
            messages: 0,
            unencodable: 0,
            last_unencodable: None,
        })
    }

    /// The bound address, for a sink that binds (its port when it asked for port 0).
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.socket.local_addr()
    }

    /// REP: whether a request waits for its answer, taking what has come of the next one.
    /// Its body is not looked at: each request is answered with one message, whatever count
    /// it holds (GNU Radio's REQ always asks for 1). Never waits.
    fn request(&mut self) -> Result<bool, ZmqError> {
        while !self.requested {
            if self.in_request.is_none() {
                let Some(frame) = self.socket.next_frame()? else {
                    return Ok(false);
                };
                self.in_request = Some(!frame.more);
            }
            while self.socket.remaining() > 0 {
                match self.socket.skip(self.socket.remaining()) {
                    Ok(0) => return Ok(false),
                    Ok(_) => {}
                    Err(e) if e.is_peer() => {
                        // The requester left mid-request: nobody to answer.
                        self.in_request = None;
                        return Ok(false);
                    }
                    Err(e) => return Err(e),
                }
            }
            // A request of several frames is answered once, after its last.
            self.requested = self.in_request.take() == Some(true);
        }
        Ok(true)
    }
}

impl Node for ZmqMsgSink {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let stop = io.stop_requested();
        let input = io.inputs.message(self.inp.index())?;
        for _ in 0..BATCH {
            if self.pending.is_some() && self.socket.kind() == SocketType::Rep && !self.request()? {
                if stop {
                    self.unsent += 1;
                    return Ok(Work::Done);
                }
                self.socket.wait(self.opts.slice(), false);
                return Ok(Work::Progress);
            }
            if let Some(bytes) = &self.pending {
                match self.socket.send(&[&[bytes]])? {
                    Sent::Done => {
                        self.pending = None;
                        self.requested = false;
                        self.messages += 1;
                    }
                    Sent::NoPeer if self.socket.kind() == SocketType::Rep => {
                        // The requester left before its answer went out: the message answers
                        // the next request (libzmq would drop it).
                        self.requested = false;
                        self.orphaned += 1;
                    }
                    // A PUSH with no peer holds its message, as libzmq's does; once the graph
                    // is asked to stop, nobody will come for it.
                    Sent::NoPeer if stop => {
                        self.unsent += 1;
                        return Ok(Work::Done);
                    }
                    Sent::Pending | Sent::NoPeer => {
                        self.socket.wait(self.opts.slice(), true);
                        return Ok(Work::Progress);
                    }
                }
            }
            match input.recv()? {
                Recv::Message(msg) => {
                    let mut bytes = Vec::new();
                    match sluice_pmt::encode(&msg, &mut bytes) {
                        Ok(()) => self.pending = Some(bytes),
                        Err(e) => {
                            self.unencodable += 1;
                            self.last_unencodable = Some(e.to_string().escape_debug().to_string());
                        }
                    }
                }
                Recv::Empty => {
                    // Small messages wait in a batch until the socket is polled: write them
                    // out now, and keep polling while the kernel has not taken them all, so
                    // that the last message of a burst does not wait for the next one.
                    self.socket.poll()?;
                    if self.socket.has_unsent() && !stop {
                        self.socket.wait(self.opts.slice(), true);
                        return Ok(Work::Progress);
                    }
                    return Ok(self.inp.need());
                }
                // What is still unsent is written by `stop` (the socket lingers).
                Recv::Ended => return Ok(Work::Done),
            }
        }
        Ok(Work::Progress)
    }

    fn stop(&mut self) {
        self.socket.linger(Duration::from_secs(1));
    }

    fn warnings(&mut self) -> Vec<String> {
        let mut w = Vec::new();
        if self.unencodable > 0 {
            w.push(format!(
                "{} messages have no PMT serialization and were not sent ({} were); the last: {}",
                self.unencodable,
                self.messages,
                self.last_unencodable.as_deref().unwrap_or("-")
            ));
        }
        let dropped = self.socket.dropped();
        if dropped > 0 {
            w.push(format!(
                "{dropped} messages were not sent to a subscriber whose socket was full; {} messages were sent",
                self.messages
            ));
        }
        if self.orphaned > 0 {
            w.push(format!(
                "{} answers were not sent because their requester left (their messages answered the next request)",
                self.orphaned
            ));
        }
        if self.unsent > 0 {
            w.push(format!(
                "the graph stopped while no peer would take the next message ({} sent)",
                self.messages
            ));
        }
        w.extend(crate::sink::refusals(&self.socket));
        w
    }
}

/// A gr-zeromq-compatible message source over a SUB (subscribed to everything, as GNU
/// Radio's is), PULL or REQ socket: each frame that arrives is decoded as one PMT value and
/// sent on its output `out`.
#[derive(Debug)]
pub struct ZmqMsgSource {
    socket: Socket,
    opts: ZmqOptions,
    out: MessageOut,
    ports: Ports,
    /// The frame being received.
    body: Vec<u8>,
    /// The peer of the frame being received; `None` between frames.
    from: Option<String>,
    /// A decoded message the output had no room for.
    held: Option<Message>,
    /// REQ: a request is out and its answer has not come whole.
    asked: bool,
    messages: u64,
    undecodable: u64,
    last_undecodable: Option<String>,
    /// Frames cut short by a peer that left or stalled in the middle.
    lost: u64,
}

enum Step {
    /// A frame was taken or its bytes came.
    Moved,
    /// Nothing has come.
    Idle,
    /// The output is full: the message is held.
    Full,
}

impl ZmqMsgSource {
    /// A source on a socket of `kind` (SUB, PULL or REQ) with `opts` (`address`, `bind`,
    /// `timeout`, `max_frame` and the socket's limits; the stream options are not used).
    pub fn new(kind: SocketType, opts: ZmqOptions) -> Result<Self, ZmqError> {
        if !matches!(kind, SocketType::Sub | SocketType::Pull | SocketType::Req) {
            return Err(ZmqError::Config(format!(
                "a message source needs a SUB, PULL or REQ socket, not {}",
                kind.name()
            )));
        }
        // gr-zeromq's sub_msg_source subscribes to everything.
        let sopts = SocketOptions {
            subscribe: Vec::new(),
            ..opts.socket_options()
        };
        let socket = Socket::new(kind, &opts.address, opts.bind, sopts)?;
        let mut ports = Ports::new();
        let out = ports.add_message_output("out", MessageKind::Any);
        Ok(ZmqMsgSource {
            socket,
            opts,
            out,
            ports,
            body: Vec::new(),
            from: None,
            held: None,
            asked: false,
            messages: 0,
            undecodable: 0,
            last_undecodable: None,
            lost: 0,
        })
    }

    /// The bound address, for a source that binds (its port when it asked for port 0).
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.socket.local_addr()
    }

    /// Takes what has come of the next frame; a whole one is decoded and sent.
    fn step(&mut self, io: &mut WorkIo<'_>) -> Result<Step, NodeError> {
        if self.from.is_none() {
            if self.socket.kind() == SocketType::Req && !self.asked {
                // gr-zeromq's request: a host-order int holding 1 (one message).
                match self.socket.send(&[&[&1i32.to_le_bytes()]])? {
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
            // The socket refused a frame over max_frame from its header; this one is within.
            self.from = Some(self.socket.frame_peer().unwrap_or("-").to_string());
            self.body.clear();
        }
        while self.socket.remaining() > 0 {
            let at = self.body.len();
            let want = usize::try_from(self.socket.remaining())
                .unwrap_or(usize::MAX)
                .min(CHUNK);
            self.body.resize(at + want, 0);
            match self.socket.read_into(&mut self.body[at..]) {
                Ok(got) => {
                    self.body.truncate(at + got);
                    if got == 0 {
                        return Ok(Step::Idle);
                    }
                }
                Err(e) if e.is_peer() => {
                    // The peer left or stalled mid-frame: what came of it is dropped (and a
                    // REQ asks again).
                    self.lost += 1;
                    self.asked = false;
                    self.from = None;
                    self.body.clear();
                    return Ok(Step::Moved);
                }
                Err(e) => return Err(e.into()),
            }
        }
        let from = self.from.take().unwrap_or_default();
        let decoded = sluice_pmt::from_bytes(&self.body);
        if self.body.capacity() > KEEP {
            self.body = Vec::new();
        }
        match decoded {
            Ok(msg) => {
                self.messages += 1;
                if let Some(m) = self.send(io, msg)? {
                    self.held = Some(m);
                    return Ok(Step::Full);
                }
            }
            Err(e) => {
                self.undecodable += 1;
                self.last_undecodable = Some(undecodable(&from, &self.body, &e));
            }
        }
        Ok(Step::Moved)
    }

    /// Sends `msg` on the output: the message back if the output is full.
    fn send(&self, io: &mut WorkIo<'_>, msg: Message) -> Result<Option<Message>, NodeError> {
        Ok(match io.outputs.message(self.out.index())?.send(msg)? {
            sluice_runtime::Sent::Delivered => None,
            sluice_runtime::Sent::Full(m) => Some(m),
        })
    }
}

/// The warning for a frame from `peer` that is not a PMT: the peer, the decoder's error and
/// the frame's first bytes in hex (none of it as the peer sent it).
fn undecodable(peer: &str, body: &[u8], e: &sluice_pmt::PmtError) -> String {
    let mut hex = String::new();
    for b in body.iter().take(SHOWN) {
        let _ = write!(hex, "{b:02x}");
    }
    if body.len() > SHOWN {
        hex.push('…');
    }
    format!(
        "peer {}: a frame of {} bytes is not a PMT value ({}); it starts {}",
        peer.escape_debug(),
        body.len(),
        e.to_string().escape_debug(),
        if hex.is_empty() { "empty" } else { &hex }
    )
}

impl Node for ZmqMsgSource {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if io.stop_requested() {
            return Ok(Work::Done);
        }
        if let Some(msg) = self.held.take() {
            if let Some(m) = self.send(io, msg)? {
                self.held = Some(m);
                return Ok(self.out.need());
            }
        }
        let mut moved = false;
        for _ in 0..BATCH {
            match self.step(io)? {
                Step::Moved => moved = true,
                Step::Full => return Ok(self.out.need()),
                Step::Idle => {
                    if !moved {
                        self.socket.wait(self.opts.slice(), false);
                    }
                    break;
                }
            }
        }
        Ok(Work::Progress)
    }

    fn stop(&mut self) {
        self.socket.linger(Duration::from_millis(100));
    }

    fn warnings(&mut self) -> Vec<String> {
        let mut w = Vec::new();
        if self.undecodable > 0 {
            w.push(format!(
                "{} frames were not PMT values and were dropped ({} messages were received); the last: {}",
                self.undecodable,
                self.messages,
                self.last_undecodable.as_deref().unwrap_or("-")
            ));
        }
        if self.lost > 0 {
            w.push(format!(
                "{} messages were cut short by a peer that left or stalled mid-message, or was refused, and dropped",
                self.lost
            ));
        }
        w.extend(crate::sink::refusals(&self.socket));
        w
    }
}
