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

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("head", "head"), 0);
        assert_eq!(edit_distance("hed", "head"), 1);
        assert_eq!(edit_distance("null_snk", "null_sink"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
