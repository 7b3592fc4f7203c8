//! Schedulers: one thread per node (the default), and a deterministic single-thread stepper.

mod auto;
mod cross_core;
mod partition;
pub(crate) mod step;
pub(crate) mod threaded;

use crate::control::{self, ControlError};
use crate::graph::BuiltNode;
use crate::io::WorkIo;
use crate::node::{TagPolicy, Work};
use crate::stats::NodeStats;
use crate::{NodeError, RuntimeError};
use sluice_queue::{QueueError, Tag};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Which threads run a graph's nodes. Every thread runs a contiguous group of nodes (in the
/// order they were added) in turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scheduler {
    /// The default: start with every node on one thread (chunks of items pass through the whole
    /// chain while they are in cache, and no item crosses between cores); after a 5 ms warm-up,
    /// measure each node's busy time for 10 ms while the nodes work, then split the nodes into
    /// contiguous groups over as many cores as pay, up to every core of the machine, if that
    /// promises a clear gain once the traffic between the cores is counted at the cross-core
    /// rate measured once per process (each thread is then pinned to a CPU of its own). Cheap
    /// nodes (copies, conversions) stay on one thread; long chains and heavy filters get a core
    /// per part. Later runs of a graph of the same shape in the same process start in the
    /// grouping measured first (for a few runs, then it is measured again).
    #[default]
    Auto,
    /// One thread per node: the Computational Process Network model. Best when nodes block on
    /// devices or files, or when there are at least as many cores as nodes.
    ThreadPerNode,
    /// This many threads, the nodes split into contiguous groups of nearly equal weight (ports
    /// per node, a proxy for memory traffic).
    Pooled(usize),
}

/// Asks a running graph to stop, from any thread (a signal handler's thread, a UI, a test).
///
/// [`stop`](StopHandle::stop) is graceful: every source (a node without inputs) ends as if its
/// stream were over, so the items already in the graph drain through it and every sink
/// finishes its file normally. [`abort`](StopHandle::abort) is the hard stop, for when a drain
/// may not be waited for (a fenced replica, whose standby writes now; a drain through a
/// rate-limited node can take minutes): every node stops at its next turn, the items in the
/// queues are dropped, and every node is still finished (sinks close their files, streams
/// end). Either way the run returns its report with [`RunReport::stopped`](crate::RunReport::stopped) set.
#[derive(Debug, Clone, Default)]
pub struct StopHandle(Arc<StopFlags>);

#[derive(Debug, Default)]
struct StopFlags {
    graceful: AtomicBool,
    now: AtomicBool,
}

impl StopHandle {
    /// A handle that has not been asked to stop.
    pub fn new() -> Self {
        StopHandle::default()
    }

    /// Asks the graph to stop gracefully (idempotent).
    pub fn stop(&self) {
        self.0.graceful.store(true, Ordering::Release);
    }

    /// Stops the graph at once, dropping what is in its queues (idempotent; see the type's
    /// documentation). The threaded schedulers act on it at each node's next turn; the
    /// single-thread stepper takes it as a graceful stop.
    pub fn abort(&self) {
        self.0.now.store(true, Ordering::Release);
        self.0.graceful.store(true, Ordering::Release);
    }

    /// Whether a stop (graceful or not) was asked for.
    pub fn is_stopped(&self) -> bool {
        self.0.graceful.load(Ordering::Acquire)
    }

    /// Whether the hard stop was asked for.
    pub fn is_aborted(&self) -> bool {
        self.0.now.load(Ordering::Acquire)
    }
}

/// What a node sees of a stop while it works: the caller's graceful stop request and, under
/// the threaded scheduler, the graph's own stop after a failure. Two atomic loads to read.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StopView<'a> {
    pub(crate) request: Option<&'a StopHandle>,
    pub(crate) abort: Option<&'a AtomicBool>,
}

impl StopView<'_> {
    /// Whether the graph is stopping, gracefully or after a failure.
    #[inline]
    pub(crate) fn is_set(&self) -> bool {
        self.request.is_some_and(StopHandle::is_stopped)
            || self.abort.is_some_and(|a| a.load(Ordering::Acquire))
    }
}

