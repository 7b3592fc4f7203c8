//! The default scheduler's one decision: after a short measurement on one thread, should the
//! graph's nodes be split over more cores, into how many groups, and where?
//!
//! A thread that runs a contiguous group of nodes keeps every chunk of items in its own cache;
//! splitting the group over two cores halves the work of each but makes every item that crosses
//! the cut travel between cores. The cut then behaves like one more stage of the pipeline, with
//! a throughput of its own: on the development machine (2 vCPUs of an AMD EPYC, shared) about
//! 5.5 GB/s. Measured there with `sluice run` of null source → head → k copies → null sink,
//! 100 M complex items, one thread against two pinned ones: k = 1: 0.052 s against 0.153 s
//! (the cut, 8 B per item at 5.5 GB/s, is the bottleneck); k = 4: 0.127 s against 0.116–0.145 s;
//! k = 10: 0.215 s against 0.14 s; k = 32: 0.80 s against 0.39 s. The estimate, the slowest of
//! every group's work and every cut's bytes at the cross-core rate (`partition.rs`), predicts
//! all four. The rate differs between machines, so it is measured once per process
//! (`cross_core.rs`), and only when a split could pay at all. That measurement is the best the
//! hardware gives two spinning cores (14–17 GB/s on a 2-vCPU Xeon VM where a split 1-stage chain
//! moved 2–3 GB/s while other builds ran), so the estimate is only a promise: a split is tried
//! while the graph runs and taken back if the last group does not run faster than it did on
//! one thread.
//!
//! The graph runs on one thread, doing its real work, while it is measured: each node's busy
//! time during [`SAMPLE`] after a [`WARM_UP`], and the bytes that would cross each possible cut.
//! The decision then costs what the one thread loses against the split during those 15 ms
//! (a 30 + 30 ms measurement cost a 10-stage copy chain of 200 M items about 10 % of its run).
//! A process that runs the same graph again (a benchmark, a batch job, a restarted flowgraph)
//! starts it in the grouping measured before, for [`REUSES`] runs, then measures it again.

use super::cross_core;
use super::partition::Model;
use super::threaded::Member;
use crate::graph::BuiltNode;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long the default scheduler lets every node warm up on one thread (first touches of the
/// queues' pages, caches filling) before it measures.
pub(crate) const WARM_UP: Duration = Duration::from_millis(5);

/// How long it measures before it decides: long enough for a few dozen passes of a 32-stage
/// chain in chunks of half a queue (about 0.3 ms each), short enough that the one-thread phase
/// costs a long chain little.
pub(crate) const SAMPLE: Duration = Duration::from_millis(10);

/// What one message handed from one core to another costs, in the bytes of stream items that
/// cost as much to pass: its inbox's lock and slot, the cache lines of its value (a PDU's
/// metadata entries and vector header) and, more often than for a stream chunk, a wake-up of
/// the other thread. Measured with `sluice bench messages` (64-sample PDUs through six message
/// hops, 2-vCPU VM): about 2 µs per PDU on one thread, 2.8–5 µs on two threads cut at one
/// message edge, so each message across the cut costs about 3 µs, 16 KiB at that machine's
/// cross-core rate ([`cross_core::FALLBACK_BYTES_PER_SEC`]). A message's own bytes (a PDU's
/// vector, allocated on one core and freed on the other) count besides. Counting a message as
/// its one-byte slot made the default scheduler split such chains and run them 2–3 times
/// slower than one thread.
pub(crate) const MESSAGE_CROSSING_BYTES: u64 = 16 << 10;

/// Below this share of the measurement busy, a thread is not worth splitting.
const IDLE_SHARE: f64 = 0.1;

/// A split must promise at least this speed-up to be made (measurements are noisy).
const MIN_GAIN: f64 = 1.3;

/// Runs of the same graph in one process that start in a remembered grouping before the graph
/// is measured again (the load on the machine may have changed).
const REUSES: u32 = 8;

/// Graphs whose decisions one process remembers at most (a process that builds graph after
/// graph of new shapes forgets them all when it reaches this many).
const REMEMBERED_GRAPHS: usize = 64;

/// The outcome of the measurement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    /// The index of the first node of every group but the first (empty: keep one thread).
    pub cuts: Vec<usize>,
    /// Seconds of work the group did during the measurement, on one thread.
    pub busy: f64,
    /// The best grouping's estimated seconds for the same work.
    pub estimate: f64,
    /// The cross-core rate the estimate used, if it was needed.
    pub bytes_per_sec: Option<f64>,
}

