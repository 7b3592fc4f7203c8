//! `sluice bench amps`: the whole AMPS band (333 FM voice channels, 20 M samples/s) through
//! `examples/amps_receiver.toml` to 333 WAV files, from a band pre-generated to a file (read
//! once beforehand so it sits in the page cache): speed against real time, and the CPU each
//! stage takes, so the next bottleneck is visible.

use crate::report::{machine_description, median, results_dir, Table};
use anyhow::Context;
use sluice_amps::{self as amps, BandConfig};
use sluice_graph::Override;
use sluice_runtime::RunOptions;
use std::io::Read;
use std::path::PathBuf;

/// The receiver graph, as the README runs it.
const RECEIVER: &str = include_str!("../../../examples/amps_receiver.toml");

/// Arguments of `sluice bench amps`.
#[derive(clap::Args, Debug)]
pub struct BenchAmpsArgs {
    /// Seconds of band (20 M samples, 160 MB, per second).
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// The band recording (generated there, all 333 channels at 25 dB C/N, when missing or
    /// of another length).
    #[arg(long, default_value = "target/bench/amps/amps_band")]
    band: PathBuf,
    /// Runs; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Where the table (CSV, JSON) and the WAV files go.
    #[arg(long, default_value = "target/bench/amps")]
    out: PathBuf,
}

/// Runs the benchmark.
pub fn run(args: BenchAmpsArgs) -> anyhow::Result<()> {
    let out = results_dir(&args.out)?;
    let samples = (args.seconds * amps::BAND_RATE).round() as u64;
    let (_, data) = sluice_formats::sigmf::paths(&args.band);
    if std::fs::metadata(&data).map(|m| m.len()).ok() != Some(samples * 8) {
        println!(
            "# generating {} s of band into {}",
            args.seconds,
            data.display()
        );
        if let Some(dir) = data.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {} for the band", dir.display()))?;
        }
        amps::write_band(&args.band, BandConfig::default(), args.seconds)
            .map_err(anyhow::Error::msg)?;
    }
    // Into the page cache.
    let mut file = std::fs::File::open(&data)?;
    let mut buf = vec![0u8; 1 << 22];
    while file.read(&mut buf)? > 0 {}
    let wav_dir = out.join("wav");
    std::fs::create_dir_all(&wav_dir)?;
    let sets = [
        format!("capture.path=\"{}\"", args.band.display()),
        format!("save.path=\"{}\"", wav_dir.join("amps_ch{}.wav").display()),
    ];
    let overrides: Vec<Override> = sets
        .iter()
        .map(|s| s.parse().map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<_>>()?;
    let registry = sluice_registry::standard_registry();
    let mut walls = Vec::new();
    let mut busy: Vec<(String, Vec<f64>)> = Vec::new();
    let mut scheduling = String::new();
    for _ in 0..args.runs.max(1) {
        let loaded =
            sluice_graph::load_with(RECEIVER, "amps_receiver.toml", &registry, &overrides)?;
        let report = loaded.graph.run(&RunOptions::default())?;
        walls.push(report.wall.as_secs_f64());
        scheduling = report.scheduling.clone();
        for n in &report.nodes {
            match busy.iter_mut().find(|(name, _)| *name == n.name) {
                Some((_, v)) => v.push(n.busy.as_secs_f64()),
                None => busy.push((n.name.clone(), vec![n.busy.as_secs_f64()])),
            }
        }
    }
    let wall = median(&walls);
    let realtime = args.seconds / wall;
    let total: f64 = busy.iter().map(|(_, v)| median(v)).sum();
    let mut table = Table::new(&["stage", "cpu_s", "cpu_per_band_s", "share_%"]);
    for (name, v) in &busy {
        let b = median(v);
        table.push(vec![
            name.clone(),
            format!("{b:.3}"),
            format!("{:.3}", b / args.seconds),
            format!("{:.1}", 100.0 * b / total.max(1e-12)),
        ]);
    }
    table.push(vec![
        "all stages".into(),
        format!("{total:.3}"),
        format!("{:.3}", total / args.seconds),
        "100.0".into(),
    ]);
    println!("# {}", machine_description());
    println!(
        "# AMPS: 333 channels, {} s of band (20 M samples/s) to 333 WAV files: median wall {wall:.3} s over {} runs = {realtime:.2}x real time",
        args.seconds,
        walls.len()
    );
    println!("# {scheduling}");
    print!("{}", table.render());
    table.write_csv(&out.join("amps.csv"))?;
    table.write_json(&out.join("amps.json"), "amps")?;
    Ok(())
}
