//! `sluice bench overlap-save`: the zero-copy queue experiment of Allen, Zucknick and Evans
//! ("Zero-copy circular queues", sections IV–V), and a side-by-side with GNU Radio's
//! `fft_filter_ccc` (`--compare-gnuradio`).
//!
//! An overlap-save FFT filter (FFT size `N`, `L` taps, so `L − 1` items of overlap and
//! `step = N − L + 1` new items per block) streams complex samples in three variants, all in
//! one thread, all on the same [`OverlapSave`] kernel:
//!
//! * **zero-copy**: source → mirrored queue → filter → mirrored queue → sink, visited round
//!   robin with `try_` calls. The source copies up to 4096 items per turn into `try_reserve`
//!   space (from a 64 KiB cache-resident signal table); the filter takes `try_window(N)` and
//!   runs every block that window holds (block `b` reads `window[b·step ..][..N]` in place and
//!   writes its outputs straight into the output queue's `try_reserve` space), then commits
//!   and consumes `k·step` for the `k` blocks; the sink consumes what it finds.
//! * **manual copy** (the paper's baseline): same source, sink and queues, but the filter keeps
//!   a linear buffer: per block it copies the overlap to the buffer's head and the `step` new
//!   items after it, filters the buffer into a linear output buffer and copies the good outputs
//!   out into the output queue (batched per turn like the zero-copy filter).
//! * **bare**: the same kernel call on one window and one output buffer that stay in cache —
//!   the ceiling.
//!
//! MFLOPS count `10·N·log2 N + 6·N` per block (forward and inverse FFT plus the complex
//! multiply, as FFTW counts). The headline MFLOPS divide by the time spent in the filter stage
//! (its queue calls, its copies and the kernel: what the paper's figures measure, and what the
//! bare loop is made of); the `pipeline_*` columns divide by the wall time of the whole
//! round-robin pipeline, source and sink included. Each point (N, L, variant) streams
//! `--bytes` of input in total, split evenly over `--trials` trials; in each trial the three
//! variants run back to back. MFLOPS columns are the median trial; the gain and
//! share-of-bare columns are medians of the per-trial ratios, which cancels most of the drift
//! a shared machine adds between trials. A trial's time per block is the median over its
//! round-robin turns (each turn timed on its own), so a turn during which another process
//! held the core does not weigh; the GNU Radio comparison uses plain wall time on both sides.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};
use num_complex::Complex32;
use sluice_kernels::{fft_size_for_taps, OverlapSave};
use sluice_queue::{channel, QueueOptions, Reader, RingReader, RingWriter, Writer};

use super::plot;
use super::report::{machine_description, median, Table};

/// Arguments of `sluice bench overlap-save`.
#[derive(clap::Args, Debug)]
pub struct BenchOverlapSaveArgs {
    /// FFT sizes (powers of two).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "16,32,64,128,256,512,1024,2048,4096,8192,16384,32768,65536"
    )]
    pub sizes: Vec<usize>,
    /// Filter lengths as percentages of the FFT size (0 means a 1-tap filter).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0,10,20,30,40,50,60,70,80,90"
    )]
    pub overlaps: Vec<usize>,
    /// Input bytes streamed per point and variant, over all trials [default: 1 GiB; 64 MiB with --quick].
    #[arg(long)]
    pub bytes: Option<u64>,
    /// Trials per point (the median is reported) [default: 10; 3 with --quick].
    #[arg(long)]
    pub trials: Option<usize>,
    /// Shorter run: 64 MiB per point and 3 trials unless given.
    #[arg(long)]
    pub quick: bool,
    /// Directory for overlap-save.csv/.json and the PNG plots.
    #[arg(long, default_value = "overlap-save-results")]
    pub out: PathBuf,
    /// Offset the output queue's start by this many bytes from the input queue's (cache-set
    /// staggering, the paper's section VII lesson); the same for both queue variants.
    #[arg(long, default_value_t = 0)]
    pub stagger_bytes: usize,
    /// Skip the PNG plots.
    #[arg(long)]
    pub no_plots: bool,
    /// Instead of the sweep: sluice's zero-copy overlap-save (one thread) against GNU Radio's
    /// fft_filter_ccc (1024 and 64 taps; filter nthreads=1), GNU Radio both on all cores and
    /// pinned to one, in this run.
    #[arg(long)]
    pub compare_gnuradio: bool,
    /// Complex samples per filter for --compare-gnuradio.
    #[arg(long, default_value_t = 100_000_000)]
    pub gr_samples: u64,
    /// The GNU Radio script (relative to the current directory: run from the repository root,
    /// or give its path).
    #[arg(long, default_value = "scripts/gr_fft_filter.py")]
    pub gr_script: PathBuf,
}

