//! Lossy readers (taps): the writer never waits for them, they skip (and count) what they fall
//! behind on, and every item they deliver is the one committed at its index, even while the
//! writer overwrites the run they copy. Attached and detached from threads other than the
//! writer's.

use sluice_queue::{channel, Flavor, QueueOptions, RingReader, RingWriter, TapRead};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn opts(flavor: Flavor) -> QueueOptions {
    QueueOptions {
        flavor,
        name: Some("lossy".into()),
        ..QueueOptions::default()
    }
}

/// Writes `count` items whose value is their index, in runs of `chunk`.
fn write_indices(w: &mut sluice_queue::Writer<u64>, next: &mut u64, count: u64, chunk: usize) {
    let end = *next + count;
    while *next < end {
        let space = w.reserve(1).unwrap();
        let k = space.len().min(chunk).min((end - *next) as usize);
        for (i, s) in space[..k].iter_mut().enumerate() {
            *s = *next + i as u64;
        }
        w.commit(k);
        *next += k as u64;
    }
}

fn check(out: &[u64], read: TapRead) {
    for (i, v) in out[..read.items].iter().enumerate() {
        assert_eq!(*v, read.first + i as u64, "tap delivered a wrong item");
    }
}

#[test]
fn a_tap_that_keeps_up_sees_every_item() {
    for flavor in [Flavor::Mirrored, Flavor::Copying] {
        let (mut w, mut r) = channel::<u64>(1000, &opts(flavor)).unwrap();
        let mut tap = w.tap_point().attach();
        let mut next = 0;
        let mut seen = 0u64;
        let mut out = vec![0u64; 300];
        for _ in 0..20 {
            write_indices(&mut w, &mut next, 250, 97);
            let n = r.window(1).unwrap().len();
            r.consume(n);
            let read = tap.read(&mut out);
            check(&out, read);
            assert_eq!(read.first, seen);
            assert_eq!(read.skipped, 0);
            seen += read.items as u64;
        }
        assert_eq!(seen, next);
        assert_eq!(tap.skipped(), 0);
    }
}

#[test]
fn the_writer_never_waits_for_a_tap_and_a_lagging_tap_counts_what_it_skipped() {
    for flavor in [Flavor::Mirrored, Flavor::Copying] {
        let (mut w, mut r) = channel::<u64>(512, &opts(flavor)).unwrap();
        let cap = w.capacity() as u64;
        let point = w.tap_point();
        let mut tap = point.attach();
        let mut next = 0;
        // Ten rings' worth while the tap reads nothing: the writer is held only by `r`.
        for _ in 0..10 {
            write_indices(&mut w, &mut next, cap, cap as usize);
            let n = r.window(1).unwrap().len();
            r.consume(n);
        }
        let mut out = vec![0u64; cap as usize];
        let read = tap.read(&mut out);
        check(&out, read);
        assert!(
            read.skipped >= 9 * cap,
            "skipped {} of {next}",
            read.skipped
        );
        assert_eq!(read.first + read.items as u64, next);
        assert_eq!(tap.skipped() + read.items as u64, next);
        assert_eq!(point.lossy_readers(), 1);
        drop(tap);
        assert_eq!(point.lossy_readers(), 0);
    }
}

#[test]
fn read_latest_jumps_to_the_newest_items() {
    let (mut w, _r) = channel::<u64>(4096, &opts(Flavor::Mirrored)).unwrap();
    let mut tap = w.tap_point().attach();
    let mut next = 0;
    write_indices(&mut w, &mut next, 1000, 1000);
    let mut out = vec![0u64; 64];
    let read = tap.read_latest(&mut out);
    check(&out, read);
    assert_eq!((read.first, read.items, read.skipped), (936, 64, 936));
}

#[test]
fn a_tap_sees_the_end_of_the_stream() {
    let (mut w, _r) = channel::<u64>(64, &opts(Flavor::Copying)).unwrap();
    let mut tap = w.tap_point().attach();
    let mut next = 0;
    write_indices(&mut w, &mut next, 10, 10);
    w.finish();
    let mut out = vec![0u64; 64];
    let read = tap.read(&mut out);
    assert!(read.ended && read.items == 10);
}

/// A writer and a lossless reader run flat out while other threads attach taps, read at
/// random sizes (falling behind on purpose) and detach them: every delivered item is intact,
/// the lossless reader sees every item in order, and the writer finishes.
#[test]
fn taps_attached_and_detached_from_other_threads_deliver_only_intact_items() {
    for flavor in [Flavor::Mirrored, Flavor::Copying] {
        let (mut w, mut r) = channel::<u64>(1024, &opts(flavor)).unwrap();
        let point = w.tap_point();
        let total = 2_000_000u64;
        let done = Arc::new(AtomicBool::new(false));
        let writer = std::thread::spawn(move || {
            let mut next = 0;
            write_indices(&mut w, &mut next, total, 700);
        });
        let reader = std::thread::spawn(move || {
            let mut expect = 0u64;
            loop {
                let window = r.window(1).unwrap();
                if window.is_empty() {
                    break;
                }
                for v in window {
                    assert_eq!(*v, expect);
                    expect += 1;
                }
                let n = window.len();
                r.consume(n);
            }
            expect
        });
        let tappers: Vec<_> = (0..2)
            .map(|seed| {
                let point = point.clone();
                let done = Arc::clone(&done);
                std::thread::spawn(move || {
                    let mut delivered = 0u64;
                    let mut out = vec![0u64; 1024];
                    let mut round = seed;
                    while !done.load(Ordering::Relaxed) {
                        let mut tap = point.attach();
                        for i in 0..50 {
                            let n = 1 + (round * 7919 + i * 104729) % 1024;
                            let read = if i % 3 == 0 {
                                tap.read_latest(&mut out[..n])
                            } else {
                                tap.read(&mut out[..n])
                            };
                            check(&out, read);
                            delivered += read.items as u64;
                            if i % 5 == 0 {
                                std::thread::yield_now();
                            }
                        }
                        round += 1;
                    }
                    delivered
                })
            })
            .collect();
        writer.join().unwrap();
        assert_eq!(reader.join().unwrap(), total);
        done.store(true, Ordering::Relaxed);
        for t in tappers {
            t.join().unwrap();
        }
        assert_eq!(point.lossy_readers(), 0);
    }
}
