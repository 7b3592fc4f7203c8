//! One node from its block type and parameters, with the loader's checks and words: shared by
//! graph files and by graphs built in code (the Python package), so that a mistake reads the
//! same wherever it is made.

use crate::decl::BlockType;
use crate::params::{ParamError, Params};
use crate::registry::Registry;
use sluice_runtime::Node;

/// What kind of mistake a node has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MistakeKind {
    /// No block type of that name is registered.
    UnknownBlock,
    /// The block declares no parameter of that name.
    UnknownParam,
    /// A parameter of the wrong kind, out of range, missing, or refused by the block.
    BadParam,
    /// A block refused to be built, and it declares a parameter that follows the stream's rate
    /// which was left out and which no rate followed through the graph has filled in: the
    /// block is built once the rate is known (a graph built in code, before its edges exist).
    RateUnknown,
    /// A node whose inputs run at different rates.
    InputRates,
}

/// One mistake of a node, in the loader's words (`node 'lp': parameter 'cutoff' must be …`).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeMistake {
    /// Its kind.
    pub kind: MistakeKind,
    /// The parameter concerned, if any.
    pub param: Option<String>,
    /// The whole message, naming the node.
    pub message: String,
}

/// "node 'x': unknown block type 'y' (did you mean z?)".
pub(super) fn unknown_block(registry: &Registry, name: &str, kind: &str) -> String {
    format!(
        "node '{name}': unknown block type '{kind}' ({})",
        registry.hint(kind)
    )
}

/// The message of a parameter error of node `name`.
pub(super) fn param_message(name: &str, e: &ParamError) -> String {
    if e.param.is_empty() {
        format!("node '{name}': {}", e.message)
    } else if e.unknown {
        format!(
            "node '{name}': unknown parameter '{}' {}",
            e.param,
            e.message.trim_start_matches("is unknown ")
        )
    } else {
        format!(
            "node '{name}': parameter '{}'{}",
            e.param,
            super::joined(&e.message)
        )
    }
}

/// The declaration's checks of `params` (unknown, mistyped, out-of-range and missing
/// parameters, before any block code runs), a missing parameter that was probably misspelt
/// saying so.
pub(super) fn check_params(block: &BlockType, params: &Params) -> Vec<ParamError> {
    let mut mistakes = block.check(params);
    let misspelt: Vec<String> = mistakes
        .iter()
        .filter(|e| e.unknown)
        .map(|e| e.param.clone())
        .collect();
    for e in &mut mistakes {
        if let Some(typo) = misspelt
            .iter()
            .find(|u| !e.unknown && crate::registry::close_enough(u, &e.param))
        {
            e.message = format!("{} (the node gives '{typo}': a misspelling?)", e.message);
        }
    }
    mistakes
}

fn mistake(name: &str, e: &ParamError) -> NodeMistake {
    NodeMistake {
        kind: if e.unknown {
            MistakeKind::UnknownParam
        } else {
            MistakeKind::BadParam
        },
        param: (!e.param.is_empty()).then(|| e.param.clone()),
        message: param_message(name, e),
    }
}

/// Builds node `name` of block type `kind` from `params` as a graph file's `[[node]]` would be:
/// the type is looked up, the parameters checked against its declaration, then the block
/// builds the node. Every mistake found is returned, in the loader's words.
pub fn build_node(
    registry: &Registry,
    name: &str,
    kind: &str,
    mut params: Params,
) -> Result<Box<dyn Node>, Vec<NodeMistake>> {
    let Some(block) = registry.find(kind) else {
        return Err(vec![NodeMistake {
            kind: MistakeKind::UnknownBlock,
            param: None,
            message: unknown_block(registry, name, kind),
        }]);
    };
    let mistakes = check_params(block, &params);
    if !mistakes.is_empty() {
        return Err(mistakes.iter().map(|e| mistake(name, e)).collect());
    }
    let waits_for_rate = waits_for_rate(block, &params);
    block.instantiate(&mut params).map_err(|mut e| {
        let mut m = mistake(name, without_rate(block, &mut e));
        if waits_for_rate {
            m.kind = MistakeKind::RateUnknown;
        }
        vec![m]
    })
}

/// Whether `block` declares a parameter that follows the stream which `params` neither give
/// nor had filled in from a rate followed through the graph.
fn waits_for_rate(block: &BlockType, params: &Params) -> bool {
    block
        .params
        .iter()
        .any(|d| d.follows_stream && params.value(&d.name).is_none())
}

/// A block's "is required" for a parameter that follows the stream says why it must be given
/// here: no rate reached the node before the graph runs.
pub(super) fn without_rate<'e>(block: &BlockType, e: &'e mut ParamError) -> &'e ParamError {
    if e.message == "is required" && block.find_param(&e.param).is_some_and(|d| d.follows_stream) {
        e.message = "is required here: the stream's rate is not known before the graph runs (no node upstream declares it), so give it".into();
    }
    e
}
