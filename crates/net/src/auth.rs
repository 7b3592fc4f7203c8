//! The cluster key: 32 secret bytes that a cluster's hosts (and the two ends of a keyed
//! stream) share, in a key file of 64 hex characters. It is the PSK of the secure channel
//! ([`secure`](crate::secure)), which replaced the HMAC challenge-response that used to run
//! here: that exchange authenticated the two ends but not the bytes after it, so a relay that
//! swapped the two PROOFs held a live, unauthenticated connection to each side.
//!
//! [`guard`] is the stream blocks' one door: every connection of a keyed stream goes through
//! the secure handshake there before its HELLO.
//!
//! ```no_run
//! use sluice_net::auth::ClusterKey;
//! use sluice_net::secure::{self, Credentials, Purpose};
//! use std::time::Duration;
//! let key = ClusterKey::load("/etc/sluice/cluster.key".as_ref())?;
//! let mut stream = std::net::TcpStream::connect("10.0.0.2:7000").unwrap();
//! let creds = Credentials::from_key(key, Purpose::Stream)?;
//! let session = secure::connect(&mut stream, &creds, Duration::from_secs(5))?;
//! let mut link = secure::Link::secure(stream, session);
//! link.write_all(b"sealed")?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::NetError;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// The four bytes the HMAC challenge-response of sluice before the secure channel started
/// with (`"SLAU"`): a peer that sends them is an older sluice, and is told so.
pub const MAGIC: [u8; 4] = *b"SLAU";

/// Bytes of a key.
pub const NONCE_LEN: usize = 32;

/// The default bound on a connection's handshake.
pub const DEFAULT_TIMEOUT: Duration = crate::secure::DEFAULT_TIMEOUT;

/// Characters of a key file: the key in hex.
const KEY_HEX: usize = 2 * NONCE_LEN;

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
}

/// A stream block's connection `stream` made to `endpoint`, through the secure channel
/// ([`secure`](crate::secure)) when `opts` has credentials (a key or a peers list):
/// `Ok(Some)` to go on with it; `Ok(None)` when the failure may pass (a timeout, a dropped
/// connection: logged on stderr as `sluice-net: refused <addr>: <why>`, escaped, and
/// remembered in `refused`) and the block should try again. A connection refused for good
/// (wrong key, a peer without a key) fails. (A listening end takes its connections through
/// [`accept`](crate::accept) and [`admit`].)
pub(crate) fn guard(
    endpoint: &crate::Endpoint,
    mut stream: TcpStream,
    opts: &crate::TcpOptions,
    refused: &mut Option<String>,
) -> Result<Option<crate::secure::Link>, NetError> {
    let Some(creds) = opts.credentials()? else {
        return Ok(Some(crate::secure::Link::plain(stream)));
    };
    // Now: a peer that gave up may be gone (and its address with it) by the time it is logged.
    let addr = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| endpoint.describe());
    let e = match crate::secure::connect(&mut stream, &creds, opts.auth_timeout) {
        Ok(session) => return Ok(Some(crate::secure::Link::secure(stream, session))),
        Err(e) => e,
    };
    let why = crate::escape::text(&reason(&e));
    eprintln!("sluice-net: refused {addr}: {why}");
    *refused = Some(format!("{addr}: {why}"));
    drop(stream);
    if e.is_fatal() {
        return Err(e);
    }
    Ok(None)
}

/// A listening stream block's new connection, on an acceptor's helper thread: through the
/// secure channel when `opts` has credentials, within the budget of `admission`. `Err` says
/// why the peer is refused (the acceptor counts and logs it, escaped); the connection is
/// closed with a FIN after what the peer sent was read (see [`linger`]).
pub(crate) fn admit(
    mut stream: TcpStream,
    opts: &crate::TcpOptions,
    admission: &crate::accept::Admission,
) -> Result<crate::secure::Link, String> {
    let creds = opts.credentials().map_err(|e| e.to_string())?;
    let Some(creds) = creds else {
        return Ok(crate::secure::Link::plain(stream));
    };
    let budget = admission.left().max(Duration::from_millis(1));
    match crate::secure::accept(&mut stream, &creds, budget) {
        Ok(session) => Ok(crate::secure::Link::secure(stream, session)),
        Err(e) => {
            linger(&stream);
            Err(reason(&e))
        }
    }
}

/// Why a handshake failed, in words for a log line (not yet escaped).
fn reason(e: &NetError) -> String {
    match e {
        NetError::Auth { what, .. } => what.clone(),
        NetError::Io { what, message, .. } => format!("{what}: {message}"),
        other => other.to_string(),
    }
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
