//! `sluice probe`: the seed's latency and jitter experiment over sluice-net streams.
//!
//! A loop A → B → (C …) → A: the **origin** (A, [`Origin`]) sends a stream of packets
//! ([`packet`]: an incrementing counter stream, one DATA frame per packet) at a set bit rate
//! and receives it back; each **reflector** ([`Reflector`]: a graph `tcp_source → tcp_sink`,
//! the blocks a cluster hop is made of) passes the stream on. The origin speaks the wire
//! itself ([`crate::wire`], [`crate::Decoder`]) so that it can time each packet where the
//! seed did: when it hands the packet to the kernel (just before its `sendmsg`) and when the
//! loop's last receiver — the origin again — has it whole (just after the `recv` that
//! completed it). It checks every packet (no loss, no reorder, no altered word) and
//! summarises the latencies ([`Summary`]); the latency a hop adds is the difference between
//! loops of n and n + 1 reflectors ([`Summary::added_over`]), as in the seed's table. A
//! [`Relay`] passes bytes on unread (a blocking `read`/`write` loop, optionally delayed): a
//! loop of relays is the floor a hop can reach on the same machine.

mod chain;
mod origin;
pub mod packet;
mod rate;
mod reflector;
mod relay;
mod results;
mod stats;

pub use chain::{cpu_line, LocalHops};
pub use origin::{Origin, OriginConfig, OriginRun, Sample};
pub use rate::{parse_bit_rate, rate_words};
pub use reflector::Reflector;
pub use relay::{Relay, RelayStats};
pub use results::{
    default_label, hops_added, read_summary, summarize, HopAdded, ProbeRecord, SummaryRow,
};
pub use stats::{quantile, Added, Summary};

use crate::NetError;
use thiserror::Error;

/// What can go wrong in a probe run.
#[derive(Debug, Error)]
pub enum ProbeError {
    /// A stream error (the peer's bytes, the socket).
    #[error(transparent)]
    Net(#[from] NetError),
    /// A bad setting.
    #[error("{0}")]
    Config(String),
    /// No connection came within the timeout.
    #[error("no connection {what} {url} within {secs:.1} s (is the loop's next process running?)")]
    Connect {
        /// "to" or "from".
        what: &'static str,
        /// The URL.
        url: String,
        /// Seconds waited.
        secs: f64,
    },
    /// A packet came back wrong.
    #[error("peer {peer}, stream byte {offset}: {source}")]
    Packet {
        /// Who sent it.
        peer: String,
        /// The stream offset (bytes) of the packet's start.
        offset: u64,
        /// What is wrong with it.
        source: packet::PacketError,
    },
    /// The stream broke the probe's expectations in another way.
    #[error("peer {peer}: {what}")]
    Stream {
        /// The peer's address.
        peer: String,
        /// What happened, and what was expected.
        what: String,
    },
    /// A file or a process of the probe could not be read, written or started.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the file or program.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A summary file is not JSON.
    #[error("{}: not JSON: {source}", .path.display())]
    NotJson {
        /// The file.
        path: std::path::PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A JSON file is not a summary written by the probe.
    #[error("{}: not a `sluice probe` summary", .0.display())]
    NotSummary(std::path::PathBuf),
    /// No timed packet came back.
    #[error("no packet came back")]
    NoPackets,
    /// A hop process of a local loop failed.
    #[error("a reflector failed ({0})")]
    HopFailed(std::process::ExitStatus),
    /// The other direction of the loop failed first (its error is reported instead).
    #[error("stopped because the other direction of the loop failed")]
    Aborted,
}

impl std::error::Error for packet::PacketError {}
