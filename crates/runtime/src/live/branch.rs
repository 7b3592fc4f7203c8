//! Branches: graphs that read a running graph's outputs, added and taken away while it runs.

use super::{item_text, split_port, LiveError, LiveGraph};
use crate::graph::Graph;
use crate::run::{self, RunOptions};
use crate::stats::RunReport;
use crate::RuntimeError;
use sluice_queue::ReadLimit;
use std::sync::{Arc, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How [`Branch::detach`] ends a branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detach {
    /// The branch reads on to the item each of its feeds has published by now, then its
    /// inputs end: it finishes on everything it was given, and its sinks close normally.
    Drain,
    /// The branch's inputs end where it has read to; what is already inside it still drains.
    Drop,
}

/// A branch running beside a graph; see [`LiveGraph::attach`]. Dropping it leaves the branch
/// running until the graph's stream ends (as [`Branch::wait`] would).
pub struct Branch {
    name: String,
    live: LiveGraph,
    /// Each feed's reader limit, with its first item.
    feeds: Vec<(Arc<ReadLimit>, u64)>,
    thread: Option<JoinHandle<Result<RunReport, RuntimeError>>>,
}

impl std::fmt::Debug for Branch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Branch({})", self.name)
    }
}

impl Branch {
    /// The branch's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The index, in the running graph's output stream, of the first item each feed gives the
    /// branch (in the order the feeds were given).
    pub fn first_items(&self) -> Vec<u64> {
        self.feeds.iter().map(|(_, first)| *first).collect()
    }

    /// Whether the branch has ended (its inputs ended, or it failed).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Takes the branch away as `how` says and waits for it to finish; returns its report.
    pub fn detach(mut self, how: Detach) -> Result<RunReport, RuntimeError> {
        for (limit, _) in &self.feeds {
            match how {
                Detach::Drain => limit.end_at(limit.items_written()),
                Detach::Drop => limit.end_at(0),
            }
        }
        self.join()
    }

    /// Waits for the branch to end by itself (when the running graph's stream ends).
    pub fn wait(mut self) -> Result<RunReport, RuntimeError> {
        self.join()
    }

    fn join(&mut self) -> Result<RunReport, RuntimeError> {
        let result = match self.thread.take() {
            Some(thread) => thread.join().unwrap_or_else(|panic| {
                Err(RuntimeError::NodePanicked {
                    node: self.name.clone(),
                    message: crate::run::panic_message(panic.as_ref()),
                })
            }),
            None => Ok(RunReport::default()),
        };
        self.live
            .0
            .branches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|n| n != &self.name);
        result
    }
}

impl LiveGraph {
    /// Runs `branch` beside the running graph, its inputs fed by the graph's outputs:
    /// `feeds` pairs an output of the running graph with an input of the branch, both as
    /// `node.port`. Every feed starts at `at`, an item index of the output (`None`: the next
    /// item it publishes), which the output's queue must still hold. The branch runs on threads
    /// of its own as `opts` says (its deadlock watch is off: it waits on the running graph,
    /// which may pause). `name` names it in [`LiveGraph::branch_names`] and errors.
    pub fn attach(
        &self,
        name: &str,
        branch: Graph,
        feeds: &[(&str, &str)],
        at: Option<u64>,
        opts: &RunOptions,
    ) -> Result<Branch, LiveError> {
        let running = self.running()?;
        let mut external = Vec::with_capacity(feeds.len());
        let mut limits = Vec::with_capacity(feeds.len());
        for &(output, input) in feeds {
            let source = self.output(output)?;
            let (bn, bp) = split_port(input)?;
            let (ni, pi) = branch.input_port(bn, bp).map_err(LiveError::Branch)?;
            let spec = &branch.nodes[ni].ports.inputs[pi];
            if spec.item != source.spec.item
                || spec.vlen != source.spec.vlen
                || spec.message.is_some()
            {
                return Err(LiveError::TypeMismatch {
                    output: output.to_string(),
                    output_type: item_text(&source.spec),
                    input: input.to_string(),
                    input_type: item_text(spec),
                });
            }
            let super::Attached {
                input: reader,
                limit,
                first,
            } = source
                .point
                .attach(at)
                .map_err(|source| LiveError::NotInRing {
                    output: output.to_string(),
                    at: at.unwrap_or(0),
                    source,
                })?;
            limits.push((limit, first));
            external.push(((ni, pi), reader));
        }
        let mut branch = branch;
        let (queue_options, default_bytes) =
            (running.queue_options.clone(), running.default_queue_bytes);
        branch.set_queue_options(queue_options);
        branch.set_default_queue_bytes(default_bytes);
        let built = branch.build_with(external).map_err(LiveError::Branch)?;
        let opts = RunOptions {
            deadlock_timeout: Duration::MAX,
            ..opts.clone()
        };
        let thread = std::thread::Builder::new()
            .name(format!("branch {name}"))
            .spawn(move || run::threaded::run(built, &opts))
            .map_err(|e| LiveError::Spawn(e.to_string()))?;
        self.0
            .branches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(name.to_string());
        Ok(Branch {
            name: name.to_string(),
            live: self.clone(),
            feeds: limits,
            thread: Some(thread),
        })
    }
}
