//! The default scheduler's one decision: after a short measurement on one thread, should the
//! graph's nodes be split over more cores, and where?
//!
//! A thread that runs a contiguous group of nodes keeps every chunk of items in its own cache;
//! splitting the group over two cores halves the work of each but makes every item that crosses
//! the cut travel between cores. The cut then behaves like one more stage of the pipeline, with
//! a throughput of its own: on the development machine (2 vCPUs of an AMD EPYC, shared) about
//! 5.5 GB/s. Measured there with `sluice run` of null source → head → k copies → null sink,
//! 100 M complex items, one thread against two pinned ones: k = 1: 0.052 s against 0.153 s
//! (the cut, 8 B per item at 5.5 GB/s, is the bottleneck); k = 4: 0.127 s against 0.116–0.145 s;
//! k = 10: 0.215 s against 0.14 s; k = 32: 0.80 s against 0.39 s. The estimate below,
//! `max(work before the cut, work after it, bytes across it / 5.5 GB/s)`, predicts all four.
//! So the split is decided from measurements: each node's busy time during the first
//! [`CALIBRATION`] on one thread, and the bytes that would cross each possible cut.

use super::threaded::Member;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long the default scheduler lets every node warm up on one thread, and then how long it
/// measures them, before it decides.
pub(crate) const CALIBRATION: Duration = Duration::from_millis(30);

/// Bytes per second that one core can pass to another through the cache hierarchy: the
/// throughput of a 1-stage copy chain split over two pinned, spinning threads on the
/// development machine (650 M items/s × 8 B, see the module docs).
const CROSS_CORE_BYTES_PER_SEC: f64 = 5.5e9;

/// What one message handed from one core to another costs, in the bytes of stream items that
/// cost as much to pass: its inbox's lock and slot, the cache lines of its value (a PDU's
/// metadata entries and vector header) and, more often than for a stream chunk, a wake-up of
/// the other thread. Measured with `sluice bench messages` (64-sample PDUs through six message
/// hops, 2-vCPU VM): about 2 µs per PDU on one thread, 2.8–5 µs on two threads cut at one
/// message edge, so each message across the cut costs about 3 µs, 16 KiB at
/// [`CROSS_CORE_BYTES_PER_SEC`]. A message's own bytes (a PDU's vector, allocated on one core
/// and freed on the other) count besides. Counting a message as its one-byte slot made the
/// default scheduler split such chains and run them 2–3 times slower than one thread.
pub(crate) const MESSAGE_CROSSING_BYTES: u64 = 16 << 10;

/// Below this share of the measurement busy, a thread is not worth splitting.
const IDLE_SHARE: f64 = 0.1;

/// A split must promise at least this speed-up to be made (measurements are noisy).
const MIN_GAIN: f64 = 1.3;

/// The outcome of the measurement, in words for the run report.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    /// Where to cut: the index of the first node of the second group (None: keep one thread).
    pub cut: Option<usize>,
    /// Seconds of work the group did during the measurement, on one thread.
    pub busy: f64,
    /// The best split's estimated seconds for the same work.
    pub estimate: f64,
}

/// Where to cut a group of nodes (in graph order) in two, if it pays. `busy[k]` is node k's
/// busy (CPU) seconds during the calibration, `crossing[j]` the bytes written across a cut
/// before node j, `waited` the seconds the thread spent blocked in the scheduler's waits and
/// `elapsed` the calibration's wall time.
pub(crate) fn decide(busy: &[f64], crossing: &[f64], waited: f64, elapsed: f64) -> Decision {
    let total: f64 = busy.iter().sum();
    let keep = Decision {
        cut: None,
        busy: total,
        estimate: total,
    };
    // A thread that mostly waits (for a device, a file, a slow source) gains nothing from a
    // split. (Time it was preempted by other processes is neither busy nor waiting.)
    if busy.len() < 2 || waited > 0.5 * elapsed {
        return keep;
    }
    // A thread that is mostly idle (its nodes sleep, as a throttle does, or have little to do)
    // is not the bottleneck either.
    if total < IDLE_SHARE * elapsed {
        return keep;
    }
    let mut before = 0.0;
    // (cut, estimated seconds, imbalance): the fastest cut, and among equally fast ones (when
    // the transfer dominates) the most balanced.
    let mut best: Option<(usize, f64, f64)> = None;
    for j in 1..busy.len() {
        before += busy[j - 1];
        let transfer = crossing[j] / CROSS_CORE_BYTES_PER_SEC;
        let estimate = before.max(total - before).max(transfer);
        let imbalance = (2.0 * before - total).abs();
        let better = best.is_none_or(|(_, t, i)| {
            estimate < t * (1.0 - 1e-9) || (estimate <= t * (1.0 + 1e-9) && imbalance < i)
        });
        if better {
            best = Some((j, estimate, imbalance));
        }
    }
    match best {
        Some((j, t, _)) => Decision {
            cut: (t * MIN_GAIN < total).then_some(j),
            busy: total,
            estimate: t,
        },
        None => keep,
    }
}

