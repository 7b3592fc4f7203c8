//! How fast one core passes stream items to another, measured once per process: the constant
//! behind the default scheduler's estimate of what a cut between two cores costs.
//!
//! It differs between machines by several times (two vCPUs of one shared L3, two sockets, a
//! laptop's efficiency cores), so a hard-coded figure from one machine misleads the decision on
//! the others. The measurement is what a cut does: a writer pinned to one CPU fills chunks of
//! half a queue of the graph's default size, and a reader pinned to another copies each chunk
//! out into a buffer of its own (the first node after a cut reads every item and writes its
//! output), both spinning, as split groups do. It takes [`TRIALS`] × ([`WARM_UP`] +
//! [`SAMPLE`]) and the fastest trial counts (other processes only ever slow a trial down).

use crate::graph::DEFAULT_QUEUE_BYTES;
use crate::os;
use sluice_queue::{channel, QueueOptions, RingReader, RingWriter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The rate used where it cannot be measured (one allowed CPU, a refused pin, a queue that
/// cannot be mapped): a 1-stage copy chain split over two pinned, spinning threads on the
/// development machine (2 vCPUs of an AMD EPYC, shared), 650 M items/s × 8 B.
pub(crate) const FALLBACK_BYTES_PER_SEC: f64 = 5.5e9;

/// Each trial first streams this long (page faults, caches, clocks ramping up), unmeasured.
const WARM_UP: Duration = Duration::from_micros(500);

/// Then measures this long.
const SAMPLE: Duration = Duration::from_millis(2);

/// Trials; the fastest counts.
const TRIALS: usize = 3;

/// The measured rate, once per process.
static MEASURED: OnceLock<f64> = OnceLock::new();

/// Bytes per second that one core passes to another through the cache hierarchy, between the
/// first two of `cpus` (measured on the first call, then remembered for the process).
pub(crate) fn bytes_per_sec(cpus: &[usize]) -> f64 {
    *MEASURED.get_or_init(|| measured(cpus))
}

/// A fresh measurement between the first two of `cpus`, or the fallback.
fn measured(cpus: &[usize]) -> f64 {
    match cpus {
        [a, b, ..] => measure(*a, *b).unwrap_or(FALLBACK_BYTES_PER_SEC),
        _ => FALLBACK_BYTES_PER_SEC,
    }
}

/// The fastest of [`TRIALS`] transfers from CPU `from` to CPU `to`, or None if none could run.
fn measure(from: usize, to: usize) -> Option<f64> {
    (0..TRIALS)
        .filter_map(|_| trial(from, to))
        .fold(None, |best: Option<f64>, r| {
            Some(best.map_or(r, |b| b.max(r)))
        })
}

/// One transfer of [`WARM_UP`] + [`SAMPLE`]: bytes per second the reader received while
/// measured, or None if a pin was refused or the queue failed.
fn trial(from: usize, to: usize) -> Option<f64> {
    let items = DEFAULT_QUEUE_BYTES / std::mem::size_of::<u64>();
    let chunk = items / 2;
    let (mut writer, mut reader) = channel::<u64>(items, &QueueOptions::default()).ok()?;
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let done = &done;
        let writing = scope.spawn(move || {
            if !os::configure_current_thread(Some(from), None).is_empty() {
                done.store(true, Ordering::Release);
                return false;
            }
            let mut value = 0u64;
            while !done.load(Ordering::Relaxed) {
                match writer.try_reserve(chunk) {
                    Ok(Some(space)) => {
                        for slot in &mut space[..chunk] {
                            *slot = value;
                            value = value.wrapping_add(1);
                        }
                        writer.commit(chunk);
                    }
                    Ok(None) => std::hint::spin_loop(),
                    Err(_) => break,
                }
            }
            writer.finish();
            true
        });
        let reading = scope.spawn(move || {
            let pinned = os::configure_current_thread(Some(to), None).is_empty();
            let mut copy = vec![0u64; chunk];
            let mut received = 0usize;
            let start = Instant::now();
            let mut measured_from: Option<(Instant, usize)> = None;
            while pinned && !done.load(Ordering::Relaxed) {
                match reader.try_window(chunk) {
                    Ok(Some(window)) if window.len() >= chunk => {
                        copy.copy_from_slice(std::hint::black_box(&window[..chunk]));
                        reader.consume(chunk);
                        received += chunk;
                    }
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) => std::hint::spin_loop(),
                }
                let now = Instant::now();
                match measured_from {
                    None if now >= start + WARM_UP => measured_from = Some((now, received)),
                    Some((t0, r0)) if now >= t0 + SAMPLE => {
                        done.store(true, Ordering::Release);
                        let bytes = (received - r0) * std::mem::size_of::<u64>();
                        return Some(bytes as f64 / (now - t0).as_secs_f64());
                    }
                    _ => {}
                }
            }
            done.store(true, Ordering::Release);
            None
        });
        let wrote = writing.join().unwrap_or(false);
        let rate = reading.join().unwrap_or(None);
        rate.filter(|r| wrote && r.is_finite() && *r > 0.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a machine with two allowed CPUs the transfer runs and measures a rate (whatever it
    /// is); on one, the fallback is used. Either way the answer is a usable positive rate, the
    /// same on the second call.
    #[test]
    fn the_rate_is_measured_once_and_positive() {
        let cpus = os::allowed_cpus();
        if cpus.len() >= 2 {
            assert!(measure(cpus[0], cpus[1]).is_some_and(|r| r > 0.0));
        }
        let first = bytes_per_sec(&cpus);
        assert!(first.is_finite() && first > 0.0);
        assert_eq!(bytes_per_sec(&cpus), first);
    }

    #[test]
    fn one_cpu_gets_the_fallback() {
        assert_eq!(measured(&[0]), FALLBACK_BYTES_PER_SEC);
        assert_eq!(measured(&[]), FALLBACK_BYTES_PER_SEC);
    }
}
