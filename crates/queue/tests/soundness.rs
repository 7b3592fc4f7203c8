//! One test per soundness defect found in review (each failed before its fix): the copying
//! ring's commit, clones racing the writer, over-aligned items, lifecycle misuse, and tags
//! published while a reader is cloned.

use sluice_queue::{channel, Flavor, QueueOptions, RingReader, RingWriter, Tag, TagValue};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The flavors to test: Miri cannot map memory twice, so it runs the copying flavor, which
/// shares the whole index protocol with the mirrored one.
const FLAVORS: &[Flavor] = if cfg!(miri) {
    &[Flavor::Copying]
} else {
    &[Flavor::Mirrored, Flavor::Copying]
};

fn copying() -> QueueOptions {
    QueueOptions {
        flavor: Flavor::Copying,
        name: Some("test queue".into()),
        ..QueueOptions::default()
    }
}

/// A reservation that wraps is staged in scratch memory; committing more than was reserved used
/// to copy the scratch over items the reader had not read yet before the check panicked.
#[test]
fn copying_commit_beyond_the_reservation_panics_before_writing_anything() {
    let (mut w, mut r) = channel::<u32>(1024, &copying()).unwrap();
    let cap = w.capacity();
    // Fill the ring, read and release the first half: the free run now wraps.
    let space = w.reserve(cap).unwrap();
    for (i, s) in space.iter_mut().enumerate() {
        *s = i as u32;
    }
    w.commit(cap);
    r.window(cap / 2).unwrap();
    r.consume(cap / 2);
    // Now write a quarter more so that the next free run straddles the end of the array.
    w.reserve(cap / 4).unwrap()[..cap / 4].fill(7);
    w.commit(cap / 4);
    let reserved = w.reserve(1).unwrap().len();
    assert!(reserved < cap);
    let attempt = catch_unwind(AssertUnwindSafe(|| w.commit(cap)));
    let message = *attempt.unwrap_err().downcast::<String>().unwrap();
    assert!(
        message.contains("queue 'test queue': commit(") && message.contains("exceeds"),
        "{message}"
    );
    // The unread half is intact.
    let window = r.window(cap / 2).unwrap();
    for (i, v) in window[..cap / 2].iter().enumerate() {
        assert_eq!(
            *v,
            (cap / 2 + i) as u32,
            "item {i} of the unread half changed"
        );
    }
}

/// A reservation is committed once: a second commit used to publish stale scratch data.
#[test]
#[should_panic(expected = "a reservation is committed once")]
fn a_second_commit_of_one_reservation_panics() {
    let (mut w, _r) = channel::<u32>(1024, &copying()).unwrap();
    w.reserve(4).unwrap()[..4].fill(1);
    w.commit(2);
    w.commit(2);
}

#[test]
#[should_panic(expected = "queue 'test queue': commit after finish")]
fn commit_after_finish_panics_naming_the_queue() {
    let (mut w, _r) = channel::<u32>(1024, &copying()).unwrap();
    w.reserve(4).unwrap();
    w.finish();
    w.commit(1);
}

#[test]
#[should_panic(expected = "queue 'test queue': reserve after finish")]
fn reserve_after_finish_panics_naming_the_queue() {
    let (mut w, _r) = channel::<u32>(1024, &copying()).unwrap();
    w.finish();
    let _ = w.reserve(1);
}

#[test]
#[should_panic(expected = "queue 'test queue': window on a detached reader")]
fn a_detached_reader_cannot_be_used() {
    let (mut w, mut r) = channel::<u32>(1024, &copying()).unwrap();
    w.reserve(4).unwrap();
    w.commit(4);
    r.detach();
    assert_eq!(w.reader_count(), 0);
    let _ = r.window(1);
}

#[test]
fn finish_is_idempotent_and_detach_releases_the_writer() {
    let (mut w, mut r) = channel::<u32>(1024, &copying()).unwrap();
    let cap = w.capacity();
    w.reserve(cap).unwrap();
    w.commit(cap);
    r.detach();
    r.detach();
    assert!(w.reserve(1).is_err(), "no reader is left");
    w.finish();
    w.finish();
}

/// Items whose alignment exceeds the page size must be aligned in the ring too.
#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(16384))]
struct Page4([[u8; 4096]; 4]);

#[test]
fn items_aligned_above_the_page_size_are_aligned_in_the_ring() {
    for &flavor in FLAVORS {
        let opts = QueueOptions {
            flavor,
            ..QueueOptions::default()
        };
        // Several queues: an unaligned mapping would be 16 KiB-aligned only by chance.
        let queues: Vec<_> = (0..8)
            .map(|_| channel::<Page4>(4, &opts).unwrap())
            .collect();
        for (mut w, mut r) in queues {
            let cap = w.capacity();
            for round in 0..cap + 2 {
                let space = w.reserve(1).unwrap();
                assert_eq!(
                    space.as_ptr() as usize % 16384,
                    0,
                    "{flavor:?} reserve {round}"
                );
                space[0].0[0][0] = round as u8;
                w.commit(1);
                let window = r.window(1).unwrap();
                assert_eq!(
                    window.as_ptr() as usize % 16384,
                    0,
                    "{flavor:?} window {round}"
                );
                assert_eq!(window[0].0[0][0], round as u8);
                r.consume(1);
            }
        }
    }
}

