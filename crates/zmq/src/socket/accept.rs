//! The accept path of [`Socket`]: new connections (accepted or connected), the cap on peers,
//! the handshake deadline, and refusals. A connection is *pending* until its READY came
//! (greeting and READY exchanged: the place where a security mechanism's handshake runs); only
//! then does it take or give data. Everything here is non-blocking and bounded, so that what
//! a peer does costs its own connection, never the socket:
//!
//! This is the accept path of `sluice-net`'s listeners (`sluice_net::accept`), on the socket's
//! own non-blocking loop: the same transient errors, backoff, caps and rate-limited log.
//!
//! * `accept` errors (EMFILE, ENFILE, ENOBUFS, ENOMEM, ECONNABORTED, ...) are transient: the
//!   socket logs them and serves its peers meanwhile; for lack of a resource it stops
//!   accepting for [`SocketOptions::accept_backoff`], doubling up to 1 s while the failures
//!   go on ([`sluice_net::accept::Backoff`]).
//! * A binding socket holds at most [`SocketOptions::max_peers`] connections, and at most
//!   [`SocketOptions::max_pending_per_ip`] from one source address whose handshake has not
//!   ended; one beyond either is closed at once (counted as refused).
//! * A connection whose handshake has not ended within [`SocketOptions::handshake_ivl`]
//!   (libzmq's `ZMQ_HANDSHAKE_IVL`) is closed, and so is one that stops for longer than
//!   [`SocketOptions::frame_timeout`] in the middle of a frame or message.
//! * A peer's protocol error, oversize frame or wrong mechanism closes that connection. Each
//!   refusal is counted ([`Socket::refused`]) and logged at most once per
//!   [`SocketOptions::log_interval`], with what the peer sent, escaped.
//!
//! Only a connecting socket's handshake errors (the address it was given is no fitting peer:
//! a configuration error) are returned to the caller.

use super::{Peer, Socket, SocketOptions, READ_AHEAD, RECONNECT};
use crate::decoder::Decoder;
use crate::zmtp;
use crate::ZmqError;
use sluice_net::accept::scarce;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// At most this many bytes of what a refused peer sent are shown.
const SHOWN: usize = 64;

