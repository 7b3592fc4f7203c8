//! The default scheduler's one decision: after a short measurement on one thread, should the
//! graph's nodes be split over more cores, and where?
//!
//! A thread that runs a contiguous group of nodes keeps every chunk of items in its own cache;
//! splitting the group over two cores halves the work of each but makes every item that crosses
//! the cut travel between cores. On the development machine (2 vCPUs of an AMD EPYC, shared) a
//! 1-stage copy chain ran at 2.0 G items/s on one pooled thread and at 0.6 G items/s on two,
//! spinning, with no context switches: the cross-core traffic (≈ 5 GB/s) costs more than the
//! copies. A chain of two 64-tap FIR filters, by contrast, gains almost 2× from a second core.
//! So the split is decided from measurements: each node's busy time during the first
//! [`CALIBRATION`] on one thread, and the bytes that would cross each possible cut.

use std::time::Duration;

/// How long the default scheduler runs every node on one thread before it decides.
pub(crate) const CALIBRATION: Duration = Duration::from_millis(30);

/// Bytes per second that one core can pass to another through the cache hierarchy: measured on
/// the development machine as the throughput of a 1-stage copy chain split over two spinning
/// pooled threads (611 M items/s × 8 B, with `perf stat` showing no context switches).
const CROSS_CORE_BYTES_PER_SEC: f64 = 5.0e9;

/// A split must promise at least this speed-up to be made (measurements are noisy).
const MIN_GAIN: f64 = 1.3;

/// Where to cut a group of nodes (in graph order) in two, if it pays: the index of the first
/// node of the second group. `busy[k]` is node k's busy seconds during the calibration,
/// `crossing[j]` the bytes written across a cut before node j, `elapsed` the calibration's wall
/// time.
pub(crate) fn best_split(busy: &[f64], crossing: &[f64], elapsed: f64) -> Option<usize> {
    let total: f64 = busy.iter().sum();
    // A thread that mostly waits (on a device, a throttle, a file) gains nothing from a split.
    if busy.len() < 2 || total < 0.5 * elapsed {
        return None;
    }
    let mut before = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for j in 1..busy.len() {
        before += busy[j - 1];
        let transfer = crossing[j] / CROSS_CORE_BYTES_PER_SEC;
        let estimate = before.max(total - before) + transfer;
        if best.is_none_or(|(_, t)| estimate < t) {
            best = Some((j, estimate));
        }
    }
    best.filter(|&(_, t)| t * MIN_GAIN < total).map(|(j, _)| j)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cheap_nodes_stay_together() {
        // 1-stage copy chain: 30 ms at 2 G items/s, 8-byte items crossing any cut.
        let busy = [0.006, 0.008, 0.008, 0.006];
        let bytes = 60e6 * 8.0;
        assert_eq!(best_split(&busy, &[0.0, bytes, bytes, bytes], 0.03), None);
    }

    #[test]
    fn two_heavy_filters_are_split_between_them() {
        let busy = [0.001, 0.014, 0.014, 0.001];
        let bytes = 1.0e6 * 8.0;
        assert_eq!(
            best_split(&busy, &[0.0, bytes, bytes, bytes], 0.03),
            Some(2)
        );
    }

    #[test]
    fn one_dominant_node_is_not_split_off() {
        let busy = [0.027, 0.002, 0.001];
        assert_eq!(best_split(&busy, &[0.0, 8e6, 8e6], 0.03), None);
    }

    #[test]
    fn a_mostly_idle_thread_is_not_split() {
        let busy = [0.004, 0.004];
        assert_eq!(best_split(&busy, &[0.0, 0.0], 0.03), None);
    }
}