/// The three variants, in the order they are reported.
const VARIANTS: [&str; 3] = ["zero-copy", "manual-copy", "bare"];

/// A 64 KiB table the source copies from (stays in cache, like a device's DMA buffer would not).
fn signal_table() -> Vec<Complex32> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    (0..8192)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let re = (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            let im = (s & 0xff_ffff) as f32 / (1u64 << 24) as f32 - 0.5;
            Complex32::new(re, im)
        })
        .collect()
}

/// Same formula as `scripts/gr_fft_filter.py`: a Hann-shaped band-pass of `len` taps.
fn formula_taps(len: usize) -> Vec<Complex32> {
    use std::f64::consts::PI;
    (0..len)
        .map(|k| {
            let w = 0.5 - 0.5 * (2.0 * PI * (k + 1) as f64 / (len + 1) as f64).cos();
            let c = num_complex::Complex64::from_polar(w / len as f64, 2.0 * PI * 0.05 * k as f64);
            Complex32::new(c.re as f32, c.im as f32)
        })
        .collect()
}

struct Source<'a> {
    table: &'a [Complex32],
    pos: usize,
}

impl Source<'_> {
    /// Copies `k` items of the signal into `dst[..k]`.
    fn fill(&mut self, dst: &mut [Complex32]) {
        let mut done = 0;
        while done < dst.len() {
            let n = (dst.len() - done).min(self.table.len() - self.pos);
            dst[done..done + n].copy_from_slice(&self.table[self.pos..self.pos + n]);
            done += n;
            self.pos = (self.pos + n) % self.table.len();
        }
    }
}

type Queues = (
    Writer<Complex32>,
    Reader<Complex32>,
    Writer<Complex32>,
    Reader<Complex32>,
);

/// Items the source writes per turn at most (or one block's worth if larger).
const SOURCE_CHUNK: usize = 4096;

/// Queue capacity for FFT size `n`: room for a window and a source chunk, 128 KiB at least.
fn queues(n: usize, stagger_bytes: usize) -> anyhow::Result<Queues> {
    let opts = QueueOptions::default();
    let cap = (4 * n).max(4 * SOURCE_CHUNK);
    let (wi, ri) = channel::<Complex32>(cap, &opts).context("creating the input queue")?;
    let staggered = QueueOptions {
        stagger_bytes,
        ..QueueOptions::default()
    };
    let (wo, ro) = channel::<Complex32>(cap, &staggered).context("creating the output queue")?;
    Ok((wi, ri, wo, ro))
}

/// Timings of one run of one variant.
struct Timing {
    /// Wall-clock seconds of the whole run.
    wall: f64,
    /// Median over the run's turns of the filter stage's time per block (its queue calls,
    /// copies and kernel calls), in seconds.
    filter: f64,
    /// Median over the run's turns of the whole turn's time (source, filter, sink) per block.
    pipeline: f64,
}

