//! Placement: a graph file whose nodes name their hosts, split into one graph per host.
//!
//! Every edge between two hosts becomes a sluice-net stream: on the producer's host a
//! `tcp_sink` connects to a `tcp_source` that listens on the consumer's host, on a port the
//! plan assigns. One stream carries an output to each host that consumes it (the fan-out to
//! several consumers on that host happens there), with its tags and stream metadata. Each
//! partition is a typed document ([`PartitionDoc`]): the host's nodes and edges as the file
//! gives them, and its stream endpoints as typed values (URL, direction, fence, warm map, …)
//! that the stream blocks' own crate turns into nodes
//! ([`sluice_net::graph_blocks::endpoint_node`]), so no block type or parameter name of the
//! stream blocks is spelt here. The controller sends the document; a worker loads it exactly as
//! `sluice run` loads a file (every check), and a user reads it as a graph file
//! ([`Partition::text`], `sluice cluster plan`).
//!
//! A host may have a hot standby (`[hosts.b] standby = "s"`): host `s` then runs a copy of
//! `b`'s partition (same node names) on copies of the same input streams, and its senders
//! connect to the same receivers as `b`'s. Those senders follow the fence named after `b`
//! (`fence = "b"`) and the receivers take both (`fenced = true`): only the replica holding
//! `b`'s lease gets its items through. Senders to one of a pair are `replica`s (losing one
//! receiver is not an error), and every stream touching a pair watches its peer closely.
//!
//! A *warm* standby (`standby_mode = "warm"`) runs nothing until it wins `b`'s lease; it then
//! starts a fresh copy of `b`'s partition. That partition must be a chain from one input
//! stream to one output stream of blocks that declare finite memory
//! ([`Memory`](sluice_graph::Memory)); its sender gets the chain's decimation and lag
//! (`warm_decimation`, `warm_lag`), its receiver the fence (`warm`) and the history to keep.
//! The stream into it runs the other way round: its sender listens on the producer's host and
//! the replica that runs connects to it, so upstream keeps what the partition's outputs do not
//! yet reflect and resends it to whichever replica comes.
//!
//! ```
//! # let registry = sluice_blocks::graph_blocks::standard_registry();
//! let text = r#"
//! [hosts.a]
//! address = "10.0.0.1"
//! [hosts.b]
//! address = "10.0.0.2"
//!
//! [[node]]
//! name = "src"
//! type = "signal_source"
//! host = "a"
//! params = { item = "c32" }
//! [[node]]
//! name = "sink"
//! type = "null_sink"
//! host = "b"
//! params = { item = "c32" }
//! [[edge]]
//! from = "src.out"
//! to = "sink.in"
//! "#;
//! let plan = sluice_cluster::placement::plan(text, "g.toml", &registry, &Default::default()).unwrap();
//! assert_eq!(plan.partitions.len(), 2);
//! assert_eq!(plan.streams[0].url_listen(), "tcp-listen://10.0.0.2:7400");
//! assert!(plan.partitions[0].text.contains("tcp_sink"));
//! ```

use sluice_graph::{
    Consumer, EdgeEntry, FileAccess, GraphDoc, GraphFileError, LoadedGraph, Memory, NodeEntry,
    Override, PartitionDoc, PortRef, ReceiveEnd, Registry, SendEnd, StandbyMode, StreamDirection,
    StreamEndpoint, StreamSecurity, StreamTiming, WarmInput, WarmMap,
};
use std::collections::BTreeMap;

/// What [`plan`] needs beyond the graph file.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// The port of the first stream; stream `i` listens on `first_port + i`.
    pub first_port: u16,
    /// Credentials of every stream endpoint (a worker gives its own cluster key to the
    /// endpoints that name none).
    pub stream_security: StreamSecurity,
    /// `--set` overrides applied to the file before it is split.
    pub overrides: Vec<Override>,
    /// Addresses of hosts whose `[hosts.NAME]` table gives none: the addresses their workers
    /// registered.
    pub addresses: BTreeMap<String, String>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            first_port: 7400,
            stream_security: StreamSecurity::default(),
            overrides: Vec::new(),
            addresses: BTreeMap::new(),
        }
    }
}

/// Why a graph could not be placed.
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// The file itself is wrong (it names the file, line and node).
    #[error(transparent)]
    File(#[from] GraphFileError),
    /// The file is a valid graph but cannot be split as asked.
    #[error("{origin}: {message}")]
    Split {
        /// The graph file.
        origin: String,
        /// What is wrong, naming the node, edge or host.
        message: String,
    },
}

/// The graph one host runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// The host's name in the file (`[hosts.NAME]`).
    pub host: String,
    /// Its address.
    pub address: String,
    /// The nodes of the file placed on it, in file order.
    pub nodes: Vec<String>,
    /// The partition as the controller sends it: its nodes and edges, and an endpoint per
    /// stream to or from another host.
    pub doc: PartitionDoc,
    /// The same partition as a graph file, for people to read (`sluice cluster plan`): its
    /// endpoints as the stream blocks they become.
    pub text: String,
    /// The host that runs a hot copy of this partition (`[hosts.NAME] standby = "…"`).
    pub standby: Option<String>,
    /// Set on a standby's partition: the host whose partition this is a copy of. Its nodes
    /// have the same names; only the primary's outputs are used until the primary fails.
    pub standby_of: Option<String>,
    /// The pair's standby is warm: it starts its copy only when it wins the lease.
    pub warm: bool,
}