/// How to group a row of nodes (in graph order) over at most `max_groups` cores, if a split
/// pays. `busy[k]` is node k's busy (CPU) seconds during the measurement, `crossing[j]` the
/// bytes written across a cut before node j, `waited` the seconds the thread spent blocked in
/// the scheduler's waits and `elapsed` the measurement's wall time; `rate` gives the cross-core
/// bytes per second, asked for only when a split could pay even if transfers were free.
pub(crate) fn decide(
    busy: &[f64],
    crossing: &[f64],
    waited: f64,
    elapsed: f64,
    max_groups: usize,
    rate: impl FnOnce() -> f64,
) -> Decision {
    let total: f64 = busy.iter().sum();
    let keep = Decision {
        cuts: Vec::new(),
        busy: total,
        estimate: total,
        bytes_per_sec: None,
    };
    // A thread that mostly waits (for a device, a file, a slow source) gains nothing from a
    // split. (Time it was preempted by other processes is neither busy nor waiting.)
    if busy.len() < 2 || max_groups < 2 || waited > 0.5 * elapsed {
        return keep;
    }
    // A thread that is mostly idle (its nodes sleep, as a throttle does, or have little to do)
    // is not the bottleneck either.
    if total < IDLE_SHARE * elapsed {
        return keep;
    }
    let free = Model {
        busy,
        crossing,
        bytes_per_sec: f64::INFINITY,
    }
    .best(max_groups);
    if free.estimate * MIN_GAIN >= total {
        // One node dominates: no split pays, whatever the transfers cost.
        return Decision {
            estimate: free.estimate,
            ..keep
        };
    }
    let bytes_per_sec = rate();
    let best = Model {
        busy,
        crossing,
        bytes_per_sec,
    }
    .best(max_groups);
    Decision {
        cuts: if best.estimate * MIN_GAIN < total {
            best.cuts
        } else {
            Vec::new()
        },
        busy: total,
        estimate: best.estimate,
        bytes_per_sec: Some(bytes_per_sec),
    }
}

/// What the measurement decided: where to cut, and the decision in words for the run report.
pub(crate) struct Decided {
    /// The index of the first node of every group but the first (empty: one thread).
    pub cuts: Vec<usize>,
    /// The decision in words, for the run report.
    pub words: String,
}

/// What thread 0 is to do after a step of the measurement.
pub(crate) enum Verdict {
    /// Go on as it runs now: the measurement is over (words for the run report).
    Settled(String),
    /// Split at these cuts now and go on calling [`Calibration::step`]: the split is on trial.
    Split(Vec<usize>, String),
    /// The split ran no faster than one thread: take every group back onto thread 0.
    Merge(String),
}

/// Where the measurement stands.
enum Phase {
    /// Every node warms up on one thread until then.
    WarmUp(Instant),
    /// Measuring since the snapshot: when, busy seconds per node, bytes per cut, seconds
    /// waited, items each node had moved.
    Sample(Instant, Vec<f64>, Vec<f64>, f64, Vec<u64>),
    /// Split and on trial: the last group's nodes, on the last thread, must move items at
    /// least [`TRIAL_GAIN`] times as fast as they did on one thread (`baseline`, items per
    /// second), measured over `window` after a [`TRIAL_WARM_UP`]. The last group, because its
    /// rate is what the graph delivers: the first one may run ahead until the queues between
    /// them are full.
    Trial {
        cuts: Vec<usize>,
        words: String,
        baseline: f64,
        window: Duration,
        warm_until: Instant,
        since: Option<(Instant, u64)>,
    },
}

/// After a split, its threads start, pin themselves and fill their queues for this long before
/// the trial measures them.
const TRIAL_WARM_UP: Duration = Duration::from_millis(2);

