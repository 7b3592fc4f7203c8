//! `sluice bench messages`: PDUs per second and latency of a PDU chain, sluice against GNU Radio
//! 3.10's same chain in the same run, for each PDU size:
//!
//! ```text
//! c32 source -> stream_to_tagged_stream(size) -> tagged_stream_to_pdu -> add_system_time
//!   -> 3 x pdu_set -> time_delta -> message_debug (counts)
//! ```
//!
//! sluice's source is a `VectorSource` of one packet repeated `--pdus` times, so the stream ends
//! after exactly that many packets and the graph drains; the rate is `--pdus` over the run's wall
//! time and the sink's count must equal `--pdus`. The latencies are `time_delta`'s delays (wall
//! clock since `add_system_time` stamped the PDU), p50 and p99 over every PDU. GNU Radio's side is
//! `scripts/gr_messages.py` (a repeating `vector_source_c`, stopped once `message_debug` stored
//! `--pdus` PDUs). Both measure the latency under full load: a PDU waits in every inbox in front
//! of it, so the figure is mostly queueing (sluice's inboxes hold 64 PDUs; GNU Radio's are
//! unbounded).

use crate::plot::{lines, Series};
use crate::report::{machine_description, median, results_dir, Table};
use anyhow::{bail, Context};
use num_complex::Complex32;
use sluice_blocks::blocks::messages::{
    AddSystemTime, MessageDebug, PduSet, StreamToTaggedStream, TaggedStreamToPdu, TimeDelta,
    PACKET_LEN,
};
use sluice_blocks::blocks::VectorSource;
use sluice_runtime::{Graph, RunOptions, Scheduler, TagValue};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Arguments of `sluice bench messages`.
#[derive(clap::Args, Debug)]
pub struct BenchMessagesArgs {
    /// PDUs per run (each side sends and counts exactly this many). GNU Radio's message_debug
    /// keeps every PDU: a run holds pdus x size x 8 bytes there.
    #[arg(long, default_value_t = 50_000)]
    pub pdus: u64,
    /// Runs per size and side; the table shows medians.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// PDU sizes in c32 samples, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "64,4096")]
    pub sizes: Vec<usize>,
    /// Run sluice's nodes on this many threads only (default: measure sluice's default
    /// scheduler and one thread, both).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Run each of sluice's nodes on a thread of its own only.
    #[arg(long, conflicts_with = "threads")]
    pub thread_per_node: bool,
    /// Skip GNU Radio (sluice's figures alone).
    #[arg(long)]
    pub no_gnuradio: bool,
    /// Python interpreter that can import GNU Radio (Debian's, by default).
    #[arg(long, default_value = "/usr/bin/python3")]
    pub python: PathBuf,
    /// The GNU Radio script (run from the repository root, or give its path).
    #[arg(long, default_value = "scripts/gr_messages.py")]
    pub gr_script: PathBuf,
    /// Directory for the CSV, JSON and PNG results.
    #[arg(long, default_value = "target/bench/messages")]
    pub out: PathBuf,
}

/// One run of a PDU chain.
#[derive(Debug, Clone)]
pub struct ChainRun {
    /// PDUs the sink counted.
    pub pdus: u64,
    /// PDUs per second.
    pub rate: f64,
    /// Median latency, milliseconds (time_delta's).
    pub p50_ms: f64,
    /// 99th percentile latency, milliseconds.
    pub p99_ms: f64,
    /// How sluice scheduled the nodes, in words (empty for GNU Radio).
    pub scheduling: String,
}

/// The `q`-quantile (0..=1) of sorted values, nearest rank; NaN when empty.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let k = (q * (sorted.len() - 1) as f64).round() as usize;
    sorted[k.min(sorted.len() - 1)]
}