/// Runs `blocks` blocks through one variant; returns its timings and a checksum of the
/// outputs (so nothing is optimised away).
///
/// Every turn of the round robin is timed on its own (two `Instant::now` calls, about 25 ns
/// each, against turns of several microseconds), and the median per-block time over the turns
/// is kept: a turn during which another process took the core is an outlier that the median
/// ignores, where a total would absorb it. The bare loop is timed in batches of the same size.
fn run_variant(
    variant: &str,
    os: &mut OverlapSave,
    blocks: u64,
    table: &[Complex32],
    stagger_bytes: usize,
) -> anyhow::Result<(Timing, f64)> {
    let (n, step, l) = (os.fft_size(), os.step(), os.taps_len());
    let mut src = Source { table, pos: 0 };
    let mut checksum = 0.0f64;
    let chunk = SOURCE_CHUNK.max(step);
    let turns_estimate = (blocks as usize).div_ceil((chunk / step).max(1)) + 16;
    let mut filter_samples = Vec::with_capacity(turns_estimate);
    let mut turn_samples = Vec::with_capacity(turns_estimate);
    if variant == "bare" {
        let mut window = vec![Complex32::default(); n];
        src.fill(&mut window);
        let mut out = vec![Complex32::default(); n];
        let batch = (chunk / step).max(1) as u64;
        let w0 = Instant::now();
        let mut done = 0u64;
        while done < blocks {
            let k = batch.min(blocks - done);
            let t = Instant::now();
            for _ in 0..k {
                os.process_block(std::hint::black_box(&window), &mut out)?;
            }
            filter_samples.push(t.elapsed().as_secs_f64() / k as f64);
            done += k;
        }
        let per_block = median(&filter_samples);
        let timing = Timing {
            wall: w0.elapsed().as_secs_f64(),
            filter: per_block,
            pipeline: per_block,
        };
        return Ok((timing, out[0].re as f64));
    }
    let (mut wi, mut ri, mut wo, mut ro) = queues(n, stagger_bytes)?;
    // Prime the input with the first window's overlap (zero-copy) or nothing (manual copy
    // keeps its overlap in its own buffer, zeros at first).
    let zero_copy = variant == "zero-copy";
    if zero_copy && l > 1 {
        let space = wi.reserve(l - 1)?;
        src.fill(&mut space[..l - 1]);
        wi.commit(l - 1);
    }
    let mut lin = vec![Complex32::default(); n];
    let mut lin_out = vec![Complex32::default(); n];
    let mut done = 0u64;
    let w0 = Instant::now();
    while done < blocks {
        let turn = Instant::now();
        // Source: fills up to `chunk` items of whatever space there is.
        if let Some(space) = wi.try_reserve(step)? {
            let k = space.len().min(chunk);
            src.fill(&mut space[..k]);
            wi.commit(k);
        }
        // Filter: every block the window and the output space allow, then one commit and one
        // consume for the batch.
        let tf = Instant::now();
        let mut k = 0;
        let need = if zero_copy { n } else { step };
        if let Some(window) = ri.try_window(need)? {
            let out_need = if zero_copy { n } else { step };
            if let Some(out) = wo.try_reserve(out_need)? {
                let by_input = (window.len() + step - need) / step;
                let by_output = (out.len() + step - out_need) / step;
                k = (by_input.min(by_output) as u64).min(blocks - done) as usize;
                for b in 0..k {
                    let at = b * step;
                    if zero_copy {
                        // The kernel reads the window in place and writes into queue space.
                        os.process_block(&window[at..at + n], &mut out[at..])?;
                    } else {
                        lin.copy_within(step.., 0);
                        lin[l - 1..].copy_from_slice(&window[at..at + step]);
                        os.process_block(&lin, &mut lin_out)?;
                        out[at..at + step].copy_from_slice(&lin_out[..step]);
                    }
                }
                wo.commit(k * step);
                ri.consume(k * step);
                done += k as u64;
            }
        }
        let filter_time = tf.elapsed().as_secs_f64();
        // Sink: takes everything there is.
        if let Some(w) = ro.try_window(1)? {
            let m = w.len();
            if m > 0 {
                checksum += w[m - 1].re as f64;
                ro.consume(m);
            }
        }
        if k > 0 {
            filter_samples.push(filter_time / k as f64);
            turn_samples.push(turn.elapsed().as_secs_f64() / k as f64);
        }
    }
    let timing = Timing {
        wall: w0.elapsed().as_secs_f64(),
        filter: median(&filter_samples),
        pipeline: median(&turn_samples),
    };
    Ok((timing, checksum))
}