/// The default scheduler's measurement: after a warm-up of [`CALIBRATION`] (first touches of
/// the queues' pages, caches filling), it records each node's busy time (CPU time of the thread
/// inside `work`, so that preemption by other processes does not count) and the bytes written
/// across each possible cut; one more [`CALIBRATION`] later it compares, and decides once.
pub(crate) struct Calibration {
    warm_at: Instant,
    /// The snapshot at the end of the warm-up: when, busy seconds per node, bytes per cut,
    /// seconds waited.
    snapshot: Option<(Instant, Vec<f64>, Vec<f64>, f64)>,
    pub(crate) decided: bool,
    /// The decision in words, for the run report.
    pub(crate) outcome: Option<String>,
}

impl Calibration {
    pub(crate) fn new() -> Self {
        Calibration {
            warm_at: Instant::now() + CALIBRATION,
            snapshot: None,
            decided: false,
            outcome: None,
        }
    }

    /// Called after each pass that moved; returns where to split once the decision is made.
    pub(crate) fn step(&mut self, group: &[Member]) -> Option<usize> {
        let now = Instant::now();
        match &self.snapshot {
            None if now >= self.warm_at => {
                self.snapshot = Some((
                    now,
                    busy_seconds(group),
                    crossing_bytes(group),
                    waited_seconds(group),
                ));
                None
            }
            Some((then, busy0, bytes0, waited0)) if now >= *then + CALIBRATION => {
                let busy: Vec<f64> = busy_seconds(group)
                    .iter()
                    .zip(busy0)
                    .map(|(b, b0)| b - b0)
                    .collect();
                let bytes: Vec<f64> = crossing_bytes(group)
                    .iter()
                    .zip(bytes0)
                    .map(|(b, b0)| b - b0)
                    .collect();
                self.decided = true;
                let elapsed = (now - *then).as_secs_f64();
                let waited = waited_seconds(group) - waited0;
                let d = decide(&busy, &bytes, waited, elapsed);
                self.outcome = Some(match d.cut {
                    Some(j) => format!(
                        "split before '{}': {:.1} ms of work in {:.1} ms on one thread, estimated {:.1} ms on two",
                        group[j].node.name, d.busy * 1e3, elapsed * 1e3, d.estimate * 1e3
                    ),
                    None => format!(
                        "kept on one thread: {:.1} ms of work and {:.1} ms waiting in {:.1} ms, estimated {:.1} ms on two",
                        d.busy * 1e3, waited * 1e3, elapsed * 1e3, d.estimate * 1e3
                    ),
                });
                d.cut
            }
            _ => None,
        }
    }
}

/// Seconds the thread has spent blocked in waits for its nodes.
fn waited_seconds(group: &[Member]) -> f64 {
    group.iter().map(|m| m.stats.waiting.as_secs_f64()).sum()
}

/// CPU seconds each node has spent in `work` while measured.
fn busy_seconds(group: &[Member]) -> Vec<f64> {
    group.iter().map(|m| m.cpu.as_secs_f64()).collect()
}

/// Bytes written so far, for each cut `j` (before node `j`), by the nodes before it into queues
/// read by nodes after it. An output of the node at position `i` whose last reader in the
/// group is at position `r` crosses the cuts `i + 1 ..= r`: one pass over the outputs adds it
/// at `i + 1` and takes it away after `r`, so graphs with hundreds of nodes and ports cost
/// little while they are measured.
fn crossing_bytes(group: &[Member]) -> Vec<f64> {
    let mut position = HashMap::new();
    for (at, m) in group.iter().enumerate() {
        position.insert(m.index, at);
    }
    let mut outputs = Vec::new();
    for (at, m) in group.iter().enumerate() {
        for (bytes, peers) in m.node.bytes_written() {
            if let Some(&last) = peers.iter().filter_map(|p| position.get(p)).max() {
                outputs.push((at, last, bytes));
            }
        }
    }
    crossing(group.len(), &outputs)
}

