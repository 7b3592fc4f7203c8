//! Every block's declared [`Memory`] checked on the real blocks, built through the registry: the
//! block runs once over a long random stream and again, fresh, from input offsets `s` (multiples
//! of its decimation, not of any internal block size), with other chunk sizes, queue sizes and
//! schedulers; every fresh output from `s / D + ceil(H / D)` on must carry the bits of the
//! uninterrupted run's. The FIR check also shows that one item less of history would be wrong.

use num_complex::Complex32;
use rand::{Rng, SeedableRng};
use sluice_blocks::blocks::{VectorSink, VectorSinkData, VectorSource};
use sluice_blocks::graph_blocks::standard_registry;
use sluice_graph::{chain_memory, Memory, Params, Registry};
use sluice_runtime::{Graph, Item, RunOptions};
use std::collections::BTreeMap;
use toml::{Spanned, Value};

/// Items compared by their bits.
trait Bits: Item + Copy {
    fn bits(&self) -> (u32, u32);
}
impl Bits for f32 {
    fn bits(&self) -> (u32, u32) {
        (self.to_bits(), 0)
    }
}
impl Bits for Complex32 {
    fn bits(&self) -> (u32, u32) {
        (self.re.to_bits(), self.im.to_bits())
    }
}

/// A node of a test chain: its type and its parameters as a graph file writes them.
type Stage = (&'static str, &'static str);

fn params(text: &str) -> Params {
    let values: BTreeMap<String, Spanned<Value>> =
        toml::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    Params::new(values)
}

fn memory(registry: &Registry, (kind, text): Stage) -> Memory {
    let block = registry
        .find(kind)
        .unwrap_or_else(|| panic!("no block {kind}"));
    block
        .memory_of(&params(text))
        .unwrap_or_else(|| panic!("{kind} declares no memory"))
        .unwrap_or_else(|e| panic!("{kind}: {e:?}"))
}

/// How a run is chunked and scheduled.
#[derive(Clone, Copy, Debug)]
struct Chunking {
    source: usize,
    sink: usize,
    queue_bytes: Option<usize>,
    threaded: bool,
}

const WHOLE: Chunking = Chunking {
    source: usize::MAX,
    sink: usize::MAX,
    queue_bytes: None,
    threaded: true,
};

/// Runs `x` through the chain of `stages` (the first reading port `in`, each feeding the next
/// `out` (or `out0`) → `in`), collecting the last stage's `outputs`.
fn run<I: Bits, O: Bits>(
    registry: &Registry,
    stages: &[Stage],
    outputs: &[&str],
    x: &[I],
    how: Chunking,
) -> Vec<Vec<O>> {
    let mut g = Graph::new();
    if let Some(bytes) = how.queue_bytes {
        g.set_default_queue_bytes(bytes);
    }
    let src = g
        .add("src", VectorSource::new(x.to_vec()).max_chunk(how.source))
        .unwrap();
    let (mut prev, mut port) = (src, "out");
    for (i, &(kind, text)) in stages.iter().enumerate() {
        let block = registry.find(kind).unwrap();
        let node = block
            .instantiate(&mut params(text))
            .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
        let id = g.add_boxed(&format!("n{i}"), node).unwrap();
        g.connect(prev, port, id, "in").unwrap();
        // A channelizer's first stream is `out0`.
        let first = g.ports(id).and_then(|p| p.output_index("out"));
        (prev, port) = (id, if first.is_some() { "out" } else { "out0" });
    }
    let mut data: Vec<VectorSinkData<O>> = Vec::new();
    for (o, name) in outputs.iter().enumerate() {
        let (sink, d) = VectorSink::<O>::new();
        let sink = g
            .add(&format!("sink{o}"), sink.max_chunk(how.sink))
            .unwrap();
        g.connect(prev, name, sink, "in").unwrap();
        data.push(d);
    }
    if how.threaded {
        g.run(&RunOptions::default()).unwrap();
    } else {
        g.run_stepped().unwrap();
    }
    data.iter().map(VectorSinkData::items).collect()
}

