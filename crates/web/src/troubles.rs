//! The live warnings list: trouble the nodes count ([`sluice_runtime::count`]: late periods,
//! dropped items, underflows), turned into dated entries as the counts rise, for the page;
//! and the errors list: each node's error as it fails.
//!
//! The log is filled when statistics are read (the statistics stream every 250 ms, or
//! `/api/stats`), on the reader's thread: a graph thread never waits for it.

use serde_json::{json, Value};
use sluice_runtime::{NodeCounts, Troubles};
use std::collections::{HashMap, VecDeque};

/// Entries kept; older ones fall off (the counters in `/metrics` keep the totals).
pub(crate) const MAX_ENTRIES: usize = 64;

/// One rise of a node's trouble count.
#[derive(Debug, Clone)]
struct Entry {
    elapsed_s: f64,
    node: String,
    kind: &'static str,
    added: u64,
    total: u64,
}

/// A node's error, dated when first seen.
#[derive(Debug, Clone)]
struct Failure {
    elapsed_s: f64,
    node: String,
    text: String,
}

/// The newest entries, and the counts they were computed from; the errors.
#[derive(Debug, Default)]
pub(crate) struct TroubleLog {
    seen: HashMap<String, Troubles>,
    entries: VecDeque<Entry>,
    /// At most one per node (a node fails once), so bounded by the graph.
    failures: Vec<Failure>,
}

impl TroubleLog {
    /// Adds an entry for every count that rose since the last call.
    pub(crate) fn update(&mut self, elapsed_s: f64, nodes: &[NodeCounts]) {
        for n in nodes {
            if let Some(text) = &n.error {
                if !self.failures.iter().any(|f| f.node == n.name) {
                    self.failures.push(Failure {
                        elapsed_s,
                        node: n.name.clone(),
                        text: text.clone(),
                    });
                }
            }
            if n.troubles.is_zero() {
                continue;
            }
            let before = self.seen.get(&n.name).copied().unwrap_or_default();
            let t = n.troubles;
            for (kind, now, was) in [
                ("late", t.late, before.late),
                ("dropped", t.dropped, before.dropped),
                ("underflow", t.underflow, before.underflow),
            ] {
                if now > was {
                    if self.entries.len() == MAX_ENTRIES {
                        self.entries.pop_front();
                    }
                    self.entries.push_back(Entry {
                        elapsed_s,
                        node: n.name.clone(),
                        kind,
                        added: now - was,
                        total: now,
                    });
                }
            }
            self.seen.insert(n.name.clone(), t);
        }
    }

    /// The errors, oldest first: `{elapsed_s, node, text}`.
    pub(crate) fn errors_json(&self) -> Value {
        self.failures
            .iter()
            .map(|f| json!({"elapsed_s": f.elapsed_s, "node": f.node, "text": f.text}))
            .collect()
    }

    /// The entries, oldest first: `{elapsed_s, node, kind, added, total, text}`.
    pub(crate) fn to_json(&self) -> Value {
        self.entries
            .iter()
            .map(|e| {
                let what = match e.kind {
                    "late" => format!("{} deadline(s) missed", e.added),
                    "dropped" => format!("{} item(s) dropped: the graph fell behind", e.added),
                    _ => format!("{} item(s) of zeros played: input came late", e.added),
                };
                json!({
                    "elapsed_s": e.elapsed_s, "node": e.node, "kind": e.kind,
                    "added": e.added, "total": e.total,
                    "text": format!("{what} ({} in all)", e.total),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(name: &str, dropped: u64) -> NodeCounts {
        NodeCounts {
            name: name.into(),
            length: None,
            items_in: 0,
            items_out: 0,
            work_calls: 0,
            busy: Default::default(),
            waiting: Default::default(),
            troubles: Troubles {
                dropped,
                ..Troubles::default()
            },
            bytes: Default::default(),
            error: None,
        }
    }

    #[test]
    fn an_entry_per_rise_and_the_oldest_fall_off() {
        let mut log = TroubleLog::default();
        log.update(0.0, &[counts("a", 0)]);
        assert_eq!(log.to_json().as_array().unwrap().len(), 0);
        log.update(1.0, &[counts("a", 5)]);
        log.update(2.0, &[counts("a", 5)]);
        log.update(3.0, &[counts("a", 7)]);
        let v = log.to_json();
        let v = v.as_array().unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[1]["added"], 2);
        assert_eq!(v[1]["total"], 7);
        assert_eq!(v[1]["kind"], "dropped");
        for i in 0..(2 * MAX_ENTRIES as u64) {
            log.update(4.0, &[counts("a", 8 + i)]);
        }
        assert_eq!(log.to_json().as_array().unwrap().len(), MAX_ENTRIES);
    }

    #[test]
    fn a_node_error_is_listed_once_dated_when_first_seen() {
        let mut log = TroubleLog::default();
        let mut failed = counts("<b>x</b>", 0);
        log.update(1.0, std::slice::from_ref(&failed));
        assert_eq!(log.errors_json(), json!([]));
        failed.error = Some("node '<b>x</b>' failed: boom".into());
        log.update(2.0, std::slice::from_ref(&failed));
        log.update(3.0, std::slice::from_ref(&failed));
        assert_eq!(
            log.errors_json(),
            json!([{"elapsed_s": 2.0, "node": "<b>x</b>", "text": "node '<b>x</b>' failed: boom"}])
        );
    }
}
