//! The record layer after the handshake. Each record is a 4-byte big-endian length (of what
//! follows), the ciphertext and a 16-byte tag: AES-256-GCM (`ring`, which uses the CPU's
//! AES and carry-less multiply instructions, VAES and AVX2 where the CPU has them, chosen at
//! run time) under the key the Noise handshake split for that direction, with the record's
//! number in its direction as the nonce (four zero bytes and the number, big-endian, as Noise's
//! own transport messages have it) and the length as associated data. A record holds at most
//! [`MAX_PLAIN`] bytes of plaintext, larger than a Noise message may (65,535 bytes), so that a
//! large frame's payload costs few records. The number is kept by each side and never sent:
//! a record dropped, repeated, reordered or changed fails the tag check, and the connection
//! ends.
//!
//! **Authenticate only** ([`Protection::Authenticate`], a stream's `security = "authenticate"`):
//! the record's plaintext goes out as it is, and its tag is AES-256-GCM's over an empty
//! plaintext with the record's bytes as associated data (GMAC, NIST SP 800-38D), under the same
//! keys and nonces. The length prefix is covered too: GHASH's last block holds the associated
//! data's length. Everything else (sizes, numbering, what ends a connection) is as above. It
//! is for links that must stay readable (amateur radio rules forbid obscuring a message; a
//! capture that must be inspected), not for speed: ring processes associated data about four
//! times slower than it encrypts (`tests/aead_cost.rs`), so here it costs more CPU than
//! encryption.
//!
//! Both halves live on: a [`Sealer`] (with its keeper thread's heartbeats, under one lock) and
//! an [`Opener`] with its receive buffers ([`RxBuf`]). A record that fits the caller's buffer
//! (a reservation of the output queue) is received straight into it and decrypted there.

use ring::aead::{Aad, LessSafeKey, Nonce, Tag, UnboundKey, AES_256_GCM};
use std::io::{ErrorKind, IoSliceMut};

/// Bytes of a record's length prefix.
pub const RECORD_HEAD: usize = 4;

/// Bytes of a record's authentication tag.
pub const TAG_LEN: usize = 16;

/// The most plaintext one record carries: 256 KiB, so that a record's plaintext and
/// ciphertext stay in a core's L2 cache while it is sealed and sent.
pub const MAX_PLAIN: usize = 256 << 10;

/// Bytes of ciphertext read ahead of the record being opened (headers, tags, small records).
const AHEAD: usize = 64 << 10;

/// A record with more plaintext than this that has not all come is received outside the
/// read-ahead (straight into the caller's buffer where it fits).
const LARGE: usize = 4096;

/// Read ahead while a large record's body goes straight to the caller: enough for its tag,
/// the next record's prefix and a small record, little enough that the next large record's
/// body is not copied.
const AHEAD_AFTER_DIRECT: usize = 256;

fn nonce(n: u64) -> Nonce {
    let mut b = [0u8; 12];
    b[4..].copy_from_slice(&n.to_be_bytes());
    Nonce::assume_unique_for_key(b)
}

/// What a record's tag protects: its bytes are encrypted and authenticated, or only
/// authenticated (sent as they are). Both ends of a connection agree on it in the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protection {
    /// AES-256-GCM: every byte encrypted and authenticated.
    #[default]
    Encrypt,
    /// GMAC: every byte authenticated, none encrypted (see the module documentation).
    Authenticate,
}

fn key(bytes: &[u8; 32]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, bytes).expect("a 32-byte AES-256 key"))
}

/// Seals the records one direction sends.
pub struct Sealer {
    key: LessSafeKey,
    nonce: u64,
    protection: Protection,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sealer(record {})", self.nonce)
    }
}

impl Sealer {
    pub(crate) fn new(key_bytes: &[u8; 32], protection: Protection) -> Self {
        Sealer {
            key: key(key_bytes),
            nonce: 0,
            protection,
        }
    }

    /// Appends the records holding `plain` (split at [`MAX_PLAIN`]) to `out`: the plaintext is
    /// copied once, into `out`, and sealed there.
    pub fn seal(&mut self, plain: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        for chunk in plain.chunks(MAX_PLAIN) {
            let at = out.len();
            let head = ((chunk.len() + TAG_LEN) as u32).to_be_bytes();
            out.extend_from_slice(&head);
            out.extend_from_slice(chunk);
            let n = self.next()?;
            let body = &mut out[at + RECORD_HEAD..];
            let tag = match self.protection {
                Protection::Encrypt => {
                    self.key
                        .seal_in_place_separate_tag(nonce(n), Aad::from(head), body)
                }
                Protection::Authenticate => {
                    self.key
                        .seal_in_place_separate_tag(nonce(n), Aad::from(&*body), &mut [])
                }
            }
            .map_err(|_| std::io::Error::other("sealing a record failed"))?;
            out.extend_from_slice(tag.as_ref());
        }
        Ok(())
    }

