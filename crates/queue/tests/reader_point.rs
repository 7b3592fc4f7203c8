//! Readers attached to a running queue from another thread (`ReaderPoint`), and reader limits
//! (`ReadLimit`): what a running graph's new branches and node replacements are built on.

use sluice_queue::{
    channel, Flavor, QueueError, QueueOptions, Reader, RingReader, RingWriter, Tag, TagValue, Wait,
};
use std::time::{Duration, Instant};

fn opts(flavor: Flavor) -> QueueOptions {
    QueueOptions {
        flavor,
        ..QueueOptions::default()
    }
}

/// Writes `0..n` as u64 items, `chunk` at a time, waiting for room.
fn write_counting(w: &mut sluice_queue::Writer<u64>, from: u64, to: u64, chunk: usize) {
    let mut next = from;
    while next < to {
        let space = w.reserve(1).expect("a reader is attached");
        let k = space.len().min(chunk).min((to - next) as usize);
        for (i, slot) in space[..k].iter_mut().enumerate() {
            *slot = next + i as u64;
        }
        w.commit(k);
        next += k as u64;
    }
}

/// Reads everything to the end of `r`'s stream, checking it counts up from `first`.
fn read_counting(r: &mut Reader<u64>, first: u64) -> u64 {
    let mut expect = first;
    loop {
        let window = r.window(1).unwrap();
        if window.is_empty() {
            return expect;
        }
        for &x in window {
            assert_eq!(x, expect, "item {expect}");
            expect += 1;
        }
        let k = window.len();
        r.consume(k);
    }
}

#[test]
fn a_reader_attached_now_from_another_thread_sees_every_item_from_there_on() {
    for flavor in [Flavor::Mirrored, Flavor::Copying] {
        let (mut w, mut main) = channel::<u64>(4096, &opts(flavor)).unwrap();
        let point = w.reader_point();
        let total = 400_000u64;
        let writer = std::thread::spawn(move || write_counting(&mut w, 0, total, 777));
        let main_reader = std::thread::spawn(move || read_counting(&mut main, 0));
        // Attach and detach branches while the writer runs: each sees a gapless run.
        let mut attached = 0;
        while !point.is_finished() {
            let mut branch = point.attach(None).unwrap();
            let first = branch.items_read();
            let limit = branch.limit();
            limit.end_at(first + 10_000);
            let end = read_counting(&mut branch, first);
            assert!(end <= first + 10_000);
            assert!(end == first + 10_000 || point.is_finished());
            attached += 1;
        }
        writer.join().unwrap();
        assert_eq!(main_reader.join().unwrap(), total, "{flavor:?}");
        assert!(attached > 1, "{flavor:?}: only {attached} branches");
        assert_eq!(point.reader_count(), 0);
    }
}

#[test]
fn a_reader_attached_at_an_index_still_held_reads_from_there_with_its_tags() {
    let (mut w, mut slow) = channel::<u64>(1024, &opts(Flavor::Mirrored)).unwrap();
    let point = w.reader_point();
    write_counting(&mut w, 0, 500, 100);
    w.add_tag(Tag::new(500, "late", TagValue::from(1i64)));
    w.add_tag(Tag::new(120, "early", TagValue::from(2i64)));
    write_counting(&mut w, 500, 600, 100);
    // The slow reader has consumed 100: items 100.. are still held.
    slow.window(100).unwrap();
    slow.consume(100);
    let mut branch = point.attach(Some(110)).unwrap();
    assert_eq!(branch.items_read(), 110);
    let window = branch.window(10).unwrap();
    assert_eq!(window[0], 110);
    let mut tags = Vec::new();
    branch.take_tags(u64::MAX, &mut tags);
    let keys: Vec<&str> = tags.iter().map(|t| &*t.key).collect();
    assert_eq!(keys, ["early", "late"]);

    // Items every reader has consumed may be overwritten: refused, with what is held.
    let e = point.attach(Some(50)).unwrap_err();
    assert_eq!(
        e,
        QueueError::NotInRing {
            asked: 50,
            oldest: 100,
            newest: 600
        }
    );
    assert_eq!(
        e.to_string(),
        "item 50 is not in the queue: it holds items 100 to 600 (exclusive) now"
    );
    // Nor can a reader start past what was published.
    assert!(matches!(
        point.attach(Some(601)),
        Err(QueueError::NotInRing { asked: 601, .. })
    ));
    // A refused attach leaves no reader behind.
    assert_eq!(point.reader_count(), 2);
}

#[test]
fn a_hold_stops_a_reader_short_until_lifted_and_an_end_ends_its_stream() {
    let (mut w, mut r) = channel::<u64>(1024, &opts(Flavor::Mirrored)).unwrap();
    write_counting(&mut w, 0, 300, 300);
    let limit = r.limit();
    limit.hold_at(200);
    assert_eq!(r.window(1).unwrap().len(), 200);
    r.consume(200);
    // Held: "not yet", not the end, even once the writer has finished.
    w.finish();
    assert!(r.window_with(1, Wait::Never).unwrap().is_none());
    let deadline = Instant::now() + Duration::from_millis(20);
    assert!(r.window_with(1, Wait::Until(deadline)).unwrap().is_none());
    // Lifting wakes a waiting reader.
    let lifter = {
        let limit = limit.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            limit.lift();
        })
    };
    assert_eq!(r.window(1).unwrap().len(), 100);
    lifter.join().unwrap();

    let (mut w, mut r) = channel::<u64>(1024, &opts(Flavor::Copying)).unwrap();
    write_counting(&mut w, 0, 300, 300);
    let limit = r.limit();
    limit.end_at(250);
    assert_eq!(read_counting(&mut r, 0), 250);
    // An end the reader has passed ends it where it is.
    limit.end_at(10);
    assert!(r.window(1).unwrap().is_empty());
    // The writer goes on: the ended reader still counts until it detaches.
    assert_eq!(w.reader_count(), 1);
    r.detach();
    assert!(matches!(w.reserve(1), Err(QueueError::NoReaders)));
}
