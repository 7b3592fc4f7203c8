//! The send path of [`Socket`]: which peers a message goes to, and one vectored write per
//! peer straight from the caller's slices, resumed after a partial write.

use super::{would_block, Sent, Socket, Tx, SMALL_MESSAGE};
use crate::zmtp::{self, SocketType, MORE};
use crate::ZmqError;
use std::io::{ErrorKind, IoSlice, Write};
use std::net::TcpStream;

impl Socket {
    /// Sends `frames` (each a list of slices making one frame's body) as one message: to the
    /// next peer (PUSH, REQ), the peer that asked (REP), or each subscriber whose subscription
    /// prefixes the first frame (PUB). See [`Sent`].
    ///
    /// A message of at most [`SMALL_MESSAGE`] bytes to one peer (PUSH, REQ, REP) is copied into
    /// that peer's batch and written with the next ones, in one system call, once the batch
    /// holds 64 KiB or when the socket is next polled ([`Socket::poll`], [`Socket::wait`],
    /// [`Socket::next_frame`], [`Socket::linger`]): poll after the last message of a burst.
    pub fn send(&mut self, frames: &[&[&[u8]]]) -> Result<Sent, ZmqError> {
        self.poll_with(false)?;
        let envelope = matches!(self.kind, SocketType::Req | SocketType::Rep);
        let total = message_len(frames, envelope);
        if total <= SMALL_MESSAGE && self.kind != SocketType::Pub {
            return self.send_small(frames, envelope, total);
        }
        if self.kind == SocketType::Push {
            return self.send_push(frames, total);
        }
        let targets: Vec<usize> = match self.kind {
            SocketType::Pub => {
                if self.peers.iter().all(|p| p.tx == Tx::Idle) {
                    // Topics are matched on the first frame's start: no more of it is copied.
                    let longest = self.peers.iter().map(|p| p.subs.longest()).max();
                    let mut head = Vec::new();
                    for part in frames.first().copied().unwrap_or_default() {
                        let room = longest.unwrap_or(0).saturating_sub(head.len());
                        head.extend_from_slice(&part[..part.len().min(room)]);
                    }
                    for p in &mut self.peers {
                        let wanted = p.dec.is_ready() && p.subs.matches(&head);
                        p.tx = if wanted { Tx::Sending(0) } else { Tx::Skipped };
                    }
                }
                (0..self.peers.len())
                    .filter(|&i| matches!(self.peers[i].tx, Tx::Sending(_)))
                    .collect()
            }
            SocketType::Rep => match self.partner {
                Some(i) => {
                    if self.peers[i].tx == Tx::Idle {
                        self.peers[i].tx = Tx::Sending(0);
                    }
                    vec![i]
                }
                // The requester left: its reply has nobody to go to (libzmq drops it).
                None => return Ok(Sent::NoPeer),
            },
            _ => {
                if let Some(i) = self
                    .peers
                    .iter()
                    .position(|p| matches!(p.tx, Tx::Sending(_)))
                {
                    vec![i]
                } else {
                    let n = self.peers.len();
                    match (0..n)
                        .map(|k| (self.rr + k) % n)
                        .find(|&i| self.peers[i].dec.is_ready() && self.peers[i].out.is_empty())
                    {
                        Some(i) => {
                            self.peers[i].tx = Tx::Sending(0);
                            vec![i]
                        }
                        None => return Ok(Sent::NoPeer),
                    }
                }
            }
        };
        if targets.is_empty() {
            for p in &mut self.peers {
                p.tx = Tx::Idle;
            }
            return Ok(if self.kind == SocketType::Pub {
                Sent::Done
            } else {
                Sent::NoPeer
            });
        }
        let mut lost = Vec::new();
        for i in targets {
            let Tx::Sending(done) = self.peers[i].tx else {
                continue;
            };
            if done == 0 && !self.peers[i].out.is_empty() {
                // Control bytes (a PONG) go first, between messages.
                self.peers[i].tx = Tx::Idle;
                let alive = self.flush(i)?;
                self.peers[i].tx = Tx::Sending(0);
                if !alive {
                    lost.push(i);
                    continue;
                }
                if !self.peers[i].out.is_empty() {
                    if self.kind == SocketType::Pub && self.opts.drop_on_hwm {
                        self.peers[i].tx = Tx::Skipped;
                        self.dropped += 1;
                    }
                    continue;
                }
            }
            match write_message(&mut self.peers[i].stream, frames, envelope, done) {
                Ok(k) => {
                    if k == 0 && done == 0 && self.kind == SocketType::Pub && self.opts.drop_on_hwm
                    {
                        self.peers[i].tx = Tx::Skipped;
                        self.dropped += 1;
                    } else if done + k == total {
                        self.peers[i].tx = Tx::Idle;
                    } else {
                        self.peers[i].tx = Tx::Sending(done + k);
                    }
                }
                Err(_) => lost.push(i),
            }
        }
        for i in lost.into_iter().rev() {
            self.drop_peer(i);
        }
        if self.peers.iter().any(|p| matches!(p.tx, Tx::Sending(_))) {
            return Ok(Sent::Pending);
        }
        for p in &mut self.peers {
            p.tx = Tx::Idle;
        }
        match self.kind {
            SocketType::Push | SocketType::Req => {
                self.rr += 1;
            }
            SocketType::Rep => self.partner = None,
            _ => {}
        }
        Ok(Sent::Done)
    }
}

