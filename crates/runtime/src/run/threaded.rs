//! One thread per node (the Computational Process Network model), with a watchdog that turns an
//! artificial deadlock into an error naming the queues involved.

use super::{is_normal_end, RunOptions};
use crate::graph::BuiltNode;
use crate::node::Work;
use crate::os;
use crate::stats::{NodeStats, RunReport};
use crate::RuntimeError;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

const RUNNING: u8 = 0;
const BLOCKED: u8 = 1;
const DONE: u8 = 2;

/// How long a blocked node sleeps before it looks at the stop flag again.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// What each node thread publishes for the watchdog. Each node writes only its own entry.
#[derive(Default)]
struct NodeState {
    state: AtomicU8,
    /// Count of work calls that made progress.
    progress: AtomicU64,
}

struct Control {
    stop: AtomicBool,
    nodes: Vec<CachePadded<NodeState>>,
    /// What each blocked node waits for (written only on the slow path, when it blocks).
    waits: Mutex<Vec<String>>,
    error: Mutex<Option<RuntimeError>>,
}

impl Control {
    fn fail(&self, err: RuntimeError) {
        let mut slot = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(err);
        }
        self.stop.store(true, Ordering::Release);
    }
}

pub(crate) fn run(nodes: Vec<BuiltNode>, opts: &RunOptions) -> Result<RunReport, RuntimeError> {
    let start = Instant::now();
    let ctl = Arc::new(Control {
        stop: AtomicBool::new(false),
        nodes: (0..nodes.len()).map(|_| Default::default()).collect(),
        waits: Mutex::new(vec![String::new(); nodes.len()]),
        error: Mutex::new(None),
    });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut handles = Vec::with_capacity(nodes.len());
    for (index, node) in nodes.into_iter().enumerate() {
        let node_ctl = Arc::clone(&ctl);
        let warnings = Arc::clone(&warnings);
        let name = node.name.clone();
        let pin = opts.pin_cores.then_some(index % cores);
        let priority = opts.realtime_priority;
        let thread_name: String = name.chars().take(15).collect();
        let spawned = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                let mut notes = os::configure_current_thread(pin, priority);
                if !notes.is_empty() {
                    let mut w = warnings.lock().unwrap_or_else(PoisonError::into_inner);
                    w.append(&mut notes);
                }
                node_loop(index, node, &node_ctl)
            });
        match spawned {
            Ok(h) => handles.push((name, h)),
            Err(e) => {
                ctl.fail(RuntimeError::Spawn {
                    node: name,
                    message: e.to_string(),
                });
                break;
            }
        }
    }
    watch(&ctl, opts.deadlock_timeout);
    let mut stats = Vec::with_capacity(handles.len());
    for (name, h) in handles {
        match h.join() {
            Ok(s) => stats.push(s),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                ctl.fail(RuntimeError::NodePanicked {
                    node: name.clone(),
                    message,
                });
                stats.push(NodeStats {
                    name,
                    ..NodeStats::default()
                });
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
    let warnings = std::mem::take(&mut *warnings.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(RunReport {
        nodes: stats,
        wall: start.elapsed(),
        warnings,
    })
}

/// Watches until every node is done; declares a deadlock when every live node has been blocked,
/// with no progress anywhere, for `timeout`.
fn watch(ctl: &Control, timeout: Duration) {
    let tick = Duration::from_millis(20).min(timeout);
    let mut stalled_since: Option<(Instant, u64)> = None;
    loop {
        std::thread::sleep(tick);
        let mut live = 0;
        let mut blocked = 0;
        let mut progress = 0u64;
        for n in &ctl.nodes {
            match n.state.load(Ordering::Acquire) {
                DONE => {}
                s => {
                    live += 1;
                    blocked += usize::from(s == BLOCKED);
                }
            }
            progress = progress.wrapping_add(n.progress.load(Ordering::Acquire));
        }
        if live == 0 {
            return;
        }
        if ctl.stop.load(Ordering::Acquire) {
            // Threads notice the flag within one wait slice; keep looping until they are done.
            continue;
        }
        if blocked < live {
            stalled_since = None;
            continue;
        }
        match stalled_since {
            Some((since, seen)) if seen == progress => {
                if since.elapsed() >= timeout {
                    let waits = ctl.waits.lock().unwrap_or_else(PoisonError::into_inner);
                    let described: Vec<&str> = waits
                        .iter()
                        .zip(&ctl.nodes)
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

/// A node's thread: work, wait when it cannot fire, stop on error or when told to.
fn node_loop(index: usize, mut node: BuiltNode, ctl: &Control) -> NodeStats {
    let me = &ctl.nodes[index];
    let mut stats = NodeStats {
        name: node.name.clone(),
        ..NodeStats::default()
    };
    let mut tags = Vec::new();
    let mut progress = 0u64;
    while !ctl.stop.load(Ordering::Relaxed) {
        let t0 = Instant::now();
        let outcome = node.call_work();
        stats.busy += t0.elapsed();
        stats.work_calls += 1;
        node.propagate_tags(&mut tags);
        let work = match outcome {
            Ok(w) => w,
            Err(e) if is_normal_end(&e) => Work::Done,
            Err(source) => {
                ctl.fail(RuntimeError::NodeFailed {
                    node: node.name.clone(),
                    source,
                });
                break;
            }
        };
        match work {
            Work::Progress => {
                progress += 1;
                me.progress.store(progress, Ordering::Release);
            }
            Work::Done => break,
            Work::NeedInput { .. } | Work::NeedOutput { .. } => {
                let t1 = Instant::now();
                let result = wait(&mut node, work, index, ctl);
                stats.waiting += t1.elapsed();
                if let Err(source) = result {
                    if !is_normal_end(&source) {
                        ctl.fail(RuntimeError::NodeFailed {
                            node: node.name.clone(),
                            source,
                        });
                    }
                    break;
                }
            }
        }
    }
    node.finish(&mut stats);
    me.state.store(DONE, Ordering::Release);
    stats
}

/// Blocks until the node's firing rule can be met, the graph stops, or the queue fails.
fn wait(
    node: &mut BuiltNode,
    work: Work,
    index: usize,
    ctl: &Control,
) -> Result<(), crate::NodeError> {
    let me = &ctl.nodes[index];
    let mut announced = false;
    loop {
        let deadline = Instant::now() + WAIT_SLICE;
        let ready = match work {
            Work::NeedInput { port, items } => match node.inputs.get_mut(port) {
                Some(q) => q.wait(items, deadline)?,
                None => {
                    return Err(crate::NodeError::NoSuchPort {
                        kind: "input",
                        index: port,
                    })
                }
            },
            Work::NeedOutput { port, items } => match node.outputs.get_mut(port) {
                Some(q) => match q.wait(items, deadline) {
                    Err(sluice_queue::QueueError::NoReaders) => {
                        return Err(crate::NodeError::OutputClosed {
                            port: q.queue().to_string(),
                        })
                    }
                    other => other?,
                },
                None => {
                    return Err(crate::NodeError::NoSuchPort {
                        kind: "output",
                        index: port,
                    })
                }
            },
            Work::Progress | Work::Done => true,
        };
        if ready || ctl.stop.load(Ordering::Acquire) {
            break;
        }
        if !announced {
            // Only waits longer than one slice are reported to the watchdog.
            let description = node.describe_wait(work);
            ctl.waits.lock().unwrap_or_else(PoisonError::into_inner)[index] = description;
            me.state.store(BLOCKED, Ordering::Release);
            announced = true;
        }
    }
    if announced {
        me.state.store(RUNNING, Ordering::Release);
    }
    Ok(())
}