/// Checks that zero-copy and manual copy produce the same stream (manual lags by `L − 1`).
fn verify(n: usize, l: usize, table: &[Complex32]) -> anyhow::Result<()> {
    let taps = formula_taps(l);
    let mut os = OverlapSave::new(&taps, n)?;
    let step = os.step();
    let blocks = 4;
    // Manual copy lags by L − 1 outputs, so it runs enough extra blocks to cover them.
    let manual_blocks = blocks + (l - 1).div_ceil(step) + 1;
    let input: Vec<Complex32> = (0..manual_blocks * step + n)
        .map(|i| table[i % table.len()])
        .collect();
    let mut zc = vec![Complex32::default(); blocks * step];
    for b in 0..blocks {
        let mut out = vec![Complex32::default(); n];
        os.process_block(&input[b * step..b * step + n], &mut out)?;
        zc[b * step..(b + 1) * step].copy_from_slice(&out[..step]);
    }
    let mut lin = vec![Complex32::default(); n];
    let mut manual = Vec::new();
    for b in 0..manual_blocks {
        lin.copy_within(step.., 0);
        lin[l - 1..].copy_from_slice(&input[b * step..(b + 1) * step]);
        let mut out = vec![Complex32::default(); step];
        os.process_block(&lin, &mut out)?;
        manual.extend_from_slice(&out);
    }
    let peak = zc.iter().map(|v| v.norm()).fold(1e-30f32, f32::max);
    for (i, z) in zc.iter().enumerate() {
        if (z - manual[i + l - 1]).norm() > 1e-4 * peak {
            bail!("N={n} L={l}: zero-copy and manual copy disagree at output {i}");
        }
    }
    Ok(())
}

/// One point's results: median MFLOPS per variant, and the medians of the per-trial ratios.
struct Point {
    n: usize,
    taps: usize,
    overlap_pct: usize,
    mflops: [f64; 3],
    /// Zero-copy over manual copy, percent (median of per-trial time ratios).
    gain: f64,
    /// Zero-copy as a percentage of bare (median of per-trial time ratios).
    of_bare: f64,
}

