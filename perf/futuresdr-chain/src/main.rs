//! FutureSDR peer for `sluice bench chain`.
//!
//! Builds a linear chain from FutureSDR's own stock blocks, runs it on the
//! default runtime (`Runtime::new()`, i.e. the default smol scheduler) with the
//! default stream buffers, and prints one JSON document on stdout:
//!
//! ```text
//! {"peer": "FutureSDR", "version": "0.8.0", "kernel": "copy", "stages": K,
//!  "items": N, "items_per_s": [..one float per run..]}
//! ```
//!
//! Kernels:
//! - `copy`:  NullSource<Complex32> -> Head<Complex32>(N) -> K x Copy<Complex32> -> NullSink<Complex32>
//! - `saxpy`: NullSource<f32> -> Head<f32>(N) -> K x Apply(|x| a*x + b) -> NullSink<f32>
//!   with a = 1.0001, b = 0.5.
//!
//! Only `Runtime::run(fg)` is timed; building the flowgraph (and creating the
//! runtime, which is done once and reused for all runs) is not. After every run
//! the sink's received-item count is checked against N.
//!
//! Errors go to stderr and the process exits non-zero. FutureSDR's log output
//! is routed to stderr (level from `FUTURESDR_LOG`, default `warn`).

use std::process::ExitCode;
use std::time::Instant;

use futuresdr::blocks::Apply;
use futuresdr::blocks::Copy;
use futuresdr::blocks::Head;
use futuresdr::blocks::NullSink;
use futuresdr::blocks::NullSource;
use futuresdr::prelude::*;
use futuresdr::runtime::buffer::CpuSample;

const FUTURESDR_VERSION: &str = env!("FUTURESDR_VERSION");

const SAXPY_A: f32 = 1.0001;
const SAXPY_B: f32 = 0.5;

const USAGE: &str = "usage: futuresdr-chain --kernel copy|saxpy --stages K --items N --runs R";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    Copy,
    Saxpy,
}

impl Kernel {
    fn name(self) -> &'static str {
        match self {
            Kernel::Copy => "copy",
            Kernel::Saxpy => "saxpy",
        }
    }
}

struct Args {
    kernel: Kernel,
    stages: usize,
    items: u64,
    runs: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut kernel = None;
    let mut stages = None;
    let mut items = None;
    let mut runs = None;

    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let mut value = |name: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it.next().ok_or_else(|| format!("missing value for {name}")),
            }
        };
        match flag.as_str() {
            "--kernel" => {
                kernel = Some(match value("--kernel")?.as_str() {
                    "copy" => Kernel::Copy,
                    "saxpy" => Kernel::Saxpy,
                    other => return Err(format!("unknown kernel '{other}' (expected copy|saxpy)")),
                })
            }
            "--stages" => stages = Some(parse_num::<usize>("--stages", &value("--stages")?)?),
            "--items" => items = Some(parse_num::<u64>("--items", &value("--items")?)?),
            "--runs" => runs = Some(parse_num::<usize>("--runs", &value("--runs")?)?),
            other => return Err(format!("unknown argument '{other}'")),
        }
    }

    let args = Args {
        kernel: kernel.ok_or("missing --kernel")?,
        stages: stages.ok_or("missing --stages")?,
        items: items.ok_or("missing --items")?,
        runs: runs.ok_or("missing --runs")?,
    };
    if args.items == 0 {
        return Err("--items must be > 0".into());
    }
    if args.runs == 0 {
        return Err("--runs must be > 0".into());
    }
    Ok(args)
}

fn parse_num<T: std::str::FromStr>(name: &str, s: &str) -> Result<T, String> {
    // Allow digit separators such as 20_000_000.
    s.replace('_', "")
        .parse::<T>()
        .map_err(|_| format!("invalid value for {name}: '{s}'"))
}