impl Partition {
    /// The host that owns the partition's lease and names its fence: the host itself, or the
    /// host it stands by for.
    pub fn protected_host(&self) -> &str {
        self.standby_of.as_deref().unwrap_or(&self.host)
    }

    /// Whether this partition is one of a primary/standby pair.
    pub fn is_replicated(&self) -> bool {
        self.standby.is_some() || self.standby_of.is_some()
    }
}

/// One stream between hosts: an output port sent to one host that consumes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    /// The producing node and its output port.
    pub from: (String, String),
    /// The producer's host. When it has a standby, the standby runs the same sender (same
    /// name, same URL) and the two are fenced: only the lease holder's items get through.
    pub from_host: String,
    /// The consuming host (a standby host gets its own copy of what its primary consumes).
    pub to_host: String,
    /// The consuming host's address.
    pub to_address: String,
    /// The producing host's address.
    pub from_address: String,
    /// The consumer is a partition with a warm standby: the sender listens on the producer's
    /// address and the replica that runs connects to it.
    pub into_warm: bool,
    /// The consumers on that host (input port, and the capacity its edge gives).
    pub to: Vec<Consumer>,
    /// The item type as sluice-net names it (`c32`, `f32`, `i16`, `u8`).
    pub item: String,
    /// Items per vector on the port (1 for a plain stream).
    pub vlen: usize,
    /// The TCP port the consumer's side listens on.
    pub port: u16,
    /// The sending block's name in the producer's partition.
    pub sender: String,
    /// The receiving block's name in the consumer's partition.
    pub receiver: String,
}

impl Stream {
    /// The receiving block's URL (it listens on the consumer's address).
    pub fn url_listen(&self) -> String {
        format!("tcp-listen://{}:{}", self.to_address, self.port)
    }

    /// The sending block's URL.
    pub fn url_connect(&self) -> String {
        format!("tcp://{}:{}", self.to_address, self.port)
    }

    /// The sending block's URL: it connects to the receiver, or listens where the consumer
    /// has a warm standby.
    pub fn sender_url(&self) -> String {
        if self.into_warm {
            format!("tcp-listen://{}:{}", self.from_address, self.port)
        } else {
            self.url_connect()
        }
    }

    /// The receiving block's URL: it listens, or connects where its host has a warm standby.
    pub fn receiver_url(&self) -> String {
        if self.into_warm {
            format!("tcp://{}:{}", self.from_address, self.port)
        } else {
            self.url_listen()
        }
    }

    /// `src.out -> b` for messages.
    pub fn describe(&self) -> String {
        format!(
            "{}.{} (host {}) -> host {}",
            self.from.0, self.from.1, self.from_host, self.to_host
        )
    }
}

/// A graph split over its hosts.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Where the graph came from.
    pub origin: String,
    /// One partition per declared host that has nodes, and one per standby host (a copy of
    /// its primary's), in host-name order.
    pub partitions: Vec<Partition>,
    /// The streams between hosts, in the order of their ports.
    pub streams: Vec<Stream>,
}

impl Plan {
    /// The partition of host `name`.
    pub fn partition(&self, name: &str) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.host == name)
    }

    /// The hot standby pairs: (primary host, standby host), in host-name order.
    pub fn standbys(&self) -> Vec<(String, String)> {
        self.partitions
            .iter()
            .filter_map(|p| p.standby.clone().map(|s| (p.host.clone(), s)))
            .collect()
    }
}

/// Stream parameters on every stream touching a replicated partition: a silent peer is
/// noticed within half a second (heartbeat + peer timeout), so a failover starts quickly.
const REPLICA_HEARTBEAT_S: f64 = 0.1;
/// See [`REPLICA_HEARTBEAT_S`].
const REPLICA_PEER_TIMEOUT_S: f64 = 0.4;
/// How long a receiver in one of a primary/standby pair waits for a lost sender: not long,
/// because its sender (a `replica` sink) gave it up at once; the replica then fails and its
/// partner goes on (a primary thus releases its lease within a second of losing its input).
const REPLICA_RESUME_TIMEOUT_S: f64 = 0.5;
/// How long the sender into a partition with a warm standby waits for a replica after it lost
/// one: the lease's expiry, the campaign and the fresh partition's start, with room to spare.
const WARM_RESUME_TIMEOUT_S: f64 = 10.0;

/// Item types a sluice-net stream carries.
const STREAMABLE: &[&str] = &["c32", "f32", "i16", "u8"];