impl Socket {
    /// A small message to one peer (PUSH, REQ, REP): copied into the peer's batch, written with
    /// the next ones (see [`SMALL_MESSAGE`]).
    fn send_small(
        &mut self,
        frames: &[&[&[u8]]],
        envelope: bool,
        total: u64,
    ) -> Result<Sent, ZmqError> {
        let hwm = self.opts.hwm_bytes;
        let has_room =
            |p: &super::Peer| p.out.is_empty() || p.out.len() as u64 + total <= hwm as u64;
        let target = match self.kind {
            // The requester left: its reply has nobody to go to (libzmq drops it).
            SocketType::Rep => match self.partner {
                Some(i) => Some(i),
                None => return Ok(Sent::NoPeer),
            },
            SocketType::Push => {
                // Load balancing skips a peer whose queue is at its high-water mark.
                let n = self.peers.len();
                let next = (0..n)
                    .map(|k| (self.rr + k) % n)
                    .filter(|&i| self.peers[i].dec.is_ready())
                    .find(|&i| has_room(&self.peers[i]));
                if next.is_none() && self.peers.iter().any(|p| p.dec.is_ready()) {
                    self.flush_all();
                    return Ok(Sent::Pending);
                }
                next
            }
            _ => self
                .peers
                .iter()
                .position(|p| matches!(p.tx, Tx::Sending(_)))
                .or_else(|| {
                    let n = self.peers.len();
                    (0..n)
                        .map(|k| (self.rr + k) % n)
                        .find(|&i| self.peers[i].dec.is_ready())
                }),
        };
        let Some(i) = target else {
            return Ok(Sent::NoPeer);
        };
        if matches!(self.peers[i].tx, Tx::Sending(_)) || !has_room(&self.peers[i]) {
            // A large message is half written, or the batch is not draining: flush and wait.
            if !self.flush(i)? {
                self.drop_peer(i);
            }
            return Ok(Sent::Pending);
        }
        let out = &mut self.peers[i].out;
        append_message(out, frames, envelope, 0);
        if out.len() >= super::BATCH && !self.flush(i)? {
            self.drop_peer(i);
        }
        match self.kind {
            SocketType::Push | SocketType::Req => self.rr += 1,
            SocketType::Rep => self.partner = None,
            _ => {}
        }
        Ok(Sent::Done)
    }
}

impl Socket {
    /// Writes every peer's queued bytes it can take now; drops the peers that are gone.
    fn flush_all(&mut self) {
        let mut i = 0;
        while i < self.peers.len() {
            if matches!(self.flush(i), Ok(false)) {
                self.drop_peer(i);
            } else {
                i += 1;
            }
        }
    }

    /// A large PUSH message: written straight from the caller's slices to the next peer whose
    /// queue is empty and whose kernel buffer takes some of it, and on to it over the next
    /// calls while it takes more; once it takes nothing while another peer is ready, the rest
    /// is queued for it and the message is done. With no such peer, the message is queued
    /// whole for the next peer below its high-water mark. A peer that does not read is
    /// skipped, never waited for.
    fn send_push(&mut self, frames: &[&[&[u8]]], total: u64) -> Result<Sent, ZmqError> {
        if let Some(i) = self
            .peers
            .iter()
            .position(|p| matches!(p.tx, Tx::Sending(_)))
        {
            let Tx::Sending(done) = self.peers[i].tx else {
                unreachable!("found sending")
            };
            let k = match write_message(&mut self.peers[i].stream, frames, false, done) {
                Ok(k) => k,
                Err(_) => {
                    // Lost with the message half written: the rest has nobody to go to.
                    self.drop_peer(i);
                    return Ok(Sent::Done);
                }
            };
            if done + k == total {
                self.peers[i].tx = Tx::Idle;
                self.rr = i + 1;
                return Ok(Sent::Done);
            }
            let others = self
                .peers
                .iter()
                .enumerate()
                .any(|(j, p)| j != i && p.dec.is_ready());
            if k == 0 && others {
                // It stopped taking bytes: the rest waits in its queue; the next message goes
                // to another peer.
                append_message(&mut self.peers[i].out, frames, false, done);
                self.peers[i].tx = Tx::Idle;
                self.rr = i + 1;
                return Ok(Sent::Done);
            }
            self.peers[i].tx = Tx::Sending(done + k);
            return Ok(Sent::Pending);
        }
        let n = self.peers.len();
        let order: Vec<usize> = (0..n).map(|k| (self.rr + k) % n).collect();
        let mut lost = Vec::new();
        let mut chosen = None;
        for &i in &order {
            if !self.peers[i].dec.is_ready() {
                continue;
            }
            if !self.flush(i)? {
                lost.push(i);
                continue;
            }
            if !self.peers[i].out.is_empty() {
                continue;
            }
            match write_message(&mut self.peers[i].stream, frames, false, 0) {
                Ok(0) => {}
                Ok(k) if k < total => {
                    // The rest goes straight from the caller's slices at the next calls.
                    self.peers[i].tx = Tx::Sending(k);
                    lost.sort_unstable();
                    for &j in lost.iter().rev() {
                        self.drop_peer(j);
                    }
                    return Ok(Sent::Pending);
                }
                Ok(_) => {
                    chosen = Some(i);
                    break;
                }
                Err(_) => lost.push(i),
            }
        }
        if chosen.is_none() {
            let hwm = self.opts.hwm_bytes as u64;
            chosen = order.iter().copied().find(|&i| {
                let p = &self.peers[i];
                p.dec.is_ready() && !lost.contains(&i) && p.out.len() as u64 + total <= hwm
            });
            if let Some(i) = chosen {
                append_message(&mut self.peers[i].out, frames, false, 0);
            }
        }
        let ready = self.peers.iter().filter(|p| p.dec.is_ready()).count();
        if let Some(i) = chosen {
            self.rr = i + 1;
        }
        lost.sort_unstable();
        for &i in lost.iter().rev() {
            self.drop_peer(i);
        }
        Ok(match chosen {
            Some(_) => Sent::Done,
            None if ready > lost.len() => Sent::Pending,
            None => Sent::NoPeer,
        })
    }
}

