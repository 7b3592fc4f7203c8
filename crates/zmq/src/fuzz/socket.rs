//! The `zmq_socket` driver: a binding socket of each type with several peers on loopback,
//! each peer writing what the input says, the socket receiving, sending and answering as the
//! blocks drive it. The invariant is the socket's promise: what a peer sends costs at most
//! that peer's connection; the socket never returns a configuration error for it, never
//! delivers a frame above its limit, never holds more peers than its cap, and goes on.

use super::LIMIT;
use crate::{Sent, Socket, SocketOptions, SocketType, ZmqError};
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// The socket types the first input byte picks from (modulo their number).
const KINDS: [SocketType; 6] = [
    SocketType::Pull,
    SocketType::Pub,
    SocketType::Rep,
    SocketType::Push,
    SocketType::Sub,
    SocketType::Req,
];
/// Peers at most; one more than the socket's cap, so that the cap is reached.
const PEERS: usize = 4;
/// Records at most per input: each costs system calls.
const RECORDS: usize = 32;

/// What one peer does: write `bytes` (after a valid greeting and READY of a fitting type,
/// the first time, when `handshake`), then close when `close`.
#[derive(Debug, Clone, Default)]
pub struct Record {
    /// Which peer, 0 to 3.
    pub peer: u8,
    /// Send a valid handshake first (the first record of this peer only).
    pub handshake: bool,
    /// Close the connection after writing.
    pub close: bool,
    /// What the peer writes.
    pub bytes: Vec<u8>,
}

impl Record {
    /// The input bytes of a socket of `KINDS[kind]` and these records, as [`socket`] reads
    /// them: the kind byte, then per record a flags byte (peer, handshake `0x04`, close
    /// `0x08`), a big-endian `u16` length and the bytes.
    pub fn script(kind: u8, records: &[Record]) -> Vec<u8> {
        let mut out = vec![kind];
        for r in records {
            let flags =
                (r.peer & 3) | if r.handshake { 4 } else { 0 } | if r.close { 8 } else { 0 };
            let len = r.bytes.len().min(usize::from(u16::MAX));
            out.push(flags);
            out.extend_from_slice(&(len as u16).to_be_bytes());
            out.extend_from_slice(&r.bytes[..len]);
        }
        out
    }

    fn parse(data: &[u8]) -> Vec<Record> {
        let mut rest = data;
        let mut out = Vec::new();
        while let Some((&flags, tail)) = rest.split_first() {
            let len = match tail {
                [a, b, ..] => usize::from(u16::from_be_bytes([*a, *b])),
                _ => 0,
            };
            let tail = tail.get(2..).unwrap_or_default();
            let len = len.min(tail.len());
            out.push(Record {
                peer: flags & 3,
                handshake: flags & 4 != 0,
                close: flags & 8 != 0,
                bytes: tail[..len].to_vec(),
            });
            rest = &tail[len..];
            if out.len() == RECORDS {
                break;
            }
        }
        out
    }
}

/// Drives a binding socket through the input (see [`Record::script`]): every peer the
/// records name connects first, then each record is written and the socket driven a few
/// rounds. Panics if the socket breaks its promise (see the module docs).
pub fn socket(data: &[u8]) {
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let kind = KINDS[usize::from(kind) % KINDS.len()];
    let records = Record::parse(rest);
    let opts = SocketOptions {
        max_frame: LIMIT,
        max_peers: PEERS - 1,
        max_subscriptions: 4,
        hwm_bytes: 4096,
        handshake_ivl: Duration::from_secs(1),
        frame_timeout: Duration::from_secs(1),
        log_interval: Duration::from_secs(60),
        ..SocketOptions::default()
    };
    let mut s = Socket::new(kind, "tcp://127.0.0.1:0", true, opts).expect("binds on loopback");
    let addr = s.local_addr().expect("bound");
    // All peers connect before the socket first accepts: one accept round takes them all.
    let mut peers: Vec<Option<TcpStream>> = (0..PEERS)
        .map(|k| {
            records.iter().any(|r| usize::from(r.peer) == k).then(|| {
                let c = TcpStream::connect(addr).expect("connects on loopback");
                c.set_nonblocking(true).expect("non-blocking");
                c
            })
        })
        .collect();
    let mut greeted = [false; PEERS];
    let mut driver = Driver::default();
    for r in &records {
        let k = usize::from(r.peer);
        if let Some(c) = peers[k].as_mut() {
            if r.handshake && !greeted[k] {
                let mut hs = crate::zmtp::greeting().to_vec();
                hs.extend_from_slice(&crate::zmtp::ready(fitting(kind)));
                write_some(c, &hs);
            }
            greeted[k] = true;
            write_some(c, &r.bytes);
        }
        if r.close {
            peers[k] = None;
        }
        driver.rounds(&mut s, 4);
    }
    drop(peers);
    driver.rounds(&mut s, 4);
    assert!(
        s.peers() < PEERS,
        "{} peers past a cap of {}",
        s.peers(),
        PEERS - 1
    );
}

