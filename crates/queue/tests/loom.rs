//! Loom model checks of the queue's lock-free protocols, running the crate's own code (its
//! atomics, mutexes and futex come from loom under `cfg(loom)`):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p sluice-queue --test loom --release --target-dir target/loom
//! ```
//!
//! The copying flavor is used (the mirrored mapping is an OS call, not a protocol); loom
//! explores every interleaving of the index counters, the park/wake handshake, reader
//! registration and removal, and tag publication.
#![cfg(loom)]

use loom::thread;
use sluice_queue::TagValue;
use sluice_queue::{channel, Flavor, QueueError, QueueOptions, RingReader, RingWriter, Tag};

fn opts() -> QueueOptions {
    QueueOptions {
        flavor: Flavor::Copying,
        max_readers: 3,
        name: Some("loom".into()),
        ..QueueOptions::default()
    }
}

/// A reader parked for data is always woken by the commit that provides it.
#[test]
fn a_parked_reader_is_woken_by_a_commit() {
    loom::model(|| {
        let (mut w, mut r) = channel::<u8>(1, &opts()).unwrap();
        let reader = thread::spawn(move || {
            let window = r.window(1).unwrap();
            assert_eq!(window, &[7]);
        });
        w.reserve(1).unwrap()[0] = 7;
        w.commit(1);
        reader.join().unwrap();
    });
}

/// A writer parked for space is always woken by the consume that frees it.
#[test]
fn a_parked_writer_is_woken_by_a_consume() {
    loom::model(|| {
        let (mut w, mut r) = channel::<u8>(1, &opts()).unwrap();
        let cap = w.capacity();
        w.reserve(cap).unwrap();
        w.commit(cap);
        let reader = thread::spawn(move || {
            let n = r.window(1).unwrap().len();
            r.consume(n);
            r
        });
        assert!(!w.reserve(1).unwrap().is_empty());
        w.commit(0);
        drop(reader.join().unwrap());
    });
}

/// A writer parked for space is released with an error when its last reader detaches.
#[test]
fn a_parked_writer_learns_that_its_readers_left() {
    loom::model(|| {
        let (mut w, r) = channel::<u8>(1, &opts()).unwrap();
        let cap = w.capacity();
        w.reserve(cap).unwrap();
        w.commit(cap);
        let reader = thread::spawn(move || drop(r));
        assert_eq!(w.reserve(1).unwrap_err(), QueueError::NoReaders);
        reader.join().unwrap();
    });
}

/// End of stream reaches a parked reader, after the last items.
#[test]
fn finish_wakes_a_parked_reader_after_the_last_items() {
    loom::model(|| {
        let (mut w, mut r) = channel::<u8>(1, &opts()).unwrap();
        let reader = thread::spawn(move || {
            let mut seen = 0;
            loop {
                let n = r.window(1).unwrap().len();
                if n == 0 {
                    break;
                }
                r.consume(n);
                seen += n;
            }
            assert_eq!(seen, 2);
        });
        w.reserve(2).unwrap();
        w.commit(2);
        w.finish();
        reader.join().unwrap();
    });
}

/// A reader cloned behind its origin, while the writer scans for the slowest reader, is never
/// overrun: the scan sees the clone, or repeats. The clone takes a lower slot than its origin
/// (slot 0 is freed first), so the scan reads the clone's slot before the origin's: the order
/// in which a scan without the retry misses the clone and then sees the origin's later position.
#[test]
fn a_clone_registering_during_the_writers_scan_is_not_overrun() {
    loom::model(|| {
        let (mut w, first) = channel::<u8>(1, &opts()).unwrap();
        let mut a = first.try_clone().unwrap();
        drop(first);
        let cap = w.capacity();
        w.reserve(cap).unwrap().fill(1);
        w.commit(cap);
        let origin = thread::spawn(move || {
            let mut b = a.try_clone().unwrap();
            let n = a.window(cap).unwrap().len();
            a.consume(n);
            // The clone still holds the whole first batch: nothing was overwritten.
            let window = b.window(cap).unwrap();
            assert_eq!(window.len(), cap);
            assert!(window.iter().all(|&v| v == 1), "the clone was overrun");
            (a, b)
        });
        if let Some(space) = w.try_reserve(1).unwrap() {
            space.fill(2);
            let n = space.len();
            w.commit(n);
        }
        drop(origin.join().unwrap());
    });
}

