//! Property test: any interleaving of writer and reader operations, with 1–4 readers (some added
//! mid-stream, some dropped), matches a model of per-reader VecDeques.

use proptest::prelude::*;
use sluice_queue::{channel, Flavor, LossyReader, QueueOptions, Reader, RingReader, RingWriter};
use std::collections::VecDeque;

#[derive(Debug, Clone)]
enum Op {
    /// Reserve at least `n` (without blocking) and commit `k` of it.
    Write { n: usize, k: usize },
    /// Reader `r` asks for a window of at least `n` and consumes `k` of it.
    Read { r: usize, n: usize, k: usize },
    /// Attach a reader at the write position.
    AddReader,
    /// Clone reader `r` at its position.
    CloneReader { r: usize },
    /// Drop reader `r` (never the last one).
    DropReader { r: usize },
    /// Attach a lossy reader (a tap) through a tap point.
    AttachTap,
    /// Tap `t` reads up to `n` items (the newest `n` if `latest`).
    TapRead { t: usize, n: usize, latest: bool },
    /// Drop tap `t`.
    DropTap { t: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0usize..1500, 0usize..1500).prop_map(|(n, k)| Op::Write { n, k }),
        6 => (0usize..4, 0usize..1500, 0usize..1500).prop_map(|(r, n, k)| Op::Read { r, n, k }),
        1 => Just(Op::AddReader),
        1 => (0usize..4).prop_map(|r| Op::CloneReader { r }),
        1 => (0usize..4).prop_map(|r| Op::DropReader { r }),
        1 => Just(Op::AttachTap),
        3 => (0usize..3, 0usize..1500, any::<bool>()).prop_map(|(t, n, latest)| Op::TapRead { t, n, latest }),
        1 => (0usize..3).prop_map(|t| Op::DropTap { t }),
    ]
}

fn run(flavor: Flavor, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let opts = QueueOptions {
        flavor,
        ..QueueOptions::default()
    };
    let (mut w, r0) = channel::<u32>(1024, &opts).unwrap();
    let cap = w.capacity();
    let mut readers: Vec<(Reader<u32>, VecDeque<u32>)> = vec![(r0, VecDeque::new())];
    let mut next = 0u32;
    let point = w.tap_point();
    let mut taps: Vec<LossyReader<u32>> = Vec::new();
    let mut tap_out = vec![u32::MAX; 1500];
    for op in ops {
        match op {
            Op::Write { n, k } => {
                let n = n % (cap + 1);
                let backlog = readers.iter().map(|(_, m)| m.len()).max().unwrap_or(0);
                let free = cap - backlog;
                match w.try_reserve(n).unwrap() {
                    None => prop_assert!(free < n.max(1), "refused {n} with {free} free"),
                    Some(space) => {
                        prop_assert!(free >= n.max(1) && space.len() >= n && space.len() <= free);
                        let k = k.min(space.len());
                        for (i, s) in space[..k].iter_mut().enumerate() {
                            *s = next + i as u32;
                        }
                        w.commit(k);
                        for (_, m) in readers.iter_mut() {
                            m.extend(next..next + k as u32);
                        }
                        next += k as u32;
                    }
                }
            }
            Op::Read { r, n, k } => {
                let count = readers.len();
                let (reader, model) = &mut readers[r % count];
                let n = n % (cap + 1);
                match reader.try_window(n).unwrap() {
                    None => prop_assert!(model.len() < n.max(1)),
                    Some(window) => {
                        prop_assert!(window.len() >= n && window.len() <= model.len());
                        for (a, b) in window.iter().zip(model.iter()) {
                            prop_assert_eq!(a, b);
                        }
                        let k = k.min(window.len());
                        reader.consume(k);
                        model.drain(..k);
                    }
                }
            }
            Op::AddReader => {
                if readers.len() < 4 {
                    readers.push((w.add_reader().unwrap(), VecDeque::new()));
                }
            }
            Op::CloneReader { r } => {
                if readers.len() < 4 {
                    let (reader, model) = &readers[r % readers.len()];
                    let pair = (reader.try_clone().unwrap(), model.clone());
                    readers.push(pair);
                }
            }
            Op::DropReader { r } => {
                if readers.len() > 1 {
                    readers.remove(r % readers.len());
                }
            }
            Op::AttachTap => {
                if taps.len() < 3 {
                    taps.push(point.attach());
                    prop_assert_eq!(point.lossy_readers(), taps.len());
                }
            }
            Op::TapRead { t, n, latest } => {
                if !taps.is_empty() {
                    let count = taps.len();
                    let tap = &mut taps[t % count];
                    let before = tap.position();
                    let out = &mut tap_out[..n];
                    let read = if latest {
                        tap.read_latest(out)
                    } else {
                        tap.read(out)
                    };
                    // Only intact items, each the value committed at its index.
                    for (i, v) in out[..read.items].iter().enumerate() {
                        prop_assert_eq!(*v as u64, read.first + i as u64);
                    }
                    // Every position passed over is either delivered or counted as skipped.
                    prop_assert_eq!(tap.position() - before, read.items as u64 + read.skipped);
                    prop_assert_eq!(read.first + read.items as u64, tap.position());
                    prop_assert!(tap.position() <= next as u64);
                    // Lossy readers never hold the writer back: nothing here changes `free`.
                }
            }
            Op::DropTap { t } => {
                if !taps.is_empty() {
                    let count = taps.len();
                    taps.remove(t % count);
                    prop_assert_eq!(point.lossy_readers(), taps.len());
                }
            }
        }
    }
    // End of stream: every reader drains exactly its model.
    w.finish();
    for (reader, model) in readers.iter_mut() {
        let mut seen = Vec::new();
        loop {
            let window = reader.window(1).unwrap();
            if window.is_empty() {
                break;
            }
            seen.extend_from_slice(window);
            let len = window.len();
            reader.consume(len);
        }
        prop_assert_eq!(seen, model.iter().copied().collect::<Vec<_>>());
    }
    Ok(())
}

proptest! {
    // Miri runs the copying flavor (it cannot map memory twice) with few cases.
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 200 }))]

    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot run memfd_create and MAP_FIXED")]
    fn mirrored_matches_model(ops in prop::collection::vec(op(), 1..120)) {
        run(Flavor::Mirrored, ops)?;
    }

    #[test]
    fn copying_matches_model(ops in prop::collection::vec(op(), 1..120)) {
        run(Flavor::Copying, ops)?;
    }
}
