//! Shared-memory rings: the stream, the checks on a misbehaving peer, and a peer that goes away.
//! (The two-process tests, with the memfd passed over a Unix socket, are sluice-net's.)

use rustix::fd::{AsFd, OwnedFd};
use sluice_queue::{QueueError, RingReader, RingWriter, ShmReader, ShmWriter};
use std::time::{Duration, Instant};

/// The control page's reader and writer counters (`shm.rs`: header line, then one 128-byte line
/// each).
const WRITTEN_AT: u64 = 128;

fn pair<T: sluice_queue::Item>(items: usize) -> (ShmWriter<T>, ShmReader<T>) {
    let w = ShmWriter::<T>::create(items).unwrap();
    let fd: OwnedFd = w.fd().try_clone_to_owned().unwrap();
    let r = ShmReader::<T>::attach(fd).unwrap();
    (w, r)
}

#[test]
fn a_stream_crosses_in_order_with_windows_that_wrap() {
    let (mut w, mut r) = pair::<u64>(4096);
    let total = 3_000_000u64;
    let writer = std::thread::spawn(move || {
        let mut next = 0u64;
        let mut chunk = 1usize;
        while next < total {
            let space = w.reserve(chunk.min(w.capacity())).unwrap();
            let k = space.len().min(chunk).min((total - next) as usize);
            for (i, slot) in space[..k].iter_mut().enumerate() {
                *slot = next + i as u64;
            }
            w.commit(k);
            next += k as u64;
            chunk = chunk % 3001 + 7;
        }
        w.finish();
    });
    let mut expect = 0u64;
    loop {
        // Read further than we consume: a 65-item window sliding by at most 64.
        let win = r.window(65).unwrap();
        if win.is_empty() {
            break;
        }
        for (i, v) in win.iter().enumerate() {
            assert_eq!(*v, expect + i as u64, "item {} of the window", i);
        }
        let k = if win.len() < 65 { win.len() } else { 64 };
        expect += k as u64;
        r.consume(k);
    }
    writer.join().unwrap();
    assert_eq!(expect, total);
}

#[test]
fn a_reader_with_another_item_size_is_refused() {
    let w = ShmWriter::<u64>::create(100).unwrap();
    let err = ShmReader::<f32>::attach(w.fd().try_clone_to_owned().unwrap()).unwrap_err();
    assert!(
        err.to_string()
            .contains("items are 8 bytes, this reader's are 4"),
        "{err}"
    );
}

#[test]
fn only_one_reader_attaches() {
    let (w, _r) = pair::<u32>(100);
    let err = ShmReader::<u32>::attach(w.fd().try_clone_to_owned().unwrap()).unwrap_err();
    assert!(err.to_string().contains("already attached"), "{err}");
}

#[test]
fn an_unsealed_or_foreign_object_is_refused() {
    let fd = rustix::fs::memfd_create(c"not-a-ring", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&fd, 1 << 16).unwrap();
    let err = ShmReader::<u32>::attach(fd).unwrap_err();
    assert!(err.to_string().contains("not sealed"), "{err}");

    let fd =
        rustix::fs::memfd_create(c"not-a-ring", rustix::fs::MemfdFlags::ALLOW_SEALING).unwrap();
    rustix::fs::ftruncate(&fd, 1 << 16).unwrap();
    rustix::fs::fcntl_add_seals(
        &fd,
        rustix::fs::SealFlags::SHRINK | rustix::fs::SealFlags::GROW,
    )
    .unwrap();
    let err = ShmReader::<u32>::attach(fd).unwrap_err();
    assert!(err.to_string().contains("ring magic"), "{err}");
}

