//! `sluice bench console`: what watching a graph in the web console costs the graph.
//!
//! A c32 stream paced at `--rate` (10 M samples/s) by a real-time throttle (`rt_throttle`,
//! source mode: it drops what downstream cannot take in time, so a late graph shows as lost
//! items) through a frequency-translating decimating FIR to a checksum sink. Each round runs
//! it once plainly (no statistics, no monitor, no console) and once as `sluice run --http`
//! does, with the console serving and three clients reading its server-sent event streams, as
//! an open page would: a spectrum tap and a waterfall tap on the paced c32 edge at `--frame-rate` (25) frames
//! per second and the statistics stream.
//!
//! CPU is measured per thread, so the console's own work is not charged to the graph: the
//! process's CPU clock over the run (it counts threads that have ended, such as the graph's),
//! less the CPU of the console's threads (`console`, `console-conn`) and of the bench's client
//! threads over the same span, each read from its thread's CPU clock (the clock id
//! `pthread_getcpuclockid` makes from a thread id; nanosecond resolution, where the tick
//! counts of `/proc/self/task/*/stat` are 10 ms). Every thread so excluded is alive at both
//! readings, so none of its CPU escapes the subtraction. Both runs include the bench's main
//! thread, which runs the graph's supervisor.
//!
//! Reported: late (dropped) items, which must be 0; the graph's CPU per item without and with
//! the console and their ratio (the target is 1.02 or less); the time inside the nodes' `work`
//! per item, the throttle's left out, and its ratio (the throttle polls its clock in source
//! mode, so on an otherwise idle machine the graph's thread uses a whole core either way and
//! the CPU ratio alone cannot show a cost; the work time can); the console's own CPU; and the
//! sink's CRC32C in both runs, which must be equal: the console changes nothing in the output.

use crate::report::{machine_description, median, results_dir, Table};
use sluice_blocks::blocks::{Checksum, ChecksumStats};
use sluice_runtime::{Monitor, Progress, RunOptions, Scheduler, StopHandle};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Arguments of `sluice bench console`.
#[derive(clap::Args, Debug)]
pub struct BenchConsoleArgs {
    /// Seconds of stream per run.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// The paced edge's rate, c32 items per second.
    #[arg(long, default_value_t = 10e6)]
    rate: f64,
    /// Frames per second of each tap (the page's default is 25).
    #[arg(long, default_value_t = 25)]
    frame_rate: u32,
    /// FFT size of each tap.
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Threads that run the graph's nodes (0: one per node). One (the default scheduler's
    /// start) keeps the figure to the nodes' work: with a thread per node on a busy machine,
    /// the time threads spin waiting for each other varies more than the effect measured.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Rounds (one run without and one with the console each); medians are reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Where the table (CSV, JSON) goes.
    #[arg(long, default_value = "target/bench/console")]
    out: PathBuf,
}

/// The graph: a tone, a head that sets the run's length, the real-time
/// throttle (`dev`, whose output is the watched c32 edge), the DSP and a checksum sink (replaced
/// in code by one whose figures the bench can read).
fn graph_text(args: &BenchConsoleArgs, items: u64) -> String {
    format!(
        r#"
[[node]]
name = "tone"
type = "signal_source"
params = {{ item = "c32", frequency = 1250000.0, amplitude = 0.5, sample_rate = {rate} }}

[[node]]
name = "head"
type = "head"
params = {{ item = "c32", items = {items} }}

[[node]]
name = "dev"
type = "rt_throttle"
params = {{ item = "c32", rate = {rate}, mode = "source" }}

[[node]]
name = "ddc"
type = "xlating_fir"
params = {{ decimation = 4, center = 1000000.0, sample_rate = {rate}, design = "lowpass", num_taps = 64, cutoff = 0.1 }}

[[node]]
name = "sink"
type = "checksum"
params = {{ item = "c32" }}

[[edge]]
from = "ddc.out"
to = "sink.in"

[[edge]]
from = "tone.out"
to = "head.in"

[[edge]]
from = "head.out"
to = "dev.in"

[[edge]]
from = "dev.out"
to = "ddc.in"
"#,
        rate = args.rate
    )
}

/// What one run measured.
struct RunFigures {
    /// CPU of the graph's threads (and the supervising main thread), seconds.
    graph_cpu: f64,
    /// CPU of the console's threads, seconds (0 without it).
    console_cpu: f64,
    /// CPU of the bench's stream clients, seconds (0 without them).
    client_cpu: f64,
    /// Time inside `work` of every node but the throttle, seconds: the graph's work itself.
    /// The throttle is left out because in source mode it polls its clock between items, so
    /// its thread is never idle and `graph_cpu` is a whole core with or without the console.
    work_busy: f64,
    /// Items the throttle dropped because the graph was late.
    late: u64,
    /// Items through the throttle.
    items: u64,
    /// What the sink saw.
    sink: ChecksumStats,
    /// Tap frames received per second per tap (0 without the console).
    frames_per_s: f64,
    wall: f64,
}

