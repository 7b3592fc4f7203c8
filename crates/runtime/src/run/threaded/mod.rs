//! Threaded scheduling. Every thread runs a contiguous group of nodes (in the order they were
//! added) in turn: it calls `work` on each live node of its group, and when a whole pass moves
//! nothing it blocks on one node's firing rule (preferring a queue shared with another thread,
//! where the missing items or room must come from). One node per thread is the Computational
//! Process Network model; a few threads with several nodes each keep chunks of items in cache.
//! The default ([`Scheduler::Auto`]) starts with one thread and splits its group over more
//! cores only where measurements say it pays (`auto.rs`), then takes the groups back onto one
//! thread if the split does not run faster. A watchdog turns an artificial
//! deadlock into an error naming the queues involved; the end of the run is an event (the last
//! thread to finish wakes the caller), not a poll.

use super::auto::{self, Calibration, Decided, Verdict};
use super::{RunOptions, Scheduler, SpinGuard, StopHandle, StopView};
use crate::graph::BuiltNode;
use crate::node::Work;
use crate::os;
use crate::stats::{NodeStats, RunReport};
use crate::RuntimeError;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wait::{spin_until_a_need_is_met, wait};

mod wait;

const RUNNING: u8 = 0;
const BLOCKED: u8 = 1;
const DONE: u8 = 2;

/// How long a blocked thread sleeps before it looks at the stop flag (and, for a thread of
/// several nodes, at the rest of its group) again.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// A thread of several nodes waits on one of its queues for this long at first before it looks
/// at the rest of its group again, doubling the wait (up to `WAIT_SLICE`) while nothing moves:
/// quick to notice that another node of the group can fire, and cheap when the group is idle.
const FIRST_POOLED_SLICE: Duration = Duration::from_micros(100);

/// How often the watchdog looks for a deadlock while the graph runs.
const WATCH_TICK: Duration = Duration::from_millis(20);

/// What each thread publishes for the watchdog. Each thread writes only its own entry.
struct ThreadState {
    state: AtomicU8,
    /// Count of passes that made progress.
    progress: AtomicU64,
    /// While a split is on trial: the items the thread's nodes have moved (read and written).
    moved: AtomicU64,
}

/// A node with what its thread keeps about it.
pub(crate) struct Member {
    /// The node's index in the graph.
    pub(super) index: usize,
    pub(super) node: BuiltNode,
    pub(super) stats: NodeStats,
    done: bool,
    spin: SpinGuard,
    /// CPU time spent in `work` while the default scheduler measures (see `Calibration`).
    pub(super) cpu: Duration,
}

impl Member {
    fn new(index: usize, node: BuiltNode) -> Self {
        Member {
            index,
            stats: NodeStats {
                name: node.name.clone(),
                ..NodeStats::default()
            },
            node,
            done: false,
            spin: SpinGuard::default(),
            cpu: Duration::ZERO,
        }
    }
}

type GroupHandle = (Vec<(usize, String)>, JoinHandle<Vec<(usize, NodeStats)>>);

