//! `sluice bench convolve`: the partitioned convolution engine, offline and in real time.
//!
//! Three measurements, made exactly as `scripts/zita/zita_bench.cpp` makes them for
//! zita-convolver so that `scripts/compare_zita.sh` can print ratios:
//!
//! - **offline**: blocks processed back to back for `--seconds` of wall time (after a 10%
//!   warm-up) with `LatePolicy::Wait` (zita: `process(true)`). Reports the real-time factor and
//!   the process CPU time (`CLOCK_PROCESS_CPUTIME_ID`, so worker threads count) as % of one core
//!   per channel of audio.
//! - **realtime**: a driver thread sleeps to absolute deadlines (`clock_nanosleep`,
//!   `TIMER_ABSTIME`, `CLOCK_MONOTONIC`) every block/rate seconds and calls `process` with
//!   `LatePolicy::PartialSum` (zita: `process(false)`). A callback is late if it finished after
//!   its deadline (the next period start); late periods reported by the engine count as late
//!   callbacks too. Reports late callbacks and p50/p99/max callback time as % of the period.
//!   The first 0.25 s are a warm-up and are not counted. A callback whose driver thread was
//!   woken only after its deadline is a host stall, not the engine's doing: it is reported as
//!   `stalled` and counted as late only with `--strict` (on the 2-vCPU development VM a
//!   SCHED_FIFO thread with no load at all was woken more than a period late 0-5 times in 20 s).
//! - **max-channels**: the largest number of independent channels (one IR each) with zero late
//!   callbacks over `--seconds`: doubling from 1, then bisection to within 1/32 of the count.
//!   A count passes if one of `--attempts` (default 3) fresh runs has no late callback: on a
//!   shared or virtual machine a single stall of the host would otherwise decide the figure.
//!
//! The driver thread asks for SCHED_FIFO priority 80 in the real-time modes, the engine's
//! workers for 79 and below (zita's the same); what was granted is read back from
//! `/proc/self/task/*/stat` and reported.
//!
//! The engine's late-period counter is read after every callback, outside the timed part,
//! with the allocation-free `Convolver::late_periods`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::ValueEnum;
use sluice_conv::{Convolver, ConvolverConfig, IrMatrix, LatePolicy, Partitioning, Scheduling};

use super::report::{machine_description, median, Table};
use sluice_conv::parse_partitioning;

/// SCHED_FIFO priority of the driver thread; the engine's level-1 worker gets one less.
const DRIVER_PRIORITY: i32 = 80;
/// Length of the shared input noise; each channel reads it at its own offset.
const NOISE_LEN: usize = 1 << 16;

/// Arguments of `sluice bench convolve`.
#[derive(clap::Args, Debug)]
pub struct BenchConvolveArgs {
    /// Measurements to make, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "offline,realtime,max-channels"
    )]
    pub modes: Vec<Mode>,
    /// Impulse response lengths in samples, comma-separated.
    /// [default: 16384,65536,262144,524288; with --quick: 16384,65536]
    #[arg(long, value_delimiter = ',')]
    pub ir_lens: Option<Vec<usize>>,
    /// Block size (samples per callback).
    #[arg(long, default_value_t = 64)]
    pub block: usize,
    /// Sample rate in Hz (sets the callback period).
    #[arg(long, default_value_t = 48000)]
    pub rate: u32,
    /// Channels for the offline and realtime measurements.
    #[arg(long, default_value_t = 8)]
    pub channels: usize,
    /// Seconds per point (offline: wall time; realtime: audio time; max-channels: per trial)
    /// [default: 3; with --quick: 1]
    #[arg(long)]
    pub seconds: Option<f64>,
    /// A max-channels trial passes if one of this many attempts has no late callback (a guard
    /// against rare stalls of a shared or virtual machine; 1 = a single attempt decides).
    #[arg(long, default_value_t = 3)]
    pub attempts: usize,
    /// Count callbacks that were woken only after their deadline (host stalls) as late too.
    #[arg(long)]
    pub strict: bool,
    /// Upper bound of the max-channels search.
    #[arg(long, default_value_t = 1024)]
    pub max_channels_limit: usize,
    /// Quick run: IR lengths 2^14 and 2^16 and 1 s per point, unless given explicitly.
    #[arg(long)]
    pub quick: bool,
    /// Do not ask for SCHED_FIFO (driver and workers stay SCHED_OTHER).
    #[arg(long)]
    pub no_fifo: bool,
    /// Engine scheduling.
    #[arg(long, value_enum, default_value_t = Sched::Threaded)]
    pub scheduling: Sched,
    /// Partitioning: auto, uniform, tuned, or SIZExCOUNT,...
    #[arg(long, default_value = "auto", value_parser = parse_partitioning)]
    pub partitioning: Partitioning,
    /// Print one JSON object per point on stdout (the tables go to stderr).
    #[arg(long)]
    pub json: bool,
    /// Directory for the CSV and JSON files.
    #[arg(long, default_value = "target/bench/convolve")]
    pub out: PathBuf,
}

