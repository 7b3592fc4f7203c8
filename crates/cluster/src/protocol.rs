//! The control connection between `sluice cluster run` (the controller) and a `sluice worker`:
//! after the cluster-key handshake ([`sluice_net::auth`]), one JSON object per line each way.
//!
//! ```text
//! controller                                worker
//!   Load { version, run, origin, doc, cwd, lease } ->
//!                                        <- Loaded            (or Error: the partition is bad)
//!   Go                                   ->
//!                                        <- Stats { … }       (every stats period while it runs)
//!   Stop (Ctrl-C, or another host failed) ->
//!                                        <- Done { … }        (or Failed { message })
//! ```
//!
//! A worker runs one partition at a time; it stops its graph gracefully if the controller's
//! connection drops, so no run outlives its controller.
//!
//! A worker reads the Load's `version` before the rest of it ([`receive_load`]): a controller
//! of another version is answered with an Error that names both versions, whatever else its
//! Load holds; and a Load carries an empty `partition` text beside its typed document, so that
//! a worker of version 3 (which read the whole message first) can read it and answer so too.

use serde::{Deserialize, Serialize};
use sluice_graph::PartitionDoc;
use std::io::{BufRead, Write};

/// The longest line either side accepts (a partition of the 333-channel AMPS receiver is
/// ~10 KiB; this bounds what a confused peer can make us buffer).
pub const MAX_LINE: usize = 4 << 20;

/// The protocol's version, checked in [`ToWorker::Load`]. Version 2 added the partition
/// lease ([`LeaseSpec`]): a worker of version 1 would ignore it and run a standby as a
/// second primary. Version 3 added warm standbys ([`LeaseSpec::warm`]): a worker of version 2
/// would run a warm standby at once. Version 4 sends the partition as a typed document
/// ([`PartitionDoc`]) instead of a graph file's text, moved the partition leases to
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
        /// The partition: written once here, read once by the worker, which builds its graph
        /// from it.
        doc: PartitionDoc,
        /// Where version 3 sent the partition, as a graph file's text: empty from version 4
        /// on, and not read. Still sent because a worker of version 3 reads the whole message
        /// before it checks the version: with this field there, it can, and answers with its
        /// version refusal instead of dropping the connection.
        #[serde(rename = "partition", default)]
        v3_partition: String,
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

/// A change of primary that one of the worker's fenced receivers saw
/// ([`sluice_net::takeovers`]): the takeover's record, carried live in every
/// [`FromWorker::Stats`] (all of the run's so far, so that a dropped Stats loses none).
/// Times are seconds since the Unix epoch, by the worker's clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TakeoverLine {
    /// The fence of the receiver's senders: the protected host whose partition changed
    /// primary.
    pub fence: String,
    /// The stream offset (items) at which the new primary resumed.
    pub offset: u64,
    /// The old primary's lease revision.
    pub from_revision: u64,
    /// The new primary's lease revision.
    pub to_revision: u64,
    /// When the old primary was declared lost (`None`: displaced while connected).
    #[serde(default)]
    pub lost_unix_s: Option<f64>,
    /// Why it was lost.
    #[serde(default)]
    pub lost_cause: Option<String>,
    /// When the new primary was welcomed.
    pub resumed_unix_s: f64,
    /// When its first item came.
    #[serde(default)]
    pub first_item_unix_s: Option<f64>,
}

/// The longest cause a controller keeps of a [`TakeoverLine`] (a connection error's text is
/// a line; more is a confused or hostile worker's, and would be held per host and sent to
/// every console client).
pub const MAX_CAUSE: usize = 512;

impl TakeoverLine {
    /// Every takeover in the process's journal ([`sluice_net::takeovers`]), for a report.
    pub fn journal() -> Vec<TakeoverLine> {
        sluice_net::takeovers::takeovers()
            .iter()
            .map(TakeoverLine::from)
            .collect()
    }

    /// Cuts the cause to [`MAX_CAUSE`] bytes (on a character's boundary, marked with `…`).
    pub fn bounded(mut self) -> TakeoverLine {
        if let Some(cause) = &mut self.lost_cause {
            if cause.len() > MAX_CAUSE {
                let mut end = MAX_CAUSE;
                while !cause.is_char_boundary(end) {
                    end -= 1;
                }
                cause.truncate(end);
                cause.push('…');
            }
        }
        self
    }
}