/// Runs sluice's PDU chain once: `pdus` packets of `size` c32 samples through
/// `stream_to_tagged_stream → tagged_stream_to_pdu → add_system_time → 3 × pdu_set →
/// time_delta → message_debug`. Returns what the sink counted (not what was asked for), the
/// rate, and time_delta's latency percentiles.
pub fn run_sluice(size: usize, pdus: u64, scheduler: Scheduler) -> anyhow::Result<ChainRun> {
    anyhow::ensure!(size > 0, "a PDU size must be at least 1 sample");
    let packet: Vec<Complex32> = (0..size)
        .map(|i| Complex32::new(i as f32, -(i as f32)))
        .collect();
    let mut g = Graph::new();
    let src = g.add("src", VectorSource::new(packet).repeat(pdus))?;
    let tag = g.add(
        "stream_to_tagged_stream",
        StreamToTaggedStream::<Complex32>::new(size as u64, PACKET_LEN)?,
    )?;
    let to_pdu = g.add(
        "tagged_stream_to_pdu",
        TaggedStreamToPdu::<Complex32>::with_default_key(size),
    )?;
    let stamp = g.add("add_system_time", AddSystemTime::new("system_time"))?;
    g.connect(src, "out", tag, "in")?;
    g.connect(tag, "out", to_pdu, "in")?;
    g.connect(to_pdu, "pdus", stamp, "pdus")?;
    let mut last = stamp;
    for i in 0..3 {
        let set = g.add(
            &format!("pdu_set{i}"),
            PduSet::new(&format!("k{i}"), TagValue::I64(i)),
        )?;
        g.connect(last, "pdus", set, "pdus")?;
        last = set;
    }
    let (delta, delays) = TimeDelta::new("time_delta_ms", "system_time");
    let delta = g.add("time_delta", delta)?;
    g.connect(last, "pdus", delta, "pdus")?;
    let (debug, log) = MessageDebug::new(false, false);
    let debug = g.add("message_debug", debug)?;
    g.connect(delta, "pdus", debug, "in")?;
    let report = g.run(&RunOptions {
        scheduler,
        ..RunOptions::default()
    })?;
    let mut d: Vec<f64> = std::mem::take(&mut *delays.lock().unwrap_or_else(|e| e.into_inner()));
    d.sort_by(f64::total_cmp);
    Ok(ChainRun {
        pdus: log.count(),
        rate: log.count() as f64 / report.wall.as_secs_f64(),
        p50_ms: percentile(&d, 0.50) * 1e3,
        p99_ms: percentile(&d, 0.99) * 1e3,
        scheduling: report.scheduling,
    })
}

/// Why GNU Radio cannot run here, or None when its `pdu` module imports.
pub fn gnuradio_missing(python: &Path) -> Option<String> {
    match Command::new(python)
        .args(["-c", "from gnuradio import pdu, blocks"])
        .output()
    {
        Err(e) => Some(format!("cannot run {} ({e})", python.display())),
        Ok(out) if !out.status.success() => Some(format!(
            "{} cannot import GNU Radio's pdu module ({})",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
                .trim()
        )),
        Ok(_) => None,
    }
}

