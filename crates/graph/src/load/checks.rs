//! The checks of a whole graph that need no node built, or every node: cycles, unconnected
//! ports, and files written twice.

use super::NodeDoc;
use crate::registry::Registry;
use crate::FileAccess;
use sluice_runtime::Graph;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

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
/// whether they are read or written, comes from the registry; a file name pattern whose
/// labels are declared ([`crate::ParamDecl::labelled_by`]) counts as the file of each label.
pub(super) fn check_file_collisions(
    nodes: &[Spanned<NodeDoc>],
    registry: &Registry,
) -> Result<(), (Range<usize>, String, String)> {
    let mut files: Vec<FileUse<'_>> = Vec::new();
    for node in nodes.iter().map(Spanned::get_ref) {
        let Some(block) = registry.find(node.kind.get_ref()) else {
            continue;
        };
        for decl in &block.params {
            let Some(access) = decl.file else {
                continue;
            };
            let Some(path) = node.params.get(decl.name.as_ref()) else {
                continue;
            };
            let Some(text) = path.get_ref().as_str() else {
                continue;
            };
            let labels = match (access, &decl.labels) {
                (FileAccess::WritePattern, Some(from)) => labels(node, block, from),
                _ => None,
            };
            files.push(FileUse {
                node,
                span: path.span(),
                path: text,
                access,
                labels,
            });
        }
    }
    for (i, writer) in files.iter().enumerate() {
        match writer.access {
            FileAccess::Write => {
                for (j, other) in files.iter().enumerate() {
                    if other.access == FileAccess::WritePattern {
                        continue; // compared from the pattern's side
                    }
                    if i == j || (other.access == FileAccess::Write && j < i) {
                        continue;
                    }
                    if same_file(Path::new(writer.path), Path::new(other.path)) {
                        return Err(collision(writer, writer.path, other));
                    }
                }
            }
            FileAccess::WritePattern => {
                let Some(labels) = &writer.labels else {
                    continue; // without labels, a pattern names files it cannot list
                };
                let mut seen = std::collections::BTreeSet::new();
                if let Some(twice) = labels.iter().find(|l| !seen.insert(**l)) {
                    return Err(collision(
                        writer,
                        &crate::pattern_file(writer.path, *twice),
                        writer,
                    ));
                }
                for (j, other) in files.iter().enumerate() {
                    if i == j || (other.access == FileAccess::WritePattern && j < i) {
                        continue;
                    }
                    if let Some(label) = writer.names(other, labels) {
                        return Err(collision(
                            writer,
                            &crate::pattern_file(writer.path, label),
                            other,
                        ));
                    }
                }
            }
            FileAccess::Read => {}
        }
    }
    Ok(())
}

/// A file parameter a node gives.
struct FileUse<'a> {
    node: &'a NodeDoc,
    span: Range<usize>,
    path: &'a str,
    access: FileAccess,
    /// A file name pattern's labels, when its declaration says where they come from.
    labels: Option<Vec<u64>>,
}

impl FileUse<'_> {
    /// The label of pattern `self` (with `labels`) whose file `other` names too, if one does.
    fn names(&self, other: &FileUse<'_>, labels: &[u64]) -> Option<u64> {
        let (dir, pattern) = split(self.path)?;
        let same_dir = |other_dir: &Path| same_file(&dir, other_dir);
        match other.access {
            FileAccess::Read | FileAccess::Write => {
                let (other_dir, name) = split(other.path)?;
                let label = crate::pattern_label(&pattern, &name)?;
                (labels.contains(&label) && same_dir(&other_dir)).then_some(label)
            }
            FileAccess::WritePattern => {
                let other_labels = other.labels.as_ref()?;
                let (other_dir, other_pattern) = split(other.path)?;
                let label = labels.iter().copied().find(|&l| {
                    crate::pattern_label(&other_pattern, &crate::pattern_file(&pattern, l))
                        .is_some_and(|m| other_labels.contains(&m))
                })?;
                same_dir(&other_dir).then_some(label)
            }
        }
    }
}

/// A path's directory (`.` when it has none) and file name.
fn split(path: &str) -> Option<(PathBuf, String)> {
    let path = Path::new(path);
    let name = path.file_name()?.to_str()?.to_string();
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Some((dir.to_path_buf(), name))
}

/// The labels a node gives a pattern: its list, or 0 to its count − 1 (`None` when they are
/// not whole numbers, which the parameters' own check reports, or more than a million).
fn labels(
    node: &NodeDoc,
    block: &crate::BlockType,
    from: &crate::PatternLabels,
) -> Option<Vec<u64>> {
    const MOST: u64 = 1 << 20;
    if let Some(list) = node.params.get(from.list.as_ref()) {
        let items = list.get_ref().as_array()?;
        return items
            .iter()
            .map(|v| v.as_integer().and_then(|i| u64::try_from(i).ok()))
            .collect::<Option<Vec<u64>>>()
            .filter(|l| l.len() as u64 <= MOST);
    }
    let count = match node.params.get(from.count.as_ref()) {
        Some(given) => given.get_ref().as_integer()?,
        None => match &block.params.iter().find(|p| p.name == from.count)?.default {
            crate::Default::Value(v) => v.as_integer()?,
            _ => return None,
        },
    };
    let count = u64::try_from(count).ok().filter(|&c| c <= MOST)?;
    Some((0..count).collect())
}

/// The error for `writer` writing `file`, which `other` reads or writes too.
fn collision(
    writer: &FileUse<'_>,
    file: &str,
    other: &FileUse<'_>,
) -> (Range<usize>, String, String) {
    let what = match other.access {
        FileAccess::Write | FileAccess::WritePattern => "writes",
        FileAccess::Read => "reads",
    };
    let name = writer.node.name.get_ref();
    let other_name = other.node.name.get_ref();
    let whom = if other_name == name {
        "the same node also".to_string()
    } else {
        format!("node '{other_name}'")
    };
    (
        writer.span.clone(),
        name.clone(),
        format!(
            "node '{name}': writes {file}, which {whom} {what}; \
             choose another output path (nothing was opened or changed)"
        ),
    )
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
