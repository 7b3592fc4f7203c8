//! The arithmetic blocks in graphs: zero copy (every window lies in its queue's mapping),
//! numerically right against a plain loop, end of stream and tags.

use super::*;
use crate::blocks::vector::{VectorSink, VectorSource};
use num_complex::Complex32;
use sluice_runtime::{Graph, QueueOptions, RunOptions, TagValue};

#[test]
fn a_sum_needs_an_input() {
    assert!(matches!(Sum::<f32>::new(0), Err(DspError::NoInputs(0))));
    assert_eq!(Sum::<f32>::new(3).unwrap().inputs(), 3);
}

#[test]
fn complex_sum_ends_with_the_shortest_input_and_keeps_tags() {
    let lens = [5000usize, 3001, 4000];
    let signals: Vec<Vec<Complex32>> = lens
        .iter()
        .enumerate()
        .map(|(k, &len)| {
            (0..len)
                .map(|i| Complex32::new(i as f32, k as f32))
                .collect()
        })
        .collect();
    let mut g = Graph::new();
    let sum = g.add("sum", Sum::<Complex32>::new(3).unwrap()).unwrap();
    for (k, x) in signals.iter().enumerate() {
        let src = VectorSource::new(x.clone())
            .max_chunk(257 + 100 * k)
            .with_tag(100 + k as u64, "k", TagValue::U64(k as u64));
        let src = g.add(&format!("src{k}"), src).unwrap();
        g.connect(src, "out", sum, &format!("in{k}")).unwrap();
    }
    let (sink, data) = VectorSink::<Complex32>::new();
    let sink = g.add("sink", sink).unwrap();
    g.connect(sum, "out", sink, "in").unwrap();
    g.run_stepped().unwrap();
    let got = data.items();
    assert_eq!(got.len(), 3001);
    for (i, y) in got.iter().enumerate() {
        assert_eq!(*y, Complex32::new(3.0 * i as f32, 3.0), "item {i}");
    }
    let tags: Vec<u64> = data.tags().iter().map(|t| t.index).collect();
    assert_eq!(tags, vec![100, 101, 102]);
}

/// A deterministic signal with fractional values, so that the order of additions shows.
fn signal(len: usize, seed: u32) -> Vec<f32> {
    (0..len as u32)
        .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed.wrapping_mul(40_503)) % 4093) as f32 / 7.0)
        .collect()
}

/// Whether every slice lies in its queue's mapping; and how many straddle the seam between
/// the mapping's two views (a window that wrapped around the ring).
fn all_inside(seen: &[witness::Seen]) -> (bool, usize) {
    let inside = seen
        .iter()
        .all(|s| s.queue.start <= s.slice.start && s.slice.end <= s.queue.end);
    let seam = seen
        .iter()
        .filter(|s| {
            let half = s.queue.start + s.queue.len() / 2;
            s.slice.start < half && half < s.slice.end
        })
        .count();
    (inside, seam)
}

/// Runs `src0 + src1 → add`, then `add + src1 + src2 + src3 → sum → sink` over small queues
/// (1024 items, their positions staggered by 250 items, so that windows wrap around the rings
/// again and again), threaded or stepped. Returns the output and what each block saw.
fn add_then_sum(x: &[Vec<f32>], threaded: bool) -> (Vec<f32>, [Vec<witness::Seen>; 2]) {
    let add_seen = witness::Witness::default();
    let sum_seen = witness::Witness::default();
    let mut g = Graph::new();
    g.set_queue_options(QueueOptions {
        stagger_bytes: 1000,
        ..QueueOptions::default()
    });
    let src: Vec<_> = x
        .iter()
        .enumerate()
        .map(|(k, x)| {
            let source = VectorSource::new(x.clone()).max_chunk(333 + 184 * k);
            g.add(&format!("src{k}"), source).unwrap()
        })
        .collect();
    let add = g
        .add("add", Add::<f32>::new().witnessed(&add_seen))
        .unwrap();
    let sum = g
        .add("sum", Sum::<f32>::new(4).unwrap().witnessed(&sum_seen))
        .unwrap();
    let (sink, data) = VectorSink::<f32>::new();
    let sink = g.add("sink", sink.max_chunk(1500)).unwrap();
    let small = Some(1000);
    g.connect_with(src[0], "out", add, "a", small).unwrap();
    g.connect_with(src[1], "out", add, "b", small).unwrap();
    g.connect_with(add, "out", sum, "in0", small).unwrap();
    g.connect_with(src[1], "out", sum, "in1", small).unwrap(); // src1 feeds both blocks
    g.connect_with(src[2], "out", sum, "in2", small).unwrap();
    g.connect_with(src[3], "out", sum, "in3", small).unwrap();
    g.connect_with(sum, "out", sink, "in", small).unwrap();
    if threaded {
        g.run(&RunOptions::default()).unwrap();
    } else {
        g.run_stepped().unwrap();
    }
    let seen = [add_seen, sum_seen].map(|w| w.lock().unwrap().clone());
    (data.items(), seen)
}

