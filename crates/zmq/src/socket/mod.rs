//! A ZeroMQ socket over std TCP: one listener or one address to connect to, any number of
//! peers, non-blocking throughout (the blocks call it from `work` and wait with
//! [`Socket::wait`]).
//!
//! **Receive.** [`Socket::next_frame`] processes headers and commands (answering PING, applying
//! subscriptions, stripping REQ/REP envelopes) until a data frame starts, and returns its length.
//! The caller then takes the body with [`Socket::read_into`] (straight from the socket into the
//! caller's slice: a queue's reservation), after looking at its start with [`Socket::peek`] if it
//! needs to (the gr-zeromq tag header). After a small frame the socket reads ahead up to
//! [`READ_AHEAD`] bytes, so many small messages cost one system call; after a large one it reads
//! only the next header, so a large body is never copied.
//!
//! **Send.** [`Socket::send`] writes a message (frames made of slices: a header and a queue
//! window) with one vectored write per peer, straight from the caller's memory; a partial write
//! is remembered and the caller calls again with the same message until it returns
//! [`Sent::Done`].

mod accept;
mod incoming;
mod peer;
mod send;
mod subs;

use crate::zmtp::SocketType;
use crate::ZmqError;
use incoming::PumpError;
use peer::{Peer, Tx};
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use sluice_net::accept::{Backoff, RateLog};
use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

/// A data frame at most this long counts as small: after it the socket reads ahead.
pub const SMALL_FRAME: u64 = 8 << 10;
/// The read-ahead buffer per peer.
pub const READ_AHEAD: usize = 64 << 10;
/// How often a binding socket with peers looks for new connections.
const ACCEPT_EVERY: Duration = Duration::from_millis(5);
/// How often a PUSH socket reads what its peers sent (PINGs, ERRORs) while it sends: not at
/// every message, since each read is a system call (a third of the time of 100-byte messages).
const CONTROL_READ_EVERY: Duration = Duration::from_millis(1);
/// How often a connecting socket retries.
const RECONNECT: Duration = Duration::from_millis(100);
/// The longest internal frame a socket keeps whole (subscriptions, envelopes).
const SMALL_LIMIT: u64 = 4096;
/// Messages up to this size are copied into a per-peer batch and written together (as
/// libzmq's encoder batches them): one system call for many small messages.
pub const SMALL_MESSAGE: u64 = 8 << 10;
/// A batch is written once it holds this much, or when the socket waits or is polled.
const BATCH: usize = 64 << 10;

/// Options of a [`Socket`].
#[derive(Debug, Clone)]
pub struct SocketOptions {
    /// Data frames longer than this are refused.
    pub max_frame: u64,
    /// PUB: skip (and count) a subscriber whose socket is full when a message starts, instead
    /// of waiting for it (gr-zeromq's `drop_on_hwm`).
    pub drop_on_hwm: bool,
    /// SUB: the topic prefix subscribed to at connect (empty: everything).
    pub subscribe: Vec<u8>,
    /// SUB: send the subscription as ZMTP 3.1's SUBSCRIBE command to 3.1 peers (otherwise
    /// ZMTP 3.0's `01`-prefixed message, which every ZMTP 3 peer takes).
    pub subscribe_command: bool,
    /// A connection whose greeting and READY have not both come within this is closed
    /// (libzmq's `ZMQ_HANDSHAKE_IVL`; 30 s).
    pub handshake_ivl: Duration,
    /// A binding socket's most connections at once; one beyond is closed at once (1024).
    pub max_peers: usize,
    /// A binding socket's most connections from one source address whose handshake has not
    /// ended; one beyond is closed at once, so that one host's silent connections cannot
    /// take every place of `max_peers` (8, as the stream blocks' `max_pending_per_ip`).
    pub max_pending_per_ip: usize,
    /// A peer that sends nothing for this long while it owes the rest of a frame or of a
    /// multi-frame message is closed, and its partial message dropped (10 s).
    pub frame_timeout: Duration,
    /// PUSH, REQ, REP: the most bytes queued for one peer beyond what its kernel socket buffer
    /// took (its high-water mark); PUSH gives a message to the next peer with room (256 KiB).
    pub hwm_bytes: usize,
    /// PUB: the most distinct topics one subscriber may hold; a subscription beyond closes
    /// its connection (1024). Repeats of a topic are counted, not stored.
    pub max_subscriptions: usize,
    /// How long accepting first pauses after `accept` failed for lack of a resource (out of
    /// descriptors: EMFILE, ENFILE, ENOBUFS, ENOMEM); the pause doubles at each failure in a
    /// row up to 1 s and the peers are served meanwhile (10 ms; see
    /// [`sluice_net::accept::Backoff`]). Other accept errors (ECONNABORTED) pause nothing.
    pub accept_backoff: Duration,
    /// Refusals and accept failures are logged at most once per this interval (1 s).
    pub log_interval: Duration,
}