/// One measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// As fast as possible: real-time factor and CPU per channel.
    Offline,
    /// Driven by a timer every block: late callbacks and callback times.
    Realtime,
    /// Most channels with no late callback.
    MaxChannels,
}

/// The engine's scheduling, as a command-line value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Sched {
    /// Worker thread per larger level (`Scheduling::Threaded`).
    Threaded,
    /// Time-distributed in the callback (`Scheduling::Cooperative`).
    Cooperative,
    /// Every level in the callback that completes its block (`Scheduling::SingleThread`).
    Single,
}

/// The settings one run uses for every point.
struct Params {
    block: usize,
    rate: u32,
    seconds: f64,
    fifo: bool,
    sched: Sched,
    partitioning: Partitioning,
    attempts: usize,
    strict: bool,
    /// The input signal every channel reads, each at its own offset.
    noise: Vec<f32>,
}

impl Params {
    fn config(&self, late_policy: LatePolicy, ir_len: usize) -> ConvolverConfig {
        let scheduling = match self.sched {
            Sched::Threaded => Scheduling::Threaded {
                pin_cores: None,
                realtime_priority: self.fifo.then_some(DRIVER_PRIORITY - 1),
            },
            Sched::Cooperative => Scheduling::Cooperative,
            Sched::Single => Scheduling::SingleThread,
        };
        ConvolverConfig {
            block_size: self.block,
            partitioning: self.partitioning.clone(),
            scheduling,
            late_policy,
            max_ir_len: ir_len.max(ConvolverConfig::default().max_ir_len),
        }
    }

    fn period_ns(&self) -> i64 {
        (self.block as i64 * 1_000_000_000) / i64::from(self.rate)
    }
}

/// Deterministic xorshift32 noise in [-1, 1), the same generator as the zita harness.
struct Rng(u32);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0 as f32 / 2_147_483_648.0 - 1.0
    }
}

/// The benchmark IR: noise decaying by 60 dB over its length.
fn make_ir(len: usize) -> Vec<f32> {
    let mut r = Rng(0x123_4567);
    (0..len)
        .map(|i| r.next() * 10f32.powf(-3.0 * i as f32 / len as f32) * 0.1)
        .collect()
}

fn make_noise() -> Vec<f32> {
    let mut r = Rng(0x9e37_79b9);
    (0..NOISE_LEN).map(|_| r.next() * 0.1).collect()
}

/// The clock and scheduling calls, from `sluice-os`.
mod os {
    /// Nanoseconds on the monotonic clock.
    pub fn monotonic_ns() -> i64 {
        sluice_os::monotonic_ns()
    }

    /// Nanoseconds of CPU time used by the process.
    pub fn process_cpu_ns() -> i64 {
        sluice_os::process_cpu_time().as_nanos() as i64
    }

    /// Sleeps until `deadline_ns` on the monotonic clock (absolute).
    pub fn sleep_until(deadline_ns: i64) {
        sluice_os::sleep_until_monotonic_ns(deadline_ns);
    }

    /// Sets the calling thread to SCHED_FIFO `priority` (true if granted), or back to
    /// SCHED_OTHER when `priority` is `None`.
    pub fn set_current_thread_fifo(priority: Option<i32>) -> bool {
        match priority {
            Some(p) => sluice_os::set_fifo_priority(p).is_ok(),
            None => sluice_os::set_normal_priority().is_ok(),
        }
    }
}