/// Runs the benchmark.
pub fn run(args: BenchConsoleArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.seconds > 0.0 && args.rate > 0.0,
        "--seconds and --rate must be positive"
    );
    anyhow::ensure!(
        (1..=50).contains(&args.frame_rate),
        "--frame-rate must be 1 to 50 (the console's bounds)"
    );
    let out = results_dir(&args.out)?;
    let items = (args.seconds * args.rate).round() as u64;
    let mut plain = Vec::new();
    let mut watched = Vec::new();
    for round in 0..args.runs.max(1) {
        // Alternating, so that a slow spell of the shared machine hits both sides alike.
        let a = run_once(&args, items, false)?;
        let b = run_once(&args, items, true)?;
        println!(
            "# round {}: graph CPU {:.1} / {:.1} ns per item without / with the console ({:.3}x), work {:.1} / {:.1} ns per item ({:.3}x), console {:.1} ns per item, late {} / {}",
            round + 1,
            1e9 * a.graph_cpu / a.items as f64,
            1e9 * b.graph_cpu / b.items as f64,
            b.graph_cpu / a.graph_cpu,
            1e9 * a.work_busy / a.items as f64,
            1e9 * b.work_busy / b.items as f64,
            b.work_busy / a.work_busy,
            1e9 * b.console_cpu / b.items as f64,
            a.late,
            b.late
        );
        plain.push(a);
        watched.push(b);
    }
    let per_item = |runs: &[RunFigures], f: &dyn Fn(&RunFigures) -> f64| {
        median(
            &runs
                .iter()
                .map(|r| 1e9 * f(r) / r.items as f64)
                .collect::<Vec<_>>(),
        )
    };
    let late: u64 = plain.iter().chain(&watched).map(|r| r.late).sum();
    let sinks: Vec<ChecksumStats> = plain.iter().chain(&watched).map(|r| r.sink).collect();
    let identical = sinks.windows(2).all(|w| w[0] == w[1]);
    let ratio = median(
        &plain
            .iter()
            .zip(&watched)
            .map(|(a, b)| b.graph_cpu / a.graph_cpu)
            .collect::<Vec<_>>(),
    );
    let work_ratio = median(
        &plain
            .iter()
            .zip(&watched)
            .map(|(a, b)| b.work_busy / a.work_busy)
            .collect::<Vec<_>>(),
    );
    let mut table = Table::new(&[
        "run",
        "graph_cpu_ns_per_item",
        "graph_cpu_%_core",
        "work_ns_per_item",
        "console_cpu_ns_per_item",
        "console_cpu_%_core",
        "clients_cpu_%_core",
        "tap_frames_per_s",
        "late_items",
        "sink_crc32c",
    ]);
    for (name, runs) in [("without console", &plain), ("with console", &watched)] {
        let core = |f: &dyn Fn(&RunFigures) -> f64| {
            median(
                &runs
                    .iter()
                    .map(|r| 100.0 * f(r) / r.wall)
                    .collect::<Vec<_>>(),
            )
        };
        table.push(vec![
            name.into(),
            format!("{:.2}", per_item(runs, &|r| r.graph_cpu)),
            format!("{:.1}", core(&|r| r.graph_cpu)),
            format!("{:.2}", per_item(runs, &|r| r.work_busy)),
            format!("{:.2}", per_item(runs, &|r| r.console_cpu)),
            format!("{:.1}", core(&|r| r.console_cpu)),
            format!("{:.1}", core(&|r| r.client_cpu)),
            format!(
                "{:.1}",
                median(&runs.iter().map(|r| r.frames_per_s).collect::<Vec<_>>())
            ),
            runs.iter().map(|r| r.late).sum::<u64>().to_string(),
            format!("{:#010x}", runs[0].sink.crc32c),
        ]);
    }
    println!("# {}", machine_description());
    println!(
        "# c32 at {} M samples/s for {} s ({} items) through rt_throttle -> xlating_fir (64 taps, /4) -> checksum on {}; with the console: spectrum + waterfall taps of {} bins at {}/s and the statistics stream; {} rounds, medians",
        args.rate / 1e6,
        args.seconds,
        items,
        match args.threads {
            0 => "a thread per node".to_string(),
            n => format!("{n} graph thread(s)"),
        },
        args.size,
        args.frame_rate,
        plain.len()
    );
    print!("{}", table.render());
    println!(
        "# time in the nodes' work (all but the throttle) per item with / without the console: {work_ratio:.3}"
    );
    println!(
        "# graph CPU per item with / without the console: {ratio:.3} (target <= 1.02); late items: {late} (must be 0); sink output {}: {}",
        if identical { "bit-identical in every run" } else { "DIFFERS between runs" },
        sinks[0].summary()
    );
    table.write_csv(&out.join("console.csv"))?;
    table.write_json(&out.join("console.json"), "console")?;
    anyhow::ensure!(
        identical,
        "the sink's output differed between runs: {:?}",
        sinks
    );
    Ok(())
}

