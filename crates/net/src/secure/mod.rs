//! The secure channel: a Noise handshake (`Noise_XXpsk3_25519_AESGCM_BLAKE2s`, the
//! `snow` crate) that every connection of a keyed stream and every cluster control connection
//! runs before it speaks its own protocol, then every byte in both directions in
//! authenticated, encrypted records. It replaces the HMAC challenge-response of
//! [`auth`](crate::auth), which authenticated the two ends but not the bytes after it, so that
//! a relay that swapped the two proofs had a live, unauthenticated connection to each side.
//!
//! **Who is trusted.** Each end has a static X25519 key pair, its [`Identity`] (a file made by
//! `sluice key new`, or a fresh one per process when only a cluster key is given). A peer is
//! accepted when it proved what the [`Credentials`] ask for, all of it:
//! - with a cluster key ([`ClusterKey`](crate::auth::ClusterKey)): the key is the Noise PSK
//!   (mixed in by the third message), so only a holder completes the handshake;
//! - with a peers list ([`Peers`]): the peer's static public key must be in it (the key, not
//!   an address: a record in etcd may move an address, never an identity).
//!
//! **Relays get nothing.** The keys of the session come from Diffie-Hellman of both sides'
//! ephemeral and static keys and the PSK. A relay that runs its own handshake with each side
//! lacks the PSK and the static private keys, so neither side finishes with it; a relay that
//! forwards bytes unchanged carries ciphertext it cannot read nor change undetected.
//!
//! **Version.** Before the Noise messages each side sends an 8-byte preface: `"SLNS"`, the
//! version ([`VERSION`]), the purpose (stream or control), the records' [`Protection`] (0
//! encrypt, 1 authenticate: both ends must ask for the same) and a zero byte. Both prefaces are
//! the Noise prologue, so a peer that rewrote either fails the handshake. A stream key cannot
//! open a control session: the two purposes never complete a handshake with each other.
//!
//! The byte layout is in `docs/net/wire.md` (*Secure channel*).

mod channel;
pub mod keys;

pub use channel::{
    split, Got, Link, Opener, Protection, RxBuf, Sealer, SecureReader, SecureWriter, MAX_PLAIN,
    RECORD_HEAD, TAG_LEN,
};

use crate::auth::ClusterKey;
use crate::NetError;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The four bytes a secure handshake starts with.
pub const MAGIC: [u8; 4] = *b"SLNS";

/// The version of the handshake and record layer this crate speaks (3: records of up to
/// [`MAX_PLAIN`] bytes under the handshake's split keys; 2 had Noise transport messages).
pub const VERSION: u8 = 3;

/// The Noise protocol: XX (each side's static key sent encrypted), the PSK mixed in by the
/// last message, X25519, AES-256-GCM, BLAKE2s. The records after it seal with AES-256-GCM
/// under the keys the handshake splits (see [`channel`]; the cipher's choice and its cost are
/// in `docs/net/wire.md`).
pub const NOISE: &str = "Noise_XXpsk3_25519_AESGCM_BLAKE2s";

/// The largest Noise handshake message: 65,535 bytes.
pub const MAX_MESSAGE: usize = 65_535;

/// Bytes of each side's preface: as long as a sluice-net frame header, so that a peer without
/// a key, reading it as a frame, recognises the magic and says so.
pub const PREFACE_LEN: usize = crate::wire::HEADER_LEN;

/// The responder's first record, which tells the initiator it was accepted.
const ACCEPTED: &[u8] = b"sluice-secure accepted";

/// What a connection is for: a stream's key cannot open a control session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A sluice-net stream (tcp_sink / tcp_source).
    Stream = 1,
    /// A cluster control connection (controller to worker).
    Control = 2,
}

/// A static X25519 key pair. `Debug` shows the public half only.
#[derive(Clone)]
pub struct Identity {
    private: [u8; 32],
    public: [u8; 32],
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Identity(public {})", keys::hex32(&self.public))
    }
}

/// Two identities are the same when their public keys are.
impl PartialEq for Identity {
    fn eq(&self, other: &Self) -> bool {
        self.public == other.public
    }
}

