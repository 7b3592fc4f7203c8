//! Property test: any interleaving of writer and reader operations, with 1–4 readers (some added
//! mid-stream, some dropped), matches a model of per-reader VecDeques.

use proptest::prelude::*;
use sluice_queue::{channel, Flavor, QueueOptions, Reader, RingReader, RingWriter};
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
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0usize..1500, 0usize..1500).prop_map(|(n, k)| Op::Write { n, k }),
        6 => (0usize..4, 0usize..1500, 0usize..1500).prop_map(|(r, n, k)| Op::Read { r, n, k }),
        1 => Just(Op::AddReader),
        1 => (0usize..4).prop_map(|r| Op::CloneReader { r }),
        1 => (0usize..4).prop_map(|r| Op::DropReader { r }),
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