/// Validates the whole graph (as `sluice run --check` would, files included) and splits it over
/// its hosts. `origin` names the file in errors.
pub fn plan(
    text: &str,
    origin: &str,
    registry: &Registry,
    options: &PlanOptions,
) -> Result<Plan, PlacementError> {
    let split_err = |message: String| PlacementError::Split {
        origin: origin.to_string(),
        message,
    };
    let loaded: LoadedGraph = sluice_graph::load_with(text, origin, registry, &options.overrides)?;
    let source = &loaded.source;
    if source.hosts.is_empty() {
        return Err(split_err(
            "the graph declares no hosts: add [hosts.NAME] tables with an address, and host = \"NAME\" on every node (or run it on one machine with `sluice run`)".into(),
        ));
    }
    // The file's nodes and edges, to copy into the partitions as written (with the command
    // line's overrides applied).
    let mut doc = GraphDoc::from_graph_file(text).map_err(split_err)?;
    for o in &options.overrides {
        if let Some(node) = doc.nodes.iter_mut().find(|n| n.name == o.node) {
            node.params.insert(o.param.clone(), o.value.clone());
        }
    }
    // Every edge the loader connected, `connect` chains included, with its ports named (a
    // chain may leave a single port implicit) and the capacity its `[[edge]]` table gives.
    let edges: Vec<EdgeEntry> = source
        .edges
        .iter()
        .map(|(a, ap, b, bp)| {
            let (from, to) = (format!("{a}.{ap}"), format!("{b}.{bp}"));
            let capacity = doc
                .edges
                .iter()
                .find(|e| e.from == from && e.to == to)
                .and_then(|e| e.capacity);
            EdgeEntry { from, to, capacity }
        })
        .collect();
    let nodes = &doc.nodes;
    let mut addresses = BTreeMap::new();
    for (host, decl) in &source.hosts {
        let address = decl
            .address
            .clone()
            .or_else(|| options.addresses.get(host).cloned())
            .ok_or_else(|| {
                split_err(format!(
                    "host {host} (line {}) has no address: the file gives none and no worker named {host} is known (name the cluster whose workers to ask: --cluster NAME)",
                    decl.line
                ))
            })?;
        addresses.insert(host.clone(), address);
    }
    let host_of = |node: &str| source.node_hosts.get(node).cloned().unwrap_or_default();
    // Protected host → its standby (the loader has checked the pairs).
    let standby: BTreeMap<String, String> = source
        .hosts
        .iter()
        .filter_map(|(h, d)| d.standby.clone().map(|s| (h.clone(), s)))
        .collect();
    let standby_of: BTreeMap<String, String> = standby
        .iter()
        .map(|(h, s)| (s.clone(), h.clone()))
        .collect();
    let warm: Vec<String> = source
        .hosts
        .iter()
        .filter(|(_, d)| d.standby.is_some() && d.standby_mode == StandbyMode::Warm)
        .map(|(h, _)| h.clone())
        .collect();
    // Both replicas would write the same file (on a shared filesystem, over each other).
    for node in nodes {
        let (name, kind) = (node.name.as_str(), node.kind.as_str());
        let host = host_of(name);
        let Some(s) = standby.get(&host) else {
            continue;
        };
        let writes = registry.find(kind).and_then(|b| {
            b.files()
                .find(|(_, access)| matches!(access, FileAccess::Write | FileAccess::WritePattern))
        });
        if let Some((param, _)) = writes {
            return Err(split_err(format!(
                "node '{name}' ({kind}) writes a file (parameter {}) on host {host}, whose partition has the standby {s}: both replicas would write it; place file sinks on a host without a standby",
                param
            )));
        }
    }
    let taken: Vec<String> = source.node_lines.keys().cloned().collect();
    let unique = |base: String, used: &mut Vec<String>| {
        let mut name = base.clone();
        let mut i = 2;
        while used.contains(&name) {
            name = format!("{base}_{i}");
            i += 1;
        }
        used.push(name.clone());
        name
    };
    let mut used = taken.clone();

    // Streams: one per (output port, consuming host).
    let mut streams: Vec<Stream> = Vec::new();
    // Per partition: the edges between its own nodes (those that cross become streams).
    let mut host_edges: BTreeMap<String, Vec<EdgeEntry>> = BTreeMap::new();
    for edge in &edges {
        let (from, to) = (edge.from.as_str(), edge.to.as_str());
        let (Some((a, ap)), Some((b, bp))) = (from.rsplit_once('.'), to.rsplit_once('.')) else {
            continue; // the loader has refused these already
        };
        let (ha, hb) = (host_of(a), host_of(b));
        if ha == hb {
            host_edges.entry(ha).or_default().push(edge.clone());
            continue;
        }
        let existing = streams
            .iter()
            .position(|s| s.from == (a.to_string(), ap.to_string()) && s.to_host == hb);
        let index = match existing {
            Some(i) => i,
            None => {
                let port_spec = loaded
                    .graph
                    .node_id(a)
                    .and_then(|id| loaded.graph.ports(id))
                    .and_then(|p| p.output_index(ap).map(|i| p.outputs[i].clone()))
                    .ok_or_else(|| split_err(format!("edge {from} -> {to}: no port {from}")))?;
                let item = port_spec.item.name().to_string();
                if !STREAMABLE.contains(&item.as_str()) {
                    return Err(split_err(format!(
                        "edge {from} -> {to} crosses from host {ha} to host {hb} carrying {item} items, which sluice-net streams do not carry (they carry {}): place both nodes on one host",
                        STREAMABLE.join(", ")
                    )));
                }
                let port = u32::from(options.first_port) + streams.len() as u32;
                let port = u16::try_from(port).map_err(|_| {
                    split_err(format!(
                        "too many streams for ports from {}: stream {} would need port {port}",
                        options.first_port,
                        streams.len()
                    ))
                })?;
                let sender = unique(format!("{a}_{ap}_to_{hb}"), &mut used);
                let receiver = unique(format!("{a}_{ap}_from_{ha}"), &mut used);
                streams.push(Stream {
                    from: (a.to_string(), ap.to_string()),
                    from_host: ha.clone(),
                    to_host: hb.clone(),
                    to_address: addresses[&hb].clone(),
                    from_address: addresses[&ha].clone(),
                    into_warm: warm.contains(&hb),
                    to: Vec::new(),
                    item,
                    vlen: port_spec.vlen,
                    port,
                    sender,
                    receiver,
                });
                streams.len() - 1
            }
        };
        streams[index].to.push(Consumer {
            input: PortRef::new(b, bp),
            capacity: edge.capacity,
        });
    }

    // A standby consumes what its primary consumes: each stream into a protected host is
    // sent to its standby too, by the same producers (and their standbys), under the same
    // receiver name, so the standby's copy of the primary's edges applies unchanged.
    for i in 0..streams.len() {
        let Some(s) = standby.get(&streams[i].to_host) else {
            continue;
        };
        if streams[i].into_warm {
            // A warm standby connects to the same sender when it runs.
            continue;
        }
        let port = u32::from(options.first_port) + streams.len() as u32;
        let port = u16::try_from(port).map_err(|_| {
            split_err(format!(
                "too many streams for ports from {}: stream {} would need port {port}",
                options.first_port,
                streams.len()
            ))
        })?;
        let (a, ap) = streams[i].from.clone();
        let copy = Stream {
            to_host: s.clone(),
            to_address: addresses[s].clone(),
            port,
            sender: unique(format!("{a}_{ap}_to_{s}"), &mut used),
            ..streams[i].clone()
        };
        streams.push(copy);
    }

    let mut warm_maps = BTreeMap::new();
    for host in &warm {
        let map = warm_chain(host, &standby[host], nodes, &host_edges, &streams, &loaded)
            .map_err(split_err)?;
        warm_maps.insert(host.clone(), map);
    }

    let mut partitions = Vec::new();
    for (host, address) in &addresses {
        // A standby runs its primary's nodes, edges and senders.
        let runs = standby_of.get(host).unwrap_or(host);
        let mine: Vec<NodeEntry> = nodes
            .iter()
            .filter(|n| host_of(&n.name) == *runs)
            .map(|n| NodeEntry {
                host: None,
                ..n.clone()
            })
            .collect();
        if mine.is_empty() {
            continue;
        }
        let pair = Pair {
            standby: &standby,
            standby_of: &standby_of,
            warm: &warm_maps,
        };
        let mut endpoints: Vec<StreamEndpoint> = streams
            .iter()
            .filter(|s| s.from_host == *runs)
            .map(|s| pair.endpoint(s, true, options))
            .collect();
        // A warm standby has its primary's receivers (they connect to the same senders).
        let receives = if warm_maps.contains_key(runs) {
            runs
        } else {
            host
        };
        endpoints.extend(
            streams
                .iter()
                .filter(|s| s.to_host == *receives)
                .map(|s| pair.endpoint(s, false, options)),
        );
        let part = PartitionDoc {
            host: host.clone(),
            graph: GraphDoc {
                options: doc.options.clone(),
                nodes: mine,
                edges: host_edges.get(runs).cloned().unwrap_or_default(),
            },
            streams: endpoints,
        };
        if let Some(why) = part.unsendable() {
            return Err(split_err(format!("host {host}'s partition: {why}")));
        }
        let body = sluice_net::graph_blocks::partition_graph(&part).to_toml();
        let mode = if warm_maps.contains_key(runs) {
            "Warm"
        } else {
            "Hot"
        };
        let role = match (standby.get(host), standby_of.get(host)) {
            (Some(s), _) => format!(" {mode} standby: host {s}."),
            (_, Some(p)) => format!(" {mode} standby of host {p}: a copy of its partition."),
            _ => String::new(),
        };
        partitions.push(Partition {
            host: host.clone(),
            address: address.clone(),
            nodes: part.graph.nodes.iter().map(|n| n.name.clone()).collect(),
            doc: part,
            text: format!(
                "# Partition of {origin} for host {host} ({address}), written by sluice cluster.{role}\n{body}"
            ),
            standby: standby.get(host).cloned(),
            standby_of: standby_of.get(host).cloned(),
            warm: warm_maps.contains_key(runs),
        });
    }
    Ok(Plan {
        origin: origin.to_string(),
        partitions,
        streams,
    })
}

