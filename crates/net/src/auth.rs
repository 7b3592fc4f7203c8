//! Cluster-key authentication: a mutual challenge-response with HMAC-SHA256 that any two ends
//! of a TCP connection run before they speak their own protocol (a sluice-net stream's HELLO,
//! the cluster's control messages). Only peers holding the same [`ClusterKey`] get through.
//!
//! The exchange (byte by byte in `docs/net/wire.md`, *Authentication*): each side sends at
//! once a CHALLENGE with a fresh 32-byte nonce; each then sends a PROOF, the HMAC-SHA256 under
//! the key of its role's label (`connector` or `listener`) and both nonces; each checks the
//! other's PROOF in constant time and answers OK, or REFUSED with the reason, and reads the
//! other's verdict. A side that sees anything else (a sluice-net frame from a peer without a
//! key, garbage, a wrong MAC, its own nonce reflected, silence past the timeout) refuses with
//! a [`NetError`] naming the peer's address.
//!
//! The role label in the MAC makes a reflected PROOF useless: what a listener proves is never
//! what a connector must prove, and fresh nonces on both sides make every PROOF good for one
//! connection only. The exchange authenticates the peers; it does not encrypt or protect the
//! bytes that follow (a cluster's links are its own network namespace or LAN).
//!
//! ```no_run
//! use sluice_net::auth::{self, ClusterKey};
//! use std::time::Duration;
//! let key = ClusterKey::load("/etc/sluice/cluster.key".as_ref())?;
//! let mut stream = std::net::TcpStream::connect("10.0.0.2:7000").unwrap();
//! auth::connect(&mut stream, &key, Duration::from_secs(5))?;
//! // ... the authenticated peer's protocol ...
//! # Ok::<(), sluice_net::NetError>(())
//! ```

use crate::NetError;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// The four bytes every authentication message starts with (`"SLAU"`); a sluice-net stream
/// frame starts with [`wire::MAGIC`](crate::wire::MAGIC) (`"SLCN"`) instead.
pub const MAGIC: [u8; 4] = *b"SLAU";

/// The version of the exchange this crate speaks.
pub const VERSION: u8 = 1;

/// Bytes of a message's header: magic (4), version (1), type (1), body length (2).
pub const HEADER_LEN: usize = 8;

/// Bytes of a nonce, of a key, and of a MAC.
pub const NONCE_LEN: usize = 32;

/// The longest reason a REFUSED message carries.
pub const MAX_REASON: usize = 512;

/// The default bound on the whole exchange.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Characters of a key file: the key in hex.
const KEY_HEX: usize = 2 * NONCE_LEN;

/// The label the connecting side's PROOF covers.
const CONNECTOR_LABEL: &[u8] = b"sluice-auth v1 connector";

/// The label the listening side's PROOF covers.
const LISTENER_LABEL: &[u8] = b"sluice-auth v1 listener";

/// Message types (byte 5 of the header).
mod kind {
    pub const CHALLENGE: u8 = 1;
    pub const PROOF: u8 = 2;
    pub const OK: u8 = 3;
    pub const REFUSED: u8 = 4;
}

/// The secret a cluster's hosts share: 32 bytes, kept in a key file of 64 hex characters (and
/// an optional trailing newline) that only its owner may read. Its `Debug` shows no byte of
/// it; two keys compare in constant time.
#[derive(Clone)]
pub struct ClusterKey([u8; NONCE_LEN]);

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(<secret>)")
    }
}