impl Default for SocketOptions {
    fn default() -> Self {
        SocketOptions::defaults()
    }
}

/// A data frame that started (see [`Socket::next_frame`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Body length.
    pub len: u64,
    /// More frames of this message follow.
    pub more: bool,
    /// Whether this is the first frame of a message.
    pub first: bool,
}

/// What [`Socket::send`] achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// The whole message went out (to every peer it was for).
    Done,
    /// Not yet (nothing or part of it written): call again with the same message.
    Pending,
    /// No peer to send to yet.
    NoPeer,
}

/// A ZeroMQ socket of one [`SocketType`] (see the module docs).
#[derive(Debug)]
pub struct Socket {
    kind: SocketType,
    opts: SocketOptions,
    listener: Option<TcpListener>,
    connect: Option<String>,
    next_connect: Instant,
    /// When the listener is next asked for new connections.
    next_accept: Instant,
    /// When a sending PUSH socket next reads its peers' control traffic.
    next_control_read: Instant,
    peers: Vec<Peer>,
    rr: usize,
    /// Peer whose frame is being delivered (its body not yet taken).
    current: Option<usize>,
    /// The peer whose multi-frame message is being delivered.
    sticky: Option<usize>,
    /// REP: the peer to answer. REQ: the peer asked.
    partner: Option<usize>,
    dropped: u64,
    disconnects: u64,
    /// Accepting pauses until then (after an accept error).
    accept_paused: Option<Instant>,
    /// A connecting socket: since when its handshakes have been cut off before the peer's
    /// greeting came (see `fail_peer`); `None` once one got through.
    cut_off_since: Option<Instant>,
    /// When the handshake deadlines are next looked at.
    next_sweep: Instant,
    refused: u64,
    accept_failures: u64,
    backoff: Backoff,
    log: RateLog,
    last_refusal: Option<String>,
    /// The peer of the current frame was lost: the next body call says so.
    lost_current: bool,
    /// The coarse clock's reading (ms) when the socket last read the clock (see
    /// [`Socket::clock`]).
    tick: u64,
    /// The socket waited since it last read the clock.
    woke: bool,
}

fn would_block(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted)
}

impl Socket {
    /// A socket of `kind` on `address` (`tcp://host:port`; `tcp://*:port` binds all
    /// interfaces): binds now when `bind`, else connects (and reconnects) in the background of
    /// the calls.
    pub fn new(
        kind: SocketType,
        address: &str,
        bind: bool,
        opts: SocketOptions,
    ) -> Result<Socket, ZmqError> {
        let hostport = address.strip_prefix("tcp://").ok_or_else(|| {
            ZmqError::Config(format!(
                "bad ZeroMQ address '{address}': only tcp://host:port is supported (ipc:// and inproc:// are not)"
            ))
        })?;
        if !hostport.contains(':') {
            return Err(ZmqError::Config(format!(
                "bad ZeroMQ address '{address}': no port"
            )));
        }
        let backoff = Backoff::new(opts.accept_backoff);
        let mut s = Socket {
            kind,
            opts,
            listener: None,
            connect: None,
            next_connect: Instant::now(),
            next_accept: Instant::now(),
            next_control_read: Instant::now(),
            peers: Vec::new(),
            rr: 0,
            current: None,
            sticky: None,
            partner: None,
            dropped: 0,
            disconnects: 0,
            accept_paused: None,
            cut_off_since: None,
            next_sweep: Instant::now(),
            refused: 0,
            accept_failures: 0,
            backoff,
            log: RateLog::with_prefix("sluice-zmq"),
            last_refusal: None,
            lost_current: false,
            tick: 0,
            woke: true,
        };
        if bind {
            let at = hostport.replacen('*', "0.0.0.0", 1);
            let l = TcpListener::bind(&at)
                .map_err(|e| ZmqError::Config(format!("cannot bind {address}: {e}")))?;
            l.set_nonblocking(true)
                .map_err(|e| ZmqError::Config(format!("cannot bind {address}: {e}")))?;
            s.listener = Some(l);
        } else {
            s.connect = Some(hostport.to_string());
        }
        Ok(s)
    }