/// The message's bytes from byte `skip` on, appended to `out` (a peer's queue).
fn append_message(out: &mut Vec<u8>, frames: &[&[&[u8]]], envelope: bool, skip: u64) {
    // Once per small message: the parts are walked in place, nothing is allocated.
    let mut skip = skip as usize;
    let mut put = |part: &[u8]| {
        if skip >= part.len() {
            skip -= part.len();
        } else {
            out.extend_from_slice(&part[skip..]);
            skip = 0;
        }
    };
    if envelope {
        put(&DELIMITER);
    }
    for (k, f) in frames.iter().enumerate() {
        let len: usize = f.iter().map(|s| s.len()).sum();
        let flags = if k + 1 < frames.len() { MORE } else { 0 };
        let (h, n) = zmtp::frame_header(len as u64, flags);
        put(&h[..n]);
        for part in f.iter() {
            put(part);
        }
    }
}

/// Each frame's header.
fn headers(frames: &[&[&[u8]]]) -> Vec<([u8; zmtp::MAX_HEADER], usize)> {
    frames
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let len: usize = f.iter().map(|s| s.len()).sum();
            let flags = if k + 1 < frames.len() { MORE } else { 0 };
            zmtp::frame_header(len as u64, flags)
        })
        .collect()
}

/// The message as slices: the envelope, then each frame's header and body slices.
fn parts<'a>(
    frames: &[&'a [&'a [u8]]],
    envelope: bool,
    headers: &'a [([u8; zmtp::MAX_HEADER], usize)],
) -> Vec<&'a [u8]> {
    let mut parts: Vec<&[u8]> = Vec::new();
    if envelope {
        parts.push(&DELIMITER);
    }
    for (f, (h, n)) in frames.iter().zip(headers) {
        parts.push(&h[..*n]);
        parts.extend(f.iter().copied());
    }
    parts
}

/// The envelope REQ and REP put before a message: one empty frame with MORE.
const DELIMITER: [u8; 2] = [MORE, 0];

fn message_len(frames: &[&[&[u8]]], envelope: bool) -> u64 {
    let mut n = if envelope { 2 } else { 0 };
    for f in frames {
        let len: usize = f.iter().map(|s| s.len()).sum();
        n += zmtp::frame_header(len as u64, 0).1 as u64 + len as u64;
    }
    n
}

/// Writes the message from byte `skip` on with one vectored write; returns bytes written.
fn write_message(
    stream: &mut TcpStream,
    frames: &[&[&[u8]]],
    envelope: bool,
    skip: u64,
) -> std::io::Result<u64> {
    let headers = headers(frames);
    let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(frames.len() * 3 + 1);
    let mut skip = skip as usize;
    for part in parts(frames, envelope, &headers) {
        if skip >= part.len() {
            skip -= part.len();
            continue;
        }
        slices.push(IoSlice::new(&part[skip..]));
        skip = 0;
        if slices.len() == 1024 {
            break; // IOV_MAX
        }
    }
    if slices.is_empty() {
        return Ok(0);
    }
    match stream.write_vectored(&slices) {
        Ok(0) => Err(std::io::Error::new(ErrorKind::WriteZero, "peer closed")),
        Ok(k) => {
            sluice_runtime::count_bytes(sluice_runtime::Direction::Sent, k as u64);
            Ok(k as u64)
        }
        Err(e) if would_block(&e) => Ok(0),
        Err(e) => Err(e),
    }
}