impl PartialEq for ClusterKey {
    fn eq(&self, other: &Self) -> bool {
        self.0
            .iter()
            .zip(other.0.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl Eq for ClusterKey {}

impl ClusterKey {
    /// A key of these bytes (for a key that did not come from a file, as in tests).
    pub fn from_bytes(bytes: [u8; NONCE_LEN]) -> Self {
        ClusterKey(bytes)
    }

    /// The key's bytes (the secure channel's PSK).
    pub(crate) fn bytes(&self) -> &[u8; NONCE_LEN] {
        &self.0
    }

    /// A new random key from the operating system's randomness (`getrandom`).
    pub fn random() -> Result<Self, NetError> {
        let mut bytes = [0u8; NONCE_LEN];
        getrandom::getrandom(&mut bytes).map_err(|e| {
            NetError::Config(format!(
                "no randomness from the operating system for a cluster key: {e}"
            ))
        })?;
        Ok(ClusterKey(bytes))
    }

    /// Reads the key file at `path`: exactly 64 hex characters and an optional trailing
    /// newline. Refuses a symbolic link, a file of another owner than the caller, a file that
    /// its group or others may read or write (`mode & 0o077 != 0`: `chmod 600` it), a file in
    /// a directory others may write, and a file of any other form, naming the path and what
    /// was expected.
    pub fn load(path: &Path) -> Result<Self, NetError> {
        let shown = path.display();
        let expected = "expected exactly 64 hex characters (32 bytes) and an optional trailing newline, as `sluice cluster key` writes";
        // Opened once without following links, checked on the descriptor (owner, mode,
        // parent directory), and read from it: see `secure::keys`.
        let text = crate::secure::keys::read_secret(path, "cluster key file")?;
        if text.len() > KEY_HEX + 1 {
            return Err(NetError::Config(format!(
                "cluster key file {shown} holds {} bytes: {expected}",
                text.len()
            )));
        }
        let hex = text.strip_suffix(b"\n").unwrap_or(&text);
        if hex.len() != KEY_HEX {
            return Err(NetError::Config(format!(
                "cluster key file {shown} holds {} characters before the end: {expected}",
                hex.len()
            )));
        }
        let mut bytes = [0u8; NONCE_LEN];
        for (i, pair) in hex.chunks(2).enumerate() {
            let digit = |c: u8| (c as char).to_digit(16);
            match (digit(pair[0]), digit(pair[1])) {
                (Some(h), Some(l)) => bytes[i] = (h * 16 + l) as u8,
                _ => {
                    return Err(NetError::Config(format!(
                        "cluster key file {shown}: character {} is not a hex digit: {expected}",
                        2 * i + if digit(pair[0]).is_none() { 1 } else { 2 }
                    )))
                }
            }
        }
        Ok(ClusterKey(bytes))
    }

    /// Creates a new key file at `path` with mode 600 holding a new random key (64 lowercase
    /// hex characters and a newline), and returns the key. Never overwrites: an existing file
    /// (even an empty one) is an error, and so is a directory that does not exist.
    pub fn generate(path: &Path) -> Result<Self, NetError> {
        use std::os::unix::fs::OpenOptionsExt;
        let shown = path.display();
        let key = Self::random()?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| {
                if e.kind() == ErrorKind::AlreadyExists {
                    NetError::Config(format!(
                        "cluster key file {shown} exists already: a key is never overwritten (remove it first to make a new one, and give the new one to every host)"
                    ))
                } else {
                    NetError::Config(format!("cannot create cluster key file {shown}: {e}"))
                }
            })?;
        let mut text = String::with_capacity(KEY_HEX + 1);
        for b in key.0 {
            text.push_str(&format!("{b:02x}"));
        }
        text.push('\n');
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| NetError::Config(format!("writing cluster key file {shown}: {e}")))?;
        Ok(key)
    }

    fn mac(
        &self,
        label: &[u8],
        connector: &[u8; NONCE_LEN],
        listener: &[u8; NONCE_LEN],
    ) -> Hmac<Sha256> {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(label);
        mac.update(&[0]);
        mac.update(connector);
        mac.update(listener);
        mac
    }
}

/// Which side of the connection this end is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Connector,
    Listener,
}

/// Authenticates the peer of a connection this end accepted (the listening side), within
/// `timeout` for the whole exchange. `Ok` once both sides proved the key; else an error
/// naming the peer: [`NetError::Auth`] when the peer is refused or refused this end,
/// [`NetError::Io`] when the connection failed or the peer stayed silent past the timeout.
/// The stream's blocking mode is used as it is; its timeouts and `TCP_NODELAY` are restored.
pub fn accept(stream: &mut TcpStream, key: &ClusterKey, timeout: Duration) -> Result<(), NetError> {
    exchange(stream, key, timeout, Side::Listener)
}

/// Authenticates the peer of a connection this end made (the connecting side); see
/// [`accept`].
pub fn connect(
    stream: &mut TcpStream,
    key: &ClusterKey,
    timeout: Duration,
) -> Result<(), NetError> {
    exchange(stream, key, timeout, Side::Connector)
}

fn exchange(
    stream: &mut TcpStream,
    key: &ClusterKey,
    timeout: Duration,
    side: Side,
) -> Result<(), NetError> {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "(unknown peer)".to_string());
    let saved = (
        stream.read_timeout().ok().flatten(),
        stream.write_timeout().ok().flatten(),
        stream.nodelay().unwrap_or(false),
    );
    let _ = stream.set_nodelay(true);
    let mut ex = Exchange {
        stream,
        peer,
        deadline: Instant::now() + timeout,
        timeout,
    };
    let result = ex.run(key, side);
    let _ = ex.stream.set_read_timeout(saved.0);
    let _ = ex.stream.set_write_timeout(saved.1);
    let _ = ex.stream.set_nodelay(saved.2);
    result
}

struct Exchange<'a> {
    stream: &'a mut TcpStream,
    peer: String,
    deadline: Instant,
    timeout: Duration,
}