/// One run, plain or watched.
fn run_once(args: &BenchConsoleArgs, items: u64, console: bool) -> anyhow::Result<RunFigures> {
    let registry = sluice_registry::standard_registry();
    let loaded =
        sluice_graph::load_with(&graph_text(args, items), "console bench", &registry, &[])?;
    let mut graph = loaded.graph;
    let (sink, crc) = Checksum::<num_complex::Complex32>::new(None);
    let sink_id = graph
        .node_id("sink")
        .ok_or_else(|| anyhow::anyhow!("the bench graph has no sink"))?;
    graph.replace_boxed(sink_id, Box::new(sink))?;
    let mut opts = RunOptions {
        scheduler: match args.threads {
            0 => Scheduler::ThreadPerNode,
            n => Scheduler::Pooled(n),
        },
        ..RunOptions::default()
    };
    let mut watch = None;
    if console {
        let (progress, monitor, stop) = (Progress::new(), Monitor::new(), StopHandle::new());
        let server = sluice_web::Console::start(
            sluice_web::ConsoleOptions {
                bind: "127.0.0.1:0".parse()?,
                token: None,
            },
            sluice_web::RunHandles {
                control: graph.control_handle(),
                stop: stop.clone(),
                progress: progress.clone(),
                monitor: monitor.clone(),
                title: "console bench".into(),
            },
        )?;
        let clients = Clients::start(&server, &monitor, args)?;
        opts.progress = Some(progress);
        opts.monitor = Some(monitor);
        opts.stop = Some(stop);
        watch = Some((server, clients));
    }
    let excluded_before = excluded_cpu();
    let process_before = sluice_os::process_cpu_time();
    let report = graph.run(&opts)?;
    let process_after = sluice_os::process_cpu_time();
    let excluded_after = excluded_cpu();
    let (mut console_cpu, mut client_cpu) = (0.0, 0.0);
    for (tid, (name, after)) in &excluded_after {
        let before = excluded_before.get(tid).map_or(0.0, |(_, t)| *t);
        if name.starts_with(CLIENT_THREAD) {
            client_cpu += after - before;
        } else {
            console_cpu += after - before;
        }
    }
    // Threads that were excluded at the start but are gone now took CPU we can no longer
    // separate: refuse the figure rather than charge it to the graph.
    if let Some((tid, (name, _))) = excluded_before
        .iter()
        .find(|(tid, _)| !excluded_after.contains_key(tid))
    {
        anyhow::bail!("thread {tid} ({name}) ended during the run; its CPU cannot be separated");
    }
    let frames_per_s = match watch {
        Some((server, clients)) => {
            let fps = clients.finish(report.wall.as_secs_f64())?;
            drop(server);
            // The connection threads end on their own once their clients are gone; the next
            // run must not find them still there.
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while !excluded_cpu().is_empty() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            fps
        }
        None => 0.0,
    };
    let dev = report
        .node("dev")
        .ok_or_else(|| anyhow::anyhow!("no dev node in the report"))?;
    let sink = *crc
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let total = (process_after - process_before).as_secs_f64();
    let work_busy = report
        .nodes
        .iter()
        .filter(|n| n.name != "dev")
        .map(|n| n.busy.as_secs_f64())
        .sum();
    Ok(RunFigures {
        graph_cpu: total - console_cpu - client_cpu,
        console_cpu,
        client_cpu,
        work_busy,
        late: dev.items_in - dev.items_out,
        items: dev.items_in,
        sink,
        frames_per_s,
        wall: report.wall.as_secs_f64(),
    })
}

/// The name of the bench's stream-reading threads.
const CLIENT_THREAD: &str = "bench-client";

/// `tid -> (thread name, CPU seconds)` of the console's threads and the bench's clients.
fn excluded_cpu() -> std::collections::HashMap<u32, (String, f64)> {
    let mut found = std::collections::HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return found;
    };
    for entry in dir.flatten() {
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(name) = std::fs::read_to_string(entry.path().join("comm")) else {
            continue;
        };
        let name = name.trim().to_string();
        if name.starts_with("console") || name.starts_with(CLIENT_THREAD) {
            if let Some(cpu) = thread_cpu(tid) {
                found.insert(tid, (name, cpu));
            }
        }
    }
    found
}

