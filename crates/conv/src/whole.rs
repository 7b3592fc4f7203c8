//! Whole signals convolved offline with few, large FFTs (overlap-add).
//!
//! The engine of [`crate::Convolver`] is built for latency: small blocks, many partitions,
//! one output block per period. A whole signal that is already in memory has no latency to
//! keep, so it is cheapest to cut into as few segments as possible: each segment of `S`
//! samples is transformed once at `L ≥ S + m − 1` points, multiplied by the IR's spectrum and
//! transformed back, and the results are added where they overlap. `L` is chosen among the
//! lengths RustFFT runs fastest (`2^a · 3^b`) by a cost model: segments × `L log L`. A 10 s
//! stereo file and a 2^18-tap IR take one transform of 786,432 points per channel. The
//! channels run on threads of their own.
//!
//! Plans are kept for the process's life ([`plans`]): planning a transform of that size takes
//! several times as long as running it, and a program that convolves once per file would pay
//! it on every call.

use crate::ConvError;
use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The longest transform the cost model picks when a shorter one would do: it bounds the
/// memory per channel (2^23 points: 32 MiB of time samples, as much again of spectrum).
const MAX_LEN: usize = 1 << 23;

/// The smallest `2^a · 3^b` (b ≤ 2) of at least `n` points.
fn fast_len(n: usize) -> usize {
    [1, 3, 9]
        .iter()
        .map(|&k| k * (n.div_ceil(k)).next_power_of_two())
        .min()
        .unwrap_or(n)
}

/// The transform length `L` and the segment length `S = L − m + 1` for `n` samples and an IR
/// of `m`: the cheapest plan by the cost model (see the module docs).
pub fn plan(n: usize, m: usize) -> (usize, usize) {
    let (least, most) = (fast_len(m + 1), fast_len(n + m - 1));
    let most = most.min(MAX_LEN.max(fast_len(2 * m)));
    let mut best = (f64::INFINITY, least);
    let mut l = least;
    while l <= most.max(least) {
        let segment = l - m + 1;
        let cost = n.div_ceil(segment) as f64 * l as f64 * (l as f64).log2();
        if cost < best.0 {
            best = (cost, l);
        }
        l = fast_len(l + 1);
    }
    (best.1, best.1 - m + 1)
}

/// Convolves each of `inputs` with its impulse response: `irs` holds one for every input, or
/// one per input. Output `i` is the full convolution, `inputs[i].len() + ir.len() − 1`
/// samples (an empty input or IR gives an empty output). Runs the inputs on up to `threads`
/// threads at once. Computes in f32, with a relative error of about 1e-6 of the output's peak.
pub fn convolve_whole(
    inputs: &[&[f32]],
    irs: &[&[f32]],
    threads: usize,
) -> Result<Vec<Vec<f32>>, ConvError> {
    if irs.len() != 1 && irs.len() != inputs.len() {
        return Err(ConvError::IrCount {
            irs: irs.len(),
            inputs: inputs.len(),
        });
    }
    let ir_of = |i: usize| irs[if irs.len() == 1 { 0 } else { i }];
    let jobs: Vec<usize> = (0..inputs.len()).collect();
    let mut out = Vec::with_capacity(inputs.len());
    for batch in jobs.chunks(threads.max(1)) {
        let done: Vec<Vec<f32>> = std::thread::scope(|scope| {
            let handles: Vec<_> = batch
                .iter()
                .map(|&i| scope.spawn(move || convolve_one(inputs[i], ir_of(i))))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a convolution thread panicked"))
                .collect()
        });
        out.extend(done);
    }
    Ok(out)
}

/// The forward and inverse real transforms of `len` points, planned once per process.
fn plans(len: usize) -> (Arc<dyn RealToComplex<f32>>, Arc<dyn ComplexToReal<f32>>) {
    static PLANNER: OnceLock<Mutex<RealFftPlanner<f32>>> = OnceLock::new();
    let mut planner = PLANNER
        .get_or_init(|| Mutex::new(RealFftPlanner::new()))
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    (planner.plan_fft_forward(len), planner.plan_fft_inverse(len))
}

/// IRs up to this long are convolved directly: fewer operations than two transforms per
/// segment, and no rounding of the transforms.
const DIRECT_MAX: usize = 32;

