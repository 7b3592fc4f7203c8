//! Schedulers: one thread per node (the default), and a deterministic single-thread stepper.

pub(crate) mod step;
pub(crate) mod threaded;

use crate::graph::BuiltNode;
use crate::io::WorkIo;
use crate::node::{TagPolicy, Work};
use crate::stats::NodeStats;
use crate::NodeError;
use sluice_queue::Tag;
use std::time::Duration;

/// How to run a graph with one thread per node.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Threads to run the nodes on. `None` (the default) gives each node its own thread, the
    /// Computational Process Network model. `Some(n)` runs the nodes, in the order they were
    /// added, as `n` contiguous groups, each on one thread that works its nodes in turn: no
    /// context switch between the nodes of a group, and a chunk of items passes through the
    /// whole group while it is still in cache. On a machine with few cores and a long chain,
    /// one group per core is much faster. A pooled thread that cannot move blocks on one queue
    /// at a time (preferring one shared with another thread), re-checking its other nodes at
    /// least every 50 ms: best for pipelines, while graphs whose groups have several external
    /// inputs react faster with a thread per node.
    pub threads: Option<usize>,
    /// Pin thread `i` to core `i % cores`.
    pub pin_cores: bool,
    /// Ask for SCHED_FIFO at this priority (1–99) for every node thread. Where the OS refuses,
    /// the run goes on at normal priority and the report carries a warning.
    pub realtime_priority: Option<i32>,
    /// How long every node must be blocked with nothing moving before the run is stopped as a
    /// deadlock.
    pub deadlock_timeout: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            threads: None,
            pin_cores: false,
            realtime_priority: None,
            deadlock_timeout: Duration::from_secs(1),
        }
    }
}

impl BuiltNode {
    /// One call of the node's `work`.
    pub(crate) fn call_work(&mut self) -> Result<Work, NodeError> {
        let mut io = WorkIo::new(
            &mut self.inputs,
            &self.ports.inputs,
            &mut self.outputs,
            &self.ports.outputs,
        );
        self.node.work(&mut io)
    }

    /// Moves tags on consumed input items to the outputs, rescaled by the node's policy.
    pub(crate) fn propagate_tags(&mut self, buf: &mut Vec<Tag>) {
        for input in &self.inputs {
            input.take_tags(buf);
        }
        if buf.is_empty() {
            return;
        }
        if let TagPolicy::Ratio {
            interpolation,
            decimation,
        } = self.policy
        {
            for tag in buf.iter() {
                let index = (u128::from(tag.index) * u128::from(interpolation)
                    / u128::from(decimation.max(1))) as u64;
                for output in &self.outputs {
                    output.add_tag(Tag {
                        index,
                        ..tag.clone()
                    });
                }
            }
        }
        buf.clear();
    }

    /// Words for what the node waits on, for deadlock reports.
    pub(crate) fn describe_wait(&self, work: Work) -> String {
        match work {
            Work::NeedInput { port, items } => match self.inputs.get(port) {
                Some(q) => format!(
                    "'{}' waits for {items} items on input {} (queue {}, capacity {}, {} available)",
                    self.name,
                    self.ports.inputs[port].name,
                    q.queue(),
                    q.capacity(),
                    q.items_written() - q.items_read()
                ),
                None => format!("'{}' waits on missing input {port}", self.name),
            },
            Work::NeedOutput { port, items } => match self.outputs.get(port) {
                Some(q) => format!(
                    "'{}' waits for room for {items} items on output {} (queue {}, capacity {})",
                    self.name,
                    self.ports.outputs[port].name,
                    q.queue(),
                    q.capacity()
                ),
                None => format!("'{}' waits on missing output {port}", self.name),
            },
            Work::Progress | Work::Done => format!("'{}' is running", self.name),
        }
    }

    /// Whether the queue behind `work`'s need connects to a node outside `members`.
    pub(crate) fn waits_outside(&self, work: Work, members: &[usize]) -> bool {
        match work {
            Work::NeedInput { port, .. } => self
                .input_peers
                .get(port)
                .is_some_and(|p| !members.contains(p)),
            Work::NeedOutput { port, .. } => self
                .output_peers
                .get(port)
                .is_some_and(|ps| ps.iter().any(|p| !members.contains(p))),
            Work::Progress | Work::Done => false,
        }
    }

    /// Ends the node: records item counts, ends its output streams, detaches its inputs.
    pub(crate) fn finish(&mut self, stats: &mut NodeStats) {
        stats.items_in = self.inputs.iter().map(|i| i.items_read()).sum();
        stats.items_out = self.outputs.iter().map(|o| o.items_written()).sum();
        self.outputs.clear();
        self.inputs.clear();
    }
}

/// Whether an error from `work` is the normal end of a node whose readers all left.
pub(crate) fn is_normal_end(err: &NodeError) -> bool {
    matches!(err, NodeError::OutputClosed { .. })
}