/// The ids of this process's threads.
fn task_ids() -> BTreeSet<u32> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}

/// `(policy, rt_priority)` of thread `tid`, from fields 41 and 40 of its stat file.
fn thread_sched(tid: u32) -> Option<(i32, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    // `rest` starts at field 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let prio = fields.get(40 - 3)?.parse().ok()?;
    let policy = fields.get(41 - 3)?.parse().ok()?;
    Some((policy, prio))
}

/// What the threads started since `before` got: a description and whether all are SCHED_FIFO.
fn describe_workers(before: &BTreeSet<u32>) -> (String, bool) {
    let mut total = 0;
    let mut fifo = Vec::new();
    for tid in task_ids().difference(before) {
        if let Some((policy, prio)) = thread_sched(*tid) {
            total += 1;
            if policy == libc::SCHED_FIFO {
                fifo.push(prio);
            }
        }
    }
    let text = match (fifo.iter().min(), fifo.iter().max()) {
        (Some(lo), Some(hi)) => {
            format!("{total} threads, {} SCHED_FIFO prio {lo}..{hi}", fifo.len())
        }
        _ => format!("{total} threads, SCHED_OTHER"),
    };
    (text, total > 0 && fifo.len() == total)
}

/// A convolver for `channels` independent channels plus its I/O buffers.
struct Rig {
    conv: Convolver,
    channels: usize,
    out_bufs: Vec<Vec<f32>>,
    block_index: usize,
    workers: String,
    workers_fifo: bool,
}

impl Rig {
    fn new(
        p: &Params,
        channels: usize,
        ir: &[f32],
        late_policy: LatePolicy,
    ) -> anyhow::Result<Self> {
        let before = task_ids();
        let conv = Convolver::new(
            p.config(late_policy, ir.len()),
            &IrMatrix::mono_per_channel(channels, ir),
        )
        .with_context(|| format!("building a convolver for {channels} channels"))?;
        // Give the workers a moment to set their scheduling before reading it back.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (workers, workers_fifo) = describe_workers(&before);
        Ok(Rig {
            conv,
            channels,
            out_bufs: vec![vec![0.0; p.block]; channels],
            block_index: 0,
            workers,
            workers_fifo,
        })
    }

    /// Runs `count` callbacks back to back (offline).
    fn run_blocks(&mut self, noise: &[f32], block: usize, count: usize) -> anyhow::Result<()> {
        let mut ins: Vec<&[f32]> = Vec::with_capacity(self.channels);
        let mut outs: Vec<&mut [f32]> = self.out_bufs.iter_mut().map(Vec::as_mut_slice).collect();
        for _ in 0..count {
            fill_inputs(&mut ins, noise, self.block_index, block, self.channels);
            self.conv.process(&ins, &mut outs)?;
            self.block_index += 1;
        }
        Ok(())
    }
}

/// Points `ins` at this block's input of each channel: the noise at a per-channel offset.
fn fill_inputs<'a>(
    ins: &mut Vec<&'a [f32]>,
    noise: &'a [f32],
    index: usize,
    block: usize,
    channels: usize,
) {
    let pos = (index * block) % NOISE_LEN;
    ins.clear();
    ins.extend((0..channels).map(|c| {
        let off = (pos + c * 977 * block) % NOISE_LEN;
        &noise[off..off + block]
    }));
}

/// Result of one real-time run.
#[derive(Debug, Default)]
struct RtResult {
    callbacks: u64,
    late: u64,
    late_deadline: u64,
    late_engine: u64,
    stalled: u64,
    /// Callbacks that had to wait for a worker (engine counter).
    waits: u64,
    p50: f64,
    p99: f64,
    max: f64,
    cpu_pct_per_channel: f64,
    driver_fifo: bool,
}

