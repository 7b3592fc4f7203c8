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
//! Every error names the file and line, and the node and port it concerns.

use crate::params::Params;
use crate::registry;
use serde::Deserialize;
use sluice_runtime::{Flavor, Graph, QueueOptions};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use toml::{Spanned, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    #[serde(default)]
    options: Option<OptionsDoc>,
    #[serde(default)]
    node: Vec<Spanned<NodeDoc>>,
    #[serde(default)]
    edge: Vec<Spanned<EdgeDoc>>,
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
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EdgeDoc {
    from: Spanned<String>,
    to: Spanned<String>,
    capacity: Option<Spanned<u64>>,
}

/// A graph file that could not be loaded: one line, naming file, line, node and port.
#[derive(Debug)]
pub struct GraphFileError(pub String);

impl std::fmt::Display for GraphFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GraphFileError {}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

/// Loads `text` (read from `origin`, used in messages) into a graph ready to run.
pub fn load(text: &str, origin: &str) -> Result<Graph, GraphFileError> {
    let err_at = |span: Range<usize>, msg: String| {
        GraphFileError(format!("{origin}:{}: {msg}", line_of(text, span.start)))
    };
    let doc: FileDoc = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        let msg = e.message().trim_end().to_string();
        match line {
            Some(l) => GraphFileError(format!("{origin}:{l}: {msg}")),
            None => GraphFileError(format!("{origin}: {msg}")),
        }
    })?;
    let mut graph = Graph::new();
    if let Some(opts) = doc.options {
        if let Some(bytes) = opts.queue_bytes {
            graph.set_default_queue_bytes(*bytes.get_ref() as usize);
        }
        if let Some(flavor) = opts.flavor {
            let flavor_value = match flavor.get_ref().as_str() {
                "mirrored" => Flavor::Mirrored,
                "copying" => Flavor::Copying,
                other => {
                    return Err(err_at(
                        flavor.span(),
                        format!(
                            "options: unknown queue flavor '{other}' (use mirrored or copying)"
                        ),
                    ))
                }
            };
            graph.set_queue_options(QueueOptions {
                flavor: flavor_value,
                ..QueueOptions::default()
            });
        }
    }
    if doc.node.is_empty() {
        return Err(GraphFileError(format!(
            "{origin}: the graph has no [[node]] entries"
        )));
    }
    check_file_collisions(&doc.node).map_err(|(span, msg)| err_at(span, msg))?;
    for node in doc.node {
        let span = node.span();
        let node = node.into_inner();
        let name = node.name.get_ref().clone();
        let kind = node.kind.get_ref();
        let Some(block) = registry::find(kind) else {
            return Err(err_at(
                node.kind.span(),
                format!("node '{name}': unknown block type '{kind}' (`sluice blocks` lists them)"),
            ));
        };
        let mut params = Params::new(node.params);
        let built = (block.build)(&mut params).map_err(|e| {
            let at = params.span(&e.param).unwrap_or(span.clone());
            if e.param.is_empty() {
                err_at(at, format!("node '{name}': {}", e.message))
            } else {
                err_at(
                    at,
                    format!("node '{name}': parameter '{}' {}", e.param, e.message),
                )
            }
        })?;
        if let Some(unknown) = params.unused().first() {
            let known: Vec<&str> = block.params.iter().map(|p| p.name).collect();
            return Err(err_at(
                params.span(unknown).unwrap_or(span),
                format!(
                    "node '{name}': unknown parameter '{unknown}' for {kind} (known: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        graph
            .add_boxed(&name, built)
            .map_err(|e| err_at(node.name.span(), e.to_string()))?;
    }
    for edge in doc.edge {
        let edge = edge.into_inner();
        let (from_node, from_port) =
            split_end(&edge.from).map_err(|m| err_at(edge.from.span(), m))?;
        let (to_node, to_port) = split_end(&edge.to).map_err(|m| err_at(edge.to.span(), m))?;
        let label = format!("edge {} -> {}", edge.from.get_ref(), edge.to.get_ref());
        let from = graph.node_id(from_node).ok_or_else(|| {
            err_at(
                edge.from.span(),
                format!("{label}: no node named '{from_node}'"),
            )
        })?;
        let to = graph.node_id(to_node).ok_or_else(|| {
            err_at(
                edge.to.span(),
                format!("{label}: no node named '{to_node}'"),
            )
        })?;
        let capacity = edge.capacity.as_ref().map(|c| *c.get_ref() as usize);
        graph
            .connect_with(from, from_port, to, to_port, capacity)
            .map_err(|e| err_at(edge.from.span(), format!("{label}: {e}")))?;
    }
    Ok(graph)
}

/// Refuses, before any node is built (and so before any file is opened), a graph in which a
/// sink would write a file that a source reads or that another sink writes. Sources and sinks
/// are told apart by their type's suffix (`_source`, `_sink`); their file is the `path`
/// parameter.
fn check_file_collisions(nodes: &[Spanned<NodeDoc>]) -> Result<(), (Range<usize>, String)> {
    let files: Vec<(&NodeDoc, &Spanned<Value>, bool)> = nodes
        .iter()
        .map(Spanned::get_ref)
        .filter_map(|n| {
            let kind = n.kind.get_ref();
            let writes = kind.ends_with("_sink");
            (writes || kind.ends_with("_source"))
                .then(|| n.params.get("path").map(|p| (n, p, writes)))
                .flatten()
        })
        .collect();
    for (i, (writer, path, writes)) in files.iter().enumerate() {
        if !writes {
            continue;
        }
        let Some(written) = path.get_ref().as_str() else {
            continue;
        };
        for (j, (other, other_path, other_writes)) in files.iter().enumerate() {
            let Some(other_file) = other_path.get_ref().as_str() else {
                continue;
            };
            if i == j || (*other_writes && j < i) {
                continue;
            }
            if crate::convolve::same_file(Path::new(written), Path::new(other_file)) {
                let what = if *other_writes { "writes" } else { "reads" };
                return Err((
                    path.span(),
                    format!(
                        "node '{}': writes {written}, which node '{}' {what}; \
                         choose another output path (nothing was opened or changed)",
                        writer.name.get_ref(),
                        other.name.get_ref()
                    ),
                ));
            }
        }
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

    fn error_of(text: &str) -> String {
        match load(text, "g.toml") {
            Ok(_) => panic!("loaded"),
            Err(e) => e.to_string(),
        }
    }

    const GOOD: &str = r#"
[[node]]
name = "src"
type = "signal_source"
params = { item = "f32", frequency = 440.0 }

[[node]]
name = "head"
type = "head"
params = { item = "f32", items = 1000 }

[[node]]
name = "sink"
type = "null_sink"
params = { item = "f32" }

[[edge]]
from = "src.out"
to = "head.in"

[[edge]]
from = "head.out"
to = "sink.in"
"#;

    #[test]
    fn a_good_file_runs() {
        let report = load(GOOD, "g.toml").unwrap().run_stepped().unwrap();
        assert_eq!(report.node("sink").unwrap().items_in, 1000);
    }

    #[test]
    fn unknown_parameter_names_line_node_and_parameter() {
        let text = GOOD.replace("items = 1000", "items = 1000, itmes = 5");
        assert_eq!(
            error_of(&text),
            "g.toml:10: node 'head': unknown parameter 'itmes' for head (known: item, items)"
        );
    }

    #[test]
    fn bad_parameter_value_names_the_line() {
        let text = GOOD.replace("frequency = 440.0", "frequency = \"high\"");
        assert_eq!(
            error_of(&text),
            "g.toml:5: node 'src': parameter 'frequency' must be a number, not a string"
        );
        let text = GOOD.replace("items = 1000", "items = -3");
        assert_eq!(
            error_of(&text),
            "g.toml:10: node 'head': parameter 'items' must not be negative (-3)"
        );
    }

    #[test]
    fn unknown_block_type_and_port_and_type_mismatch_are_named() {
        let text = GOOD.replace("type = \"head\"", "type = \"hed\"");
        assert_eq!(
            error_of(&text),
            "g.toml:9: node 'head': unknown block type 'hed' (`sluice blocks` lists them)"
        );
        let text = GOOD.replace("to = \"sink.in\"", "to = \"sink.input\"");
        assert_eq!(
            error_of(&text),
            "g.toml:22: edge head.out -> sink.input: node 'sink' has no input port 'input' (it has: in)"
        );
        let text = GOOD.replace("params = { item = \"f32\" }", "params = { item = \"c32\" }");
        assert_eq!(
            error_of(&text),
            "g.toml:22: edge head.out -> sink.in: cannot connect head.out (f32) to sink.in (Complex<f32>): the item types differ"
        );
    }

    #[test]
    fn syntax_errors_and_unknown_keys_name_the_line() {
        let err = error_of("[[node]]\nname = \"a\"\ntype = \"copy\"\nparms = {}\n");
        assert!(err.starts_with("g.toml:4: unknown field `parms`"), "{err}");
        let err = error_of("[[node]]\nname = \"a\nx");
        assert!(err.starts_with("g.toml:2:"), "{err}");
        let err = error_of("[[edge]]\nfrom = \"a.out\"\nto = \"b.in\"\n");
        assert_eq!(err, "g.toml: the graph has no [[node]] entries");
    }

    #[test]
    fn unconnected_ports_are_reported_when_run() {
        let text = GOOD.replace("[[edge]]\nfrom = \"head.out\"\nto = \"sink.in\"\n", "");
        let err = load(&text, "g.toml").unwrap().run_stepped().unwrap_err();
        assert_eq!(err.to_string(), "output head.out is not connected");
    }
}