/// How to run a graph on threads.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Which threads run which nodes (adaptive by default).
    pub scheduler: Scheduler,
    /// Pin thread `i` to the `i % n`-th of the `n` CPUs the process may run on (its affinity
    /// mask: `taskset` and cpusets are respected).
    pub pin_cores: bool,
    /// Ask for SCHED_FIFO at this priority (1–99) for every node thread. Where the OS refuses,
    /// the run goes on at normal priority and the report carries a warning.
    pub realtime_priority: Option<i32>,
    /// How long every node must be blocked with nothing moving before the run is stopped as a
    /// deadlock.
    pub deadlock_timeout: Duration,
    /// A handle through which the run can be asked to stop gracefully (see [`StopHandle`]).
    pub stop: Option<StopHandle>,
    /// A view of the run's item counts for a progress display on another thread.
    pub progress: Option<crate::Progress>,
    /// A view of the run's edges, to attach taps to while it runs (see [`crate::Monitor`]).
    pub monitor: Option<crate::Monitor>,
    /// Sources, by node name, that a graceful stop leaves running: they end when their own
    /// stream ends. A cluster host spares its stream receivers, so that a stop reaches them
    /// from upstream, after every item sent before it (the threaded schedulers; the stepper
    /// ends every source).
    pub spared_by_stop: Vec<String>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            scheduler: Scheduler::Auto,
            pin_cores: false,
            realtime_priority: None,
            deadlock_timeout: Duration::from_secs(1),
            stop: None,
            progress: None,
            monitor: None,
            spared_by_stop: Vec::new(),
        }
    }
}

