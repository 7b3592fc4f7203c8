//! Per-node statistics of a run, and their table.

use std::cell::Cell;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

thread_local! {
    /// Time slept through [`sleep`] on this thread since the scheduler last asked.
    static SLEPT: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    /// What [`count`] and [`count_bytes`] added up on this thread since the scheduler last
    /// asked (one thread-local for both, so the scheduler's check after `work` is one access).
    static COUNTED: Cell<Counted> = const {
        Cell::new(Counted {
            troubles: Troubles { late: 0, dropped: 0, underflow: 0 },
            bytes: StreamBytes { sent: 0, received: 0 },
        })
    };
}

/// What a node counted during one `work` call ([`count`], [`count_bytes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counted {
    /// Trouble ([`count`]).
    pub troubles: Troubles,
    /// Bytes of a stream endpoint ([`count_bytes`]).
    pub bytes: StreamBytes,
}

/// Which way a stream endpoint's bytes went ([`count_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Sent to a peer (a sink's stream).
    Sent,
    /// Received from a peer (a source's stream).
    Received,
}

/// Bytes a node's stream endpoints moved to and from peers ([`count_bytes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamBytes {
    /// Bytes sent ([`Direction::Sent`]).
    pub sent: u64,
    /// Bytes received ([`Direction::Received`]).
    pub received: u64,
}

impl StreamBytes {
    /// Whether nothing was counted.
    pub fn is_zero(&self) -> bool {
        *self == StreamBytes::default()
    }
}

/// A kind of trouble a node counts as it happens ([`count`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trouble {
    /// A deadline missed: a late period, a buffer a device wanted before it was ready.
    Late,
    /// Items lost: a real-time source's overflow, a full buffer that had to drop.
    Dropped,
    /// Items a real-time sink had to invent (zeros played) because its input came late.
    Underflow,
}

/// Trouble counts of a node: what [`count`] added up while it ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Troubles {
    /// Deadlines missed ([`Trouble::Late`]).
    pub late: u64,
    /// Items lost ([`Trouble::Dropped`]).
    pub dropped: u64,
    /// Items invented for late input ([`Trouble::Underflow`]).
    pub underflow: u64,
}

impl Troubles {
    /// Whether nothing was counted.
    pub fn is_zero(&self) -> bool {
        *self == Troubles::default()
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: Troubles) {
        self.late += other.late;
        self.dropped += other.dropped;
        self.underflow += other.underflow;
    }
}

/// Counts `n` occurrences of `trouble` for the node whose `work` is running on this thread, so
/// that a live display (the web console, its `/metrics`) shows it as it happens rather than in
/// the warnings at the end. Real-time safe: a thread-local add, no lock, no allocation, no
/// system call; the scheduler collects it after the `work` call.
pub fn count(trouble: Trouble, n: u64) {
    COUNTED.with(|c| {
        let mut v = c.get();
        match trouble {
            Trouble::Late => v.troubles.late += n,
            Trouble::Dropped => v.troubles.dropped += n,
            Trouble::Underflow => v.troubles.underflow += n,
        }
        c.set(v);
    });
}

/// Counts `n` bytes that the stream endpoint whose `work` is running on this thread sent to or
/// received from its peer (a frame written or read: call it once per frame or batch, not per
/// item), for the live display (`sluice_stream_bytes_total` in the console's `/metrics`). As
/// cheap as [`count`]: a thread-local add; the scheduler adds it to the node's live counts
/// after the `work` call.
pub fn count_bytes(direction: Direction, n: u64) {
    COUNTED.with(|c| {
        let mut v = c.get();
        match direction {
            Direction::Sent => v.bytes.sent += n,
            Direction::Received => v.bytes.received += n,
        }
        c.set(v);
    });
}

/// What [`count`] and [`count_bytes`] added up on this thread since the last call (the
/// schedulers call it after each `work`).
pub(crate) fn take_counted() -> Counted {
    COUNTED.with(|c| c.replace(Counted::default()))
}

