//! The convolution block in graphs: against a direct f64 convolution (mono, with its tail),
//! against the offline engine (true stereo), and its errors.

use super::*;
use crate::blocks::{VectorSink, VectorSource};
use sluice_conv::{convolve_offline, Scheduling};
use sluice_runtime::{Graph, RunOptions};

fn config(block: usize) -> ConvolverConfig {
    ConvolverConfig {
        block_size: block,
        scheduling: Scheduling::SingleThread,
        ..ConvolverConfig::default()
    }
}

fn noise(len: usize, seed: u64) -> Vec<f32> {
    crate::blocks::test_support::c32_noise(len, seed)
        .iter()
        .map(|v| v.re * 0.3)
        .collect()
}

/// `inputs` through a `convolve` node (threaded, odd chunks); one vector per output.
fn run(block: Convolve, inputs: &[Vec<f32>], rate: Option<f64>) -> Result<Vec<Vec<f32>>, String> {
    let outputs = block.outputs();
    let mut g = Graph::new();
    let conv = g.add("conv", block).unwrap();
    for (c, x) in inputs.iter().enumerate() {
        let mut src = VectorSource::new(x.clone()).max_chunk(333 + 100 * c);
        if let Some(hz) = rate {
            src = src.with_tag(0, SAMPLE_RATE, TagValue::F64(hz));
        }
        let src = g.add(&format!("src{c}"), src).unwrap();
        g.connect(src, "out", conv, &format!("in{c}")).unwrap();
    }
    let mut data = Vec::new();
    for o in 0..outputs {
        let (sink, d) = VectorSink::<f32>::new();
        let sink = g.add(&format!("sink{o}"), sink.max_chunk(517)).unwrap();
        g.connect(conv, &format!("out{o}"), sink, "in").unwrap();
        data.push(d);
    }
    g.run(&RunOptions::default()).map_err(|e| e.to_string())?;
    Ok(data.iter().map(|d| d.items()).collect())
}

#[test]
fn mono_matches_a_direct_f64_convolution_tail_included() {
    let x = noise(20_000, 1);
    let h = noise(3000, 2);
    let block = Convolve::new(
        std::slice::from_ref(&h),
        48000,
        "ir.wav",
        1,
        config(256),
        true,
    )
    .unwrap();
    let y = run(block, std::slice::from_ref(&x), Some(48000.0))
        .unwrap()
        .remove(0);
    assert_eq!(y.len(), x.len() + h.len() - 1);
    for (n, got) in y.iter().enumerate() {
        let want: f64 = (n.saturating_sub(h.len() - 1)..=n.min(x.len() - 1))
            .map(|k| f64::from(x[k]) * f64::from(h[n - k]))
            .sum();
        assert!(
            (f64::from(*got) - want).abs() < 1e-4,
            "frame {n}: {got} vs {want}"
        );
    }
    // Without the tail, and at a block size the engine must buffer (latency removed).
    let block = Convolve::new(
        std::slice::from_ref(&h),
        48000,
        "ir.wav",
        1,
        config(100),
        false,
    )
    .unwrap();
    let short = run(block, std::slice::from_ref(&x), None)
        .unwrap()
        .remove(0);
    assert_eq!(short.len(), x.len());
    for (a, b) in short.iter().zip(&y) {
        assert!((a - b).abs() < 1e-5);
    }
}

#[test]
fn true_stereo_routes_as_the_offline_engine_does() {
    let inputs = [noise(5000, 3), noise(5000, 4)];
    let ir: Vec<Vec<f32>> = (0..4).map(|k| noise(700, 10 + k)).collect();
    let block = Convolve::new(&ir, 44100, "room.wav", 2, config(512), true).unwrap();
    let got = run(block, &inputs, Some(44100.0)).unwrap();
    let matrix = Layout::TrueStereo.matrix(2, &ir).unwrap();
    let want = convolve_offline(&matrix, &[&inputs[0], &inputs[1]], &config(512)).unwrap();
    assert_eq!(
        got, want,
        "the block and the offline engine run the same loop"
    );
}

#[test]
fn a_wrong_rate_and_a_wrong_layout_are_errors_naming_the_ir() {
    let h = noise(100, 5);
    let block = Convolve::new(
        std::slice::from_ref(&h),
        48000,
        "ir.wav",
        1,
        config(64),
        true,
    )
    .unwrap();
    let err = run(block, &[noise(1000, 6)], Some(44100.0)).unwrap_err();
    assert!(
        err.contains("the stream is 44100 Hz but the impulse response ir.wav is 48000 Hz"),
        "{err}"
    );
    let three = vec![h.clone(), h.clone(), h];
    let err = Convolve::new(&three, 48000, "ir.wav", 2, config(64), true).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("ir.wav: the impulse response has 3 channels"),
        "{err}"
    );
}