/// Seconds since the Unix epoch (0 for a time before it).
pub(crate) fn unix_s(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl From<&sluice_net::takeovers::Takeover> for TakeoverLine {
    fn from(t: &sluice_net::takeovers::Takeover) -> Self {
        TakeoverLine {
            fence: t.fence.clone().unwrap_or_default(),
            offset: t.offset,
            from_revision: t.from_revision,
            to_revision: t.to_revision,
            lost_unix_s: t.lost_at.map(unix_s),
            lost_cause: t.lost_cause.clone(),
            resumed_unix_s: unix_s(t.resumed_at),
            first_item_unix_s: t.first_item_at.map(unix_s),
        }
    }
}

/// A standby won its partition's lease and became the primary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromotionLine {
    /// The fence it now holds (the protected host's name).
    pub fence: String,
    /// Its lease revision (the fencing token its senders carry).
    pub revision: u64,
    /// Milliseconds from the old primary's key vanishing to the win.
    pub after_vanished_ms: u64,
    /// When it won, in seconds since the Unix epoch.
    pub unix_s: f64,
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
        /// Every takeover the partition's fenced receivers saw so far in this run.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        takeovers: Vec<TakeoverLine>,
        /// Set once this replica, a standby, won the partition's lease.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        promoted: Option<PromotionLine>,
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
        /// Every takeover the partition's fenced receivers saw (as in the last Stats, and
        /// any since).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        takeovers: Vec<TakeoverLine>,
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

/// Reads the first message of a control connection, a Load: `Ok(Err(message))` is the
/// refusal to answer with (a controller of another version, a first message that is not a
/// Load, a Load this version cannot read). The version is checked before the rest of the
/// message is read, so that a controller of another version is told which, not how its
/// message failed to parse.
pub fn receive_load<R: BufRead>(
    input: &mut R,
    peer: &str,
) -> Result<Result<ToWorker, String>, ProtocolError> {
    let value: serde_json::Value = receive(input, peer)?;
    let kind = value.get("type").and_then(serde_json::Value::as_str);
    if kind != Some("load") {
        return Ok(Err(format!(
            "expected Load first, got {}",
            kind.map_or("a message without a type".to_string(), |k| format!(
                "'{}'",
                sluice_net::escape::text(k)
            ))
        )));
    }
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => {
            return Ok(Err(format!(
                "controller speaks control protocol {v}, this worker {VERSION} (run the same sluice version on every host)"
            )))
        }
        None => {
            return Ok(Err(format!(
                "a Load without a protocol version; this worker speaks {VERSION} (run the same sluice version on every host)"
            )))
        }
    }
    Ok(serde_json::from_value(value).map_err(|e| {
        format!(
            "a Load of protocol {VERSION} this worker cannot read: {}",
            sluice_net::escape::text(&e.to_string())
        )
    }))
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

    fn doc() -> PartitionDoc {
        let graph = sluice_graph::GraphDoc::from_graph_file(
            "[[node]]\nname = \"x\"\ntype = \"null_source\"\n",
        )
        .unwrap();
        PartitionDoc::new("a", graph)
    }

    fn load() -> ToWorker {
        ToWorker::Load {
            version: VERSION,
            run: "r1".into(),
            origin: "g.toml (host a)".into(),
            doc: doc(),
            v3_partition: String::new(),
            cwd: "/tmp".into(),
            stream_receivers: Vec::new(),
            lease: None,
        }
    }

    #[test]
    fn messages_round_trip_as_lines() {
        let msg = ToWorker::Load {
            version: VERSION,
            run: "r1".into(),
            origin: "g.toml (host a)".into(),
            doc: doc(),
            v3_partition: String::new(),
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

    /// Version 3's Load, as its controllers wrote it and its workers read it.
    #[derive(Debug, Serialize, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum V3ToWorker {
        Load {
            version: u32,
            run: String,
            origin: String,
            partition: String,
            cwd: String,
            #[serde(default)]
            stream_receivers: Vec<String>,
            #[serde(default)]
            lease: Option<LeaseSpec>,
        },
    }

    fn line(message: &impl Serialize) -> std::io::Cursor<Vec<u8>> {
        let mut buf = Vec::new();
        send(&mut buf, message, "peer").unwrap();
        std::io::Cursor::new(buf)
    }

    #[test]
    fn a_load_of_this_version_is_read() {
        let got = receive_load(&mut line(&load()), "peer").unwrap().unwrap();
        assert_eq!(got, load());
    }

    /// Across versions 3 and 4, each side is told the other's version, in words, whichever
    /// is the worker: neither reads the other's partition.
    #[test]
    fn another_version_is_refused_in_words() {
        // A controller of version 3 to this worker.
        let old = V3ToWorker::Load {
            version: 3,
            run: "r1".into(),
            origin: "g.toml".into(),
            partition: "[[node]]\nname = \"x\"\n".into(),
            cwd: "/tmp".into(),
            stream_receivers: Vec::new(),
            lease: None,
        };
        let refusal = receive_load(&mut line(&old), "peer").unwrap().unwrap_err();
        assert_eq!(
            refusal,
            "controller speaks control protocol 3, this worker 4 (run the same sluice version on every host)"
        );
        // This controller to a worker of version 3: it reads the Load (and then refuses it by
        // its version, as version 3's worker does).
        let read: V3ToWorker = receive(&mut line(&load()), "peer").unwrap();
        let V3ToWorker::Load { version, .. } = read;
        assert_eq!(version, VERSION);
        // A later version whose document this version could not read is refused by its number.
        let mut later = serde_json::to_value(load()).unwrap();
        later["version"] = serde_json::json!(5);
        later["doc"] = serde_json::json!({ "shape": "unknown to version 4" });
        let refusal = receive_load(&mut line(&later), "peer")
            .unwrap()
            .unwrap_err();
        assert!(refusal.starts_with("controller speaks control protocol 5, this worker 4"));
    }

    #[test]
    fn a_bad_first_message_is_refused_in_words() {
        let refusal = receive_load(&mut line(&ToWorker::Go), "peer")
            .unwrap()
            .unwrap_err();
        assert_eq!(refusal, "expected Load first, got 'go'");
        let mut bad = serde_json::to_value(load()).unwrap();
        bad["doc"]["graph"]["node"][0]["name"] = serde_json::json!(7);
        let refusal = receive_load(&mut line(&bad), "peer").unwrap().unwrap_err();
        assert!(
            refusal.starts_with("a Load of protocol 4 this worker cannot read: invalid type"),
            "{refusal}"
        );
        let mut input = std::io::Cursor::new(b"[1, 2]\n".to_vec());
        let refusal = receive_load(&mut input, "peer").unwrap().unwrap_err();
        assert_eq!(refusal, "expected Load first, got a message without a type");
    }
}
