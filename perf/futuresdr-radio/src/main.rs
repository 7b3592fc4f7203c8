//! FutureSDR peer for `sluice bench radio`: one flowgraph per case,
//! `NullSource<Complex32> -> Head(N) -> block -> NullSink` (one sink per channel for the
//! channelizer), FutureSDR's stock blocks, default buffers and default runtime
//! (`Runtime::new()`). Only `Runtime::run` is timed. Prints one JSON document:
//!
//! ```text
//! {"peer": "FutureSDR", "version": "0.8.0", "case": "fir", "items": N, "items_per_s": [..]}
//! ```
//!
//! Cases: `fir --taps T` (`FirBuilder::fir`), `xlating --taps T --decimation D`
//! (`XlatingFir::with_taps`), `rational --taps T --interpolation I --decimation D`
//! (`FirBuilder::resampling_with_taps`, T taps in all), `arb --rate R` (`PfbArbResampler`, 32
//! filters), `channelizer --channels M --taps T --oversample OS` (`PfbChannelizer`, T taps in
//! all), `fm` (FutureSDR has no FM demodulator block: an `Apply` closure computing
//! `arg(x[n]·conj(x[n−1]))`, what a FutureSDR user writes). Taps are a Hann-windowed sinc:
//! only their number matters for speed.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use futuresdr::blocks::{Apply, FirBuilder, Head, NullSink, NullSource, PfbArbResampler};
use futuresdr::blocks::{PfbChannelizer, XlatingFir};
use futuresdr::prelude::*;

const FUTURESDR_VERSION: &str = env!("FUTURESDR_VERSION");

struct Args {
    case: String,
    items: u64,
    runs: usize,
    taps: usize,
    decimation: usize,
    interpolation: usize,
    rate: f32,
    channels: usize,
    oversample: f32,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        case: String::new(),
        items: 20_000_000,
        runs: 3,
        taps: 64,
        decimation: 1,
        interpolation: 1,
        rate: 1.0,
        channels: 512,
        oversample: 1.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let Some(v) = it.next() else {
            bail!("missing value for {flag}")
        };
        match flag.as_str() {
            "--case" => a.case = v,
            "--items" => a.items = v.parse()?,
            "--runs" => a.runs = v.parse()?,
            "--taps" => a.taps = v.parse()?,
            "--decimation" => a.decimation = v.parse()?,
            "--interpolation" => a.interpolation = v.parse()?,
            "--rate" => a.rate = v.parse()?,
            "--channels" => a.channels = v.parse()?,
            "--oversample" => a.oversample = v.parse()?,
            other => bail!("unknown argument '{other}'"),
        }
    }
    if a.case.is_empty() || a.runs == 0 || a.items == 0 {
        bail!("usage: futuresdr-radio --case fir|xlating|rational|arb|channelizer|fm [--items N] [--runs R] ...");
    }
    Ok(a)
}

fn taps(n: usize) -> Vec<f32> {
    (0..n)
        .map(|k| {
            let t = k as f64 - (n as f64 - 1.0) / 2.0;
            let sinc = if t == 0.0 { 0.2 } else { (2.0 * std::f64::consts::PI * 0.1 * t).sin() / (std::f64::consts::PI * t) };
            let w = 0.5 - 0.5 * (2.0 * std::f64::consts::PI * (k + 1) as f64 / (n + 1) as f64).cos();
            (sinc * w) as f32
        })
        .collect()
}

fn build(a: &Args) -> Result<Flowgraph> {
    let mut fg = Flowgraph::new();
    let src = fg.add(NullSource::<Complex32>::new())?;
    let head = fg.add(Head::<Complex32>::new(a.items))?;
    connect!(fg, src > head);
    match a.case.as_str() {
        "fir" => {
            let b = fg.add(FirBuilder::fir::<Complex32, Complex32, _>(taps(a.taps)))?;
            let snk = fg.add(NullSink::<Complex32>::new())?;
            connect!(fg, head > b > snk);
        }
        "xlating" => {
            let b = fg.add(XlatingFir::with_taps(taps(a.taps), a.decimation, 100_000.0, 1e6))?;
            let snk = fg.add(NullSink::<Complex32>::new())?;
            connect!(fg, head > b > snk);
        }
        "rational" => {
            let b = fg.add(FirBuilder::resampling_with_taps::<Complex32, Complex32, _>(
                a.interpolation,
                a.decimation,
                taps(a.taps),
            ))?;
            let snk = fg.add(NullSink::<Complex32>::new())?;
            connect!(fg, head > b > snk);
        }
        "arb" => {
            let b: PfbArbResampler = PfbArbResampler::new(a.rate, &taps(32 * 13), 32);
            let b = fg.add(b)?;
            let snk = fg.add(NullSink::<Complex32>::new())?;
            connect!(fg, head > b > snk);
        }
        "fm" => {
            let mut prev = Complex32::new(0.0, 0.0);
            let b = fg.add(Apply::new(move |x: &Complex32| -> f32 {
                let d = (*x * prev.conj()).arg();
                prev = *x;
                d
            }))?;
            let snk = fg.add(NullSink::<f32>::new())?;
            connect!(fg, head > b > snk);
        }
        "channelizer" => {
            let b: PfbChannelizer = PfbChannelizer::new(a.channels, &taps(a.taps), a.oversample);
            let b = fg.add(b)?;
            connect!(fg, head > b);
            for i in 0..a.channels {
                let snk = fg.add(NullSink::<Complex32>::new())?;
                fg.stream_dyn(b, format!("outputs[{i}]"), snk, "input")?;
            }
        }
        other => bail!("unknown case '{other}'"),
    }
    Ok(fg)
}

fn init_logging() {
    use tracing_subscriber::filter::{EnvFilter, LevelFilter};
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::WARN.into())
        .with_env_var("FUTURESDR_LOG")
        .from_env_lossy();
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("futuresdr-radio: {e}");
            return ExitCode::from(2);
        }
    };
    init_logging();
    let rt = Runtime::new();
    let mut rates = Vec::new();
    for _ in 0..args.runs {
        let fg = match build(&args) {
            Ok(fg) => fg,
            Err(e) => {
                eprintln!("futuresdr-radio: {e:#}");
                return ExitCode::FAILURE;
            }
        };
        let t0 = Instant::now();
        if let Err(e) = rt.run(fg) {
            eprintln!("futuresdr-radio: run failed: {e:#}");
            return ExitCode::FAILURE;
        }
        rates.push(args.items as f64 / t0.elapsed().as_secs_f64());
    }
    let rates: Vec<String> = rates.iter().map(|r| format!("{r:.1}")).collect();
    println!(
        "{{\"peer\": \"FutureSDR\", \"version\": \"{FUTURESDR_VERSION}\", \"case\": \"{}\", \"items\": {}, \"items_per_s\": [{}]}}",
        args.case,
        args.items,
        rates.join(", ")
    );
    ExitCode::SUCCESS
}