struct Control {
    stop: AtomicBool,
    /// One entry per thread that may run (started or not yet).
    threads: Vec<CachePadded<ThreadState>>,
    /// What each blocked thread waits for (written only on the slow path, when it blocks).
    waits: Mutex<Vec<String>>,
    error: Mutex<Option<RuntimeError>>,
    /// Threads still running; the last one to finish wakes the caller through `finished`.
    running: AtomicUsize,
    finished_lock: Mutex<()>,
    finished: Condvar,
    /// Every thread started, for the caller to join.
    handles: Mutex<Vec<GroupHandle>>,
    /// Whether threads spin on their group's needs before parking: only when every thread is
    /// pinned to a CPU of its own. (Unpinned, Linux may run two threads on one CPU, and then a
    /// spinning thread keeps its peer off the CPU: a 10-stage chain on two unpinned spinning
    /// threads took 6 s instead of 0.14 s.)
    spin: AtomicBool,
    /// The CPUs threads are pinned to, thread `unit` on `cpus[unit % len]` (empty: none), and
    /// the real-time priority asked for.
    cpus: Vec<usize>,
    priority: Option<i32>,
    warnings: Mutex<Vec<String>>,
    /// Under [`Scheduler::Auto`], when thread 0 measures its group and may split it: the most
    /// groups it may make and the graph's shape, under which the decision is remembered.
    auto: Option<(usize, u64)>,
    /// How the nodes were scheduled, in words, for the run report.
    scheduling: Mutex<String>,
    /// Whether a split of the default scheduler is on trial (blocked threads then look often
    /// at `merge`), and whether thread 0 asks the other threads to hand their nodes back.
    trial: AtomicBool,
    merge: AtomicBool,
    /// The groups handed back to thread 0.
    handed_back: Mutex<Vec<Vec<Member>>>,
    /// The caller's request for a graceful stop, and whether a source was ended for it.
    stop_request: Option<StopHandle>,
    stopped: AtomicBool,
    /// Sources the graceful stop leaves running ([`RunOptions::spared_by_stop`]).
    spared_by_stop: Vec<String>,
}

impl Control {
    /// Whether the caller asked for a graceful stop.
    fn stop_requested(&self) -> bool {
        self.stop_request
            .as_ref()
            .is_some_and(StopHandle::is_stopped)
    }

    fn fail(&self, err: RuntimeError) {
        let mut slot = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(err);
        }
        self.stop.store(true, Ordering::Release);
    }

    /// Marks thread `unit` done and wakes the caller if it was the last.
    fn thread_done(&self, unit: usize) {
        self.threads[unit].state.store(DONE, Ordering::Release);
        if self.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _guard = self
                .finished_lock
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            self.finished.notify_all();
        }
    }
}

/// Marks its thread done when dropped, also when the thread unwinds from a panic outside `work`
/// (in a node's drop, say), so the watchdog never waits for a thread that is gone.
struct DoneGuard<'a> {
    ctl: &'a Control,
    unit: usize,
}

impl Drop for DoneGuard<'_> {
    fn drop(&mut self) {
        self.ctl.thread_done(self.unit);
    }
}

/// Starts thread `unit` on `group`. Counted as running before it starts, so that the caller
/// never sees zero running threads while a split is handing nodes over.
fn spawn_group(ctl: &Arc<Control>, unit: usize, group: Vec<Member>, pin: bool) {
    ctl.threads[unit].state.store(RUNNING, Ordering::Release);
    ctl.running.fetch_add(1, Ordering::AcqRel);
    let names: Vec<(usize, String)> = group
        .iter()
        .map(|m| (m.index, m.node.name.clone()))
        .collect();
    let thread_name: String = names[0].1.chars().take(15).collect();
    let unit_ctl = Arc::clone(ctl);
    let spawned = std::thread::Builder::new()
        .name(thread_name)
        .spawn(move || {
            let ctl = unit_ctl;
            let _done = DoneGuard { ctl: &ctl, unit };
            let pin = (pin && !ctl.cpus.is_empty()).then(|| ctl.cpus[unit % ctl.cpus.len()]);
            let mut notes = os::configure_current_thread(pin, ctl.priority);
            if !notes.is_empty() {
                let mut w = ctl.warnings.lock().unwrap_or_else(PoisonError::into_inner);
                w.append(&mut notes);
            }
            group_loop(unit, group, &ctl)
        });
    match spawned {
        Ok(h) => ctl
            .handles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((names, h)),
        Err(e) => {
            ctl.fail(RuntimeError::Spawn {
                node: names[0].1.clone(),
                message: e.to_string(),
            });
            ctl.thread_done(unit);
        }
    }
}