    fn next(&mut self) -> std::io::Result<u64> {
        let n = self.nonce;
        // 2^64 records never come (at one per nanosecond, 584 years); were they to, a nonce
        // must not repeat.
        self.nonce = n
            .checked_add(1)
            .ok_or_else(|| std::io::Error::other("the secure channel ran out of record numbers"))?;
        Ok(n)
    }
}

/// Opens the records the other direction receives.
pub struct Opener {
    key: LessSafeKey,
    nonce: u64,
    protection: Protection,
}

impl std::fmt::Debug for Opener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Opener(record {})", self.nonce)
    }
}

impl Opener {
    pub(crate) fn new(key_bytes: &[u8; 32], protection: Protection) -> Self {
        Opener {
            key: key(key_bytes),
            nonce: 0,
            protection,
        }
    }

    /// Opens, in place, the ciphertext `body` of the record with prefix `head` and `tag`.
    pub(super) fn open(
        &mut self,
        head: [u8; RECORD_HEAD],
        body: &mut [u8],
        tag: [u8; TAG_LEN],
    ) -> std::io::Result<()> {
        let tag = Tag::from(tag);
        match self.protection {
            Protection::Encrypt => {
                self.key
                    .open_in_place_separate_tag(nonce(self.nonce), Aad::from(head), tag, body, 0..)
            }
            // (The prefix is covered through the associated data's length in GHASH.)
            Protection::Authenticate => self.key.open_in_place_separate_tag(
                nonce(self.nonce),
                Aad::from(&*body),
                tag,
                &mut [],
                0..,
            ),
        }
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
        Ok(())
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

/// A large record whose body is read outside the read-ahead buffer.
#[derive(Debug)]
struct Large {
    head: [u8; RECORD_HEAD],
    /// Plaintext (= ciphertext) bytes of the body.
    len: usize,
    got: usize,
    tag: [u8; TAG_LEN],
    tag_got: usize,
    /// The address of the caller's buffer the body goes straight into; `None`: into the
    /// plaintext buffer.
    direct: Option<usize>,
}

/// The receive side: ciphertext read ahead, a large record on its way, and plaintext of
/// records not yet taken.
#[derive(Debug)]
pub struct RxBuf {
    opener: Opener,
    ahead: Vec<u8>,
    astart: usize,
    aend: usize,
    large: Option<Large>,
    plain: Vec<u8>,
    pstart: usize,
    pend: usize,
}

/// The length the prefix `head` announces, checked: a peer cannot make this end hold more
/// than one record of [`MAX_PLAIN`] bytes.
fn record_len(head: [u8; RECORD_HEAD]) -> std::io::Result<usize> {
    let len = u32::from_be_bytes(head) as usize;
    if !(TAG_LEN..=MAX_PLAIN + TAG_LEN).contains(&len) {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            format!(
                "a record of the secure channel announces {len} bytes (expected {TAG_LEN} to {}): the connection is dropped",
                MAX_PLAIN + TAG_LEN
            ),
        ));
    }
    Ok(len)
}

impl RxBuf {
    /// An empty buffer opening with `opener`.
    pub fn new(opener: Opener) -> Self {
        RxBuf {
            opener,
            ahead: vec![0; AHEAD],
            astart: 0,
            aend: 0,
            large: None,
            plain: Vec::new(),
            pstart: 0,
            pend: 0,
        }
    }

    fn head_at(&self, at: usize) -> [u8; RECORD_HEAD] {
        self.ahead[at..at + RECORD_HEAD]
            .try_into()
            .expect("four bytes")
    }

    /// The ciphertext length of the complete record at the front of the read-ahead, if one is
    /// there.
    fn complete(&self) -> std::io::Result<Option<usize>> {
        let have = self.aend - self.astart;
        if have < RECORD_HEAD {
            return Ok(None);
        }
        let len = record_len(self.head_at(self.astart))?;
        Ok((have >= RECORD_HEAD + len).then_some(len))
    }

    /// Whether plaintext can be had without reading the socket.
    pub fn ready(&self) -> bool {
        self.pstart < self.pend || matches!(self.complete(), Ok(Some(_)) | Err(_))
    }

