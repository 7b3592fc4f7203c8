//! A graph as a typed value: its options, nodes (name, block type, parameters) and edges, what
//! a graph file's `[options]`, `[[node]]` and `[[edge]]` tables say, without places in a text.
//! Programs that make graphs (a cluster's placement) build one of these and
//! [`load_doc`](crate::load_doc) loads it exactly as a file is loaded (every check, parameter
//! declarations included); [`GraphDoc::to_toml`] writes it as a graph file for people to read.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use toml::Value;

/// A graph's options, nodes and edges.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphDoc {
    /// `[options]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<GraphOptions>,
    /// `[[node]]`, in order.
    #[serde(default, rename = "node")]
    pub nodes: Vec<NodeEntry>,
    /// `[[edge]]`, in order.
    #[serde(default, rename = "edge", skip_serializing_if = "Vec::is_empty")]
    pub edges: Vec<EdgeEntry>,
}

/// A graph's `[options]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphOptions {
    /// Default queue size per edge, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// `mirrored` or `copying`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavor: Option<String>,
}

/// One node: its name, block type and parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    /// Its name, unique in the graph.
    pub name: String,
    /// Its block type's name.
    #[serde(rename = "type")]
    pub kind: String,
    /// The host it is placed on (graphs over several machines; empty in a partition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its parameters, as a graph file writes them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, Value>,
}

/// One edge, `from = "node.port"` to `to = "node.port"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeEntry {
    /// The producing node and output port, `node.port`.
    pub from: String,
    /// The consuming node and input port, `node.port`.
    pub to: String,
    /// The queue's capacity in items, if the edge sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u64>,
}

impl EdgeEntry {
    /// An edge from `from` (`node.port`) to `to`.
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> Self {
        EdgeEntry {
            from: from.into(),
            to: to.into(),
            capacity: None,
        }
    }

    /// The producing node's name (`from` up to its last dot).
    pub fn from_node(&self) -> &str {
        node_of(&self.from)
    }

    /// The consuming node's name.
    pub fn to_node(&self) -> &str {
        node_of(&self.to)
    }
}

fn node_of(end: &str) -> &str {
    end.rsplit_once('.').map_or(end, |(n, _)| n)
}

/// The parts of a graph file that [`GraphDoc::from_graph_file`] takes; the rest (hosts, the
/// format version, `connect` chains) is left to the loader.
#[derive(Deserialize)]
struct FileParts {
    #[serde(default)]
    options: Option<GraphOptions>,
    #[serde(default)]
    node: Vec<NodeEntry>,
    #[serde(default)]
    edge: Vec<EdgeEntry>,
}

impl GraphDoc {
    /// The options, nodes and `[[edge]]` tables of a graph file's text (not validated: load
    /// the file for that; `connect` chains and hosts are not taken).
    pub fn from_graph_file(text: &str) -> Result<GraphDoc, String> {
        let parts: FileParts = toml::from_str(text).map_err(|e| e.message().to_string())?;
        Ok(GraphDoc {
            options: parts.options,
            nodes: parts.node,
            edges: parts.edge,
        })
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&NodeEntry> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The graph as a graph file, for people to read.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_else(|e| format!("# (not writable as TOML: {e})\n"))
    }
}