/// One input with one IR, by overlap-add (see the module docs), or directly when short.
fn convolve_one(x: &[f32], ir: &[f32]) -> Vec<f32> {
    let (n, m) = (x.len(), ir.len());
    if n == 0 || m == 0 {
        return Vec::new();
    }
    if m <= DIRECT_MAX {
        let mut y = vec![0.0f32; n + m - 1];
        for (j, &h) in ir.iter().enumerate() {
            for (o, &v) in y[j..j + n].iter_mut().zip(x) {
                *o += h * v;
            }
        }
        return y;
    }
    let (l, segment) = plan(n, m);
    let (fwd, inv) = plans(l);
    let mut time = fwd.make_input_vec();
    let mut scratch = fwd.make_scratch_vec();
    let mut iscratch = inv.make_scratch_vec();
    // The IR's spectrum, with the inverse transform's 1/L folded in.
    let mut h = fwd.make_output_vec();
    time[..m].copy_from_slice(ir);
    fwd.process_with_scratch(&mut time, &mut h, &mut scratch)
        .expect("buffers made by the plan");
    let scale = 1.0 / l as f32;
    h.iter_mut().for_each(|v| *v *= scale);
    let mut spectrum = fwd.make_output_vec();
    let mut y = vec![0.0f32; n + m - 1];
    for start in (0..n).step_by(segment) {
        let part = &x[start..(start + segment).min(n)];
        time[..part.len()].copy_from_slice(part);
        time[part.len()..].fill(0.0);
        fwd.process_with_scratch(&mut time, &mut spectrum, &mut scratch)
            .expect("buffers made by the plan");
        for (s, h) in spectrum.iter_mut().zip(&h) {
            *s *= h;
        }
        // The product of two real signals' spectra is real at DC and Nyquist up to rounding;
        // the inverse transform wants them exactly real.
        spectrum[0].im = 0.0;
        if let Some(last) = spectrum.last_mut() {
            *last = Complex::new(last.re, if l % 2 == 0 { 0.0 } else { last.im });
        }
        inv.process_with_scratch(&mut spectrum, &mut time, &mut iscratch)
            .expect("buffers made by the plan");
        let end = (start + l).min(y.len());
        for (o, v) in y[start..end].iter_mut().zip(&time) {
            *o += v;
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The f64 direct-form convolution.
    fn direct(x: &[f32], h: &[f32]) -> Vec<f64> {
        let mut y = vec![0.0f64; x.len() + h.len() - 1];
        for (i, &a) in x.iter().enumerate() {
            for (j, &b) in h.iter().enumerate() {
                y[i + j] += f64::from(a) * f64::from(b);
            }
        }
        y
    }

    fn noise(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                s as f32 / u32::MAX as f32 - 0.5
            })
            .collect()
    }

    #[test]
    fn outputs_match_the_f64_direct_form_in_one_and_in_many_segments() {
        // Short IR into a long signal (many segments), long IR into a short one (one), equal
        // lengths, an IR of one tap, and lengths that are not fast FFT sizes.
        for (n, m) in [
            (20_000, 37),
            (500, 3001),
            (4096, 4096),
            (1000, 1),
            (7919, 1031),
        ] {
            let (x, h) = (noise(n, n as u32), noise(m, m as u32 + 7));
            let want = direct(&x, &h);
            let got = convolve_whole(&[&x, &x[..n / 2]], &[&h], 2).unwrap();
            assert_eq!(got[0].len(), n + m - 1);
            assert_eq!(got[1].len(), n / 2 + m - 1);
            let peak = want.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            for (k, (g, w)) in got[0].iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*g) - w).abs() < 2e-6 * peak.max(1.0),
                    "n={n} m={m} k={k}: {g} vs {w}"
                );
            }
            let half = direct(&x[..n / 2], &h);
            for (g, w) in got[1].iter().zip(&half) {
                assert!((f64::from(*g) - w).abs() < 2e-6 * peak.max(1.0));
            }
        }
    }

    #[test]
    fn one_ir_per_input_and_the_errors() {
        let (x, a, b) = (noise(300, 1), noise(40, 2), noise(90, 3));
        let y = convolve_whole(&[&x, &x], &[&a, &b], 1).unwrap();
        assert_eq!((y[0].len(), y[1].len()), (339, 389));
        let wb = direct(&x, &b);
        assert!(y[1]
            .iter()
            .zip(&wb)
            .all(|(g, w)| (f64::from(*g) - w).abs() < 1e-5));
        let err = convolve_whole(&[&x, &x, &x], &[&a, &b], 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "2 impulse responses for 3 inputs: give one for all of them, or one per input"
        );
        assert!(convolve_whole(&[&[]], &[&a], 1).unwrap()[0].is_empty());
    }

    #[test]
    fn the_plan_takes_one_transform_when_it_fits_and_segments_a_long_signal() {
        // 10 s of 48 kHz with a 2^18 IR: one transform of 3 · 2^18 points.
        assert_eq!(plan(480_000, 1 << 18), (786_432, 786_432 - (1 << 18) + 1));
        // A long signal with a short IR is cut into segments well above the IR's length.
        let (l, s) = plan(100_000_000, 1024);
        assert!(l <= MAX_LEN && s > 8 * 1024, "{l} {s}");
        for n in [1, 2, 5, 100, 1000, 1 << 20] {
            let f = fast_len(n);
            assert!(f >= n && f < 2 * n.max(2), "{n} → {f}");
        }
    }
}
