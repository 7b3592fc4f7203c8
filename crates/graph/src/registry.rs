//! The block types a graph file can name, held by their declarations ([`BlockType`]), and what
//! is derived from them: `sluice blocks` as text and JSON, and the names close to a misspelt
//! one. A user's crate adds its own blocks with [`Registry::register`].

use crate::decl::{port, BlockType, Family};
use crate::FileAccess;
use std::fmt::Write as _;

/// Two block types with one name.
#[derive(Debug, Clone, thiserror::Error)]
#[error("block type '{0}' is already registered")]
pub struct DuplicateBlock(pub String);

/// The block types graph files may use.
#[derive(Default, Debug, Clone)]
pub struct Registry {
    types: Vec<BlockType>,
}

impl Registry {
    /// A registry with no block types (`sluice_blocks::standard_registry()` has the standard
    /// ones).
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds the block type `B`.
    pub fn register<B: crate::Block>(&mut self) -> Result<(), DuplicateBlock> {
        self.add(B::block_type())
    }

    /// Adds a block type.
    pub fn add(&mut self, block: BlockType) -> Result<(), DuplicateBlock> {
        if self.find(&block.name).is_some() {
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

    /// The block a GNU Radio user means by `name`, and GNU Radio's name for it: `name` may
    /// carry GNU Radio's module (`analog.quadrature_demod_cf`) and item-type suffix (`_cf`).
    pub fn from_gnuradio(&self, name: &str) -> Option<(&BlockType, &str)> {
        let bare = name.rsplit('.').next().unwrap_or(name).to_ascii_lowercase();
        // GNU Radio spells item types as suffixes: _cc, _ccf, _ff, _c, _vcc, …
        let stem = bare
            .rsplit_once('_')
            .filter(|(_, s)| s.len() <= 4 && s.chars().all(|c| "bcfisvz".contains(c)))
            .map(|(stem, _)| stem);
        self.types.iter().find_map(|b| {
            let g = b
                .gnuradio
                .iter()
                .find(|g| **g == bare || Some(&***g) == stem)?;
            Some((b, g.as_ref()))
        })
    }

    /// What to tell someone who named the unknown block type `name`: GNU Radio's block of
    /// that name, a likely misspelling, or where the list is.
    pub fn hint(&self, name: &str) -> String {
        if let Some((b, g)) = self.from_gnuradio(name) {
            return format!("did you mean {}? (GNU Radio: {g})", b.name);
        }
        let similar = self.similar(name);
        if similar.is_empty() {
            "`sluice blocks` lists them".to_string()
        } else {
            format!("did you mean {}?", similar.join(" or "))
        }
    }

    /// Names close to `name` (a likely typo), for error messages.
    pub fn similar(&self, name: &str) -> Vec<&str> {
        let mut close: Vec<(usize, &str)> = self
            .types
            .iter()
            .filter(|b| close_enough(name, &b.name))
            .map(|b| (edit_distance(name, &b.name), b.name.as_ref()))
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

    /// Every block, one line each, grouped by family, for `sluice blocks`.
    pub fn describe(&self) -> String {
        let mut families: Vec<Family> = self.types.iter().map(|b| b.family).collect();
        families.sort();
        families.dedup();
        let mut out = String::new();
        for family in families {
            let _ = writeln!(out, "{family}:");
            for b in self.types.iter().filter(|b| b.family == family) {
                let _ = writeln!(out, "  {:<20} {}", b.name, brief(&b.help));
            }
            out.push('\n');
        }
        out.push_str("`sluice blocks NAME` shows one block in full, `--json` all of them.\n");
        out
    }

    /// One block in full, with an example, for `sluice blocks NAME`.
    pub fn describe_one(&self, name: &str) -> Option<String> {
        let b = self
            .find(name)
            .or_else(|| Some(self.from_gnuradio(name)?.0))?;
        let mut out = format!("{} ({})\n\n{}\n", b.name, b.family, b.help);
        if !b.gnuradio.is_empty() {
            let _ = writeln!(out, "\nGNU Radio: {}", b.gnuradio.join(", "));
        }
        let _ = write!(
            out,
            "\nports: {}\n\nparameters:\n",
            port::describe(&b.ports)
        );
        if b.params.is_empty() {
            out.push_str("    (none)\n");
        }
        // Two lines a parameter: name, kind and default; then what it means.
        let width = b.params.iter().map(|p| p.name.len()).max().unwrap_or(0);
        for p in &b.params {
            let unit = p.unit.as_deref().map_or(String::new(), |u| format!(" {u}"));
            let mut notes = vec![p.kind.describe()];
            match (p.min, p.max) {
                (Some(lo), Some(hi)) => notes.push(format!("{lo} to {hi}{unit}")),
                (Some(lo), None) if lo != 0.0 => notes.push(format!("at least {lo}{unit}")),
                (None, Some(hi)) => notes.push(format!("at most {hi}{unit}")),
                _ if !unit.is_empty() => notes.push(unit.trim().to_string()),
                _ => {}
            }
            match (p.file, &p.labels) {
                (Some(FileAccess::WritePattern), Some(labels)) => notes.push(format!(
                    "a pattern naming the files it writes, one per label ({}, or 0 to {} − 1)",
                    labels.list, labels.count
                )),
                (Some(FileAccess::WritePattern), None) => {
                    notes.push("a pattern naming the files it writes".into())
                }
                (Some(access), _) => notes.push(format!("a file it {}", access_verb(access))),
                (None, _) => {}
            }
            if p.settable {
                notes.push("settable".into());
            }
            let _ = writeln!(
                out,
                "  {:<width$}  {}; default {}\n  {:<width$}  {}",
                p.name,
                notes.join("; "),
                p.default_text(),
                "",
                p.help,
            );
        }
        let settable: Vec<&str> = b.settable().collect();
        if !settable.is_empty() {
            let _ = writeln!(
                out,
                "\nwhile the graph runs, change {} with `sluice ctl SOCKET set NODE.PARAM=VALUE` \
                 (run the graph with `sluice run --control SOCKET`)",
                settable.join(", ")
            );
        }
        let _ = write!(out, "\nexample:\n\n{}\n", b.example_node());
        Some(out)
    }

    /// The reference of every block in Markdown, grouped by family (`docs/blocks.md`).
    pub fn reference_markdown(&self) -> String {
        let mut families: Vec<Family> = self.types.iter().map(|b| b.family).collect();
        families.sort();
        families.dedup();
        let mut out = String::from(
            "# Blocks\n\nEvery block type a graph file can name, generated from the blocks' \
             declarations by `sluice blocks --markdown` (a test checks that this file is current).\n",
        );
        for family in families {
            let _ = writeln!(out, "\n## {family}\n");
            for b in self.types.iter().filter(|b| b.family == family) {
                let _ = writeln!(out, "### `{}`\n\n{}\n", b.name, b.help);
                if !b.gnuradio.is_empty() {
                    let _ = writeln!(out, "GNU Radio: `{}`\n", b.gnuradio.join("`, `"));
                }
                let _ = writeln!(out, "Ports: `{}`\n", port::describe(&b.ports));
                if !b.params.is_empty() {
                    out.push_str("| parameter | kind | default | meaning |\n|---|---|---|---|\n");
                    for p in &b.params {
                        let mut meaning = p.help.replace('|', "\\|");
                        if let Some(unit) = &p.unit {
                            meaning.push_str(&format!(" ({unit})"));
                        }
                        if p.settable {
                            meaning.push_str("; settable while running");
                        }
                        let _ = writeln!(
                            out,
                            "| `{}` | {} | {} | {meaning} |",
                            p.name,
                            p.kind.describe().replace('|', "\\|"),
                            p.default_text().replace('|', "\\|")
                        );
                    }
                    out.push('\n');
                }
                let _ = writeln!(out, "```toml\n{}\n```", b.example_node());
            }
        }
        out
    }

    /// Every block as JSON, for `sluice blocks --json`: the declarations; no node is built.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.types).expect("block declarations serialise")
    }
}

/// The first sentence of `help`, cut to fit an 100-column line after the block's name.
fn brief(help: &str) -> String {
    const WIDTH: usize = 76;
    let line = help.lines().next().unwrap_or("");
    let sentence = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    if sentence.chars().count() <= WIDTH {
        return sentence.to_string();
    }
    // At a clause or a word, whichever keeps more.
    let cut: String = sentence.chars().take(WIDTH - 1).collect();
    let at = cut
        .rfind(['(', ';', ':'])
        .filter(|&i| i > WIDTH / 2)
        .or_else(|| cut.rfind(' '))
        .unwrap_or(cut.len());
    format!("{}…", cut[..at].trim_end_matches([',', ';', ':', ' ', '…']))
}

fn access_verb(access: FileAccess) -> &'static str {
    match access {
        FileAccess::Read => "reads",
        FileAccess::Write => "writes",
        FileAccess::WritePattern => "writes (named by a pattern)",
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