/// Runs the sweep (or the GNU Radio comparison) and writes the table and plots.
pub fn run(args: BenchOverlapSaveArgs) -> anyhow::Result<()> {
    if args.compare_gnuradio {
        return compare_gnuradio(&args);
    }
    let bytes = args
        .bytes
        .unwrap_or(if args.quick { 64 << 20 } else { 1 << 30 });
    let trials = args
        .trials
        .unwrap_or(if args.quick { 3 } else { 10 })
        .max(1);
    for &n in &args.sizes {
        if !n.is_power_of_two() || n < 2 {
            bail!("--sizes: {n} is not a power of two of at least 2");
        }
    }
    if let Some(p) = args.overlaps.iter().find(|&&p| p >= 100) {
        bail!("--overlaps: {p}% leaves no new items per block (use less than 100)");
    }
    let table = signal_table();
    let machine = machine_description();
    println!("# overlap-save on {machine}");
    println!("# {bytes} input bytes per point and variant over {trials} trials; single thread");
    let mut points = Vec::new();
    let mut t = Table::new(&[
        "fft_size",
        "taps",
        "overlap_pct",
        "mflops_zero_copy",
        "mflops_manual_copy",
        "mflops_bare",
        "gain_vs_manual_pct",
        "zero_copy_of_bare_pct",
        "pipeline_mflops_zero_copy",
        "pipeline_mflops_manual_copy",
        "pipeline_gain_pct",
    ]);
    for &n in &args.sizes {
        for &pct in &args.overlaps {
            let l = (n * pct / 100).clamp(1, n);
            if points.iter().any(|p: &Point| p.n == n && p.taps == l) {
                continue; // small N: several percentages round to the same length
            }
            verify(n, l, &table)?;
            let mut os = OverlapSave::new(&formula_taps(l), n)?;
            let step = os.step() as u64;
            let blocks = (bytes / trials as u64 / 8).div_ceil(step).max(1);
            let flops = 10.0 * n as f64 * (n as f64).log2() + 6.0 * n as f64; // per block
            let mut secs: [Vec<f64>; 3] = Default::default();
            let mut pipe: [Vec<f64>; 2] = Default::default();
            for _ in 0..trials {
                for (v, name) in VARIANTS.iter().enumerate() {
                    let (timing, _) =
                        run_variant(name, &mut os, blocks, &table, args.stagger_bytes)?;
                    secs[v].push(timing.filter);
                    if v < 2 {
                        pipe[v].push(timing.pipeline);
                    }
                }
            }
            let mflops = [0, 1, 2].map(|v| flops / median(&secs[v]) / 1e6);
            let pipeline = [0, 1].map(|v| flops / median(&pipe[v]) / 1e6);
            // Ratios are taken per trial (the three variants run back to back) and then the
            // median: on a shared machine that cancels most of the load drift between trials.
            let paired = |a: &[f64], b: &[f64]| -> f64 {
                median(&a.iter().zip(b).map(|(x, y)| x / y).collect::<Vec<_>>())
            };
            let gain = (paired(&secs[1], &secs[0]) - 1.0) * 100.0;
            let of_bare = paired(&secs[2], &secs[0]) * 100.0;
            let pipeline_gain = (paired(&pipe[1], &pipe[0]) - 1.0) * 100.0;
            let p = Point {
                n,
                taps: l,
                overlap_pct: (l - 1) * 100 / n,
                mflops,
                gain,
                of_bare,
            };
            let row = vec![
                n.to_string(),
                l.to_string(),
                p.overlap_pct.to_string(),
                format!("{:.0}", mflops[0]),
                format!("{:.0}", mflops[1]),
                format!("{:.0}", mflops[2]),
                format!("{gain:.1}"),
                format!("{of_bare:.1}"),
                format!("{:.0}", pipeline[0]),
                format!("{:.0}", pipeline[1]),
                format!("{pipeline_gain:.1}"),
            ];
            println!("{}", row.join("  "));
            t.push(row);
            points.push(p);
        }
    }
    print!("\n{}", t.render());
    let summary = summarise(&points);
    print!("\n{}", summary.render());
    crate::report::results_dir(&args.out)?;
    let write = |table: &Table, name: &str| -> anyhow::Result<()> {
        let csv = args.out.join(format!("{name}.csv"));
        table
            .write_csv(&csv)
            .with_context(|| format!("writing {}", csv.display()))?;
        let json = args.out.join(format!("{name}.json"));
        table
            .write_json(&json, name)
            .with_context(|| format!("writing {}", json.display()))?;
        Ok(())
    };
    write(&t, "overlap-save")?;
    write(&summary, "overlap-save-summary")?;
    if !args.no_plots {
        let curves: Vec<plot::Series> = [512usize, 1024, 2048]
            .iter()
            .flat_map(|&n| {
                VARIANTS
                    .iter()
                    .enumerate()
                    .map(move |(v, name)| (n, v, *name))
            })
            .filter_map(|(n, v, name)| {
                let pts: Vec<(f64, f64)> = points
                    .iter()
                    .filter(|p| p.n == n)
                    .map(|p| (p.overlap_pct as f64, p.mflops[v]))
                    .collect();
                (!pts.is_empty()).then(|| plot::Series {
                    label: format!("N={n} {name}"),
                    style: v,
                    group: n,
                    points: pts,
                })
            })
            .collect();
        let column = |c: usize| -> Vec<(f64, f64)> {
            summary
                .rows
                .iter()
                .filter_map(|r| Some((r[0].parse::<f64>().ok()?.log2(), r[c].parse::<f64>().ok()?)))
                .collect()
        };
        let a = args.out.join("mflops-vs-overlap.png");
        let b = args.out.join("gain-vs-fft-size.png");
        let text = plot::lines(&a, "MFLOPS vs overlap (%)", "overlap %", "MFLOPS", &curves)?;
        let gain_series = [
            plot::Series {
                label: "mean over overlaps".into(),
                style: 0,
                group: 0,
                points: column(1),
            },
            plot::Series {
                label: "lowest overlap point".into(),
                style: 1,
                group: 1,
                points: column(2),
            },
        ];
        plot::lines(
            &b,
            "Zero-copy gain over manual copy (%) vs log2 N",
            "log2 N",
            "gain %",
            &gain_series,
        )?;
        println!(
            "wrote plots {} and {}{}",
            a.display(),
            b.display(),
            if text {
                ""
            } else {
                " (no font found: unlabelled)"
            }
        );
    }
    println!(
        "wrote {}/overlap-save.csv, .json and overlap-save-summary.csv, .json",
        args.out.display()
    );
    Ok(())
}