    /// Opens the complete records at the front of the read-ahead into the plaintext buffer,
    /// as long as they fit there.
    fn open_ahead(&mut self) -> std::io::Result<()> {
        if self.pstart == self.pend {
            (self.pstart, self.pend) = (0, 0);
        }
        while let Some(len) = self.complete()? {
            let body = len - TAG_LEN;
            if self.plain.len() < MAX_PLAIN {
                self.plain.resize(MAX_PLAIN, 0);
            }
            if self.plain.len() - self.pend < body {
                if self.pstart == 0 {
                    break;
                }
                self.plain.copy_within(self.pstart..self.pend, 0);
                (self.pstart, self.pend) = (0, self.pend - self.pstart);
                continue;
            }
            let head = self.head_at(self.astart);
            let from = self.astart + RECORD_HEAD;
            let dest = &mut self.plain[self.pend..self.pend + body];
            dest.copy_from_slice(&self.ahead[from..from + body]);
            let tag: [u8; TAG_LEN] = self.ahead[from + body..from + len]
                .try_into()
                .expect("sixteen bytes");
            self.opener.open(head, dest, tag)?;
            self.pend += body;
            self.astart += RECORD_HEAD + len;
        }
        if self.astart == self.aend {
            (self.astart, self.aend) = (0, 0);
        }
        Ok(())
    }

