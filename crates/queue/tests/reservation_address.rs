//! The contract's promise that the asynchronous copy into a queue relies on: the space `reserve`
//! returns lives in memory owned *through* the writer, so moving the writer (into a box, another
//! thread, a copy engine's operation) moves none of it, and the same space is still reserved at
//! the next call on the writer. Checked for both flavors, at a wrap of the ring too.

use sluice_queue::{channel, Flavor, QueueOptions, RingReader, RingWriter};

fn check(flavor: Flavor) {
    let opts = QueueOptions {
        flavor,
        ..QueueOptions::default()
    };
    let (mut w, mut r) = channel::<u32>(1, &opts).unwrap();
    let cap = w.capacity();
    // Fill and drain most of the ring so the next reservation wraps (the copying flavor then
    // hands out its scratch buffer, the mirrored one the second mapping).
    for _ in 0..2 {
        let n = cap - 3;
        w.reserve(n).unwrap()[..n].fill(1);
        w.commit(n);
        let got = r.window(n).unwrap().len();
        r.consume(got.min(n));
    }
    let n = cap / 2;
    let before = w.reserve(n).unwrap().as_ptr();
    // Move the writer into a box on another thread and back: its reservation stays put.
    let mut w = std::thread::spawn(move || Box::new(w)).join().unwrap();
    let after = w.reserve(n).unwrap();
    assert_eq!(
        after.as_ptr(),
        before,
        "{flavor:?}: the reservation moved with the writer"
    );
    after[..n].fill(7);
    w.commit(n);
    let window = r.window(n).unwrap();
    assert!(window[..n].iter().all(|&x| x == 7), "{flavor:?}");
}

#[test]
fn a_reservation_stays_where_it_is_when_the_writer_moves() {
    check(Flavor::Mirrored);
    check(Flavor::Copying);
}
