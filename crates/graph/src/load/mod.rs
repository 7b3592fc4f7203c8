//! Graph files: TOML that names nodes (type and parameters) and the edges between their ports.
//!
//! ```toml
//! [options]                 # optional
//! queue_bytes = 262144      # default queue size per edge
//! flavor = "mirrored"       # or "copying"
//!
//! [[node]]
//! name = "src"
//! type = "signal_source"
//! params = { item = "c32", frequency = 1000.0 }
//!
//! [[node]]
//! name = "sink"
//! type = "null_sink"
//!
//! [[edge]]
//! from = "src.out"
//! to = "sink.in"
//! capacity = 8192           # optional, items
//! ```
//!
//! Every error names the file, line and column, and the node and port it concerns. Loading
//! validates everything (block types, parameters, files, connections, unconnected ports,
//! cycles are found when the graph is built) before any output file is opened: sinks write
//! beside their destination and rename at the end, so a refused graph changes nothing.

use crate::params::{ParamError, Params};
use crate::registry::Registry;

use serde::Deserialize;
use sluice_runtime::{Flavor, Graph, QueueOptions, RuntimeError};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use toml::{Spanned, Value};

mod checks;
mod edges;
mod hosts;
mod node;
mod rates;

pub use checks::same_file;
use checks::{check_cycles, check_file_collisions, check_unconnected};
use edges::{connect, EdgeDoc, EdgeSpec};
use hosts::{check_placement, HostDoc};
pub use hosts::{HostDecl, StandbyMode};
pub use node::{build_node, MistakeKind, NodeMistake};
use rates::Checked;
pub use rates::{follow_rates, CodeEdge, CodeNode, KnownRate};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    #[serde(default)]
    sluice: Option<Spanned<i64>>,
    #[serde(default)]
    options: Option<OptionsDoc>,
    #[serde(default)]
    node: Vec<Spanned<NodeDoc>>,
    #[serde(default)]
    edge: Vec<Spanned<EdgeDoc>>,
    /// The short form of edges: `connect = ["src -> lp -> snk"]`.
    #[serde(default)]
    connect: Vec<Spanned<String>>,
    #[serde(default)]
    hosts: BTreeMap<String, Spanned<HostDoc>>,
    /// A branch file's inputs fed by the running graph it is attached to.
    #[serde(default)]
    feed: Vec<Spanned<FeedDoc>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedDoc {
    from: Spanned<String>,
    to: Spanned<String>,
}

/// One input of a branch fed by an output of the running graph it is attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feed {
    /// The running graph's output, `node.port`.
    pub from: String,
    /// The branch's input, `node.port`.
    pub to: String,
}

/// A branch file: a graph whose `[[feed]]` tables connect some of its inputs to outputs of a
/// running graph (see `sluice_runtime::live`).
pub struct BranchFile {
    /// The branch, its fed inputs left open.
    pub graph: Graph,
    /// Which inputs the running graph feeds, and from where.
    pub feeds: Vec<Feed>,
}