/// The real-time driver loop (see the module docs). With `stop_on_late` it returns at the first
/// late callback (or engine late period) it sees.
fn run_realtime(p: &Params, rig: &mut Rig, stop_on_late: bool) -> anyhow::Result<RtResult> {
    let (noise, seconds) = (&p.noise, p.seconds);
    let period = p.period_ns();
    let per_second = f64::from(p.rate) / p.block as f64;
    let warmup = (0.25 * per_second) as u64;
    let measured = ((seconds * per_second) as u64).max(1);
    let mut durations = Vec::with_capacity(measured as usize);
    let mut r = RtResult {
        driver_fifo: p.fifo && os::set_current_thread_fifo(Some(DRIVER_PRIORITY)),
        ..Default::default()
    };
    let channels = rig.channels;
    let mut ins: Vec<&[f32]> = Vec::with_capacity(channels);
    let mut outs: Vec<&mut [f32]> = rig.out_bufs.iter_mut().map(Vec::as_mut_slice).collect();
    let (mut cpu0, mut wall0, mut late0, mut waits0) = (0, 0, 0, 0);
    let mut next = os::monotonic_ns() + period;
    let mut result = Ok(());
    for i in 0..warmup + measured {
        if i == warmup {
            let st = rig.conv.stats();
            late0 = st.late_periods;
            waits0 = st.waits;
            cpu0 = os::process_cpu_ns();
            wall0 = os::monotonic_ns();
        }
        os::sleep_until(next);
        let t0 = os::monotonic_ns();
        fill_inputs(&mut ins, noise, rig.block_index, p.block, channels);
        let res = rig.conv.process(&ins, &mut outs);
        let t1 = os::monotonic_ns();
        rig.block_index += 1;
        let deadline = next + period;
        next += period;
        if let Err(e) = res {
            result = Err(e);
            break;
        }
        if i < warmup {
            continue;
        }
        r.callbacks += 1;
        durations.push((t1 - t0) as f64 * 100.0 / period as f64);
        if t0 > deadline {
            // Woken after its deadline: the host stalled the driver, the engine had no chance.
            r.stalled += 1;
            if p.strict {
                r.late += 1;
            }
        } else if t1 > deadline {
            r.late_deadline += 1;
            r.late += 1;
        }
        let last = i + 1 == warmup + measured;
        // Read the engine's late counter (allocation-free) after every callback when a late
        // period should stop the run, else at the end.
        if last || stop_on_late {
            let late = rig.conv.late_periods() - late0;
            r.late += late - r.late_engine;
            r.late_engine = late;
        }
        if stop_on_late && r.late > 0 {
            break;
        }
    }
    let cpu = os::process_cpu_ns() - cpu0;
    let wall = os::monotonic_ns() - wall0;
    if r.driver_fifo {
        os::set_current_thread_fifo(None);
    }
    result?;
    r.waits = rig.conv.stats().waits - waits0;
    r.cpu_pct_per_channel = cpu as f64 * 100.0 / wall as f64 / channels as f64;
    durations.sort_by(f64::total_cmp);
    if let Some(&max) = durations.last() {
        let pct = |q: f64| {
            durations
                [((q * (durations.len() - 1) as f64).round() as usize).min(durations.len() - 1)]
        };
        r.p50 = median(&durations);
        r.p99 = pct(0.99);
        r.max = max;
    }
    Ok(r)
}

/// Table columns, which are also the keys of the JSON objects they are read from. In
/// `trial_counts` a `!` marks a channel count that was late.
const OFFLINE_COLUMNS: &[&str] = &[
    "ir_len",
    "channels",
    "rtf",
    "cpu_pct_per_channel",
    "waited_periods",
    "realtime_granted",
    "workers",
    "levels",
];
const REALTIME_COLUMNS: &[&str] = &[
    "ir_len",
    "channels",
    "callbacks",
    "late",
    "stalled",
    "p50_pct",
    "p99_pct",
    "max_pct",
    "cpu_pct_per_channel",
    "driver_fifo",
    "realtime_granted",
];
const MAX_CHANNELS_COLUMNS: &[&str] = &[
    "ir_len",
    "max_channels",
    "driver_fifo",
    "realtime_granted",
    "trial_counts",
];

/// Collects the results: one table per mode, and JSON lines on stdout with `--json`.
struct Report {
    json: bool,
    offline: Table,
    realtime: Table,
    max_channels: Table,
}

impl Report {
    fn new(json: bool) -> Self {
        Report {
            json,
            offline: Table::new(OFFLINE_COLUMNS),
            realtime: Table::new(REALTIME_COLUMNS),
            max_channels: Table::new(MAX_CHANNELS_COLUMNS),
        }
    }