/// A message read: its type and body.
struct Message {
    kind: u8,
    body: Vec<u8>,
}

impl Exchange<'_> {
    fn run(&mut self, key: &ClusterKey, side: Side) -> Result<(), NetError> {
        let mut ours = [0u8; NONCE_LEN];
        getrandom::getrandom(&mut ours)
            .map_err(|e| self.refused(format!("no randomness for a nonce: {e}")))?;
        self.send(kind::CHALLENGE, &ours)?;
        let theirs = self.expect(kind::CHALLENGE, "CHALLENGE")?;
        let theirs: [u8; NONCE_LEN] = theirs.try_into().expect("checked length");
        if theirs == ours {
            return self.refuse("the peer's CHALLENGE repeats this end's nonce (a reflection)");
        }
        let (connector, listener) = match side {
            Side::Connector => (&ours, &theirs),
            Side::Listener => (&theirs, &ours),
        };
        let (own_label, peer_label) = match side {
            Side::Connector => (CONNECTOR_LABEL, LISTENER_LABEL),
            Side::Listener => (LISTENER_LABEL, CONNECTOR_LABEL),
        };
        let proof = key
            .mac(own_label, connector, listener)
            .finalize()
            .into_bytes();
        self.send(kind::PROOF, &proof)?;
        let their_proof = self.expect(kind::PROOF, "PROOF")?;
        if key
            .mac(peer_label, connector, listener)
            .verify_slice(&their_proof)
            .is_err()
        {
            return self.refuse(
                "wrong cluster key: the peer's PROOF (HMAC-SHA256 over both nonces) does not match this end's key; give both ends the same key file",
            );
        }
        self.send(kind::OK, &[])?;
        self.expect(kind::OK, "OK")?;
        Ok(())
    }

    /// An error refusing the peer (or saying the peer refused this end).
    fn refused(&self, what: impl Into<String>) -> NetError {
        NetError::Auth {
            peer: self.peer.clone(),
            what: what.into(),
        }
    }

    /// Tells the peer why it is refused (as far as it listens) and returns the error.
    fn refuse<T>(&mut self, what: &str) -> Result<T, NetError> {
        let mut reason = what.as_bytes();
        if reason.len() > MAX_REASON {
            let mut end = MAX_REASON;
            while !what.is_char_boundary(end) {
                end -= 1;
            }
            reason = &reason[..end];
        }
        // Best effort: a peer that sent garbage may not read it.
        let _ = self.send(kind::REFUSED, reason);
        Err(self.refused(what))
    }

    fn remaining(&self) -> Option<Duration> {
        self.deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    }

    fn io(&self, what: &'static str, e: &std::io::Error) -> NetError {
        let message = if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
            format!(
                "no answer within {:.1} s (a peer with a cluster key answers at once)",
                self.timeout.as_secs_f64()
            )
        } else {
            e.to_string()
        };
        NetError::Io {
            peer: self.peer.clone(),
            offset: 0,
            what,
            message,
        }
    }

    fn timed_out(&self, what: &'static str) -> NetError {
        self.io(what, &std::io::Error::from(ErrorKind::TimedOut))
    }

    fn send(&mut self, kind: u8, body: &[u8]) -> Result<(), NetError> {
        let mut msg = Vec::with_capacity(HEADER_LEN + body.len());
        msg.extend_from_slice(&MAGIC);
        msg.push(VERSION);
        msg.push(kind);
        msg.extend_from_slice(&(body.len() as u16).to_le_bytes());
        msg.extend_from_slice(body);
        let left = self
            .remaining()
            .ok_or_else(|| self.timed_out("authenticate: send"))?;
        self.stream
            .set_write_timeout(Some(left))
            .map_err(|e| self.io("authenticate: send", &e))?;
        self.stream
            .write_all(&msg)
            .map_err(|e| self.io("authenticate: send", &e))
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        let mut at = 0;
        while at < buf.len() {
            let left = self
                .remaining()
                .ok_or_else(|| self.timed_out("authenticate: receive"))?;
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|e| self.io("authenticate: receive", &e))?;
            match self.stream.read(&mut buf[at..]) {
                Ok(0) => {
                    return Err(self.io(
                        "authenticate: receive",
                        &std::io::Error::new(
                            ErrorKind::UnexpectedEof,
                            format!(
                                "the peer closed the connection during authentication (after {at} of {} bytes of a message)",
                                buf.len()
                            ),
                        ),
                    ))
                }
                Ok(n) => at += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io("authenticate: receive", &e)),
            }
        }
        Ok(())
    }

    fn read(&mut self) -> Result<Message, NetError> {
        let mut h = [0u8; HEADER_LEN];
        self.read_exact(&mut h)?;
        let magic = [h[0], h[1], h[2], h[3]];
        if magic == crate::wire::MAGIC {
            return self.refuse(
                "the peer speaks sluice-net without authenticating: it has no cluster key (give both ends the same key file)",
            );
        }
        if magic != MAGIC {
            return self.refuse(&format!(
                "the peer sent {h:02x?}, not a sluice-auth message (expected magic \"SLAU\" = [53, 4c, 41, 55])"
            ));
        }
        if h[4] != VERSION {
            return self.refuse(&format!(
                "the peer speaks sluice-auth version {}; this end speaks version {VERSION}",
                h[4]
            ));
        }
        let kind = h[5];
        let len = u16::from_le_bytes([h[6], h[7]]) as usize;
        let fixed = match kind {
            kind::CHALLENGE | kind::PROOF => Some(NONCE_LEN),
            kind::OK => Some(0),
            kind::REFUSED => None,
            other => {
                return self.refuse(&format!(
                    "unknown sluice-auth message type {other} (expected 1..=4)"
                ))
            }
        };
        match fixed {
            Some(n) if n != len => {
                return self.refuse(&format!(
                    "sluice-auth message type {kind} of {len} bytes, expected {n}"
                ))
            }
            None if len > MAX_REASON => {
                return self.refuse(&format!(
                    "REFUSED reason of {len} bytes, more than {MAX_REASON}"
                ))
            }
            _ => {}
        }
        let mut body = vec![0u8; len];
        self.read_exact(&mut body)?;
        Ok(Message { kind, body })
    }

    /// Reads the next message, which must be of type `want`; a REFUSED becomes the error.
    fn expect(&mut self, want: u8, name: &str) -> Result<Vec<u8>, NetError> {
        let m = self.read()?;
        if m.kind == kind::REFUSED {
            return Err(self.refused(format!(
                "the peer refused this end: {}",
                crate::escape::bytes(&m.body)
            )));
        }
        if m.kind != want {
            return self.refuse(&format!(
                "sluice-auth message type {} where {name} (type {want}) was due",
                m.kind
            ));
        }
        Ok(m.body)
    }
}