const IDENTITY_HEADER: &str = "sluice-identity v1";

impl Identity {
    /// A new key pair from the operating system's randomness.
    pub fn generate() -> Result<Self, NetError> {
        let kp = snow::Builder::new(params())
            .generate_keypair()
            .map_err(|e| NetError::Config(format!("cannot make a key pair: {e}")))?;
        let mut id = Identity {
            private: [0; 32],
            public: [0; 32],
        };
        id.private.copy_from_slice(&kp.private);
        id.public.copy_from_slice(&kp.public);
        Ok(id)
    }

    /// The public key (what a peers file lists).
    pub fn public(&self) -> [u8; 32] {
        self.public
    }

    /// Writes a new identity file at `path` (mode 600; never overwrites) and returns it.
    /// The file: `sluice-identity v1`, `private HEX`, `public HEX`, one per line.
    pub fn create(path: &Path) -> Result<Self, NetError> {
        let id = Self::generate()?;
        let text = format!(
            "{IDENTITY_HEADER}\nprivate {}\npublic {}\n",
            keys::hex32(&id.private),
            keys::hex32(&id.public)
        );
        keys::create_secret(path, "identity file", &text)?;
        Ok(id)
    }

    /// Reads an identity file (see [`Identity::create`]) with the checks of
    /// [`keys::read_secret`]; the public key must match the private one.
    pub fn load(path: &Path) -> Result<Self, NetError> {
        let shown = path.display();
        let bytes = keys::read_secret(path, "identity file")?;
        let bad = |why: &str| {
            NetError::Config(format!(
                "identity file {shown}: {why} (expected the three lines `sluice key new` writes: {IDENTITY_HEADER}, private HEX, public HEX)"
            ))
        };
        let text = std::str::from_utf8(&bytes).map_err(|_| bad("not text"))?;
        let mut lines = text.lines();
        if lines.next() != Some(IDENTITY_HEADER) {
            return Err(bad("no header line"));
        }
        let mut field = |name: &str| {
            lines
                .next()
                .and_then(|l| l.strip_prefix(name))
                .and_then(|l| l.strip_prefix(' '))
                .and_then(keys::parse_hex32)
                .ok_or_else(|| bad(&format!("no `{name} HEX` line of 64 hex characters")))
        };
        let private = field("private")?;
        let public = field("public")?;
        Ok(Identity { private, public })
    }
}

/// The public keys an end accepts, each with a name for messages (a peers file: one
/// `HEX [name]` per line, `#` comments).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Peers {
    keys: Vec<([u8; 32], String)>,
}

impl Peers {
    /// A list of these keys and names.
    pub fn new(keys: Vec<([u8; 32], String)>) -> Self {
        Peers { keys }
    }

    /// Reads a peers file (checked as [`keys::read_public`] checks it).
    pub fn load(path: &Path) -> Result<Self, NetError> {
        let bytes = keys::read_public(path, "peers file")?;
        let text = String::from_utf8(bytes)
            .map_err(|_| NetError::Config(format!("peers file {}: not text", path.display())))?;
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut words = line.split_whitespace();
            let hex = words.next().unwrap_or("");
            let key = keys::parse_hex32(hex).ok_or_else(|| {
                NetError::Config(format!(
                    "peers file {} line {}: expected a public key of 64 hex characters and an optional name",
                    path.display(),
                    n + 1
                ))
            })?;
            let name = words.next().unwrap_or(hex).to_string();
            keys.push((key, name));
        }
        Ok(Peers { keys })
    }

    /// The name of `key` if listed.
    pub fn name_of(&self, key: &[u8; 32]) -> Option<&str> {
        self.keys
            .iter()
            .find(|(k, _)| constant_eq(k, key))
            .map(|(_, n)| n.as_str())
    }
}

fn constant_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What an end proves and what it asks of its peer.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// This end's static key pair.
    pub identity: Arc<Identity>,
    /// The cluster key, as the Noise PSK; without one, the PSK is all zeros and only the
    /// peers list authenticates.
    pub psk: Option<ClusterKey>,
    /// The peers accepted by their public keys; `None`: any holder of the PSK.
    pub peers: Option<Arc<Peers>>,
    /// What the connection is for.
    pub purpose: Purpose,
    /// What the records after the handshake protect (control connections always encrypt).
    pub protection: Protection,
}

