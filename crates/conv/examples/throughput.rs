//! Offline throughput: CPU time per channel per second of audio.
//!
//! `cargo run --release -p sluice-conv --example throughput -- [ir_len] [channels] [block] [mode] [seconds]`
//! mode: single | threaded | coop | timings (prints the tuner's per-level measurements). Prints levels, CPU load per channel (percent of one core at
//! 48 kHz), wall-clock real-time factor and the worst callback.

use std::time::Instant;

use sluice_conv::{Convolver, ConvolverConfig, IrMatrix, Partitioning, Scheduling};

fn cpu_seconds() -> f64 {
    sluice_os::process_cpu_time().as_secs_f64()
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let ir_len: usize = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(1 << 16);
    let channels: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let block: usize = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(64);
    let mode = a.get(4).map(String::as_str).unwrap_or("single");
    let seconds: f64 = a.get(5).and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let part = a.get(6).map(String::as_str).unwrap_or("auto");
    if mode == "timings" {
        for t in sluice_conv::measure_level_costs(block, 1 << 16, 5) {
            let n = 2.0 * t.size as f64;
            println!(
                "size {:6}: fwd+inv fft {:9.0} ns ({:.3} ns per n log2 n), mac {:8.0} ns ({:.3} ns per bin)",
                t.size,
                t.fft_ns,
                t.fft_ns / 2.0 / (n * n.log2()),
                t.mac_ns,
                t.mac_ns / t.size as f64
            );
        }
        return;
    }
    let scheduling = match mode {
        "threaded" => Scheduling::Threaded {
            pin_cores: None,
            realtime_priority: None,
        },
        "coop" => Scheduling::Cooperative,
        _ => Scheduling::SingleThread,
    };
    let partitioning = match part {
        "uniform" => Partitioning::Uniform,
        "tuned" => Partitioning::Tuned { cache: None },
        _ => Partitioning::Auto,
    };
    let ir: Vec<f32> = (0..ir_len)
        .map(|i| {
            ((i as f32 * 12.9898).sin() * 43758.545).fract()
                * (-(i as f32) / (ir_len as f32 / 6.0)).exp()
        })
        .collect();
    let irs = IrMatrix::mono_per_channel(channels, &ir);
    let cfg = ConvolverConfig {
        block_size: block,
        scheduling,
        partitioning,
        ..Default::default()
    };
    let mut conv = Convolver::new(cfg, &irs).expect("config");
    let xs: Vec<Vec<f32>> = (0..channels)
        .map(|c| {
            (0..block)
                .map(|i| ((i + c) as f32 * 0.731).sin() * 0.1)
                .collect()
        })
        .collect();
    let mut ys = vec![vec![0.0f32; block]; channels];
    let ins: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
    let mut outs: Vec<&mut [f32]> = ys.iter_mut().map(Vec::as_mut_slice).collect();
    let callbacks = (seconds * 48_000.0 / block as f64) as usize;
    // Warm-up: one largest period.
    let warm = conv.levels().last().map_or(1, |l| 2 * l.size / block + 1);
    for _ in 0..warm {
        conv.process(&ins, &mut outs).unwrap();
    }
    let c0 = cpu_seconds();
    let t0 = Instant::now();
    let mut worst = 0.0f64;
    let mut times = Vec::with_capacity(callbacks);
    for _ in 0..callbacks {
        let t = Instant::now();
        conv.process(&ins, &mut outs).unwrap();
        let e = t.elapsed().as_secs_f64();
        worst = worst.max(e);
        times.push(e);
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c0;
    let audio = callbacks as f64 * block as f64 / 48_000.0;
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() - 1) as f64 * p) as usize] * 1e6;
    println!("levels {:?}", conv.levels());
    println!(
        "callback us: mean {:.1} p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.1}",
        times.iter().sum::<f64>() / times.len() as f64 * 1e6,
        pct(0.5),
        pct(0.99),
        pct(0.999),
        worst * 1e6
    );
    println!(
        "ir {ir_len} ch {channels} block {block} {mode}: cpu/channel {:.3}% of a core, wall RT factor {:.1}x, worst callback {:.1} us (period {:.1} us), late {}",
        100.0 * cpu / audio / channels as f64,
        audio / wall,
        worst * 1e6,
        block as f64 / 48.0 * 1000.0,
        conv.stats().late_periods
    );
}
