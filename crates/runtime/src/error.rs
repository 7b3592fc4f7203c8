//! Errors of the runtime: building graphs, running them, and what nodes report.

use sluice_queue::QueueError;
use thiserror::Error;

/// An error a node's `work` returns. The runtime stops the graph and reports it with the node's
/// name.
#[derive(Debug, Error)]
pub enum NodeError {
    /// A queue operation failed (for example a window larger than the queue).
    #[error("{0}")]
    Queue(#[from] QueueError),
    /// Every reader of an output has gone: the node has nobody to produce for. The runtime
    /// treats this as a normal end (a downstream `head` finished), not as a failure.
    #[error("output {port} has no readers left")]
    OutputClosed {
        /// The output's name.
        port: String,
    },
    /// A port was accessed with an item type other than the one it declared.
    #[error("port {port} carries {declared}, not {requested}")]
    WrongType {
        /// The port's name.
        port: String,
        /// The declared item type.
        declared: &'static str,
        /// The type the node asked for.
        requested: &'static str,
    },
    /// A port index beyond the node's declared ports.
    #[error("no {kind} port with index {index}")]
    NoSuchPort {
        /// "input" or "output".
        kind: &'static str,
        /// The index asked for.
        index: usize,
    },
    /// The same port was asked for twice in one call that lends several ports at once
    /// ([`Inputs::get_many`](crate::Inputs::get_many) and the like).
    #[error("{kind} port {port} was asked for twice in one call")]
    RepeatedPort {
        /// "input" or "output".
        kind: &'static str,
        /// The port's name.
        port: String,
    },
    /// A run-time parameter's value was refused by
    /// [`Node::set_control`](crate::Node::set_control): it must be `expected` (in words, e.g.
    /// "a positive number of Hz").
    #[error("must be {expected}")]
    BadValue {
        /// What the parameter takes.
        expected: String,
    },
    /// Reading or writing a file or device failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// An operation failed because of another error, which is kept (not flattened to text):
    /// [`std::error::Error::source`] leads to it, so a caller can still ask an
    /// [`std::io::Error`] for its kind. Displayed as one line, `context: cause` (or just the
    /// cause when there is no context).
    #[error("{}", one_line(context, source.as_ref()))]
    Failed {
        /// What was being done, in words (`cannot open x.cf32`); may be empty.
        context: String,
        /// The error that made it fail.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// Anything else, in words.
    #[error("{0}")]
    Other(String),
}

impl NodeError {
    /// A [`NodeError::Other`] with this message (for failures with no underlying error; one
    /// caused by another error is [`NodeError::caused`]).
    pub fn msg(message: impl Into<String>) -> Self {
        NodeError::Other(message.into())
    }

    /// A [`NodeError::Failed`]: `context` (what was being done) failed because of `cause`,
    /// which stays reachable through `source()`.
    pub fn caused(
        context: impl Into<String>,
        cause: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        NodeError::Failed {
            context: context.into(),
            source: cause.into(),
        }
    }

    /// A [`NodeError::Failed`] with no context of its own: `cause` says it all.
    pub fn from_error(
        cause: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        NodeError::caused(String::new(), cause)
    }
}

fn one_line(context: &str, cause: &(dyn std::error::Error + Send + Sync)) -> String {
    if context.is_empty() {
        cause.to_string()
    } else {
        format!("{context}: {cause}")
    }
}

/// An error building or running a graph.
#[derive(Debug, Error)]
pub enum RuntimeError {
    /// Two nodes were given the same name.
    #[error("a node named '{0}' already exists")]
    DuplicateNode(String),
    /// A node id that this graph did not hand out.
    #[error("no node with id {0}")]
    NoSuchNode(usize),
    /// A node named that the graph does not have.
    #[error("no node called '{0}'")]
    NoSuchNodeName(String),
    /// A node put in place of another ([`Graph::replace_boxed`](crate::Graph::replace_boxed))
    /// whose ports differ from the one it replaces.
    #[error("node '{node}': cannot be replaced by a node of other ports: {difference}")]
    PortsChanged {
        /// The node's name.
        node: String,
        /// How the ports differ, in words.
        difference: String,
    },
    /// A port name the node does not declare.
    #[error("node '{node}' has no {kind} port '{port}' (it has: {available})")]
    NoSuchPort {
        /// The node's name.
        node: String,
        /// "input" or "output".
        kind: &'static str,
        /// The port asked for.
        port: String,
        /// The node's ports of that kind, comma-separated.
        available: String,
    },
    /// The two ends of a connection carry different item types.
    #[error("cannot connect {from} ({from_type}) to {to} ({to_type}): the item types differ")]
    TypeMismatch {
        /// Upstream end, as `node.port`.
        from: String,
        /// Upstream item type.
        from_type: &'static str,
        /// Downstream end, as `node.port`.
        to: String,
        /// Downstream item type.
        to_type: &'static str,
    },
    /// A message port connected to a stream port, or message ports of kinds that do not fit.
    #[error("cannot connect {from} to {to}: {reason}")]
    MessageConnection {
        /// Upstream end, as `node.port`.
        from: String,
        /// Downstream end, as `node.port`.
        to: String,
        /// What does not fit.
        reason: String,
    },
    /// The two ends of a connection carry vectors of different lengths.
    #[error("cannot connect {from} (vectors of {from_vlen} {item}) to {to} (vectors of {to_vlen} {item}): the vector lengths (vlen) differ")]
    VlenMismatch {
        /// Upstream end, as `node.port`.
        from: String,
        /// Upstream items per vector.
        from_vlen: usize,
        /// Downstream end, as `node.port`.
        to: String,
        /// Downstream items per vector.
        to_vlen: usize,
        /// The item type both carry.
        item: &'static str,
    },
    /// An input port was connected twice.
    #[error("input {node}.{port} is already connected (an input takes one stream; use a second port or an adder)")]
    InputTaken {
        /// The node.
        node: String,
        /// The port.
        port: String,
    },
    /// A port was left unconnected.
    #[error("{kind} {node}.{port} is not connected")]
    Unconnected {
        /// "input" or "output".
        kind: &'static str,
        /// The node.
        node: String,
        /// The port.
        port: String,
    },
    /// The connections form a cycle: each node on it would wait for the next, forever.
    #[error("the graph has a cycle: {path}; a node's output may not lead back to its own input")]
    Cycle {
        /// The nodes on the cycle, as `a -> b -> a`.
        path: String,
    },
    /// A queue could not be created.
    #[error("queue {edge}: {source}")]
    Queue {
        /// The edge, as `a.out -> b.in`.
        edge: String,
        /// What went wrong.
        source: QueueError,
    },
    /// A queue (or all of them together) would need more memory than the machine has
    /// available: refused before any is created, rather than failing in `mmap` or swapping.
    #[error(
        "edge {edge}: its queue needs {} ({capacity} items of {item_bytes} bytes: the graph's \
         queue_bytes or the edge's capacity){}, more than the {} this machine has available; \
         lower queue_bytes or the edge's capacity",
        human_bytes(*bytes),
        if *total > *bytes { format!(" and all queues together {}", human_bytes(*total)) } else { String::new() },
        human_bytes(*available)
    )]
    QueueMemory {
        /// The edge with the largest queue, as `a.out -> b.in`.
        edge: String,
        /// Its capacity in items.
        capacity: usize,
        /// Bytes per item.
        item_bytes: usize,
        /// Its bytes.
        bytes: u64,
        /// Bytes of every queue of the graph together.
        total: u64,
        /// Bytes the machine has available.
        available: u64,
    },
    /// A node failed; the graph was stopped.
    #[error("node '{node}' failed: {source}")]
    NodeFailed {
        /// The node's name.
        node: String,
        /// Its error.
        source: NodeError,
    },
    /// A node panicked; the graph was stopped.
    #[error("node '{node}' panicked: {message}")]
    NodePanicked {
        /// The node's name.
        node: String,
        /// The panic message.
        message: String,
    },
    /// Every live node was blocked on a queue and nothing moved: an artificial deadlock.
    #[error("deadlock: every node is blocked and nothing moved ({waits}); enlarge the queues named, or lower the windows the nodes ask for")]
    Deadlock {
        /// What each blocked node waits for, `; `-separated.
        waits: String,
    },
    /// The OS refused to start a thread.
    #[error("could not start the thread for node '{node}': {message}")]
    Spawn {
        /// The node.
        node: String,
        /// The OS error.
        message: String,
    },
}

/// `3221225472` → `3.0 GiB`.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
