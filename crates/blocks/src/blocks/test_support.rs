//! Helpers shared by the block tests: random signals, an f64 reference, and a graph harness.

use crate::blocks::vector::{VectorSink, VectorSource};
use num_complex::{Complex32, Complex64};
use sluice_runtime::{Graph, Node, RunOptions};

/// `len` complex samples of deterministic noise.
pub fn c32_noise(len: usize, seed: u64) -> Vec<Complex32> {
    let mut g = crate::blocks::sample::Gaussian::new(seed);
    (0..len)
        .map(|_| {
            let (a, b) = g.pair();
            Complex32::new(a, b)
        })
        .collect()
}

/// `y[j] = Σ_k h[k] · x[j·D − k]` in f64 with zeros before the stream; `ceil(len/D)` outputs.
pub fn direct_f64(h: &[Complex32], x: &[Complex32], decimation: usize) -> Vec<Complex64> {
    (0..x.len().div_ceil(decimation))
        .map(|j| {
            let n = j * decimation;
            (0..h.len())
                .filter(|&k| k <= n)
                .map(|k| {
                    Complex64::new(h[k].re.into(), h[k].im.into())
                        * Complex64::new(x[n - k].re.into(), x[n - k].im.into())
                })
                .sum()
        })
        .collect()
}

/// Largest `|got − want|` relative to the peak `|want|`.
pub fn max_rel_error(got: &[Complex32], want: &[Complex64]) -> f64 {
    let peak = want.iter().map(|w| w.norm()).fold(0.0, f64::max).max(1e-30);
    got.iter()
        .zip(want)
        .map(|(g, w)| (Complex64::new(g.re.into(), g.im.into()) - w).norm())
        .fold(0.0, f64::max)
        / peak
}

/// Streams `x` through `block` (threaded) in chunks of at most `chunk` items, over queues of
/// `capacity` items, and returns the output.
pub fn run_filter(
    block: impl Node + 'static,
    x: &[Complex32],
    chunk: usize,
    capacity: Option<usize>,
) -> Vec<Complex32> {
    let mut g = Graph::new();
    let src = g
        .add("src", VectorSource::new(x.to_vec()).max_chunk(chunk))
        .unwrap();
    let filt = g.add("filter", block).unwrap();
    let (sink, data) = VectorSink::<Complex32>::new();
    let sink = g.add("sink", sink.max_chunk(chunk)).unwrap();
    g.connect_with(src, "out", filt, "in", capacity).unwrap();
    g.connect_with(filt, "out", sink, "in", capacity).unwrap();
    g.run(&RunOptions::default()).unwrap();
    data.items()
}

/// What `data` holds once it has at least `n` items (polled for at most 10 s; a test that
/// waits longer fails naming the count).
pub fn wait_for_items<T: Clone>(data: &crate::blocks::VectorSinkData<T>, n: u64) -> Vec<T> {
    for _ in 0..10_000 {
        let items = data.items();
        if items.len() as u64 >= n {
            return items;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!(
        "the sink never got {n} items (it has {})",
        data.items().len()
    );
}
