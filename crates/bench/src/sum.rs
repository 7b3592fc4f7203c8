//! `sluice bench sum`: N constant sources → `Sum` of N inputs → checking sink, against the same
//! graph and kernel with one input (a copy through the same loop), in the same run.
//!
//! Each variant moves the same number of input items in total (`--items`, split evenly over
//! its inputs). The table gives medians of input items/s (all inputs together) and output
//! items/s, and the N-input sum's input throughput as a share of the 1-input one: holding
//! windows of N inputs at once and summing them in place should cost nothing per input item
//! (the target is at least 90 %).

use super::plot::{lines, Series};
use super::report::{machine_description, median, Table};
use anyhow::Context;
use clap::Args;
use sluice_blocks::blocks::Sum;
use sluice_runtime::{
    Graph, InPort, Node, NodeError, OutPort, Ports, RunOptions, Scheduler, Work, WorkIo,
};
use std::path::PathBuf;

/// Arguments of `sluice bench sum`.
#[derive(Args, Debug)]
pub struct BenchSumArgs {
    /// Input items per run, all inputs together (each input gets its share).
    #[arg(long, default_value_t = 200_000_000)]
    pub items: u64,
    /// Numbers of inputs to measure against the 1-input sum, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "4")]
    pub inputs: Vec<usize>,
    /// Runs per variant (interleaved); the table shows medians.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Queue size in bytes per edge (default: the graph's default, 256 KiB).
    #[arg(long)]
    pub queue_bytes: Option<usize>,
    /// Directory for the CSV, JSON and PNG results.
    #[arg(long, default_value = "target/bench/sum")]
    pub out: PathBuf,
}

/// Writes `value` into `total` items, then ends: a source that costs one fill per item.
struct ConstSource {
    ports: Ports,
    out: OutPort<f32>,
    value: f32,
    left: u64,
}

impl ConstSource {
    fn new(value: f32, total: u64) -> Self {
        let mut ports = Ports::new();
        let out = ports.add_output("out");
        ConstSource {
            ports,
            out,
            value,
            left: total,
        }
    }
}

impl Node for ConstSource {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.left == 0 {
            return Ok(Work::Done);
        }
        let out = io.outputs.port(self.out);
        let Some(space) = out.reserve(1)? else {
            return Ok(self.out.need(1));
        };
        let n = space
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        space[..n].fill(self.value);
        out.commit(n);
        self.left -= n as u64;
        Ok(Work::Progress)
    }
}

/// Checks that every item equals `expect` (exact: small integers in f32) and counts them.
struct CheckSink {
    ports: Ports,
    input: InPort<f32>,
    expect: f32,
}

impl CheckSink {
    fn new(expect: f32) -> Self {
        let mut ports = Ports::new();
        let input = ports.add_input("in");
        CheckSink {
            ports,
            input,
            expect,
        }
    }
}

impl Node for CheckSink {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.port(self.input);
        let Some(x) = input.window(1)? else {
            return Ok(self.input.need(1));
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let expect = self.expect.to_bits();
        let diff = x.iter().fold(0u32, |d, v| d | (v.to_bits() ^ expect));
        if diff != 0 {
            let at = input.items_read();
            return Err(NodeError::msg(format!(
                "an item at or after {at} is not the expected sum {}",
                self.expect
            )));
        }
        let n = x.len();
        input.consume(n);
        Ok(Work::Progress)
    }
}

/// One run with `inputs` inputs; returns (input items/s, output items/s).
fn run_once(args: &BenchSumArgs, inputs: usize) -> anyhow::Result<(f64, f64)> {
    let per_input = args.items / inputs as u64;
    let mut g = Graph::new();
    if let Some(bytes) = args.queue_bytes {
        g.set_default_queue_bytes(bytes);
    }
    let sum = g.add("sum", Sum::<f32>::new(inputs)?)?;
    for k in 0..inputs {
        let src = g.add(
            &format!("src{k}"),
            ConstSource::new((k + 1) as f32, per_input),
        )?;
        g.connect(src, "out", sum, &format!("in{k}"))?;
    }
    let expect = (inputs * (inputs + 1) / 2) as f32;
    let sink = g.add("sink", CheckSink::new(expect))?;
    g.connect(sum, "out", sink, "in")?;
    let report = g.run(&RunOptions {
        scheduler: Scheduler::Auto,
        ..RunOptions::default()
    })?;
    let got = report.node("sink").map_or(0, |s| s.items_in);
    anyhow::ensure!(
        got == per_input,
        "the sink received {got} items, not {per_input}"
    );
    let secs = report.wall.as_secs_f64();
    Ok((
        (per_input * inputs as u64) as f64 / secs,
        per_input as f64 / secs,
    ))
}

