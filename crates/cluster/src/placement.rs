//! Placement: a graph file whose nodes name their hosts, split into one graph per host.
//!
//! Every edge between two hosts becomes a sluice-net stream: on the producer's host a
//! `tcp_sink` connects to a `tcp_source` that listens on the consumer's host, on a port the
//! plan assigns. One stream carries an output to each host that consumes it (the fan-out to
//! several consumers on that host happens there), with its tags and stream metadata. The
//! partitions are graph files themselves, so a worker loads one exactly as `sluice run` loads a
//! file, and a user can read what runs where (`sluice cluster plan`).
//!
//! ```
//! # let registry = sluice_dsp::graph_blocks::standard_registry();
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

use sluice_graph::{GraphFileError, LoadedGraph, Override, Registry};
use std::collections::BTreeMap;
use toml::{Table, Value};

/// What [`plan`] needs beyond the graph file.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// The port of the first stream; stream `i` listens on `first_port + i`.
    pub first_port: u16,
    /// Parameters added to every stream block (`tcp_sink` and `tcp_source`), e.g. the cluster
    /// key's file or a shorter `resume_timeout`.
    pub stream_params: Table,
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
            stream_params: Table::new(),
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
    /// The partition as a graph file: its nodes and edges, plus a stream block per edge that
    /// crosses to or from another host.
    pub text: String,
}

/// One stream between hosts: an output port sent to one host that consumes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    /// The producing node and its output port.
    pub from: (String, String),
    /// The producer's host.
    pub from_host: String,
    /// The consuming host.
    pub to_host: String,
    /// The consuming host's address.
    pub to_address: String,
    /// The consumers on that host (node, input port).
    pub to: Vec<(String, String)>,
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
    /// One partition per declared host that has nodes, in host-name order.
    pub partitions: Vec<Partition>,
    /// The streams between hosts, in the order of their ports.
    pub streams: Vec<Stream>,
}

impl Plan {
    /// The partition of host `name`.
    pub fn partition(&self, name: &str) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.host == name)
    }
}

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
    // The file as TOML, to copy nodes and edges into the partitions as written (with the
    // command line's overrides applied).
    let mut doc: Table = toml::from_str(text).map_err(|e| split_err(e.to_string()))?;
    let mut nodes: Vec<Table> = array_of_tables(&mut doc, "node");
    let edges: Vec<Table> = array_of_tables(&mut doc, "edge");
    for o in &options.overrides {
        if let Some(node) = nodes.iter_mut().find(|n| str_of(n, "name") == o.node) {
            let params = node
                .entry("params")
                .or_insert_with(|| Value::Table(Table::new()));
            if let Value::Table(params) = params {
                params.insert(o.param.clone(), o.value.clone());
            }
        }
    }
    let mut addresses = BTreeMap::new();
    for (host, decl) in &source.hosts {
        let address = decl
            .address
            .clone()
            .or_else(|| options.addresses.get(host).cloned())
            .ok_or_else(|| {
                split_err(format!(
                    "host {host} (line {}) has no address: the file gives none and no worker named {host} is known",
                    decl.line
                ))
            })?;
        addresses.insert(host.clone(), address);
    }
    let host_of = |node: &str| source.node_hosts.get(node).cloned().unwrap_or_default();
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
    // Per partition: the edges to copy, rewritten where they cross.
    let mut host_edges: BTreeMap<String, Vec<Table>> = BTreeMap::new();
    for edge in &edges {
        let (from, to) = (str_of(edge, "from"), str_of(edge, "to"));
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
                    to: Vec::new(),
                    item,
                    vlen: port_spec.vlen,
                    port,
                    sender: sender.clone(),
                    receiver,
                });
                let mut out_edge = Table::new();
                out_edge.insert("from".into(), Value::String(from.to_string()));
                out_edge.insert("to".into(), Value::String(format!("{sender}.in")));
                host_edges.entry(ha.clone()).or_default().push(out_edge);
                streams.len() - 1
            }
        };
        let stream = &mut streams[index];
        stream.to.push((b.to_string(), bp.to_string()));
        let mut in_edge = edge.clone();
        in_edge.insert(
            "from".into(),
            Value::String(format!("{}.out", stream.receiver)),
        );
        host_edges.entry(hb).or_default().push(in_edge);
    }

    let mut partitions = Vec::new();
    for (host, address) in &addresses {
        let mine: Vec<Table> = nodes
            .iter()
            .filter(|n| host_of(str_of(n, "name")) == *host)
            .cloned()
            .map(|mut n| {
                n.remove("host");
                n
            })
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut part_nodes: Vec<Value> = mine.iter().cloned().map(Value::Table).collect();
        for s in streams.iter().filter(|s| s.from_host == *host) {
            part_nodes.push(stream_node(
                &s.sender,
                "tcp_sink",
                &s.url_connect(),
                s,
                options,
            ));
        }
        for s in streams.iter().filter(|s| s.to_host == *host) {
            part_nodes.push(stream_node(
                &s.receiver,
                "tcp_source",
                &s.url_listen(),
                s,
                options,
            ));
        }
        let mut part = Table::new();
        if let Some(opts) = doc.get("options") {
            part.insert("options".into(), opts.clone());
        }
        part.insert("node".into(), Value::Array(part_nodes));
        let part_edges = host_edges.remove(host).unwrap_or_default();
        if !part_edges.is_empty() {
            part.insert(
                "edge".into(),
                Value::Array(part_edges.into_iter().map(Value::Table).collect()),
            );
        }
        let body = toml::to_string(&part).map_err(|e| split_err(e.to_string()))?;
        partitions.push(Partition {
            host: host.clone(),
            address: address.clone(),
            nodes: mine.iter().map(|n| str_of(n, "name").to_string()).collect(),
            text: format!(
                "# Partition of {origin} for host {host} ({address}), written by sluice cluster.\n{body}"
            ),
        });
    }
    Ok(Plan {
        origin: origin.to_string(),
        partitions,
        streams,
    })
}

fn stream_node(name: &str, kind: &str, url: &str, s: &Stream, options: &PlanOptions) -> Value {
    let mut params = options.stream_params.clone();
    params.insert("url".into(), Value::String(url.to_string()));
    params.insert("item".into(), Value::String(s.item.clone()));
    if s.vlen > 1 {
        params.insert("vlen".into(), Value::Integer(s.vlen as i64));
    }
    let mut node = Table::new();
    node.insert("name".into(), Value::String(name.to_string()));
    node.insert("type".into(), Value::String(kind.to_string()));
    node.insert("params".into(), Value::Table(params));
    Value::Table(node)
}

fn array_of_tables(doc: &mut Table, key: &str) -> Vec<Table> {
    match doc.remove(key) {
        Some(Value::Array(items)) => items
            .into_iter()
            .filter_map(|v| match v {
                Value::Table(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn str_of<'a>(table: &'a Table, key: &str) -> &'a str {
    table.get(key).and_then(Value::as_str).unwrap_or("")
}
