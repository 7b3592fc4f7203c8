//! Settings shared by [`TcpSink`](crate::TcpSink) and [`TcpSource`](crate::TcpSource).

use crate::NetError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a sender does when its retention window is full while its peer is away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetentionFull {
    /// Stop taking input: upstream waits until the peer is back and acknowledges (the default,
    /// for sources that can wait, such as files).
    #[default]
    Block,
    /// Drop the oldest retained items, count them, and tell the receiver with a GAP frame,
    /// which it marks with a [`GAP`](sluice_runtime::metadata::GAP) tag: for real-time
    /// sources, which cannot wait.
    DropOldest,
}

/// When a receiver acknowledges items, letting the sender release them.
#[derive(Debug, Clone, Default)]
pub enum Acknowledge {
    /// Once they are committed into the receiver's queue (the default).
    #[default]
    Received,
    /// Once `AckHandle` says so: whoever owns the handle (the cluster's failover, which
    /// advances it as outputs made from these items are acknowledged further downstream)
    /// moves it forward; the receiver acknowledges the lesser of it and what it received.
    External(AckHandle),
}

impl PartialEq for Acknowledge {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Acknowledge::Received, Acknowledge::Received) => true,
            (Acknowledge::External(a), Acknowledge::External(b)) => Arc::ptr_eq(&a.0, &b.0),
            _ => false,
        }
    }
}

/// A stream offset that another part of the program advances: for
/// [`Acknowledge::External`]. Cloning it shares it.
#[derive(Debug, Clone, Default)]
pub struct AckHandle(Arc<AtomicU64>);

impl AckHandle {
    /// A handle at offset 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Says that every item below `offset` may be released (offsets only move forward: a
    /// lower value than before is ignored).
    pub fn advance(&self, offset: u64) {
        self.0.fetch_max(offset, Ordering::AcqRel);
    }

