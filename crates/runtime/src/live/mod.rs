//! Changing a graph while it runs: a new branch on an output, a branch taken away, a node
//! replaced at an item offset.
//!
//! Run the graph with [`Graph::run_live`](crate::Graph::run_live) and a [`LiveGraph`]; any
//! thread may then change it through the `LiveGraph`:
//!
//! * [`LiveGraph::attach`] runs another [`Graph`](crate::Graph) (the *branch*) whose open inputs read outputs
//!   of the running graph. Each is a new lossless reader of the output's queue, at "now" (the
//!   next item the output publishes) or at a stated item index that the ring still holds. The
//!   branch runs on threads of its own; the nodes of the running graph go on as they were: the
//!   writer of the output waits for the new reader as for any other (that is what lossless
//!   means), and nothing else changes for them.
//! * [`Branch::detach`] takes a branch away: [`Detach::Drain`] ends its inputs at the item each
//!   output has published by then, so the branch finishes on everything it was given and its
//!   sinks close their files normally; [`Detach::Drop`] ends them where the branch has read to.
//!   Either way the writer stops waiting for it.
//! * [`LiveGraph::replace`] puts a new node in place of a running one from an item offset `N`
//!   of its inputs: the output is the old node's up to the item made from input `N` and the new
//!   node's from there on. The old node is held at `N` (its inputs show nothing beyond it); the
//!   new node reads its inputs from `N − history` ([`Node::history`](crate::Node::history)),
//!   warms up on those items with its outputs discarded, and takes the old node's place when
//!   it has used them. Exact for nodes that make a fixed number of outputs per input (their
//!   [`TagPolicy`](crate::TagPolicy) is a ratio).
//!
//! The queue mechanisms behind it are `sluice_queue`'s `ReaderPoint` (a lossless reader
//! attached from another thread, at an index only if another reader still holds it) and
//! `ReadLimit` (a hold or an end set on one reader from another thread).

mod branch;
mod swap;

pub use branch::{Branch, Detach};
pub use swap::Replacement;
pub(crate) use swap::Swapper;

use crate::control::ControlHandle;
use crate::graph::BuiltNode;
use crate::io::ErasedInput;
use crate::port::{PortSpec, Ports};
use sluice_queue::{Item, QueueError, QueueOptions, ReadLimit, ReaderPoint};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Why a change to a running graph was refused or did not happen.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The graph has not started, or has ended.
    #[error("the graph is not running")]
    NotRunning,
    /// A feed named an output the running graph does not have.
    #[error("the running graph has no stream output '{output}' (it has: {available})")]
    NoSuchOutput {
        /// `node.port` as asked.
        output: String,
        /// The outputs there are.
        available: String,
    },
    /// A replacement named a node the running graph does not have.
    #[error("the running graph has no node '{0}'")]
    NoSuchNode(String),
    /// A feed named something that is not `node.port`.
    #[error("'{0}' is not of the form node.port")]
    BadPortName(String),
    /// A branch's input and the output feeding it carry different items.
    #[error("{output} carries {output_type} but the branch's {input} takes {input_type}")]
    TypeMismatch {
        /// The running graph's output.
        output: String,
        /// What it carries (with the vector length when above 1).
        output_type: String,
        /// The branch's input.
        input: String,
        /// What it takes.
        input_type: String,
    },
    /// The queue could not give a reader where asked (see `QueueError::NotInRing`).
    #[error("cannot read {output} from item {at}: {source}")]
    NotInRing {
        /// The output.
        output: String,
        /// The item asked for.
        at: u64,
        /// The queue's answer.
        source: QueueError,
    },
    /// The branch graph itself was refused (an unconnected port, a cycle, a queue).
    #[error("the branch cannot run: {0}")]
    Branch(#[source] crate::RuntimeError),
    /// The branch's thread could not be started.
    #[error("could not start the branch's thread: {0}")]
    Spawn(String),
    /// A replacement's ports differ from the node it replaces.
    #[error("node '{node}': cannot be replaced by a node of other ports: {difference}")]
    PortsChanged {
        /// The node.
        node: String,
        /// How they differ.
        difference: String,
    },
    /// A source has no input offset to switch at.
    #[error("node '{0}' has no stream input: only a node that reads a stream can be replaced at an item offset")]
    NoStreamInput(String),
    /// The node has already gone past the offset.
    #[error("node '{node}' is past item {asked} already: it has {what} {done}")]
    OffsetPassed {
        /// The node.
        node: String,
        /// The offset asked for.
        asked: u64,
        /// "read" or "written".
        what: &'static str,
        /// How far it got.
        done: u64,
    },
    /// The offset is further ahead than the node's input queue reaches.
    #[error("node '{node}': item {asked} is more than its input queue ({capacity} items) ahead of where it reads ({read}); ask again nearer the time")]
    OffsetTooFar {
        /// The node.
        node: String,
        /// The offset asked for.
        asked: u64,
        /// The input queue's capacity.
        capacity: usize,
        /// Where the node reads.
        read: u64,
    },
    /// The stream ended before it reached the offset.
    #[error("node '{node}': its input ended before item {asked}")]
    Ended {
        /// The node.
        node: String,
        /// The offset asked for.
        asked: u64,
    },
    /// Another replacement of the node is under way.
    #[error("node '{0}': another replacement is under way")]
    Busy(String),
    /// The new node failed while it warmed up, or never used its history.
    #[error("node '{node}': the new node did not warm up: {message}")]
    WarmUp {
        /// The node.
        node: String,
        /// What went wrong.
        message: String,
    },
    /// Nothing happened within the time the caller gave.
    #[error("node '{node}' did not reach item {asked} within {waited:?}")]
    Timeout {
        /// The node.
        node: String,
        /// The offset asked for.
        asked: u64,
        /// How long the caller waited.
        waited: std::time::Duration,
    },
}