    /// Receives plaintext into `bufs`. `read` reads the socket into the slices it is given,
    /// vectored (`Ok(None)`: would block). With `direct`, a record whose plaintext fits the
    /// first non-empty buffer may be received straight into it over several calls: the caller
    /// then passes the same buffer (same address) until the call returns bytes.
    pub fn recv(
        &mut self,
        bufs: &mut [IoSliceMut<'_>],
        direct: bool,
        mut read: impl FnMut(&mut [IoSliceMut<'_>]) -> std::io::Result<Option<usize>>,
    ) -> std::io::Result<Got> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Ok(Got::Bytes(0));
        }
        loop {
            if self.large.is_none() {
                self.open_ahead()?;
            }
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
            if self.large.is_none() {
                let have = self.aend - self.astart;
                let len = if have >= RECORD_HEAD {
                    Some(record_len(self.head_at(self.astart))?)
                } else {
                    None
                };
                match len {
                    // A large record not all here: its body goes straight to its destination.
                    Some(len)
                        if self.astart + RECORD_HEAD + len > self.ahead.len()
                            || len - TAG_LEN > LARGE =>
                    {
                        self.start_large(bufs, direct, len)?;
                    }
                    _ => {
                        if self.astart > 0 {
                            self.ahead.copy_within(self.astart..self.aend, 0);
                            (self.astart, self.aend) = (0, self.aend - self.astart);
                        }
                        // Read about what the caller asked for: a small request (a frame's
                        // head) does not pull the next large body into the read-ahead.
                        let want = (total + 4 * (RECORD_HEAD + TAG_LEN)).clamp(64, AHEAD);
                        let end = (self.aend + want).min(self.ahead.len());
                        match read(&mut [IoSliceMut::new(&mut self.ahead[self.aend..end])])? {
                            None => return Ok(Got::WouldBlock),
                            Some(0) => return Ok(Got::Eof),
                            Some(n) => self.aend += n,
                        }
                    }
                }
                continue;
            }
            if let Some(n) = self.receive_large(bufs, &mut read)? {
                return Ok(n);
            }
        }
    }

    /// Starts a large record of ciphertext length `len` whose prefix is at the front of the
    /// read-ahead: its destination is chosen, and the body bytes already read move there.
    fn start_large(
        &mut self,
        bufs: &mut [IoSliceMut<'_>],
        direct: bool,
        len: usize,
    ) -> std::io::Result<()> {
        let head = self.head_at(self.astart);
        self.astart += RECORD_HEAD;
        let body = len - TAG_LEN;
        let first = bufs.iter_mut().find(|b| !b.is_empty()).expect("checked");
        let to = if direct && first.len() >= body {
            Some(first.as_ptr() as usize)
        } else {
            None
        };
        let dest: &mut [u8] = match to {
            Some(_) => &mut first[..body],
            None => {
                if self.plain.len() < MAX_PLAIN {
                    self.plain.resize(MAX_PLAIN, 0);
                }
                &mut self.plain[..body]
            }
        };
        let k = body.min(self.aend - self.astart);
        dest[..k].copy_from_slice(&self.ahead[self.astart..self.astart + k]);
        self.astart += k;
        let mut tag = [0u8; TAG_LEN];
        let t = TAG_LEN.min(self.aend - self.astart);
        tag[..t].copy_from_slice(&self.ahead[self.astart..self.astart + t]);
        self.astart += t;
        if self.astart == self.aend {
            (self.astart, self.aend) = (0, 0);
        }
        self.large = Some(Large {
            head,
            len: body,
            got: k,
            tag,
            tag_got: t,
            direct: to,
        });
        Ok(())
    }

    /// Reads on into the large record: `Some` once the call has an answer (its plaintext, or
    /// nothing now), `None` to go on (the record is opened into the plaintext buffer).
    fn receive_large(
        &mut self,
        bufs: &mut [IoSliceMut<'_>],
        read: &mut impl FnMut(&mut [IoSliceMut<'_>]) -> std::io::Result<Option<usize>>,
    ) -> std::io::Result<Option<Got>> {
        let large = self.large.as_mut().expect("a large record");
        let first = bufs.iter_mut().find(|b| !b.is_empty()).expect("checked");
        if let Some(at) = large.direct {
            if first.as_ptr() as usize != at || first.len() < large.len {
                return Err(std::io::Error::other(
                    "the receive buffer moved in the middle of a record (a caller's mistake)",
                ));
            }
        }
        // (The read-ahead is empty while a large record is on its way.)
        let ahead_end = AHEAD_AFTER_DIRECT.min(self.ahead.len());
        while large.got < large.len || large.tag_got < TAG_LEN {
            let body: &mut [u8] = match large.direct {
                Some(_) => &mut first[large.got..large.len],
                None => &mut self.plain[large.got..large.len],
            };
            let mut iov = [
                IoSliceMut::new(body),
                IoSliceMut::new(&mut large.tag[large.tag_got..]),
                IoSliceMut::new(&mut self.ahead[self.aend..ahead_end]),
            ];
            let n = match read(&mut iov)? {
                None => return Ok(Some(Got::WouldBlock)),
                Some(0) => return Ok(Some(Got::Eof)),
                Some(n) => n,
            };
            let b = n.min(large.len - large.got);
            large.got += b;
            let t = (n - b).min(TAG_LEN - large.tag_got);
            large.tag_got += t;
            self.aend += n - b - t;
        }
        let Large {
            head,
            len,
            tag,
            direct,
            ..
        } = self.large.take().expect("a large record");
        match direct {
            Some(_) => {
                self.opener.open(head, &mut first[..len], tag)?;
                Ok(Some(Got::Bytes(len)))
            }
            None => {
                self.opener.open(head, &mut self.plain[..len], tag)?;
                (self.pstart, self.pend) = (0, len);
                Ok(None)
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
    /// The static public key the peer proved in the handshake, on a secure connection.
    pub peer_key: Option<[u8; 32]>,
}

impl Link {
    /// A connection without a secure channel.
    pub fn plain(stream: std::net::TcpStream) -> Self {
        Link {
            stream,
            channel: None,
            peer_key: None,
        }
    }

    /// A connection with the channel of `session`.
    pub fn secure(stream: std::net::TcpStream, session: super::Session) -> Self {
        Link {
            stream,
            channel: Some((session.sealer, RxBuf::new(session.opener))),
            peer_key: Some(session.peer_key),
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
            match rx.recv(&mut iov, false, |b| match stream.read_vectored(b) {
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
            match rx.recv(&mut iov, false, |b| stream.read_vectored(b).map(Some))? {
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

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: [Protection; 2] = [Protection::Encrypt, Protection::Authenticate];

    fn pair(protection: Protection) -> (Sealer, RxBuf) {
        let key = [7u8; 32];
        (
            Sealer::new(&key, protection),
            RxBuf::new(Opener::new(&key, protection)),
        )
    }

    /// Feeds `wire` to `rx` at most `step` bytes per read, receiving into buffers of
    /// `want` bytes (`direct`: the same buffer until bytes come, as a reservation is).
    fn receive(rx: &mut RxBuf, wire: &[u8], step: usize, want: usize, direct: bool) -> Vec<u8> {
        let mut at = 0;
        let mut got = Vec::new();
        let mut buf = vec![0u8; want];
        loop {
            let r = rx
                .recv(&mut [IoSliceMut::new(&mut buf)], direct, |iov| {
                    let mut n = 0;
                    for b in iov.iter_mut() {
                        let k = b.len().min(step - n).min(wire.len() - at);
                        b[..k].copy_from_slice(&wire[at..at + k]);
                        (at, n) = (at + k, n + k);
                    }
                    Ok(if n == 0 && at < wire.len() {
                        None
                    } else {
                        Some(n)
                    })
                })
                .unwrap();
            match r {
                Got::Bytes(n) => got.extend_from_slice(&buf[..n]),
                Got::WouldBlock => {}
                Got::Eof => return got,
            }
        }
    }

    #[test]
    fn records_of_every_size_arrive_whole_whatever_the_reads() {
        // Small records (gathered), a large one that goes straight to the caller's buffer, a
        // record of the largest size and an empty one.
        let sizes = [0, 1, 30, 4096, 4097, 100_000, MAX_PLAIN, MAX_PLAIN + 5, 17];
        for (protection, step, want, direct) in BOTH.into_iter().flat_map(|p| {
            [
                (p, 1 << 20, MAX_PLAIN, true),
                (p, 7, MAX_PLAIN + 64, true),
                (p, 1500, 28, false),
                (p, 65_536, 200_000, true),
                (p, 3, 4097, false),
            ]
        }) {
            let (mut sealer, mut rx) = pair(protection);
            let mut wire = Vec::new();
            let mut plain = Vec::new();
            for (i, n) in sizes.into_iter().enumerate() {
                let part: Vec<u8> = (0..n).map(|k| (k * 31 + i) as u8).collect();
                sealer.seal(&part, &mut wire).unwrap();
                plain.extend_from_slice(&part);
            }
            let got = receive(&mut rx, &wire, step, want, direct);
            assert!(
                got == plain,
                "{protection:?}: step {step}, buffers of {want}, direct {direct}"
            );
        }
    }

    #[test]
    fn a_changed_byte_and_an_oversized_record_are_refused() {
        for protection in BOTH {
            a_changed_byte_is_refused(protection);
        }
        let (_, mut rx) = pair(Protection::Encrypt);
        let head = ((MAX_PLAIN + TAG_LEN + 1) as u32).to_be_bytes();
        let e = rx
            .recv(&mut [IoSliceMut::new(&mut [0u8; 64])], false, |iov| {
                iov[0][..4].copy_from_slice(&head);
                Ok(Some(4))
            })
            .unwrap_err();
        assert!(e.to_string().contains("announces"), "{e}");
    }

    #[test]
    fn authenticated_records_travel_readable_and_encrypted_ones_do_not() {
        let plain: Vec<u8> = (0..10_000u32).map(|k| (k * 7) as u8).collect();
        for protection in BOTH {
            let (mut sealer, _) = pair(protection);
            let mut wire = Vec::new();
            sealer.seal(&plain, &mut wire).unwrap();
            assert_eq!(wire.len(), RECORD_HEAD + plain.len() + TAG_LEN);
            let body = &wire[RECORD_HEAD..RECORD_HEAD + plain.len()];
            assert_eq!(body == plain, protection == Protection::Authenticate);
        }
        // One end's records do not open on an end that expects the other protection.
        let (mut sealer, _) = pair(Protection::Authenticate);
        let (_, mut rx) = pair(Protection::Encrypt);
        let mut wire = Vec::new();
        sealer.seal(&plain, &mut wire).unwrap();
        let e = rx
            .recv(
                &mut [IoSliceMut::new(&mut vec![0u8; 20_000])],
                false,
                |iov| {
                    let k = iov[0].len().min(wire.len());
                    iov[0][..k].copy_from_slice(&wire[..k]);
                    Ok(Some(k))
                },
            )
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData, "{e}");
    }

    fn a_changed_byte_is_refused(protection: Protection) {
        let (mut sealer, _) = pair(protection);
        let mut wire = Vec::new();
        sealer.seal(&[5u8; 70_000], &mut wire).unwrap();
        for at in [2, 10, 50_000, wire.len() - 1] {
            let (_, mut rx) = pair(protection);
            let mut bad = wire.clone();
            bad[at] ^= 1;
            let mut buf = vec![0u8; 80_000];
            let mut fed = 0;
            let e = loop {
                match rx.recv(&mut [IoSliceMut::new(&mut buf)], true, |iov| {
                    let mut n = 0;
                    for b in iov.iter_mut() {
                        let k = b.len().min(bad.len() - fed);
                        b[..k].copy_from_slice(&bad[fed..fed + k]);
                        (fed, n) = (fed + k, n + k);
                    }
                    Ok(Some(n))
                }) {
                    Err(e) => break e,
                    Ok(Got::Bytes(n)) => panic!("byte {at} changed, yet {n} bytes came"),
                    Ok(Got::Eof) => panic!("byte {at} changed: no error"),
                    Ok(Got::WouldBlock) => {}
                }
            };
            assert_eq!(
                e.kind(),
                ErrorKind::InvalidData,
                "{protection:?}, byte {at}: {e}"
            );
        }
    }
}
