//! Edges as a graph file writes them: `[[edge]]` tables (`from = "src.out"`, `to = "lp.in"`,
//! an optional `capacity`) and the short form, `connect = ["src -> lp -> snk"]`, where each
//! string is a chain and a node written without a port stands for its only output (on the
//! left of an arrow) or its only input (on the right).

use serde::Deserialize;
use sluice_runtime::{Graph, RuntimeError};
use std::ops::Range;
use toml::Spanned;

/// One `[[edge]]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EdgeDoc {
    from: Spanned<String>,
    to: Spanned<String>,
    capacity: Option<Spanned<u64>>,
}

/// One end of an edge: a node and, unless the node has only one port on that side, a port.
pub(super) struct End {
    pub node: String,
    pub port: Option<String>,
    span: Range<usize>,
}

/// An edge to connect, from either form.
pub(super) struct EdgeSpec {
    pub from: End,
    pub to: End,
    capacity: Option<Spanned<u64>>,
    /// `edge a.out -> b.in`, as the file wrote it, for messages.
    label: String,
}

/// An edge as connected: (from node, from port, to node, to port).
pub(super) type Edge = (String, String, String, String);

impl EdgeDoc {
    /// An edge of a typed graph (no place in a text).
    pub(super) fn new(from: &str, to: &str, capacity: Option<u64>) -> Self {
        EdgeDoc {
            from: Spanned::new(0..0, from.to_string()),
            to: Spanned::new(0..0, to.to_string()),
            capacity: capacity.map(|c| Spanned::new(0..0, c)),
        }
    }

    /// The edge this table describes, or the place and words of what is wrong.
    pub(super) fn spec(self) -> Result<EdgeSpec, (Range<usize>, String)> {
        let end = |s: &Spanned<String>| {
            let (node, port) = split_end(s.get_ref()).map_err(|m| (s.span(), m))?;
            Ok::<_, (Range<usize>, String)>(End {
                node: node.to_string(),
                port: Some(port.to_string()),
                span: s.span(),
            })
        };
        Ok(EdgeSpec {
            label: format!("edge {} -> {}", self.from.get_ref(), self.to.get_ref()),
            from: end(&self.from)?,
            to: end(&self.to)?,
            capacity: self.capacity,
        })
    }
}

/// The edges of one `connect` chain (`"src.out -> lp -> snk.in"`).
pub(super) fn chain(text: &Spanned<String>) -> Result<Vec<EdgeSpec>, (Range<usize>, String)> {
    let span = text.span();
    let parts: Vec<&str> = text.get_ref().split("->").map(str::trim).collect();
    let wrong = |m: String| (span.clone(), format!("connect \"{}\": {m}", text.get_ref()));
    if parts.len() < 2 {
        return Err(wrong(
            "a connection is two or more ends joined by '->' (\"src.out -> snk.in\" or \"src -> snk\")".into(),
        ));
    }
    let mut ends = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() {
            return Err(wrong("an end is empty (two arrows in a row?)".into()));
        }
        let (node, port) = match part.rsplit_once('.') {
            None => (*part, None),
            Some((n, p)) if !n.is_empty() && !p.is_empty() => (n, Some(p.to_string())),
            Some(_) => return Err(wrong(format!("'{part}' must be node.port or node"))),
        };
        if port.is_some() && i > 0 && i + 1 < parts.len() {
            return Err(wrong(format!(
                "'{part}' is in the middle of the chain, where it is both an input and an output: write the node alone, or split the chain"
            )));
        }
        ends.push((node.to_string(), port));
    }
    Ok(ends
        .windows(2)
        .map(|pair| EdgeSpec {
            label: format!(
                "connect \"{} -> {}\"",
                describe(&pair[0]),
                describe(&pair[1])
            ),
            from: End {
                node: pair[0].0.clone(),
                port: pair[0].1.clone(),
                span: span.clone(),
            },
            to: End {
                node: pair[1].0.clone(),
                port: pair[1].1.clone(),
                span: span.clone(),
            },
            capacity: None,
        })
        .collect())
}

fn describe((node, port): &(String, Option<String>)) -> String {
    match port {
        Some(p) => format!("{node}.{p}"),
        None => node.clone(),
    }
}

/// `"node.port"` → (`node`, `port`).
fn split_end(end: &str) -> Result<(&str, &str), String> {
    end.rsplit_once('.')
        .filter(|(n, p)| !n.is_empty() && !p.is_empty())
        .ok_or_else(|| format!("'{end}' must name a node and a port as node.port"))
}

/// Connects one edge, returning its ends, or the place and words of what is wrong.
pub(super) fn connect(graph: &mut Graph, edge: &EdgeSpec) -> Result<Edge, (Range<usize>, String)> {
    let label = &edge.label;
    let id = |end: &End| {
        graph.node_id(&end.node).ok_or_else(|| {
            (
                end.span.clone(),
                format!("{label}: no node named '{}'", end.node),
            )
        })
    };
    let (from, to) = (id(&edge.from)?, id(&edge.to)?);
    let from_port = only_port(graph, &edge.from, false)
        .map_err(|m| (edge.from.span.clone(), format!("{label}: {m}")))?;
    let to_port = only_port(graph, &edge.to, true)
        .map_err(|m| (edge.to.span.clone(), format!("{label}: {m}")))?;
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
            edge.to.span.clone()
        }
        _ => edge.from.span.clone(),
    };
    graph
        .connect_with(from, &from_port, to, &to_port, capacity)
        .map_err(|e| (blame(&e), format!("{label}: {e}")))?;
    Ok((
        edge.from.node.clone(),
        from_port,
        edge.to.node.clone(),
        to_port,
    ))
}

/// The port an end names, or the node's only input (output) when it names none.
fn only_port(graph: &Graph, end: &End, input: bool) -> Result<String, String> {
    if let Some(port) = &end.port {
        return Ok(port.clone());
    }
    let side = if input { "input" } else { "output" };
    let ports = graph
        .node_id(&end.node)
        .and_then(|id| graph.ports(id))
        .map(|p| if input { &p.inputs } else { &p.outputs })
        .map(|list| list.iter().map(|p| p.name.clone()).collect::<Vec<_>>())
        .unwrap_or_default();
    match ports.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(format!("node '{}' has no {side}", end.node)),
        many => Err(format!(
            "node '{}' has {} {side}s ({}): name one, as {}.{}",
            end.node,
            many.len(),
            many.join(", "),
            end.node,
            many[0]
        )),
    }
}
