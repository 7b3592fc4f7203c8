//! `sluice bench radio`: the radio blocks against GNU Radio 3.10, FutureSDR 0.8 and liquid-dsp,
//! in the same invocation (issue "Radio blocks").
//!
//! Every case runs as a graph on both sides, `null_source → head(N) → block → null_sink` (one
//! sink per channel for the channelizer's streams), with each framework's default scheduler
//! and buffers; the rate is input items over the wall time of the run, the median of
//! `--runs`. liquid-dsp has no scheduler: its harness (`scripts/liquid/liquid_bench.c`, built
//! here with `cc`) runs the kernel in a loop on one thread, so it is compared with sluice's
//! kernel in a loop on one thread ("per core"). For the FIR cases the table also gives
//! GFLOP/s (4 per tap and item) and their share of this core's peak, measured in the same run
//! (12 independent 8-lane fused multiply-add chains: the most the core's FMA units do).

use super::plot;
use super::radio_cases::{Case, M, P};
use super::report::{machine_description, median, Table};
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Arguments of `sluice bench radio`.
#[derive(clap::Args, Debug)]
pub struct BenchRadioArgs {
    /// Cases to run (default: all): fir64, fir256, xlating, rational, fm, rotator, arb,
    /// channelizer, channelizer-vec, channelizer2x, channelizer2x-vec.
    #[arg(long, value_delimiter = ',')]
    pub cases: Vec<String>,
    /// Runs per case and side; the table shows medians.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Scale every case's item count by this (0.2 for a quick look).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Seconds per kernel-alone measurement.
    #[arg(long, default_value_t = 1.0)]
    pub kernel_seconds: f64,
    /// Skip GNU Radio.
    #[arg(long)]
    pub no_gnuradio: bool,
    /// Python interpreter that can import GNU Radio (Debian's, by default).
    #[arg(long, default_value = "/usr/bin/python3")]
    pub python: PathBuf,
    /// The GNU Radio script (run from the repository root, or give its path).
    #[arg(long, default_value = "scripts/gr_radio.py")]
    pub gr_script: PathBuf,
    /// Skip FutureSDR.
    #[arg(long)]
    pub no_futuresdr: bool,
    /// The FutureSDR harness (built by perf/futuresdr-radio/build.sh).
    #[arg(
        long,
        default_value = "perf/futuresdr-radio/target/release/futuresdr-radio"
    )]
    pub futuresdr: PathBuf,
    /// Skip liquid-dsp.
    #[arg(long)]
    pub no_liquid: bool,
    /// The liquid-dsp harness source, compiled here with `cc`.
    #[arg(long, default_value = "scripts/liquid/liquid_bench.c")]
    pub liquid_src: PathBuf,
    /// Directory for radio.csv, radio.json and radio.png.
    #[arg(long, default_value = "target/bench/radio")]
    pub out: PathBuf,
}

/// Runs a peer harness once; its items/s per run, or why it could not run.
fn run_peer(program: &Path, args: &[String]) -> anyhow::Result<Vec<f64>> {
    let output = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("cannot start {}", program.display()))?;
    if !output.status.success() {
        bail!(
            "{} {} failed: {}",
            program.display(),
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("unreadable output from {}", program.display()))?;
    doc["items_per_s"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
        .context("no items_per_s in the peer's output")
}

/// Compiles the liquid-dsp harness into `dir`; its path. A missing library names the package.
fn build_liquid(src: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    if !Path::new("/usr/include/liquid/liquid.h").exists() {
        bail!("liquid-dsp is not installed: apt-get install libliquid-dev (scripts/setup.sh does), or pass --no-liquid");
    }
    let exe = dir.join("liquid_bench");
    let status = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(src)
        .args(["-lliquid", "-lm"])
        .status()
        .context("running cc (install gcc) to build the liquid-dsp harness")?;
    if !status.success() {
        bail!("cc could not build {} ({status})", src.display());
    }
    Ok(exe)
}

/// One run of the sluice graph of `case`; input items per second.
fn sluice_rate(case: Case, items: u64) -> anyhow::Result<f64> {
    let registry = sluice_registry::standard_registry();
    let graph = sluice_graph::load_str(&case.graph(items), &case.name(), &registry)?;
    let t0 = Instant::now();
    let report = graph.run(&sluice_runtime::RunOptions::default())?;
    let wall = report
        .wall
        .as_secs_f64()
        .max(1e-9)
        .min(t0.elapsed().as_secs_f64());
    anyhow::ensure!(
        report.node("head").map(|s| s.items_in) == Some(items),
        "{}: the head did not pass {items} items",
        case.name()
    );
    Ok(items as f64 / wall)
}

/// The most fused multiply-adds per second one core does, in GFLOP/s (see the module docs).
fn peak_gflops() -> f64 {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        let iters = 20_000_000u64;
        let trials: Vec<f64> = (0..5)
            .map(|_| {
                let t0 = Instant::now();
                // SAFETY: avx2 and fma were detected just above.
                std::hint::black_box(unsafe { fma_chains(iters) });
                (iters * 12 * 16) as f64 / t0.elapsed().as_secs_f64() / 1e9
            })
            .collect();
        return trials.iter().copied().fold(0.0, f64::max);
    }
    f64::NAN
}