/// Per FFT size: mean/min gain over manual copy and the lowest zero-copy share of bare.
fn summarise(points: &[Point]) -> Table {
    let mut t = Table::new(&[
        "fft_size",
        "mean_gain_pct",
        "min_gain_pct",
        "min_zero_copy_of_bare_pct",
    ]);
    let mut sizes: Vec<usize> = points.iter().map(|p| p.n).collect();
    sizes.dedup();
    for n in sizes {
        let gains: Vec<f64> = points.iter().filter(|p| p.n == n).map(|p| p.gain).collect();
        let of_bare = points
            .iter()
            .filter(|p| p.n == n)
            .map(|p| p.of_bare)
            .fold(f64::INFINITY, f64::min);
        let mean = gains.iter().sum::<f64>() / gains.len() as f64;
        let min = gains.iter().copied().fold(f64::INFINITY, f64::min);
        t.push(vec![
            n.to_string(),
            format!("{mean:.1}"),
            format!("{min:.1}"),
            format!("{of_bare:.1}"),
        ]);
    }
    t
}

/// Streams `samples` items through the zero-copy pipeline with `taps`; returns samples/s.
fn sluice_rate(
    taps: &[Complex32],
    samples: u64,
    table: &[Complex32],
    stagger_bytes: usize,
) -> anyhow::Result<(usize, f64)> {
    let n = fft_size_for_taps(taps.len());
    let mut os = OverlapSave::new(taps, n)?;
    let blocks = samples.div_ceil(os.step() as u64);
    // The whole pipeline's wall time, as for GNU Radio (whose figure includes its source, head
    // and sink threads too).
    let (timing, _) = run_variant("zero-copy", &mut os, blocks, table, stagger_bytes)?;
    Ok((n, (blocks * os.step() as u64) as f64 / timing.wall))
}