/// Loads a branch file: a graph file with `[[feed]]` tables
/// (`from = "NODE.PORT"` of the running graph, `to = "NODE.PORT"` of this file) in place of
/// edges into the inputs the running graph feeds. Checked as a graph file is, the fed inputs
/// counting as connected; whether each feed's item types agree is checked when it is attached.
pub fn load_branch(
    text: &str,
    origin: &str,
    registry: &Registry,
) -> Result<BranchFile, GraphFileError> {
    let (loaded, feeds) = load_any(text, origin, registry, &[], true)?;
    Ok(BranchFile {
        graph: loaded.graph,
        feeds,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionsDoc {
    queue_bytes: Option<Spanned<u64>>,
    flavor: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeDoc {
    name: Spanned<String>,
    #[serde(rename = "type")]
    kind: Spanned<String>,
    #[serde(default)]
    params: BTreeMap<String, Spanned<Value>>,
    #[serde(default)]
    host: Option<Spanned<String>>,
}

/// A graph file that could not be loaded. Displays as one line per mistake,
/// `FILE:LINE:COLUMN: message`, the message naming the node, port or parameter concerned: the
/// first mistake here, the others found in the same file in [`GraphFileError::more`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}{}", location(.origin, *.line, *.column), .message, more_lines(.more))]
pub struct GraphFileError {
    /// Where the text came from (a path, or a description such as "built-in default graph").
    pub origin: String,
    /// 1-based line, when the error has a place in the file.
    pub line: Option<usize>,
    /// 1-based column (in characters) on that line.
    pub column: Option<usize>,
    /// The node concerned, if any.
    pub node: Option<String>,
    /// What is wrong.
    pub message: String,
    /// The other mistakes found in the same file (at most [`MAX_ERRORS`] in all).
    pub more: Box<[GraphFileError]>,
}

/// The most mistakes one load reports.
pub const MAX_ERRORS: usize = 20;

/// The graph-file format this sluice reads: a file may say which it was written for
/// (`sluice = 1`), and a newer one is refused with a clear error rather than misread.
pub const FORMAT_VERSION: i64 = 1;

fn more_lines(more: &[GraphFileError]) -> String {
    more.iter().map(|e| format!("\n{e}")).collect()
}

fn location(origin: &str, line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("{origin}:{l}:{c}: "),
        (Some(l), None) => format!("{origin}:{l}: "),
        _ => format!("{origin}: "),
    }
}

/// 1-based line and column (in characters) of byte offset `at` in `text`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// A parameter given on the command line (`--set node.param=value`), replacing or adding to the
/// file's.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The node's name.
    pub node: String,
    /// The parameter's name.
    pub param: String,
    /// Its value, parsed as a TOML value (`440`, `"c32"`, `[1, 2]`); a bare word is a string.
    pub value: Value,
}

impl std::str::FromStr for Override {
    type Err = String;

    /// Parses `node.param=value`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (target, value) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}' must be node.param=value"))?;
        let (node, param) = target
            .trim()
            .split_once('.')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty())
            .ok_or_else(|| format!("'{target}' must name a node and a parameter as node.param"))?;
        let value = value.trim();
        let parsed = toml::from_str::<BTreeMap<String, Value>>(&format!("v = {value}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| Value::String(value.to_string()));
        Ok(Override {
            node: node.to_string(),
            param: param.to_string(),
            value: parsed,
        })
    }
}

/// A loaded graph, and what the file said about it.
pub struct LoadedGraph {
    /// The graph, ready to run.
    pub graph: Graph,
    /// Where each node was declared, its type, and the edges as written.
    pub source: GraphSource,
}

/// What a graph file said: for run-time errors that name a node's line, and for drawings.
#[derive(Debug, Clone)]
pub struct GraphSource {
    /// Where the text came from.
    pub origin: String,
    /// Each node's `[[node]]` line (0 for a graph loaded from a typed value, which has none).
    pub node_lines: BTreeMap<String, usize>,
    /// Each node's type name.
    pub node_types: BTreeMap<String, String>,
    /// The edges as written: (from node, from port, to node, to port).
    pub edges: Vec<(String, String, String, String)>,
    /// The hosts the file declares (`[hosts.NAME] address = "…"`), by name; empty for a graph
    /// that runs on one machine.
    pub hosts: BTreeMap<String, HostDecl>,
    /// Each node's host (`host = "…"`), when the file declares hosts.
    pub node_hosts: BTreeMap<String, String>,
    /// What each node remembers of its input ([`Memory`](crate::Memory)), for the nodes whose
    /// block type declares it.
    pub node_memory: BTreeMap<String, crate::Memory>,
    /// Each node's output rate, where it is known before the graph runs.
    pub rates: BTreeMap<String, KnownRate>,
}

impl GraphSource {
    /// `origin:line: ` for node `name` (just `origin: ` for a name the file does not declare).
    pub fn locate_node(&self, name: &str) -> String {
        match self.node_lines.get(name) {
            Some(line) if *line > 0 => format!("{}:{line}: ", self.origin),
            _ => format!("{}: ", self.origin),
        }
    }

    /// `origin:line: ` for the node a run-time error names (empty if it names none).
    pub fn locate(&self, err: &RuntimeError) -> String {
        let node = match err {
            RuntimeError::NodeFailed { node, .. }
            | RuntimeError::NodePanicked { node, .. }
            | RuntimeError::Spawn { node, .. } => node,
            _ => return format!("{}: ", self.origin),
        };
        self.locate_node(node)
    }
}

impl LoadedGraph {
    /// The graph in Graphviz DOT: one box per node (name and type), one arrow per edge labelled
    /// with its ports, item type and rate.
    pub fn to_dot(&self) -> String {
        let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        let mut out = String::from("digraph sluice {\n    rankdir=LR;\n    node [shape=box];\n");
        for (name, kind) in &self.source.node_types {
            out.push_str(&format!(
                "    \"{}\" [label=\"{}\\n{}\"];\n",
                quote(name),
                quote(name),
                quote(kind)
            ));
        }
        for (a, ap, b, bp) in &self.source.edges {
            let item = self
                .graph
                .node_id(a)
                .and_then(|id| self.graph.ports(id))
                .and_then(|p| p.output_index(ap).map(|i| p.outputs[i].item.name()))
                .unwrap_or("?");
            let rate = match self.source.rates.get(a) {
                Some(r) => crate::decl::rate::describe(r.hz),
                None => "rate known when it runs".into(),
            };
            out.push_str(&format!(
                "    \"{}\" -> \"{}\" [label=\"{} → {}\\n{}, {}\"];\n",
                quote(a),
                quote(b),
                quote(ap),
                quote(bp),
                item,
                rate
            ));
        }
        out.push_str("}\n");
        out
    }
}

/// Loads a graph file from `text` (read from `origin`, used in messages).
pub fn load_str(text: &str, origin: &str, registry: &Registry) -> Result<Graph, GraphFileError> {
    load_with(text, origin, registry, &[]).map(|g| g.graph)
}

/// Reads and loads the graph file at `path`.
pub fn load_file(path: &Path, registry: &Registry) -> Result<Graph, GraphFileError> {
    let text = read(path)?;
    load_str(&text, &path.display().to_string(), registry)
}

/// Reads a graph file, with an error naming it.
pub fn read(path: &Path) -> Result<String, GraphFileError> {
    std::fs::read_to_string(path).map_err(|e| GraphFileError {
        origin: path.display().to_string(),
        line: None,
        column: None,
        node: None,
        message: format!("cannot read the graph file: {e}"),
        more: Box::default(),
    })
}

/// Loads a graph file with command-line overrides, keeping where each node was declared. Every
/// mistake found is reported (up to [`MAX_ERRORS`]), not just the first.
pub fn load_with(
    text: &str,
    origin: &str,
    registry: &Registry,
    overrides: &[Override],
) -> Result<LoadedGraph, GraphFileError> {
    load_any(text, origin, registry, overrides, false).map(|(loaded, _)| loaded)
}

/// Loads a graph given as a typed value ([`GraphDoc`](crate::GraphDoc)) with every check a
/// graph file gets; `origin` names it in errors, which have no line (there is no text).
pub fn load_doc(
    doc: &crate::GraphDoc,
    origin: &str,
    registry: &Registry,
) -> Result<LoadedGraph, GraphFileError> {
    let at = || 0..0;
    let file = FileDoc {
        sluice: None,
        options: doc.options.as_ref().map(|o| OptionsDoc {
            queue_bytes: o.queue_bytes.map(|b| Spanned::new(at(), b)),
            flavor: o.flavor.clone().map(|f| Spanned::new(at(), f)),
        }),
        node: doc
            .nodes
            .iter()
            .map(|n| {
                Spanned::new(
                    at(),
                    NodeDoc {
                        name: Spanned::new(at(), n.name.clone()),
                        kind: Spanned::new(at(), n.kind.clone()),
                        params: n
                            .params
                            .iter()
                            .map(|(k, v)| (k.clone(), Spanned::new(at(), v.clone())))
                            .collect(),
                        host: n.host.clone().map(|h| Spanned::new(at(), h)),
                    },
                )
            })
            .collect(),
        edge: doc
            .edges
            .iter()
            .map(|e| Spanned::new(at(), EdgeDoc::new(&e.from, &e.to, e.capacity)))
            .collect(),
        connect: Vec::new(),
        hosts: BTreeMap::new(),
        feed: Vec::new(),
    };
    let errors = Errors {
        text: None,
        origin,
        list: Vec::new(),
    };
    load_parsed(file, errors, registry, &[]).map(|(loaded, _)| loaded)
}

/// A graph file, or with `branch` a branch file (whose `[[feed]]` tables are returned).
fn load_any(
    text: &str,
    origin: &str,
    registry: &Registry,
    overrides: &[Override],
    branch: bool,
) -> Result<(LoadedGraph, Vec<Feed>), GraphFileError> {
    let mut errors = Errors {
        text: Some(text),
        origin,
        list: Vec::new(),
    };
    let doc: FileDoc = match toml::from_str(text) {
        Ok(doc) => doc,
        Err(e) => {
            // One line: the parser's "expected …" continuation joins the message.
            let mut msg = e.message().trim_end().replace('\n', "; ");
            if let Some(node) = e.span().and_then(|span| enclosing_node(text, span.start)) {
                msg = format!("node '{node}': {msg}");
                if msg.ends_with("number too large to fit in target type") {
                    msg.push_str(" (a whole number in a graph file is at most 2^63 − 1)");
                }
            }
            if msg.contains("unknown field `connect`") {
                msg.push_str(": write `connect` before the first [[node]] table (in TOML, a key after a table belongs to that table)");
            }
            errors.add(e.span(), None, msg);
            return Err(errors.finish());
        }
    };
    if let Some(version) = &doc.sluice {
        if !(1..=FORMAT_VERSION).contains(version.get_ref()) {
            errors.add(
                Some(version.span()),
                None,
                format!(
                    "the file is written for graph format {}, and this sluice reads format 1 to {FORMAT_VERSION}{}",
                    version.get_ref(),
                    if *version.get_ref() > FORMAT_VERSION { ": install a newer sluice" } else { "" }
                ),
            );
            return Err(errors.finish());
        }
    }
    if let (false, Some(feed)) = (branch, doc.feed.first()) {
        errors.add(
            Some(feed.span()),
            None,
            "a [[feed]] belongs in a branch file, attached to a running graph (`sluice ctl SOCKET attach NAME FILE`); a graph file connects its nodes with [[edge]]".to_string(),
        );
        return Err(errors.finish());
    }
    load_parsed(doc, errors, registry, overrides)
}

/// Loads a parsed graph: `errors` has the text it was parsed from, if any (for lines).
fn load_parsed(
    doc: FileDoc,
    mut errors: Errors<'_>,
    registry: &Registry,
    overrides: &[Override],
) -> Result<(LoadedGraph, Vec<Feed>), GraphFileError> {
    let (text, origin) = (errors.text, errors.origin);
    let mut graph = Graph::new();
    if let Some(opts) = &doc.options {
        if let Some(bytes) = &opts.queue_bytes {
            graph.set_default_queue_bytes(*bytes.get_ref() as usize);
        }
        if let Some(flavor) = &opts.flavor {
            match flavor.get_ref().as_str() {
                "mirrored" | "copying" => graph.set_queue_options(QueueOptions {
                    flavor: if flavor.get_ref() == "mirrored" {
                        Flavor::Mirrored
                    } else {
                        Flavor::Copying
                    },
                    ..QueueOptions::default()
                }),
                other => errors.add(
                    Some(flavor.span()),
                    None,
                    format!("options: unknown queue flavor '{other}' (use mirrored or copying)"),
                ),
            }
        }
    }
    if doc.node.is_empty() {
        errors.add(None, None, "the graph has no [[node]] entries".to_string());
        return Err(errors.finish());
    }
    let mut nodes: Vec<Spanned<NodeDoc>> = doc.node;
    if let Err(m) = apply_overrides(&mut nodes, overrides) {
        errors.add(None, None, m);
        return Err(errors.finish());
    }
    // Edges are read before nodes are built: rates follow them.
    let mut specs: Vec<EdgeSpec> = Vec::new();
    let mut spec_errors = Vec::new();
    for edge in doc.edge {
        match edge.into_inner().spec() {
            Ok(spec) => specs.push(spec),
            Err(e) => spec_errors.push(e),
        }
    }
    for chain in &doc.connect {
        match edges::chain(chain) {
            Ok(list) => specs.extend(list),
            Err(e) => spec_errors.push(e),
        }
    }
    let mut checked = Vec::new();
    let mut node_lines = BTreeMap::new();
    let mut node_types = BTreeMap::new();
    let mut node_memory = BTreeMap::new();
    // Nodes that cannot be built: a second node of one name.
    let mut duplicate = vec![false; nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        let node = node.get_ref();
        let name = node.name.get_ref();
        let kind = node.kind.get_ref();
        if let Some(previous) = node_lines.get(name) {
            let place = match previous {
                0 => String::new(),
                line => format!(" on line {line}"),
            };
            errors.add(
                Some(node.name.span()),
                Some(name),
                format!("node '{name}': a node of that name is already declared{place}; names must be unique"),
            );
            duplicate[i] = true;
            continue;
        }
        // No text, no line: 0.
        let line = text.map_or(0, |t| line_column(t, node.name.span().start).0);
        node_lines.insert(name.clone(), line);
        let Some(block) = registry.find(kind) else {
            errors.add(
                Some(node.kind.span()),
                Some(name),
                node::unknown_block(registry, name, kind),
            );
            continue;
        };
        node_types.insert(name.clone(), block.name.to_string());
    }
    let (hosts, node_hosts) = match check_placement(&doc.hosts, &nodes, text.unwrap_or("")) {
        Ok(placed) => placed,
        Err((span, node, msg)) => {
            errors.add(Some(span), node.as_deref(), msg);
            Default::default()
        }
    };
    if let Err((span, node, msg)) = check_file_collisions(&nodes, registry) {
        errors.add(Some(span), Some(&node), msg);
    }
    for (node, duplicate) in nodes.into_iter().zip(duplicate) {
        if duplicate {
            continue;
        }
        let span = node.span();
        let node = node.into_inner();
        let name = node.name.get_ref().clone();
        let Some(block) = registry.find(node.kind.get_ref()) else {
            continue;
        };
        let params = Params::new(node.params);
        // The declaration first: unknown, mistyped, out-of-range and missing parameters are
        // named before the block's own checks run.
        let mistakes = node::check_params(block, &params);
        if !mistakes.is_empty() {
            for e in mistakes {
                node_error(&mut errors, &name, span.clone(), &params, e);
            }
            continue;
        }
        checked.push(Checked {
            name,
            block,
            params,
            span,
        });
    }
    // Rates first: a node's build reads the stream rate its parameters follow.
    // Messages have no sample rate: message edges do not carry one.
    let pairs: Vec<(String, String)> = specs
        .iter()
        .filter(|e| !checks::sends_messages(&checked, &e.from.node, e.from.port.as_deref()))
        .map(|e| (e.from.node.clone(), e.to.node.clone()))
        .collect();
    let (rates, mistakes) = rates::follow(&mut checked, &pairs, &node_lines);
    for (span, node, message, _) in mistakes {
        errors.add(Some(span), Some(&node), message);
    }
    for Checked {
        name,
        block,
        mut params,
        span,
    } in checked
    {
        if let Some(Ok(m)) = block.memory_of(&params) {
            node_memory.insert(name.clone(), m);
        }
        match block.instantiate(&mut params) {
            Ok(built) => {
                if let Err(e) = graph.add_boxed(&name, built) {
                    errors.add(Some(span), Some(&name), e.to_string());
                }
            }
            Err(mut e) => {
                node::without_rate(block, &mut e);
                node_error(&mut errors, &name, span, &params, e)
            }
        }
    }
    for (span, message) in spec_errors {
        errors.add(Some(span), None, message);
    }
    let mut edges = Vec::new();
    for spec in &specs {
        match connect(&mut graph, spec) {
            Ok(ends) => edges.push(ends),
            Err((span, message)) => {
                // An edge to a node that failed to load says nothing new.
                if !message.contains("no node named") || errors.list.is_empty() {
                    errors.add(Some(span), None, message);
                }
            }
        }
    }
    let mut feeds = Vec::with_capacity(doc.feed.len());
    for feed in &doc.feed {
        let feed = feed.get_ref();
        let (to, from) = (feed.to.get_ref(), feed.from.get_ref());
        match fed_input(&graph, to) {
            Ok((node, port)) => {
                // For the check of unconnected ports: the running graph feeds it.
                edges.push((String::new(), String::new(), node, port));
                feeds.push(Feed {
                    from: from.clone(),
                    to: to.clone(),
                });
            }
            Err(message) => errors.add(Some(feed.to.span()), None, message),
        }
        if from
            .rsplit_once('.')
            .is_none_or(|(n, p)| n.is_empty() || p.is_empty())
        {
            errors.add(
                Some(feed.from.span()),
                None,
                format!(
                    "feed from '{}': name an output of the running graph as NODE.PORT",
                    escape(from)
                ),
            );
        }
    }
    if errors.list.is_empty() {
        let waiting = checks::waiting_edges(&graph, &edges);
        if let Err((node, line, msg)) = check_cycles(&node_lines, &waiting) {
            errors.add_line(line, node, msg);
        }
        for (node, line, msg) in check_unconnected(&graph, &node_lines, &edges) {
            errors.add_line(line, node, msg);
        }
    }
    if !errors.list.is_empty() {
        return Err(errors.finish());
    }
    edges.retain(|(from, ..)| !from.is_empty());
    let loaded = LoadedGraph {
        graph,
        source: GraphSource {
            origin: origin.to_string(),
            node_lines,
            node_types,
            edges,
            hosts,
            node_hosts,
            node_memory,
            rates,
        },
    };
    Ok((loaded, feeds))
}

/// The stream input `node.port` of `graph` that a feed names, or why it names none.
fn fed_input(graph: &Graph, to: &str) -> Result<(String, String), String> {
    let Some((node, port)) = to
        .rsplit_once('.')
        .filter(|(n, p)| !n.is_empty() && !p.is_empty())
    else {
        return Err(format!(
            "feed to '{}': name an input of this file as NODE.PORT",
            escape(to)
        ));
    };
    let Some(id) = graph.node_id(node) else {
        return Err(format!(
            "feed to '{}': this file declares no node '{}'",
            escape(to),
            escape(node)
        ));
    };
    let ports = graph.ports(id).expect("a node of the graph has ports");
    match ports.inputs.iter().find(|p| p.name == port) {
        Some(p) if p.message.is_none() => Ok((node.to_string(), port.to_string())),
        Some(_) => Err(format!(
            "feed to '{}': a message input cannot be fed by a stream",
            escape(to)
        )),
        None => {
            let names: Vec<&str> = ports.inputs.iter().map(|p| p.name.as_str()).collect();
            Err(format!(
                "feed to '{}': node '{node}' has no input '{}' (inputs: {})",
                escape(to),
                escape(port),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ))
        }
    }
}

/// `text` with control characters escaped, for messages.
fn escape(text: &str) -> String {
    text.chars().flat_map(char::escape_debug).collect()
}

/// The name of the `[[node]]` table that byte `at` of `text` lies in, for errors of the TOML
/// parser, which knows only the place.
fn enclosing_node(text: &str, at: usize) -> Option<String> {
    let before = text.get(..at)?;
    let table = before.rfind("[[node]]")?;
    // A later table header ends the node's table.
    if before[table + 8..]
        .lines()
        .any(|l| l.trim_start().starts_with('['))
    {
        return None;
    }
    let name = text[table..].lines().find_map(|l| {
        let value = l
            .trim()
            .strip_prefix("name")?
            .trim_start()
            .strip_prefix('=')?;
        Some(value.trim().trim_matches('"').to_string())
    })?;
    Some(name)
}

/// Reports a parameter error of node `name`, at the parameter when the file gives it.
fn node_error(errors: &mut Errors, name: &str, span: Range<usize>, params: &Params, e: ParamError) {
    let at = params.span(&e.param).unwrap_or(span);
    errors.add(Some(at), Some(name), node::param_message(name, &e));
}

/// The mistakes found in one file, in the order found.
struct Errors<'a> {
    /// The text the graph was read from; `None` for a typed graph (its mistakes have no line).
    text: Option<&'a str>,
    origin: &'a str,
    list: Vec<GraphFileError>,
}

impl Errors<'_> {
    fn add(&mut self, span: Option<Range<usize>>, node: Option<&str>, message: String) {
        let (line, column) = match self.text {
            Some(text) => span.map(|s| line_column(text, s.start)).unzip(),
            None => (None, None),
        };
        self.push(line, column, node.map(str::to_string), message);
    }

    fn add_line(&mut self, line: usize, node: String, message: String) {
        self.push(Some(line), None, Some(node), message);
    }

    fn push(
        &mut self,
        line: Option<usize>,
        column: Option<usize>,
        node: Option<String>,
        message: String,
    ) {
        if self.list.len() < MAX_ERRORS {
            self.list.push(GraphFileError {
                origin: self.origin.to_string(),
                // Line 0: a node of a typed graph, which has no lines.
                line: line.filter(|&l| l > 0),
                column,
                node,
                message,
                more: Box::default(),
            });
        }
    }

    /// The first mistake, carrying the others.
    fn finish(mut self) -> GraphFileError {
        let mut first = self.list.remove(0);
        first.more = self.list.into_boxed_slice();
        first
    }
}

/// " must be …" reads on from "parameter 'x'"; anything else after a colon.
fn joined(message: &str) -> String {
    let verb = ["must ", "is ", "needs ", "has ", "should "];
    if verb.iter().any(|v| message.starts_with(v)) {
        format!(" {message}")
    } else {
        format!(": {message}")
    }
}

/// Applies `--set` overrides to the parsed nodes; an override naming no node is an error.
fn apply_overrides(nodes: &mut [Spanned<NodeDoc>], overrides: &[Override]) -> Result<(), String> {
    for o in overrides {
        let Some(node) = nodes
            .iter_mut()
            .map(|n| n.get_mut())
            .find(|n| n.name.get_ref() == &o.node)
        else {
            return Err(format!(
                "--set {}.{}: the graph has no node named '{}'",
                o.node, o.param, o.node
            ));
        };
        // Errors about the value point at the node's name.
        let span = node.name.span();
        node.params
            .insert(o.param.clone(), Spanned::new(span, o.value.clone()));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
