//! Multi-threaded stress: items stream through windows of random sizes on several threads and
//! every reader checks the exact sequence (and a checksum) of everything it saw.
//!
//! The default run pushes 10^8 items through one writer and two readers. Requests stay at or
//! below half the ring on both sides: a reader waiting for `n` items holds fewer than `n`
//! unconsumed, so a writer asking for `m <= capacity - n` free items can always proceed (asking
//! for more on both sides would be a genuine, artificial deadlock of the process network). It also exercises the
//! park/wake protocol constantly: with random window sizes up to the whole ring and a small ring,
//! both sides repeatedly park (the fast side runs out of space or data every few calls). A lost
//! wake-up would hang the test; the watchdog below turns a hang into a failure.

use rand::{Rng, SeedableRng};
use sluice_queue::{channel, Flavor, QueueOptions, RingReader, RingWriter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn stream(flavor: Flavor, total: u64, readers: usize, ring: usize, seed: u64) {
    let opts = QueueOptions {
        flavor,
        ..QueueOptions::default()
    };
    let (mut w, r0) = channel::<u64>(ring, &opts).unwrap();
    let cap = w.capacity();
    let mut handles = Vec::new();
    let mut rs = vec![r0];
    for _ in 1..readers {
        rs.push(rs[0].try_clone().unwrap());
    }
    let done = Arc::new(AtomicBool::new(false));
    for (i, mut r) in rs.into_iter().enumerate() {
        handles.push(std::thread::spawn(move || {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed + 1 + i as u64);
            let mut expect = 0u64;
            let mut sum = 0u64;
            loop {
                let n = rng.gen_range(1..=cap / 2);
                let window = r.window(n).unwrap();
                if window.is_empty() {
                    break;
                }
                // Consume at most what we asked for, sometimes less: a firing threshold.
                let k = rng.gen_range(1..=window.len().min(n));
                for &v in &window[..k] {
                    assert_eq!(v, expect, "reader {i} saw {v} where {expect} was due");
                    sum = sum.wrapping_add(v.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    expect += 1;
                }
                r.consume(k);
            }
            (expect, sum)
        }));
    }
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            while !done.load(Ordering::Acquire) {
                if start.elapsed() > Duration::from_secs(240) {
                    eprintln!("stress test hung for 240 s: a lost wake-up");
                    std::process::abort();
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut next = 0u64;
    let mut sum = 0u64;
    while next < total {
        let n = rng.gen_range(1..=cap / 2);
        let space = w.reserve(n).unwrap();
        let k = rng.gen_range(1..=space.len()).min((total - next) as usize);
        for s in &mut space[..k] {
            *s = next;
            sum = sum.wrapping_add(next.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            next += 1;
        }
        w.commit(k);
    }
    drop(w);
    for h in handles {
        assert_eq!(h.join().unwrap(), (total, sum));
    }
    done.store(true, Ordering::Release);
    watchdog.join().unwrap();
}

#[test]
fn hundred_million_items_through_random_windows() {
    stream(Flavor::Mirrored, 100_000_000, 2, 1 << 16, 7);
}

#[test]
fn small_ring_parks_constantly_without_losing_wakeups() {
    // A 512-item ring and 2 × 10^6 items: thousands of park/wake round trips.
    stream(Flavor::Mirrored, 2_000_000, 3, 512, 11);
}

#[test]
fn copying_ring_streams_correctly() {
    stream(Flavor::Copying, 5_000_000, 2, 4096, 13);
}