/// For `nodes` nodes in a row and outputs `(writer position, last reader position, bytes)`:
/// the bytes crossing each cut `j` (between positions `j − 1` and `j`).
fn crossing(nodes: usize, outputs: &[(usize, usize, u64)]) -> Vec<f64> {
    let mut change = vec![0i128; nodes + 1];
    for &(at, last, bytes) in outputs.iter().filter(|(at, last, _)| last > at) {
        change[at + 1] += i128::from(bytes);
        change[last + 1] -= i128::from(bytes);
    }
    let mut sum = 0i128;
    change[..nodes]
        .iter()
        .map(|c| {
            sum += c;
            sum as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The measurements in the module docs, as 30 ms calibrations on one thread.
    fn copy_chain(stages: usize, one_thread_seconds_per_1e8: f64) -> (Vec<f64>, Vec<f64>) {
        let nodes = stages + 3;
        let items = 0.03 / one_thread_seconds_per_1e8 * 1e8;
        let busy = vec![0.03 / nodes as f64; nodes];
        let mut crossing = vec![items * 8.0; nodes];
        crossing[0] = 0.0;
        (busy, crossing)
    }

    /// The running sum gives what counting every output at every cut gives.
    #[test]
    fn crossing_bytes_are_counted_at_every_cut_they_cross() {
        let outputs = [(0, 1, 10), (0, 4, 100), (2, 3, 1000), (3, 1, 5), (4, 4, 7)];
        let want: Vec<f64> = (0..5)
            .map(|cut| {
                outputs
                    .iter()
                    .filter(|&&(at, last, _)| at < cut && last >= cut)
                    .map(|&(_, _, b)| b as f64)
                    .sum()
            })
            .collect();
        assert_eq!(crossing(5, &outputs), want);
        assert_eq!(want, [0.0, 110.0, 100.0, 1100.0, 100.0]);
    }

    #[test]
    fn cheap_copy_chains_stay_on_one_thread() {
        for (stages, seconds) in [(1, 0.052), (4, 0.127)] {
            let (busy, crossing) = copy_chain(stages, seconds);
            assert_eq!(
                decide(&busy, &crossing, 0.0, 0.03).cut,
                None,
                "{stages} stages"
            );
        }
    }

    #[test]
    fn long_copy_chains_are_split_in_the_middle() {
        for (stages, seconds) in [(10, 0.215), (32, 0.80)] {
            let (busy, crossing) = copy_chain(stages, seconds);
            let middle = (stages + 3) / 2;
            let cut = decide(&busy, &crossing, 0.0, 0.03).cut;
            assert!(
                cut.is_some_and(|j| j.abs_diff(middle) <= 1),
                "{stages} stages: {cut:?}"
            );
        }
    }

    #[test]
    fn two_heavy_filters_are_split_between_them() {
        let busy = [0.001, 0.014, 0.014, 0.001];
        let bytes = 1.0e6 * 8.0;
        assert_eq!(
            decide(&busy, &[0.0, bytes, bytes, bytes], 0.0, 0.03).cut,
            Some(2)
        );
    }

    #[test]
    fn cheap_message_handlers_are_not_cut_apart() {
        // sluice bench messages at 64 samples: 15 000 PDUs in 30 ms through 8 nodes of
        // about 0.25 µs each per PDU; every cut but the first two is a message edge.
        let pdus = 15_000.0;
        let busy = vec![pdus * 0.25e-6; 8];
        let mut crossing = vec![pdus * MESSAGE_CROSSING_BYTES as f64; 8];
        crossing[0] = 0.0;
        (crossing[1], crossing[2]) = (pdus * 64.0 * 8.0, pdus * 64.0 * 8.0);
        let cut = decide(&busy, &crossing, 0.0, 0.03).cut;
        assert!(matches!(cut, None | Some(1) | Some(2)), "{cut:?}");
        // Handlers of 10 µs per message (a demodulator) are still worth a core each side.
        let busy = vec![pdus * 10e-6; 8];
        assert!(decide(&busy, &crossing, 0.0, 0.03).cut.is_some());
    }

    #[test]
    fn one_dominant_node_is_not_split_off() {
        let busy = [0.027, 0.002, 0.001];
        assert_eq!(decide(&busy, &[0.0, 8e6, 8e6], 0.0, 0.03).cut, None);
    }

    #[test]
    fn a_mostly_idle_thread_is_not_split() {
        // Two nodes of equal work, 2 ms in all over 30 ms: a throttled stream.
        assert_eq!(decide(&[0.001, 0.001], &[0.0, 0.0], 0.0, 0.03).cut, None);
    }

    #[test]
    fn a_mostly_waiting_thread_is_not_split() {
        let busy = [0.004, 0.004];
        assert_eq!(decide(&busy, &[0.0, 0.0], 0.02, 0.03).cut, None);
        // The same work on a thread that was preempted (not waiting) is split.
        assert_eq!(decide(&busy, &[0.0, 0.0], 0.0, 0.03).cut, Some(1));
    }
}
