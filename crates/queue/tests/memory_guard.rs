//! A memory guard keeps a queue's memory mapped after both ends are gone: what a foreign view
//! of a window (a numpy array in the Python package) relies on. Checked for both flavors: the
//! items of the last window are still readable through its address once the writer and the
//! reader have been dropped.

use sluice_queue::{channel, Flavor, QueueOptions, RingReader, RingWriter};

fn check(flavor: Flavor) {
    let opts = QueueOptions {
        flavor,
        ..QueueOptions::default()
    };
    let (mut w, mut r) = channel::<u32>(1024, &opts).unwrap();
    let n = 100;
    for (i, x) in w.reserve(n).unwrap()[..n].iter_mut().enumerate() {
        *x = i as u32 * 3;
    }
    w.commit(n);
    let window = r.window(n).unwrap();
    let address = window.as_ptr();
    let guard = r.memory_guard();
    let range = r.ring_memory();
    assert!(range.contains(&(address as usize)), "{flavor:?}");
    drop((w, r));
    // SAFETY: the guard keeps the ring's memory mapped (what this test checks); the window was
    // 100 initialised u32 items at `address`, and nothing writes to the ring any more.
    let kept = unsafe { std::slice::from_raw_parts(address, n) };
    assert!(
        kept.iter().enumerate().all(|(i, &x)| x == i as u32 * 3),
        "{flavor:?}: the items changed or vanished"
    );
    drop(guard);
}

#[test]
fn a_guard_keeps_the_mirrored_ring_mapped() {
    check(Flavor::Mirrored);
}

#[test]
fn a_guard_keeps_the_copying_ring_alive() {
    check(Flavor::Copying);
}
