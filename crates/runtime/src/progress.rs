//! How far a running graph has come, readable from another thread (a progress line).

use crate::StreamBytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// A view of a running graph's item counts, for a progress display on another thread. Give a
/// clone to [`RunOptions::progress`](crate::RunOptions::progress) and call
/// [`Progress::snapshot`] while the graph runs. The runtime updates the counts after every
/// `work` call (two relaxed stores per node).
#[derive(Debug, Clone, Default)]
pub struct Progress(Arc<OnceLock<Vec<Arc<NodeProgress>>>>);

/// One node's live counts.
#[derive(Debug)]
pub(crate) struct NodeProgress {
    name: String,
    length: Option<u64>,
    items_in: AtomicU64,
    items_out: AtomicU64,
    work_calls: AtomicU64,
    busy_ns: AtomicU64,
    waiting_ns: AtomicU64,
    late: AtomicU64,
    dropped: AtomicU64,
    underflow: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    /// The error the node stopped the graph with (set once, by its thread, as it fails).
    error: OnceLock<String>,
}

impl NodeProgress {
    pub(crate) fn record(&self, items_in: u64, items_out: u64) {
        self.items_in.store(items_in, Ordering::Relaxed);
        self.items_out.store(items_out, Ordering::Relaxed);
    }

    /// Copies the scheduler's running totals of the node's time (three relaxed stores).
    pub(crate) fn record_times(&self, stats: &crate::NodeStats) {
        self.work_calls.store(stats.work_calls, Ordering::Relaxed);
        self.busy_ns
            .store(stats.busy.as_nanos() as u64, Ordering::Relaxed);
        self.waiting_ns
            .store(stats.waiting.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Copies the node's trouble counts (only when they changed, which is rare).
    pub(crate) fn record_troubles(&self, t: crate::Troubles) {
        self.late.store(t.late, Ordering::Relaxed);
        self.dropped.store(t.dropped, Ordering::Relaxed);
        self.underflow.store(t.underflow, Ordering::Relaxed);
    }

    /// Adds a stream endpoint's bytes of one `work` call (a relaxed add each way that moved).
    pub(crate) fn add_bytes(&self, b: StreamBytes) {
        if b.sent > 0 {
            self.bytes_sent.fetch_add(b.sent, Ordering::Relaxed);
        }
        if b.received > 0 {
            self.bytes_received.fetch_add(b.received, Ordering::Relaxed);
        }
    }

    /// Keeps the error the node failed with (the first, if it could fail twice).
    pub(crate) fn record_error(&self, err: &crate::RuntimeError) {
        let _ = self.error.set(err.to_string());
    }
}

/// One node's counts at the time of a [`Progress::snapshot`].
#[derive(Debug, Clone, PartialEq)]
pub struct NodeCounts {
    /// The node's name.
    pub name: String,
    /// Items it will produce in all, if it knows ([`Node::length`](crate::Node::length)).
    pub length: Option<u64>,
    /// Items consumed so far, summed over its inputs.
    pub items_in: u64,
    /// Items produced so far, summed over its outputs.
    pub items_out: u64,
    /// Calls of `work` so far (the threaded schedulers).
    pub work_calls: u64,
    /// Time spent inside `work` so far, less pacing sleeps (the threaded schedulers).
    pub busy: std::time::Duration,
    /// Time spent blocked waiting for input or output room so far (the threaded schedulers).
    pub waiting: std::time::Duration,
    /// Trouble counted so far ([`count`](crate::count)): late periods, dropped items,
    /// underflows.
    pub troubles: crate::Troubles,
    /// Bytes its stream endpoints sent and received so far ([`count_bytes`](crate::count_bytes)).
    pub bytes: StreamBytes,
    /// The error it failed with, as the run will report it; set as it fails, while the rest
    /// of the graph is still winding down.
    pub error: Option<String>,
}

impl NodeCounts {
    /// How much of its known length the node has produced, 0 to 1.
    pub fn fraction(&self) -> Option<f64> {
        self.length
            .map(|len| (self.items_out as f64 / len.max(1) as f64).min(1.0))
    }
}

impl Progress {
    /// A view that fills in when a run using it starts.
    pub fn new() -> Self {
        Progress::default()
    }

    /// Every node's counts now, in the order the nodes were added; empty before the run
    /// started.
    pub fn snapshot(&self) -> Vec<NodeCounts> {
        self.0.get().map_or_else(Vec::new, |nodes| {
            nodes
                .iter()
                .map(|n| NodeCounts {
                    name: n.name.clone(),
                    length: n.length,
                    items_in: n.items_in.load(Ordering::Relaxed),
                    items_out: n.items_out.load(Ordering::Relaxed),
                    work_calls: n.work_calls.load(Ordering::Relaxed),
                    busy: std::time::Duration::from_nanos(n.busy_ns.load(Ordering::Relaxed)),
                    waiting: std::time::Duration::from_nanos(n.waiting_ns.load(Ordering::Relaxed)),
                    troubles: crate::Troubles {
                        late: n.late.load(Ordering::Relaxed),
                        dropped: n.dropped.load(Ordering::Relaxed),
                        underflow: n.underflow.load(Ordering::Relaxed),
                    },
                    bytes: StreamBytes {
                        sent: n.bytes_sent.load(Ordering::Relaxed),
                        received: n.bytes_received.load(Ordering::Relaxed),
                    },
                    error: n.error.get().cloned(),
                })
                .collect()
        })
    }

    /// The node with a known length that is furthest along, with its fraction: a graph ends at
    /// its tightest bound (a `head`, the end of a file), and that node reaches 100 % first.
    /// `None` for a graph with no bounded node (it runs until stopped).
    pub fn leading(&self) -> Option<(NodeCounts, f64)> {
        self.snapshot()
            .into_iter()
            .filter_map(|n| n.fraction().map(|f| (n, f)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Registers the run's nodes (once; a second run with the same view is not tracked).
    pub(crate) fn attach(&self, nodes: &mut [crate::graph::BuiltNode]) {
        let slots: Vec<Arc<NodeProgress>> = nodes
            .iter()
            .map(|n| {
                Arc::new(NodeProgress {
                    name: n.name.clone(),
                    length: n.node.length(),
                    items_in: AtomicU64::new(0),
                    items_out: AtomicU64::new(0),
                    work_calls: AtomicU64::new(0),
                    busy_ns: AtomicU64::new(0),
                    waiting_ns: AtomicU64::new(0),
                    late: AtomicU64::new(0),
                    dropped: AtomicU64::new(0),
                    underflow: AtomicU64::new(0),
                    bytes_sent: AtomicU64::new(0),
                    bytes_received: AtomicU64::new(0),
                    error: OnceLock::new(),
                })
            })
            .collect();
        if self.0.set(slots.clone()).is_ok() {
            for (node, slot) in nodes.iter_mut().zip(slots) {
                node.progress = Some(slot);
            }
        }
    }
}
