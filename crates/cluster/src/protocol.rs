//! The control connection between `sluice cluster run` (the controller) and a `sluice worker`:
//! after the cluster-key handshake ([`sluice_net::auth`]), one JSON object per line each way.
//!
//! ```text
//! controller                                worker
//!   Load { run, origin, partition, cwd, lease } ->
//!                                        <- Loaded            (or Error: the partition is bad)
//!   Go                                   ->
//!                                        <- Stats { … }       (every stats period while it runs)
//!   Stop (Ctrl-C, or another host failed) ->
//!                                        <- Done { … }        (or Failed { message })
//! ```
//!
//! A worker runs one partition at a time; it stops its graph gracefully if the controller's
//! connection drops, so no run outlives its controller.

use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};

/// The longest line either side accepts (a partition of the 333-channel AMPS receiver is
/// ~10 KiB; this bounds what a confused peer can make us buffer).
pub const MAX_LINE: usize = 4 << 20;

/// The protocol's version, checked in [`ToWorker::Load`]. Version 2 added the partition
/// lease ([`LeaseSpec`]): a worker of version 1 would ignore it and run a standby as a
/// second primary. Version 3 added warm standbys ([`LeaseSpec::warm`]): a worker of version 2
/// would run a warm standby at once. Version 4 moved the partition leases to
/// `/sluice/CLUSTER/leases/HOST/RUN` and has fenced receivers read them back there
/// ([`crate::lease_check`]): a worker of version 3 would look for them elsewhere.
pub const VERSION: u32 = 4;

/// The etcd lease a replicated partition (one of a primary/standby pair) runs under: the
/// replica holding `key` is the primary, and its stream senders carry the key's create
/// revision as their fencing token (the fence named `fence`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseSpec {
    /// The etcd client URL (`http://HOST:PORT`).
    pub etcd: String,
    /// The partition's primary key, `/sluice/CLUSTER/leases/HOST/RUN`.
    pub key: String,
    /// Seconds the lease outlives the holder's last renewal: how long a failed primary can
    /// keep its standby waiting.
    pub ttl_s: i64,
    /// The fence the partition's senders name (the protected host's name).
    pub fence: String,
    /// Whether this replica starts as the primary (it takes the key at load); the standby
    /// campaigns for it once the run starts.
    pub primary: bool,
    /// The standby is warm: it runs its partition only once it won the key.
    pub warm: bool,
}

/// A message from the controller to a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
// One Load per run: its size does not matter, and a flat enum reads (and matches) simply.
#[allow(clippy::large_enum_variant)]
pub enum ToWorker {
    /// Build this partition (validating it, binding its listeners) but do not run it yet.
    Load {
        /// [`VERSION`] of the controller.
        version: u32,
        /// The run's identifier.
        run: String,
        /// Names the partition in messages: the graph file and the host.
        origin: String,
        /// The partition, a graph file.
        partition: String,
        /// The controller's working directory: relative paths in the graph are relative to it.
        cwd: String,
        /// The partition's stream receivers (`tcp_source` blocks fed by other hosts): a Stop
        /// leaves them running, so they end with their senders' streams and nothing sent
        /// before the stop is lost.
        #[serde(default)]
        stream_receivers: Vec<String>,
        /// Set when the partition is one of a primary/standby pair.
        #[serde(default)]
        lease: Option<LeaseSpec>,
    },
    /// Start the loaded partition.
    Go,
    /// Stop gracefully: sources end, the rest drains, sinks finish their files.
    Stop,
}

/// One node's counts in a [`FromWorker::Stats`] or [`FromWorker::Done`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeLine {
    /// The node's name.
    pub name: String,
    /// Items consumed, summed over its inputs.
    pub items_in: u64,
    /// Items produced, summed over its outputs.
    pub items_out: u64,
}

/// A message from a worker to the controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromWorker {
    /// The partition is built and its listeners are bound.
    Loaded,
    /// The request was refused (a bad partition, a busy worker, a protocol error).
    Error {
        /// What was wrong, naming the node or file.
        message: String,
    },
    /// Live counts while the partition runs.
    Stats {
        /// Seconds since Go.
        elapsed_s: f64,
        /// CPU seconds the worker process has used since Go (user + system).
        cpu_s: f64,
        /// Each node's counts.
        nodes: Vec<NodeLine>,
    },
    /// The partition ended (its streams finished, or it was stopped).
    Done {
        /// Wall-clock seconds from Go to the end.
        wall_s: f64,
        /// CPU seconds the worker process used during the run.
        cpu_s: f64,
        /// Whether it ended because it was asked to stop.
        stopped: bool,
        /// Each node's final counts.
        nodes: Vec<NodeLine>,
        /// The per-node statistics table (`sluice run --stats`).
        table: String,
        /// Warnings of the run and of its nodes.
        warnings: Vec<String>,
    },
    /// The partition failed while running.
    Failed {
        /// The error, naming the node.
        message: String,
    },
}