/// A stream block's new connection `stream` from `endpoint`, through the secure channel
/// ([`secure`](crate::secure)) when `opts` has credentials (a key or a peers list):
/// `Ok(Some)` to go on with it; `Ok(None)` when the peer was refused (logged on stderr as
/// `sluice-net: refused <addr>: <why>`, escaped, and remembered in `refused`) and the block
/// should keep waiting: always on a listening end, so that an intruder cannot end the stream,
/// and on a connecting end when the failure may pass (a timeout, a dropped connection). A
/// connecting end refused for good (wrong key, a peer without a key) fails.
pub(crate) fn guard(
    endpoint: &crate::Endpoint,
    mut stream: TcpStream,
    opts: &crate::TcpOptions,
    refused: &mut Option<String>,
) -> Result<Option<crate::secure::Link>, NetError> {
    let Some(creds) = opts.credentials()? else {
        return Ok(Some(crate::secure::Link::plain(stream)));
    };
    let listening = matches!(endpoint, crate::Endpoint::Listen(_));
    // Now: a peer that gave up may be gone (and its address with it) by the time it is logged.
    let addr = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| endpoint.describe());
    let result = if listening {
        crate::secure::accept(&mut stream, &creds, opts.auth_timeout)
    } else {
        crate::secure::connect(&mut stream, &creds, opts.auth_timeout)
    };
    let e = match result {
        Ok(session) => return Ok(Some(crate::secure::Link::secure(stream, session))),
        Err(e) => e,
    };
    let why = match &e {
        NetError::Auth { what, .. } => what.clone(),
        NetError::Io { what, message, .. } => format!("{what}: {message}"),
        other => other.to_string(),
    };
    let why = crate::escape::text(&why);
    eprintln!("sluice-net: refused {addr}: {why}");
    *refused = Some(format!("{addr}: {why}"));
    if listening {
        linger(&stream);
    }
    drop(stream);
    if !listening && e.is_fatal() {
        return Err(e);
    }
    Ok(None)
}

/// Before a refused connection closes: stops sending, then reads (and drops) what the peer
/// sent, for at most 100 ms and 64 KiB, so that the close is a FIN and not a reset that
/// would destroy the preface in the peer's buffer before it reads why.
fn linger(stream: &TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let deadline = Instant::now() + Duration::from_millis(100);
    let mut scratch = [0u8; 4096];
    let mut total = 0;
    while total < 64 << 10 {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break;
        };
        if stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .is_err()
        {
            break;
        }
        match (&*stream).read(&mut scratch) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n,
        }
    }
}