/// CPU seconds of thread `tid` of this process, from its CPU clock.
fn thread_cpu(tid: u32) -> Option<f64> {
    // The kernel's encoding of a thread's scheduler CPU clock (what glibc's
    // pthread_getcpuclockid returns): the complemented thread id shifted by 3, then
    // CPUCLOCK_PERTHREAD (4) | CPUCLOCK_SCHED (2).
    let clock = (!(tid as libc::clockid_t) << 3) | 6;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call; an unknown or
    // ended thread's clock makes the call fail with EINVAL, which is checked.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

/// The bench's stream clients: two taps (spectrum, waterfall) and the statistics stream.
struct Clients {
    stop: Arc<AtomicBool>,
    frames: Arc<AtomicU64>,
    threads: Vec<std::thread::JoinHandle<anyhow::Result<()>>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Clients {
    fn start(
        server: &sluice_web::Console,
        monitor: &Monitor,
        args: &BenchConsoleArgs,
    ) -> anyhow::Result<Clients> {
        let stop = Arc::new(AtomicBool::new(false));
        let frames = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let tap = |view: &str| {
            serde_json::json!({"tap": {"node": "dev", "port": "out", "view": view,
                "size": args.size, "rate": args.frame_rate}})
        };
        let bodies = [
            (tap("spectrum"), true),
            (tap("waterfall"), true),
            (serde_json::json!({"stats": true}), false),
        ];
        let mut threads = Vec::new();
        for (i, (body, counted)) in bodies.into_iter().enumerate() {
            let (addr, token) = (server.addr(), server.token().to_string());
            let (stop, frames, monitor) = (stop.clone(), frames.clone(), monitor.clone());
            let errors = errors.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("{CLIENT_THREAD}{i}"))
                    .spawn(move || {
                        let r = read_stream(addr, &token, &body, &monitor, &stop, |_| {
                            if counted {
                                frames.fetch_add(1, Ordering::Relaxed);
                            }
                        });
                        if let Err(e) = &r {
                            errors
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .push(e.to_string());
                        }
                        r
                    })?,
            );
        }
        Ok(Clients {
            stop,
            frames,
            threads,
            errors,
        })
    }

    /// Ends the streams; answers the tap frames per second per tap over `wall` seconds.
    fn finish(self, wall: f64) -> anyhow::Result<f64> {
        let frames = self.frames.load(Ordering::Relaxed);
        self.stop.store(true, Ordering::Release);
        for t in self.threads {
            t.join()
                .map_err(|_| anyhow::anyhow!("a stream client panicked"))??;
        }
        let errors = self
            .errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        anyhow::ensure!(errors.is_empty(), "stream clients: {}", errors.join("; "));
        Ok(frames as f64 / 2.0 / wall)
    }
}

/// Waits until the run's edges exist, opens a stream, and hands on each event's data (a JSON
/// object) until `stop`.
fn read_stream(
    addr: SocketAddr,
    token: &str,
    body: &serde_json::Value,
    monitor: &Monitor,
    stop: &AtomicBool,
    mut line: impl FnMut(&[u8]),
) -> anyhow::Result<()> {
    // The taps need the run's edges, which exist once the run has started; polling the
    // monitor here (not the server) keeps refused connections out of the measurement.
    while monitor.edge("dev", "out").is_none() {
        if stop.load(Ordering::Acquire) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut stream = TcpStream::connect(addr)?;
    // Short reads, so that `stop` is noticed between frames.
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    let body = body.to_string();
    write!(
        stream,
        "POST /api/stream HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut reader = BufReader::new(stream);
    let mut text = Vec::new();
    reader.read_until(b'\n', &mut text)?;
    anyhow::ensure!(
        text.starts_with(b"HTTP/1.1 200"),
        "the console answered {}",
        String::from_utf8_lossy(&text).trim()
    );
    // The rest of the head.
    loop {
        text.clear();
        reader.read_until(b'\n', &mut text)?;
        if text == b"\r\n" || text.is_empty() {
            break;
        }
    }
    text.clear();
    // `read_until` keeps what it read before a timeout, so a line split by one is whole later.
    while !stop.load(Ordering::Acquire) {
        match reader.read_until(b'\n', &mut text) {
            Ok(0) => break,
            Ok(_) if text.ends_with(b"\n") => {
                // One `data:` line per event (`event:` lines, keep-alive comments and the
                // blank lines between events are the framing).
                if let Some(data) = text.strip_prefix(b"data: ") {
                    line(data);
                }
                text.clear();
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