/// A split is kept only if the last group's nodes move items at least this much faster than
/// they did on one thread: the estimate is a model (its cross-core rate is the best the hardware gives,
/// not what a loaded machine gives two pinned threads), the trial is the fact.
const TRIAL_GAIN: f64 = 1.1;

/// The trial lasts long enough for this many times the bytes the queues into the last group
/// hold to cross into it (at the one-thread rate), so that the last group draining what was
/// queued before the split adds at most a twentieth to what it is credited with; and at least
/// [`SAMPLE`].
const TRIAL_QUEUES: f64 = 20.0;

/// The longest trial (a slow graph whose queues hold seconds of items is judged on less).
const TRIAL_MAX: Duration = Duration::from_millis(500);

/// The default scheduler's measurement: after a warm-up of [`WARM_UP`] it records each node's
/// busy time (CPU time of the thread inside `work`, so that preemption by other processes does
/// not count) and the bytes written across each possible cut; [`SAMPLE`] later it decides. A
/// split is then tried for [`SAMPLE`] and kept only if it runs faster; the outcome is
/// remembered for the graph's shape.
pub(crate) struct Calibration {
    phase: Phase,
    /// The most groups the decision may make (threads available, CPUs to pin them to).
    max_groups: usize,
    /// The graph's shape, under which the decision is remembered.
    key: u64,
}

impl Calibration {
    pub(crate) fn new(max_groups: usize, key: u64) -> Self {
        Calibration {
            phase: Phase::WarmUp(Instant::now() + WARM_UP),
            max_groups,
            key,
        }
    }

    /// Whether the nodes' busy times are being measured now (after the warm-up, before the
    /// decision): only then does the scheduler read the thread's CPU clock around each `work`
    /// call.
    pub(crate) fn measuring(&self) -> bool {
        matches!(self.phase, Phase::Sample(..))
    }

    /// Whether a split is on trial (its threads may be asked to hand their nodes back).
    pub(crate) fn on_trial(&self) -> bool {
        matches!(self.phase, Phase::Trial { .. })
    }

