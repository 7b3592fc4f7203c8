//! `sluice bench live`: `sluice live convolve` against jconvolver on one JACK server (dummy
//! backend, real time), both reading the same jconvolver configuration: N independent channels,
//! one IR of `--ir-len` frames each, a noise generator on every input.
//!
//! For a ladder of channel counts, each engine runs `--seconds` (after 1 s of warm-up) and a
//! trial passes when, for sluice, no period was late (the engine waited for a partition level;
//! jconvolver has no such counter) and JACK reported no more xruns than in a baseline run of
//! the same length with no engine (on a shared machine the dummy backend's timer misses
//! periods by itself).
//! CPU per period is the sum of the thread clocks (`/proc/PID/task/*/schedstat`) of every
//! thread of the engine's processes, divided by the periods the server ran. The latency is the
//! capture latency JACK reports on the engine's first output (its input's is 0). jconvolver
//! takes at most 64 inputs and outputs per instance and sluice 256 ports per direction, so the
//! channels are split over as many instances as needed.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use sluice_audio::jack::{self, AudioOut, Client, Control, Port, ProcessScope};
use sluice_audio::{open_client, DummyServer};

use crate::report::{machine_description, results_dir, Table};

/// Arguments of `sluice bench live`.
#[derive(clap::Args, Debug)]
pub struct BenchLiveArgs {
    /// Impulse response length in frames.
    #[arg(long, default_value_t = 65536)]
    pub ir_len: usize,
    /// JACK period in frames.
    #[arg(long, default_value_t = 64)]
    pub period: u32,
    /// Sample rate.
    #[arg(long, default_value_t = 48000)]
    pub rate: u32,
    /// Seconds each trial runs (after 1 s of warm-up).
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Channel counts to try, ascending; each engine stops at its first failure.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "16,32,64,128,192,256,320,384,448,512"
    )]
    pub channels: Vec<usize>,
    /// Channels of the CPU-per-period comparison, run whatever the ladder found.
    #[arg(long, default_value_t = 64)]
    pub cpu_channels: usize,
    /// The jconvolver command.
    #[arg(long, default_value = "jconvolver")]
    pub jconvolver: PathBuf,
    /// Directory for the CSV and JSON results.
    #[arg(long, default_value = "target/bench/live")]
    pub out: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Engine {
    Sluice,
    Jconvolver,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Sluice => "sluice",
            Engine::Jconvolver => "jconvolver",
        }
    }

    fn per_instance(self) -> usize {
        match self {
            Engine::Sluice => 256,
            Engine::Jconvolver => 64,
        }
    }
}

struct Trial {
    channels: usize,
    instances: usize,
    late: u64,
    xruns: u64,
    cpu_us_per_period: f64,
    period_us: f64,
    latency: u32,
    /// Xruns the server had with no engine in as long a run.
    allowed_xruns: u64,
}

impl Trial {
    fn ok(&self) -> bool {
        self.late == 0 && self.xruns <= self.allowed_xruns
    }
}

struct Monitor {
    xruns: Arc<AtomicU64>,
}

impl jack::NotificationHandler for Monitor {
    fn xrun(&mut self, _: &Client) -> Control {
        self.xruns.fetch_add(1, Ordering::Relaxed);
        Control::Continue
    }
}

struct Noise {
    port: Port<AudioOut>,
    state: u32,
}

impl jack::ProcessHandler for Noise {
    fn process(&mut self, _: &Client, ps: &ProcessScope) -> Control {
        for v in self.port.as_mut_slice(ps) {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 17;
            self.state ^= self.state << 5;
            *v = (self.state as f32 / 4_294_967_296.0 - 0.5) * 0.1;
        }
        Control::Continue
    }
}

/// CPU time of every thread of `pid`, in ns (first field of each thread's schedstat).
fn process_cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn write_ir(path: &Path, len: usize, rate: u32) -> anyhow::Result<()> {
    let mut s = 12345u32;
    let ir: Vec<f32> = (0..len)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / 4_294_967_296.0 - 0.5) * (-(i as f32) / (len as f32 / 6.0)).exp()
        })
        .collect();
    let mut w = sluice_formats::wav::WavWriter::create(
        path,
        1,
        Some(rate),
        sluice_formats::wav::Encoding::Float(32),
    )?;
    w.write(&ir)?;
    w.finish()?;
    Ok(())
}

/// A jconvolver configuration for `channels` independent channels reading `ir`.
fn config(
    dir: &Path,
    name: &str,
    channels: usize,
    ir_len: usize,
    period: u32,
) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("{name}.conf"));
    let mut f = std::fs::File::create(&path)?;
    writeln!(
        f,
        "# {channels} independent channels, one {ir_len}-frame IR each"
    )?;
    writeln!(f, "/convolver/new {channels} {channels} {period} {ir_len}")?;
    for c in 1..=channels {
        writeln!(f, "/impulse/read {c} {c} 1 0 0 0 1 ir.wav")?;
    }
    Ok(path)
}

