//! `sluice bench fir-crossover`: direct-form FIR against overlap-save, cost per output sample
//! for complex items and complex taps, to find the filter length where the FFT wins.
//!
//! For each filter length the direct form ([`Fir`] over [`ComplexTaps`]) and overlap-save at
//! FFT sizes 2·L … 32·L (powers of two, at least 16) each filter the same cache-resident input
//! for `--ms` milliseconds per trial; the median of `--trials` trials is reported.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use num_complex::Complex32;
use sluice_kernels::{fft_size_for_taps, ComplexTaps, Fir, OverlapSave};

use super::report::{machine_description, median, Table};

/// Arguments of `sluice bench fir-crossover`.
#[derive(clap::Args, Debug)]
pub struct BenchFirCrossoverArgs {
    /// Filter lengths to measure.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "4,8,12,16,24,32,48,64,96,128,192,256,384,512"
    )]
    pub taps: Vec<usize>,
    /// Milliseconds per trial and variant.
    #[arg(long, default_value_t = 150)]
    pub ms: u64,
    /// Trials per point (median reported).
    #[arg(long, default_value_t = 3)]
    pub trials: usize,
    /// Directory for fir-crossover.csv / .json.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
}

fn test_taps(len: usize) -> Vec<Complex32> {
    (0..len)
        .map(|k| Complex32::from_polar(1.0 / len as f32, 0.3 * k as f32))
        .collect()
}

/// Nanoseconds per output sample of `step` run repeatedly for `ms` (each call yields `per_call`).
fn ns_per_sample(ms: u64, per_call: usize, mut step: impl FnMut()) -> f64 {
    step(); // warm up
    let budget = Duration::from_millis(ms);
    let t0 = Instant::now();
    let mut calls = 0u64;
    while t0.elapsed() < budget {
        for _ in 0..8 {
            step();
        }
        calls += 8;
    }
    t0.elapsed().as_nanos() as f64 / (calls as f64 * per_call as f64)
}

/// Runs the measurement and prints/writes the table.
pub fn run(args: BenchFirCrossoverArgs) -> anyhow::Result<()> {
    let mut table = Table::new(&[
        "taps",
        "fir_ns_per_sample",
        "os_best_fft_size",
        "os_best_ns_per_sample",
        "os_rule_fft_size",
        "os_rule_ns_per_sample",
        "winner",
    ]);
    let mut crossover = None;
    println!("# fir-crossover on {}", machine_description());
    for &l in &args.taps {
        anyhow::ensure!(l >= 1, "--taps: filter length must be at least 1, got {l}");
        let h = test_taps(l);
        let block = 8192usize.max(4 * l);
        let input: Vec<Complex32> = (0..block + l - 1)
            .map(|i| Complex32::from_polar(1.0, 0.01 * i as f32))
            .collect();
        let mut out = vec![Complex32::default(); block];
        let mut fir = Fir::new(ComplexTaps::new(&h)?);
        let fir_ns = median(
            &(0..args.trials)
                .map(|_| {
                    ns_per_sample(args.ms, block, || {
                        fir.filter(black_box(&input[..]), &mut out);
                    })
                })
                .collect::<Vec<_>>(),
        );
        let mut best = (0usize, f64::INFINITY);
        let mut rule = (fft_size_for_taps(l), f64::NAN);
        let mut n = (2 * l).next_power_of_two().max(16);
        while n <= (32 * l).max(64).next_power_of_two().max(rule.0) {
            let mut os = OverlapSave::new(&h, n).context("overlap-save configuration")?;
            let step = os.step();
            let window: Vec<Complex32> = (0..n)
                .map(|i| Complex32::from_polar(1.0, 0.01 * i as f32))
                .collect();
            let mut o = vec![Complex32::default(); n];
            let ns = median(
                &(0..args.trials)
                    .map(|_| {
                        ns_per_sample(args.ms, step, || {
                            // Lengths are fixed above; an error here would be a bug.
                            let _ = os.process_block(black_box(&window), &mut o);
                        })
                    })
                    .collect::<Vec<_>>(),
            );
            if ns < best.1 {
                best = (n, ns);
            }
            if n == rule.0 {
                rule.1 = ns;
            }
            n *= 2;
        }
        let winner = if best.1 < fir_ns {
            "overlap-save"
        } else {
            "direct"
        };
        if winner == "overlap-save" && crossover.is_none() {
            crossover = Some(l);
        }
        if winner == "direct" {
            crossover = None;
        }
        table.push(vec![
            l.to_string(),
            format!("{fir_ns:.3}"),
            best.0.to_string(),
            format!("{:.3}", best.1),
            rule.0.to_string(),
            format!("{:.3}", rule.1),
            winner.to_string(),
        ]);
        println!(
            "{}",
            table.rows.last().map(|r| r.join("  ")).unwrap_or_default()
        );
    }
    print!("{}", table.render());
    match crossover {
        Some(l) => println!("overlap-save wins from {l} taps on (every longer length measured)"),
        None => println!("direct form wins at the longest length measured"),
    }
    crate::report::results_dir(&args.out)?;
    let csv = args.out.join("fir-crossover.csv");
    table
        .write_csv(&csv)
        .with_context(|| format!("writing {}", csv.display()))?;
    let json = args.out.join("fir-crossover.json");
    table
        .write_json(&json, "fir-crossover")
        .with_context(|| format!("writing {}", json.display()))?;
    println!("wrote {} and {}", csv.display(), json.display());
    Ok(())
}