/// Attaches lossless readers to one output's queue, whatever its item type.
pub(crate) trait ErasedReaderPoint: Send + Sync {
    /// A new reader (see `ReaderPoint::attach`).
    fn attach(&self, at: Option<u64>) -> Result<Attached, QueueError>;
    fn items_written(&self) -> u64;
}

impl<T: Item> ErasedReaderPoint for (ReaderPoint<T>, Arc<str>) {
    fn attach(&self, at: Option<u64>) -> Result<Attached, QueueError> {
        let mut reader = self.0.attach(at)?;
        Ok(Attached {
            limit: reader.limit(),
            first: reader.items_read(),
            input: Box::new(crate::io::Input::new(reader, Arc::clone(&self.1))),
        })
    }
    fn items_written(&self) -> u64 {
        self.0.items_written()
    }
}

/// A reader attached to a running output, as a branch's input.
pub(crate) struct Attached {
    pub(crate) input: Box<dyn ErasedInput>,
    /// Where a detach ends it.
    pub(crate) limit: Arc<ReadLimit>,
    /// The output's item index it starts at.
    pub(crate) first: u64,
}

/// One stream output of the running graph.
struct LiveOutput {
    node: String,
    spec: PortSpec,
    point: Arc<dyn ErasedReaderPoint>,
}

/// One node of the running graph.
struct LiveNode {
    name: String,
    ports: Ports,
    slot: Arc<swap::SwapSlot>,
}

/// What a change needs of the running graph.
struct Running {
    outputs: Vec<LiveOutput>,
    nodes: Vec<LiveNode>,
    control: ControlHandle,
    queue_options: QueueOptions,
    default_queue_bytes: usize,
}

#[derive(Default)]
struct Inner {
    running: OnceLock<Running>,
    ended: AtomicBool,
    /// Branches attached and not yet detached, by name, for [`LiveGraph::branch_names`].
    branches: Mutex<Vec<String>>,
}

/// A handle that changes a running graph (see the module docs). Cheap to clone; any thread.
#[derive(Clone, Default)]
pub struct LiveGraph(Arc<Inner>);

impl std::fmt::Debug for LiveGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveGraph")
            .field("running", &self.is_running())
            .finish()
    }
}

impl LiveGraph {
    /// A handle for one run of [`Graph::run_live`](crate::Graph::run_live).
    pub fn new() -> Self {
        LiveGraph::default()
    }

    /// Whether the run has started and not ended.
    pub fn is_running(&self) -> bool {
        self.0.running.get().is_some() && !self.0.ended.load(Ordering::Acquire)
    }

    /// The running graph's stream outputs a branch may read, as `node.port`.
    pub fn outputs(&self) -> Vec<String> {
        self.0.running.get().map_or_else(Vec::new, |r| {
            r.outputs
                .iter()
                .map(|o| format!("{}.{}", o.node, o.spec.name))
                .collect()
        })
    }

    /// Items published so far by the running graph's output `node.port`: "now" on that output,
    /// for choosing an offset.
    pub fn items_written(&self, output: &str) -> Result<u64, LiveError> {
        Ok(self.output(output)?.point.items_written())
    }

    fn output(&self, output: &str) -> Result<&LiveOutput, LiveError> {
        let running = self.running()?;
        let (node, port) = split_port(output)?;
        running
            .outputs
            .iter()
            .find(|o| o.node == node && o.spec.name == port)
            .ok_or_else(|| LiveError::NoSuchOutput {
                output: output.to_string(),
                available: self.outputs().join(", "),
            })
    }

    /// The names of the branches attached now.
    pub fn branch_names(&self) -> Vec<String> {
        self.0
            .branches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn running(&self) -> Result<&Running, LiveError> {
        match self.0.running.get() {
            Some(r) if !self.0.ended.load(Ordering::Acquire) => Ok(r),
            _ => Err(LiveError::NotRunning),
        }
    }

    /// Registers the nodes about to run (once).
    pub(crate) fn begin(
        &self,
        nodes: &mut [BuiltNode],
        control: ControlHandle,
        (queue_options, default_queue_bytes): (QueueOptions, usize),
    ) {
        let mut outputs = Vec::new();
        let mut live_nodes = Vec::new();
        for n in nodes.iter_mut() {
            for (spec, out) in n.ports.outputs.iter().zip(&n.outputs) {
                if let Some(point) = out.reader_point() {
                    outputs.push(LiveOutput {
                        node: n.name.clone(),
                        spec: spec.clone(),
                        point,
                    });
                }
            }
            let slot = Arc::new(swap::SwapSlot::new(n));
            n.swap = Swapper::new(Arc::clone(&slot));
            live_nodes.push(LiveNode {
                name: n.name.clone(),
                ports: n.ports.clone(),
                slot,
            });
        }
        let _ = self.0.running.set(Running {
            outputs,
            nodes: live_nodes,
            control,
            queue_options,
            default_queue_bytes,
        });
    }

    /// Marks the run ended: later changes are refused.
    pub(crate) fn end(&self) {
        self.0.ended.store(true, Ordering::Release);
    }
}

/// Splits `node.port`.
fn split_port(name: &str) -> Result<(&str, &str), LiveError> {
    name.rsplit_once('.')
        .filter(|(n, p)| !n.is_empty() && !p.is_empty())
        .ok_or_else(|| LiveError::BadPortName(name.to_string()))
}

/// `c32`, or `c32[4]` for vectors.
fn item_text(spec: &PortSpec) -> String {
    match spec.vlen {
        1 => spec.item.name().to_string(),
        n => format!("{}[{n}]", spec.item.name()),
    }
}
