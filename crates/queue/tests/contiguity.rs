//! Every window and reservation is contiguous at every wrap offset, for several item sizes.

use sluice_queue::{channel, Flavor, QueueOptions, RingReader, RingWriter};

#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Three([u8; 3]);

#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Twelve([u32; 3]);

#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct TwentyFour([u64; 3]);

/// Writes a counting sequence so that, for each starting offset in the ring, a window spanning
/// the wrap point is read back in order.
fn check_every_offset<T: sluice_queue::Item + PartialEq + std::fmt::Debug>(
    flavor: Flavor,
    make: impl Fn(u64) -> T,
) {
    let opts = QueueOptions {
        flavor,
        ..QueueOptions::default()
    };
    let (mut w, mut r) = channel::<T>(1, &opts).unwrap();
    let cap = w.capacity();
    let span = (cap / 2 + 3).min(cap);
    let mut next_write = 0u64;
    let mut next_read = 0u64;
    // Step the read position through every ring offset; each window spans `span` items.
    let offsets = if cap > 2048 { 97 } else { 1 }; // stride keeps huge rings fast
    for _ in (0..cap).step_by(offsets) {
        while next_write < next_read + span as u64 {
            let space = w.reserve(1).unwrap();
            let k = space
                .len()
                .min((next_read + span as u64 - next_write) as usize);
            for (i, slot) in space[..k].iter_mut().enumerate() {
                *slot = make(next_write + i as u64);
            }
            w.commit(k);
            next_write += k as u64;
        }
        let window = r.window(span).unwrap();
        assert!(window.len() >= span);
        for (i, item) in window[..span].iter().enumerate() {
            assert_eq!(
                *item,
                make(next_read + i as u64),
                "offset {}",
                next_read % cap as u64
            );
        }
        r.consume(offsets);
        next_read += offsets as u64;
    }
}

#[test]
fn mirrored_windows_are_contiguous_at_every_offset() {
    check_every_offset(Flavor::Mirrored, |i| i as u8);
    check_every_offset(Flavor::Mirrored, |i| Three([i as u8, (i >> 8) as u8, 7]));
    check_every_offset(Flavor::Mirrored, |i| i as f32);
    check_every_offset(Flavor::Mirrored, |i| Twelve([i as u32, !(i as u32), 3]));
    check_every_offset(Flavor::Mirrored, |i| TwentyFour([i, !i, i * 3]));
}

#[test]
fn copying_windows_are_contiguous_at_every_offset() {
    check_every_offset(Flavor::Copying, |i| i as u8);
    check_every_offset(Flavor::Copying, |i| Three([i as u8, (i >> 8) as u8, 7]));
    check_every_offset(Flavor::Copying, |i| TwentyFour([i, !i, i * 3]));
}

#[test]
fn capacity_is_rounded_to_pages_and_items() {
    let opts = QueueOptions::default();
    let (w, _r) = channel::<Three>(1, &opts).unwrap();
    assert_eq!(
        w.capacity() % 4096,
        0,
        "3-byte items round to whole pages of items"
    );
    let (w, _r) = channel::<Twelve>(1000, &opts).unwrap();
    assert!(w.capacity() >= 1000);
    assert_eq!((w.capacity() * 12) % 4096, 0);
    let (w, _r) = channel::<TwentyFour>(5000, &opts).unwrap();
    assert!(w.capacity() >= 5000);
    assert_eq!((w.capacity() * 24) % 4096, 0);
}

#[test]
fn staggered_queue_starts_mid_ring_and_counts_from_zero() {
    let opts = QueueOptions {
        stagger_bytes: 1000,
        ..QueueOptions::default()
    };
    let (mut w, mut r) = channel::<f32>(1024, &opts).unwrap();
    let cap = w.capacity();
    // A full-capacity write works even though the ring starts 250 items in.
    let space = w.reserve(cap).unwrap();
    for (i, s) in space.iter_mut().enumerate() {
        *s = i as f32;
    }
    w.commit(cap);
    assert_eq!(w.items_written(), cap as u64);
    let window = r.window(cap).unwrap();
    assert!(window.iter().enumerate().all(|(i, &v)| v == i as f32));
    assert_eq!(r.items_read(), 0);
}

#[test]
fn dont_fork_queues_work_like_any_other() {
    let opts = QueueOptions {
        dont_fork: true,
        ..QueueOptions::default()
    };
    let (mut w, mut r) = channel::<u16>(5000, &opts).unwrap();
    let space = w.reserve(3).unwrap();
    space[..3].copy_from_slice(&[1, 2, 3]);
    w.commit(3);
    assert_eq!(&r.window(3).unwrap()[..3], &[1, 2, 3]);
}

/// Every window of a mirrored ring lies in `ring_memory`, which spans both views, at every wrap.
#[test]
fn mirrored_windows_lie_in_ring_memory() {
    let (mut w, mut r) = channel::<u32>(1, &QueueOptions::default()).unwrap();
    let cap = w.capacity();
    let memory = r.ring_memory();
    assert_eq!(w.ring_memory(), memory);
    assert_eq!(memory.len(), 2 * cap * std::mem::size_of::<u32>());
    let span = cap / 2 + 3;
    for _ in 0..3 * cap / span {
        let space = w.reserve(span).unwrap();
        assert!(space.as_ptr_range().end as usize <= memory.end);
        assert!(memory.contains(&(space.as_ptr() as usize)));
        let k = space.len().min(span);
        w.commit(k);
        let window = r.window(k).unwrap();
        let range = window.as_ptr_range();
        assert!(memory.contains(&(range.start as usize)));
        assert!(range.end as usize <= memory.end);
        r.consume(k);
    }
}