/// Builds the copy chain; returns the flowgraph and the sink handle.
fn build_copy(stages: usize, items: u64) -> Result<(Flowgraph, BlockRef<NullSink<Complex32>>)> {
    let mut fg = Flowgraph::new();
    let src = fg.add(NullSource::<Complex32>::new())?;
    let head = fg.add(Head::<Complex32>::new(items))?;
    let snk = fg.add(NullSink::<Complex32>::new())?;
    connect!(fg, src > head);

    let copies = (0..stages)
        .map(|_| fg.add(Copy::<Complex32>::new()))
        .collect::<Result<Vec<_>, _>>()?;
    match (copies.first(), copies.last()) {
        (Some(&first), Some(&last)) => {
            connect!(fg, head > first);
            for pair in copies.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                connect!(fg, a > b);
            }
            connect!(fg, last > snk);
        }
        _ => {
            connect!(fg, head > snk);
        }
    }
    Ok((fg, snk))
}

/// Builds the saxpy chain; returns the flowgraph and the sink handle.
fn build_saxpy(stages: usize, items: u64) -> Result<(Flowgraph, BlockRef<NullSink<f32>>)> {
    let mut fg = Flowgraph::new();
    let src = fg.add(NullSource::<f32>::new())?;
    let head = fg.add(Head::<f32>::new(items))?;
    let snk = fg.add(NullSink::<f32>::new())?;
    connect!(fg, src > head);

    let stages = (0..stages)
        .map(|_| fg.add(Apply::new(|x: &f32| -> f32 { SAXPY_A * *x + SAXPY_B })))
        .collect::<Result<Vec<_>, _>>()?;
    match (stages.first(), stages.last()) {
        (Some(&first), Some(&last)) => {
            connect!(fg, head > first);
            for pair in stages.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                connect!(fg, a > b);
            }
            connect!(fg, last > snk);
        }
        _ => {
            connect!(fg, head > snk);
        }
    }
    Ok((fg, snk))
}

/// Runs the flowgraph, returning (seconds, items received by the sink).
fn timed_run<T: CpuSample>(
    rt: &Runtime,
    fg: Flowgraph,
    snk: BlockRef<NullSink<T>>,
) -> Result<(f64, u64)> {
    let t0 = Instant::now();
    let fg = rt.run(fg)?;
    let secs = t0.elapsed().as_secs_f64();
    let received = fg.block(&snk)?.n_received() as u64;
    Ok((secs, received))
}

fn init_logging() {
    use tracing_subscriber::filter::EnvFilter;
    use tracing_subscriber::filter::LevelFilter;
    // FutureSDR's Runtime installs a stdout logger unless a global subscriber
    // already exists; install a stderr one first so stdout stays pure JSON.
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::WARN.into())
        .with_env_var("FUTURESDR_LOG")
        .from_env_lossy();
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
}

fn run(args: &Args) -> Result<Vec<f64>> {
    let rt = Runtime::new();
    let mut rates = Vec::with_capacity(args.runs);
    for run in 0..args.runs {
        let (secs, received) = match args.kernel {
            Kernel::Copy => {
                let (fg, snk) = build_copy(args.stages, args.items)?;
                timed_run(&rt, fg, snk)?
            }
            Kernel::Saxpy => {
                let (fg, snk) = build_saxpy(args.stages, args.items)?;
                timed_run(&rt, fg, snk)?
            }
        };
        if received != args.items {
            anyhow::bail!(
                "run {run}: sink received {received} items, expected {}",
                args.items
            );
        }
        if !(secs > 0.0) {
            anyhow::bail!("run {run}: non-positive elapsed time {secs}");
        }
        rates.push(args.items as f64 / secs);
    }
    Ok(rates)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("futuresdr-chain: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    init_logging();

    match run(&args) {
        Ok(rates) => {
            let rates = rates
                .iter()
                .map(|r| format!("{r:.1}"))
                .collect::<Vec<_>>()
                .join(", ");
            println!(
                "{{\"peer\": \"FutureSDR\", \"version\": \"{}\", \"kernel\": \"{}\", \"stages\": {}, \"items\": {}, \"items_per_s\": [{}]}}",
                FUTURESDR_VERSION,
                args.kernel.name(),
                args.stages,
                args.items,
                rates
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("futuresdr-chain: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
