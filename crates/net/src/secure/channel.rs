//! The record layer after the handshake: each record is a 2-byte big-endian length and one
//! Noise transport message (ciphertext and a 16-byte tag) of at most 65,535 bytes, so at most
//! [`MAX_PLAIN`](super::MAX_PLAIN) bytes of plaintext. The nonce is the record's number in its
//! direction, kept by each side and never sent: a record dropped, repeated, reordered or
//! changed fails the tag check, and the connection ends.
//!
//! Both halves live on: a [`Sealer`] (with its keeper thread's heartbeats, under one lock) and
//! an [`Opener`] with its receive buffers ([`RxBuf`]). A record that fits the caller's buffer
//! (a reservation of the output queue) is decrypted straight into it.

use snow::StatelessTransportState;
use std::io::{ErrorKind, IoSliceMut};
use std::sync::Arc;

/// Bytes of a record's length prefix.
pub const RECORD_HEAD: usize = 2;

/// Bytes of a record's authentication tag.
pub const TAG_LEN: usize = 16;

/// The largest record on the wire (prefix included).
const MAX_RECORD: usize = RECORD_HEAD + super::MAX_MESSAGE;

/// Seals the records one direction sends.
#[derive(Debug)]
pub struct Sealer {
    state: Arc<StatelessTransportState>,
    nonce: u64,
}

impl Sealer {
    pub(super) fn new(state: Arc<StatelessTransportState>) -> Self {
        Sealer { state, nonce: 0 }
    }

    /// Appends the records holding `plain` (split at [`MAX_PLAIN`](super::MAX_PLAIN)) to
    /// `out`.
    pub fn seal(&mut self, plain: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        for chunk in plain.chunks(super::MAX_PLAIN) {
            let at = out.len();
            out.resize(at + RECORD_HEAD + chunk.len() + TAG_LEN, 0);
            let n = self
                .state
                .write_message(self.nonce, chunk, &mut out[at + RECORD_HEAD..])
                .map_err(|e| std::io::Error::other(format!("sealing a record: {e}")))?;
            self.nonce += 1;
            out[at..at + RECORD_HEAD].copy_from_slice(&(n as u16).to_be_bytes());
            out.truncate(at + RECORD_HEAD + n);
        }
        Ok(())
    }
}

/// Opens the records the other direction receives.
#[derive(Debug)]
pub struct Opener {
    state: Arc<StatelessTransportState>,
    nonce: u64,
}

impl Opener {
    pub(super) fn new(state: Arc<StatelessTransportState>) -> Self {
        Opener { state, nonce: 0 }
    }

    /// Opens one record's message (without its prefix) into `out`.
    pub(super) fn open(&mut self, message: &[u8], out: &mut [u8]) -> std::io::Result<usize> {
        let n = self
            .state
            .read_message(self.nonce, message, out)
            .map_err(|_| {
                std::io::Error::new(
                    ErrorKind::InvalidData,
                    format!(
                        "record {} of the secure channel failed its integrity check (changed, dropped or replayed on the way): the connection is dropped",
                        self.nonce
                    ),
                )
            })?;
        self.nonce += 1;
        Ok(n)
    }
}

/// What a non-blocking receive got.
#[derive(Debug, PartialEq, Eq)]
pub enum Got {
    /// Plaintext bytes.
    Bytes(usize),
    /// Nothing now.
    WouldBlock,
    /// The peer closed (a record cut short counts as closed).
    Eof,
}

/// The receive side: ciphertext read ahead and plaintext of a record not yet taken.
#[derive(Debug)]
pub struct RxBuf {
    opener: Opener,
    cipher: Vec<u8>,
    cstart: usize,
    cend: usize,
    plain: Vec<u8>,
    pstart: usize,
    pend: usize,
}

impl RxBuf {
    /// An empty buffer opening with `opener`.
    pub fn new(opener: Opener) -> Self {
        RxBuf {
            opener,
            cipher: vec![0; 2 * MAX_RECORD],
            cstart: 0,
            cend: 0,
            plain: vec![0; super::MAX_PLAIN],
            pstart: 0,
            pend: 0,
        }
    }

    /// The length of the complete record at the front, if one is there.
    fn complete(&self) -> Option<usize> {
        let have = self.cend - self.cstart;
        if have < RECORD_HEAD {
            return None;
        }
        let len =
            u16::from_be_bytes([self.cipher[self.cstart], self.cipher[self.cstart + 1]]) as usize;
        (have >= RECORD_HEAD + len).then_some(len)
    }

    /// Whether plaintext can be had without reading the socket.
    pub fn ready(&self) -> bool {
        self.pstart < self.pend || self.complete().is_some()
    }

