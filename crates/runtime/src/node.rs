//! The node contract: declared ports, a `work` call with an explicit outcome, and tag policy.

use crate::control::ControlSpec;
use crate::io::WorkIo;
use crate::port::Ports;
use crate::NodeError;
use sluice_queue::TagValue;
use std::time::Duration;

/// What one call of [`Node::work`] achieved; it drives the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Items were consumed or produced; call again.
    Progress,
    /// Nothing could be done until input `port` holds at least `items` items (or ends): the
    /// node's firing threshold on that port.
    NeedInput {
        /// Input port index.
        port: usize,
        /// Items needed in one window.
        items: usize,
    },
    /// Nothing could be done until output `port` has room for `items` items.
    NeedOutput {
        /// Output port index.
        port: usize,
        /// Free items needed in one reservation.
        items: usize,
    },
    /// The node has finished: its outputs end, its inputs detach.
    Done,
}

/// How stream tags on a node's inputs reach its outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagPolicy {
    /// A tag on input item `i` goes to output item `i * interpolation / decimation` of every
    /// output. 1:1 nodes use `Ratio { interpolation: 1, decimation: 1 }`.
    Ratio {
        /// Output items per `decimation` input items.
        interpolation: u64,
        /// Input items per `interpolation` output items.
        decimation: u64,
    },
    /// Tags are not propagated (the node handles them itself, or they end here).
    Drop,
}

impl TagPolicy {
    /// The policy of nodes that produce one output item per input item.
    pub const ONE_TO_ONE: TagPolicy = TagPolicy::Ratio {
        interpolation: 1,
        decimation: 1,
    };
}

/// A node of a process network.
///
/// A node declares its ports once ([`Node::ports`]); the runtime then calls [`Node::work`]
/// repeatedly with slices straight into queue memory. `work` never blocks: when it cannot fire it
/// returns [`Work::NeedInput`] or [`Work::NeedOutput`] and the scheduler waits for it.
pub trait Node: Send {
    /// The node's input and output ports, with their item types.
    fn ports(&self) -> Ports;

    /// Does some work: read windows from inputs, reserve and commit outputs, consume inputs.
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError>;

    /// How tags travel through this node (by default 1:1).
    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::ONE_TO_ONE
    }

    /// Called once, on the thread that will run the node, before its first `work`: open a
    /// device, start a stream, raise the thread's priority. An error stops the graph as an
    /// error of `work` would.
    fn init(&mut self) -> Result<(), NodeError> {
        Ok(())
    }

    /// The parameters that can be changed while the node runs (see [`crate::control`]). By
    /// default none.
    fn controls(&self) -> Vec<ControlSpec> {
        Vec::new()
    }

    /// Applies a change of run-time parameter `name` (one of [`Node::controls`]; the runtime
    /// delivers no other) to `value`. The runtime calls it on the node's thread between two
    /// `work` calls; the change takes effect at item `at_item`: the index of the next item the
    /// node's first output produces (for a node without outputs, of the next item its first
    /// input consumes). A value the node cannot take is [`NodeError::BadValue`] saying what it
    /// takes (see [`crate::control::number`]); the caller gets the error, and the node runs on
    /// unchanged. The default refuses everything (a node without run-time parameters).
    fn set_control(&mut self, name: &str, value: &TagValue, at_item: u64) -> Result<(), NodeError> {
        let _ = (value, at_item);
        Err(NodeError::msg(format!(
            "it has no run-time parameter '{name}'"
        )))
    }

    /// Given, when the node is added to a graph, a handle on the run-time parameters of that
    /// graph's nodes: a node that changes other nodes' parameters (`message_to_param`) keeps
    /// it. By default ignored.
    fn attach_control(&mut self, handle: crate::ControlHandle) {
        let _ = handle;
    }

    /// Input items before an offset that this node must read to make, from that offset on,
    /// the output it would have made had it run all along (an FIR filter: its taps − 1). A node
    /// put in place of another while the graph runs ([`crate::live`]) is warmed up on them, its
    /// output from them discarded. The node must make outputs only for input it has seen, so
    /// that, given these items alone, it makes their outputs and then asks for more. 0 (the
    /// default) for nodes without memory of past input.
    fn history(&self) -> u64 {
        0
    }

    /// Called once when the node ends, whatever ended it (its stream ended, the graph was asked
    /// to stop, another node failed), on the thread that ran it, if [`Node::init`] ran: release
    /// devices, close sockets. A sink finishes its output in `work` at end of stream; after a
    /// failure elsewhere it should leave the output unfinished.
    fn stop(&mut self) {}

    /// Items this node will produce in all, if it knows in advance (a `head`, a file source
    /// that does not repeat): a progress display shows how far a run has come from it. `None`
    /// (the default) for nodes that run as long as their input or until stopped.
    fn length(&self) -> Option<u64> {
        None
    }

    /// The longest the threaded scheduler may keep this node asleep, once its firing rule is
    /// met, waiting for a batch (half the queue) so that it fires less often on larger windows.
    /// `None` (the default): the scheduler's own bound (200 µs), right for nodes whose cost is
    /// per call. A node whose items must leave promptly (a network sender flushing small
    /// messages) returns its flush interval; `Some(Duration::ZERO)` wakes it for every item.
    fn batch_wait(&self) -> Option<Duration> {
        None
    }

    /// What the user should know that did not stop the node (samples clipped, a rate a file
    /// could not follow), in words. The runtime asks once, when the node ends, and reports them
    /// in [`NodeStats::warnings`](crate::NodeStats::warnings) under the node's name, so that a
    /// front end can say where they come from rather than the node printing them.
    fn warnings(&mut self) -> Vec<String> {
        Vec::new()
    }
}
