//! `sluice bench chain`: null source → head → k × copy → null sink with complex f32 items, on
//! mirrored and copying queues, with one thread per node and with a pool of one thread per
//! core, against GNU Radio 3.10's same chain in the same invocation.

use super::plot::{lines, Series};
use super::report::{machine_description, median, Table};
use anyhow::Context;
use clap::Args;
use num_complex::Complex32;
use sluice_dsp::blocks::{Copy, Head, NullSink, NullSource};
use sluice_runtime::{Flavor, Graph, QueueOptions, RunOptions, DEFAULT_QUEUE_BYTES};
use std::path::PathBuf;
use std::process::Command;

/// Arguments of `sluice bench chain`.
#[derive(Args, Debug)]
pub struct BenchChainArgs {
    /// Items pushed through the chain per run.
    #[arg(long, default_value_t = 200_000_000)]
    pub items: u64,
    /// Chain lengths (copy blocks) to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,10")]
    pub stages: Vec<usize>,
    /// Runs per point; the table shows medians.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Queue size in bytes per edge.
    #[arg(long, default_value_t = DEFAULT_QUEUE_BYTES)]
    pub queue_bytes: usize,
    /// Skip the GNU Radio comparison.
    #[arg(long)]
    pub no_gnuradio: bool,
    /// Python interpreter that can import GNU Radio (Debian's, by default).
    #[arg(long, default_value = "/usr/bin/python3")]
    pub python: PathBuf,
    /// Directory for the CSV and JSON results.
    #[arg(long, default_value = "target/bench/chain")]
    pub out: PathBuf,
}

/// One run of the sluice chain (`threads`: None for one thread per node); returns items/s.
fn run_chain(
    items: u64,
    stages: usize,
    flavor: Flavor,
    threads: Option<usize>,
    queue_bytes: usize,
) -> anyhow::Result<f64> {
    let mut g = Graph::new();
    g.set_queue_options(QueueOptions {
        flavor,
        ..QueueOptions::default()
    });
    g.set_default_queue_bytes(queue_bytes);
    let src = g.add("src", NullSource::<Complex32>::new())?;
    let head = g.add("head", Head::<Complex32>::new(items))?;
    g.connect(src, "out", head, "in")?;
    let mut last = head;
    for i in 0..stages {
        let copy = g.add(&format!("copy{i}"), Copy::<Complex32>::new())?;
        g.connect(last, "out", copy, "in")?;
        last = copy;
    }
    let sink = g.add("sink", NullSink::<Complex32>::new())?;
    g.connect(last, "out", sink, "in")?;
    let report = g.run(&RunOptions {
        threads,
        ..RunOptions::default()
    })?;
    let got = report.node("sink").map_or(0, |s| s.items_in);
    anyhow::ensure!(got == items, "the sink received {got} items, not {items}");
    Ok(items as f64 / report.wall.as_secs_f64())
}

/// GNU Radio's items/s for one run, or the reason it could not run.
fn run_gnuradio(args: &BenchChainArgs, stages: usize) -> Result<Vec<f64>, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/gr_chain.py");
    let output = Command::new(&args.python)
        .arg(&script)
        .args(["--items", &args.items.to_string()])
        .args(["--stages", &stages.to_string()])
        .args(["--runs", "1"])
        .output()
        .map_err(|e| format!("cannot start {}: {e}", args.python.display()))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_string());
    }
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("unreadable output from {}: {e}", script.display()))?;
    doc["items_per_s"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
        .ok_or_else(|| "no items_per_s in the script's output".to_string())
}

/// Runs `sluice bench chain`.
pub fn run(args: BenchChainArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    anyhow::ensure!(args.items > 0, "--items must be at least 1");
    println!("machine: {}", machine_description());
    println!(
        "chain: null_source -> head({}) -> k x copy -> null_sink, complex f32, {} runs per point, queues of {} bytes",
        args.items, args.runs, args.queue_bytes
    );
    let mut table = Table::new(&[
        "stages",
        "variant",
        "items/s",
        "GB/s",
        "min items/s",
        "max items/s",
        "vs GNU Radio",
    ]);
    let item_bytes = std::mem::size_of::<Complex32>() as f64;
    // Median items/s per variant name, by stage count, for the plot.
    let mut plotted: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for &stages in &args.stages {
        eprintln!(
            "measuring {stages} stage(s): {} runs of each variant…",
            args.runs
        );
        // Runs are interleaved (every sluice variant, then GNU Radio, repeat) so that
        // background load on a shared machine falls on every variant alike.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let variants = [
            (
                "sluice mirrored, thread per node".to_string(),
                Flavor::Mirrored,
                None,
            ),
            (
                "sluice copying, thread per node".to_string(),
                Flavor::Copying,
                None,
            ),
            (
                format!("sluice mirrored, {cores} threads"),
                Flavor::Mirrored,
                Some(cores),
            ),
            (
                format!("sluice copying, {cores} threads"),
                Flavor::Copying,
                Some(cores),
            ),
        ];
        let mut rates: Vec<Vec<f64>> = vec![Vec::with_capacity(args.runs); variants.len()];
        let mut gr: Option<Vec<f64>> = (!args.no_gnuradio).then(Vec::new);
        for _ in 0..args.runs {
            for ((name, flavor, threads), out) in variants.iter().zip(rates.iter_mut()) {
                out.push(
                    run_chain(args.items, stages, *flavor, *threads, args.queue_bytes)
                        .with_context(|| format!("{name}, {stages} stages"))?,
                );
            }
            if let Some(gr_rates) = gr.as_mut() {
                match run_gnuradio(&args, stages) {
                    Ok(r) => gr_rates.extend(r),
                    Err(why) => {
                        eprintln!("GNU Radio comparison skipped: {why}");
                        gr = None;
                    }
                }
            }
        }
        let gr_median = gr.as_ref().map(|r| median(r));
        let mut results: Vec<(String, Vec<f64>)> = variants
            .iter()
            .map(|(name, _, _)| name.clone())
            .zip(rates)
            .collect();
        if let Some(gr_rates) = gr {
            results.push(("GNU Radio 3.10".to_string(), gr_rates));
        }
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
                gr_median.map_or("-".to_string(), |g| format!("{:.2}x", med / g)),
            ]);
        }
    }
    print!("{}", table.render());
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    table.write_csv(&args.out.join("chain.csv"))?;
    table.write_json(&args.out.join("chain.json"), "chain")?;
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
    let png = args.out.join("chain.png");
    let with_text = lines(
        &png,
        "Copy chain throughput",
        "copy stages",
        "million items/s",
        &series,
    )?;
    println!(
        "wrote {}, chain.json and chain.png{}",
        args.out.join("chain.csv").display(),
        if with_text {
            ""
        } else {
            " (no font found: plot without text)"
        }
    );
    Ok(())
}