    /// The offset it has reached.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// How a TCP block behaves. Each block reads the fields that concern it (see each field).
#[derive(Debug, Clone, PartialEq)]
pub struct TcpOptions {
    /// Sender: append a CRC32C to every DATA frame (the receiver checks it before it commits
    /// the frame's items). Off by default: TCP's own checksum covers the loopback and LAN case.
    pub crc: bool,
    /// Sender: the most payload bytes per DATA frame (rounded down to whole items, at least
    /// one item); also the receiver's largest expected frame, which sizes its queue.
    pub frame_bytes: usize,
    /// Sender: bytes of un-acknowledged items it retains for resending (its input queue is at
    /// least this large). When retention is full, upstream blocks.
    pub retention_bytes: usize,
    /// Both: send a HEARTBEAT when nothing else went out for this long.
    pub heartbeat: Duration,
    /// Both: a peer from which nothing (not even a heartbeat) came for this long while this
    /// end waits on it is declared silent and the connection is dropped.
    pub peer_timeout: Duration,
    /// Both: how long to wait for the first connection before the block fails.
    pub connect_timeout: Duration,
    /// Both: how long to wait for a new connection after one was lost (the peer stopped
    /// mid-frame, went silent, or closed early) before the block fails with the loss's cause.
    /// Zero fails at once: no resume.
    pub resume_timeout: Duration,
    /// Receiver: frames whose length field exceeds this are refused, unread.
    pub max_frame: u32,
    /// Receiver: the most tags one DATA frame may carry (more is the peer's protocol error).
    pub max_tags_per_frame: u32,
    /// Receiver: the most tags the frames within any queue's worth of items may carry
    /// together (see [`tag_budget`](crate::tag_budget)).
    pub tag_budget: usize,
    /// Receiver: the most bytes of tags (as they came) within any queue's worth of items.
    pub tag_budget_bytes: usize,
    /// Sender: what to do when retention is full while the peer is away.
    pub retention_full: RetentionFull,
    /// Receiver: items before its resume offset that its consumer needs to prime its state
    /// (an FIR's taps − 1). The receiver declares it in WELCOME; the sender then keeps that
    /// many acknowledged items too, so that a receiver taking over may resume that far back.
    pub history: u64,
    /// Receiver: when it acknowledges (by default, once received).
    pub ack: Acknowledge,
    /// Receiver: the stream offset of its first item: 0 for a receiver there from the start;
    /// a receiver taking over a running stream starts where it must (with its history).
    pub start_offset: u64,
    /// Sender: the longest committed items may wait to be batched with more into one frame.
    /// The sender sends whatever its input holds whenever it runs, never waiting for a full
    /// frame; this bounds how long the scheduler may let it sleep after items came, hoping
    /// for half a queue (its batching, [`Node::batch_wait`](sluice_runtime::Node::batch_wait)).
    /// Zero: wake for every commit (lowest latency, most frames).
    pub flush: Duration,
    /// Receiver: after it received something, look for the next bytes without blocking
    /// (busy-polling the socket) for this long before it sleeps in `poll`. Zero (the default):
    /// no spin. A spin saves the wake-up of a sleeping thread (about 10 µs here, far more on a
    /// loaded machine) when the next frame is due within the window, as in a request/reply
    /// exchange, at the price of a CPU busy for that long after every frame.
    pub spin: Duration,
    /// Both: items per vector (1: a plain stream). The block's port carries vectors of this
    /// many items ([`PortSpec::vlen`](sluice_runtime::PortSpec::vlen)), e.g. one sample of
    /// each of `vlen` channels; DATA frames, resume offsets, credits and acknowledgements count
    /// whole vectors, and the receiver refuses a sender whose HELLO declares another `vlen`.
    pub vlen: usize,
    /// Both: the cluster key. When set, every connection (the first and each reconnect)
    /// authenticates with [`auth`](crate::auth) before the HELLO; a peer without the key is
    /// refused and logged on stderr, and a listening end goes on waiting for the right peer.
    pub key: Option<crate::auth::ClusterKey>,
    /// Both: this end's static key pair for the secure channel (`identity_file`); without
    /// one, a fresh pair per connection (the cluster key or nothing authenticates this end).
    pub identity: Option<std::sync::Arc<crate::secure::Identity>>,
    /// Both: the peers accepted, by public key (`peers_file`); with it, a peer whose key is
    /// not listed is refused even if it holds the cluster key.
    pub peers: Option<std::sync::Arc<crate::secure::Peers>>,
    /// Both: whether a stream without credentials may listen beyond loopback (see
    /// [`Security`]).
    pub security: Security,
    /// Both: the most the authentication of one connection may take (a silent peer is
    /// refused after it). On a listening end, the budget of a new connection's work before the
    /// node sees it: the handshake (with credentials) and, for a receiver, its HELLO (see
    /// [`accept`](crate::accept)).
    pub auth_timeout: Duration,
    /// Listening end: the most connections pending at once (accepted, not yet through their
    /// handshake and HELLO, or not yet taken); one beyond is closed at once and counted.
    pub max_pending: usize,
    /// Listening end: the most pending connections from one source address.
    pub max_pending_per_ip: usize,
    /// Sender: the fence of a partition that runs as primary and hot standby (see
    /// [`fence`](crate::fence)): revision 0, standby (send nothing, release what the receiver
    /// acknowledges); above 0, primary with that lease revision. `None`: an ordinary sender.
    pub fence: Option<crate::Fence>,
    /// Sender: the receiver is one replica of a primary/standby pair, so losing it is no
    /// failure: the sink gives it up at once (a warning, no error) and consumes its input from
    /// then on, so the other replica's stream never waits for it. (The lost replica cannot
    /// resume: it missed items, so its own receiver fails after its `resume_timeout` and the
    /// partition fails over.)
    pub replica: bool,
    /// Receiver: accept fenced senders (a primary and its standbys, each HELLO carrying a
    /// lease revision): standbys are kept connected and told what was received; a primary
    /// with a newer revision displaces the current one, and an older revision is refused.
    pub fenced: bool,
    /// Receiver with `fenced`: the fence its senders name (in a cluster, the protected
    /// host's name). With it, a HELLO that raises the revision displaces the primary only if
    /// the process's [`RevisionCheck`](crate::fence::RevisionCheck) confirms the revision
    /// (see [`fence`](crate::fence)); without it, or without a check installed, the revision
    /// is believed.
    pub fenced_by: Option<String>,
    /// Sender with a `fence`: the partition has a warm standby, and this is its output
    /// stream (see [`fence`](crate::fence)): the first WELCOME sets where its input starts
    /// ([`Fence::set_start`](crate::Fence::set_start)) and the offset of its first item; every
    /// acknowledged offset advances the fence's input acknowledgement.
    pub warm: Option<crate::WarmMap>,
    /// Receiver: the input of a partition with a warm standby: it connects only once the
    /// fence's start is known and starts its stream there (instead of `start_offset`). Give it
    /// [`Acknowledge::External`] with the fence's input acknowledgement.
    pub warm_fence: Option<crate::Fence>,
    /// Both: messages beside the stream (see [`message`](crate::message)). A sender gets a
    /// message input `msg` (port 1) and binds each message to its stream position when the
    /// message arrives; a receiver gets a message output `msg` (port 1). Off by default: the
    /// wire is then exactly what peers without messages speak. Not with `fence`, `replica`,
    /// `fenced` or `warm_fence` (a takeover's receiver starts without the messages).
    pub messages: bool,
}

impl Default for TcpOptions {
    fn default() -> Self {
        TcpOptions {
            crc: false,
            frame_bytes: 1 << 20,
            retention_bytes: 8 << 20,
            heartbeat: Duration::from_secs(1),
            peer_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(60),
            resume_timeout: Duration::from_secs(60),
            max_frame: crate::wire::DEFAULT_MAX_FRAME,
            max_tags_per_frame: crate::decoder::DEFAULT_MAX_TAGS,
            tag_budget: crate::tag_budget::DEFAULT_TAGS,
            tag_budget_bytes: crate::tag_budget::DEFAULT_BYTES,
            retention_full: RetentionFull::Block,
            history: 0,
            ack: Acknowledge::Received,
            start_offset: 0,
            flush: Duration::from_micros(50),
            spin: Duration::ZERO,
            vlen: 1,
            key: None,
            identity: None,
            peers: None,
            security: Security::Encrypt,
            auth_timeout: crate::auth::DEFAULT_TIMEOUT,
            max_pending: crate::accept::AcceptOptions::default().max_pending,
            max_pending_per_ip: crate::accept::AcceptOptions::default().max_pending_per_ip,
            fence: None,
            replica: false,
            fenced: false,
            fenced_by: None,
            warm: None,
            warm_fence: None,
            messages: false,
        }
    }
}

/// What a stream requires of its connections (graph parameter `security`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// Every connection runs the secure channel: authenticated peers, every byte encrypted
    /// and integrity-protected. A stream with no credentials (no `key_file`, no `peers_file`)
    /// may then only listen on loopback.
    Encrypt,
    /// Every connection runs the secure channel with authenticated peers, and every byte is
    /// integrity-protected but sent as it is (readable on the way): for links that must not
    /// be encrypted. It costs more CPU than `Encrypt` here (see `docs/net/wire.md`).
    Authenticate,
    /// Plaintext, anyone may connect: written out in the graph to listen beyond loopback
    /// without credentials (a warning says so at start).
    None,
}