/// Runs the GNU Radio script (pinned to `cpu` if given) and returns its JSON document.
fn run_gr_script(
    args: &BenchOverlapSaveArgs,
    trials: usize,
    lens: &[usize],
    cpu: Option<usize>,
) -> anyhow::Result<serde_json::Value> {
    let python = if std::path::Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    };
    if !args.gr_script.exists() {
        bail!(
            "{} not found: run from the repository root or pass --gr-script PATH",
            args.gr_script.display()
        );
    }
    let mut cmd = Command::new(python);
    cmd.arg(&args.gr_script)
        .args(["--samples", &args.gr_samples.to_string()])
        .args(["--trials", &trials.to_string()])
        .arg("--taps")
        .args(lens.iter().map(|l| l.to_string()));
    if let Some(cpu) = cpu {
        cmd.args(["--cpu", &cpu.to_string()]);
    }
    let output = cmd
        .output()
        .with_context(|| format!("running {} {}", python, args.gr_script.display()))?;
    if !output.status.success() {
        bail!(
            "{} failed ({}): {}",
            args.gr_script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    serde_json::from_slice(&output.stdout)
        .with_context(|| format!("parsing the JSON printed by {}", args.gr_script.display()))
}

/// The same filter as a block in a runtime graph, like GNU Radio's flowgraph: a repeating
/// vector source -> head -> FFT filter block -> null sink, on `threads` threads (None: one per
/// node). Returns samples per second.
fn graph_rate(
    taps: &[Complex32],
    samples: u64,
    table: &[Complex32],
    threads: Option<usize>,
) -> anyhow::Result<f64> {
    use sluice_blocks::blocks::{FftFilter, Head, NullSink, VectorSource};
    use sluice_runtime::{Graph, RunOptions, Scheduler};
    let mut g = Graph::new();
    let repeats = samples.div_ceil(table.len() as u64);
    let src = g.add("src", VectorSource::new(table.to_vec()).repeat(repeats))?;
    let head = g.add("head", Head::<Complex32>::new(samples))?;
    let n = sluice_kernels::fft_size_for_taps(taps.len());
    let filt = g.add("fft_filter", FftFilter::new(taps, n)?)?;
    let sink = g.add("sink", NullSink::<Complex32>::new())?;
    g.connect(src, "out", head, "in")?;
    g.connect(head, "out", filt, "in")?;
    g.connect(filt, "out", sink, "in")?;
    let report = g.run(&RunOptions {
        scheduler: threads.map_or(Scheduler::ThreadPerNode, Scheduler::Pooled),
        ..RunOptions::default()
    })?;
    Ok(samples as f64 / report.wall.as_secs_f64())
}

fn compare_gnuradio(args: &BenchOverlapSaveArgs) -> anyhow::Result<()> {
    let table = signal_table();
    let trials = args.trials.unwrap_or(3).max(1);
    let lens = [1024usize, 64];
    println!(
        "# sluice overlap-save vs GNU Radio fft_filter_ccc on {}",
        machine_description()
    );
    println!(
        "# {} complex samples per run, {trials} trials, median; both sides single-threaded filters",
        args.gr_samples
    );
    let mut ours = Vec::new();
    for &l in &lens {
        let taps = formula_taps(l);
        let mut rates = Vec::new();
        let mut n = 0;
        for _ in 0..trials {
            let (size, r) = sluice_rate(&taps, args.gr_samples, &table, args.stagger_bytes)?;
            n = size;
            rates.push(r);
        }
        let mut graph_tpn = Vec::new();
        let mut graph_one = Vec::new();
        for _ in 0..trials {
            graph_tpn.push(graph_rate(&taps, args.gr_samples, &table, None)?);
            graph_one.push(graph_rate(&taps, args.gr_samples, &table, Some(1))?);
        }
        ours.push((n, median(&rates), median(&graph_tpn), median(&graph_one)));
    }
    // GNU Radio twice: as it runs by default (its four block threads on every core), and
    // pinned to one core, the same resources as the single-threaded sluice pipeline.
    let all_cores = run_gr_script(args, trials, &lens, None)?;
    let one_core = run_gr_script(args, trials, &lens, Some(0))?;
    let version = all_cores["gnuradio_version"]
        .as_str()
        .unwrap_or("unknown")
        .to_string();
    let rate = |doc: &serde_json::Value, l: usize| -> anyhow::Result<f64> {
        doc["results"]
            .as_array()
            .and_then(|r| r.iter().find(|e| e["taps"].as_u64() == Some(l as u64)))
            .and_then(|e| e["samples_per_sec"].as_f64())
            .with_context(|| format!("no {l}-tap result in the GNU Radio output"))
    };
    let mut t = Table::new(&[
        "taps",
        "sluice_fft_size",
        "sluice_msps",
        "gnuradio_msps",
        "ratio_sluice_over_gnuradio",
        "gnuradio_one_core_msps",
        "ratio_sluice_over_gnuradio_one_core",
        "sluice_graph_msps",
        "ratio_graph_over_gnuradio",
        "sluice_graph_1thread_msps",
        "ratio_graph_1thread_over_gnuradio_one_core",
    ]);
    for (i, &l) in lens.iter().enumerate() {
        let (gr, gr1) = (rate(&all_cores, l)?, rate(&one_core, l)?);
        let (n, ours, graph, graph_one) = ours[i];
        t.push(vec![
            l.to_string(),
            n.to_string(),
            format!("{:.1}", ours / 1e6),
            format!("{:.1}", gr / 1e6),
            format!("{:.2}", ours / gr),
            format!("{:.1}", gr1 / 1e6),
            format!("{:.2}", ours / gr1),
            format!("{:.1}", graph / 1e6),
            format!("{:.2}", graph / gr),
            format!("{:.1}", graph_one / 1e6),
            format!("{:.2}", graph_one / gr1),
        ]);
    }
    println!(
        "# GNU Radio {version}: vector_source -> head -> fft_filter_ccc(nthreads=1) -> null_sink, \
         on all cores and pinned to CPU 0; sluice: the kernel on the zero-copy queue in one \
         thread, and the FftFilter block in a graph (vector source -> head -> filter -> sink) with \
         a thread per node and with one thread"
    );
    print!("{}", t.render());
    crate::report::results_dir(&args.out)?;
    let csv = args.out.join("gnuradio-compare.csv");
    t.write_csv(&csv)
        .with_context(|| format!("writing {}", csv.display()))?;
    let json = args.out.join("gnuradio-compare.json");
    t.write_json(&json, "overlap-save-vs-gnuradio")
        .with_context(|| format!("writing {}", json.display()))?;
    println!("wrote {} and {}", csv.display(), json.display());
    Ok(())
}
