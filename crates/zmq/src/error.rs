//! What can go wrong on a ZeroMQ connection; every variant names the peer.

use thiserror::Error;

/// An error of a ZMTP connection or socket. `peer` is the remote address (or the address being
/// connected to / listened on).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ZmqError {
    /// The peer's first ten bytes are not a ZMTP signature (`FF`, 8 padding bytes, `7F`).
    #[error("{peer}: not a ZeroMQ peer: byte {at} of the greeting is 0x{byte:02x}, a ZMTP signature has 0x{expected:02x} there")]
    Signature {
        /// The peer.
        peer: String,
        /// Offset in the greeting.
        at: usize,
        /// What came.
        byte: u8,
        /// What a signature has.
        expected: u8,
    },
    /// The peer speaks ZMTP older than 3.0 (libzmq before 4.0).
    #[error(
        "{peer}: peer speaks ZMTP {major}.{minor}; sluice needs ZMTP 3.0 or later (libzmq ≥ 4.0)"
    )]
    Version {
        /// The peer.
        peer: String,
        /// Its major version.
        major: u8,
        /// Its minor version.
        minor: u8,
    },
    /// The peer asked for a security mechanism other than NULL.
    #[error("{peer}: peer uses security mechanism '{mechanism}'; sluice speaks only NULL (no CURVE/PLAIN)")]
    Mechanism {
        /// The peer.
        peer: String,
        /// The mechanism it named.
        mechanism: String,
    },
    /// The peer's socket type cannot talk to ours.
    #[error("{peer}: peer is a {theirs} socket, which cannot talk to this {ours} socket (expected {expected})")]
    SocketType {
        /// The peer.
        peer: String,
        /// Its type as READY named it.
        theirs: String,
        /// Ours.
        ours: &'static str,
        /// The types that fit ours.
        expected: &'static str,
    },
    /// A frame or command the protocol does not allow.
    #[error("{peer}: ZMTP protocol error: {what}")]
    Protocol {
        /// The peer.
        peer: String,
        /// What was wrong.
        what: String,
    },
    /// A frame longer than the configured limit.
    #[error("{peer}: frame of {len} bytes exceeds the limit of {limit} bytes (raise max_frame)")]
    TooLarge {
        /// The peer.
        peer: String,
        /// The announced length.
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// The peer sent an ERROR command.
    #[error("{peer}: peer reported an error: {reason}")]
    Remote {
        /// The peer.
        peer: String,
        /// Its reason.
        reason: String,
    },
    /// A gr-zeromq tag header that does not parse.
    #[error("{peer}: bad gr-zeromq tag header: {what}")]
    TagHeader {
        /// The peer.
        peer: String,
        /// What was wrong.
        what: String,
    },
    /// A socket call failed.
    #[error("{peer}: {what}: {message}")]
    Io {
        /// The peer or address.
        peer: String,
        /// What was being done.
        what: &'static str,
        /// The system's message.
        message: String,
    },
    /// A bad address or option.
    #[error("{0}")]
    Config(String),
}

impl ZmqError {
    /// An I/O error while doing `what` with `peer`.
    pub(crate) fn io(peer: &str, what: &'static str, e: &std::io::Error) -> ZmqError {
        ZmqError::Io {
            peer: peer.to_string(),
            what,
            message: e.to_string(),
        }
    }

    /// Whether the error is the peer's misbehaviour or a lost connection (the socket drops
    /// that peer and goes on) rather than this end's configuration.
    pub fn is_peer(&self) -> bool {
        !matches!(self, ZmqError::Config(_))
    }
}

impl From<ZmqError> for sluice_runtime::NodeError {
    fn from(e: ZmqError) -> Self {
        sluice_runtime::NodeError::from_error(e)
    }
}