/// Runs `nodes` as `opts.scheduler` says and waits for the end.
pub(crate) fn run(mut nodes: Vec<BuiltNode>, opts: &RunOptions) -> Result<RunReport, RuntimeError> {
    let start = Instant::now();
    if let Some(progress) = &opts.progress {
        progress.attach(&mut nodes);
    }
    if let Some(monitor) = &opts.monitor {
        monitor.attach(&nodes);
    }
    let count = nodes.len();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let auto_cpus = (opts.scheduler == Scheduler::Auto)
        .then(os::allowed_cpus)
        .unwrap_or_default();
    // Under the default scheduler, as many groups as there are cores to run them (and CPUs to
    // pin them to), nodes to fill them, and no more.
    let auto_groups = cores.min(auto_cpus.len()).min(count).max(1);
    let auto_key = (auto_groups > 1).then(|| auto::graph_key(&nodes, auto_groups));
    // A run of a graph measured before in this process starts in its grouping.
    let mut remembered: Option<Decided> = auto_key.and_then(auto::remembered);
    let (groups, max_threads) = match opts.scheduler {
        Scheduler::ThreadPerNode => (split_groups(nodes, count), count),
        Scheduler::Pooled(n) => {
            let groups = split_groups(nodes, n);
            let len = groups.len();
            (groups, len)
        }
        Scheduler::Auto => match &remembered {
            Some(decided) => (split_at(nodes, &decided.cuts), auto_groups),
            None => (split_groups(nodes, 1), auto_groups),
        },
    };
    // A remembered split pins each group to a CPU of its own and spins, as a split made while
    // running does.
    let remembered_split = groups.len() > 1 && remembered.is_some();
    let auto = match remembered {
        Some(_) => None,
        None => auto_key.map(|key| (auto_groups, key)),
    };
    let ctl = Arc::new(Control {
        stop: AtomicBool::new(false),
        threads: (0..max_threads.max(groups.len()))
            .map(|_| {
                CachePadded::new(ThreadState {
                    state: AtomicU8::new(DONE),
                    progress: AtomicU64::new(0),
                    moved: AtomicU64::new(0),
                })
            })
            .collect(),
        waits: Mutex::new(vec![String::new(); max_threads.max(groups.len())]),
        error: Mutex::new(None),
        running: AtomicUsize::new(0),
        finished_lock: Mutex::new(()),
        finished: Condvar::new(),
        handles: Mutex::new(Vec::new()),
        spin: AtomicBool::new((opts.pin_cores && max_threads <= cores) || remembered_split),
        cpus: if opts.scheduler == Scheduler::Auto {
            auto_cpus
        } else if opts.pin_cores {
            os::allowed_cpus()
        } else {
            Vec::new()
        },
        priority: opts.realtime_priority,
        warnings: Mutex::new(Vec::new()),
        auto,
        scheduling: Mutex::new(match opts.scheduler {
            Scheduler::ThreadPerNode => "one thread per node".to_string(),
            Scheduler::Pooled(n) => format!("{n} pooled threads"),
            Scheduler::Auto => match remembered.take() {
                Some(decided) => format!("{} (remembered from an earlier run)", decided.words),
                None if auto.is_some() => {
                    "one thread (the run ended before the measurement)".to_string()
                }
                None => "one thread (one CPU or one node)".to_string(),
            },
        }),
        trial: AtomicBool::new(false),
        merge: AtomicBool::new(false),
        handed_back: Mutex::new(Vec::new()),
        stop_request: opts.stop.clone(),
        spared_by_stop: opts.spared_by_stop.clone(),
        stopped: AtomicBool::new(false),
    });
    for (unit, group) in groups.into_iter().enumerate() {
        spawn_group(&ctl, unit, group, opts.pin_cores || remembered_split);
        if ctl.stop.load(Ordering::Acquire) {
            break;
        }
    }
    watch(&ctl, opts.deadlock_timeout);
    let mut stats: Vec<Option<NodeStats>> = vec![None; count];
    let handles = std::mem::take(&mut *ctl.handles.lock().unwrap_or_else(PoisonError::into_inner));
    // Threads that handed their nodes back to thread 0 return none and do not count.
    let mut threads = 0;
    for (names, h) in handles {
        match h.join() {
            Ok(group_stats) => {
                threads += usize::from(!group_stats.is_empty());
                for (i, s) in group_stats {
                    stats[i] = Some(s);
                }
            }
            Err(panic) => {
                threads += 1;
                let who: Vec<&str> = names.iter().map(|(_, n)| n.as_str()).collect();
                ctl.fail(RuntimeError::NodePanicked {
                    node: who.join("' or '"),
                    message: super::panic_message(panic.as_ref()),
                });
                for (i, name) in names {
                    stats[i].get_or_insert(NodeStats {
                        name,
                        ..NodeStats::default()
                    });
                }
            }
        }
    }
    if let Some(err) = ctl
        .error
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    {
        return Err(err);
    }
    let warnings =
        std::mem::take(&mut *ctl.warnings.lock().unwrap_or_else(PoisonError::into_inner));
    let scheduling = std::mem::take(
        &mut *ctl
            .scheduling
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    Ok(RunReport {
        nodes: stats.into_iter().flatten().collect(),
        wall: start.elapsed(),
        threads,
        scheduling,
        stopped: ctl.stopped.load(Ordering::Acquire),
        warnings,
    })
}

/// Splits the nodes, in the order they were added, into at most `threads` contiguous groups
/// of nearly equal weight; each node keeps its index in the graph. A node weighs its number of
/// ports: every port is a stream it reads or writes, so this tracks the memory traffic per
/// item (a copy weighs 2, a source or sink 1) without knowing what the node computes.
fn split_groups(nodes: Vec<BuiltNode>, threads: usize) -> Vec<Vec<Member>> {
    let weights: Vec<usize> = nodes
        .iter()
        .map(|n| (n.inputs.len() + n.outputs.len()).max(1))
        .collect();
    let total: usize = weights.iter().sum();
    let threads = threads.clamp(1, nodes.len().max(1));
    let mut groups: Vec<Vec<Member>> = (0..threads).map(|_| Vec::new()).collect();
    let mut before = 0;
    for (i, (node, w)) in nodes.into_iter().zip(weights).enumerate() {
        // The group whose share of the total weight holds this node's midpoint.
        let group = ((2 * before + w) * threads / (2 * total.max(1))).min(threads - 1);
        groups[group].push(Member::new(i, node));
        before += w;
    }
    groups.retain(|g| !g.is_empty());
    groups
}

/// Splits the nodes, in the order they were added, into groups that start at each of `cuts`
/// (ascending indices; the first group starts at 0); each node keeps its index in the graph.
fn split_at(nodes: Vec<BuiltNode>, cuts: &[usize]) -> Vec<Vec<Member>> {
    let mut groups: Vec<Vec<Member>> = (0..=cuts.len()).map(|_| Vec::new()).collect();
    for (i, node) in nodes.into_iter().enumerate() {
        let group = cuts.iter().filter(|&&c| c <= i).count();
        groups[group].push(Member::new(i, node));
    }
    groups.retain(|g| !g.is_empty());
    groups
}

/// Waits until every thread is done, woken by the last one; meanwhile declares a deadlock when
/// every live thread has been blocked, with no progress anywhere, for `timeout`.
fn watch(ctl: &Control, timeout: Duration) {
    let tick = WATCH_TICK.min(timeout);
    let mut stalled_since: Option<(Instant, u64)> = None;
    let mut guard = ctl
        .finished_lock
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    loop {
        if ctl.running.load(Ordering::Acquire) == 0 {
            return;
        }
        guard = ctl
            .finished
            .wait_timeout(guard, tick)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        if ctl.running.load(Ordering::Acquire) == 0 {
            return;
        }
        if ctl.stop.load(Ordering::Acquire) {
            // Threads notice the flag within one wait slice; keep waiting until they are done.
            continue;
        }
        let mut live = 0;
        let mut blocked = 0;
        let mut progress = 0u64;
        for n in &ctl.threads {
            match n.state.load(Ordering::Acquire) {
                DONE => {}
                s => {
                    live += 1;
                    blocked += usize::from(s == BLOCKED);
                }
            }
            progress = progress.wrapping_add(n.progress.load(Ordering::Acquire));
        }
        if live == 0 || blocked < live {
            stalled_since = None;
            continue;
        }
        match stalled_since {
            Some((since, seen)) if seen == progress => {
                if since.elapsed() >= timeout {
                    let waits = ctl.waits.lock().unwrap_or_else(PoisonError::into_inner);
                    let described: Vec<&str> = waits
                        .iter()
                        .zip(&ctl.threads)
                        .filter(|(_, n)| n.state.load(Ordering::Acquire) == BLOCKED)
                        .map(|(w, _)| w.as_str())
                        .collect();
                    let err = RuntimeError::Deadlock {
                        waits: described.join("; "),
                    };
                    drop(waits);
                    ctl.fail(err);
                }
            }
            _ => stalled_since = Some((Instant::now(), progress)),
        }
    }
}

/// What a pass over the group ended with.
enum Pass {
    /// Every node is done, or the graph stops.
    Finished,
    /// Hand the nodes from each of these indices on to a new thread each (the default
    /// scheduler's decision).
    Split(Vec<usize>),
    /// Take the groups of the other threads back (the split did not pay).
    Merge,
    /// Hand this thread's group back to thread 0, which asked for it.
    HandBack,
}

/// One thread's life: run its group; under the default scheduler, thread 0 may hand parts of
/// its group to new threads once, after the measurement.
fn group_loop(unit: usize, mut group: Vec<Member>, ctl: &Arc<Control>) -> Vec<(usize, NodeStats)> {
    let mut calibration = ctl
        .auto
        .filter(|_| unit == 0)
        .map(|(groups, key)| Calibration::new(groups, key));
    // Threads started by a split, which a merge waits for.
    let mut started = 0;
    loop {
        match run_group(unit, &mut group, ctl, &mut calibration) {
            Pass::Finished => break,
            Pass::HandBack => {
                ctl.handed_back
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(std::mem::take(&mut group));
                return Vec::new();
            }
            Pass::Merge => {
                merge_back(&mut group, ctl, started);
                started = 0;
            }
            Pass::Split(cuts) => {
                // Each group gets a CPU of its own (there are at least as many CPUs as groups),
                // so that all run at once and may spin.
                if ctl.cpus.len() > cuts.len() {
                    for note in os::configure_current_thread(Some(ctl.cpus[0]), None) {
                        ctl.warnings
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(note);
                    }
                    ctl.spin.store(true, Ordering::Release);
                }
                ctl.trial.store(
                    calibration.as_ref().is_some_and(Calibration::on_trial),
                    Ordering::Release,
                );
                for (unit, &at) in cuts.iter().enumerate().rev() {
                    let tail = group.split_off(at);
                    spawn_group(ctl, unit + 1, tail, true);
                }
                started = cuts.len();
            }
        }
    }
    // Ending every node ends its output streams and detaches its inputs, which releases the
    // peers of a node that failed: downstream sees end of stream, upstream a closed output.
    for m in group.iter_mut() {
        if !m.done {
            m.node.finish(&mut m.stats);
        }
    }
    group.into_iter().map(|m| (m.index, m.stats)).collect()
}

/// Stops the graph for `node`'s error, and shows the error in the node's live counts at once
/// (a console lists it while the rest of the graph winds down).
fn fail_node(ctl: &Control, node: &BuiltNode, err: RuntimeError) {
    if let Some(progress) = &node.progress {
        progress.record_error(&err);
    }
    ctl.fail(err);
}

/// Thread 0 takes back the groups of the `started` threads a split started, after it asked them
/// (each hands its group back at its next turn, or ends if its nodes are done or the graph
/// stops), and runs every node on one thread again, on any allowed CPU, without spinning.
fn merge_back(group: &mut Vec<Member>, ctl: &Control, started: usize) {
    ctl.merge.store(true, Ordering::Release);
    while (1..=started).any(|u| ctl.threads[u].state.load(Ordering::Acquire) != DONE) {
        std::thread::sleep(Duration::from_micros(50));
    }
    ctl.merge.store(false, Ordering::Release);
    ctl.trial.store(false, Ordering::Release);
    ctl.spin.store(false, Ordering::Release);
    let handed = std::mem::take(
        &mut *ctl
            .handed_back
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    group.extend(handed.into_iter().flatten());
    group.sort_by_key(|m| m.index);
    if let Err(e) = os::allow_cpus(&ctl.cpus) {
        ctl.warnings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(format!(
                "could not unpin the graph's thread after a merge: {e}"
            ));
    }
}

/// Works the group's live nodes in turn until they are all done, the graph stops, the
/// `calibration` says to split or merge, or (on another thread than 0) thread 0 asks for the
/// nodes back; when a whole pass moves nothing, blocks on one node's firing rule. A group of one
/// node is the CPN thread of that node.
fn run_group(
    unit: usize,
    group: &mut [Member],
    ctl: &Control,
    calibration: &mut Option<Calibration>,
) -> Pass {
    let me = &ctl.threads[unit];
    let members: Vec<usize> = group.iter().map(|m| m.index).collect();
    let pooled = group.len() > 1;
    let mut needs: Vec<(usize, Work)> = Vec::with_capacity(group.len());
    let mut tags = Vec::new();
    let mut progress = me.progress.load(Ordering::Relaxed);
    let mut slice = if pooled {
        FIRST_POOLED_SLICE
    } else {
        WAIT_SLICE
    };
    let mut stop_applied = false;
    'run: while !ctl.stop.load(Ordering::Relaxed) {
        if unit != 0 && ctl.merge.load(Ordering::Acquire) {
            return Pass::HandBack;
        }
        if ctl
            .stop_request
            .as_ref()
            .is_some_and(StopHandle::is_aborted)
        {
            // The hard stop: every thread leaves at its next turn (the nodes are finished
            // below, without draining).
            ctl.stopped.store(true, Ordering::Release);
            ctl.stop.store(true, Ordering::Release);
            break 'run;
        }
        if !stop_applied && ctl.stop_requested() {
            // A graceful stop: this group's sources end as if their streams were over; the
            // items already in the graph drain and the sinks finish normally.
            stop_applied = true;
            let ends = |m: &Member| {
                !m.done && m.node.is_source() && !ctl.spared_by_stop.contains(&m.node.name)
            };
            for m in group.iter_mut().filter(|m| ends(m)) {
                m.done = true;
                m.node.finish(&mut m.stats);
                ctl.stopped.store(true, Ordering::Release);
            }
        }
        let mut moved = false;
        let mut live = 0;
        // The need to block on if nothing moves: one on a queue shared with another thread
        // if there is one, else the first.
        let mut blocked_on: Option<(usize, Work)> = None;
        let mut blocked_external = false;
        needs.clear();
        for (k, m) in group.iter_mut().enumerate() {
            if m.done {
                continue;
            }
            live += 1;
            let t0 = Instant::now();
            let cpu0 = calibration
                .as_ref()
                .is_some_and(Calibration::measuring)
                .then(os::thread_cpu_time);
            let outcome = m.node.step(
                &mut tags,
                StopView {
                    request: ctl.stop_request.as_ref(),
                    abort: Some(&ctl.stop),
                },
            );
            let slept = crate::stats::take_slept();
            m.stats.busy += t0.elapsed().saturating_sub(slept);
            m.stats.sleeping += slept;
            if let Some(cpu0) = cpu0 {
                m.cpu += os::thread_cpu_time().saturating_sub(cpu0);
            }
            m.stats.work_calls += 1;
            let counted = crate::stats::take_counted();
            if counted != crate::stats::Counted::default() {
                // Rare: only a node in trouble, or a stream endpoint, pays for the extra stores.
                m.stats.troubles.add(counted.troubles);
                if let Some(progress) = &m.node.progress {
                    if !counted.troubles.is_zero() {
                        progress.record_troubles(m.stats.troubles);
                    }
                    progress.add_bytes(counted.bytes);
                }
            }
            if let Some(progress) = &m.node.progress {
                progress.record_times(&m.stats);
            }
            let work = match outcome {
                Ok(work) => work,
                Err(err) => {
                    fail_node(ctl, &m.node, err);
                    break 'run;
                }
            };
            match work {
                Work::Progress => {
                    moved = true;
                    m.spin.reset();
                }
                Work::Done => {
                    moved = true;
                    m.done = true;
                    m.node.finish(&mut m.stats);
                }
                Work::NeedInput { .. } | Work::NeedOutput { .. } => {
                    needs.push((k, work));
                    let external = m.node.waits_outside(work, &members);
                    if blocked_on.is_none() || (external && !blocked_external) {
                        blocked_on = Some((k, work));
                        blocked_external = external;
                    }
                }
            }
        }
        if live == 0 {
            break;
        }
        if moved {
            progress += 1;
            me.progress.store(progress, Ordering::Release);
            if ctl.trial.load(Ordering::Relaxed) {
                me.moved
                    .store(auto::moved_by_group(group), Ordering::Release);
            }
            if pooled {
                me.state.store(RUNNING, Ordering::Release);
                slice = FIRST_POOLED_SLICE;
            }
            if let Some(verdict) = calibration.as_mut().and_then(|cal| {
                cal.step(group, &ctl.cpus, |unit| {
                    ctl.threads[unit].moved.load(Ordering::Acquire)
                })
            }) {
                let report = |words: String| {
                    *ctl.scheduling
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = words;
                };
                match verdict {
                    Verdict::Settled(words) => {
                        report(words);
                        *calibration = None;
                        ctl.trial.store(false, Ordering::Release);
                    }
                    Verdict::Split(cuts, words) => {
                        report(words);
                        return Pass::Split(cuts);
                    }
                    Verdict::Merge(words) => {
                        report(words);
                        *calibration = None;
                        return Pass::Merge;
                    }
                }
            }
            continue;
        }
        let Some((k, work)) = blocked_on else {
            continue;
        };
        // A need that is met already means "run again" (or, twice in a row with nothing
        // moved, a node that ignores what it is given: the guard reports it).
        let mut any_met = false;
        for &(n, need) in &needs {
            let m = &mut group[n];
            match m.spin.check(&mut m.node, need) {
                Ok(met) => any_met |= met,
                Err(err) => {
                    fail_node(ctl, &m.node, err);
                    break 'run;
                }
            }
        }
        if any_met || (ctl.spin.load(Ordering::Relaxed) && spin_until_a_need_is_met(group, &needs))
        {
            continue;
        }
        let t1 = Instant::now();
        let result = wait(
            &mut group[k].node,
            work,
            unit,
            ctl,
            pooled.then_some(slice),
            !stop_applied,
        );
        slice = (slice * 2).min(WAIT_SLICE);
        group[k].stats.waiting += t1.elapsed();
        if let Some(progress) = &group[k].node.progress {
            progress.record_times(&group[k].stats);
        }
        if pooled && matches!(result, Ok(false)) && me.state.load(Ordering::Relaxed) != BLOCKED {
            // Tell the watchdog what every node of the group waits for.
            let described: Vec<String> = needs
                .iter()
                .map(|&(n, need)| group[n].node.describe_wait(need))
                .collect();
            ctl.waits.lock().unwrap_or_else(PoisonError::into_inner)[unit] = described.join("; ");
            me.state.store(BLOCKED, Ordering::Release);
        }
        let m = &mut group[k];
        if let Err(source) = result {
            if super::is_normal_end(&source) {
                m.done = true;
                m.node.finish(&mut m.stats);
            } else {
                let err = RuntimeError::NodeFailed {
                    node: m.node.name.clone(),
                    source,
                };
                fail_node(ctl, &m.node, err);
                break;
            }
        }
    }
    Pass::Finished
}
