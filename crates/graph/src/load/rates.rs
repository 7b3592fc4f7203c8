//! Rates that follow the stream: before any node is built, the loader computes each node's
//! output rate from the sources' (their parameters or files) through every declared rate
//! change (see [`Rate`]). A parameter declared to follow the stream
//! ([`ParamDecl::follows_stream`](crate::ParamDecl::follows_stream)) takes that rate when the
//! file leaves it out; a rate the file gives that disagrees is a mistake naming both nodes and
//! both rates, as are the inputs of one node running at different rates.

use super::node::{MistakeKind, NodeMistake};
use crate::decl::rate::{describe, same_rate, Rate};
use crate::params::Params;
use crate::registry::Registry;
use crate::{BlockType, ParamKind};
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Value;

/// A node whose parameters passed their declaration's checks, not yet built.
pub(super) struct Checked<'a> {
    pub name: String,
    pub block: &'a BlockType,
    pub params: Params,
    /// Its `[[node]]` table in the file.
    pub span: Range<usize>,
}

/// A rate known at load time, and the node that set it (a source or a rate change).
#[derive(Debug, Clone, PartialEq)]
pub struct KnownRate {
    /// Items per second.
    pub hz: f64,
    /// The node whose parameters or file gave this rate.
    pub origin: String,
}

/// A mistake: where, which node, what, and the parameter it concerns (if one).
pub(super) type Mistake = (Range<usize>, String, String, Option<String>);

/// A node of a graph built in code rather than read from a file, for [`follow_rates`].
#[derive(Debug, Clone)]
pub struct CodeNode {
    /// Its name.
    pub name: String,
    /// Its block type's name.
    pub kind: String,
    /// Its parameters as given; [`follow_rates`] fills in those that follow the stream.
    pub params: Params,
}

/// An edge of a graph built in code: from node, its output port (when named; a node with one
/// output may be named alone), to node.
pub type CodeEdge = (String, Option<String>, String);

/// Follows rates through a graph built in code exactly as loading a graph file does: each
/// node's output rate where it is known before the graph runs, and the parameters that follow
/// the stream filled into `nodes` where they were left out. The mistakes are those a file
/// would have (a given rate that disagrees with the stream's, inputs at different rates), in
/// the same words. Nodes of a type the registry lacks (and so nodes added as objects rather
/// than by type name, which `nodes` leaves out) have no declared rate: rates stop there, as
/// for any node whose rate is known only when it runs. Edges from message ports carry no rate.
/// Each mistake comes with the name of the node it concerns.
pub fn follow_rates(
    registry: &Registry,
    nodes: &mut [CodeNode],
    edges: &[CodeEdge],
) -> (BTreeMap<String, KnownRate>, Vec<(String, NodeMistake)>) {
    let mut checked: Vec<Checked> = nodes
        .iter()
        .filter_map(|n| {
            Some(Checked {
                name: n.name.clone(),
                block: registry.find(&n.kind)?,
                params: n.params.clone(),
                span: 0..0,
            })
        })
        .collect();
    let pairs: Vec<(String, String)> = edges
        .iter()
        .filter(|(from, port, _)| !super::checks::sends_messages(&checked, from, port.as_deref()))
        .map(|(from, _, to)| (from.clone(), to.clone()))
        .collect();
    let (rates, mistakes) = follow(&mut checked, &pairs, &BTreeMap::new());
    for c in checked {
        if let Some(node) = nodes.iter_mut().find(|n| n.name == c.name) {
            node.params = c.params;
        }
    }
    let mistakes = mistakes
        .into_iter()
        .map(|(_, node, message, param)| {
            let kind = match param {
                Some(_) => MistakeKind::BadParam,
                None => MistakeKind::InputRates,
            };
            (
                node,
                NodeMistake {
                    kind,
                    param,
                    message,
                },
            )
        })
        .collect();
    (rates, mistakes)
}

