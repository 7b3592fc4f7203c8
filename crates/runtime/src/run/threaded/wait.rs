//! How a thread of the threaded schedulers waits for a node's firing rule: a short spin over
//! its group's needs when it has a CPU of its own, a bounded wait for a batch (half a queue),
//! then blocking in slices that look at the stop flag, the trial of a split and pending
//! parameter changes, telling the watchdog what it waits for once a wait outlasts a slice.

use super::{Control, Member, BLOCKED, RUNNING, WAIT_SLICE};
use crate::graph::BuiltNode;
use crate::node::Work;
use std::sync::atomic::Ordering;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

/// A blocked node first waits this long for half its queue (of items, or of room) before it
/// waits for exactly what it asked for: it then wakes once per half queue instead of once per
/// commit of its peer, which in a pipeline of cheap nodes is the difference between streaming
/// and ping-pong (each wake-up is a context switch). Bounded, so a node whose peer can never
/// provide that much (a join, a feedback loop) loses at most this long per wait.
const BATCH_WAIT: Duration = Duration::from_micros(200);

/// A thread pinned to a CPU of its own looks at its group's needs for up to this long, without
/// a system call, before it parks: its peers run on other CPUs and usually provide within
/// microseconds, while waking a parked thread on this VM takes about 100 µs (a 10-stage copy
/// chain on two threads spent half its time waiting in futex hand-offs without it).
const SPIN_WINDOW: Duration = Duration::from_micros(500);

/// While a split is on trial, a blocked thread looks at least this often whether thread 0 wants
/// its nodes back (instead of every [`WAIT_SLICE`]): thread 0 waits for them, and its nodes with
/// it.
const TRIAL_WAIT_SLICE: Duration = Duration::from_millis(1);

/// Looks at the group's unmet needs for up to [`SPIN_WINDOW`] without a system call; true as
/// soon as one of them can be met with a batch (half its queue), or, when the window ends, if
/// one can be met at all. Waiting for a batch, not for the first free item, is what keeps the
/// threads streaming in large chunks; looking only every few hundred cycles keeps the spin off
/// the cache lines the peer thread is writing.
pub(super) fn spin_until_a_need_is_met(group: &mut [Member], needs: &[(usize, Work)]) -> bool {
    let start = Instant::now();
    loop {
        for &(k, work) in needs {
            let node = &mut group[k].node;
            // A node that may not wait for a batch this long takes what is there.
            let prompt = node.node.batch_wait().is_some_and(|d| start.elapsed() >= d);
            let met = if prompt {
                node.need_met(work)
            } else {
                node.need_met_in_batch(work)
            };
            if met.unwrap_or(true) {
                return true;
            }
        }
        if start.elapsed() >= SPIN_WINDOW {
            return needs
                .iter()
                .any(|&(k, work)| group[k].node.need_met(work).unwrap_or(true));
        }
        for _ in 0..128 {
            std::hint::spin_loop();
        }
    }
}

/// Waits up to [`BATCH_WAIT`] (or the node's own [`Node::batch_wait`](crate::Node::batch_wait))
/// for half of the queue behind `work`'s need (at least the need itself); true if that much
/// came.
fn wait_for_batch(node: &mut BuiltNode, work: Work) -> Result<bool, crate::NodeError> {
    let limit = node.node.batch_wait().unwrap_or(BATCH_WAIT).min(BATCH_WAIT);
    if limit.is_zero() {
        return Ok(false);
    }
    let deadline = Instant::now() + limit;
    Ok(match work {
        Work::NeedInput { port, items } => match node.inputs.get_mut(port) {
            Some(q) => q.wait(crate::run::batch(items, q.capacity()), deadline)?,
            None => false,
        },
        Work::NeedOutput { port, items } => match node.outputs.get_mut(port) {
            Some(q) => match q.wait(crate::run::batch(items, q.capacity()), deadline) {
                Err(sluice_queue::QueueError::NoReaders) => {
                    return Err(crate::NodeError::OutputClosed {
                        port: q.queue().to_string(),
                    })
                }
                other => other?,
            },
            None => false,
        },
        Work::Progress | Work::Done => true,
    })
}

/// Blocks until the node's firing rule can be met, the graph stops, or the queue fails; true if
/// it can be met. Waits longer than one slice mark the thread blocked for the watchdog. A thread
/// of several nodes passes `pooled_slice`: it waits at most that long and returns (false if the
/// need is still unmet) to look at its whole group, since another of its nodes may be able to
/// move meanwhile; it tells the watchdog itself what its nodes wait for. With `wake_for_stop`
/// it also returns (within a slice) when a graceful stop is asked for, and it always returns
/// (within a slice) when a change of a run-time parameter waits for the node.
pub(super) fn wait(
    node: &mut BuiltNode,
    work: Work,
    index: usize,
    ctl: &Control,
    pooled_slice: Option<Duration>,
    wake_for_stop: bool,
) -> Result<bool, crate::NodeError> {
    let me = &ctl.threads[index];
    if wait_for_batch(node, work)? {
        return Ok(true);
    }
    let mut announced = false;
    loop {
        let mut slice = pooled_slice.unwrap_or(WAIT_SLICE);
        if ctl.trial.load(Ordering::Relaxed) {
            slice = slice.min(TRIAL_WAIT_SLICE);
        }
        let deadline = Instant::now() + slice;
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
        let stop_now = wake_for_stop && ctl.stop_requested();
        // A change of a run-time parameter waits: fire the node so that it applies it.
        let merge = ctl.merge.load(Ordering::Acquire);
        if ready || stop_now || merge || node.has_mail() || ctl.stop.load(Ordering::Acquire) {
            if announced {
                me.state.store(RUNNING, Ordering::Release);
            }
            return Ok(ready);
        }
        if pooled_slice.is_some() {
            return Ok(false);
        }
        if !announced {
            // Only waits longer than one slice are reported to the watchdog.
            let description = node.describe_wait(work);
            ctl.waits.lock().unwrap_or_else(PoisonError::into_inner)[index] = description;
            me.state.store(BLOCKED, Ordering::Release);
            announced = true;
        }
    }
}
