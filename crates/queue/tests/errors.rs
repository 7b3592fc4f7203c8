//! Each misuse that the contract calls an error returns one, with a readable message.

use sluice_queue::{channel, QueueError, QueueOptions, RingReader, RingWriter, Tag, TagValue};
use std::time::Duration;

#[test]
fn window_larger_than_capacity_is_an_error_not_a_hang() {
    let (w, mut r) = channel::<f32>(1024, &QueueOptions::default()).unwrap();
    let cap = w.capacity();
    let err = r.window(cap + 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "requested {} items but the queue holds at most {cap}",
            cap + 1
        )
    );
}

#[test]
fn reserve_larger_than_capacity_is_an_error() {
    let (mut w, _r) = channel::<f32>(1024, &QueueOptions::default()).unwrap();
    let cap = w.capacity();
    assert!(matches!(
        w.reserve(cap + 1),
        Err(QueueError::TooLarge { requested, capacity }) if requested == cap + 1 && capacity == cap
    ));
}

#[test]
fn writer_gets_an_error_when_every_reader_is_gone() {
    let (mut w, r) = channel::<u32>(1024, &QueueOptions::default()).unwrap();
    let cap = w.capacity();
    w.reserve(cap).unwrap();
    w.commit(cap);
    // The ring is full; a blocked writer is released with an error when the reader drops.
    let t = std::thread::spawn(move || w.reserve(1).map(|s| s.len()));
    std::thread::sleep(Duration::from_millis(30));
    drop(r);
    let err = t.join().unwrap().unwrap_err();
    assert_eq!(err, QueueError::NoReaders);
    assert_eq!(
        err.to_string(),
        "every reader of the queue has been dropped"
    );
}

#[test]
fn zero_capacity_and_zero_sized_items_are_errors() {
    let err = channel::<f32>(0, &QueueOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "queue capacity must be at least one item");
    let err = channel::<()>(16, &QueueOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "zero-sized item types cannot be queued");
}

#[test]
fn too_many_readers_is_an_error() {
    let opts = QueueOptions {
        max_readers: 2,
        ..QueueOptions::default()
    };
    let (w, _r) = channel::<f32>(16, &opts).unwrap();
    let _r2 = w.add_reader().unwrap();
    let err = w.add_reader().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the queue already has its maximum of 2 readers"
    );
}

#[test]
fn huge_pages_without_any_configured_is_a_clear_error() {
    let configured: u64 = std::fs::read_to_string("/proc/sys/vm/nr_hugepages")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let opts = QueueOptions {
        huge_pages: true,
        ..QueueOptions::default()
    };
    match channel::<f32>(1024, &opts) {
        Ok((w, _r)) => assert!(configured > 0 && w.capacity() * 4 % (2 << 20) == 0),
        Err(e) => {
            assert!(matches!(e, QueueError::NoHugePages { .. }), "{e}");
            assert!(e.to_string().contains("vm.nr_hugepages"));
        }
    }
}

#[test]
fn end_of_stream_gives_short_then_empty_windows() {
    let (mut w, mut r) = channel::<i16>(64, &QueueOptions::default()).unwrap();
    w.reserve(5).unwrap()[..5].copy_from_slice(&[1, 2, 3, 4, 5]);
    w.commit(5);
    drop(w);
    assert_eq!(r.window(10).unwrap(), &[1, 2, 3, 4, 5]);
    r.consume(5);
    assert!(r.window(1).unwrap().is_empty());
    assert!(r.is_finished());
}

#[test]
fn try_and_timeout_variants_do_not_block() {
    let (mut w, mut r) = channel::<f32>(1024, &QueueOptions::default()).unwrap();
    assert!(r.try_window(1).unwrap().is_none());
    assert!(r
        .window_timeout(1, Duration::from_millis(5))
        .unwrap()
        .is_none());
    let cap = w.capacity();
    w.reserve(cap).unwrap();
    w.commit(cap);
    assert!(w.try_reserve(1).unwrap().is_none());
    assert!(w
        .reserve_timeout(1, Duration::from_millis(5))
        .unwrap()
        .is_none());
}

#[test]
#[should_panic(expected = "consume(3) exceeds the 2-item window")]
fn consuming_more_than_the_window_panics() {
    let (mut w, mut r) = channel::<f32>(16, &QueueOptions::default()).unwrap();
    w.reserve(2).unwrap();
    w.commit(2);
    r.window(2).unwrap();
    r.consume(3);
}

#[test]
fn tags_travel_beside_items_and_late_readers_attach() {
    let (mut w, mut r) = channel::<f32>(64, &QueueOptions::default()).unwrap();
    w.reserve(4).unwrap();
    w.commit(4);
    w.add_tag(Tag::new(2, "freq", TagValue::F64(100e6)));
    let mut late = w.add_reader().unwrap();
    assert_eq!(late.items_read(), 4);
    w.reserve(4).unwrap();
    w.commit(4);
    assert_eq!(late.window(4).unwrap().len(), 4);
    let mut tags = Vec::new();
    r.take_tags(2, &mut tags);
    assert!(tags.is_empty(), "the tag is on item 2, not before it");
    r.take_tags(4, &mut tags);
    assert_eq!(tags, vec![Tag::new(2, "freq", TagValue::F64(100e6))]);
    let mut late_tags = Vec::new();
    late.take_tags(u64::MAX, &mut late_tags);
    assert!(
        late_tags.is_empty(),
        "a reader attached later does not get earlier tags"
    );
    assert_eq!(r.window(8).unwrap().len(), 8);
}

/// A writer with free space left is told at its next reservation that nobody reads any more,
/// instead of filling the rest of the queue for nobody (a throttle before a finished `head`
/// used to run on for a whole queue).
#[test]
fn a_writer_with_free_space_learns_at_once_that_every_reader_is_gone() {
    let (mut w, r) = channel::<u32>(1 << 16, &QueueOptions::default()).unwrap();
    w.reserve(1).unwrap()[0] = 7;
    w.commit(1);
    drop(r);
    assert_eq!(w.try_reserve(1).unwrap_err(), QueueError::NoReaders);
}