/// Follows rates through the graph: each node's output rate where it can be known. `edges`
/// are (from node, to node) pairs. Gives stream rates to the parameters that follow them.
pub(super) fn follow(
    nodes: &mut [Checked],
    edges: &[(String, String)],
    lines: &BTreeMap<String, usize>,
) -> (BTreeMap<String, KnownRate>, Vec<Mistake>) {
    let index: BTreeMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut upstream: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (from, to) in edges {
        if let (Some(&a), Some(&b)) = (index.get(from.as_str()), index.get(to.as_str())) {
            if !upstream[b].contains(&a) {
                upstream[b].push(a);
            }
        }
    }
    // None: not decided yet; Some(None): decided, not known before the graph runs.
    let mut out: Vec<Option<Option<KnownRate>>> = vec![None; nodes.len()];
    let mut mistakes = Vec::new();
    let at = |origin: &str| match lines.get(origin) {
        Some(line) => format!("'{origin}', line {line}"),
        None => format!("'{origin}'"),
    };
    // Each round decides every node whose inputs are all decided; nodes on a cycle (reported
    // elsewhere) stay undecided.
    loop {
        let mut progress = false;
        for i in 0..nodes.len() {
            if out[i].is_some() || upstream[i].iter().any(|&u| out[u].is_none()) {
                continue;
            }
            let inputs: Vec<(String, KnownRate)> = upstream[i]
                .iter()
                .filter_map(|&u| Some((nodes[u].name.clone(), out[u].clone()??)))
                .collect();
            out[i] = Some(decide(&mut nodes[i], &inputs, &at, &mut mistakes));
            progress = true;
        }
        if !progress {
            break;
        }
    }
    let rates = nodes
        .iter()
        .zip(out)
        .filter_map(|(n, r)| Some((n.name.clone(), r??)))
        .collect();
    (rates, mistakes)
}

/// The output rate of one node whose inputs' rates are decided.
fn decide(
    node: &mut Checked,
    inputs: &[(String, KnownRate)],
    at: &dyn Fn(&str) -> String,
    mistakes: &mut Vec<Mistake>,
) -> Option<KnownRate> {
    let rule = node.block.rate_rule();
    // "from 'a', line 4", and the input's node when it is not where the rate was set.
    let from = |input: &str, rate: &KnownRate| match input == rate.origin {
        true => format!("from {}", at(input)),
        false => format!("set by {}, through '{input}'", at(&rate.origin)),
    };
    let input = inputs.first().map(|(_, r)| r.clone());
    if let (Rate::Same, Some((_, first))) = (&rule, inputs.first()) {
        if let Some((other, r)) = inputs.iter().find(|(_, r)| !same_rate(r.hz, first.hz)) {
            mistakes.push((
                node.span.clone(),
                node.name.clone(),
                format!(
                    "node '{}': its inputs run at different rates: {} ({}) and {} ({})",
                    node.name,
                    describe(first.hz),
                    from(&inputs[0].0, first),
                    describe(r.hz),
                    from(other, r),
                ),
                None,
            ));
        }
    }
    // A rate parameter the node gives stands for its stream where nothing upstream says.
    let mut given_rate = None;
    for decl in node.block.params.iter().filter(|d| d.follows_stream) {
        let given = match node.params.given(&decl.name) {
            Some(Value::Float(x)) => Some(*x),
            Some(Value::Integer(i)) => Some(*i as f64),
            _ => None,
        };
        match (given, &input) {
            // A rate that is no rate at all is the block's to refuse, in its own words.
            (Some(hz), _) if !(hz > 0.0 && hz.is_finite()) => {}
            (Some(hz), Some(stream)) if !same_rate(hz, stream.hz) => mistakes.push((
                node.params.span(&decl.name).unwrap_or(node.span.clone()),
                node.name.clone(),
                format!(
                    "node '{}': parameter '{}' = {} disagrees with the stream's rate, {} (set by {}): leave it out to follow the stream",
                    node.name,
                    decl.name,
                    describe(hz),
                    describe(stream.hz),
                    at(&stream.origin)
                ),
                Some(decl.name.to_string()),
            )),
            (Some(hz), None) => given_rate = Some(hz),
            (None, Some(stream)) => match decl.kind {
                // A whole-number parameter takes a whole rate only.
                ParamKind::Integer if stream.hz.fract() != 0.0 => mistakes.push((
                    node.span.clone(),
                    node.name.clone(),
                    format!(
                        "node '{}': parameter '{}' must be a whole number, and the stream's rate is {} Hz (set by {}): give it",
                        node.name, decl.name, stream.hz, at(&stream.origin)
                    ),
                    Some(decl.name.to_string()),
                )),
                ParamKind::Integer => node
                    .params
                    .derive(&decl.name, Value::Integer(stream.hz as i64)),
                _ => node.params.derive(&decl.name, Value::Float(stream.hz)),
            },
            _ => {}
        }
    }
    let mut params = node.params.clone();
    params.declare(&node.block.params);
    let own = |hz: Option<f64>| {
        Some(KnownRate {
            hz: hz.filter(|hz| hz.is_finite() && *hz > 0.0)?,
            origin: node.name.clone(),
        })
    };
    let input = input.or_else(|| own(given_rate));
    match rule {
        Rate::Same => input,
        Rate::Scaled(factor) => {
            let input = input?;
            match factor(&mut params)? {
                // A factor of one changes nothing: the rate is still the input's.
                1.0 => Some(input),
                f => own(Some(input.hz * f)),
            }
        }
        Rate::Fixed(rate) => own(rate(&mut params)),
        Rate::Unknown => None,
    }
}