#[test]
fn add_and_four_input_sum_read_and_write_queue_memory_in_place_and_sum_right() {
    let len = 100_000;
    let x: Vec<Vec<f32>> = (0..4).map(|k| signal(len, k)).collect();
    // Numerically right: bit for bit against a plain loop adding in the same order.
    let want: Vec<f32> = (0..len)
        .map(|j| x[0][j] + x[1][j] + x[1][j] + x[2][j] + x[3][j])
        .collect();
    let mut wrapped = [0, 0];
    for threaded in [false, true] {
        let (got, seen) = add_then_sum(&x, threaded);
        assert!(got == want, "threaded: {threaded}");
        // Zero copy: every window handed to the kernels, and every reservation they wrote,
        // lies in its queue's mapping, including windows that wrapped around the ring.
        for ((name, ports), (seen, wrapped)) in [("add", 3), ("sum", 5)]
            .into_iter()
            .zip(seen.iter().zip(&mut wrapped))
        {
            assert!(
                (0..ports).all(|p| seen.iter().any(|s| s.port == p)),
                "{name}"
            );
            let (inside, seam) = all_inside(seen);
            assert!(inside, "{name}: a slice outside its queue: {seen:?}");
            if !threaded {
                *wrapped += seam;
            }
        }
    }
    // Counted on the stepped run, which is deterministic, so this cannot flake.
    assert!(
        wrapped[0] > 0 && wrapped[1] > 0,
        "no window wrapped: {wrapped:?}"
    );
}

#[test]
fn nine_inputs_are_summed_in_rounds_without_copies() {
    let len = 20_000;
    let x: Vec<Vec<f32>> = (0..9).map(|k| signal(len, k + 10)).collect();
    let seen = witness::Witness::default();
    let mut g = Graph::new();
    let sum = g
        .add("sum", Sum::<f32>::new(9).unwrap().witnessed(&seen))
        .unwrap();
    for (k, x) in x.iter().enumerate() {
        let src = g
            .add(
                &format!("src{k}"),
                VectorSource::new(x.clone()).max_chunk(901),
            )
            .unwrap();
        g.connect_with(src, "out", sum, &format!("in{k}"), Some(1000))
            .unwrap();
    }
    let (sink, data) = VectorSink::<f32>::new();
    let sink = g.add("sink", sink).unwrap();
    g.connect(sum, "out", sink, "in").unwrap();
    g.run_stepped().unwrap();
    let want: Vec<f32> = (0..len)
        .map(|j| x.iter().skip(1).fold(x[0][j], |acc, x| acc + x[j]))
        .collect();
    assert_eq!(data.items(), want);
    let (inside, _) = all_inside(&seen.lock().unwrap());
    assert!(inside);
}

#[test]
fn complex_add_ends_with_the_shorter_input_and_keeps_tags() {
    let a: Vec<Complex32> = (0..3000).map(|i| Complex32::new(i as f32, 1.0)).collect();
    let b: Vec<Complex32> = (0..2500).map(|i| Complex32::new(1.0, i as f32)).collect();
    let mut g = Graph::new();
    let sa = g
        .add(
            "a",
            VectorSource::new(a).with_tag(7, "t", TagValue::Bool(true)),
        )
        .unwrap();
    let sb = g.add("b", VectorSource::new(b).max_chunk(999)).unwrap();
    let add = g.add("add", Add::<Complex32>::new()).unwrap();
    let (sink, data) = VectorSink::<Complex32>::new();
    let sink = g.add("sink", sink).unwrap();
    g.connect(sa, "out", add, "a").unwrap();
    g.connect(sb, "out", add, "b").unwrap();
    g.connect(add, "out", sink, "in").unwrap();
    g.run(&RunOptions::default()).unwrap();
    let got = data.items();
    assert_eq!(got.len(), 2500);
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, y)| *y == Complex32::new(i as f32 + 1.0, i as f32 + 1.0)));
    assert_eq!(data.tags().iter().map(|t| t.index).collect::<Vec<_>>(), [7]);
}
