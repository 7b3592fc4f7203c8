//! The block types a graph file can name: their ports, parameters, help, the files they read or
//! write, and how each is built from its parameters. A user's crate adds its own blocks with
//! [`Registry::register`].

use crate::params::{ParamError, Params};
use serde::Serialize;
use sluice_runtime::Node;
use std::fmt::Write as _;

/// One parameter of a block type, as `sluice blocks` documents it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ParamDoc {
    /// Its name in the graph file.
    pub name: &'static str,
    /// Its default as a graph file would write it, or `"required"`, or `"-"` (optional, no
    /// default: see the help).
    pub default: &'static str,
    /// What it means.
    pub help: &'static str,
}

/// Whether a block reads or writes the file one of its parameters names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileAccess {
    /// The block reads the file (a source).
    Read,
    /// The block writes the file (a sink): loading refuses a graph in which it would write a
    /// file that another node reads or writes.
    Write,
}

/// A parameter that names a file, and what the block does with it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct FileParam {
    /// The parameter's name (e.g. `path`).
    pub param: &'static str,
    /// Read or written.
    pub access: FileAccess,
}

/// Builds a node from its parameters (which it reads through [`Params`]' getters, so that any
/// parameter it never asked for is reported as unknown).
pub type BuildFn = fn(&mut Params) -> Result<Box<dyn Node>, ParamError>;

/// What a block remembers of its input stream: whether a fresh instance, started part-way
/// through a stream, reproduces an uninterrupted run's outputs (a warm standby re-primes
/// partitions of such blocks from resent input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    /// A fresh instance started at input offset `s` (a multiple of `decimation`) produces
    /// outputs numbered from `s / decimation`; its output `j` is bit-identical to the
    /// uninterrupted run's output `j` whenever `j * decimation >= s + history`.
    Finite {
        /// Input items per output item.
        decimation: u64,
        /// Input items before an output's own that it depends on.
        history: u64,
    },
    /// State that depends on the whole past (IIR, AGC, de-emphasis, counters, ...).
    Infinite,
}

/// Computes a block's [`Memory`] from its parameters (read through [`Params`]' getters, like
/// [`BuildFn`]; give it a clone of the node's parameters to keep the original's record of
/// which were used).
pub type MemoryFn = fn(&mut Params) -> Result<Memory, ParamError>;

/// The memory of a chain of blocks (each feeding the next): total decimation and the lag, in
/// output items, after which a fresh chain started at an input offset `s` that is a multiple
/// of the total decimation gives the uninterrupted run's outputs (output `j` is exact when
/// `j >= s / decimation + lag`). `None` if any is infinite (or the decimation overflows).
///
/// Stage `k` starts at its input offset `s_k` and is exact from its output
/// `s_k / D_k + lag_k`, where `lag_k = ceil((lag_{k-1} + H_k) / D_k)` (`lag_0 = 0`).
pub fn chain_memory(chain: &[Memory]) -> Option<(u64, u64)> {
    let mut decimation: u64 = 1;
    let mut lag: u64 = 0;
    for stage in chain {
        match *stage {
            Memory::Finite {
                decimation: d,
                history,
            } => {
                if d == 0 {
                    return None;
                }
                lag = lag.checked_add(history)?.div_ceil(d);
                decimation = decimation.checked_mul(d)?;
            }
            Memory::Infinite => return None,
        }
    }
    Some((decimation, lag))
}

/// A block type of the registry.
#[derive(Clone, Copy, Serialize)]
pub struct BlockType {
    /// Its `type = "…"` name in graph files.
    pub name: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Its ports, in words (types may depend on the `item` parameter).
    pub ports: &'static str,
    /// Its parameters.
    pub params: &'static [ParamDoc],
    /// Parameters that name files it reads or writes.
    pub files: &'static [FileParam],
    /// The parameters (of `params`) that can also be changed while the graph runs, through
    /// `sluice ctl` or a [`ControlHandle`](sluice_runtime::ControlHandle).
    pub settable: &'static [&'static str],
    /// A `[[node]]` entry using it, for `sluice blocks NAME`.
    pub example: &'static str,
    /// Builds it.
    #[serde(skip)]
    pub build: BuildFn,
    /// What it remembers of its input, for warm standbys; `None`: not declared (treated as
    /// infinite).
    #[serde(skip)]
    pub memory: Option<MemoryFn>,
}

impl std::fmt::Debug for BlockType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockType")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A block a crate defines, registered by type: `registry.register::<MyBlock>()`.
pub trait Block {
    /// Its description and constructor.
    fn block_type() -> BlockType;
}

/// Two block types with one name.
#[derive(Debug, Clone, thiserror::Error)]
#[error("block type '{0}' is already registered")]
pub struct DuplicateBlock(pub String);

/// The block types graph files may use.
#[derive(Default, Debug)]
pub struct Registry {
    types: Vec<BlockType>,
}

impl Registry {
    /// A registry with no block types (the DSP crate adds the standard ones with
    /// `sluice_dsp::graph_blocks::register`).
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds the block type `B`.
    pub fn register<B: Block>(&mut self) -> Result<(), DuplicateBlock> {
        self.add(B::block_type())
    }

    /// Adds a block type described by value.
    pub fn add(&mut self, block: BlockType) -> Result<(), DuplicateBlock> {
        if self.find(block.name).is_some() {
            return Err(DuplicateBlock(block.name.to_string()));
        }
        self.types.push(block);
        Ok(())
    }