/// Sleeps for `duration` inside a node's `work` (pacing: a throttle, a real-time source),
/// counted as the node's sleeping time in the run's statistics rather than as busy time: a
/// throttle that waits for its deadline is idle, not 99 % busy.
pub fn sleep(duration: Duration) {
    let t0 = Instant::now();
    std::thread::sleep(duration);
    let slept = t0.elapsed();
    SLEPT.with(|s| s.set(s.get() + slept));
}

/// The time slept through [`sleep`] on this thread since the last call (the schedulers call
/// it after each `work`).
pub(crate) fn take_slept() -> Duration {
    SLEPT.with(|s| s.replace(Duration::ZERO))
}

/// What one node did during a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeStats {
    /// The node's name.
    pub name: String,
    /// Calls of `work`.
    pub work_calls: u64,
    /// Items consumed, summed over inputs.
    pub items_in: u64,
    /// Items produced, summed over outputs.
    pub items_out: u64,
    /// Time spent inside `work`, less the time it slept through [`sleep`].
    pub busy: Duration,
    /// Time `work` slept through [`sleep`] (pacing).
    pub sleeping: Duration,
    /// Time spent blocked waiting for input or output room.
    pub waiting: Duration,
    /// What the node reported when it ended ([`Node::warnings`](crate::Node::warnings)).
    pub warnings: Vec<String>,
    /// Messages this node's message outputs dropped (inboxes full with a dropping policy, or
    /// receivers gone) and messages left unread in its inboxes when it ended; each connection
    /// is also named in `warnings`.
    pub messages_dropped: u64,
    /// What the node counted through [`count`] (late periods, dropped items, underflows).
    pub troubles: Troubles,
}

/// The outcome of a finished run.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    /// One entry per node, in the order nodes were added.
    pub nodes: Vec<NodeStats>,
    /// Wall-clock time of the run.
    pub wall: Duration,
    /// Threads that ran the nodes (under the default scheduler: 1, or 2 after a split).
    pub threads: usize,
    /// How the nodes were scheduled, in words (the default scheduler's decision and the
    /// measurement behind it).
    pub scheduling: String,
    /// Whether the run ended because it was asked to stop ([`crate::StopHandle`]): its sources
    /// were ended early and the rest drained.
    pub stopped: bool,
    /// Things the user should know that did not stop the run (for example a real-time priority
    /// the OS refused).
    pub warnings: Vec<String>,
}

impl RunReport {
    /// Statistics of the node called `name`.
    pub fn node(&self, name: &str) -> Option<&NodeStats> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// A table of per-node statistics for the terminal.
    pub fn render(&self) -> String {
        let wall = self.wall.as_secs_f64().max(1e-9);
        let mut rows: Vec<[String; 8]> = vec![[
            "node".to_string(),
            "calls".to_string(),
            "items in".to_string(),
            "items out".to_string(),
            "out/s".to_string(),
            "busy".to_string(),
            "sleeping".to_string(),
            "waiting".to_string(),
        ]];
        for n in &self.nodes {
            rows.push([
                n.name.clone(),
                n.work_calls.to_string(),
                n.items_in.to_string(),
                n.items_out.to_string(),
                format!("{:.3e}", n.items_out as f64 / wall),
                format!("{:.1}%", 100.0 * n.busy.as_secs_f64() / wall),
                format!("{:.1}%", 100.0 * n.sleeping.as_secs_f64() / wall),
                format!("{:.1}%", 100.0 * n.waiting.as_secs_f64() / wall),
            ]);
        }
        let mut widths = [0usize; 8];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let mut out = String::new();
        for row in &rows {
            for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
                if i == 0 {
                    let _ = write!(out, "{cell:<w$}");
                } else {
                    let _ = write!(out, "  {cell:>w$}");
                }
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "wall time {:.3} s on {} thread{}",
            self.wall.as_secs_f64(),
            self.threads,
            if self.threads == 1 { "" } else { "s" }
        );
        let _ = writeln!(out, "scheduling: {}", self.scheduling);
        if self.stopped {
            let _ = writeln!(
                out,
                "stopped on request: the sources were ended and the rest drained"
            );
        }
        out
    }
}