    /// Adds one point: a row of the mode's table (cells looked up by column name, numbers with
    /// three decimals) and, with `--json`, one JSON line with the run's settings added.
    fn record(&mut self, p: &Params, mode: Mode, fields: serde_json::Value) {
        let table = match mode {
            Mode::Offline => &mut self.offline,
            Mode::Realtime => &mut self.realtime,
            Mode::MaxChannels => &mut self.max_channels,
        };
        let cell = |v: Option<&serde_json::Value>| match v {
            Some(serde_json::Value::Number(n)) if n.is_f64() => {
                format!("{:.3}", n.as_f64().unwrap_or(f64::NAN))
            }
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => "-".to_string(),
        };
        let row = table.columns.iter().map(|c| cell(fields.get(c))).collect();
        table.push(row);
        if self.json {
            let mut obj = serde_json::json!({
                "engine": "sluice", "block": p.block, "rate": p.rate, "seconds": p.seconds,
            });
            if let (Some(o), Some(f)) = (obj.as_object_mut(), fields.as_object()) {
                o.extend(f.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            println!("{obj}");
        }
    }
}

fn offline(p: &Params, rep: &mut Report, ir: &[f32], channels: usize) -> anyhow::Result<()> {
    let mut rig = Rig::new(p, channels, ir, LatePolicy::Wait)?;
    let chunk = 64;
    let warm_end = os::monotonic_ns() + (p.seconds * 0.1e9) as i64;
    while os::monotonic_ns() < warm_end {
        rig.run_blocks(&p.noise, p.block, chunk)?;
    }
    let late0 = rig.conv.stats().late_periods;
    let cpu0 = os::process_cpu_ns();
    let wall0 = os::monotonic_ns();
    let end = wall0 + (p.seconds * 1e9) as i64;
    let mut blocks = 0;
    let mut wall;
    loop {
        rig.run_blocks(&p.noise, p.block, chunk)?;
        blocks += chunk;
        wall = os::monotonic_ns() - wall0;
        if wall0 + wall >= end {
            break;
        }
    }
    let cpu = os::process_cpu_ns() - cpu0;
    let stats = rig.conv.stats();
    let late = stats.late_periods - late0;
    let audio_s = (blocks * p.block) as f64 / f64::from(p.rate);
    let rtf = audio_s / (wall as f64 * 1e-9);
    let cpu_pct = cpu as f64 * 1e-9 / audio_s / channels as f64 * 100.0;
    let levels = stats
        .levels
        .iter()
        .map(|l| format!("{}x{}", l.size, l.count))
        .collect::<Vec<_>>()
        .join(" ");
    eprintln!(
        "sluice offline   ir {:7}: rtf {rtf:8.1}, cpu/ch {cpu_pct:.3}% ({}; levels {levels})",
        ir.len(),
        rig.workers
    );
    rep.record(
        p,
        Mode::Offline,
        serde_json::json!({
            "mode": "offline", "ir_len": ir.len(), "channels": channels, "audio_seconds": audio_s,
            "rtf": rtf, "cpu_pct_per_channel": cpu_pct, "waited_periods": late,
            "realtime_granted": stats.realtime_granted, "workers": rig.workers,
            "workers_fifo": rig.workers_fifo, "levels": levels,
        }),
    );
    Ok(())
}

fn realtime(p: &Params, rep: &mut Report, ir: &[f32], channels: usize) -> anyhow::Result<()> {
    let mut rig = Rig::new(p, channels, ir, LatePolicy::PartialSum)?;
    let r = run_realtime(p, &mut rig, false)?;
    let granted = rig.conv.stats().realtime_granted;
    eprintln!(
        "sluice realtime  ir {:7}: late {}/{}, p50 {:.1}% p99 {:.1}% max {:.1}% of period ({})",
        ir.len(),
        r.late,
        r.callbacks,
        r.p50,
        r.p99,
        r.max,
        rig.workers
    );
    rep.record(
        p,
        Mode::Realtime,
        serde_json::json!({
            "mode": "realtime", "ir_len": ir.len(), "channels": channels, "callbacks": r.callbacks,
            "late": r.late, "late_deadline": r.late_deadline, "late_engine": r.late_engine,
            "stalled": r.stalled, "waits": r.waits,
            "p50_pct": r.p50, "p99_pct": r.p99, "max_pct": r.max,
            "cpu_pct_per_channel": r.cpu_pct_per_channel, "driver_fifo": r.driver_fifo,
            "realtime_granted": granted, "workers": rig.workers, "workers_fifo": rig.workers_fifo,
        }),
    );
    Ok(())
}

/// Doubling from 1, then bisection to within 1/32, of the largest `n <= limit` for which
/// `trial(n)` holds (0 if not even 1 does). Assumes `trial` is monotonic.
fn search_max(
    limit: usize,
    mut trial: impl FnMut(usize) -> anyhow::Result<bool>,
) -> anyhow::Result<usize> {
    let (mut good, mut bad) = (0, None);
    let mut n = 1;
    while n <= limit {
        if trial(n)? {
            good = n;
            n *= 2;
        } else {
            bad = Some(n);
            break;
        }
    }
    if bad.is_none() && good < limit {
        // Doubling passed the limit without a failure: try the limit itself.
        if trial(limit)? {
            good = limit;
        } else {
            bad = Some(limit);
        }
    }
    while let Some(b) = bad {
        if b - good <= (good / 32).max(1) {
            break;
        }
        let mid = good + (b - good) / 2;
        if trial(mid)? {
            good = mid;
        } else {
            bad = Some(mid);
        }
    }
    Ok(good)
}

fn max_channels(p: &Params, rep: &mut Report, ir: &[f32], limit: usize) -> anyhow::Result<()> {
    let mut trials = Vec::new();
    let (mut driver_fifo, mut granted, mut workers_fifo) = (false, true, true);
    let mut workers = String::new();
    let best = search_max(limit, |n| {
        let mut ok = false;
        for attempt in 1..=p.attempts {
            let mut rig = Rig::new(p, n, ir, LatePolicy::PartialSum)?;
            let r = run_realtime(p, &mut rig, true)?;
            ok = r.late == 0;
            driver_fifo |= r.driver_fifo;
            granted &= rig.conv.stats().realtime_granted;
            workers_fifo &= rig.workers_fifo;
            workers.clone_from(&rig.workers);
            let verdict = if ok {
                "ok".to_string()
            } else {
                format!(
                    "LATE after {:.2} s ({} past deadline, {} engine late periods, {} stalled, \
                     {} waits)",
                    r.callbacks as f64 * p.block as f64 / f64::from(p.rate),
                    r.late_deadline,
                    r.late_engine,
                    r.stalled,
                    r.waits
                )
            };
            eprintln!(
                "sluice max-ch    ir {:7}: {n:4} channels, attempt {attempt}: {verdict} (p99 {:.1}% max {:.1}%, {})",
                ir.len(),
                r.p99,
                r.max,
                rig.workers
            );
            trials.push((n, ok, r.late_deadline, r.late_engine));
            if ok {
                break;
            }
        }
        Ok(ok)
    })?;
    let trial_text = trials
        .iter()
        .map(|(n, ok, _, _)| format!("{n}{}", if *ok { "" } else { "!" }))
        .collect::<Vec<_>>()
        .join(" ");
    rep.record(
        p,
        Mode::MaxChannels,
        serde_json::json!({
            "mode": "max-channels", "ir_len": ir.len(), "channels": best, "max_channels": best,
            "limit": limit, "driver_fifo": driver_fifo, "realtime_granted": granted,
            "workers": workers, "workers_fifo": workers_fifo, "trials": trials,
            "trial_counts": trial_text,
        }),
    );
    Ok(())
}

/// Runs `sluice bench convolve`.
pub fn run(args: BenchConvolveArgs) -> anyhow::Result<()> {
    let ir_lens = args.ir_lens.clone().unwrap_or_else(|| {
        if args.quick {
            vec![1 << 14, 1 << 16]
        } else {
            vec![1 << 14, 1 << 16, 1 << 18, 1 << 19]
        }
    });
    let seconds = args.seconds.unwrap_or(if args.quick { 1.0 } else { 3.0 });
    if !(seconds > 0.0 && seconds.is_finite()) {
        anyhow::bail!("--seconds must be a positive number of seconds, got {seconds}");
    }
    if args.channels == 0 || args.max_channels_limit == 0 || args.rate == 0 {
        anyhow::bail!("--channels, --max-channels-limit and --rate must be at least 1");
    }
    if let Some(bad) = ir_lens.iter().find(|&&l| l == 0) {
        anyhow::bail!("--ir-lens: an impulse response length must be at least 1, got {bad}");
    }
    let fifo = !args.no_fifo;
    let p = Params {
        block: args.block,
        rate: args.rate,
        seconds,
        fifo,
        sched: args.scheduling,
        partitioning: args.partitioning.clone(),
        attempts: args.attempts.max(1),
        strict: args.strict,
        noise: make_noise(),
    };
    eprintln!(
        "sluice bench convolve: block {}, {} Hz, {} channels, {seconds} s per point, {:?} scheduling\n{}",
        p.block,
        p.rate,
        args.channels,
        p.sched,
        machine_description()
    );
    let mut rep = Report::new(args.json);
    for &len in &ir_lens {
        let ir = make_ir(len);
        for mode in &args.modes {
            match mode {
                Mode::Offline => offline(&p, &mut rep, &ir, args.channels)?,
                Mode::Realtime => realtime(&p, &mut rep, &ir, args.channels)?,
                Mode::MaxChannels => max_channels(&p, &mut rep, &ir, args.max_channels_limit)?,
            }
        }
    }
    crate::report::results_dir(&args.out)?;
    let mut text = String::new();
    for (name, table) in [
        ("offline", &rep.offline),
        ("realtime", &rep.realtime),
        ("max_channels", &rep.max_channels),
    ] {
        if table.rows.is_empty() {
            continue;
        }
        let csv = args.out.join(format!("{name}.csv"));
        let json = args.out.join(format!("{name}.json"));
        table
            .write_csv(&csv)
            .with_context(|| format!("writing {}", csv.display()))?;
        table
            .write_json(&json, &format!("convolve/{name}"))
            .with_context(|| format!("writing {}", json.display()))?;
        text.push_str(&format!(
            "\n{name} (block {}, {} Hz):\n{}",
            p.block,
            p.rate,
            table.render()
        ));
    }
    text.push_str(&format!("\nresults written to {}\n", args.out.display()));
    if args.json {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_max_finds_the_edge() {
        for edge in [0, 1, 5, 64, 100, 1000] {
            let found = search_max(1024, |n| Ok(n <= edge)).unwrap();
            assert!(
                found <= edge && edge - found <= (edge / 32).max(1),
                "edge {edge} found {found}"
            );
        }
        assert_eq!(search_max(1024, |_| Ok(true)).unwrap(), 1024);
        assert_eq!(search_max(100, |_| Ok(true)).unwrap(), 100);
    }

    #[test]
    fn inputs_stay_inside_the_noise() {
        let noise = make_noise();
        let mut ins = Vec::new();
        for index in [0, 1, 1023, 123_456] {
            fill_inputs(&mut ins, &noise, index, 64, 300);
            assert_eq!(ins.len(), 300);
            assert!(ins.iter().all(|s| s.len() == 64));
        }
    }

    #[test]
    fn thread_sched_reads_this_thread() {
        let tid = task_ids().into_iter().next().unwrap();
        let (policy, _) = thread_sched(tid).unwrap();
        assert!(policy >= 0);
    }

    #[test]
    fn offline_and_realtime_run_briefly() {
        let p = Params {
            block: 64,
            rate: 48000,
            seconds: 0.05,
            fifo: false,
            sched: Sched::Threaded,
            partitioning: Partitioning::Auto,
            attempts: 1,
            strict: false,
            noise: make_noise(),
        };
        let mut rep = Report::new(false);
        let ir = make_ir(4096);
        offline(&p, &mut rep, &ir, 2).unwrap();
        realtime(&p, &mut rep, &ir, 2).unwrap();
        assert_eq!(rep.offline.rows.len(), 1);
        assert_eq!(rep.realtime.rows.len(), 1);
    }
}