/// Runs GNU Radio's chain (`script`, see scripts/gr_messages.py) `runs` times.
pub fn run_gnuradio(
    python: &Path,
    script: &Path,
    size: usize,
    pdus: u64,
    runs: usize,
) -> anyhow::Result<Vec<ChainRun>> {
    let out = Command::new(python)
        .arg(script)
        .args(["--size", &size.to_string(), "--pdus", &pdus.to_string()])
        .args(["--runs", &runs.to_string()])
        .output()
        .with_context(|| format!("cannot start {}", python.display()))?;
    if !out.status.success() {
        bail!(
            "GNU Radio's PDU chain failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    // GNU Radio's logger writes to standard output too (time_delta's statistics at stop): the
    // result is the last line, one JSON document.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rfind(|l| l.starts_with('{')).unwrap_or("");
    let doc: serde_json::Value = serde_json::from_str(line)
        .with_context(|| format!("unreadable output from {}: {stdout}", script.display()))?;
    let list = |key: &str| -> anyhow::Result<Vec<f64>> {
        doc[key]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
            .with_context(|| format!("no {key} in GNU Radio's output"))
    };
    let (rates, p50, p99) = (list("pdus_per_s")?, list("p50_ms")?, list("p99_ms")?);
    anyhow::ensure!(
        rates.len() == runs && p50.len() == runs && p99.len() == runs,
        "GNU Radio's output has {} runs, not {runs}",
        rates.len()
    );
    Ok((0..runs)
        .map(|i| ChainRun {
            pdus,
            rate: rates[i],
            p50_ms: p50[i],
            p99_ms: p99[i],
            scheduling: String::new(),
        })
        .collect())
}

/// The medians of a side's runs: (PDUs/s, p50 ms, p99 ms).
fn medians(runs: &[ChainRun]) -> (f64, f64, f64) {
    let m = |f: fn(&ChainRun) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    (m(|r| r.rate), m(|r| r.p50_ms), m(|r| r.p99_ms))
}

/// Runs `sluice bench messages`.
pub fn run(args: BenchMessagesArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    anyhow::ensure!(args.pdus > 0, "--pdus must be at least 1");
    anyhow::ensure!(
        !args.sizes.is_empty() && args.sizes.iter().all(|&s| s > 0),
        "--sizes must list sizes of at least 1 sample"
    );
    println!("machine: {}", machine_description());
    println!(
        "chain: c32 source -> stream_to_tagged_stream -> tagged_stream_to_pdu -> add_system_time \
         -> 3 x pdu_set -> time_delta -> message_debug; {} PDUs per run, {} runs per side; \
         latency = time_delta's (stamp to delta, under full load)",
        args.pdus, args.runs
    );
    let gnuradio = if args.no_gnuradio {
        println!("GNU Radio: skipped (--no-gnuradio)");
        false
    } else if let Some(why) = gnuradio_missing(&args.python) {
        println!(
            "GNU Radio: NOT MEASURED: {why}; install it with `apt-get install gnuradio` \
             (scripts/setup.sh does), or pass --python. sluice's figures alone follow."
        );
        false
    } else if !args.gr_script.exists() {
        bail!(
            "{} not found: run from the repository root or pass --gr-script",
            args.gr_script.display()
        );
    } else {
        true
    };
    // sluice's default scheduler, and all nodes on one thread (the default scheduler's starting
    // point, before it decides whether to split the chain over two cores); or the one asked for.
    let schedulers: Vec<(String, Scheduler)> = match (args.threads, args.thread_per_node) {
        (Some(n), _) => vec![(format!("{n} threads"), Scheduler::Pooled(n.max(1)))],
        (None, true) => vec![("thread per node".into(), Scheduler::ThreadPerNode)],
        (None, false) => vec![
            ("default (auto)".into(), Scheduler::Auto),
            ("1 thread".into(), Scheduler::Pooled(1)),
        ],
    };
    let mut table = Table::new(&[
        "size",
        "sluice scheduler",
        "sluice PDUs/s",
        "GNU Radio PDUs/s",
        "ratio",
        "sluice p50 ms",
        "sluice p99 ms",
        "GNU Radio p50 ms",
        "GNU Radio p99 ms",
    ]);
    // Plotted: PDUs/s against size, one line per sluice scheduler and one for GNU Radio.
    let mut plotted: Vec<(String, Vec<(f64, f64)>)> = schedulers
        .iter()
        .map(|(name, _)| (format!("sluice {name}"), Vec::new()))
        .collect();
    let mut gr_points = Vec::new();
    for &size in &args.sizes {
        eprintln!("size {size}: {} runs of each side…", args.runs);
        // Interleaved (every sluice variant, GNU Radio, repeat) so that background load falls
        // on every side alike.
        let mut ours: Vec<Vec<ChainRun>> = vec![Vec::new(); schedulers.len()];
        let mut theirs = Vec::new();
        for _ in 0..args.runs {
            for ((name, scheduler), runs) in schedulers.iter().zip(ours.iter_mut()) {
                let run = run_sluice(size, args.pdus, *scheduler)
                    .with_context(|| format!("sluice's chain, size {size}, {name}"))?;
                anyhow::ensure!(
                    run.pdus == args.pdus,
                    "sluice's sink counted {} PDUs, not {}",
                    run.pdus,
                    args.pdus
                );
                eprintln!(
                    "  sluice {name}: {:.0} PDUs/s; {}",
                    run.rate, run.scheduling
                );
                runs.push(run);
            }
            if gnuradio {
                let run = run_gnuradio(&args.python, &args.gr_script, size, args.pdus, 1)?;
                eprintln!("  GNU Radio: {:.0} PDUs/s", run[0].rate);
                theirs.extend(run);
            }
        }
        let peer = (!theirs.is_empty()).then(|| medians(&theirs));
        let cell = |v: Option<f64>, fmt: fn(f64) -> String| v.map_or("-".to_string(), fmt);
        if let Some(p) = peer {
            gr_points.push((size as f64, p.0));
        }
        for (((name, _), runs), (_, points)) in schedulers.iter().zip(&ours).zip(plotted.iter_mut())
        {
            let (rate, p50, p99) = medians(runs);
            points.push((size as f64, rate));
            table.push(vec![
                size.to_string(),
                name.clone(),
                format!("{rate:.0}"),
                cell(peer.map(|p| p.0), |v| format!("{v:.0}")),
                cell(peer.map(|p| rate / p.0), |v| format!("{v:.1}x")),
                format!("{p50:.3}"),
                format!("{p99:.3}"),
                cell(peer.map(|p| p.1), |v| format!("{v:.3}")),
                cell(peer.map(|p| p.2), |v| format!("{v:.3}")),
            ]);
        }
    }
    print!("{}", table.render());
    let dir = results_dir(&args.out)?;
    table.write_csv(&dir.join("messages.csv"))?;
    table.write_json(&dir.join("messages.json"), "messages")?;
    if !gr_points.is_empty() {
        plotted.push(("GNU Radio 3.10".into(), gr_points));
    }
    let series: Vec<Series> = plotted
        .into_iter()
        .enumerate()
        .map(|(i, (label, points))| Series {
            label,
            style: 0,
            group: i,
            points,
        })
        .collect();
    let with_text = lines(
        &dir.join("messages.png"),
        "PDU chain throughput",
        "PDU size (samples)",
        "PDUs/s",
        &series,
    )?;
    println!(
        "wrote messages.csv, messages.json and messages.png in {}{}",
        dir.display(),
        if with_text {
            ""
        } else {
            " (no font found: plot without text)"
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (0..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert!(percentile(&[], 0.5).is_nan());
    }
}
