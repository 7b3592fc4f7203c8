//! `sluice bench chain`: source → head → k stages → sink, where a stage is a copy (complex f32)
//! or Saxpy (y = a·x + b on f32, the chain the qsdr project uses to compare schedulers). The
//! source writes a pattern into every item and the sink checks every item, so every stage reads
//! and writes every byte into its own queue. Each sluice scheduler runs, interleaved with GNU
//! Radio 3.10's same copy chain and FutureSDR's chains, in the same invocation; the table shows
//! medians, ratios and each variant's share of the in-cache memcpy bound measured in the run.

use super::chain_nodes::{CheckSink, Pattern, PatternSource, Saxpy};
use super::plot::{lines, Series};
use super::report::{machine_description, median, Table};
use anyhow::Context;
use clap::{Args, ValueEnum};
use num_complex::Complex32;
use sluice_blocks::blocks::{Copy, Head};
use sluice_runtime::{Flavor, Graph, Node, QueueOptions, RunOptions, Scheduler};
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

/// What each stage of the chain does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kernel {
    /// A copy of complex f32 items (GNU Radio's and FutureSDR's `copy` block).
    Copy,
    /// y = a·x + b on f32 items (qsdr's Saxpy chain).
    Saxpy,
}

/// Arguments of `sluice bench chain`.
#[derive(Args, Debug)]
pub struct BenchChainArgs {
    /// Items pushed through the chain per run.
    #[arg(long, default_value_t = 200_000_000)]
    pub items: u64,
    /// Chain lengths (stages) to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,10,16,32")]
    pub stages: Vec<usize>,
    /// What each stage does.
    #[arg(long, value_enum, default_value_t = Kernel::Copy)]
    pub kernel: Kernel,
    /// Runs per point; the table shows medians.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Queue size in bytes per edge (default: the graph's default, 256 KiB).
    #[arg(long)]
    pub queue_bytes: Option<usize>,
    /// Skip the GNU Radio comparison (copy kernel only).
    #[arg(long)]
    pub no_gnuradio: bool,
    /// Python interpreter that can import GNU Radio (Debian's, by default).
    #[arg(long, default_value = "/usr/bin/python3")]
    pub python: PathBuf,
    /// Skip the FutureSDR comparison.
    #[arg(long)]
    pub no_futuresdr: bool,
    /// The FutureSDR harness binary (built by perf/futuresdr-chain/build.sh).
    #[arg(
        long,
        default_value = "perf/futuresdr-chain/target/release/futuresdr-chain"
    )]
    pub futuresdr: PathBuf,
    /// Directory for the CSV, JSON and PNG results.
    #[arg(long, default_value = "target/bench/chain")]
    pub out: PathBuf,
}

/// One run of the sluice chain: items/s, and how the scheduler ran it (the run report's words).
fn run_chain(
    args: &BenchChainArgs,
    stages: usize,
    flavor: Flavor,
    scheduler: Scheduler,
) -> anyhow::Result<(f64, String)> {
    match args.kernel {
        Kernel::Copy => run_typed::<Complex32>(args, stages, flavor, scheduler, || {
            Box::new(Copy::<Complex32>::new())
        }),
        Kernel::Saxpy => run_typed::<f32>(args, stages, flavor, scheduler, || Box::new(Saxpy)),
    }
}

fn run_typed<T: Pattern>(
    args: &BenchChainArgs,
    stages: usize,
    flavor: Flavor,
    scheduler: Scheduler,
    stage: impl Fn() -> Box<dyn Node>,
) -> anyhow::Result<(f64, String)> {
    let mut g = Graph::new();
    g.set_queue_options(QueueOptions {
        flavor,
        ..QueueOptions::default()
    });
    if let Some(bytes) = args.queue_bytes {
        g.set_default_queue_bytes(bytes);
    }
    let src = g.add("src", PatternSource::<T>::new())?;
    let head = g.add("head", Head::<T>::new(args.items))?;
    g.connect(src, "out", head, "in")?;
    let mut last = head;
    for i in 0..stages {
        let s = g.add_boxed(&format!("stage{i}"), stage())?;
        g.connect(last, "out", s, "in")?;
        last = s;
    }
    let sink = g.add(
        "sink",
        CheckSink::<T>::new(stages, args.kernel == Kernel::Saxpy),
    )?;
    g.connect(last, "out", sink, "in")?;
    let report = g.run(&RunOptions {
        scheduler,
        ..RunOptions::default()
    })?;
    let got = report.node("sink").map_or(0, |s| s.items_in);
    anyhow::ensure!(
        got == args.items,
        "the sink received {got} items, not {}",
        args.items
    );
    Ok((
        args.items as f64 / report.wall.as_secs_f64(),
        report.scheduling,
    ))
}