impl Security {
    /// Parses `"encrypt"`, `"authenticate"` or `"none"`.
    pub fn parse(text: &str) -> Option<Security> {
        match text {
            "encrypt" => Some(Security::Encrypt),
            "authenticate" => Some(Security::Authenticate),
            "none" => Some(Security::None),
            _ => None,
        }
    }
}

impl TcpOptions {
    /// The secure channel's credentials for a stream connection, `None` without a key or a
    /// peers list (a plaintext stream).
    pub(crate) fn credentials(&self) -> Result<Option<crate::secure::Credentials>, NetError> {
        if self.key.is_none() && self.peers.is_none() {
            return Ok(None);
        }
        let identity = match &self.identity {
            Some(id) => id.clone(),
            None => std::sync::Arc::new(crate::secure::Identity::generate()?),
        };
        Ok(Some(crate::secure::Credentials {
            identity,
            psk: self.key.clone(),
            peers: self.peers.clone(),
            purpose: crate::secure::Purpose::Stream,
            protection: match self.security {
                Security::Authenticate => crate::secure::Protection::Authenticate,
                Security::Encrypt | Security::None => crate::secure::Protection::Encrypt,
            },
        }))
    }

    /// Refuses a listener beyond loopback without credentials unless `security` is `none`
    /// (then warns): anyone who reaches the port could feed or read the stream.
    pub(crate) fn check_listener(&self, endpoint: &crate::Endpoint) -> Result<(), NetError> {
        let Some(addr) = endpoint.local_addr() else {
            return Ok(());
        };
        if addr.ip().is_loopback() || self.key.is_some() || self.peers.is_some() {
            return Ok(());
        }
        match self.security {
            Security::Encrypt | Security::Authenticate => Err(NetError::Config(format!(
                "listening on {addr} (beyond loopback) without credentials: give key_file (and/or peers_file), or write security = \"none\" to allow anyone who reaches the port"
            ))),
            Security::None => {
                eprintln!("sluice-net: warning: {addr} listens beyond loopback with security = \"none\": anyone who reaches it may connect, and its bytes are neither authenticated nor encrypted");
                Ok(())
            }
        }
    }

    /// The limits of a listening end's [`Acceptor`](crate::accept::Acceptor).
    pub(crate) fn accept_options(&self) -> crate::accept::AcceptOptions {
        crate::accept::AcceptOptions {
            budget: self.auth_timeout,
            max_pending: self.max_pending.max(1),
            max_pending_per_ip: self.max_pending_per_ip.max(1),
            ..crate::accept::AcceptOptions::default()
        }
    }

    /// Items per vector, at least 1.
    pub(crate) fn vlen(&self) -> usize {
        self.vlen.max(1)
    }

    /// Items per frame for items of `size` bytes: whole vectors, at least one.
    pub(crate) fn frame_items(&self, size: usize) -> usize {
        let vlen = self.vlen();
        (self.frame_bytes / size.max(1).saturating_mul(vlen)).max(1) * vlen
    }
}

/// The idle back-off of a block waiting on its socket. `poll` returns as soon as the socket
/// is ready, so the timeout only bounds how long the block is away from its other duties (the
/// scheduler, a node sharing its thread, its silence and ACK clocks): 500 µs at first, growing
/// to a cap so that an idle connection costs little. (A 50 µs start woke a reflector two or
/// three times between 1 KiB packets at 70 Mbit/s for nothing: more CPU, and a later p50.)
#[derive(Debug)]
pub(crate) struct Backoff(Duration);

impl Backoff {
    const FIRST: Duration = Duration::from_micros(500);
    const CAP: Duration = Duration::from_millis(2);

    pub fn new() -> Self {
        Backoff(Self::FIRST)
    }

    /// The next wait, doubling.
    pub fn next(&mut self) -> Duration {
        let d = self.0;
        self.0 = (self.0 * 2).min(Self::CAP);
        d
    }

    /// Something moved: wait briefly again next time.
    pub fn reset(&mut self) {
        self.0 = Self::FIRST;
    }
}
