//! The live graph changes `sluice run --control SOCKET` serves on its control socket, beside
//! `set`, `list` and `stop` (see `sluice_runtime::live` for what each does to the graph):
//!
//! | command | reply |
//! |---|---|
//! | `attach NAME FILE [at N]` | `ok attached NAME: FROM -> TO from item N, …` |
//! | `detach NAME [drain\|drop]` | `ok detached NAME (drain): ITEMS items in` |
//! | `replace NODE at N TYPE [PARAM=VALUE …]` | `ok replaced NODE from input item N (output item M)` |
//! | `branches` | `ok NAME NAME …` |
//!
//! FILE is a branch file (a graph file whose `[[feed]]` tables name the running graph's
//! outputs its inputs read); the server reads it, so `sluice ctl` sends an absolute path. Only
//! clients that pass the socket's credential check (the graph's user or root) get here.

use sluice_graph::{Override, Params, Registry};
use sluice_runtime::control_socket::{shown, MoreCommands};
use sluice_runtime::{Branch, Detach, LiveGraph, RunOptions};
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// How long `replace` waits for the node to reach its offset before answering.
const REPLACE_WAIT: Duration = Duration::from_secs(20);

/// The most branches attached at once.
const MAX_BRANCHES: usize = 64;

/// The live changes of one run, served on its control socket.
pub struct GraphChanges {
    live: LiveGraph,
    registry: Registry,
    branches: Mutex<BTreeMap<String, Branch>>,
}

impl GraphChanges {
    /// Changes for the run that `live` follows, building blocks from `registry`.
    pub fn new(live: LiveGraph, registry: Registry) -> Self {
        GraphChanges {
            live,
            registry,
            branches: Mutex::new(BTreeMap::new()),
        }
    }

    /// After the run: waits for the branches still attached (their inputs have ended) and
    /// says how each ended.
    pub fn finish(&self) {
        let branches = std::mem::take(&mut *self.lock());
        for (name, branch) in branches {
            match branch.wait() {
                Ok(report) => eprintln!(
                    "sluice: branch '{name}' finished with the graph: {} items in",
                    items_in(&report)
                ),
                Err(e) => eprintln!("sluice: branch '{name}' failed: {e}"),
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Branch>> {
        self.branches.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn attach(&self, rest: &str) -> Result<String, String> {
        let words: Vec<&str> = rest.split_whitespace().collect();
        let (name, file, at) = match words.as_slice() {
            [name, file] => (*name, *file, None),
            [name, file, "at", n] => {
                let n = n
                    .parse::<u64>()
                    .map_err(|_| format!("'{}' is not an item index", shown(n)))?;
                (*name, *file, Some(n))
            }
            _ => return Err("use: attach NAME FILE [at N]".to_string()),
        };
        check_name(name)?;
        let (taken, count) = {
            let branches = self.lock();
            (branches.contains_key(name), branches.len())
        };
        if taken {
            return Err(format!("a branch '{name}' is attached already"));
        }
        if count >= MAX_BRANCHES {
            return Err(format!("{MAX_BRANCHES} branches are attached already"));
        }
        let path = std::path::Path::new(file);
        let text = sluice_graph::read(path).map_err(|e| shown(&e.to_string()))?;
        let loaded = sluice_graph::load_branch(&text, file, &self.registry)
            .map_err(|e| shown(&e.to_string()))?;
        if loaded.feeds.is_empty() {
            return Err(format!(
                "{}: a branch file needs a [[feed]] naming the running graph's output it reads",
                shown(file)
            ));
        }
        let feeds: Vec<(&str, &str)> = loaded
            .feeds
            .iter()
            .map(|f| (f.from.as_str(), f.to.as_str()))
            .collect();
        let branch = self
            .live
            .attach(name, loaded.graph, &feeds, at, &RunOptions::default())
            .map_err(|e| format!("{}: {}", shown(file), shown(&e.to_string())))?;
        let described: Vec<String> = feeds
            .iter()
            .zip(branch.first_items())
            .map(|((from, to), first)| format!("{from} -> {to} from item {first}"))
            .collect();
        self.lock().insert(name.to_string(), branch);
        Ok(format!(
            "ok attached {name}: {}",
            shown(&described.join(", "))
        ))
    }

    fn detach(&self, rest: &str) -> Result<String, String> {
        let words: Vec<&str> = rest.split_whitespace().collect();
        let (name, how) = match words.as_slice() {
            [name] | [name, "drain"] => (*name, Detach::Drain),
            [name, "drop"] => (*name, Detach::Drop),
            _ => return Err("use: detach NAME [drain|drop]".to_string()),
        };
        // The lock is released before `names` takes it again.
        let removed = self.lock().remove(name);
        let branch = removed.ok_or_else(|| {
            format!(
                "no branch '{}' is attached (attached: {})",
                shown(name),
                self.names()
            )
        })?;
        let word = if how == Detach::Drain {
            "drain"
        } else {
            "drop"
        };
        match branch.detach(how) {
            Ok(report) => Ok(format!(
                "ok detached {name} ({word}): {} items in",
                items_in(&report)
            )),
            Err(e) => Err(format!("branch '{name}' failed: {}", shown(&e.to_string()))),
        }
    }

    fn replace(&self, rest: &str) -> Result<String, String> {
        let usage = "use: replace NODE at N TYPE [PARAM=VALUE ...]";
        let words: Vec<&str> = rest.split_whitespace().collect();
        let [node, "at", n, kind, params @ ..] = words.as_slice() else {
            return Err(usage.to_string());
        };
        let at = n
            .parse::<u64>()
            .map_err(|_| format!("'{}' is not an item index", shown(n)))?;
        let mut values = Vec::with_capacity(params.len());
        for p in params {
            let o: Override = format!("{node}.{p}")
                .parse()
                .map_err(|e: String| shown(&e))?;
            values.push((o.param, o.value));
        }
        let new = sluice_graph::build_node(&self.registry, node, kind, Params::from_values(values))
            .map_err(|mistakes| {
                let all: Vec<String> = mistakes.into_iter().map(|m| m.message).collect();
                shown(&all.join("; "))
            })?;
        let since = self
            .live
            .replace(node, new, at)
            .and_then(|pending| pending.wait(REPLACE_WAIT))
            .map_err(|e| shown(&e.to_string()))?;
        Ok(format!(
            "ok replaced {node} from input item {at} (output item {since})"
        ))
    }

    fn names(&self) -> String {
        let names: Vec<String> = self.lock().keys().cloned().collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    }
}

/// Branch names go into replies and thread names: letters, digits, `_` and `-`, at most 64.
fn check_name(name: &str) -> Result<(), String> {
    let good = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if good {
        Ok(())
    } else {
        Err(format!(
            "'{}' cannot name a branch: use up to 64 letters, digits, '_' or '-'",
            shown(name)
        ))
    }
}

fn items_in(report: &sluice_runtime::RunReport) -> u64 {
    report.nodes.iter().map(|n| n.items_in).sum()
}

impl MoreCommands for GraphChanges {
    fn usage(&self) -> String {
        "attach NAME FILE [at N], detach NAME [drain|drop], replace NODE at N TYPE [PARAM=VALUE ...], branches".to_string()
    }

    fn reply(&self, verb: &str, rest: &str) -> Option<String> {
        let outcome = match verb {
            "attach" => self.attach(rest),
            "detach" => self.detach(rest),
            "replace" => self.replace(rest),
            "branches" if rest.is_empty() => Ok(format!("ok {}", self.names())),
            _ => return None,
        };
        Some(outcome.unwrap_or_else(|e| format!("error: {e}")))
    }
}
