//! The deterministic scheduler: every node's `work` in turn on the calling thread.

use super::SpinGuard;
use crate::graph::BuiltNode;
use crate::node::Work;
use crate::stats::{NodeStats, RunReport};
use crate::RuntimeError;
use std::time::Instant;

/// Runs until every node is done. A full pass in which no node moves is an artificial deadlock,
/// unless some node's need is already met (then that node has a bug, reported by name).
pub(crate) fn run(
    mut nodes: Vec<BuiltNode>,
    stop: Option<&super::StopHandle>,
) -> Result<RunReport, RuntimeError> {
    let start = Instant::now();
    let mut stats: Vec<NodeStats> = nodes
        .iter()
        .map(|n| NodeStats {
            name: n.name.clone(),
            ..NodeStats::default()
        })
        .collect();
    let mut last: Vec<Option<Work>> = vec![None; nodes.len()];
    let mut spin: Vec<SpinGuard> = nodes.iter().map(|_| SpinGuard::default()).collect();
    let mut tags = Vec::new();
    let mut stopped = false;
    loop {
        let mut moved = false;
        let mut live = 0;
        if !stopped && stop.is_some_and(super::StopHandle::is_stopped) {
            // A graceful stop: the sources end, the rest drains.
            stopped = true;
            for (i, node) in nodes.iter_mut().enumerate() {
                if node.is_source() && last[i] != Some(Work::Done) {
                    node.finish(&mut stats[i]);
                    last[i] = Some(Work::Done);
                }
            }
        }
        for (i, node) in nodes.iter_mut().enumerate() {
            if last[i] == Some(Work::Done) {
                continue;
            }
            live += 1;
            let t0 = Instant::now();
            let outcome = node.step(
                &mut tags,
                super::StopView {
                    request: stop,
                    abort: None,
                },
            );
            let slept = crate::stats::take_slept();
            stats[i].busy += t0.elapsed().saturating_sub(slept);
            stats[i].sleeping += slept;
            stats[i].troubles.add(crate::stats::take_counted().troubles);
            stats[i].work_calls += 1;
            let work = match outcome {
                Ok(work) => work,
                Err(e) => {
                    // Ending every node releases the queues, as the threaded scheduler does.
                    for (n, s) in nodes.iter_mut().zip(stats.iter_mut()) {
                        n.finish(s);
                    }
                    return Err(e);
                }
            };
            if matches!(work, Work::Progress | Work::Done) {
                moved = true;
                spin[i].reset();
            }
            if work == Work::Done {
                node.finish(&mut stats[i]);
            }
            last[i] = Some(work);
        }
        if live == 0 {
            break;
        }
        if moved {
            continue;
        }
        let mut any_met = false;
        for ((node, work), guard) in nodes.iter_mut().zip(&last).zip(spin.iter_mut()) {
            if let Some(w @ (Work::NeedInput { .. } | Work::NeedOutput { .. })) = *work {
                any_met |= guard.check(node, w)?;
            }
        }
        if !any_met {
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
        threads: 1,
        scheduling: "stepped on the calling thread".to_string(),
        stopped,
        warnings: Vec::new(),
    })
}