impl Socket {
    /// Accepts pending connections (up to the cap), connects a connecting socket with no peer,
    /// and closes connections past their handshake deadline.
    pub(super) fn admit(&mut self, now: Instant) -> Result<(), ZmqError> {
        let accept_due = (self.peers.is_empty() || now >= self.next_accept)
            && self.accept_paused.is_none_or(|t| now >= t);
        if let Some(l) = self.listener.as_ref().filter(|_| accept_due) {
            // Looked at every few milliseconds, not at every message: accept() is a system call.
            self.next_accept = now + super::ACCEPT_EVERY;
            self.accept_paused = None;
            let mut new = Vec::new();
            let mut failed = None;
            // Bounded: a flood is taken in over several calls, the peers served in between.
            for _ in 0..64 {
                match l.accept() {
                    Ok((s, _)) => new.push(s),
                    Err(e) if super::would_block(&e) => break,
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            for s in new {
                if let Some(why) = self.over_cap(&s) {
                    self.refused += 1;
                    self.log.line(self.opts.log_interval, &why);
                    self.last_refusal = Some(why);
                    continue; // dropping the stream closes it
                }
                self.backoff.reset();
                if let Err(e) = self.add_peer(s) {
                    self.accept_failures += 1;
                    let line = format!("{}: {e}", self.describe());
                    self.log.line(self.opts.log_interval, &line);
                }
            }
            if let Some(e) = failed {
                self.accept_failures += 1;
                let line = if scarce(&e) {
                    // Out of descriptors, buffers or memory: the connection waits in the
                    // backlog while the peers are served.
                    let pause = self.backoff.pause();
                    self.accept_paused = Some(Instant::now() + pause);
                    format!(
                        "{}: accept failed ({e}); accepting again in {pause:?}, serving the peers meanwhile",
                        self.describe()
                    )
                } else {
                    // A connection reset before it was taken (ECONNABORTED) and the like: that
                    // connection is gone, the next is fine.
                    format!("{}: accept failed ({e})", self.describe())
                };
                self.log.line(self.opts.log_interval, &line);
            }
            // Looked at with the accepts, every few milliseconds, so that the message path
            // never pays for naming the socket.
            if self.log.untold() {
                let what = self.describe();
                self.log.flush(&what);
            }
        }
        let addr = self
            .connect
            .as_ref()
            .filter(|_| self.peers.is_empty())
            .cloned();
        if let Some(addr) = addr {
            if Instant::now() >= self.next_connect {
                self.next_connect = Instant::now() + RECONNECT;
                let addrs: Vec<SocketAddr> = addr
                    .to_socket_addrs()
                    .map_err(|e| ZmqError::Config(format!("cannot resolve tcp://{addr}: {e}")))?
                    .collect();
                for a in addrs {
                    if let Ok(s) = TcpStream::connect_timeout(&a, RECONNECT) {
                        // A connection that fails its set-up is retried like a refused one.
                        let _ = self.add_peer(s);
                        break;
                    }
                }
            }
        }
        // The handshake deadlines are looked at every few milliseconds, not at every message.
        if now < self.next_sweep {
            return Ok(());
        }
        self.next_sweep = now + super::ACCEPT_EVERY;
        let mut i = 0;
        while i < self.peers.len() {
            let p = &self.peers[i];
            if !p.dec.is_ready() && now.duration_since(p.since) > self.opts.handshake_ivl {
                let e = ZmqError::Protocol {
                    peer: p.name.clone(),
                    what: format!(
                        "no ZeroMQ handshake within {:?} (handshake_ivl)",
                        self.opts.handshake_ivl
                    ),
                };
                self.refuse(i, &e);
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Why a new connection is closed at once: `max_peers` connections held, or
    /// `max_pending_per_ip` from its address still at their handshake. `None`: it is taken.
    fn over_cap(&self, stream: &TcpStream) -> Option<String> {
        let addr = stream.peer_addr().ok();
        let who = addr.map_or_else(|| "a peer".to_string(), |a| a.to_string());
        if self.peers.len() >= self.opts.max_peers {
            return Some(format!(
                "{}: refused {who}: already {} peers (max_peers)",
                self.describe(),
                self.opts.max_peers
            ));
        }
        let ip = addr?.ip();
        let pending = self
            .peers
            .iter()
            .filter(|p| p.ip == Some(ip) && !p.dec.is_ready())
            .count();
        (pending >= self.opts.max_pending_per_ip).then(|| {
            format!(
                "{}: refused {who}: already {pending} connections from {ip} at their handshake (max_pending_per_ip)",
                self.describe()
            )
        })
    }

    pub(super) fn add_peer(&mut self, stream: TcpStream) -> Result<(), ZmqError> {
        let addr = stream.peer_addr().ok();
        // The connection a connecting socket made is not under the cap per address.
        let ip: Option<IpAddr> = addr.filter(|_| self.connect.is_none()).map(|a| a.ip());
        let name = addr.map_or_else(|| self.describe(), |a| a.to_string());
        stream
            .set_nonblocking(true)
            .and_then(|_| stream.set_nodelay(true))
            .map_err(|e| ZmqError::io(&name, "socket setup", &e))?;
        // READY follows once the peer's greeting came: a libzmq peer then has sent its greeting
        // before it judges our READY, so a refusal is told apart from a port probe.
        let out = zmtp::greeting().to_vec();
        self.peers.push(Peer {
            dec: Decoder::new(self.kind, &name, self.opts.max_frame),
            stream,
            name,
            ip,
            stash: vec![0; READ_AHEAD],
            at: 0,
            len: 0,
            small: true,
            out,
            tx: super::Tx::Idle,
            subs: Default::default(),
            body: None,
            in_message: false,
            enveloped: false,
            reset: false,
            since: Instant::now(),
            stalled: None,
        });
        Ok(())
    }

    /// Peer `i` failed with `e`: a connecting socket's handshake error is the caller's (the
    /// configured address is no fitting peer); anything else closes that connection only.
    pub(super) fn fail_peer(&mut self, i: usize, e: ZmqError) -> Result<(), ZmqError> {
        if !e.is_peer()
            || (self.connect.is_some() && !self.peers[i].dec.is_ready() && !self.cut_off(i))
        {
            return Err(e);
        }
        self.refuse(i, &e);
        Ok(())
    }

    /// Whether a connecting socket's failed handshake with peer `i` is retried: it was cut
    /// off before the peer's greeting came (a listener past one of its caps closes a
    /// connection unread, which resets it), and handshakes have been cut off so for less than
    /// `handshake_ivl`. A peer that greeted and then refused (the wrong socket type, say) is
    /// a misconfiguration, named at once; so is a listener that never lets one through.
    fn cut_off(&mut self, i: usize) -> bool {
        if self.peers[i].dec.signed() {
            return false;
        }
        let since = *self.cut_off_since.get_or_insert_with(Instant::now);
        since.elapsed() < self.opts.handshake_ivl
    }

    /// Closes peer `i` for `why`: counted, logged (rate-limited) with the start of what it
    /// sent, escaped.
    pub(super) fn refuse(&mut self, i: usize, why: &ZmqError) {
        let p = &self.peers[i];
        let seen = &p.stash[..p.len.min(SHOWN)];
        let mut line = format!("{}: closed the connection: {why}", self.describe());
        if !seen.is_empty() {
            line.push_str(&format!("; it sent \"{}\"", seen.escape_ascii()));
            if p.len > SHOWN {
                line.push_str("...");
            }
        }
        self.refused += 1;
        self.log.line(self.opts.log_interval, &line);
        self.last_refusal = Some(line);
        self.drop_peer(i);
    }

    /// Peer `i` made no progress while it owes bytes of a frame or message: whether it has
    /// done so for longer than the frame timeout (the first call starts the clock; a byte
    /// that comes resets it, see [`Socket::progressed`]).
    pub(super) fn stalled(&mut self, i: usize) -> Option<ZmqError> {
        let limit = self.opts.frame_timeout;
        let p = &mut self.peers[i];
        let owes = p.dec.payload_remaining().is_some() || p.in_message || !p.dec.between_frames();
        if !p.dec.is_ready() || !owes {
            p.stalled = None;
            return None;
        }
        let now = Instant::now();
        let since = *p.stalled.get_or_insert(now);
        (now.duration_since(since) > limit).then(|| ZmqError::Protocol {
            peer: p.name.clone(),
            what: format!(
                "no byte for {limit:?} in the middle of a frame or message (frame_timeout)"
            ),
        })
    }

    /// A byte came from peer `i`.
    pub(super) fn progressed(&mut self, i: usize) {
        self.peers[i].stalled = None;
    }
}

impl SocketOptions {
    /// The defaults: libzmq's handshake interval (30 s), 1024 peers, 8 at their handshake per
    /// source address, a 10 s frame timeout, 256 KiB queued per peer, 1024 subscriptions per
    /// subscriber, a first accept backoff of 10 ms.
    pub(super) fn defaults() -> Self {
        SocketOptions {
            max_frame: 256 << 20,
            drop_on_hwm: true,
            subscribe: Vec::new(),
            subscribe_command: false,
            handshake_ivl: Duration::from_secs(30),
            max_peers: 1024,
            max_pending_per_ip: 8,
            frame_timeout: Duration::from_secs(10),
            hwm_bytes: 256 << 10,
            max_subscriptions: 1024,
            accept_backoff: sluice_net::accept::BACKOFF_FIRST,
            log_interval: Duration::from_secs(1),
        }
    }
}