#[test]
fn a_writer_counter_out_of_range_is_an_error_not_a_slice() {
    let (mut w, mut r) = pair::<u32>(1024);
    let space = w.reserve(10).unwrap();
    space[..10].fill(7);
    w.commit(10);
    assert_eq!(r.window(10).unwrap().len(), 10);
    // The "writer" claims far more than the ring holds.
    let bogus = (1u64 << 40).to_le_bytes();
    rustix::io::pwrite(w.fd(), &bogus, WRITTEN_AT).unwrap();
    let err = r.window(11).unwrap_err();
    assert!(matches!(err, QueueError::PeerProtocol { .. }), "{err}");
    assert!(err.to_string().contains("1099511627776"), "{err}");
    // Going back is refused too.
    let (mut w, mut r) = pair::<u32>(1024);
    w.reserve(10).unwrap();
    w.commit(10);
    r.window(10).unwrap();
    rustix::io::pwrite(w.fd(), &5u64.to_le_bytes(), WRITTEN_AT).unwrap();
    assert!(matches!(
        r.window(1).unwrap_err(),
        QueueError::PeerProtocol { .. }
    ));
}

#[test]
fn a_reader_counter_out_of_range_is_an_error() {
    let (mut w, r) = pair::<u32>(1024);
    w.reserve(4).unwrap();
    w.commit(4);
    rustix::io::pwrite(w.fd(), &99u64.to_le_bytes(), WRITTEN_AT + 128).unwrap();
    let err = w.reserve(1).unwrap_err();
    assert!(err.to_string().contains("position 99"), "{err}");
    drop(r);
}

#[test]
fn the_reader_gets_what_was_committed_then_learns_the_writer_is_gone() {
    let (mut w, mut r) = pair::<u16>(4096);
    let space = w.reserve(5).unwrap();
    space[..5].copy_from_slice(&[1, 2, 3, 4, 5]);
    w.commit(5);
    let waiter = std::thread::spawn(move || {
        assert_eq!(r.window(5).unwrap(), &[1, 2, 3, 4, 5]);
        r.consume(5);
        let start = Instant::now();
        let err = r.window(1).unwrap_err();
        (err, start.elapsed())
    });
    std::thread::sleep(Duration::from_millis(50));
    drop(w); // without finish
    let (err, _) = waiter.join().unwrap();
    assert!(
        matches!(err, QueueError::PeerGone { offset: 5, .. }),
        "{err}"
    );
}

#[test]
fn a_finished_stream_ends_with_an_empty_window() {
    let (mut w, mut r) = pair::<u8>(4096);
    w.reserve(3).unwrap()[..3].copy_from_slice(b"abc");
    w.commit(3);
    w.finish();
    drop(w);
    assert_eq!(r.window(10).unwrap(), b"abc");
    r.consume(3);
    assert!(r.window(1).unwrap().is_empty());
}

#[test]
fn a_writer_learns_its_reader_left() {
    let (mut w, r) = pair::<u32>(1024);
    let cap = w.capacity();
    w.reserve(cap).unwrap();
    w.commit(cap);
    let dropper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        drop(r);
    });
    assert_eq!(w.reserve(1).unwrap_err(), QueueError::NoReaders);
    dropper.join().unwrap();
}

#[test]
fn a_watched_process_that_exits_is_reported_by_pid() {
    let (_w, mut r) = pair::<u32>(1024);
    let mut child = std::process::Command::new("sleep")
        .arg("0.1")
        .spawn()
        .expect("spawning sleep");
    r.watch_peer(child.id() as i32).unwrap();
    let start = Instant::now();
    let err = r.window(1).unwrap_err();
    assert!(
        err.to_string().contains(&format!("pid {}", child.id())),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    child.wait().unwrap();
}

#[test]
fn waits_time_out_and_never_waits_do_not_block() {
    let (mut w, mut r) = pair::<u32>(1024);
    assert!(r.try_window(1).unwrap().is_none());
    assert!(r
        .window_timeout(1, Duration::from_millis(30))
        .unwrap()
        .is_none());
    let cap = w.capacity();
    w.reserve(cap).unwrap();
    w.commit(cap);
    assert!(w.try_reserve(1).unwrap().is_none());
    assert!(w
        .reserve_timeout(1, Duration::from_millis(30))
        .unwrap()
        .is_none());
    let _ = w.fd().as_fd();
}