/// The peer type that fits `kind`.
fn fitting(kind: SocketType) -> SocketType {
    match kind {
        SocketType::Pull => SocketType::Push,
        SocketType::Push => SocketType::Pull,
        SocketType::Pub => SocketType::Sub,
        SocketType::Sub => SocketType::Pub,
        SocketType::Req => SocketType::Rep,
        SocketType::Rep => SocketType::Req,
    }
}

/// Writes what the kernel takes now (a peer the socket closed, or a full buffer, takes less).
fn write_some(c: &mut TcpStream, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        match c.write(bytes) {
            Ok(0) | Err(_) => return,
            Ok(k) => bytes = &bytes[k..],
        }
    }
}

/// Where the socket's caller stands, as a block drives it.
#[derive(Default)]
struct Driver {
    /// A message being sent (PUSH, PUB, REQ's request, REP's reply) that returned Pending.
    sending: bool,
    /// REQ: the request went out; its reply is awaited.
    asked: bool,
    /// REP: a whole request came; its reply is owed.
    owed: bool,
}

impl Driver {
    fn rounds(&mut self, s: &mut Socket, n: usize) {
        for _ in 0..n {
            self.round(s);
        }
    }

    fn round(&mut self, s: &mut Socket) {
        if s.remaining() > 0 {
            // The body of the frame started last is taken first, whatever the socket's type.
            self.receive(s);
            return;
        }
        let kind = s.kind();
        let send = match kind {
            SocketType::Push | SocketType::Pub => true,
            SocketType::Req => !self.asked,
            SocketType::Rep => self.owed,
            SocketType::Pull | SocketType::Sub => false,
        };
        if send || self.sending {
            let body: &[u8] = b"fuzzed message";
            match checked(s.send(&[&[body]])) {
                Some(Sent::Done) => {
                    self.sending = false;
                    self.asked = kind == SocketType::Req;
                    self.owed = false;
                }
                Some(Sent::Pending) => self.sending = true,
                Some(Sent::NoPeer) | None => {
                    self.sending = false;
                    self.owed = false;
                }
            }
            if kind != SocketType::Req || !self.asked {
                let _ = checked(s.poll());
                return;
            }
        }
        self.receive(s);
    }

    /// Takes what has come: the rest of the current frame's body, or the next frame.
    fn receive(&mut self, s: &mut Socket) {
        let mut buf = [0u8; 4096];
        if s.remaining() == 0 {
            let Some(Some(frame)) = checked(s.next_frame()) else {
                return;
            };
            assert!(
                frame.len <= LIMIT,
                "a {}-byte frame past the limit",
                frame.len
            );
            if !frame.more {
                self.owed = s.kind() == SocketType::Rep;
                self.asked = false;
            }
        }
        while s.remaining() > 0 {
            match checked(s.read_into(&mut buf)) {
                Some(0) | None => return,
                Some(_) => {}
            }
        }
    }
}

/// The call's value; `None` for a peer's error (the socket dropped that peer). A
/// configuration error, the only kind a socket may return fatally, is a broken promise here:
/// the socket's configuration is fixed and valid.
fn checked<T>(r: Result<T, ZmqError>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            assert!(e.is_peer(), "a peer's bytes made a fatal error: {e}");
            None
        }
    }
}