    /// The socket's type.
    pub fn kind(&self) -> SocketType {
        self.kind
    }

    /// The bound address of a binding socket (its port when it asked for port 0).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// PUB: messages not sent to a subscriber because its socket was full (drop_on_hwm).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// PUB: peers with at least one subscription.
    pub fn subscribers(&self) -> usize {
        self.peers.iter().filter(|p| !p.subs.is_empty()).count()
    }

    /// Connections that ended (the peer closed or reset).
    pub fn disconnects(&self) -> u64 {
        self.disconnects
    }

    /// Connections closed for the peer's misbehaviour (protocol error, oversize frame, wrong
    /// mechanism, no handshake in time, a stall mid-frame, one beyond `max_peers`).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// What the last refusal's log line said (see [`Socket::refused`]).
    pub fn last_refusal(&self) -> Option<&str> {
        self.last_refusal.as_deref()
    }

    /// Times `accept` failed (transient: accepting paused, the socket went on).
    pub fn accept_failures(&self) -> u64 {
        self.accept_failures
    }

    /// Open connections, in the handshake or not.
    pub fn peers(&self) -> usize {
        self.peers.len()
    }

    /// PUB: the distinct topics held over all subscribers.
    pub fn subscriptions(&self) -> usize {
        self.peers.iter().map(|p| p.subs.len()).sum()
    }

    /// Peers whose READY came.
    pub fn ready_peers(&self) -> usize {
        self.peers.iter().filter(|p| p.dec.is_ready()).count()
    }

    fn describe(&self) -> String {
        match (&self.connect, self.local_addr()) {
            (Some(a), _) => a.clone(),
            (None, Some(a)) => format!("(bound to {a})"),
            (None, None) => "(bound)".to_string(),
        }
    }

    fn drop_peer(&mut self, i: usize) {
        if self.current == Some(i) {
            self.lost_current = true;
        }
        self.peers.remove(i);
        self.disconnects += 1;
        let fix = |slot: &mut Option<usize>| {
            *slot = match *slot {
                Some(j) if j == i => None,
                Some(j) if j > i => Some(j - 1),
                other => other,
            }
        };
        fix(&mut self.current);
        fix(&mut self.sticky);
        fix(&mut self.partner);
        if self.connect.is_some() {
            self.next_connect = Instant::now() + RECONNECT;
        }
    }

    /// Accepts new peers, (re)connects, and flushes pending control bytes and batched small
    /// messages (all of them when `all`, else only batches that are full). Returns the time
    /// when it read the clock (see [`Socket::clock`]).
    fn service(&mut self, all: bool) -> Result<Option<Instant>, ZmqError> {
        let now = self.clock();
        if let Some(now) = now {
            self.admit(now)?;
        }
        let mut i = 0;
        while i < self.peers.len() {
            let later = !all && self.peers[i].out.len() < BATCH && self.peers[i].dec.is_ready();
            if later || self.flush(i)? {
                i += 1;
            } else {
                // Read what it sent before it left: its READY says why, if it came.
                let _ = self.fill(i, READ_AHEAD);
                if let Err(PumpError::Zmq(e)) = self.pump_inner(i, true) {
                    self.fail_peer(i, e)?;
                } else if self.left_in_handshake(i) {
                    let e = self.handshake_error(i);
                    self.fail_peer(i, e)?;
                } else {
                    self.drop_peer(i);
                }
            }
        }
        if self.cut_off_since.is_some() && self.peers.iter().any(|p| p.dec.is_ready()) {
            self.cut_off_since = None;
        }
        Ok(now)
    }