impl BuiltNode {
    /// One call of the node's `work`, then its tags, then publication of what it committed:
    /// items reach downstream only after their tags. A panic inside `work` is caught and
    /// returned as [`RuntimeError::NodePanicked`]; an error as [`RuntimeError::NodeFailed`]. The
    /// caller then stops the graph and ends this node (its outputs end, its inputs detach).
    pub(crate) fn step(
        &mut self,
        tags: &mut Vec<Tag>,
        stop: StopView<'_>,
    ) -> Result<Work, RuntimeError> {
        if !self.started {
            self.started = true;
            self.init()?;
        }
        if self.control.0.has_mail() {
            self.apply_controls()?;
        }
        if self.swap.requested() {
            self.swap_begin();
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut io = WorkIo::new(
                &mut self.inputs,
                &self.ports.inputs,
                &mut self.outputs,
                &self.ports.outputs,
                stop,
            );
            self.node.work(&mut io)
        }));
        self.propagate_tags(tags);
        for output in &mut self.outputs {
            output.publish();
        }
        if let Some(progress) = &self.progress {
            let read = self.items_in();
            let written = self.outputs.iter().map(|o| o.items_written()).sum();
            progress.record(read, written);
        }
        match outcome {
            // A replacement under way switches once the old node has reached its offset.
            Ok(Ok(work)) if self.swap.under_way() => match self.swap_check(work)? {
                true => Ok(Work::Progress),
                false => Ok(work),
            },
            Ok(Ok(work)) => Ok(work),
            Ok(Err(e)) if is_normal_end(&e) => {
                if self.swap.under_way() {
                    self.swap_check(Work::Done)?;
                }
                Ok(Work::Done)
            }
            Ok(Err(source)) => Err(RuntimeError::NodeFailed {
                node: self.name.clone(),
                source,
            }),
            Err(panic) => Err(RuntimeError::NodePanicked {
                node: self.name.clone(),
                message: panic_message(panic.as_ref()),
            }),
        }
    }

    /// Applies the run-time parameter changes waiting in the node's mailbox, between two `work`
    /// calls: each takes effect at [`BuiltNode::control_offset`], where a `set:<param>` tag is
    /// put on every output, and its caller gets that offset (or why the node refused it). A
    /// panic in [`Node::set_control`](crate::Node::set_control) fails the node.
    fn apply_controls(&mut self) -> Result<(), RuntimeError> {
        let mailbox = std::sync::Arc::clone(&self.control.0);
        mailbox.drain(|param, value| {
            let at = self.control_offset();
            let applied =
                catch_unwind(AssertUnwindSafe(|| self.node.set_control(param, value, at)));
            Ok(match applied {
                Ok(Ok(())) => {
                    let key = control::tag_key(param);
                    for output in &self.outputs {
                        output.add_tag(Tag::with_source(
                            output.items_written(),
                            &key,
                            value.clone(),
                            &self.name,
                        ));
                    }
                    Ok(at)
                }
                Ok(Err(NodeError::BadValue { expected })) => Err(ControlError::BadValue {
                    node: self.name.clone(),
                    param: param.to_string(),
                    expected,
                    value: control::value_text(value),
                }),
                Ok(Err(e)) => Err(ControlError::Rejected {
                    node: self.name.clone(),
                    param: param.to_string(),
                    message: e.to_string(),
                }),
                Err(panic) => {
                    return Err(RuntimeError::NodePanicked {
                        node: self.name.clone(),
                        message: format!(
                            "in set_control({param}): {}",
                            panic_message(panic.as_ref())
                        ),
                    })
                }
            })
        })
    }

    /// Where a change applied now takes effect: the index of the next item of the first
    /// output, or for a node without outputs the next item of its first input.
    pub(crate) fn control_offset(&self) -> u64 {
        match (self.outputs.first(), self.inputs.first()) {
            (Some(out), _) => out.items_written(),
            (None, Some(input)) => input.items_read(),
            (None, None) => 0,
        }
    }

    /// Whether changes of run-time parameters, or a replacement, wait for this node.
    pub(crate) fn has_mail(&self) -> bool {
        self.control.0.has_mail() || self.swap.requested()
    }

    /// Whether the need that `work` returned can be met right now, without waiting. Only this
    /// node consumes its inputs and fills its outputs, so a need that is met before a `work`
    /// call stays met during it: a node that then returns the same need again (having moved
    /// nothing) ignores what it was given, and would spin forever.
    pub(crate) fn need_met(&mut self, work: Work) -> Result<bool, QueueError> {
        match work {
            Work::NeedInput { port, items } => match self.inputs.get_mut(port) {
                Some(q) => q.ready(items),
                None => Ok(false),
            },
            Work::NeedOutput { port, items } => match self.outputs.get_mut(port) {
                Some(q) => match q.ready(items) {
                    Err(QueueError::NoReaders) => Ok(false),
                    other => other,
                },
                None => Ok(false),
            },
            Work::Progress | Work::Done => Ok(false),
        }
    }

    /// Whether the node is a source (it has no inputs): what a graceful stop ends.
    pub(crate) fn is_source(&self) -> bool {
        self.inputs.is_empty() && !self.ports.outputs.is_empty()
    }

    /// For each output: the bytes written into it so far, and the graph indices of its readers.
    /// A message output counts what its messages weigh (a PDU's vector is allocated on one
    /// core and released on the other) plus [`auto::MESSAGE_CROSSING_BYTES`] for each, what
    /// handing one message to another core costs, not its one-byte slot.
    pub(crate) fn bytes_written(&self) -> impl Iterator<Item = (u64, &[usize])> {
        self.outputs
            .iter()
            .zip(&self.ports.outputs)
            .zip(&self.output_peers)
            .map(|((out, spec), peers)| {
                let bytes = match spec.message {
                    Some(_) => {
                        out.items_written() * auto::MESSAGE_CROSSING_BYTES
                            + out.message_bytes_sent()
                    }
                    None => out.items_written() * spec.item.size() as u64,
                };
                (bytes, &peers[..])
            })
    }

    /// Whether the need can be met with a batch of half its queue (see [`batch`]) right now.
    pub(crate) fn need_met_in_batch(&mut self, work: Work) -> Result<bool, QueueError> {
        let batched = match work {
            Work::NeedInput { port, items } => Work::NeedInput {
                port,
                items: batch(items, self.inputs.get(port).map_or(0, |q| q.capacity())),
            },
            Work::NeedOutput { port, items } => Work::NeedOutput {
                port,
                items: batch(items, self.outputs.get(port).map_or(0, |q| q.capacity())),
            },
            other => other,
        };
        self.need_met(batched)
    }

    /// Items the node has read in this run: its inputs' positions, less where they started (a
    /// branch of a running graph starts reading mid-stream).
    pub(crate) fn items_in(&self) -> u64 {
        let read: u64 = self.inputs.iter().map(|i| i.items_read()).sum();
        read.saturating_sub(self.read_before)
    }

    /// A position that changes whenever the node moves any item.
    pub(crate) fn movement(&self) -> u64 {
        let read: u64 = self.inputs.iter().map(|i| i.items_read()).sum();
        let written: u64 = self.outputs.iter().map(|o| o.items_written()).sum();
        read.wrapping_add(written)
    }

    /// The error for a node that returned `work` although its need was met before the call.
    pub(crate) fn spin_error(&self, work: Work) -> RuntimeError {
        let (kind, name, port, items) = match work {
            Work::NeedInput { port, items } => (
                "input",
                self.ports.inputs.get(port).map_or("?", |p| p.name.as_str()),
                port,
                items,
            ),
            Work::NeedOutput { port, items } => (
                "output",
                self.ports
                    .outputs
                    .get(port)
                    .map_or("?", |p| p.name.as_str()),
                port,
                items,
            ),
            Work::Progress | Work::Done => ("", "", 0, 0),
        };
        let what = if kind == "input" {
            format!("{items} items on input '{name}' (port {port}), which it already has (or whose stream has ended)")
        } else {
            format!(
                "room for {items} items on output '{name}' (port {port}), which is already free"
            )
        };
        RuntimeError::NodeFailed {
            node: self.name.clone(),
            source: NodeError::msg(format!(
                "bug in this node: it keeps asking for {what} without moving anything; \
                 its work must use the window it is given (and handle end of stream)"
            )),
        }
    }

    /// Moves tags on consumed input items to the outputs, rescaled by the node's policy.
    pub(crate) fn propagate_tags(&mut self, buf: &mut Vec<Tag>) {
        // A tag travels with its item: it goes on once the item is consumed, or once the output
        // the item maps to has been produced, whichever is first (a FIR produces outputs from
        // input it keeps as history, and its first outputs must not overtake the tags).
        let produced = self.outputs.iter().map(|o| o.items_written()).min();
        let mapped = match (self.policy, produced) {
            (
                TagPolicy::Ratio {
                    interpolation,
                    decimation,
                },
                Some(written),
            ) => {
                let interpolation = u128::from(interpolation.max(1));
                (u128::from(written) * u128::from(decimation)).div_ceil(interpolation) as u64
            }
            _ => 0,
        };
        for input in &self.inputs {
            input.take_tags(input.items_read().max(mapped), buf);
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
                let value =
                    crate::metadata::rescaled(&tag.key, &tag.value, interpolation, decimation);
                for output in &self.outputs {
                    output.add_tag(Tag {
                        index,
                        value: value.clone(),
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

    /// Runs the node's [`Node::init`](crate::Node::init) hook, on the thread that will run it.
    fn init(&mut self) -> Result<(), RuntimeError> {
        match catch_unwind(AssertUnwindSafe(|| self.node.init())) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(source)) => Err(RuntimeError::NodeFailed {
                node: self.name.clone(),
                source,
            }),
            Err(panic) => Err(RuntimeError::NodePanicked {
                node: self.name.clone(),
                message: panic_message(panic.as_ref()),
            }),
        }
    }

    /// Ends the node: runs its [`Node::stop`](crate::Node::stop) hook once (if it was started),
    /// records item counts, ends its output streams, detaches its inputs.
    pub(crate) fn finish(&mut self, stats: &mut NodeStats) {
        if self.started && !self.stopped {
            self.stopped = true;
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.node.stop())) {
                // The node is ending anyway; say so rather than lose it.
                eprintln!(
                    "sluice: warning: node '{}' panicked in its stop hook: {}",
                    self.name,
                    panic_message(panic.as_ref())
                );
            }
        }
        if let Ok(warnings) = catch_unwind(AssertUnwindSafe(|| self.node.warnings())) {
            stats.warnings.extend(warnings);
        }
        // Changes sent from now on are refused: the node will not fire again.
        self.control.0.close();
        let dropped: Vec<(String, u64)> = (self.inputs.iter_mut())
            .flat_map(|i| i.end_messages())
            .chain(self.outputs.iter().flat_map(|o| o.messages_dropped()))
            .collect();
        for (connection, n) in dropped {
            stats.messages_dropped += n;
            stats
                .warnings
                .push(format!("{n} messages dropped on {connection}"));
        }
        stats.items_in = self.items_in();
        stats.items_out = self.outputs.iter().map(|o| o.items_written()).sum();
        self.outputs.clear();
        self.inputs.clear();
    }
}