impl Credentials {
    /// Credentials of a cluster key alone, with a fresh identity (the key is what the peer
    /// must prove).
    pub fn from_key(key: ClusterKey, purpose: Purpose) -> Result<Self, NetError> {
        Ok(Credentials {
            identity: Arc::new(Identity::generate()?),
            psk: Some(key),
            peers: None,
            purpose,
            protection: Protection::Encrypt,
        })
    }

    fn check(&self) -> Result<(), NetError> {
        if self.psk.is_none() && self.peers.is_none() {
            return Err(NetError::Config(
                "secure channel without a cluster key or a peers list: any peer would be accepted (give key_file or peers_file)".into(),
            ));
        }
        Ok(())
    }
}

/// A finished handshake: the record layer's two halves and who the peer is.
#[derive(Debug)]
pub struct Session {
    /// Seals what this end sends.
    pub sealer: Sealer,
    /// Opens what the peer sends.
    pub opener: Opener,
    /// The peer's static public key.
    pub peer_key: [u8; 32],
    /// The peer's name in the peers list (its key in hex without one).
    pub peer_name: String,
}

fn params() -> snow::params::NoiseParams {
    NOISE.parse().expect("a valid Noise pattern")
}

/// The default bound on the whole handshake.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs the handshake on a connection this end made (the Noise initiator), within `timeout`.
pub fn connect(
    stream: &mut TcpStream,
    creds: &Credentials,
    timeout: Duration,
) -> Result<Session, NetError> {
    handshake(stream, creds, timeout, true)
}

/// Runs the handshake on a connection this end accepted (the Noise responder).
pub fn accept(
    stream: &mut TcpStream,
    creds: &Credentials,
    timeout: Duration,
) -> Result<Session, NetError> {
    handshake(stream, creds, timeout, false)
}

fn handshake(
    stream: &mut TcpStream,
    creds: &Credentials,
    timeout: Duration,
    initiator: bool,
) -> Result<Session, NetError> {
    creds.check()?;
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "(unknown peer)".to_string());
    let saved = (
        stream.read_timeout().ok().flatten(),
        stream.write_timeout().ok().flatten(),
        stream.nonblocking_state(),
    );
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_nodelay(true);
    let mut io = Blocking {
        stream,
        peer: peer.clone(),
        deadline: Instant::now() + timeout,
        timeout,
    };
    let result = run(&mut io, creds, initiator, &peer);
    let _ = io.stream.set_read_timeout(saved.0);
    let _ = io.stream.set_write_timeout(saved.1);
    if saved.2 {
        let _ = io.stream.set_nonblocking(true);
    }
    result
}

/// Whether a socket is non-blocking (std has no getter; the flag is restored afterwards).
trait NonblockingState {
    fn nonblocking_state(&self) -> bool;
}

impl NonblockingState for TcpStream {
    fn nonblocking_state(&self) -> bool {
        rustix::fs::fcntl_getfl(self).is_ok_and(|f| f.contains(rustix::fs::OFlags::NONBLOCK))
    }
}

