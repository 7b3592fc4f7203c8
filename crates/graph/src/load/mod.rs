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
mod hosts;
mod node;

pub use checks::same_file;
use checks::{check_cycles, check_file_collisions, check_unconnected};
use hosts::{check_placement, HostDoc};
pub use hosts::{HostDecl, StandbyMode};
pub use node::{build_node, MistakeKind, NodeMistake};

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
    #[serde(default)]
    hosts: BTreeMap<String, Spanned<HostDoc>>,
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EdgeDoc {
    from: Spanned<String>,
    to: Spanned<String>,
    capacity: Option<Spanned<u64>>,
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
    /// Each node's `[[node]]` line.
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
}

impl GraphSource {
    /// `origin:line: ` for node `name` (just `origin: ` for a name the file does not declare).
    pub fn locate_node(&self, name: &str) -> String {
        match self.node_lines.get(name) {
            Some(line) => format!("{}:{line}: ", self.origin),
            None => format!("{}: ", self.origin),
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
    /// with its ports and item type.
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
            out.push_str(&format!(
                "    \"{}\" -> \"{}\" [label=\"{} → {} ({})\"];\n",
                quote(a),
                quote(b),
                quote(ap),
                quote(bp),
                item
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
    let mut errors = Errors {
        text,
        origin,
        list: Vec::new(),
    };
    let doc: FileDoc = match toml::from_str(text) {
        Ok(doc) => doc,
        Err(e) => {
            // One line: the parser's "expected …" continuation joins the message.
            let msg = e.message().trim_end().replace('\n', "; ");
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
            errors.add(
                Some(node.name.span()),
                Some(name),
                format!("node '{name}': a node of that name is already declared on line {previous}; names must be unique"),
            );
            duplicate[i] = true;
            continue;
        }
        node_lines.insert(name.clone(), line_column(text, node.name.span().start).0);
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
    let (hosts, node_hosts) = match check_placement(&doc.hosts, &nodes, text) {
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
        let mut params = Params::new(node.params);
        let param_error = |errors: &mut Errors, params: &Params, e: ParamError| {
            let at = params.span(&e.param).unwrap_or(span.clone());
            errors.add(Some(at), Some(&name), node::param_message(&name, &e));
        };
        // The declaration first: unknown, mistyped, out-of-range and missing parameters are
        // named before the block's own checks run.
        let mistakes = node::check_params(block, &params);
        if !mistakes.is_empty() {
            for e in mistakes {
                param_error(&mut errors, &params, e);
            }
            continue;
        }
        if let Some(Ok(m)) = block.memory_of(&params) {
            node_memory.insert(name.clone(), m);
        }
        match block.instantiate(&mut params) {
            Ok(built) => {
                if let Err(e) = graph.add_boxed(&name, built) {
                    errors.add(Some(node.name.span()), Some(&name), e.to_string());
                }
            }
            Err(e) => param_error(&mut errors, &params, e),
        }
    }
    let mut edges = Vec::new();
    for edge in doc.edge {
        let edge = edge.into_inner();
        match connect(&mut graph, &edge) {
            Ok(ends) => edges.push(ends),
            Err((span, message)) => {
                // An edge to a node that failed to load says nothing new.
                if !message.contains("no node named") || errors.list.is_empty() {
                    errors.add(Some(span), None, message);
                }
            }
        }
    }
    if errors.list.is_empty() {
        if let Err((node, line, msg)) = check_cycles(&node_lines, &edges) {
            errors.add_line(line, node, msg);
        }
        for (node, line, msg) in check_unconnected(&graph, &node_lines, &edges) {
            errors.add_line(line, node, msg);
        }
    }
    if !errors.list.is_empty() {
        return Err(errors.finish());
    }
    Ok(LoadedGraph {
        graph,
        source: GraphSource {
            origin: origin.to_string(),
            node_lines,
            node_types,
            edges,
            hosts,
            node_hosts,
            node_memory,
        },
    })
}

/// The mistakes found in one file, in the order found.
struct Errors<'a> {
    text: &'a str,
    origin: &'a str,
    list: Vec<GraphFileError>,
}

impl Errors<'_> {
    fn add(&mut self, span: Option<Range<usize>>, node: Option<&str>, message: String) {
        let (line, column) = span.map(|s| line_column(self.text, s.start)).unzip();
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
                line,
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

/// An edge as written: (from node, from port, to node, to port).
type Edge = (String, String, String, String);

/// Connects one `[[edge]]`, returning its ends, or the place and words of what is wrong.
fn connect(graph: &mut Graph, edge: &EdgeDoc) -> Result<Edge, (Range<usize>, String)> {
    let (from_node, from_port) = split_end(&edge.from).map_err(|m| (edge.from.span(), m))?;
    let (to_node, to_port) = split_end(&edge.to).map_err(|m| (edge.to.span(), m))?;
    let label = format!("edge {} -> {}", edge.from.get_ref(), edge.to.get_ref());
    let from = graph.node_id(from_node).ok_or_else(|| {
        (
            edge.from.span(),
            format!("{label}: no node named '{from_node}'"),
        )
    })?;
    let to = graph.node_id(to_node).ok_or_else(|| {
        (
            edge.to.span(),
            format!("{label}: no node named '{to_node}'"),
        )
    })?;
    let capacity = match &edge.capacity {
        Some(c) if *c.get_ref() == 0 => {
            return Err((
                c.span(),
                format!("{label}: capacity must be at least 1 item, not 0"),
            ))
        }
        Some(c) => Some(*c.get_ref() as usize),
        None => None,
    };
    // An input port's error concerns the `to` end, anything else the `from` end.
    let blame = |e: &RuntimeError| match e {
        RuntimeError::NoSuchPort { kind: "input", .. } | RuntimeError::InputTaken { .. } => {
            edge.to.span()
        }
        _ => edge.from.span(),
    };
    graph
        .connect_with(from, from_port, to, to_port, capacity)
        .map_err(|e| (blame(&e), format!("{label}: {e}")))?;
    Ok((
        from_node.to_string(),
        from_port.to_string(),
        to_node.to_string(),
        to_port.to_string(),
    ))
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

/// `"node.port"` → (`node`, `port`).
fn split_end(end: &Spanned<String>) -> Result<(&str, &str), String> {
    end.get_ref()
        .rsplit_once('.')
        .filter(|(n, p)| !n.is_empty() && !p.is_empty())
        .ok_or_else(|| {
            format!(
                "'{}' must name a node and a port as node.port",
                end.get_ref()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockType, Family, ItemDecl, Param};
    use num_complex_free::*;
    use sluice_runtime::{Item, Node, NodeError, Ports, Work, WorkIo};

    /// Minimal blocks, so that the loader is tested without the DSP crate.
    mod num_complex_free {
        use super::*;

        /// `items` zeros of `T`.
        pub struct Count<T> {
            pub left: u64,
            pub _t: std::marker::PhantomData<T>,
        }
        impl<T: Item + Default> Node for Count<T> {
            fn ports(&self) -> Ports {
                Ports::new().output::<T>("out")
            }
            fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
                if self.left == 0 {
                    return Ok(Work::Done);
                }
                let out = io.outputs.get::<T>(0)?;
                let Some(space) = out.reserve(1)? else {
                    return Ok(Work::NeedOutput { port: 0, items: 1 });
                };
                let n = space.len().min(self.left as usize);
                space[..n].fill(T::default());
                out.commit(n);
                self.left -= n as u64;
                Ok(Work::Progress)
            }
        }

        /// Consumes `T`s.
        pub struct Drain<T>(pub std::marker::PhantomData<T>);
        impl<T: Item> Node for Drain<T> {
            fn ports(&self) -> Ports {
                Ports::new().input::<T>("in")
            }
            fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
                let input = io.inputs.get::<T>(0)?;
                let Some(w) = input.window(1)? else {
                    return Ok(Work::NeedInput { port: 0, items: 1 });
                };
                if w.is_empty() {
                    return Ok(Work::Done);
                }
                let n = w.len();
                input.consume(n);
                Ok(Work::Progress)
            }
        }
    }

    fn registry() -> Registry {
        let mut r = Registry::new();
        let item = || ItemDecl::Param("item".into());
        r.add(
            BlockType::new("count", Family::Sources, "zeros")
                .output("out", item())
                .param(Param::integer("items", "how many"))
                .param(Param::choice("item", &["f32", "u8"], "f32 or u8").default("f32"))
                .build(|p| {
                    let left = p.u64("items")?;
                    match p.str("item")?.as_str() {
                        "f32" => Ok(Box::new(Count::<f32> {
                            left,
                            _t: Default::default(),
                        })),
                        _ => Ok(Box::new(Count::<u8> {
                            left,
                            _t: Default::default(),
                        })),
                    }
                }),
        )
        .unwrap();
        r.add(
            BlockType::new("drain", Family::Sinks, "consumes")
                .input("in", ItemDecl::fixed("f32"))
                .param(Param::writes("path", "a file it would write").derived("-"))
                .build(|_| Ok(Box::new(Drain::<f32>(Default::default())))),
        )
        .unwrap();
        r
    }

    fn error_of(text: &str) -> String {
        match load_str(text, "g.toml", &registry()) {
            Ok(_) => panic!("loaded"),
            Err(e) => e.to_string(),
        }
    }

    const GOOD: &str = r#"
[[node]]
name = "src"
type = "count"
params = { items = 1000 }

[[node]]
name = "sink"
type = "drain"

[[edge]]
from = "src.out"
to = "sink.in"
"#;

    #[test]
    fn a_good_file_runs() {
        let report = load_str(GOOD, "g.toml", &registry())
            .unwrap()
            .run_stepped()
            .unwrap();
        assert_eq!(report.node("sink").unwrap().items_in, 1000);
    }

    #[test]
    fn unknown_parameters_name_line_column_and_the_likely_one() {
        let text = GOOD.replace("items = 1000", "items = 1000, itmes = 5");
        assert_eq!(
            error_of(&text),
            "g.toml:5:34: node 'src': unknown parameter 'itmes' for count (did you mean 'item'?)"
        );
        let text = GOOD.replace("items = 1000", "items = 1000, colour = 5");
        assert_eq!(
            error_of(&text),
            "g.toml:5:35: node 'src': unknown parameter 'colour' for count (count takes: items, item)"
        );
    }

    #[test]
    fn bad_parameter_values_name_the_place() {
        let text = GOOD.replace("items = 1000", "items = \"many\"");
        assert_eq!(
            error_of(&text),
            "g.toml:5:20: node 'src': parameter 'items' must be a whole number, not a string"
        );
        let text = GOOD.replace("items = 1000", "items = -3");
        assert_eq!(
            error_of(&text),
            "g.toml:5:20: node 'src': parameter 'items' must be at least 0, not -3"
        );
    }

    #[test]
    fn a_misspelt_parameter_is_named_before_the_block_checks_anything() {
        // `items` is required: the block would say so, but the misspelling is the mistake.
        let text = GOOD.replace("items = 1000", "itme = 1000");
        assert_eq!(
            error_of(&text),
            "g.toml:5:19: node 'src': unknown parameter 'itme' for count (did you mean 'items'?)\n\
             g.toml:2:1: node 'src': parameter 'items' is required (the node gives 'itme': a misspelling?)"
        );
    }

    #[test]
    fn every_mistake_of_a_file_is_reported() {
        let text = GOOD
            .replace("items = 1000", "items = 1000, colour = 1, item = \"f64\"")
            .replace("type = \"drain\"", "type = \"drian\"");
        let err = error_of(&text);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines,
            [
                "g.toml:9:8: node 'sink': unknown block type 'drian' (did you mean drain?)",
                "g.toml:5:35: node 'src': unknown parameter 'colour' for count (count takes: items, item)",
                "g.toml:5:45: node 'src': parameter 'item' must be one of f32, u8, not 'f64'",
            ]
        );
    }

    #[test]
    fn a_file_for_a_newer_format_is_refused_clearly() {
        let ok = format!("sluice = 1\n{GOOD}");
        assert!(load_str(&ok, "g.toml", &registry()).is_ok());
        assert_eq!(
            error_of(&format!("sluice = 2\n{GOOD}")),
            "g.toml:1:10: the file is written for graph format 2, and this sluice reads format 1 to 1: install a newer sluice"
        );
    }

    #[test]
    fn unknown_types_ports_and_mismatches_are_named() {
        let text = GOOD.replace("type = \"count\"", "type = \"cuont\"");
        assert_eq!(
            error_of(&text),
            "g.toml:4:8: node 'src': unknown block type 'cuont' (did you mean count?)"
        );
        let text = GOOD.replace("to = \"sink.in\"", "to = \"sink.input\"");
        assert_eq!(
            error_of(&text),
            "g.toml:13:6: edge src.out -> sink.input: node 'sink' has no input port 'input' (it has: in)"
        );
        let text = GOOD.replace("items = 1000", "items = 1000, item = \"u8\"");
        assert_eq!(
            error_of(&text),
            "g.toml:12:8: edge src.out -> sink.in: cannot connect src.out (u8) to sink.in (f32): the item types differ"
        );
    }

    #[test]
    fn syntax_errors_and_unknown_keys_name_the_line() {
        let err = error_of("[[node]]\nname = \"a\"\ntype = \"count\"\nparms = {}\n");
        assert!(
            err.starts_with("g.toml:4:1: unknown field `parms`"),
            "{err}"
        );
        let err = error_of("[[node]]\nname = \"a\nx");
        assert!(err.starts_with("g.toml:2:"), "{err}");
        let err = error_of("[[edge]]\nfrom = \"a.out\"\nto = \"b.in\"\n");
        assert_eq!(err, "g.toml: the graph has no [[node]] entries");
    }

    #[test]
    fn unconnected_ports_and_duplicate_names_are_found_when_loading() {
        let text = GOOD.replace("[[edge]]\nfrom = \"src.out\"\nto = \"sink.in\"\n", "");
        assert_eq!(
            error_of(&text),
            "g.toml:8: node 'sink': input port 'in' is not connected (add an [[edge]] to it)\n\
             g.toml:3: node 'src': output port 'out' is not connected (add an [[edge]] from it)"
        );
        let text = GOOD.replace("name = \"sink\"", "name = \"src\"");
        assert_eq!(
            error_of(&text),
            "g.toml:8:8: node 'src': a node of that name is already declared on line 3; names must be unique"
        );
    }

    #[test]
    fn a_node_built_in_code_has_the_files_checks_and_words() {
        let node = |kind: &str, values: &[(&str, Value)]| {
            let params =
                Params::from_values(values.iter().map(|(k, v)| (k.to_string(), v.clone())));
            build_node(&registry(), "src", kind, params)
        };
        assert!(node("count", &[("items", Value::Integer(10))]).is_ok());
        let unknown = node("cuont", &[]).err().unwrap();
        assert_eq!(unknown[0].kind, MistakeKind::UnknownBlock);
        assert_eq!(
            unknown[0].message,
            "node 'src': unknown block type 'cuont' (did you mean count?)"
        );
        let misspelt = node("count", &[("itme", Value::Integer(10))])
            .err()
            .unwrap();
        let text = GOOD.replace("items = 1000", "itme = 1000");
        let in_file = error_of(&text);
        let messages: Vec<&str> = misspelt.iter().map(|m| m.message.as_str()).collect();
        // The file's lines are `g.toml:LINE:COLUMN: ` and then the same words.
        for (line, message) in in_file.lines().zip(&messages) {
            assert!(line.ends_with(message), "{line} / {message}");
        }
        assert_eq!(misspelt.len(), 2);
        assert_eq!(misspelt[0].kind, MistakeKind::UnknownParam);
        assert_eq!(misspelt[1].kind, MistakeKind::BadParam);
        assert_eq!(misspelt[1].param.as_deref(), Some("items"));
    }

    #[test]
    fn overrides_replace_parameters_and_must_name_a_node() {
        let set: Override = "src.items=10".parse().unwrap();
        let loaded = load_with(GOOD, "g.toml", &registry(), &[set]).unwrap();
        let report = loaded.graph.run_stepped().unwrap();
        assert_eq!(report.node("sink").unwrap().items_in, 10);
        let set: Override = "nope.items=10".parse().unwrap();
        let err = load_with(GOOD, "g.toml", &registry(), &[set])
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "g.toml: --set nope.items: the graph has no node named 'nope'"
        );
        assert!("src.items".parse::<Override>().is_err());
        let word: Override = "a.b=hello".parse().unwrap();
        assert_eq!(word.value, Value::String("hello".into()));
    }

    #[test]
    fn dot_shows_nodes_and_typed_edges() {
        let dot = load_with(GOOD, "g.toml", &registry(), &[])
            .unwrap()
            .to_dot();
        assert!(dot.contains("\"src\" [label=\"src\\ncount\"]"), "{dot}");
        assert!(
            dot.contains("\"src\" -> \"sink\" [label=\"out → in (f32)\"]"),
            "{dot}"
        );
    }

    fn with_hosts(hosts: &str) -> String {
        format!(
            "{hosts}\n[[node]]\nname = \"src\"\ntype = \"count\"\nhost = \"a\"\nparams = {{ items = 10 }}\n\n[[node]]\nname = \"sink\"\ntype = \"drain\"\nhost = \"b\"\n\n[[edge]]\nfrom = \"src.out\"\nto = \"sink.in\"\n"
        )
    }

    #[test]
    fn standbys_are_declared_hosts_without_nodes() {
        let ok = with_hosts("[hosts.a]\nstandby = \"s\"\n[hosts.b]\n[hosts.s]\n");
        let loaded = load_with(&ok, "g.toml", &registry(), &[]).unwrap();
        let a = &loaded.source.hosts["a"];
        assert_eq!(a.standby.as_deref(), Some("s"));
        assert_eq!(a.standby_mode, StandbyMode::Hot);
        assert_eq!(loaded.source.hosts["b"].standby, None);
        let hot = with_hosts(
            "[hosts.a]\nstandby = \"s\"\nstandby_mode = \"hot\"\n[hosts.b]\n[hosts.s]\n",
        );
        assert!(load_str(&hot, "g.toml", &registry()).is_ok());
        let warm = with_hosts(
            "[hosts.a]\nstandby = \"s\"\nstandby_mode = \"warm\"\n[hosts.b]\n[hosts.s]\n",
        );
        let loaded = load_with(&warm, "g.toml", &registry(), &[]).unwrap();
        assert_eq!(loaded.source.hosts["a"].standby_mode, StandbyMode::Warm);

        let cases = [
            (
                "[hosts.a]\nstandby = \"s\"\nstandby_mode = \"cold\"\n[hosts.b]\n[hosts.s]\n",
                "g.toml:3:16: hosts.a (line 1): standby_mode must be \"hot\" or \"warm\", not \"cold\"",
            ),
            (
                "[hosts.a]\nstandby = \"x\"\n[hosts.b]\n",
                "g.toml:2:11: hosts.a (line 1): standby \"x\" is not a declared host (declared hosts: a, b)",
            ),
            (
                "[hosts.a]\nstandby = \"a\"\n[hosts.b]\n",
                "is the host itself",
            ),
            (
                "[hosts.a]\nstandby = \"b\"\n[hosts.b]\n",
                "hosts.a (line 1): standby \"b\" runs nodes of its own (node 'sink')",
            ),
            (
                "[hosts.a]\nstandby = \"s\"\n[hosts.b]\nstandby = \"s\"\n[hosts.s]\n",
                "hosts.b (line 3): standby \"s\" already stands by for host a",
            ),
            (
                "[hosts.a]\nstandby = \"s\"\n[hosts.b]\n[hosts.s]\nstandby = \"t\"\n[hosts.t]\n",
                "standby \"s\" has a standby of its own (line 4)",
            ),
        ];
        for (hosts, expected) in cases {
            let err = error_of(&with_hosts(hosts));
            assert!(err.contains(expected), "{err}\nexpected: {expected}");
        }
    }
}