/// A reader attached from another thread at an index behind the writer (a running graph's new
/// branch, `ReaderPoint::attach`) either gets items that are all intact or is refused: the
/// writer, racing to overwrite them once the only other reader has consumed them, never
/// overruns it.
#[test]
fn a_reader_attached_at_an_index_is_never_overrun() {
    loom::model(|| {
        let (mut w, mut a) = channel::<u8>(1, &opts()).unwrap();
        let cap = w.capacity();
        w.reserve(cap).unwrap().fill(1);
        w.commit(cap);
        let point = w.reader_point();
        let late = thread::spawn(move || match point.attach(Some(0)) {
            Ok(mut b) => {
                let window = b.window(cap).unwrap();
                assert_eq!(window.len(), cap);
                assert!(window.iter().all(|&v| v == 1), "the new reader was overrun");
            }
            Err(e) => assert!(matches!(e, QueueError::NotInRing { asked: 0, .. }), "{e}"),
        });
        let n = a.window(cap).unwrap().len();
        a.consume(n);
        if let Some(space) = w.try_reserve(1).unwrap() {
            space.fill(2);
            let n = space.len();
            w.commit(n);
        }
        late.join().unwrap();
    });
}

/// A tag published while a reader is cloned reaches the clone exactly once.
#[test]
fn a_tag_published_during_a_clone_reaches_it_once() {
    loom::model(|| {
        let (mut w, a) = channel::<u8>(1, &opts()).unwrap();
        let cloner = thread::spawn(move || {
            let b = a.try_clone().unwrap();
            (a, b)
        });
        w.add_tag(Tag::new(0, "t", TagValue::U64(1)));
        w.reserve(1).unwrap();
        w.commit(1);
        let (a, b) = cloner.join().unwrap();
        for reader in [a, b] {
            let mut tags = Vec::new();
            reader.take_tags(u64::MAX, &mut tags);
            assert_eq!(tags.len(), 1);
        }
    });
}

/// A reader that consumes past a tag takes it: the tag is in its inbox before the item is
/// published.
#[test]
fn a_tag_is_visible_before_its_item() {
    loom::model(|| {
        let (mut w, mut r) = channel::<u8>(1, &opts()).unwrap();
        let reader = thread::spawn(move || {
            let n = r.window(1).unwrap().len();
            r.consume(n);
            let mut tags = Vec::new();
            r.take_tags(r.items_read(), &mut tags);
            assert_eq!(tags.len(), 1, "the item arrived without its tag");
        });
        w.reserve(1).unwrap();
        w.add_tag(Tag::new(0, "t", TagValue::U64(1)));
        w.commit(1);
        reader.join().unwrap();
    });
}

/// A tap that copies a run while the writer overwrites that run (one ring later) delivers
/// only the items committed at their indices: the old values, or the new ones after skipping,
/// never the overwritten bytes under an old index.
#[test]
fn a_tap_racing_an_overwrite_delivers_only_intact_items() {
    loom::model(|| {
        let (mut w, mut r) = channel::<u8>(1, &opts()).unwrap();
        let cap = w.capacity();
        let mut tap = w.tap_point().attach();
        w.reserve(cap).unwrap()[..cap].fill(1);
        w.commit(cap);
        let n = r.window(cap).unwrap().len();
        r.consume(n);
        let tapper = thread::spawn(move || {
            let mut out = vec![0u8; cap];
            let read = tap.read(&mut out);
            for (i, v) in out[..read.items].iter().enumerate() {
                let index = read.first as usize + i;
                assert_eq!(*v, if index < cap { 1 } else { 2 }, "item {index}");
            }
            assert_eq!(read.first + read.items as u64, tap.position());
            assert_eq!(tap.position(), read.items as u64 + read.skipped);
        });
        // The next ring's worth lands on the same memory.
        w.reserve(cap).unwrap()[..cap].fill(2);
        w.commit(cap);
        tapper.join().unwrap();
        drop(r);
    });
}
