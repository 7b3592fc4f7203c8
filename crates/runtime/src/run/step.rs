//! The deterministic scheduler: every node's `work` in turn on the calling thread.

use super::is_normal_end;
use crate::graph::BuiltNode;
use crate::node::Work;
use crate::stats::{NodeStats, RunReport};
use crate::RuntimeError;
use std::time::Instant;

/// Runs until every node is done. A full pass in which no node moves is an artificial deadlock.
pub(crate) fn run(mut nodes: Vec<BuiltNode>) -> Result<RunReport, RuntimeError> {
    let start = Instant::now();
    let mut stats: Vec<NodeStats> = nodes
        .iter()
        .map(|n| NodeStats {
            name: n.name.clone(),
            ..NodeStats::default()
        })
        .collect();
    let mut last: Vec<Option<Work>> = vec![None; nodes.len()];
    let mut tags = Vec::new();
    loop {
        let mut moved = false;
        let mut live = 0;
        for (i, node) in nodes.iter_mut().enumerate() {
            if last[i] == Some(Work::Done) {
                continue;
            }
            live += 1;
            let t0 = Instant::now();
            let outcome = node.call_work();
            stats[i].busy += t0.elapsed();
            stats[i].work_calls += 1;
            node.propagate_tags(&mut tags);
            let work = match outcome {
                Ok(w) => w,
                Err(e) if is_normal_end(&e) => Work::Done,
                Err(source) => {
                    return Err(RuntimeError::NodeFailed {
                        node: node.name.clone(),
                        source,
                    })
                }
            };
            if matches!(work, Work::Progress | Work::Done) {
                moved = true;
            }
            if work == Work::Done {
                node.finish(&mut stats[i]);
            }
            last[i] = Some(work);
        }
        if live == 0 {
            break;
        }
        if !moved {
            let waits: Vec<String> = nodes
                .iter()
                .zip(&last)
                .filter_map(|(n, w)| match w {
                    Some(w @ (Work::NeedInput { .. } | Work::NeedOutput { .. })) => {
                        Some(n.describe_wait(*w))
                    }
                    _ => None,
                })
                .collect();
            return Err(RuntimeError::Deadlock {
                waits: waits.join("; "),
            });
        }
    }
    Ok(RunReport {
        nodes: stats,
        wall: start.elapsed(),
        warnings: Vec::new(),
    })
}