    /// The time, when the accepts, the handshake deadlines and the control reads (each due
    /// every millisecond or more) may be due: at the first call after the kernel's coarse
    /// clock ticked (every 1 to 4 ms), after a wait, and at every call of a socket without
    /// peers; else `None`. A socket moving millions of messages a second thus reads the
    /// precise clock a few hundred times a second, not at every message (each read cost about
    /// a sixth of a 100-byte message), and one moving few still reads it at every call.
    fn clock(&mut self) -> Option<Instant> {
        // The coarse clock is the kernel's last tick, read from memory without a timer read.
        let t = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
        let tick = (t.tv_sec as u64).wrapping_mul(1000) + t.tv_nsec as u64 / 1_000_000;
        if tick == self.tick && !self.woke && !self.peers.is_empty() {
            return None;
        }
        self.tick = tick;
        self.woke = false;
        Some(Instant::now())
    }

    /// Services the socket and looks for the start of the next data frame for the caller
    /// (see the module docs); `None` if none has come. The body must then be taken whole
    /// ([`Socket::read_into`] / [`Socket::skip`]) before the next call.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, ZmqError> {
        assert!(
            self.current.is_none(),
            "next_frame before the body of the last frame was taken ({})",
            self.describe()
        );
        self.lost_current = false;
        self.service(true)?;
        // The peer of a message's next frame, or each peer in turn from `rr`: no list is
        // made, this runs once per message.
        let (n, sticky, rr) = (self.peers.len(), self.sticky, self.rr);
        let tries = if sticky.is_some() { 1 } else { n };
        for k in 0..tries {
            let i = sticky.unwrap_or((rr + k) % n.max(1));
            match self.pump(i, false) {
                Ok(Some(frame)) => {
                    self.current = (frame.len > 0).then_some(i);
                    self.sticky = frame.more.then_some(i);
                    if !frame.more {
                        self.rr = i + 1;
                    }
                    if self.kind == SocketType::Rep && frame.first {
                        self.partner = Some(i);
                    }
                    if self.kind == SocketType::Req && !frame.more {
                        self.partner = None;
                    }
                    return Ok(Some(frame));
                }
                Ok(None) => {}
                Err(PumpError::Lost) => {
                    self.drop_peer(i);
                    return Ok(None);
                }
                Err(PumpError::Zmq(e)) => {
                    self.fail_peer(i, e)?;
                    return Ok(None);
                }
            }
        }
        Ok(None)
    }

    /// The peer the current frame comes from (its address), while its body is being taken
    /// or more frames of its message follow: what a caller names when the message it got
    /// cannot be used.
    pub fn frame_peer(&self) -> Option<&str> {
        self.current
            .or(self.sticky)
            .and_then(|i| self.peers.get(i))
            .map(|p| p.name.as_str())
    }

    /// Whether sent bytes still wait in some peer's buffer (a batch of small messages, or a
    /// message the kernel did not take whole): a sender with nothing more to send polls until
    /// this is false, so that its last messages are not held back until the next one.
    pub fn has_unsent(&self) -> bool {
        self.peers.iter().any(|p| !p.out.is_empty())
    }

    /// Body bytes of the current frame not yet taken.
    pub fn remaining(&self) -> u64 {
        self.current
            .and_then(|i| self.peers[i].dec.payload_remaining())
            .unwrap_or(0)
    }

    /// The first `n` body bytes of the current frame (`n` ≤ [`READ_AHEAD`] and ≤ what
    /// remains), if they have come; they stay untaken.
    pub fn peek(&mut self, n: usize) -> Result<Option<&[u8]>, ZmqError> {
        let i = self.current_peer()?;
        assert!(n as u64 <= self.remaining() && n <= READ_AHEAD);
        let p = &mut self.peers[i];
        if p.len - p.at < n {
            if p.at + n > p.stash.len() {
                p.stash.copy_within(p.at..p.len, 0);
                p.len -= p.at;
                p.at = 0;
            }
            let want = n - (self.peers[i].len - self.peers[i].at);
            match self.fill(i, want) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    let e = self.lost_mid_frame(i);
                    self.current = None;
                    self.sticky = None;
                    self.drop_peer(i);
                    self.lost_current = false;
                    return Err(e);
                }
                Err(e) => {
                    self.current = None;
                    self.sticky = None;
                    self.refuse(i, &e);
                    self.lost_current = false;
                    return Err(e);
                }
            }
        }
        let p = &self.peers[i];
        Ok((p.len - p.at >= n).then(|| &p.stash[p.at..p.at + n]))
    }

    /// The peer of the current frame; an error if it was lost since the frame started.
    fn current_peer(&mut self) -> Result<usize, ZmqError> {
        match self.current {
            Some(i) => Ok(i),
            None if std::mem::take(&mut self.lost_current) => Err(ZmqError::Io {
                peer: self.describe(),
                what: "receive",
                message: "the peer left in the middle of a frame".into(),
            }),
            None => panic!(
                "a frame body call without a current frame ({})",
                self.describe()
            ),
        }
    }

    /// Refuses the peer of the current frame for `why` (a message the caller cannot take: a
    /// bad tag header, a size that is not whole items); its partial message is the caller's
    /// to drop.
    pub fn refuse_current(&mut self, why: &ZmqError) {
        if let Some(i) = self.current.take().or(self.sticky) {
            self.sticky = None;
            self.refuse(i, why);
        }
        self.lost_current = false;
    }

    fn lost_mid_frame(&self, i: usize) -> ZmqError {
        ZmqError::Io {
            peer: self.peers[i].name.clone(),
            what: "receive",
            message: "the peer left in the middle of a frame".into(),
        }
    }

    /// Takes up to `dest.len()` body bytes of the current frame into `dest`: those read ahead
    /// first, the rest straight from the socket. Returns how many (0: none have come). A peer
    /// lost mid-frame is an error ([`ZmqError::is_peer`]); the caller discards the partial
    /// message and goes on.
    pub fn read_into(&mut self, dest: &mut [u8]) -> Result<usize, ZmqError> {
        let Some(i) = self.current else {
            if std::mem::take(&mut self.lost_current) {
                return Err(ZmqError::Io {
                    peer: self.describe(),
                    what: "receive",
                    message: "the peer left in the middle of a frame".into(),
                });
            }
            return Ok(0);
        };
        let remaining = self.remaining();
        let want = (dest.len() as u64).min(remaining) as usize;
        let p = &mut self.peers[i];
        let mut got = (p.len - p.at).min(want);
        dest[..got].copy_from_slice(&p.stash[p.at..p.at + got]);
        p.at += got;
        if got < want {
            match p.stream.read(&mut dest[got..want]) {
                Ok(0) => {
                    let e = self.lost_mid_frame(i);
                    self.current = None;
                    self.sticky = None;
                    self.drop_peer(i);
                    self.lost_current = false;
                    return Err(e);
                }
                Ok(k) => {
                    sluice_runtime::count_bytes(sluice_runtime::Direction::Received, k as u64);
                    got += k;
                }
                Err(e) if would_block(&e) => {
                    if got == 0 {
                        if let Some(e) = self.stalled(i) {
                            self.current = None;
                            self.sticky = None;
                            self.refuse(i, &e);
                            self.lost_current = false;
                            return Err(e);
                        }
                    }
                }
                Err(e) => {
                    let err = ZmqError::io(&self.peers[i].name, "receive", &e);
                    self.current = None;
                    self.sticky = None;
                    self.drop_peer(i);
                    self.lost_current = false;
                    return Err(err);
                }
            }
        }
        if got > 0 {
            self.progressed(i);
        }
        let p = &mut self.peers[i];
        p.dec.payload_done(got as u64);
        if p.dec.payload_remaining().is_none() {
            self.current = None;
        }
        Ok(got)
    }

    /// Discards up to `n` body bytes of the current frame (through a small buffer): how many.
    pub fn skip(&mut self, n: u64) -> Result<u64, ZmqError> {
        let mut scratch = [0u8; 4096];
        let mut done = 0;
        if self.current.is_none() {
            self.read_into(&mut [])?; // says whether the frame's peer was lost
        }
        while done < n && self.current.is_some() {
            let k = (n - done).min(scratch.len() as u64) as usize;
            let got = self.read_into(&mut scratch[..k])?;
            if got == 0 {
                break;
            }
            done += got as u64;
        }
        Ok(done)
    }

    /// Accepts, connects, flushes control bytes and, on sending sockets (PUB, PUSH), takes in
    /// what peers sent (subscriptions, PINGs). Sending sockets call it while they have nothing
    /// to send, so that subscriptions are known before the first message.
    pub fn poll(&mut self) -> Result<(), ZmqError> {
        self.poll_with(true)
    }

    /// [`Socket::poll`], flushing small-message batches only when full unless `all`.
    fn poll_with(&mut self, all: bool) -> Result<(), ZmqError> {
        let now = self.service(all)?;
        let control = matches!(self.kind, SocketType::Pub | SocketType::Push);
        if !all && self.kind == SocketType::Push {
            match now {
                Some(now) if now >= self.next_control_read => {
                    self.next_control_read = now + CONTROL_READ_EVERY;
                }
                _ => return Ok(()),
            }
        }
        {
            let mut i = 0;
            while i < self.peers.len() {
                if !control && (self.peers[i].dec.is_ready() || self.current == Some(i)) {
                    i += 1;
                    continue;
                }
                match self.pump(i, !control) {
                    Err(PumpError::Lost) => {
                        self.drop_peer(i);
                        continue;
                    }
                    Err(PumpError::Zmq(e)) => self.fail_peer(i, e)?,
                    Ok(_) => i += 1,
                }
            }
        }
        Ok(())
    }

    /// Closes gracefully: ends our sending side of every connection, then reads (and drops)
    /// what peers still send until they close or `limit` passes, so that the kernel delivers
    /// everything sent before it closes (closing with unread bytes would reset the connection).
    pub fn linger(&mut self, limit: Duration) {
        let start = Instant::now();
        while start.elapsed() < limit
            && self.peers.iter().any(|p| !p.out.is_empty())
            && self.service(true).is_ok()
        {
            self.wait(Duration::from_millis(10), true);
        }
        for p in &self.peers {
            let _ = p.stream.shutdown(std::net::Shutdown::Write);
        }
        let mut scratch = [0u8; 4096];
        while !self.peers.is_empty() && start.elapsed() < limit {
            self.peers.retain_mut(|p| {
                p.at = p.len;
                loop {
                    match p.stream.read(&mut scratch) {
                        Ok(0) => break false,
                        Ok(_) => continue,
                        Err(e) if would_block(&e) => break true,
                        Err(_) => break false,
                    }
                }
            });
            if !self.peers.is_empty() {
                self.wait(Duration::from_millis(10), false);
            }
        }
        self.peers.clear();
    }

    /// Waits up to `timeout` for something to do: a byte to read, room to write (when
    /// `writing`), a connection to accept or to retry.
    pub fn wait(&mut self, timeout: Duration, writing: bool) {
        self.woke = true; // the next call reads the clock
                          // Batched small messages go out before sleeping (a lost peer shows at the next call).
        for i in 0..self.peers.len() {
            let _ = self.flush(i);
        }
        let mut fds = Vec::with_capacity(self.peers.len() + 1);
        let paused = self.accept_paused.is_some_and(|t| Instant::now() < t);
        if let Some(l) = self.listener.as_ref().filter(|_| !paused) {
            fds.push(PollFd::new(l, PollFlags::IN));
        }
        for p in &self.peers {
            let mut flags = PollFlags::IN;
            if writing || !p.out.is_empty() {
                flags |= PollFlags::OUT;
            }
            if p.at < p.len {
                return; // bytes already read ahead
            }
            fds.push(PollFd::new(&p.stream, flags));
        }
        let mut timeout = timeout;
        if self.connect.is_some() && self.peers.is_empty() {
            timeout = timeout.min(self.next_connect.saturating_duration_since(Instant::now()));
        }
        if let Some(t) = self.accept_paused {
            timeout = timeout.min(t.saturating_duration_since(Instant::now()));
        }
        let ts = Timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        let _ = poll(&mut fds, Some(&ts));
    }
}