/// The primary/standby pairs, for the parameters of the streams that touch them.
struct Pair<'a> {
    standby: &'a BTreeMap<String, String>,
    standby_of: &'a BTreeMap<String, String>,
    /// Hosts with a warm standby: their partition's chain (decimation, lag).
    warm: &'a BTreeMap<String, (u64, u64)>,
}

impl Pair<'_> {
    /// The endpoint of stream `s` at its sending (`sender`) or receiving end, with what it
    /// does because a replicated partition is at one of its ends: senders of a protected
    /// partition follow its fence and their receivers accept both replicas (`fenced`); senders
    /// to one of a hot pair may lose it (`replica`); the stream into a warm partition waits
    /// for whichever replica runs and keeps what its outputs do not reflect yet; every such
    /// stream watches its peer closely.
    fn endpoint(&self, s: &Stream, sender: bool, options: &PlanOptions) -> StreamEndpoint {
        let from_protected = self.standby.contains_key(&s.from_host);
        let to_pair =
            self.standby.contains_key(&s.to_host) || self.standby_of.contains_key(&s.to_host);
        let replicated = from_protected || to_pair;
        let into_warm = s
            .into_warm
            .then(|| self.warm.get(&s.to_host))
            .flatten()
            .copied();
        let mut timing = StreamTiming::default();
        if replicated {
            timing.heartbeat_s = Some(REPLICA_HEARTBEAT_S);
            timing.peer_timeout_s = Some(REPLICA_PEER_TIMEOUT_S);
        }
        let direction = if sender {
            // A worker runs one partition at a time: the protected host's name is unique there.
            let fence = from_protected.then(|| s.from_host.clone());
            let warm = self
                .warm
                .get(&s.from_host)
                .filter(|_| from_protected)
                .map(|&(decimation, lag)| WarmMap { decimation, lag });
            if into_warm.is_some() {
                timing.resume_timeout_s = Some(WARM_RESUME_TIMEOUT_S);
            }
            StreamDirection::Send(SendEnd {
                from: PortRef::new(&s.from.0, &s.from.1),
                fence,
                replica: to_pair && into_warm.is_none(),
                warm,
            })
        } else {
            if to_pair && into_warm.is_none() {
                timing.resume_timeout_s = Some(REPLICA_RESUME_TIMEOUT_S);
            }
            StreamDirection::Receive(ReceiveEnd {
                to: s.to.clone(),
                fenced: from_protected && into_warm.is_none(),
                // The receiver's worker reads this fence's lease back before a raised
                // revision displaces the primary (see `crate::lease_check`).
                fenced_by: (from_protected && into_warm.is_none()).then(|| s.from_host.clone()),
                warm: into_warm.map(|(decimation, lag)| WarmInput {
                    fence: s.to_host.clone(),
                    history: lag * decimation,
                }),
            })
        };
        StreamEndpoint {
            name: if sender { &s.sender } else { &s.receiver }.clone(),
            direction,
            url: if sender {
                s.sender_url()
            } else {
                s.receiver_url()
            },
            item: s.item.clone(),
            vlen: s.vlen,
            timing,
            security: options.stream_security.clone(),
        }
    }
}