/// What a blocked node waits for first: half its queue, or its need if that is more. Waking
/// once per half queue instead of once per item keeps threads streaming in large chunks.
pub(crate) fn batch(items: usize, capacity: usize) -> usize {
    items.max(capacity / 2)
}

/// Spin detection for one node: remembers that its last need was already met when the
/// scheduler looked, and at which movement position.
#[derive(Debug, Default)]
pub(crate) struct SpinGuard {
    met: Option<(Work, u64)>,
}

impl SpinGuard {
    /// Called when `node` returned `work` (a need) and nothing in its group moved. Returns
    /// `Ok(true)` if the need is met now (re-run the node instead of waiting), or the node's bug.
    pub(crate) fn check(&mut self, node: &mut BuiltNode, work: Work) -> Result<bool, RuntimeError> {
        let met = node.need_met(work).unwrap_or(false);
        if !met {
            self.met = None;
            return Ok(false);
        }
        let position = node.movement();
        if self.met == Some((work, position)) {
            return Err(node.spin_error(work));
        }
        self.met = Some((work, position));
        Ok(true)
    }

    /// Forgets the last observation (the node moved).
    pub(crate) fn reset(&mut self) {
        self.met = None;
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-text payload".to_string())
}

/// Whether an error from `work` is the normal end of a node whose readers all left.
pub(crate) fn is_normal_end(err: &NodeError) -> bool {
    matches!(err, NodeError::OutputClosed { .. })
}