/// Runs `sluice bench sum`.
pub fn run(args: BenchSumArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    anyhow::ensure!(
        args.inputs.iter().all(|&n| n >= 1),
        "--inputs must be at least 1"
    );
    let mut counts = vec![1];
    counts.extend(args.inputs.iter().copied().filter(|&n| n != 1));
    let biggest = counts.iter().copied().max().unwrap_or(1) as u64;
    anyhow::ensure!(args.items >= biggest, "--items must be at least {biggest}");
    println!("machine: {}", machine_description());
    println!(
        "sum: N constant f32 sources -> Sum of N inputs (windows of all held at once, summed in \
         place) -> checking sink; {} input items per run in all, {} runs per variant, \
         interleaved; default scheduler",
        args.items, args.runs
    );
    // Runs are interleaved so that background load falls on every variant alike.
    let mut rates: Vec<Vec<(f64, f64)>> = vec![Vec::new(); counts.len()];
    for run in 0..args.runs {
        eprintln!("run {}/{}…", run + 1, args.runs);
        for (&n, out) in counts.iter().zip(rates.iter_mut()) {
            out.push(run_once(&args, n).with_context(|| format!("sum of {n} inputs"))?);
        }
    }
    let medians: Vec<(f64, f64)> = rates
        .iter()
        .map(|r| {
            let input: Vec<f64> = r.iter().map(|x| x.0).collect();
            let output: Vec<f64> = r.iter().map(|x| x.1).collect();
            (median(&input), median(&output))
        })
        .collect();
    let base = medians[0].0;
    let mut table = Table::new(&[
        "inputs",
        "variant",
        "input items/s",
        "output items/s",
        "min input items/s",
        "max input items/s",
        "vs 1 input (input items/s)",
    ]);
    for ((&n, r), &(input, output)) in counts.iter().zip(&rates).zip(&medians) {
        let min = r.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
        let max = r.iter().map(|x| x.0).fold(0.0, f64::max);
        let variant = if n == 1 {
            "1-input sum (copy through the same loop)".to_string()
        } else {
            format!("{n}-input sum")
        };
        table.push(vec![
            n.to_string(),
            variant,
            format!("{input:.4e}"),
            format!("{output:.4e}"),
            format!("{min:.4e}"),
            format!("{max:.4e}"),
            format!("{:.1}%", 100.0 * input / base),
        ]);
    }
    print!("{}", table.render());
    for (&n, &(input, _)) in counts.iter().zip(&medians).skip(1) {
        let ratio = input / base;
        println!(
            "{n}-input sum: {:.1}% of the 1-input throughput in input items/s (target >= 90%: {})",
            100.0 * ratio,
            if ratio >= 0.9 { "met" } else { "NOT met" }
        );
    }
    crate::report::results_dir(&args.out)?;
    table.write_csv(&args.out.join("sum.csv"))?;
    table.write_json(&args.out.join("sum.json"), "sum")?;
    let points = |pick: fn(&(f64, f64)) -> f64| -> Vec<(f64, f64)> {
        counts
            .iter()
            .zip(&medians)
            .map(|(&n, m)| (n as f64, pick(m) / 1e6))
            .collect()
    };
    let series = [
        Series {
            label: "input items/s".into(),
            style: 0,
            group: 0,
            points: points(|m| m.0),
        },
        Series {
            label: "output items/s".into(),
            style: 1,
            group: 1,
            points: points(|m| m.1),
        },
    ];
    let with_text = lines(
        &args.out.join("sum.png"),
        "N-input sum throughput",
        "inputs",
        "million items/s",
        &series,
    )?;
    println!(
        "wrote sum.csv, sum.json and sum.png in {}{}",
        args.out.display(),
        if with_text {
            ""
        } else {
            " (no font found: plot without text)"
        }
    );
    Ok(())
}
