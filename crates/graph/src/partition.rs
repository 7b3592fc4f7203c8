//! One host's share of a graph that runs over several machines, as a typed value: the nodes
//! and edges placed on the host ([`GraphDoc`]) and its ends of the streams to and from other
//! hosts ([`StreamEndpoint`]), each with what the stream needs (URL, item type, direction, the
//! fence it follows, the warm standby's map, timings, credentials) as typed fields.
//!
//! A cluster's controller makes one per host (`sluice_cluster::placement`) and sends it to the
//! host's worker; the worker checks it (refused block types, files confined beneath its data
//! root: `sluice_cluster::{refuse, confine}`), turns its stream endpoints into stream blocks
//! (`sluice_net::graph_blocks::partition_graph`, where those blocks and their parameter names
//! are declared) and loads the result with [`load_doc`](crate::load_doc): the partition is
//! never written out as text and parsed again on the way.
//!
//! **Serialized as JSON.** The controller and its workers speak JSON lines
//! (`sluice_cluster::protocol`): the document is a field of the Load message, written once by
//! the controller with the message and read once by the worker with it. As TOML it would have
//! to ride inside a JSON string, a second grammar parsed on the worker's input, and a second
//! parse to keep in step with the first. JSON has no infinities, NaN or dates, which a TOML
//! parameter can hold: [`PartitionDoc::unsendable`] names such a value so the controller
//! refuses the graph before sending it, instead of the worker failing to read it.
//! `sluice cluster plan` shows the same document as a graph file (its endpoints as the
//! `tcp_sink` and `tcp_source` nodes they become), for people to read.

use crate::doc::{GraphDoc, NodeEntry};
use serde::{Deserialize, Serialize};
use toml::Value;

/// The graph one host runs: its own nodes and edges, and its stream endpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionDoc {
    /// The host's name in the graph file (`[hosts.NAME]`).
    pub host: String,
    /// The nodes placed on the host (without their `host`) and the edges between them.
    pub graph: GraphDoc,
    /// The host's ends of streams to and from other hosts: senders first, then receivers.
    #[serde(default)]
    pub streams: Vec<StreamEndpoint>,
}

/// One end of a stream between hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamEndpoint {
    /// The stream block's node name in the partition (unique there).
    pub name: String,
    /// Which way the items go, and what this end does for a primary/standby pair.
    pub direction: StreamDirection,
    /// `tcp://HOST:PORT` to connect, `tcp-listen://HOST:PORT` to listen.
    pub url: String,
    /// The item type as a stream carries it (`c32`, `f32`, `i16`, `u8`).
    pub item: String,
    /// Items per vector (1 for a plain stream).
    pub vlen: usize,
    /// How closely it watches its peer; `None` fields keep the block's defaults.
    #[serde(default)]
    pub timing: StreamTiming,
    /// Its credentials; `None` fields keep the block's defaults (a worker gives its own key).
    #[serde(default)]
    pub security: StreamSecurity,
}

/// Which way a stream goes at an endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StreamDirection {
    /// This host sends an output of one of its nodes.
    Send(SendEnd),
    /// This host receives the stream for some of its nodes' inputs.
    Receive(ReceiveEnd),
}

/// A sending endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendEnd {
    /// The output it sends.
    pub from: PortRef,
    /// The fence it follows (the protected host's name) when its partition has a standby:
    /// only the replica holding the partition's lease gets its items through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<String>,
    /// Its receiver is one replica of a pair: losing it is not an error.
    #[serde(default)]
    pub replica: bool,
    /// Set on the output of a partition with a warm standby: how its items map to the input's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<WarmMap>,
}

/// A receiving endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiveEnd {
    /// The inputs it feeds (one stream may feed several nodes on the host).
    pub to: Vec<Consumer>,
    /// It accepts the fenced senders of a primary/standby pair.
    #[serde(default)]
    pub fenced: bool,
    /// With `fenced`: the fence its senders name, so that a raised lease revision is
    /// confirmed (by the worker's revision check, in etcd) before the primary is displaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fenced_by: Option<String>,
    /// Set on the input of a partition with a warm standby.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<WarmInput>,
}

/// A warm partition's chain: input items per output item, and the outputs after which a fresh
/// start is exact again (see [`chain_memory`](crate::chain_memory)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarmMap {
    /// Input items per output item.
    pub decimation: u64,
    /// Outputs after which a fresh start is exact.
    pub lag: u64,
}

/// The input of a partition with a warm standby.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarmInput {
    /// The partition's fence (the protected host's name).
    pub fence: String,
    /// Items before the resume offset the chain needs to prime its state.
    pub history: u64,
}

/// An input a receiving endpoint feeds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Consumer {
    /// The input.
    pub input: PortRef,
    /// The capacity (items) of the queue into it, if the graph's edge set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u64>,
}

/// A node's port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortRef {
    /// The node's name.
    pub node: String,
    /// The port's name.
    pub port: String,
}

impl PortRef {
    /// Port `port` of node `node`.
    pub fn new(node: impl Into<String>, port: impl Into<String>) -> Self {
        PortRef {
            node: node.into(),
            port: port.into(),
        }
    }
}

impl std::fmt::Display for PortRef {
    /// `node.port`, as an edge names it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.node, self.port)
    }
}

