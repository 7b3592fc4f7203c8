//! The checks of a whole graph that need no node built, or every node: cycles, unconnected
//! ports, and files written twice.

use super::NodeDoc;
use crate::registry::Registry;
use crate::FileAccess;
use sluice_runtime::Graph;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::{Spanned, Value};

/// A cycle would have each node on it wait for the next forever: refused with the line of its
/// first node.
pub(super) fn check_cycles(
    node_lines: &BTreeMap<String, usize>,
    edges: &[(String, String, String, String)],
) -> Result<(), (String, usize, String)> {
    // Depth-first search; `path` holds the nodes on the current branch.
    fn visit<'a>(
        node: &'a str,
        edges: &'a [(String, String, String, String)],
        done: &mut Vec<&'a str>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(start) = path.iter().position(|&n| n == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node);
            return Some(cycle);
        }
        if done.contains(&node) {
            return None;
        }
        path.push(node);
        for (a, _, b, _) in edges {
            if a == node {
                if let Some(cycle) = visit(b, edges, done, path) {
                    return Some(cycle);
                }
            }
        }
        path.pop();
        done.push(node);
        None
    }
    let mut done = Vec::new();
    for name in node_lines.keys() {
        if let Some(cycle) = visit(name, edges, &mut done, &mut Vec::new()) {
            let first = cycle[0].to_string();
            return Err((
                first.clone(),
                node_lines[&first],
                format!(
                    "the graph has a cycle: {}; a node's output may not lead back to its own input",
                    cycle.join(" -> ")
                ),
            ));
        }
    }
    Ok(())
}

/// Every declared port must be connected: found here, with the node's line, rather than when
/// the graph runs.
pub(super) fn check_unconnected(
    graph: &Graph,
    node_lines: &BTreeMap<String, usize>,
    edges: &[(String, String, String, String)],
) -> Vec<(String, usize, String)> {
    let mut found = Vec::new();
    for (name, &line) in node_lines {
        let Some(ports) = graph.node_id(name).and_then(|id| graph.ports(id)) else {
            continue;
        };
        for (kind, list) in [("input", &ports.inputs), ("output", &ports.outputs)] {
            // Message ports may stay unconnected: nobody listens, or nothing is said.
            for port in list.iter().filter(|p| p.message.is_none()) {
                let connected = edges.iter().any(|(a, ap, b, bp)| match kind {
                    "input" => b == name && bp == &port.name,
                    _ => a == name && ap == &port.name,
                });
                if !connected {
                    found.push((
                        name.clone(),
                        line,
                        format!(
                            "node '{name}': {kind} port '{}' is not connected (add an [[edge]] {} it)",
                            port.name,
                            if kind == "input" { "to" } else { "from" }
                        ),
                    ));
                }
            }
        }
    }
    found
}

/// Refuses, before any node is built (and so before any file is opened), a graph in which a
/// node would write a file that another node reads or writes. Which parameters name files, and
/// whether they are read or written, comes from the registry.
pub(super) fn check_file_collisions(
    nodes: &[Spanned<NodeDoc>],
    registry: &Registry,
) -> Result<(), (Range<usize>, String, String)> {
    let mut files: Vec<(&NodeDoc, &Spanned<Value>, FileAccess)> = Vec::new();
    for node in nodes.iter().map(Spanned::get_ref) {
        let Some(block) = registry.find(node.kind.get_ref()) else {
            continue;
        };
        for (param, access) in block.files() {
            if let Some(path) = node.params.get(param) {
                files.push((node, path, access));
            }
        }
    }
    for (i, (writer, path, access)) in files.iter().enumerate() {
        if *access != FileAccess::Write {
            continue;
        }
        let Some(written) = path.get_ref().as_str() else {
            continue;
        };
        for (j, (other, other_path, other_access)) in files.iter().enumerate() {
            let Some(other_file) = other_path.get_ref().as_str() else {
                continue;
            };
            if *other_access == FileAccess::WritePattern {
                continue; // a pattern names many files: not compared
            }
            if i == j || (*other_access == FileAccess::Write && j < i) {
                continue;
            }
            if same_file(Path::new(written), Path::new(other_file)) {
                let what = match other_access {
                    FileAccess::Write | FileAccess::WritePattern => "writes",
                    FileAccess::Read => "reads",
                };
                let name = writer.name.get_ref();
                let other_name = other.name.get_ref();
                let whom = if other_name == name {
                    "the same node also".to_string()
                } else {
                    format!("node '{other_name}'")
                };
                return Err((
                    path.span(),
                    name.clone(),
                    format!(
                        "node '{name}': writes {written}, which {whom} {what}; \
                         choose another output path (nothing was opened or changed)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Whether `a` and `b` name the same file (after resolving links and `..`; a path that does not
/// exist yet is compared through its directory).
pub fn same_file(a: &Path, b: &Path) -> bool {
    fn resolve(p: &Path) -> PathBuf {
        if let Ok(full) = std::fs::canonicalize(p) {
            return full;
        }
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
        match (
            dir.map_or_else(|| std::fs::canonicalize("."), std::fs::canonicalize),
            p.file_name(),
        ) {
            (Ok(d), Some(name)) => d.join(name),
            _ => p.to_path_buf(),
        }
    }
    resolve(a) == resolve(b)
}

/// The edges along which a node can wait for the next: every edge but message edges whose
/// full inbox drops (a feedback loop of messages needs one of those).
pub(super) fn waiting_edges(
    graph: &Graph,
    edges: &[(String, String, String, String)],
) -> Vec<(String, String, String, String)> {
    edges
        .iter()
        .filter(|(_, _, b, bp)| {
            let input = graph
                .node_id(b)
                .and_then(|id| graph.ports(id))
                .and_then(|p| p.input_index(bp).map(|i| &p.inputs[i]));
            !input.is_some_and(sluice_runtime::message::breaks_cycles)
        })
        .cloned()
        .collect()
}

/// Whether output `port` of node `node` (its only output when `None`) is a message port, as
/// its declaration says for its parameters.
pub(super) fn sends_messages(
    checked: &[super::rates::Checked],
    node: &str,
    port: Option<&str>,
) -> bool {
    let Some(c) = checked.iter().find(|c| c.name == node) else {
        return false;
    };
    let Some(ports) = c.block.resolve_ports(&c.params) else {
        return false;
    };
    let mut outputs = ports
        .iter()
        .filter(|p| p.direction == crate::Direction::Output);
    match port {
        Some(name) => outputs.any(|p| p.name == name && p.is_message()),
        None => {
            let all: Vec<_> = outputs.collect();
            all.len() == 1 && all[0].is_message()
        }
    }
}