    /// Receives plaintext into `bufs`; `read` reads the socket (`Ok(None)`: would block).
    pub fn recv(
        &mut self,
        bufs: &mut [IoSliceMut<'_>],
        mut read: impl FnMut(&mut [u8]) -> std::io::Result<Option<usize>>,
    ) -> std::io::Result<Got> {
        if bufs.iter().all(|b| b.is_empty()) {
            return Ok(Got::Bytes(0));
        }
        loop {
            if self.pstart < self.pend {
                let mut n = 0;
                for b in bufs.iter_mut() {
                    let k = b.len().min(self.pend - self.pstart);
                    b[..k].copy_from_slice(&self.plain[self.pstart..self.pstart + k]);
                    self.pstart += k;
                    n += k;
                    if self.pstart == self.pend {
                        break;
                    }
                }
                return Ok(Got::Bytes(n));
            }
            if let Some(len) = self.complete() {
                let message = self.cstart + RECORD_HEAD..self.cstart + RECORD_HEAD + len;
                self.cstart = message.end;
                let plain_len = len.saturating_sub(TAG_LEN);
                let first = bufs.iter_mut().find(|b| !b.is_empty()).expect("checked");
                if first.len() >= plain_len && len >= TAG_LEN {
                    // The whole record fits: decrypted straight into the caller's buffer.
                    let n = self.opener.open(&self.cipher[message], first)?;
                    if n > 0 {
                        return Ok(Got::Bytes(n));
                    }
                } else {
                    let n = self.opener.open(&self.cipher[message], &mut self.plain)?;
                    (self.pstart, self.pend) = (0, n);
                }
                continue;
            }
            if self.cstart == self.cend {
                (self.cstart, self.cend) = (0, 0);
            } else if self.cipher.len() - self.cstart < MAX_RECORD {
                // Too little room after the partial record for the longest one: move it.
                self.cipher.copy_within(self.cstart..self.cend, 0);
                (self.cstart, self.cend) = (0, self.cend - self.cstart);
            }
            match read(&mut self.cipher[self.cend..])? {
                None => return Ok(Got::WouldBlock),
                Some(0) => return Ok(Got::Eof),
                Some(n) => self.cend += n,
            }
        }
    }
}

/// An accepted or made connection before its protocol starts: the socket and, on a secure
/// connection, its channel.
#[derive(Debug)]
pub struct Link {
    /// The socket.
    pub stream: std::net::TcpStream,
    /// The channel's halves, on a secure connection.
    pub channel: Option<(Sealer, RxBuf)>,
}

impl Link {
    /// A connection without a secure channel.
    pub fn plain(stream: std::net::TcpStream) -> Self {
        Link {
            stream,
            channel: None,
        }
    }

    /// A connection with the channel of `session`.
    pub fn secure(stream: std::net::TcpStream, session: super::Session) -> Self {
        Link {
            stream,
            channel: Some((session.sealer, RxBuf::new(session.opener))),
        }
    }

    /// Reads exactly `buf.len()` plaintext bytes, blocking (the socket's read timeout
    /// applies).
    pub fn read_exact(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        use std::io::Read;
        let Some((_, rx)) = &mut self.channel else {
            return self.stream.read_exact(buf);
        };
        let stream = &mut self.stream;
        let mut at = 0;
        while at < buf.len() {
            let mut iov = [IoSliceMut::new(&mut buf[at..])];
            match rx.recv(&mut iov, |b| match stream.read(b) {
                Ok(n) => Ok(Some(n)),
                Err(e) if e.kind() == ErrorKind::Interrupted => Ok(None),
                Err(e) => Err(e),
            })? {
                Got::Bytes(n) => at += n,
                Got::Eof => return Err(ErrorKind::UnexpectedEof.into()),
                Got::WouldBlock => {}
            }
        }
        Ok(())
    }

    /// Writes all of `bytes`, blocking (sealed on a secure connection).
    pub fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        match &mut self.channel {
            None => self.stream.write_all(bytes),
            Some((sealer, _)) => {
                let mut out = Vec::with_capacity(bytes.len() + 64);
                sealer.seal(bytes, &mut out)?;
                self.stream.write_all(&out)
            }
        }
    }
}

/// A blocking secure connection split in two, for a protocol of lines (cluster control):
/// [`SecureReader`] implements `Read`, [`SecureWriter`] implements `Write`.
pub fn split(link: Link) -> std::io::Result<(SecureReader, SecureWriter)> {
    let write = link.stream.try_clone()?;
    let (sealer, rx) = match link.channel {
        Some((s, r)) => (Some(s), Some(r)),
        None => (None, None),
    };
    Ok((
        SecureReader {
            stream: link.stream,
            rx,
        },
        SecureWriter {
            stream: write,
            sealer,
            out: Vec::new(),
        },
    ))
}

/// The reading half of [`split`].
#[derive(Debug)]
pub struct SecureReader {
    stream: std::net::TcpStream,
    rx: Option<RxBuf>,
}

impl SecureReader {
    /// The socket (for timeouts and shutdown).
    pub fn stream(&self) -> &std::net::TcpStream {
        &self.stream
    }
}

impl std::io::Read for SecureReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(rx) = &mut self.rx else {
            return self.stream.read(buf);
        };
        let stream = &mut self.stream;
        loop {
            let mut iov = [IoSliceMut::new(buf)];
            match rx.recv(&mut iov, |b| stream.read(b).map(Some))? {
                Got::Bytes(n) => return Ok(n),
                Got::Eof => return Ok(0),
                Got::WouldBlock => {}
            }
        }
    }
}

/// The writing half of [`split`]: each `write` is sealed and sent at once.
#[derive(Debug)]
pub struct SecureWriter {
    stream: std::net::TcpStream,
    sealer: Option<Sealer>,
    out: Vec<u8>,
}

impl SecureWriter {
    /// The socket (for timeouts and shutdown).
    pub fn stream(&self) -> &std::net::TcpStream {
        &self.stream
    }
}

impl std::io::Write for SecureWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let Some(sealer) = &mut self.sealer else {
            return self.stream.write(buf);
        };
        let n = buf.len().min(super::MAX_PLAIN);
        self.out.clear();
        sealer.seal(&buf[..n], &mut self.out)?;
        self.stream.write_all(&self.out)?;
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        let Some(sealer) = &mut self.sealer else {
            return self.stream.write_all(buf);
        };
        self.out.clear();
        sealer.seal(buf, &mut self.out)?;
        self.stream.write_all(&self.out)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}