/// Checks that the partition of `host` (with the warm standby `standby`) is a chain of blocks
/// of finite memory from one input stream to one output stream, and returns the chain's
/// decimation and lag (see [`sluice_graph::chain_memory`]).
fn warm_chain(
    host: &str,
    standby: &str,
    nodes: &[NodeEntry],
    host_edges: &BTreeMap<String, Vec<EdgeEntry>>,
    streams: &[Stream],
    loaded: &LoadedGraph,
) -> Result<(u64, u64), String> {
    let source = &loaded.source;
    let why = format!("host {host} has a warm standby ({standby})");
    let mine: Vec<&str> = nodes
        .iter()
        .map(|n| n.name.as_str())
        .filter(|n| source.node_hosts.get(*n).map(String::as_str) == Some(host))
        .collect();
    for name in &mine {
        let kind = source.node_types.get(*name).map_or("?", String::as_str);
        match source.node_memory.get(*name) {
            Some(Memory::Finite { .. }) => {}
            Some(Memory::Infinite) => {
                return Err(format!(
                    "node '{name}' ({kind}) on line {}: {why}, which starts the partition afresh from resent input, but with these parameters its output depends on the whole past or on block boundaries counted from the stream's start (it declares infinite memory; an FIR by FFT does, method = \"direct\" does not): use standby_mode = \"hot\", or place it on another host",
                    source.node_lines.get(*name).copied().unwrap_or(0)
                ))
            }
            None => {
                return Err(format!(
                    "node '{name}' ({kind}) on line {}: {why}, which starts the partition afresh from resent input, but block type {kind} declares no bound on its memory: use standby_mode = \"hot\", or place it on another host",
                    source.node_lines.get(*name).copied().unwrap_or(0)
                ))
            }
        }
    }
    let inputs: Vec<&Stream> = streams.iter().filter(|s| s.to_host == host).collect();
    let outputs: Vec<&Stream> = streams.iter().filter(|s| s.from_host == host).collect();
    let (input, output) = match (inputs.as_slice(), outputs.as_slice()) {
        ([i], [o]) if i.to.len() == 1 => (*i, *o),
        _ => {
            return Err(format!(
                "{why}: its partition must be a chain from one input stream (to one node) to one output stream, but it has {} input and {} output streams",
                inputs.len(),
                outputs.len()
            ))
        }
    };
    for (s, role) in [(input, "input"), (output, "output")] {
        if s.vlen > 1 {
            return Err(format!(
                "{why}: its {role} stream {} carries vectors of {} items; a warm partition's streams carry plain items",
                s.describe(),
                s.vlen
            ));
        }
    }
    if source
        .hosts
        .get(&input.from_host)
        .is_some_and(|d| d.standby.is_some())
    {
        return Err(format!(
            "{why}: its input comes from host {}, which has a standby too; a warm partition's producer must not be replicated",
            input.from_host
        ));
    }
    let to_pair = |h: &str| {
        source.hosts.get(h).is_some_and(|d| d.standby.is_some())
            || source
                .hosts
                .values()
                .any(|d| d.standby.as_deref() == Some(h))
    };
    if to_pair(&output.to_host) {
        return Err(format!(
            "{why}: its output goes to host {}, which is one of a primary/standby pair too; a warm partition's consumer must not be replicated",
            output.to_host
        ));
    }
    // Follow the edges inside the partition from the input's consumer to the output's
    // producer: each node feeds exactly the next.
    let edges = host_edges.get(host).map_or(&[][..], Vec::as_slice);
    let mut chain = vec![input.to[0].input.node.clone()];
    loop {
        let at = chain.last().expect("starts with one");
        let next: Vec<String> = edges
            .iter()
            .filter(|e| e.from_node() == at)
            .map(|e| e.to_node().to_string())
            .filter(|t| mine.contains(&t.as_str()))
            .collect();
        let feeds_output = *at == output.from.0;
        match (next.as_slice(), feeds_output) {
            ([], true) => break,
            ([n], false) if !chain.contains(n) => chain.push(n.clone()),
            _ => {
                return Err(format!(
                    "{why}: its partition must be a chain (each node feeding the next, the last one the output stream), but node '{at}' feeds {}",
                    if next.is_empty() { "nothing".to_string() } else { next.join(", ") }
                ))
            }
        }
    }
    if chain.len() != mine.len() {
        let off: Vec<&str> = mine
            .iter()
            .copied()
            .filter(|n| !chain.iter().any(|c| c == n))
            .collect();
        return Err(format!(
            "{why}: its partition must be one chain from the input stream to the output stream, but {} not on it",
            off.join(", ")
        ));
    }
    let memory: Vec<Memory> = chain.iter().map(|n| source.node_memory[n]).collect();
    sluice_graph::chain_memory(&memory)
        .ok_or_else(|| format!("{why}: a node of its chain keeps infinite memory"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toml::{Table, Value};

    fn str_of<'a>(table: &'a Table, key: &str) -> &'a str {
        table.get(key).and_then(Value::as_str).unwrap_or("")
    }

    fn registry() -> Registry {
        sluice_blocks::graph_blocks::standard_registry()
    }

    /// a: source → (b: filter, standby s) → (c: sink, standby `c_standby` when given).
    fn graph(c_standby: Option<&str>, b_sink: &str) -> String {
        let c = match c_standby {
            Some(t) => format!("[hosts.c]\naddress = \"10.0.0.3\"\nstandby = \"{t}\"\n[hosts.{t}]\naddress = \"10.0.0.5\"\n"),
            None => "[hosts.c]\naddress = \"10.0.0.3\"\n".to_string(),
        };
        format!(
            r#"[hosts.a]
address = "10.0.0.1"
[hosts.b]
address = "10.0.0.2"
standby = "s"
[hosts.s]
address = "10.0.0.4"
{c}
[[node]]
name = "src"
type = "signal_source"
host = "a"
params = {{ item = "c32" }}
[[node]]
name = "lowpass"
type = "fir"
host = "b"
params = {{ item = "c32", design = "lowpass", num_taps = 15, cutoff = 0.1 }}
{b_sink}
[[node]]
name = "sink"
type = "null_sink"
host = "c"
params = {{ item = "c32" }}
[[edge]]
from = "src.out"
to = "lowpass.in"
[[edge]]
from = "lowpass.out"
to = "sink.in"
"#
        )
    }

    fn split(text: &str) -> Result<Plan, PlacementError> {
        plan(text, "g.toml", &registry(), &PlanOptions::default())
    }

    /// The params of node `name` in `host`'s partition.
    fn params(plan: &Plan, host: &str, name: &str) -> Table {
        let part = plan.partition(host).expect("partition");
        let doc: Table = toml::from_str(&part.text).expect("partition is TOML");
        let node = doc["node"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_table)
            .find(|n| str_of(n, "name") == name)
            .unwrap_or_else(|| panic!("no node {name} on {host}:\n{}", part.text));
        node["params"].as_table().unwrap().clone()
    }

    #[test]
    fn a_standby_runs_a_copy_on_copies_of_its_inputs() {
        let plan = split(&graph(None, "")).unwrap();
        let hosts: Vec<&str> = plan.partitions.iter().map(|p| p.host.as_str()).collect();
        assert_eq!(hosts, ["a", "b", "c", "s"]);
        assert_eq!(plan.standbys(), [("b".to_string(), "s".to_string())]);
        let (b, s) = (plan.partition("b").unwrap(), plan.partition("s").unwrap());
        assert_eq!(
            (b.standby.as_deref(), b.standby_of.as_deref()),
            (Some("s"), None)
        );
        assert_eq!(
            (s.standby.as_deref(), s.standby_of.as_deref()),
            (None, Some("b"))
        );
        assert_eq!(s.nodes, b.nodes);
        assert_eq!(s.protected_host(), "b");
        assert!(plan.partition("a").unwrap().standby.is_none());

        // a→b, b→c, and the copy a→s; b's and s's senders share b→c.
        let routes: Vec<(&str, &str, u16)> = plan
            .streams
            .iter()
            .map(|s| (s.from_host.as_str(), s.to_host.as_str(), s.port))
            .collect();
        assert_eq!(
            routes,
            [("a", "b", 7400), ("b", "c", 7401), ("a", "s", 7402)]
        );
        let (to_b, to_c, to_s) = (&plan.streams[0], &plan.streams[1], &plan.streams[2]);
        assert_eq!(
            to_s.receiver, to_b.receiver,
            "s's copy of b's edges applies"
        );
        assert_ne!(to_s.sender, to_b.sender);

        // a sends to both of the pair: replicas (whose receivers wait little for them).
        for sender in [&to_b.sender, &to_s.sender] {
            let p = params(&plan, "a", sender);
            assert_eq!(p["replica"], Value::Boolean(true));
            assert!(!p.contains_key("resume_timeout"));
            assert_eq!(p["heartbeat"], Value::Float(0.1));
            assert_eq!(p["peer_timeout"], Value::Float(0.4));
            assert!(!p.contains_key("fence"));
        }
        // b and s both send to c's one receiver, fenced by b's lease.
        for host in ["b", "s"] {
            let p = params(&plan, host, &to_c.sender);
            assert_eq!(p["fence"], Value::String("b".into()));
            assert_eq!(p["url"], Value::String("tcp://10.0.0.3:7401".into()));
            assert!(!p.contains_key("replica"), "c is not a pair");
            let r = params(&plan, host, &to_b.receiver);
            assert!(!r.contains_key("fenced"), "a is not a pair");
            assert_eq!(r["peer_timeout"], Value::Float(0.4));
            assert_eq!(r["resume_timeout"], Value::Float(0.5));
        }
        assert_eq!(
            params(&plan, "s", &to_b.receiver)["url"],
            Value::String("tcp-listen://10.0.0.4:7402".into())
        );
        let r = params(&plan, "c", &to_c.receiver);
        assert_eq!(r["fenced"], Value::Boolean(true));
        assert_eq!(r["fenced_by"], Value::String("b".into()));
        assert_eq!(r["heartbeat"], Value::Float(0.1));
        // The standby's partition has b's edges.
        let edges = |h: &str| {
            toml::from_str::<Table>(&plan.partition(h).unwrap().text).unwrap()["edge"].clone()
        };
        assert_eq!(edges("s"), edges("b"));
        assert!(s.text.contains("Hot standby of host b"), "{}", s.text);
    }

    #[test]
    fn a_pair_sends_to_a_pair() {
        let plan = split(&graph(Some("t"), "")).unwrap();
        assert_eq!(
            plan.standbys(),
            [
                ("b".to_string(), "s".to_string()),
                ("c".to_string(), "t".to_string())
            ]
        );
        let routes: Vec<(&str, &str)> = plan
            .streams
            .iter()
            .map(|s| (s.from_host.as_str(), s.to_host.as_str()))
            .collect();
        assert_eq!(routes, [("a", "b"), ("b", "c"), ("a", "s"), ("b", "t")]);
        let to_t = &plan.streams[3];
        // b and s both send to t as well, fenced, as replicas.
        for host in ["b", "s"] {
            let p = params(&plan, host, &to_t.sender);
            assert_eq!(p["fence"], Value::String("b".into()));
            assert_eq!(p["replica"], Value::Boolean(true));
            assert_eq!(p["url"], Value::String("tcp://10.0.0.5:7403".into()));
            let p = params(&plan, host, &plan.streams[1].sender);
            assert_eq!(p["replica"], Value::Boolean(true));
        }
        assert_eq!(
            params(&plan, "t", &to_t.receiver)["fenced"],
            Value::Boolean(true)
        );
        assert_eq!(plan.partition("t").unwrap().nodes, ["sink"]);
    }

    #[test]
    fn hosts_without_standbys_keep_plain_streams() {
        let text = graph(None, "").replace("standby = \"s\"\n", "");
        let plan = split(&text).unwrap();
        assert!(plan.standbys().is_empty());
        assert_eq!(plan.streams.len(), 2);
        let p = params(&plan, "b", &plan.streams[1].sender);
        assert!(!p.contains_key("heartbeat") && !p.contains_key("fence"));
    }

    #[test]
    fn file_writers_on_a_protected_host_are_refused() {
        let sink = "[[node]]\nname = \"save\"\ntype = \"file_sink\"\nhost = \"b\"\nparams = { path = \"/tmp/x.c32\" }\n[[edge]]\nfrom = \"lowpass.out\"\nto = \"save.in\"\n";
        let err = split(&graph(None, sink)).unwrap_err().to_string();
        assert!(
            err.contains("node 'save' (file_sink) writes a file"),
            "{err}"
        );
        assert!(err.contains("host b") && err.contains("standby s"), "{err}");
        assert!(
            err.contains("place file sinks on a host without a standby"),
            "{err}"
        );
    }

    fn warm(text: &str) -> String {
        text.replace(
            "standby = \"s\"\n",
            "standby = \"s\"\nstandby_mode = \"warm\"\n",
        )
    }

    #[test]
    fn a_warm_standby_connects_to_its_primarys_listening_sender() {
        let plan = split(&warm(&graph(None, ""))).unwrap();
        // No copy of the input for s: a→b (its sender listens on a), b→c.
        let routes: Vec<(&str, &str, bool)> = plan
            .streams
            .iter()
            .map(|s| (s.from_host.as_str(), s.to_host.as_str(), s.into_warm))
            .collect();
        assert_eq!(routes, [("a", "b", true), ("b", "c", false)]);
        let (to_b, to_c) = (&plan.streams[0], &plan.streams[1]);
        let tx = params(&plan, "a", &to_b.sender);
        assert_eq!(
            tx["url"],
            Value::String("tcp-listen://10.0.0.1:7400".into())
        );
        assert_eq!(tx["resume_timeout"], Value::Float(WARM_RESUME_TIMEOUT_S));
        assert!(!tx.contains_key("replica"));
        // FIR of 15 taps: decimation 1, lag 14.
        for host in ["b", "s"] {
            let part = plan.partition(host).unwrap();
            assert!(part.warm, "{host}");
            let rx = params(&plan, host, &to_b.receiver);
            assert_eq!(rx["url"], Value::String("tcp://10.0.0.1:7400".into()));
            assert_eq!(rx["warm"], Value::String("b".into()));
            assert_eq!(rx["history"], Value::Integer(14));
            let tx = params(&plan, host, &to_c.sender);
            assert_eq!(tx["fence"], Value::String("b".into()));
            assert_eq!(tx["warm_decimation"], Value::Integer(1));
            assert_eq!(tx["warm_lag"], Value::Integer(14));
        }
        assert!(plan
            .partition("s")
            .unwrap()
            .text
            .contains("Warm standby of host b"));
        assert_eq!(
            params(&plan, "c", &to_c.receiver)["fenced"],
            Value::Boolean(true)
        );
    }

    /// The partition is sent as a typed document: its stream endpoints carry what the stream
    /// blocks need as typed fields, it survives the wire as it is, and the text is its reading.
    #[test]
    fn the_partition_is_a_typed_document() {
        let plan = split(&warm(&graph(None, ""))).unwrap();
        let s = plan.partition("s").unwrap();
        assert_eq!(s.doc.host, "s");
        let names: Vec<&str> = s.doc.graph.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["lowpass"]);
        assert!(s.doc.graph.nodes.iter().all(|n| n.host.is_none()));
        assert!(s.doc.graph.edges.is_empty(), "{:?}", s.doc.graph.edges);
        let [tx, rx] = &s.doc.streams[..] else {
            panic!("{:?}", s.doc.streams)
        };
        assert_eq!(
            tx.direction,
            StreamDirection::Send(SendEnd {
                from: PortRef::new("lowpass", "out"),
                fence: Some("b".into()),
                replica: false,
                warm: Some(WarmMap {
                    decimation: 1,
                    lag: 14
                }),
            })
        );
        assert_eq!(
            rx.direction,
            StreamDirection::Receive(ReceiveEnd {
                to: vec![Consumer {
                    input: PortRef::new("lowpass", "in"),
                    capacity: None
                }],
                fenced: false,
                fenced_by: None,
                warm: Some(WarmInput {
                    fence: "b".into(),
                    history: 14
                }),
            })
        );
        assert_eq!(rx.url, "tcp://10.0.0.1:7400");
        assert_eq!(rx.timing.heartbeat_s, Some(REPLICA_HEARTBEAT_S));
        assert_eq!(s.doc.receivers().collect::<Vec<_>>(), [rx.name.as_str()]);
        for p in &plan.partitions {
            let json = serde_json::to_string(&p.doc).unwrap();
            let back: PartitionDoc = serde_json::from_str(&json).unwrap();
            assert_eq!(back, p.doc);
            let graph = sluice_net::graph_blocks::partition_graph(&p.doc).to_toml();
            assert!(p.text.ends_with(&graph), "{}", p.text);
        }
    }

    #[test]
    fn a_warm_partition_must_be_a_chain_of_finite_memory() {
        let iir = "[[node]]\nname = \"smooth\"\ntype = \"iir\"\nhost = \"b\"\nparams = { item = \"c32\", design = \"lowpass\", order = 2, cutoff = 0.1 }\n";
        let text = warm(&graph(None, iir))
            .replace("from = \"lowpass.out\"\nto = \"sink.in\"", "from = \"lowpass.out\"\nto = \"smooth.in\"\n[[edge]]\nfrom = \"smooth.out\"\nto = \"sink.in\"");
        let err = split(&text).unwrap_err().to_string();
        assert!(
            err.contains("node 'smooth' (iir) on line")
                && err.contains("host b has a warm standby (s)")
                && err.contains("infinite memory")
                && err.contains("standby_mode = \"hot\""),
            "{err}"
        );
        // A node whose block declares nothing (a null sink) on a branch.
        let branch = "[[node]]\nname = \"twice\"\ntype = \"fir\"\nhost = \"b\"\nparams = { item = \"c32\", taps = [1.0] }\n[[edge]]\nfrom = \"lowpass.out\"\nto = \"twice.in\"\n[[node]]\nname = \"drop\"\ntype = \"null_sink\"\nhost = \"b\"\nparams = { item = \"c32\" }\n[[edge]]\nfrom = \"twice.out\"\nto = \"drop.in\"\n";
        let err = split(&warm(&graph(None, branch))).unwrap_err().to_string();
        assert!(err.contains("host b has a warm standby (s)"), "{err}");
        assert!(
            err.contains("node 'drop' (null_sink)") && err.contains("declares no bound"),
            "{err}"
        );
        // Two outputs: not a chain.
        let two = "[[node]]\nname = \"sink2\"\ntype = \"null_sink\"\nhost = \"c\"\nparams = { item = \"c32\" }\n[[edge]]\nfrom = \"src.out\"\nto = \"lowpass2.in\"\n[[node]]\nname = \"lowpass2\"\ntype = \"fir\"\nhost = \"b\"\nparams = { item = \"c32\", taps = [1.0] }\n[[edge]]\nfrom = \"lowpass2.out\"\nto = \"sink2.in\"\n";
        let err = split(&warm(&graph(None, two))).unwrap_err().to_string();
        assert!(
            err.contains("must be a chain from one input stream")
                && err.contains("2 output streams"),
            "{err}"
        );
    }

    /// `connect` chains split as `[[edge]]` tables do: the chain's edges inside a host stay in
    /// its partition (ports named), and a chain that crosses hosts becomes a stream.
    #[test]
    fn connect_chains_are_split_like_edge_tables() {
        let text = r#"connect = ["src -> gain -> sink"]
[hosts.a]
address = "10.0.0.1"
[hosts.b]
address = "10.0.0.2"
[[node]]
name = "src"
type = "signal_source"
host = "a"
params = { item = "f32" }
[[node]]
name = "gain"
type = "multiply_const"
host = "a"
params = { item = "f32", gain = 2.0 }
[[node]]
name = "sink"
type = "null_sink"
host = "b"
params = { item = "f32" }
"#;
        let plan = split(text).unwrap();
        let routes: Vec<(&str, &str, &str)> = plan
            .streams
            .iter()
            .map(|s| (s.from.0.as_str(), s.from_host.as_str(), s.to_host.as_str()))
            .collect();
        assert_eq!(routes, [("gain", "a", "b")]);
        let a = &plan.partition("a").unwrap().doc.graph;
        let inside: Vec<(&str, &str)> = a
            .edges
            .iter()
            .map(|e| (e.from.as_str(), e.to.as_str()))
            .collect();
        assert_eq!(inside, [("src.out", "gain.in")]);
    }
}