/// How closely a stream watches its peer, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamTiming {
    /// Silence after which a heartbeat goes out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_s: Option<f64>,
    /// Silence from the peer after which it is declared lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_timeout_s: Option<f64>,
    /// How long to wait for a new connection after a loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_timeout_s: Option<f64>,
}

/// A stream's credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSecurity {
    /// The cluster key's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<String>,
    /// This end's key pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_file: Option<String>,
    /// The peers this end accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peers_file: Option<String>,
    /// Encrypt, or plaintext.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SecurityMode>,
}

/// Whether a stream is encrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecurityMode {
    /// Every byte encrypted and authenticated (the default).
    Encrypt,
    /// Every byte authenticated, sent readable.
    Authenticate,
    /// Plaintext: anyone may connect.
    Plaintext,
}

impl StreamEndpoint {
    /// Whether it receives.
    pub fn is_receiver(&self) -> bool {
        matches!(self.direction, StreamDirection::Receive(_))
    }
}

impl PartitionDoc {
    /// A partition of `graph` alone, for host `host`: no streams.
    pub fn new(host: impl Into<String>, graph: GraphDoc) -> Self {
        PartitionDoc {
            host: host.into(),
            graph,
            streams: Vec::new(),
        }
    }

    /// The names of its receiving endpoints.
    pub fn receivers(&self) -> impl Iterator<Item = &str> {
        self.streams
            .iter()
            .filter(|s| s.is_receiver())
            .map(|s| s.name.as_str())
    }

    /// A parameter value JSON cannot carry (an infinity, NaN or a date), named, or `None`
    /// when the document can be sent as it is.
    pub fn unsendable(&self) -> Option<String> {
        fn bad(v: &Value) -> Option<String> {
            match v {
                Value::Float(f) if !f.is_finite() => Some(f.to_string()),
                Value::Datetime(d) => Some(d.to_string()),
                Value::Array(items) => items.iter().find_map(bad),
                Value::Table(t) => t.values().find_map(bad),
                _ => None,
            }
        }
        let numbers = |t: &crate::partition::StreamTiming| {
            [t.heartbeat_s, t.peer_timeout_s, t.resume_timeout_s]
                .into_iter()
                .flatten()
                .find(|f| !f.is_finite())
        };
        self.graph
            .nodes
            .iter()
            .find_map(|n: &NodeEntry| {
                n.params.iter().find_map(|(param, v)| {
                    bad(v).map(|what| {
                        format!(
                            "node '{}' parameter {param} = {what}: a cluster's partitions cannot carry infinities, NaN or dates",
                            n.name
                        )
                    })
                })
            })
            .or_else(|| {
                self.streams.iter().find_map(|s| {
                    numbers(&s.timing).map(|f| {
                        format!("stream '{}': a timing of {f} seconds", s.name)
                    })
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::EdgeEntry;

    fn doc() -> PartitionDoc {
        let text = "[[node]]\nname = \"src\"\ntype = \"signal_source\"\nparams = { item = \"f32\", tags = { 0 = { gain = 2.5 } } }\n[[edge]]\nfrom = \"src.out\"\nto = \"sink.in\"\ncapacity = 64\n";
        let mut doc = PartitionDoc::new("a", GraphDoc::from_graph_file(text).unwrap());
        doc.streams.push(StreamEndpoint {
            name: "src_out_to_b".into(),
            direction: StreamDirection::Send(SendEnd {
                from: PortRef::new("src", "out"),
                fence: Some("a".into()),
                replica: false,
                warm: Some(WarmMap {
                    decimation: 2,
                    lag: 3,
                }),
            }),
            url: "tcp://10.0.0.2:7400".into(),
            item: "f32".into(),
            vlen: 1,
            timing: StreamTiming {
                heartbeat_s: Some(0.1),
                ..StreamTiming::default()
            },
            security: StreamSecurity::default(),
        });
        doc
    }

    #[test]
    fn a_partition_survives_json_as_it_is() {
        let doc = doc();
        assert_eq!(
            doc.graph.edges,
            [EdgeEntry {
                capacity: Some(64),
                ..EdgeEntry::new("src.out", "sink.in")
            }]
        );
        let json = serde_json::to_string(&doc).unwrap();
        assert_eq!(serde_json::from_str::<PartitionDoc>(&json).unwrap(), doc);
        assert_eq!(doc.unsendable(), None);
        // A field this version does not know is an error, not ignored.
        let more = json.replacen("\"host\":\"a\"", "\"host\":\"a\",\"run_as\":\"root\"", 1);
        let err = serde_json::from_str::<PartitionDoc>(&more).unwrap_err();
        assert!(err.to_string().contains("unknown field `run_as`"), "{err}");
    }

    #[test]
    fn values_json_cannot_carry_are_named() {
        let mut doc = doc();
        let tags = doc.graph.nodes[0].params.get_mut("tags").unwrap();
        tags.as_table_mut().unwrap()["0"]
            .as_table_mut()
            .unwrap()
            .insert("gain".into(), Value::Float(f64::INFINITY));
        assert_eq!(
            doc.unsendable().unwrap(),
            "node 'src' parameter tags = inf: a cluster's partitions cannot carry infinities, NaN or dates"
        );
        let mut doc = self::doc();
        doc.streams[0].timing.peer_timeout_s = Some(f64::NAN);
        assert_eq!(
            doc.unsendable().unwrap(),
            "stream 'src_out_to_b': a timing of NaN seconds"
        );
    }
}
