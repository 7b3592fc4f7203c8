//! What can go wrong on a stream connection. Every error names the peer (its address) and the
//! stream offset (the absolute index of the first item the receiving end does not have yet,
//! or the offset a frame claimed), and says what was expected.

use thiserror::Error;

/// An error of a stream connection or of the bytes a peer sent.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum NetError {
    /// The first bytes of a frame are not the magic `SLCN`.
    #[error("peer {peer}: bad magic {found:02x?} at stream offset {offset} (expected \"SLCN\" = [53, 4c, 43, 4e]): not a sluice-net stream, or the stream lost its framing")]
    BadMagic {
        /// The peer's address.
        peer: String,
        /// The stream offset.
        offset: u64,
        /// The four bytes found.
        found: [u8; 4],
    },
    /// The peer speaks another wire version.
    #[error("peer {peer} speaks sluice-net wire version {theirs}; this end speaks version {ours} (at stream offset {offset}): upgrade one side")]
    Version {
        /// The peer's address.
        peer: String,
        /// The stream offset.
        offset: u64,
        /// The peer's version.
        theirs: u8,
        /// This crate's version.
        ours: u8,
    },
    /// The peer's items are not the ones this end carries.
    #[error("peer {peer} sends items of type {their_name} ({their_size} bytes); this end expects {our_name} ({our_size} bytes) (at stream offset {offset})")]
    ItemMismatch {
        /// The peer's address.
        peer: String,
        /// The stream offset.
        offset: u64,
        /// The peer's item type name.
        their_name: String,
        /// The peer's item size.
        their_size: u32,
        /// This end's item type name.
        our_name: String,
        /// This end's item size.
        our_size: u32,
    },
    /// The peer's vectors are not as long as this end's.
    #[error("peer {peer} sends vectors of {theirs} items (vlen {theirs}); this end expects vectors of {ours} items (vlen {ours}) (at stream offset {offset}): give tcp_sink and tcp_source the same vlen (the vlen of the port the stream comes from)")]
    VlenMismatch {
        /// The peer's address.
        peer: String,
        /// The stream offset.
        offset: u64,
        /// The peer's vector length.
        theirs: u32,
        /// This end's vector length.
        ours: u32,
    },
    /// A frame's length field is above the configured limit (nothing was allocated for it).
    #[error("peer {peer}: {kind} frame at stream offset {offset} is {length} bytes long, above the limit of {limit} bytes")]
    Oversized {
        /// The peer's address.
        peer: String,
        /// The stream offset.
        offset: u64,
        /// The frame kind.
        kind: &'static str,
        /// The length it claimed.
        length: u64,
        /// The limit.
        limit: u64,
    },
    /// The peer closed the connection (or the stream ended) inside a frame.
    #[error("peer {peer} stopped mid-frame: {kind} frame at stream offset {offset} ended after {got} of {expected} bytes")]
    Truncated {
        /// The peer's address.
        peer: String,
        /// The stream offset.
        offset: u64,
        /// The frame kind ("frame header" when the header itself was cut).
        kind: &'static str,
        /// Bytes of the frame received.
        got: u64,
        /// Bytes the frame has.
        expected: u64,
    },
    /// A DATA frame's CRC32C does not match its bytes.
    #[error("peer {peer}: CRC32C mismatch in DATA frame at stream offset {offset} ({items} items): computed {computed:08x}, the frame says {sent:08x}")]
    Crc {
        /// The peer's address.
        peer: String,
        /// The frame's offset.
        offset: u64,
        /// Its item count.
        items: u32,
        /// The CRC of the bytes received.
        computed: u32,
        /// The CRC in the trailer.
        sent: u32,
    },
    /// A DATA frame does not start where the previous one ended.
    #[error("peer {peer}: DATA frame starts at offset {got}, expected offset {expected}")]
    Discontinuity {
        /// The peer's address.
        peer: String,
        /// The offset the receiver expects.
        expected: u64,
        /// The offset the frame claims.
        got: u64,
    },
    /// A frame that breaks the protocol in some other way (unknown kind, inconsistent lengths,
    /// a frame the other role sends, malformed tags or metadata).
    #[error("peer {peer}: bad {kind} frame at stream offset {offset}: {what}")]
    Protocol {
        /// The peer's address.
        peer: String,
        /// The stream offset.
        offset: u64,
        /// The frame kind, or "frame" when unknown.
        kind: &'static str,
        /// What is wrong, and what was expected.
        what: String,
    },
    /// A DATA frame whose tags pass this end's budget (too many in the frame, or within a
    /// queue's worth of items; see [`tag_budget`](crate::tag_budget)). It costs the
    /// connection, not the stream: the receiver drops it and the sender resumes.
    #[error("peer {peer}: DATA frame at stream offset {offset}: {what}; dropping this connection")]
    TagBudget {
        /// The peer's address.
        peer: String,
        /// The frame's offset.
        offset: u64,
        /// What passed which limit, naming the setting.
        what: String,
    },
    /// A MESSAGE frame that is too long, malformed, or at another offset or sequence number
    /// than expected (see [`message`](crate::message)). It costs the connection, not the
    /// stream: the receiver drops the connection and waits for its sender to resume.
    #[error("peer {peer}: bad MESSAGE frame at stream offset {offset}: {what}; dropping this connection")]
    Message {
        /// The peer's address.
        peer: String,
        /// The stream offset.
        offset: u64,
        /// What is wrong, and what was expected (escaped: nothing of the peer's bytes as sent).
        what: String,
    },
    /// The peer sent an ERROR frame.
    #[error("peer {peer} reported an error at stream offset {offset}: {message}")]
    Remote {
        /// The peer's address.
        peer: String,
        /// The stream offset.
        offset: u64,
        /// Its message.
        message: String,
    },
    /// Nothing (not even a heartbeat) came from the peer for too long.
    #[error(
        "peer {peer} silent for {secs:.1} s (no frame, no heartbeat) at stream offset {offset}"
    )]
    Silent {
        /// The peer's address.
        peer: String,
        /// The stream offset.
        offset: u64,
        /// Seconds of silence.
        secs: f64,
    },
    /// The peer closed the connection between frames before the stream ended.
    #[error(
        "peer {peer} closed the connection at stream offset {offset} before the end of the stream"
    )]
    Closed {
        /// The peer's address.
        peer: String,
        /// The stream offset.
        offset: u64,
    },
    /// A socket call failed.
    #[error("connection with {peer} at stream offset {offset}: {what}: {message}")]
    Io {
        /// The peer's address (or the address being connected to or listened on).
        peer: String,
        /// The stream offset.
        offset: u64,
        /// The call.
        what: &'static str,
        /// The OS's words.
        message: String,
    },
    /// The connection was lost and did not come back in time.
    #[error("{cause}; no connection came back within {secs:.1} s")]
    Lost {
        /// Why the connection was lost.
        cause: Box<NetError>,
        /// How long this end waited.
        secs: f64,
    },
    /// Cluster-key authentication refused the peer, or the peer refused this end (see
    /// [`auth`](crate::auth)).
    #[error("peer {peer}: cluster-key authentication failed: {what}")]
    Auth {
        /// The peer's address.
        peer: String,
        /// Why, and what was expected.
        what: String,
    },
    /// A bad URL or parameter.
    #[error("{0}")]
    Config(String),
}

impl NetError {
    /// Whether the error ends the stream for good (the peer is broken or incompatible) rather
    /// than the connection (the peer may come back and resume).
    pub fn is_fatal(&self) -> bool {
        !matches!(
            self,
            NetError::Truncated { .. }
                | NetError::Silent { .. }
                | NetError::Closed { .. }
                | NetError::Io { .. }
                | NetError::Message { .. }
                | NetError::TagBudget { .. }
        )
    }
}

impl From<NetError> for sluice_runtime::NodeError {
    fn from(e: NetError) -> Self {
        sluice_runtime::NodeError::from_error(e)
    }
}