    /// Called by thread 0 after each pass that moved, with its group, the CPUs split groups
    /// would be pinned to, and what each thread has published of its nodes' movement (see
    /// [`moved`]) by thread number; says what to do once there is something to do.
    pub(crate) fn step(
        &mut self,
        group: &[Member],
        cpus: &[usize],
        moved_by: impl Fn(usize) -> u64,
    ) -> Option<Verdict> {
        let now = Instant::now();
        match &mut self.phase {
            Phase::WarmUp(until) if now >= *until => {
                self.phase = Phase::Sample(
                    now,
                    busy_seconds(group),
                    crossing_bytes(group),
                    waited_seconds(group),
                    moved(group),
                );
                None
            }
            Phase::Sample(then, busy0, bytes0, waited0, moved0) if now >= *then + SAMPLE => {
                let busy: Vec<f64> = busy_seconds(group)
                    .iter()
                    .zip(busy0.iter())
                    .map(|(b, b0)| b - b0)
                    .collect();
                let bytes: Vec<f64> = crossing_bytes(group)
                    .iter()
                    .zip(bytes0.iter())
                    .map(|(b, b0)| b - b0)
                    .collect();
                let elapsed = (now - *then).as_secs_f64();
                let waited = waited_seconds(group) - *waited0;
                let d = decide(&busy, &bytes, waited, elapsed, self.max_groups, || {
                    cross_core::bytes_per_sec(cpus)
                });
                let rate = d
                    .bytes_per_sec
                    .map(|r| format!(", cross-core {:.1} GB/s", r / 1e9))
                    .unwrap_or_default();
                let Some(&last_cut) = d.cuts.last() else {
                    let words = format!(
                        "kept on one thread: {:.1} ms of work and {:.1} ms waiting in {:.1} ms, estimated {:.1} ms split{rate}",
                        d.busy * 1e3, waited * 1e3, elapsed * 1e3, d.estimate * 1e3
                    );
                    remember(self.key, &[], &words);
                    return Some(Verdict::Settled(words));
                };
                // What the nodes of the last group moved per second on one thread. A node that
                // ended during the sample reads 0 (its counts went with it): the stream is
                // ending, so no split is tried and nothing is remembered. (Subtracting across
                // that reset overflowed, a panic in debug builds and a meaningless baseline in
                // release ones.)
                let now_moved = moved(&group[last_cut..]);
                if now_moved
                    .iter()
                    .zip(&moved0[last_cut..])
                    .any(|(m, m0)| m < m0)
                {
                    return Some(Verdict::Settled(
                        "kept on one thread: a node ended while it was measured".to_string(),
                    ));
                }
                let baseline = now_moved
                    .iter()
                    .zip(&moved0[last_cut..])
                    .map(|(m, m0)| m - m0)
                    .sum::<u64>() as f64
                    / elapsed;
                let into_last = bytes.get(last_cut).copied().unwrap_or(0.0) / elapsed;
                let window = Duration::from_secs_f64(
                    (TRIAL_QUEUES * queued_bytes_across(group, last_cut)
                        / into_last.max(f64::MIN_POSITIVE))
                    .min(TRIAL_MAX.as_secs_f64()),
                )
                .max(SAMPLE);
                let before: Vec<String> = d
                    .cuts
                    .iter()
                    .map(|&j| format!("'{}'", group[j].node.name))
                    .collect();
                let words = format!(
                    "split into {} threads, before {}: {:.1} ms of work in {:.1} ms on one thread, estimated {:.1} ms split{rate}",
                    d.cuts.len() + 1, before.join(", "), d.busy * 1e3, elapsed * 1e3, d.estimate * 1e3
                );
                self.phase = Phase::Trial {
                    cuts: d.cuts.clone(),
                    words: words.clone(),
                    baseline,
                    window,
                    warm_until: now + TRIAL_WARM_UP,
                    since: None,
                };
                Some(Verdict::Split(d.cuts, words))
            }
            Phase::Trial {
                cuts,
                words,
                baseline,
                window,
                warm_until,
                since,
            } => match since {
                // (0: the last thread has not published its count yet.)
                None if now >= *warm_until && moved_by(cuts.len()) > 0 => {
                    *since = Some((now, moved_by(cuts.len())));
                    None
                }
                Some((then, moved0)) if now >= *then + *window => {
                    let moved_now = moved_by(cuts.len());
                    if moved_now < *moved0 {
                        // A node of the last group ended (its counts went with it): the
                        // stream is ending, and the split with it. Nothing is remembered.
                        return Some(Verdict::Settled(words.clone()));
                    }
                    let rate = (moved_now - *moved0) as f64 / (now - *then).as_secs_f64();
                    let speed_up = rate / baseline.max(f64::MIN_POSITIVE);
                    if speed_up >= TRIAL_GAIN {
                        let words = format!("{words}; ran {speed_up:.2}x as fast");
                        remember(self.key, cuts, &words);
                        Some(Verdict::Settled(words))
                    } else {
                        let words = format!(
                            "kept on one thread: {words}, but the split ran {speed_up:.2}x as fast"
                        );
                        remember(self.key, &[], &words);
                        Some(Verdict::Merge(words))
                    }
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// Items each node has moved so far (read and written; 0 once it has ended).
fn moved(group: &[Member]) -> Vec<u64> {
    group.iter().map(|m| m.node.movement()).collect()
}

/// What a thread publishes of its nodes' movement while a split is on trial.
pub(crate) fn moved_by_group(group: &[Member]) -> u64 {
    group
        .iter()
        .map(|m| m.node.movement())
        .fold(0, u64::wrapping_add)
}

/// Bytes the queues from nodes before position `cut` to nodes at or after it can hold.
fn queued_bytes_across(group: &[Member], cut: usize) -> f64 {
    let after: Vec<usize> = group[cut..].iter().map(|m| m.index).collect();
    group[..cut]
        .iter()
        .flat_map(|m| {
            let n = &m.node;
            n.outputs
                .iter()
                .zip(&n.ports.outputs)
                .zip(&n.output_peers)
                .filter(|(_, peers)| peers.iter().any(|p| after.contains(p)))
                .map(|((out, spec), _)| (out.capacity() * spec.item.size()) as f64)
        })
        .sum()
}

/// A decision remembered for a graph's shape, and how many runs have used it.
struct Remembered {
    cuts: Vec<usize>,
    words: String,
    uses: u32,
}

/// The decisions of this process, by graph shape ([`graph_key`]).
fn remembered_decisions() -> &'static Mutex<HashMap<u64, Remembered>> {
    static DECISIONS: OnceLock<Mutex<HashMap<u64, Remembered>>> = OnceLock::new();
    DECISIONS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn remember(key: u64, cuts: &[usize], words: &str) {
    let mut decisions = remembered_decisions()
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if decisions.len() >= REMEMBERED_GRAPHS && !decisions.contains_key(&key) {
        decisions.clear();
    }
    decisions.insert(
        key,
        Remembered {
            cuts: cuts.to_vec(),
            words: words.to_string(),
            uses: 0,
        },
    );
}

/// The decision an earlier run of a graph of this shape made, for one more run: where to cut
/// and the words that reported it. None when there is none, or it has served [`REUSES`] runs
/// (it is then forgotten, and this run measures again).
pub(crate) fn remembered(key: u64) -> Option<Decided> {
    let mut decisions = remembered_decisions()
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let entry = decisions.get_mut(&key)?;
    entry.uses += 1;
    if entry.uses > REUSES {
        decisions.remove(&key);
        return None;
    }
    Some(Decided {
        cuts: entry.cuts.clone(),
        words: entry.words.clone(),
    })
}

/// A graph's shape, as far as the decision depends on it: the nodes in order with their names
/// and ports (item types, queue sizes and kinds), the edges, and the most groups allowed.
/// Nodes are known to the runtime only by name, so two graphs that differ only in what a
/// node of the same name and ports computes share a key; the worst that does is a grouping
/// measured on the other, for at most [`REUSES`] runs (outputs never depend on it).
pub(crate) fn graph_key(nodes: &[BuiltNode], max_groups: usize) -> u64 {
    let mut h = DefaultHasher::new();
    max_groups.hash(&mut h);
    for n in nodes {
        n.name.hash(&mut h);
        for port in n.ports.inputs.iter().chain(&n.ports.outputs) {
            port.name.hash(&mut h);
            port.item.name().hash(&mut h);
            port.message.is_some().hash(&mut h);
        }
        for out in &n.outputs {
            out.capacity().hash(&mut h);
            out.copying().hash(&mut h);
        }
        n.input_peers.hash(&mut h);
        n.output_peers.hash(&mut h);
    }
    h.finish()
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

    /// The development machine's cross-core rate, which the module docs' figures were
    /// measured with.
    const RATE: f64 = cross_core::FALLBACK_BYTES_PER_SEC;

    /// [`decide`] on a 2-core machine of that rate, measured for 30 ms.
    fn on_two_cores(busy: &[f64], crossing: &[f64], waited: f64) -> Vec<usize> {
        decide(busy, crossing, waited, 0.03, 2, || RATE).cuts
    }

    /// The measurements in the module docs, as 30 ms measurements on one thread.
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
            for cores in [2, 8, 16] {
                let d = decide(&busy, &crossing, 0.0, 0.03, cores, || RATE);
                assert_eq!(d.cuts, [], "{stages} stages, {cores} cores");
            }
        }
    }

    #[test]
    fn long_copy_chains_are_split_in_the_middle() {
        // At 10 stages one cut already carries the whole stream as slowly as each half works:
        // more cores do not help.
        for (stages, seconds, cores) in [
            (10, 0.215, 2),
            (10, 0.215, 8),
            (10, 0.215, 16),
            (32, 0.80, 2),
        ] {
            let (busy, crossing) = copy_chain(stages, seconds);
            let middle = (stages + 3) / 2;
            let cuts = decide(&busy, &crossing, 0.0, 0.03, cores, || RATE).cuts;
            assert!(
                matches!(cuts[..], [j] if j.abs_diff(middle) <= 1),
                "{stages} stages, {cores} cores: {cuts:?}"
            );
        }
    }

    /// The sizes of the groups that `cuts` make of `nodes` nodes.
    fn group_sizes(cuts: &[usize], nodes: usize) -> Vec<usize> {
        let mut bounds = vec![0];
        bounds.extend(cuts);
        bounds.push(nodes);
        bounds.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// At 32 stages each cut carries the stream in a fifth of the one-thread time, so a machine
    /// of 8 or 16 cores runs the chain on 6 of them (5 would leave 7 nodes to one core, more
    /// than 10 % slower than the cut), in groups of even work.
    #[test]
    fn a_32_stage_chain_is_spread_over_six_cores_of_more() {
        let (busy, crossing) = copy_chain(32, 0.80);
        for cores in [8, 16] {
            let cuts = decide(&busy, &crossing, 0.0, 0.03, cores, || RATE).cuts;
            let sizes = group_sizes(&cuts, busy.len());
            assert_eq!(sizes.len(), 6, "{cores} cores: {cuts:?}");
            assert!(sizes.iter().all(|&s| s == 5 || s == 6), "{sizes:?}");
        }
    }

    /// On a machine whose cores pass bytes four times as fast, the same chain is worth 12 of
    /// 16 cores, in groups of even work.
    #[test]
    fn long_chains_use_more_cores_when_transfers_are_cheap() {
        let (busy, crossing) = copy_chain(32, 0.80);
        let d = decide(&busy, &crossing, 0.0, 0.03, 16, || 4.0 * RATE);
        let sizes = group_sizes(&d.cuts, busy.len());
        assert_eq!(sizes.len(), 12, "{d:?}");
        assert!(sizes.iter().all(|&s| s == 2 || s == 3), "{sizes:?}");
    }

    #[test]
    fn two_heavy_filters_are_split_between_them() {
        let busy = [0.001, 0.014, 0.014, 0.001];
        let bytes = 1.0e6 * 8.0;
        assert_eq!(on_two_cores(&busy, &[0.0, bytes, bytes, bytes], 0.0), [2]);
    }

    /// Four heavy filters on an 8-core machine get a core each (the light source and sink
    /// join the first and the last).
    #[test]
    fn four_heavy_filters_get_a_core_each_on_eight() {
        let busy = [0.001, 0.014, 0.014, 0.014, 0.014, 0.001];
        let bytes = 1.0e6 * 8.0;
        let crossing = [0.0, bytes, bytes, bytes, bytes, bytes];
        let d = decide(&busy, &crossing, 0.0, 0.03, 8, || RATE);
        assert_eq!(d.cuts, [2, 3, 4], "{d:?}");
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
        let cuts = on_two_cores(&busy, &crossing, 0.0);
        assert!(matches!(cuts[..], [] | [1] | [2]), "{cuts:?}");
        // Handlers of 10 µs per message (a demodulator) are still worth a core each side.
        let busy = vec![pdus * 10e-6; 8];
        assert!(!on_two_cores(&busy, &crossing, 0.0).is_empty());
    }

    /// A node that dominates is not split off, and the cross-core rate is not even asked for
    /// (its first measurement costs a few milliseconds).
    #[test]
    fn one_dominant_node_is_not_split_off() {
        let busy = [0.027, 0.002, 0.001];
        let d = decide(&busy, &[0.0, 8e6, 8e6], 0.0, 0.03, 16, || {
            panic!("the rate is not needed")
        });
        assert_eq!(d.cuts, []);
    }

    #[test]
    fn a_mostly_idle_thread_is_not_split() {
        // Two nodes of equal work, 2 ms in all over 30 ms: a throttled stream.
        assert_eq!(on_two_cores(&[0.001, 0.001], &[0.0, 0.0], 0.0), []);
    }

    #[test]
    fn a_mostly_waiting_thread_is_not_split() {
        let busy = [0.004, 0.004];
        assert_eq!(on_two_cores(&busy, &[0.0, 0.0], 0.02), []);
        // The same work on a thread that was preempted (not waiting) is split.
        assert_eq!(on_two_cores(&busy, &[0.0, 0.0], 0.0), [1]);
    }

    /// A remembered decision serves [`REUSES`] runs, then the graph is measured again.
    #[test]
    fn a_remembered_decision_serves_a_few_runs() {
        let key = 0x5eed_0001;
        assert!(remembered(key).is_none());
        remember(key, &[3], "split");
        for _ in 0..REUSES {
            assert_eq!(remembered(key).map(|d| d.cuts), Some(vec![3]));
        }
        assert!(remembered(key).is_none());
        assert!(remembered(key).is_none());
    }
}