/// A reader cloned behind the others must hold the writer back. The writer's scan for the
/// slowest reader used to miss a clone registering mid-scan, then read the origin reader's later
/// position and overwrite items the clone had not read.
#[test]
fn a_clone_is_never_overrun_by_the_writer() {
    for &flavor in FLAVORS {
        let opts = QueueOptions {
            flavor,
            max_readers: 64,
            ..QueueOptions::default()
        };
        let (mut w, first) = channel::<u64>(512, &opts).unwrap();
        // The origin reader sits in slot 1 and every clone takes the lower slot 0, so the
        // writer's scan reads a clone's slot before the origin's (the order the race needs).
        let mut a = first.try_clone().unwrap();
        drop(first);
        let cap = w.capacity();
        let stop = Arc::new(AtomicBool::new(false));
        let writer_stop = Arc::clone(&stop);
        let writer = std::thread::spawn(move || {
            let mut next = 0u64;
            while !writer_stop.load(Ordering::Relaxed) {
                let space = match w.reserve_timeout(1, Duration::from_millis(1)) {
                    Ok(Some(space)) => space,
                    Ok(None) => continue,
                    Err(_) => break, // the main thread dropped its readers
                };
                let n = space.len();
                for (i, s) in space.iter_mut().enumerate() {
                    *s = next + i as u64;
                }
                w.commit(n);
                next += n as u64;
            }
        });
        let deadline = Instant::now() + Duration::from_millis(400);
        let rounds = if cfg!(miri) { 3 } else { usize::MAX };
        let mut clones = 0;
        while Instant::now() < deadline && clones < rounds {
            let start = a.items_read();
            let mut b = a.try_clone().unwrap();
            // The origin reader runs ahead, which lets the writer run ahead of the clone...
            let ahead = a.window(cap / 2).unwrap().len().min(cap / 2);
            a.consume(ahead);
            // ...but never past what the clone has not read.
            let window = b.window(cap).unwrap();
            assert!(window.len() <= cap);
            for (i, v) in window.iter().enumerate() {
                assert_eq!(
                    *v,
                    start + i as u64,
                    "{flavor:?}: clone overrun at item {i}"
                );
            }
            clones += 1;
        }
        stop.store(true, Ordering::Relaxed);
        drop(a);
        writer.join().unwrap();
        assert!(clones > 0);
    }
}

/// A reader cloned while the writer publishes tags gets every tag exactly once.
#[test]
fn a_clone_made_while_tags_are_published_loses_none() {
    const ITEMS: u64 = if cfg!(miri) { 40 } else { 20_000 };
    let opts = QueueOptions {
        flavor: FLAVORS[0],
        ..QueueOptions::default()
    };
    let (mut w, mut a) = channel::<u64>(ITEMS as usize * 2, &opts).unwrap();
    let writer = std::thread::spawn(move || {
        for i in 0..ITEMS {
            w.add_tag(Tag::new(i, "seq", TagValue::U64(i)));
            w.reserve(1).unwrap()[0] = i;
            w.commit(1);
        }
    });
    // Clone the (never consuming) origin reader over and over while the tags arrive; each
    // clone must end up with every tag from 0 to ITEMS, once.
    let mut clones = Vec::new();
    while !writer.is_finished() {
        clones.push(a.try_clone().unwrap());
        if clones.len() > 8 {
            clones.remove(0);
        }
    }
    writer.join().unwrap();
    clones.push(a.try_clone().unwrap());
    for mut reader in clones.into_iter().chain([a.try_clone().unwrap()]) {
        let mut tags = Vec::new();
        loop {
            let n = reader.window(1).unwrap().len();
            if n == 0 {
                break;
            }
            reader.consume(n);
        }
        reader.take_tags(u64::MAX, &mut tags);
        let indices: Vec<u64> = tags.iter().map(|t| t.index).collect();
        assert_eq!(indices, (0..ITEMS).collect::<Vec<_>>());
    }
    drop(a.window(0));
}

/// A tap (lossy reader) on the copying flavor, in sequence with the writer (Miri runs this):
/// it copies wrapped runs out of the array, skips what the writer lapped, and counts it.
#[test]
fn a_tap_copies_wrapped_runs_and_counts_what_it_skipped() {
    let (mut w, mut r) = channel::<u32>(1, &copying()).unwrap();
    let cap = w.capacity();
    let point = w.tap_point();
    let mut tap = point.attach();
    let mut next = 0u32;
    let mut out = vec![0u32; cap];
    let mut delivered = 0u64;
    for round in 0..5 {
        let k = cap / 2 + round;
        let space = w.reserve(k).unwrap();
        for (i, s) in space[..k].iter_mut().enumerate() {
            *s = next + i as u32;
        }
        w.commit(k);
        next += k as u32;
        // Drain the lossless reader (a wrapped window may come in two pieces).
        while let Some(window) = r.try_window(1).unwrap() {
            let n = window.len();
            r.consume(n);
        }
        if round % 2 == 1 {
            let read = tap.read(&mut out);
            for (i, v) in out[..read.items].iter().enumerate() {
                assert_eq!(*v as u64, read.first + i as u64);
            }
            delivered += read.items as u64;
        }
    }
    assert_eq!(delivered + tap.skipped(), tap.position());
    assert_eq!(point.lossy_readers(), 1);
    drop(tap);
    assert_eq!(point.lossy_readers(), 0);
}
