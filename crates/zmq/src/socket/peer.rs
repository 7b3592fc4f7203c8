//! One connection's state ([`Peer`]): its stream, the read-ahead stash, the decoder, the
//! bytes queued for it, where its current message stands; and the two system calls on it:
//! [`Socket::fill`] (read ahead) and [`Socket::flush`] (write what is queued).

use super::{subs, would_block, Socket};
use crate::decoder::Decoder;
use crate::ZmqError;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tx {
    Idle,
    /// Bytes of the current message written.
    Sending(u64),
    /// This message is not for this peer (PUB: not subscribed, or dropped).
    Skipped,
}

#[derive(Debug)]
pub(super) struct Peer {
    pub(super) stream: TcpStream,
    pub(super) name: String,
    /// The source address of an accepted connection (for the cap per address); `None` for
    /// the connection a connecting socket made.
    pub(super) ip: Option<IpAddr>,
    pub(super) dec: Decoder,
    pub(super) stash: Vec<u8>,
    pub(super) at: usize,
    pub(super) len: usize,
    pub(super) small: bool,
    /// Control bytes to send at the next message boundary (greeting, READY, PONG, ...).
    pub(super) out: Vec<u8>,
    pub(super) tx: Tx,
    pub(super) subs: subs::Subscriptions,
    /// Body of an internal frame being collected.
    pub(super) body: Option<Vec<u8>>,
    /// The last frame had MORE: the next one continues the message.
    pub(super) in_message: bool,
    /// REQ/REP: the envelope (up to the empty delimiter) is done for the current message.
    pub(super) enveloped: bool,
    /// The connection was reset (the peer closed with our bytes unread: libzmq does so when
    /// it refuses our READY, and the reset may discard its greeting before we read it).
    pub(super) reset: bool,
    /// When the connection began (its handshake deadline counts from here).
    pub(super) since: Instant,
    /// Since when it owes bytes of a frame and sent none (see [`SocketOptions::frame_timeout`]).
    pub(super) stalled: Option<Instant>,
}

impl Socket {
    /// Writes peer `i`'s control bytes if it is between messages; false if it is gone.
    pub(super) fn flush(&mut self, i: usize) -> Result<bool, ZmqError> {
        let p = &mut self.peers[i];
        while !p.out.is_empty() && !matches!(p.tx, Tx::Sending(_)) {
            match p.stream.write(&p.out) {
                Ok(0) => return Ok(false),
                Ok(k) => {
                    sluice_runtime::count_bytes(sluice_runtime::Direction::Sent, k as u64);
                    p.out.drain(..k);
                }
                Err(e) if would_block(&e) => break,
                Err(_) => {
                    p.reset = true;
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Reads more bytes into peer `i`'s stash: `Ok(Some(k))` (0: would block), `Ok(None)` on
    /// end of file or a reset.
    pub(super) fn fill(&mut self, i: usize, ahead: usize) -> Result<Option<usize>, ZmqError> {
        let p = &mut self.peers[i];
        if p.at == p.len {
            p.at = 0;
            p.len = 0;
        }
        let ahead = ahead.max(1);
        let end = (p.len + ahead).min(p.stash.len());
        if end == p.len {
            // The stash is full of unread bytes (a peek of its whole size).
            return Ok(Some(0));
        }
        match p.stream.read(&mut p.stash[p.len..end]) {
            Ok(0) => Ok(None),
            Ok(k) => {
                sluice_runtime::count_bytes(sluice_runtime::Direction::Received, k as u64);
                p.len += k;
                self.progressed(i);
                Ok(Some(k))
            }
            Err(e) if would_block(&e) => match self.stalled(i) {
                Some(e) => Err(e),
                None => Ok(Some(0)),
            },
            Err(_) => {
                p.reset = true;
                Ok(None)
            }
        }
    }
}
