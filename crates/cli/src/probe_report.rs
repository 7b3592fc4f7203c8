//! What `sluice probe` prints and plots of a run, and `sluice probe table`, which compares runs.

use crate::probe_cmd::OriginOpts;
use anyhow::Context;
use clap::Args;
use sluice_bench::plot::{lines, Series};
use sluice_bench::report::{machine_description, Table};
use sluice_net::probe::{self, rate_words, OriginRun, ProbeRecord, SummaryRow};
use std::path::PathBuf;

/// Arguments of `sluice probe table`.
#[derive(Args, Debug)]
pub struct TableArgs {
    /// JSON summaries written by `origin` or `loop`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Also write the table as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

/// Prints a run's summary and writes its CSV (every packet), JSON (the summary) and PNG.
pub(crate) fn report(
    o: &OriginOpts,
    run: &OriginRun,
    origin_cpu: f64,
    reflector_cpu: &[f64],
) -> anyhow::Result<()> {
    let s = probe::summarize(run)?;
    let n = run.samples.len() as f64;
    let label = o
        .label
        .clone()
        .unwrap_or_else(|| probe::default_label(o.hops, o.via.name(), o.rate.0));
    let record = ProbeRecord {
        run,
        summary: s,
        label: label.clone(),
        hops: o.hops,
        via: o.via.name().to_string(),
        size: o.size,
        count: o.count,
        warmup: o.warmup,
        rate_bps: o.rate.0,
        crc: o.crc,
        machine: machine_description(),
        origin_cpu_s: origin_cpu,
        reflector_cpu_s: reflector_cpu.to_vec(),
    };
    let achieved = record.achieved_bps();
    println!("# {}", record.machine);
    println!(
        "probe: {} packets (after {} warm-up packets) of {} bytes at {} through {} {}{} ({}; {:.1} Mbit/s achieved, {:.2} s): every packet came back, in order and unaltered",
        run.samples.len(),
        o.warmup,
        o.size,
        rate_words(o.rate.0),
        o.hops,
        o.via.name(),
        if o.hops == 1 { "" } else { "s" },
        label,
        achieved / 1e6,
        run.secs
    );
    println!(
        "latency µs: mean {:.1}  jitter (σ) {:.1}  min {:.1}  p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
        s.mean, s.std, s.min, s.p50, s.p99, s.p999, s.max
    );
    let per = |cpu: f64| cpu / n * 1e6;
    let refl: Vec<String> = reflector_cpu
        .iter()
        .map(|c| format!("{c:.3} s ({:.2} µs/packet)", per(*c)))
        .collect();
    println!(
        "frames back {} ({:.2} packets per frame, {} reads); CPU: origin {origin_cpu:.3} s ({:.2} µs/packet){}{}",
        run.frames_back,
        n / run.frames_back.max(1) as f64,
        run.reads,
        per(origin_cpu),
        if refl.is_empty() {
            String::new()
        } else {
            format!(", {}s ", o.via.name())
        },
        refl.join(", ")
    );
    let (csv_path, json_path) = record.write(&o.out, &o.name)?;
    let png = o.out.join(&o.name).with_extension("png");
    lines(
        &png,
        &format!("Latency per packet: {label}"),
        "packet",
        "latency (µs)",
        &[Series {
            label: format!(
                "mean {:.0} µs, jitter {:.0} µs, p99 {:.0} µs",
                s.mean, s.std, s.p99
            ),
            style: 2,
            group: 0,
            points: run
                .samples
                .iter()
                .map(|x| (x.seq as f64, x.latency_us()))
                .collect(),
        }],
    )?;
    println!(
        "wrote {}, {} and {}",
        csv_path.display(),
        json_path.display(),
        png.display()
    );
    Ok(())
}

/// Runs `sluice probe table`.
pub(crate) fn table(a: TableArgs) -> anyhow::Result<()> {
    let rows: Vec<SummaryRow> = a
        .files
        .iter()
        .map(|f| probe::read_summary(f))
        .collect::<Result<_, _>>()?;
    let mut t = Table::new(&[
        "run",
        "hops",
        "via",
        "rate",
        "packets",
        "mean µs",
        "jitter µs",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
    ]);
    for r in &rows {
        t.push(vec![
            r.label.clone(),
            r.hops.to_string(),
            r.via.clone(),
            rate_words(r.rate),
            r.s.packets.to_string(),
            format!("{:.1}", r.s.mean),
            format!("{:.1}", r.s.std),
            format!("{:.1}", r.s.p50),
            format!("{:.1}", r.s.p99),
            format!("{:.1}", r.s.p999),
            format!("{:.1}", r.s.max),
        ]);
    }
    print!("{}", t.render());
    let mut added = Table::new(&[
        "hop added",
        "rate",
        "mean µs",
        "jitter µs",
        "p50 µs",
        "p99 µs",
    ]);
    for hop in probe::hops_added(&rows) {
        let (f, more, d) = (hop.fewer, hop.more, hop.added);
        added.push(vec![
            format!("{} -> {} {}s", f.hops, more.hops, more.via),
            rate_words(more.rate),
            format!("{:+.1}", d.mean),
            format!("{:.1}", d.jitter),
            format!("{:+.1}", more.s.p50 - f.s.p50),
            format!("{:+.1}", d.p99),
        ]);
    }
    if !added.rows.is_empty() {
        println!("\nadded per hop (the seed's arithmetic: difference of means, jitter sqrt(σ² − σ₀²); differences of p50s and p99s):");
        print!("{}", added.render());
    }
    if let Some(csv) = a.csv {
        let mut all = t.to_csv();
        if !added.rows.is_empty() {
            all.push('\n');
            all.push_str(&added.to_csv());
        }
        std::fs::write(&csv, all).with_context(|| format!("writing {}", csv.display()))?;
    }
    Ok(())
}