fn run(
    io: &mut Blocking<'_>,
    creds: &Credentials,
    initiator: bool,
    peer: &str,
) -> Result<Session, NetError> {
    let auth = |what: String| NetError::Auth {
        peer: peer.to_string(),
        what,
    };
    // The prefaces: ours at once, then the peer's (both in the prologue, initiator's first).
    if creds.purpose == Purpose::Control && creds.protection != Protection::Encrypt {
        return Err(NetError::Config(
            "a control connection's records are always encrypted".into(),
        ));
    }
    let ours = preface(creds.purpose, creds.protection);
    io.write_all(&ours)?;
    let mut theirs = [0u8; PREFACE_LEN];
    io.read_exact(&mut theirs)?;
    if theirs[..4] == crate::wire::MAGIC {
        return Err(auth(
            "the peer speaks sluice-net without a secure channel: it has no key (give both ends key_file, or both security = \"none\")".into(),
        ));
    }
    if theirs[..4] == crate::auth::MAGIC {
        return Err(auth(
            "the peer speaks the old sluice-auth v1 exchange (an older sluice): upgrade it".into(),
        ));
    }
    if theirs[..4] != MAGIC {
        return Err(auth(format!(
            "the peer sent {}, not a secure handshake (expected magic \"SLNS\")",
            crate::escape::bytes(&theirs)
        )));
    }
    if theirs[4] != VERSION {
        return Err(auth(format!(
            "the peer speaks secure channel version {}; this end speaks version {VERSION}",
            theirs[4]
        )));
    }
    if theirs[5] != creds.purpose as u8 {
        return Err(auth(format!(
            "the peer opened a connection for purpose {} where this end serves purpose {} (1 stream, 2 control): a stream's credentials do not open control sessions",
            theirs[5], creds.purpose as u8
        )));
    }
    if theirs[6] != ours[6] {
        let name = |b: u8| match b {
            0 => "security = \"encrypt\"".to_string(),
            1 => "security = \"authenticate\"".to_string(),
            other => format!("an unknown record protection {other}"),
        };
        return Err(auth(format!(
            "the peer asks for {} where this end asks for {}: give both ends the same security",
            name(theirs[6]),
            name(ours[6])
        )));
    }
    let mut prologue = Vec::with_capacity(2 * PREFACE_LEN);
    if initiator {
        prologue.extend_from_slice(&ours);
        prologue.extend_from_slice(&theirs);
    } else {
        prologue.extend_from_slice(&theirs);
        prologue.extend_from_slice(&ours);
    }
    let zero = [0u8; 32];
    let psk: &[u8; 32] = creds.psk.as_ref().map_or(&zero, |k| k.bytes());
    let builder = snow::Builder::new(params())
        .local_private_key(&creds.identity.private)
        .and_then(|b| b.prologue(&prologue))
        .and_then(|b| b.psk(3, psk))
        .map_err(|e| NetError::Config(format!("secure handshake setup: {e}")))?;
    let mut hs = if initiator {
        builder.build_initiator()
    } else {
        builder.build_responder()
    }
    .map_err(|e| NetError::Config(format!("secure handshake setup: {e}")))?;
    let failed = |e: snow::Error| {
        auth(format!(
            "the handshake failed ({e}): the peer does not hold this end's cluster key, or something between changed the bytes"
        ))
    };
    let mut buf = vec![0u8; MAX_MESSAGE];
    let mut payload = vec![0u8; MAX_MESSAGE];
    // XX: -> e; <- e, ee, s, es; -> s, se, psk.
    for step in 0..3 {
        let ours_to_write = (step % 2 == 0) == initiator;
        if ours_to_write {
            let n = hs.write_message(&[], &mut buf).map_err(failed)?;
            io.write_all(&(n as u16).to_be_bytes())?;
            io.write_all(&buf[..n])?;
        } else {
            let mut len = [0u8; 2];
            io.read_exact(&mut len)?;
            let n = u16::from_be_bytes(len) as usize;
            io.read_exact(&mut buf[..n])?;
            hs.read_message(&buf[..n], &mut payload).map_err(failed)?;
        }
    }
    let mut peer_key = [0u8; 32];
    peer_key.copy_from_slice(
        hs.get_remote_static()
            .ok_or_else(|| auth("the peer sent no static key".into()))?,
    );
    let peer_name = match &creds.peers {
        Some(peers) => match peers.name_of(&peer_key) {
            Some(name) => name.to_string(),
            None => {
                return Err(auth(format!(
                    "the peer's public key {} is not in this end's peers list (an address can move; an identity must be listed to be trusted)",
                    keys::hex32(&peer_key)
                )))
            }
        },
        None => keys::hex32(&peer_key),
    };
    // The record keys: the two the handshake splits (initiator to responder, responder to
    // initiator), as Noise's own transport would take them; only the record layer differs
    // (see `channel`).
    if !hs.is_handshake_finished() {
        return Err(auth(
            "secure handshake: not finished after three messages".into(),
        ));
    }
    let (to_responder, to_initiator) = hs.dangerously_get_raw_split();
    let (send, receive) = if initiator {
        (&to_responder, &to_initiator)
    } else {
        (&to_initiator, &to_responder)
    };
    let (mut sealer, mut opener) = (
        Sealer::new(send, creds.protection),
        Opener::new(receive, creds.protection),
    );
    // The initiator's last message cannot tell it whether the responder accepted it (the PSK
    // and its static key are checked there): the responder's first record says so.
    if initiator {
        let mut head = [0u8; RECORD_HEAD];
        io.read_exact(&mut head).map_err(|e| match e {
            NetError::Io { .. } if io.left("").is_ok() => auth(
                "the peer refused this end in the handshake: it holds another cluster key, or this end's public key is not in its peers list".into(),
            ),
            other => other,
        })?;
        let n = u32::from_be_bytes(head) as usize;
        if !(TAG_LEN..=TAG_LEN + ACCEPTED.len()).contains(&n) {
            return Err(auth(format!(
                "the peer's first record announces {n} bytes, not its acceptance"
            )));
        }
        let mut record = vec![0u8; n];
        io.read_exact(&mut record)?;
        let (body, tag) = record.split_at_mut(n - TAG_LEN);
        let tag: [u8; TAG_LEN] = (&*tag).try_into().expect("sixteen bytes");
        opener
            .open(head, body, tag)
            .map_err(|e| auth(e.to_string()))?;
        if body != ACCEPTED {
            return Err(auth("the peer's first record is not its acceptance".into()));
        }
    } else {
        let mut out = Vec::new();
        sealer
            .seal(ACCEPTED, &mut out)
            .map_err(|e| auth(e.to_string()))?;
        io.write_all(&out)?;
    }
    Ok(Session {
        sealer,
        opener,
        peer_key,
        peer_name,
    })
}