struct Instances {
    children: Vec<(Child, PathBuf)>,
}

impl Instances {
    fn interrupt(&mut self) {
        for (c, _) in &self.children {
            // SAFETY: kill(2) on the pid of our own, not yet reaped child.
            unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGINT) };
        }
        for (c, _) in &mut self.children {
            let deadline = Instant::now() + Duration::from_secs(10);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Instances {
    fn drop(&mut self) {
        for (c, _) in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn run_trial(
    args: &BenchLiveArgs,
    engine: Engine,
    channels: usize,
    dir: &Path,
    server: &DummyServer,
    client: &Client,
    xruns: &AtomicU64,
) -> anyhow::Result<Trial> {
    let per = engine.per_instance();
    let instances = channels.div_ceil(per);
    let mut running = Instances {
        children: Vec::new(),
    };
    let mut names = Vec::new();
    for k in 0..instances {
        let n = per.min(channels - k * per);
        let name = format!("{}{k}", &engine.name()[..2]);
        let conf = config(dir, &name, n, args.ir_len, args.period)?;
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log)?;
        let mut cmd = match engine {
            Engine::Sluice => {
                let mut c = Command::new(std::env::current_exe()?);
                c.args(["live", "convolve"]).arg(&conf);
                c.args(["--server", server.name(), "--name", &name, "--stats", "0"]);
                c
            }
            Engine::Jconvolver => {
                let mut c = Command::new(&args.jconvolver);
                c.args(["-s", server.name(), "-N", &name]).arg(&conf);
                c
            }
        };
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out))
            .spawn()
            .with_context(|| {
                format!("starting {} (install it: scripts/setup.sh)", engine.name())
            })?;
        running.children.push((child, log));
        names.push((name, n));
    }
    // Wait for every instance's ports, then feed noise to every input.
    let deadline = Instant::now() + Duration::from_secs(300);
    for (name, n) in &names {
        let last = format!("{name}:out-{n}");
        while client.port_by_name(&last).is_none() {
            for (c, log) in &mut running.children {
                if let Ok(Some(status)) = c.try_wait() {
                    bail!(
                        "{} exited ({status}): {}",
                        engine.name(),
                        std::fs::read_to_string(log).unwrap_or_default()
                    );
                }
            }
            if Instant::now() > deadline {
                bail!("{} did not show port {last} in 300 s", engine.name());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        for c in 1..=*n {
            client
                .connect_ports_by_name("bench-noise:noise", &format!("{name}:in-{c}"))
                .with_context(|| format!("connecting noise to {name}:in-{c}"))?;
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    let pids: Vec<u32> = running.children.iter().map(|(c, _)| c.id()).collect();
    let cpu0: u64 = pids.iter().map(|&p| process_cpu_ns(p)).sum();
    let x0 = xruns.load(Ordering::Relaxed);
    let f0 = client.frame_time();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(args.seconds));
    let cpu1: u64 = pids.iter().map(|&p| process_cpu_ns(p)).sum();
    let x1 = xruns.load(Ordering::Relaxed);
    let f1 = client.frame_time();
    let wall = t0.elapsed().as_secs_f64();
    let periods = (f1.wrapping_sub(f0) / args.period).max(1);
    let latency = client
        .port_by_name(&format!("{}:out-1", names[0].0))
        .map_or(0, |p| p.get_latency_range(jack::LatencyType::Capture).1);
    running.interrupt();
    let mut late = 0;
    if engine == Engine::Sluice {
        for (_, log) in &running.children {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let line = text
                .lines()
                .rfind(|l| l.contains("stopped by"))
                .with_context(|| format!("no final statistics from sluice: {text}"))?;
            late += line
                .split(", ")
                .find_map(|part| part.strip_suffix(" late")?.parse::<u64>().ok())
                .with_context(|| format!("no late count in: {line}"))?;
        }
    }
    Ok(Trial {
        channels,
        instances,
        late,
        xruns: x1 - x0,
        cpu_us_per_period: (cpu1 - cpu0) as f64 / 1e3 / periods as f64,
        period_us: wall * 1e6 / periods as f64,
        latency,
        allowed_xruns: 0,
    })
}

/// Runs `sluice bench live`.
pub fn run(args: BenchLiveArgs) -> anyhow::Result<()> {
    let dir = results_dir(&args.out)?;
    let work = tempdir_in(&dir)?;
    write_ir(&work.join("ir.wav"), args.ir_len, args.rate)?;
    let server_name = format!("sluice-bench-live-{}", std::process::id());
    let server =
        DummyServer::start_with(&server_name, &["-p", "4096"], args.rate, args.period, &[])?;
    let client = open_client("bench-noise", Some(server.name()))?;
    let port = client.register_port("noise", AudioOut::default())?;
    let xruns = Arc::new(AtomicU64::new(0));
    let active = client.activate_async(
        Monitor {
            xruns: Arc::clone(&xruns),
        },
        Noise { port, state: 1 },
    )?;
    println!("# sluice bench live: {}", machine_description());
    println!(
        "# JACK dummy backend, {} Hz, period {}, IR {} frames, {} s per trial; jconvolver: at \
         most 64 channels per instance, sluice: 256",
        args.rate, args.period, args.ir_len, args.seconds
    );
    let mut table = Table::new(&[
        "engine",
        "channels",
        "instances",
        "late_periods",
        "xruns",
        "cpu_us_per_period",
        "cpu_share_of_period_%",
        "measured_period_us",
        "latency_frames",
        "ok",
    ]);
    // What the server does with no engine: on a shared machine the dummy backend's own timer
    // misses periods now and then, and a trial is judged against that.
    std::thread::sleep(Duration::from_secs(1));
    let x0 = xruns.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs_f64(args.seconds));
    let baseline = xruns.load(Ordering::Relaxed) - x0;
    println!(
        "# baseline: {baseline} xruns in {} s with no engine running; a trial passes with no late \
         period (sluice's own count) and at most {baseline} xruns",
        args.seconds
    );
    let mut best = [0usize; 2];
    let mut at64 = [f64::NAN; 2];
    let mut lat = [0u32; 2];
    for (e, engine) in [Engine::Sluice, Engine::Jconvolver].into_iter().enumerate() {
        for &c in &args.channels {
            let mut t = run_trial(&args, engine, c, &work, &server, active.as_client(), &xruns)?;
            t.allowed_xruns = baseline;
            let share = 100.0 * t.cpu_us_per_period / t.period_us;
            println!(
                "{:>10} {:>4} ch ({} inst): late {:>4}, xruns {:>3}, CPU {:>8.1} us/period \
                 ({share:.0}% of one core), period {:.0} us, latency {} -> {}",
                engine.name(),
                t.channels,
                t.instances,
                t.late,
                t.xruns,
                t.cpu_us_per_period,
                t.period_us,
                t.latency,
                if t.ok() { "ok" } else { "FAILED" }
            );
            table.push(vec![
                engine.name().into(),
                t.channels.to_string(),
                t.instances.to_string(),
                t.late.to_string(),
                t.xruns.to_string(),
                format!("{:.2}", t.cpu_us_per_period),
                format!("{share:.1}"),
                format!("{:.1}", t.period_us),
                t.latency.to_string(),
                t.ok().to_string(),
            ]);
            lat[e] = t.latency;
            if !t.ok() {
                break;
            }
            best[e] = c;
        }
    }
    // CPU per period at a fixed channel count, whatever the ladder found.
    for (e, engine) in [Engine::Sluice, Engine::Jconvolver].into_iter().enumerate() {
        let c = args.cpu_channels;
        let mut t = run_trial(&args, engine, c, &work, &server, active.as_client(), &xruns)?;
        t.allowed_xruns = baseline;
        println!(
            "{:>10} {c:>4} ch, CPU comparison: {:.1} us/period, late {}, xruns {}",
            engine.name(),
            t.cpu_us_per_period,
            t.late,
            t.xruns
        );
        at64[e] = t.cpu_us_per_period;
        table.push(vec![
            format!("{} (cpu run)", engine.name()),
            c.to_string(),
            t.instances.to_string(),
            t.late.to_string(),
            t.xruns.to_string(),
            format!("{:.2}", t.cpu_us_per_period),
            format!("{:.1}", 100.0 * t.cpu_us_per_period / t.period_us),
            format!("{:.1}", t.period_us),
            t.latency.to_string(),
            t.ok().to_string(),
        ]);
    }
    drop(active);
    println!();
    print!("{}", table.render());
    println!();
    let ratio = if best[0] == 0 || best[1] == 0 {
        "no ratio: an engine passed no trial (see the xruns against the baseline)".to_string()
    } else {
        format!("{:.2}x", best[0] as f64 / best[1] as f64)
    };
    println!(
        "most channels without a late period or extra xrun: sluice {} / jconvolver {}: {ratio}",
        best[0], best[1]
    );
    println!(
        "CPU per period at {} channels: sluice {:.1} us / jconvolver {:.1} us = {:.2} of \
         jconvolver's",
        args.cpu_channels,
        at64[0],
        at64[1],
        at64[0] / at64[1]
    );
    println!(
        "latency: sluice {} frames, jconvolver {} frames",
        lat[0], lat[1]
    );
    table.write_csv(&dir.join("live.csv"))?;
    table.write_json(&dir.join("live.json"), "live")?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

fn tempdir_in(dir: &Path) -> anyhow::Result<PathBuf> {
    let work = dir.join(format!("work-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    Ok(work)
}