/// The first output (numbered as the uninterrupted run numbers them, in units of `unit` sink
/// items) from which a fresh run started at input `s` matches the uninterrupted `whole` bit for
/// bit, every later one compared; `first` is the fresh run's first output's number.
fn exact_from<O: Bits>(whole: &[Vec<O>], fresh: &[Vec<O>], first: usize, unit: usize) -> usize {
    let mut from = first;
    for (w, f) in whole.iter().zip(fresh) {
        assert!(w.len() >= first * unit, "the fresh run starts past the end");
        let compared = (w.len() - first * unit).min(f.len());
        // Both runs see the same end of the stream: they end together.
        assert_eq!(
            compared,
            w.len() - first * unit,
            "the fresh run stops early"
        );
        for (i, (a, b)) in w[first * unit..].iter().zip(f).enumerate() {
            if a.bits() != b.bits() {
                from = from.max(first + i / unit + 1);
            }
        }
    }
    from
}

fn c32_noise(n: usize, seed: u64) -> Vec<Complex32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| Complex32::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
        .collect()
}

fn f32_noise(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

const N: usize = 200_000;

/// The fresh runs' chunkings, one per start offset.
const FRESH: [Chunking; 4] = [
    Chunking {
        source: 4093,
        sink: 333,
        queue_bytes: Some(1 << 14),
        threaded: true,
    },
    Chunking {
        source: 777,
        sink: usize::MAX,
        queue_bytes: None,
        threaded: false,
    },
    Chunking {
        source: usize::MAX,
        sink: 1001,
        queue_bytes: Some(1 << 15),
        threaded: false,
    },
    Chunking {
        source: 1,
        sink: 97,
        queue_bytes: None,
        threaded: true,
    },
];

/// Checks the declared memory of the chain `stages` (its `chain_memory`): for several starts,
/// the fresh run is exact from `s / D + lag` on. `unit` sink items make one output of the
/// chain (vectors unpacked). Returns the declared `(D, lag)` and the latest exact start seen.
fn check<I: Bits, O: Bits>(
    stages: &[Stage],
    outputs: &[&str],
    x: &[I],
    unit: usize,
) -> ((u64, u64), usize) {
    let registry = standard_registry();
    let declared: Vec<Memory> = stages.iter().map(|&s| memory(&registry, s)).collect();
    let (d, lag) =
        chain_memory(&declared).unwrap_or_else(|| panic!("{stages:?}: infinite {declared:?}"));
    let (d, lag) = (d as usize, lag as usize);
    let whole: Vec<Vec<O>> = run(&registry, stages, outputs, x, WHOLE);
    let mut worst = 0;
    // Multiples of D (reduced to leave 20,000 inputs), not of any block size inside.
    let fit = |k: usize| d * (k % ((x.len() - 20_000) / d));
    let starts = [d, fit(12345), fit(30_006), fit(x.len() / 2 / d + 3)];
    for (&s, how) in starts.iter().zip(FRESH) {
        let fresh: Vec<Vec<O>> = run(&registry, stages, outputs, &x[s..], how);
        let from = exact_from(&whole, &fresh, s / d, unit);
        assert!(
            from <= s / d + lag,
            "{stages:?} from {s} ({how:?}): exact only from output {from}, declared {} (D {d}, lag {lag})",
            s / d + lag
        );
        worst = worst.max(from - s / d);
    }
    ((d as u64, lag as u64), worst)
}

#[test]
fn direct_form_fir_remembers_taps_minus_one_items() {
    let x = c32_noise(N, 1);
    let cases: [(Stage, u64, u64); 4] = [
        (
            ("fir", "item = \"c32\"\ndesign = \"lowpass\"\nnum_taps = 127\ncutoff = 0.1\ndecimation = 4"),
            4,
            126,
        ),
        (
            ("fir", "item = \"c32\"\nmethod = \"direct\"\ndesign = \"lowpass\"\nnum_taps = 33\ncutoff = 0.2"),
            1,
            32,
        ),
        (
            ("fir", "design = \"complex_bandpass\"\nnum_taps = 40\nlow = 0.05\nhigh = 0.2\ndecimation = 3"),
            3,
            39,
        ),
        (("fir", "taps = [0.5, -0.25, 0.125]\ndecimation = 2"), 2, 2),
    ];
    for (stage, d, h) in cases {
        let ((decl_d, lag), worst) = check::<_, Complex32>(&[stage], &["out"], &x, 1);
        assert_eq!((decl_d, lag), (d, h.div_ceil(d)), "{stage:?}");
        // Tight: the outputs within the declared history are not exact (one window reaching
        // before `s` differs).
        assert_eq!(worst as u64, h.div_ceil(d), "{stage:?}");
    }
    let y = f32_noise(N, 2);
    let stage = (
        "fir",
        "item = \"f32\"\ndesign = \"bandpass\"\nnum_taps = 50\nlow = 0.1\nhigh = 0.3\ndecimation = 5",
    );
    let ((d, lag), worst) = check::<_, f32>(&[stage], &["out"], &y, 1);
    assert_eq!((d, lag, worst as u64), (5, 49u64.div_ceil(5), 10));
}

#[test]
fn one_item_less_of_fir_history_would_be_wrong() {
    let registry = standard_registry();
    let stage = (
        "fir",
        "item = \"c32\"\nmethod = \"direct\"\ndesign = \"lowpass\"\nnum_taps = 33\ncutoff = 0.2",
    );
    let Memory::Finite {
        decimation: 1,
        history,
    } = memory(&registry, stage)
    else {
        panic!("fir declares {:?}", memory(&registry, stage));
    };
    let x = c32_noise(50_000, 3);
    let whole: Vec<Vec<Complex32>> = run(&registry, &[stage], &["out"], &x, WHOLE);
    for (s, how) in [12345, 20_000].into_iter().zip(FRESH) {
        let fresh: Vec<Vec<Complex32>> = run(&registry, &[stage], &["out"], &x[s..], how);
        let from = exact_from(&whole, &fresh, s, 1);
        // Declared one smaller, the comparison would start at s + history - 1, and fail there.
        assert!(from > s + history as usize - 1, "s {s}: exact from {from}");
        assert_eq!(from, s + history as usize);
    }
}

#[test]
fn a_multichannel_fir_reads_whole_windows_without_history() {
    let x = c32_noise(N, 4);
    let stages = [
        ("stream_to_vector", "item = \"c32\"\nvlen = 4"),
        (
            "fir",
            "item = \"c32\"\nchannels = 4\ntaps = [0.5, -0.25, 0.125, 1.5, 0.3]\ndecimation = 2",
        ),
        ("vector_to_stream", "item = \"c32\"\nvlen = 4"),
    ];
    // As declared alone: D 2, no history (per vector).
    let registry = standard_registry();
    assert_eq!(
        memory(&registry, stages[1]),
        Memory::Finite {
            decimation: 2,
            history: 0
        }
    );
    // One vector of four samples, two vectors per output: D 8 over samples, each output
    // unpacked to 4 sink items.
    let whole: Vec<Vec<Complex32>> = run(&registry, &stages, &["out"], &x, WHOLE);
    for (s, how) in [8, 8 * 12345, 8 * 10_001].into_iter().zip(FRESH) {
        let fresh: Vec<Vec<Complex32>> = run(&registry, &stages, &["out"], &x[s..], how);
        assert_eq!(exact_from(&whole, &fresh, s / 8, 4), s / 8, "s {s}");
    }
}

#[test]
fn a_critically_sampled_channelizer_remembers_its_prototype() {
    let x = c32_noise(N, 5);
    let stage = ("channelizer", "channels = 16\noutputs = [0, 3, 15]");
    let ((d, lag), worst) = check::<_, Complex32>(&[stage], &["out0", "out1", "out2"], &x, 1);
    assert_eq!((d, lag), (16, (16 * 18 - 1u64).div_ceil(16)));
    assert_eq!(worst as u64, lag);
    // Vectors, an odd channel count and fewer taps.
    let stages = [
        (
            "channelizer",
            "channels = 15\ntaps_per_branch = 6\nlayout = \"vectors\"\noutputs = [1, 14, 7, 2]",
        ),
        ("vector_to_stream", "item = \"c32\"\nvlen = 4"),
    ];
    let registry = standard_registry();
    let declared = memory(&registry, stages[0]);
    assert_eq!(
        declared,
        Memory::Finite {
            decimation: 15,
            history: 89
        }
    );
    let whole: Vec<Vec<Complex32>> = run(&registry, &stages, &["out"], &x, WHOLE);
    for (s, how) in [15, 15 * 12345, 15 * 7001].into_iter().zip(FRESH) {
        let fresh: Vec<Vec<Complex32>> = run(&registry, &stages, &["out"], &x[s..], how);
        let from = exact_from(&whole, &fresh, s / 15, 4);
        assert!(from <= s / 15 + 6, "s {s}: exact from {from}");
    }
}

#[test]
fn an_oversampled_channelizer_is_infinite() {
    let registry = standard_registry();
    let stage = (
        "channelizer",
        "channels = 16\noversample = 2\noutputs = [1]",
    );
    assert_eq!(memory(&registry, stage), Memory::Infinite);
    // And rightly: started at an odd multiple of D = 8, odd channels come out negated.
    let x = c32_noise(20_000, 6);
    let whole: Vec<Vec<Complex32>> = run(&registry, &[stage], &["out0"], &x, WHOLE);
    let fresh: Vec<Vec<Complex32>> = run(&registry, &[stage], &["out0"], &x[8 * 1001..], WHOLE);
    let last = whole[0].len() - 1;
    assert_ne!(whole[0][last].bits(), fresh[0][last - 1001].bits());
}

#[test]
fn fm_demod_remembers_one_item() {
    let x = c32_noise(N, 7);
    let ((d, lag), worst) = check::<_, f32>(&[("fm_demod", "gain = 0.7")], &["out"], &x, 1);
    assert_eq!((d, lag, worst), (1, 1, 1));
    // Three channels as vectors: one vector of history.
    let stages = [
        ("stream_to_vector", "item = \"c32\"\nvlen = 3"),
        (
            "fm_demod",
            "channels = 3\ndeviation = 5000.0\nsample_rate = 48000.0",
        ),
        ("vector_to_stream", "item = \"f32\"\nvlen = 3"),
    ];
    let registry = standard_registry();
    assert_eq!(
        memory(&registry, stages[1]),
        Memory::Finite {
            decimation: 1,
            history: 1
        }
    );
    let whole: Vec<Vec<f32>> = run(&registry, &stages, &["out"], &x, WHOLE);
    for (s, how) in [3, 3 * 12345, 3 * 20_001].into_iter().zip(FRESH) {
        let fresh: Vec<Vec<f32>> = run(&registry, &stages, &["out"], &x[s..], how);
        assert_eq!(exact_from(&whole, &fresh, s / 3, 3), s / 3 + 1, "s {s}");
    }
}

#[test]
fn stateless_blocks_remember_nothing() {
    let x = c32_noise(N / 4, 8);
    let y = f32_noise(N / 4, 9);
    for stage in [
        ("multiply_const", "item = \"c32\"\ngain = 0.7"),
        ("add_const", "item = \"c32\"\nvalue = 0.25\nvalue_im = -1.5"),
        ("conjugate", ""),
    ] {
        let (memory, worst) = check::<_, Complex32>(&[stage], &["out"], &x, 1);
        assert_eq!((memory, worst), ((1, 0), 0), "{stage:?}");
    }
    for stage in [
        ("magnitude", ""),
        ("magnitude_squared", ""),
        ("complex_to_real", ""),
        ("complex_to_imag", ""),
    ] {
        let (memory, worst) = check::<_, f32>(&[stage], &["out"], &x, 1);
        assert_eq!((memory, worst), ((1, 0), 0), "{stage:?}");
    }
    for stage in [
        ("multiply_const", "item = \"f32\"\ngain = -3.1"),
        ("add_const", "item = \"f32\"\nvalue = 0.25"),
    ] {
        let (memory, worst) = check::<_, f32>(&[stage], &["out"], &y, 1);
        assert_eq!((memory, worst), ((1, 0), 0), "{stage:?}");
    }
}

#[test]
fn a_receiver_chain_is_exact_after_chain_memorys_lag() {
    let x = c32_noise(N, 10);
    let stages = [
        (
            "fir",
            "item = \"c32\"\ndesign = \"lowpass\"\nnum_taps = 31\ncutoff = 0.2\ndecimation = 2",
        ),
        (
            "channelizer",
            "channels = 8\ntaps_per_branch = 4\noutputs = [1]",
        ),
        ("fm_demod", "gain = 2.0"),
    ];
    // ceil(30 / 2) = 15; ceil((15 + 31) / 8) = 6; 6 + 1 = 7.
    let ((d, lag), worst) = check::<_, f32>(&stages, &["out"], &x, 1);
    assert_eq!((d, lag), (16, 7));
    assert!(worst <= 7);
}

#[test]
fn blocks_with_state_over_the_whole_past_say_so() {
    let registry = standard_registry();
    for stage in [
        ("iir", "design = \"lowpass\"\ncutoff = 0.1"),
        (
            "fft_filter",
            "design = \"lowpass\"\nnum_taps = 1023\ncutoff = 0.1",
        ),
        (
            "fir",
            "method = \"fft\"\ndesign = \"lowpass\"\nnum_taps = 1023\ncutoff = 0.1",
        ),
        ("rotator", "frequency = 1000.0\nsample_rate = 48000.0"),
        ("agc", ""),
        ("dc_blocker", ""),
    ] {
        assert_eq!(memory(&registry, stage), Memory::Infinite, "{stage:?}");
    }
}