/// Why a message could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The connection failed or closed.
    #[error("{peer}: connection lost: {source}")]
    Io {
        /// The peer's address.
        peer: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The peer closed the connection.
    #[error("{peer}: closed the connection")]
    Closed {
        /// The peer's address.
        peer: String,
    },
    /// The peer sent something that is not a message of this protocol.
    #[error("{peer}: sent a bad control message: {why}")]
    Bad {
        /// The peer's address.
        peer: String,
        /// What was wrong.
        why: String,
    },
}

/// Writes one message as a line.
pub fn send<T: Serialize>(
    out: &mut impl Write,
    message: &T,
    peer: &str,
) -> Result<(), ProtocolError> {
    let mut line = serde_json::to_vec(message).map_err(|e| ProtocolError::Bad {
        peer: peer.to_string(),
        why: e.to_string(),
    })?;
    line.push(b'\n');
    out.write_all(&line)
        .and_then(|_| out.flush())
        .map_err(|source| ProtocolError::Io {
            peer: peer.to_string(),
            source,
        })
}

/// Reads one message (a line of at most [`MAX_LINE`] bytes).
pub fn receive<T: for<'de> Deserialize<'de>, R: BufRead>(
    input: &mut R,
    peer: &str,
) -> Result<T, ProtocolError> {
    let mut line = Vec::new();
    let read = std::io::Read::take(&mut *input, MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut line)
        .map_err(|source| ProtocolError::Io {
            peer: peer.to_string(),
            source,
        })?;
    if read == 0 {
        return Err(ProtocolError::Closed {
            peer: peer.to_string(),
        });
    }
    if line.last() != Some(&b'\n') {
        return Err(ProtocolError::Bad {
            peer: peer.to_string(),
            why: if line.len() > MAX_LINE {
                format!("a line longer than {MAX_LINE} bytes")
            } else {
                "the connection closed in the middle of a message".to_string()
            },
        });
    }
    serde_json::from_slice(&line).map_err(|e| ProtocolError::Bad {
        peer: peer.to_string(),
        why: e.to_string(),
    })
}

/// The `worker_control` fuzz target's driver (and its replay test's): `data` read line by line
/// as a controller's messages to a worker until the first error, then again as a worker's
/// messages to its controller; how many of each decoded. Nothing a peer sends may panic, hang
/// or allocate beyond [`MAX_LINE`] a line.
pub fn fuzz_lines(data: &[u8]) -> (usize, usize) {
    fn count<T: for<'de> Deserialize<'de>>(data: &[u8]) -> usize {
        let mut input = std::io::Cursor::new(data);
        let mut n = 0;
        while receive::<T, _>(&mut input, "fuzz").is_ok() {
            n += 1;
        }
        n
    }
    (count::<ToWorker>(data), count::<FromWorker>(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_lines() {
        let msg = ToWorker::Load {
            version: VERSION,
            run: "r1".into(),
            origin: "g.toml (host a)".into(),
            partition: "[[node]]\nname = \"x\"\n".into(),
            cwd: "/tmp".into(),
            stream_receivers: vec!["x_out_from_b".into()],
            lease: Some(LeaseSpec {
                etcd: "http://10.0.0.254:2379".into(),
                key: "/sluice/c/leases/a/r1".into(),
                ttl_s: 1,
                fence: "a".into(),
                primary: false,
                warm: true,
            }),
        };
        let mut buf = Vec::new();
        send(&mut buf, &msg, "peer").unwrap();
        send(&mut buf, &ToWorker::Go, "peer").unwrap();
        assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 2);
        let mut input = std::io::Cursor::new(buf);
        assert_eq!(receive::<ToWorker, _>(&mut input, "peer").unwrap(), msg);
        assert_eq!(
            receive::<ToWorker, _>(&mut input, "peer").unwrap(),
            ToWorker::Go
        );
        assert!(matches!(
            receive::<ToWorker, _>(&mut input, "peer"),
            Err(ProtocolError::Closed { .. })
        ));
    }

    #[test]
    fn garbage_and_truncation_are_named() {
        let mut input = std::io::Cursor::new(b"{\"type\":\"launch\"}\n".to_vec());
        let err = receive::<ToWorker, _>(&mut input, "10.0.0.9:5").unwrap_err();
        assert!(err
            .to_string()
            .starts_with("10.0.0.9:5: sent a bad control message"));
        let mut input = std::io::Cursor::new(b"{\"type\":\"go\"".to_vec());
        let err = receive::<ToWorker, _>(&mut input, "p").unwrap_err();
        assert!(err.to_string().contains("closed in the middle"), "{err}");
    }
}
