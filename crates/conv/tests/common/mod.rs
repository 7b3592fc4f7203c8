//! Shared helpers: an f64 direct-convolution reference and a driver.
#![allow(dead_code)]

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice_conv::{Convolver, ConvolverConfig, IrMatrix};

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// Exponentially decaying noise, like a room response.
pub fn decaying_noise(rng: &mut StdRng, len: usize) -> Vec<f32> {
    let tau = (len as f32 / 4.0).max(1.0);
    let mut v: Vec<f32> = (0..len)
        .map(|i| rng.gen_range(-1.0f32..1.0) * (-(i as f32) / tau).exp())
        .collect();
    v[0] = 1.0;
    v
}

pub fn noise(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

/// y[n] for output `o`, in f64, directly: sum over inputs and taps.
pub fn reference_at(irs: &IrMatrix, inputs: &[Vec<f32>], o: usize, n: usize) -> f64 {
    let mut acc = 0.0f64;
    for (i, x) in inputs.iter().enumerate() {
        let Some(h) = irs.get(i, o) else { continue };
        // k ranges over taps with 0 <= n-k < x.len()
        let kmin = (n + 1).saturating_sub(x.len());
        let kmax = n.min(h.len() - 1);
        if kmin > kmax {
            continue;
        }
        for k in kmin..=kmax {
            acc += h[k] as f64 * x[n - k] as f64;
        }
    }
    acc
}

/// Runs `conv` over `inputs` (zero padded to `total` samples) with block size `block`;
/// returns outputs of `total` samples, latency removed.
pub fn run(
    conv: &mut Convolver,
    inputs: &[Vec<f32>],
    outputs: usize,
    total: usize,
) -> Vec<Vec<f32>> {
    let b = conv.config().block_size;
    let lat = conv.latency();
    let mut out = vec![Vec::with_capacity(total + lat + b); outputs];
    let mut ib = vec![vec![0.0f32; b]; inputs.len()];
    let mut ob = vec![vec![0.0f32; b]; outputs];
    let mut pos = 0;
    while pos < total + lat {
        for (x, buf) in inputs.iter().zip(&mut ib) {
            buf.fill(0.0);
            if pos < x.len() {
                let n = (x.len() - pos).min(b);
                buf[..n].copy_from_slice(&x[pos..pos + n]);
            }
        }
        let ins: Vec<&[f32]> = ib.iter().map(Vec::as_slice).collect();
        let mut outs: Vec<&mut [f32]> = ob.iter_mut().map(Vec::as_mut_slice).collect();
        conv.process(&ins, &mut outs).unwrap();
        for (o, y) in out.iter_mut().zip(&ob) {
            o.extend_from_slice(y);
        }
        pos += b;
    }
    for o in &mut out {
        o.drain(..lat);
        o.truncate(total);
    }
    out
}

/// Compares `got` against the reference at `positions` (all outputs): RMS error <= 1e-5 of
/// the reference RMS and max error <= 1e-4 of the reference peak.
pub fn check(
    irs: &IrMatrix,
    inputs: &[Vec<f32>],
    got: &[Vec<f32>],
    positions: &[usize],
    what: &str,
) {
    for (o, y) in got.iter().enumerate() {
        let mut err2 = 0.0f64;
        let mut ref2 = 0.0f64;
        let mut max_err = 0.0f64;
        let mut peak = 0.0f64;
        for &n in positions {
            let r = reference_at(irs, inputs, o, n);
            let e = (y[n] as f64 - r).abs();
            err2 += e * e;
            ref2 += r * r;
            max_err = max_err.max(e);
            peak = peak.max(r.abs());
        }
        let rms_err = (err2 / positions.len() as f64).sqrt();
        let rms = (ref2 / positions.len() as f64).sqrt();
        assert!(
            rms > 0.0,
            "{what}: reference is silent at the chosen positions"
        );
        assert!(
            rms_err <= 1e-5 * rms,
            "{what} out {o}: rms error {rms_err:e} > 1e-5 * rms {rms:e}"
        );
        assert!(
            max_err <= 1e-4 * peak,
            "{what} out {o}: max error {max_err:e} > 1e-4 * peak {peak:e}"
        );
    }
}

/// All positions if few, else a spread sample including the edges.
pub fn positions(total: usize, want: usize, rng: &mut StdRng) -> Vec<usize> {
    if total <= want {
        return (0..total).collect();
    }
    let mut p: Vec<usize> = (0..want / 4).collect();
    p.extend(total - want / 4..total);
    for _ in 0..want / 2 {
        p.push(rng.gen_range(0..total));
    }
    p
}

pub fn config(block: usize) -> ConvolverConfig {
    ConvolverConfig {
        block_size: block,
        ..Default::default()
    }
}
