//! The engine's real FFT (`SplitRealFft`: half-size complex FFT plus its own vectorised
//! twiddle pass, straight to split spectra) against `realfft` followed by the interleaved <->
//! split packing the engine needed before, in the same run: forward + inverse of `2S` points.
//!
//! `cargo run --release -p sluice-conv --example split_fft -- [rounds]`
//!
//! Prints, per size, the median over `rounds` (default 7) of each variant's time per
//! forward + inverse pair and the ratio (realfft / split; above 1 means split is faster).

use std::time::Instant;

use num_complex::Complex;
use realfft::RealFftPlanner;
use rustfft::FftPlanner;
use sluice_conv::SplitRealFft;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    println!(
        "{:>6}  {:>12}  {:>12}  {:>6}",
        "S", "realfft ns", "split ns", "ratio"
    );
    for s in [64usize, 128, 256, 512, 1024, 4096, 16384] {
        let mut split = SplitRealFft::new(&mut FftPlanner::new(), s);
        let mut planner = RealFftPlanner::<f32>::new();
        let fwd = planner.plan_fft_forward(2 * s);
        let inv = planner.plan_fft_inverse(2 * s);
        let mut time = vec![0.0f32; 2 * s];
        let mut freq = vec![Complex::new(0.0f32, 0.0); s + 1];
        let scratch_len = fwd.get_scratch_len().max(inv.get_scratch_len());
        let mut scratch = vec![Complex::new(0.0f32, 0.0); scratch_len];
        let x: Vec<f32> = (0..2 * s).map(|i| (i as f32 * 0.37).sin()).collect();
        let (mut re, mut im) = (vec![0.0f32; s], vec![0.0f32; s]);
        let mut out = vec![0.0f32; s];
        let iters = ((1usize << 23) / s).max(1);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let t = Instant::now();
            for _ in 0..iters {
                time.copy_from_slice(&x);
                fwd.process_with_scratch(&mut time, &mut freq, &mut scratch)
                    .expect("sizes from the plan");
                for k in 0..s {
                    (re[k], im[k]) = (freq[k].re, freq[k].im);
                }
                im[0] = freq[s].re;
                for k in 0..s {
                    freq[k] = Complex::new(re[k], im[k]);
                }
                freq[0].im = 0.0;
                freq[s] = Complex::new(im[0], 0.0);
                inv.process_with_scratch(&mut freq, &mut time, &mut scratch)
                    .expect("sizes from the plan");
                out.copy_from_slice(&time[s..]);
            }
            a.push(t.elapsed().as_secs_f64() * 1e9 / iters as f64);
            let t = Instant::now();
            for _ in 0..iters {
                split.forward(&x, &[], &mut re, &mut im);
                split.inverse_tail(&re, &im, &mut out);
            }
            b.push(t.elapsed().as_secs_f64() * 1e9 / iters as f64);
            std::hint::black_box(&out);
        }
        let (a, b) = (median(a), median(b));
        println!("{s:>6}  {a:>12.0}  {b:>12.0}  {:>6.2}", a / b);
    }
}