/// The preface each end sends first: the magic, the version, the purpose and the records'
/// protection, zeros to [`PREFACE_LEN`].
pub fn preface(purpose: Purpose, protection: Protection) -> [u8; PREFACE_LEN] {
    let mut p = [0u8; PREFACE_LEN];
    p[..4].copy_from_slice(&MAGIC);
    (p[4], p[5], p[6]) = (VERSION, purpose as u8, protection_byte(protection));
    p
}

/// The preface's byte for `protection` (an older sluice sends 0 there: it encrypts).
fn protection_byte(protection: Protection) -> u8 {
    match protection {
        Protection::Encrypt => 0,
        Protection::Authenticate => 1,
    }
}

/// Blocking reads and writes within one deadline.
struct Blocking<'a> {
    stream: &'a mut TcpStream,
    peer: String,
    deadline: Instant,
    timeout: Duration,
}

impl Blocking<'_> {
    fn left(&self, what: &'static str) -> Result<Duration, NetError> {
        self.deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| self.io(what, &std::io::Error::from(ErrorKind::TimedOut)))
    }

    fn io(&self, what: &'static str, e: &std::io::Error) -> NetError {
        NetError::Io {
            peer: self.peer.clone(),
            offset: 0,
            what,
            message: if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
                format!("no handshake within {:.1} s", self.timeout.as_secs_f64())
            } else {
                e.to_string()
            },
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        let left = self.left("handshake: send")?;
        self.stream
            .set_write_timeout(Some(left))
            .and_then(|()| self.stream.write_all(bytes))
            .map_err(|e| self.io("handshake: send", &e))
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        let mut at = 0;
        while at < buf.len() {
            let left = self.left("handshake: receive")?;
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|e| self.io("handshake: receive", &e))?;
            match self.stream.read(&mut buf[at..]) {
                Ok(0) => {
                    return Err(self.io(
                        "handshake: receive",
                        &std::io::Error::new(
                            ErrorKind::UnexpectedEof,
                            "the peer closed the connection during the handshake",
                        ),
                    ))
                }
                Ok(n) => at += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io("handshake: receive", &e)),
            }
        }
        Ok(())
    }
}