/// 12 independent chains of 8-lane fused multiply-adds, `iters` rounds.
///
/// # Safety
/// The CPU must support avx2 and fma.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_chains(iters: u64) -> f32 {
    use std::arch::x86_64::*;
    let (b, c) = (_mm256_set1_ps(0.999), _mm256_set1_ps(1e-4));
    let mut a: [__m256; 12] = std::array::from_fn(|k| _mm256_set1_ps(0.5 + k as f32 * 1e-3));
    for _ in 0..iters {
        for v in a.iter_mut() {
            *v = _mm256_fmadd_ps(*v, b, c);
        }
    }
    let s = a
        .iter()
        .fold(_mm256_setzero_ps(), |s, v| _mm256_add_ps(s, *v));
    _mm_cvtss_f32(_mm256_castps256_ps128(s))
}

fn msps(v: Option<f64>) -> String {
    v.map_or("-".into(), |r| format!("{:.1}", r / 1e6))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? / b?)
}

fn times(v: Option<f64>) -> String {
    v.map_or("-".into(), |r| format!("{r:.2}"))
}

/// Runs the benchmark.
pub fn run(args: BenchRadioArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    anyhow::ensure!(args.scale > 0.0, "--scale must be positive");
    let cases: Vec<Case> = if args.cases.is_empty() {
        Case::all()
    } else {
        let all = Case::all();
        args.cases
            .iter()
            .map(|n| {
                all.iter()
                    .copied()
                    .find(|c| c.name() == *n)
                    .with_context(|| format!("--cases: unknown case '{n}'"))
            })
            .collect::<anyhow::Result<_>>()?
    };
    let dir = crate::report::results_dir(&args.out)?;
    let taps_file = dir.join("channelizer-prototype.f32");
    let proto = sluice_kernels::Channelizer::prototype(M, P)?;
    std::fs::write(&taps_file, bytemuck::cast_slice::<f32, u8>(&proto))
        .with_context(|| format!("writing {}", taps_file.display()))?;
    let taps_arg = taps_file.to_string_lossy().into_owned();
    if !args.no_gnuradio && !args.gr_script.exists() {
        bail!(
            "{} not found: run from the repository root or pass --gr-script",
            args.gr_script.display()
        );
    }
    if !args.no_futuresdr && !args.futuresdr.exists() {
        bail!(
            "the FutureSDR harness {} is missing: build it with perf/futuresdr-radio/build.sh \
             (needs the nightly toolchain), or pass --no-futuresdr",
            args.futuresdr.display()
        );
    }
    let liquid = if args.no_liquid {
        None
    } else {
        Some(build_liquid(&args.liquid_src, &dir)?)
    };
    let peak = peak_gflops();
    println!("machine: {}", machine_description());
    println!(
        "one core's peak (12 FMA chains, AVX2): {peak:.1} GFLOP/s; runs per side: {}, medians",
        args.runs
    );
    let mut table = Table::new(&[
        "case",
        "sluice_msps",
        "sluice_kernel_1thread_msps",
        "gnuradio_msps",
        "x_gnuradio",
        "futuresdr_msps",
        "x_futuresdr",
        "liquid_1thread_msps",
        "kernel_x_liquid",
        "gflops",
        "kernel_gflops",
        "kernel_pct_of_peak",
        "targets",
    ]);
    let mut points: Vec<(usize, [Option<f64>; 3])> = Vec::new();
    for (i, &case) in cases.iter().enumerate() {
        let items = ((case.items() as f64 * args.scale) as u64).max(1 << 16);
        let items = items / 512 * 512 + 512;
        eprintln!(
            "radio: {} ({}), {items} items",
            case.name(),
            case.describe()
        );
        let mut ours = Vec::new();
        for _ in 0..args.runs {
            ours.push(sluice_rate(case, items)?);
        }
        let ours = Some(median(&ours));
        let kernel = case.kernel_rate(args.kernel_seconds)?;
        let peer_args = |extra: Vec<String>| -> Vec<String> {
            let mut a = extra;
            a.extend([
                "--items".into(),
                items.to_string(),
                "--runs".into(),
                args.runs.to_string(),
            ]);
            a
        };
        let gr = match case.gnuradio_args(&taps_arg) {
            Some(a) if !args.no_gnuradio => {
                let mut cmd = vec![args.gr_script.to_string_lossy().into_owned()];
                cmd.extend(peer_args(a));
                Some(median(&run_peer(&args.python, &cmd)?))
            }
            _ => None,
        };
        let fsdr = match case.futuresdr_args() {
            Some(a) if !args.no_futuresdr => {
                Some(median(&run_peer(&args.futuresdr, &peer_args(a))?))
            }
            _ => None,
        };
        let liq = match (&liquid, case.liquid_args(&taps_arg)) {
            (Some(exe), Some(a)) => Some(median(&run_peer(exe, &peer_args(a))?)),
            _ => None,
        };
        let flops = case.flops_per_item();
        let gflops = |r: Option<f64>| -> String {
            flops
                .zip(r)
                .map_or("-".into(), |(f, r)| format!("{:.1}", f * r / 1e9))
        };
        let share = flops.zip(kernel).map_or("-".into(), |(f, r)| {
            format!("{:.0}", 100.0 * f * r / 1e9 / peak)
        });
        let verdicts: Vec<String> = case
            .targets()
            .iter()
            .map(|&(peer, factor)| {
                let got = match peer {
                    "gnuradio" => ratio(ours, gr),
                    "futuresdr" => ratio(ours, fsdr),
                    _ => ratio(kernel, liq),
                };
                let verdict = match got {
                    Some(g) if g >= factor => "met",
                    Some(_) => "MISSED",
                    None => "not measured",
                };
                format!(">={factor}x {peer}: {verdict}")
            })
            .collect();
        let row = vec![
            case.name(),
            msps(ours),
            msps(kernel),
            msps(gr),
            times(ratio(ours, gr)),
            msps(fsdr),
            times(ratio(ours, fsdr)),
            msps(liq),
            times(ratio(kernel, liq)),
            gflops(ours),
            gflops(kernel),
            share,
            verdicts.join("; "),
        ];
        println!("{}", row.join("  "));
        table.push(row);
        points.push((i, [ratio(ours, gr), ratio(ours, fsdr), ratio(kernel, liq)]));
    }
    print!("\n{}", table.render());
    for case in &cases {
        println!("  {}: {}", case.name(), case.describe());
    }
    table.write_csv(&dir.join("radio.csv"))?;
    table.write_json(&dir.join("radio.json"), "radio")?;
    let series: Vec<plot::Series> = [
        "x GNU Radio (graph)",
        "x FutureSDR (graph)",
        "x liquid-dsp (kernel, 1 thread)",
    ]
    .iter()
    .enumerate()
    .map(|(s, label)| plot::Series {
        label: (*label).into(),
        style: 0,
        group: s,
        points: points
            .iter()
            .filter_map(|(i, r)| r[s].map(|v| (*i as f64, v)))
            .collect(),
    })
    .collect();
    let png = dir.join("radio.png");
    let legend = cases
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{i}={}", c.name()))
        .collect::<Vec<_>>()
        .join(" ");
    plot::lines(
        &png,
        &format!("sluice speed-up per case ({legend})"),
        "case",
        "times faster",
        &series,
    )?;
    println!(
        "wrote {}/radio.csv, radio.json and radio.png",
        dir.display()
    );
    Ok(())
}