    /// The block type called `name`.
    pub fn find(&self, name: &str) -> Option<&BlockType> {
        self.types.iter().find(|b| b.name == name)
    }

    /// Every block type, in the order they were registered.
    pub fn types(&self) -> &[BlockType] {
        &self.types
    }

    /// Names close to `name` (a likely typo), for error messages.
    pub fn similar(&self, name: &str) -> Vec<&'static str> {
        let mut close: Vec<(usize, &'static str)> = self
            .types
            .iter()
            .filter(|b| close_enough(name, b.name))
            .map(|b| (edit_distance(name, b.name), b.name))
            .collect();
        close.sort();
        // Only the closest: "hed" is head, not also add.
        let best = close.first().map_or(0, |&(d, _)| d);
        close
            .into_iter()
            .take_while(|&(d, _)| d == best)
            .map(|(_, n)| n)
            .take(3)
            .collect()
    }

    /// Every block as text, for `sluice blocks`.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for b in &self.types {
            let _ = writeln!(out, "{}\n    {}\n    ports: {}", b.name, b.help, b.ports);
            for p in b.params {
                let _ = writeln!(
                    out,
                    "    {:<12} [{}] {}{}",
                    p.name,
                    p.default,
                    p.help,
                    settable_note(b, p.name)
                );
            }
            out.push('\n');
        }
        out
    }

    /// One block in full, with an example, for `sluice blocks NAME`.
    pub fn describe_one(&self, name: &str) -> Option<String> {
        let b = self.find(name)?;
        let mut out = format!(
            "{}\n\n{}\n\nports: {}\n\nparameters:\n",
            b.name, b.help, b.ports
        );
        if b.params.is_empty() {
            out.push_str("    (none)\n");
        }
        for p in b.params {
            let _ = writeln!(
                out,
                "    {:<12} default {:<10} {}{}",
                p.name,
                p.default,
                p.help,
                settable_note(b, p.name)
            );
        }
        if !b.settable.is_empty() {
            let _ = writeln!(
                out,
                "\nwhile running, change {} with `sluice ctl SOCKET set NODE.PARAM=VALUE` \
                 (run the graph with `sluice run --control SOCKET`)",
                b.settable.join(", ")
            );
        }
        let memory = match b.memory {
            Some(_) => "its memory is declared from its parameters: a partition with a warm standby (standby_mode = \"warm\") takes it where that memory is finite",
            None => "its memory is not declared: a partition with a warm standby refuses it (a hot standby takes any block)",
        };
        let _ = writeln!(out, "\n{memory}");
        for f in b.files {
            let verb = match f.access {
                FileAccess::Read => "reads",
                FileAccess::Write => "writes",
            };
            let _ = writeln!(out, "\n{verb} the file named by '{}'", f.param);
        }
        let _ = write!(out, "\nexample:\n\n{}\n", b.example.trim_end());
        Some(out)
    }

    /// Every block as JSON, for `sluice blocks --json`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.types).expect("block descriptions serialise")
    }
}

/// " (settable while running)" for the parameters a block lets users change while it runs.
fn settable_note(b: &BlockType, param: &str) -> &'static str {
    if b.settable.contains(&param) {
        " (settable while running)"
    } else {
        ""
    }
}

/// Whether `typed` is probably a misspelling of `known`.
pub(crate) fn close_enough(typed: &str, known: &str) -> bool {
    edit_distance(typed, known) <= 2.max(known.len() / 4)
}

/// Levenshtein distance, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let next = (row[j + 1] + 1).min(row[j] + 1).min(prev + cost);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finite(decimation: u64, history: u64) -> Memory {
        Memory::Finite {
            decimation,
            history,
        }
    }

    #[test]
    fn chain_memory_adds_lags_through_decimations() {
        assert_eq!(chain_memory(&[]), Some((1, 0)));
        assert_eq!(chain_memory(&[finite(1, 0)]), Some((1, 0)));
        // One FIR: 126 items of history at decimation 4 → 32 outputs (31.5 rounded up).
        assert_eq!(chain_memory(&[finite(4, 126)]), Some((4, 32)));
        assert_eq!(chain_memory(&[finite(4, 128)]), Some((4, 32)));
        assert_eq!(chain_memory(&[finite(4, 129)]), Some((4, 33)));
        // FIR (D 2, H 10) → channelizer (D 8, H 56) → FM (D 1, H 1):
        // ceil(10/2) = 5, ceil((5 + 56)/8) = 8, 8 + 1 = 9.
        assert_eq!(
            chain_memory(&[finite(2, 10), finite(8, 56), finite(1, 1)]),
            Some((16, 9))
        );
        // History after a decimation costs whole outputs; before it, a fraction of one.
        assert_eq!(chain_memory(&[finite(8, 0), finite(1, 9)]), Some((8, 9)));
        assert_eq!(chain_memory(&[finite(1, 9), finite(8, 0)]), Some((8, 2)));
    }

    #[test]
    fn chain_memory_is_none_for_infinite_or_absurd_stages() {
        assert_eq!(chain_memory(&[finite(2, 3), Memory::Infinite]), None);
        assert_eq!(chain_memory(&[Memory::Infinite]), None);
        assert_eq!(chain_memory(&[finite(0, 3)]), None);
        assert_eq!(
            chain_memory(&[finite(1 << 40, 0), finite(1 << 40, 0)]),
            None
        );
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("head", "head"), 0);
        assert_eq!(edit_distance("hed", "head"), 1);
        assert_eq!(edit_distance("null_snk", "null_sink"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