/// Runs a peer's harness once and returns its items/s, or why it could not run.
fn run_peer(program: &PathBuf, peer_args: &[String]) -> Result<Vec<f64>, String> {
    let output = Command::new(program)
        .args(peer_args)
        .output()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_string());
    }
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("unreadable output from {}: {e}", program.display()))?;
    doc["items_per_s"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
        .ok_or_else(|| "no items_per_s in the peer's output".to_string())
}

/// One core's in-cache memcpy bandwidth in bytes/s: the median of 7 trials, each copying a
/// 64 KiB block back and forth 4096 times (it stays in L1/L2, where the chain's chunks live).
fn in_cache_memcpy() -> f64 {
    let mut a = vec![1u8; 64 << 10];
    let mut b = vec![0u8; 64 << 10];
    let trials: Vec<f64> = (0..7)
        .map(|_| {
            let t0 = Instant::now();
            for _ in 0..2048 {
                b.copy_from_slice(std::hint::black_box(&a));
                a.copy_from_slice(std::hint::black_box(&b));
            }
            (4096 * a.len()) as f64 / t0.elapsed().as_secs_f64()
        })
        .collect();
    median(&trials)
}

/// Runs `sluice bench chain`.
pub fn run(args: BenchChainArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    anyhow::ensure!(args.items > 0, "--items must be at least 1");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let item_bytes = match args.kernel {
        Kernel::Copy => std::mem::size_of::<Complex32>(),
        Kernel::Saxpy => std::mem::size_of::<f32>(),
    } as f64;
    let memcpy = in_cache_memcpy();
    println!("machine: {}", machine_description());
    println!(
        "chain: pattern source -> head({}) -> k x {:?} -> checking sink, {} runs per point",
        args.items, args.kernel, args.runs
    );
    println!(
        "in-cache memcpy: {:.1} GB/s on one core; bound for k stages = {cores} cores x memcpy / ({item_bytes} B x (k + 2)) items/s \
         (each stage copies every item once; the head once; the source's write and the sink's read count as one more)",
        memcpy / 1e9
    );
    let gnuradio = !args.no_gnuradio && args.kernel == Kernel::Copy;
    let futuresdr = !args.no_futuresdr;
    if futuresdr && !args.futuresdr.exists() {
        anyhow::bail!(
            "the FutureSDR harness {} is missing: build it with perf/futuresdr-chain/build.sh \
             (needs the nightly toolchain), or pass --no-futuresdr",
            args.futuresdr.display()
        );
    }
    let variants = [
        ("sluice default (auto)", Flavor::Mirrored, Scheduler::Auto),
        ("sluice 1 thread", Flavor::Mirrored, Scheduler::Pooled(1)),
        (
            if cores == 2 {
                "sluice 2 threads"
            } else {
                "sluice 1 thread per core"
            },
            Flavor::Mirrored,
            Scheduler::Pooled(cores),
        ),
        (
            "sluice thread per node",
            Flavor::Mirrored,
            Scheduler::ThreadPerNode,
        ),
        (
            "sluice copying queues, auto",
            Flavor::Copying,
            Scheduler::Auto,
        ),
    ];
    let mut table = Table::new(&[
        "stages",
        "variant",
        "items/s",
        "GB/s",
        "min items/s",
        "max items/s",
        "vs GNU Radio",
        "vs FutureSDR",
        "of memcpy bound",
    ]);
    let mut plotted: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for &stages in &args.stages {
        eprintln!(
            "measuring {stages} stage(s): {} runs of each variant…",
            args.runs
        );
        let bound = cores as f64 * memcpy / (item_bytes * (stages + 2) as f64);
        // Runs are interleaved (every variant, then the peers, repeat) so that background load
        // on a shared machine falls on every variant alike.
        let mut rates: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        let mut gr: Option<Vec<f64>> = gnuradio.then(Vec::new);
        let mut fs: Option<Vec<f64>> = futuresdr.then(Vec::new);
        for _ in 0..args.runs {
            for ((name, flavor, scheduler), out) in variants.iter().zip(rates.iter_mut()) {
                let (rate, scheduling) = run_chain(&args, stages, *flavor, *scheduler)
                    .with_context(|| format!("{name}, {stages} stages"))?;
                // The default's choice explains its figure (a split kept, taken back, or
                // remembered from an earlier run).
                if *scheduler == Scheduler::Auto {
                    eprintln!("  {name}: {:.3e} items/s; {scheduling}", rate);
                }
                out.push(rate);
            }
            if let Some(r) = gr.as_mut() {
                let script = PathBuf::from("scripts/gr_chain.py");
                let peer_args = [
                    script.display().to_string(),
                    "--items".into(),
                    args.items.to_string(),
                    "--stages".into(),
                    stages.to_string(),
                    "--runs".into(),
                    "1".into(),
                ];
                r.extend(
                    run_peer(&args.python, &peer_args)
                        .map_err(|why| anyhow::anyhow!("GNU Radio's chain failed: {why} (run from the repository root; install GNU Radio with scripts/setup.sh, or pass --no-gnuradio)"))?,
                );
            }
            if let Some(r) = fs.as_mut() {
                let kernel = format!("{:?}", args.kernel).to_lowercase();
                let peer_args = [
                    "--kernel".into(),
                    kernel,
                    "--stages".into(),
                    stages.to_string(),
                    "--items".into(),
                    args.items.to_string(),
                    "--runs".into(),
                    "1".into(),
                ];
                r.extend(
                    run_peer(&args.futuresdr, &peer_args)
                        .map_err(|why| anyhow::anyhow!("FutureSDR's chain failed: {why}"))?,
                );
            }
        }
        let gr_median = gr.as_ref().map(|r| median(r));
        let fs_median = fs.as_ref().map(|r| median(r));
        let mut results: Vec<(String, Vec<f64>)> = variants
            .iter()
            .map(|(name, _, _)| name.to_string())
            .zip(rates)
            .collect();
        if let Some(r) = gr {
            results.push(("GNU Radio 3.10".to_string(), r));
        }
        if let Some(r) = fs {
            results.push(("FutureSDR".to_string(), r));
        }
        let ratio = |med: f64, peer: Option<f64>| {
            peer.map_or("-".to_string(), |p| format!("{:.2}x", med / p))
        };
        for (name, rates) in results {
            let med = median(&rates);
            match plotted.iter_mut().find(|(n, _)| *n == name) {
                Some((_, points)) => points.push((stages as f64, med / 1e6)),
                None => plotted.push((name.clone(), vec![(stages as f64, med / 1e6)])),
            }
            let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
            let max = rates.iter().copied().fold(0.0, f64::max);
            table.push(vec![
                stages.to_string(),
                name,
                format!("{med:.4e}"),
                format!("{:.2}", med * item_bytes / 1e9),
                format!("{min:.4e}"),
                format!("{max:.4e}"),
                ratio(med, gr_median),
                ratio(med, fs_median),
                format!("{:.0}%", 100.0 * med / bound),
            ]);
        }
    }
    print!("{}", table.render());
    crate::report::results_dir(&args.out)?;
    let stem = format!("chain-{:?}", args.kernel).to_lowercase();
    table.write_csv(&args.out.join(format!("{stem}.csv")))?;
    table.write_json(&args.out.join(format!("{stem}.json")), "chain")?;
    let series: Vec<Series> = plotted
        .into_iter()
        .enumerate()
        .map(|(i, (label, points))| Series {
            label,
            style: usize::from(i % 2 == 1),
            group: i,
            points,
        })
        .collect();
    let png = args.out.join(format!("{stem}.png"));
    let with_text = lines(
        &png,
        &format!("{:?} chain throughput", args.kernel),
        "stages",
        "million items/s",
        &series,
    )?;
    println!(
        "wrote {stem}.csv, {stem}.json and {stem}.png in {}{}",
        args.out.display(),
        if with_text {
            ""
        } else {
            " (no font found: plot without text)"
        }
    );
    Ok(())
}
