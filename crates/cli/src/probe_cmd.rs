//! `sluice probe`: the seed's latency and jitter experiment (see `sluice_net::probe`).
//!
//! `origin` and `reflect` are the two roles, one process each, wherever they run (namespaces,
//! machines); `loop` runs the whole loop on this machine with the reflectors as child
//! processes on loopback; `table` puts several runs side by side with what each hop added.

use anyhow::Context;
use clap::{Args, Subcommand};
use sluice_bench::plot::{lines, Series};
use sluice_bench::report::{machine_description, Table};
use sluice_net::probe::{Origin, OriginConfig, OriginRun, Reflector, Relay, Summary};
use sluice_net::TcpOptions;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The probe's roles and reports.
#[derive(Subcommand, Debug)]
pub enum ProbeCommand {
    /// The origin (A): sends packets into the loop at a set rate, takes them back, reports
    /// per-packet latency (mean, jitter, percentiles) and writes CSV, JSON and a PNG.
    Origin(OriginArgs),
    /// A reflector (B, C, …): passes the stream on, a graph `tcp_source -> tcp_sink`.
    Reflect(ReflectArgs),
    /// A byte relay: passes a connection's bytes on both ways unread, optionally delayed (the
    /// floor of a hop on this machine, or a longer link where there is no netem).
    Relay(RelayArgs),
    /// The whole loop on this machine: the origin here and `--reflectors` reflector processes,
    /// all on 127.0.0.1.
    Loop(LoopArgs),
    /// Several runs' JSON summaries side by side, with the latency and jitter each extra hop
    /// added (the seed's table).
    Table(TableArgs),
}

/// What the origin sends and how it reports.
#[derive(Args, Debug, Clone)]
pub struct OriginOpts {
    /// Bytes per packet (one message: a multiple of 8, at least 16).
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// Packets to time (the seed collected 50,000).
    #[arg(long, default_value_t = 50_000)]
    pub count: u64,
    /// Packets sent first at the same rate, checked but not timed (cold caches, fresh queue
    /// pages, TCP's initial window).
    #[arg(long, default_value_t = 100)]
    pub warmup: u64,
    /// Bit rate of packet bytes: `70M`, `1.5G`, `800k`, a number of bits per second, or
    /// `full` (as fast as the loop takes them).
    #[arg(long, default_value = "70M", value_parser = parse_rate)]
    pub rate: Rate,
    /// A CRC32C on every frame the origin sends.
    #[arg(long)]
    pub crc: bool,
    /// After each receive, busy-poll the returning socket this many µs before sleeping.
    #[arg(long, default_value_t = 0)]
    pub origin_spin_us: u64,
    /// Seconds to wait for connections and for a silent peer.
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
    /// Directory for NAME.csv (every packet), NAME.json (the summary) and NAME.png.
    #[arg(long, default_value = "target/probe")]
    pub out: PathBuf,
    /// File name stem of the results.
    #[arg(long, default_value = "probe")]
    pub name: String,
    /// Words for the table and the plot (e.g. "2 machines, 70 Mbit/s").
    #[arg(long)]
    pub label: Option<String>,
    /// Reflectors in the loop (recorded for `sluice probe table`; `loop` sets it).
    #[arg(long, default_value_t = 1)]
    pub hops: u32,
    /// What the hops are, for `sluice probe table`: sluice reflectors or byte relays.
    #[arg(long, value_enum, default_value = "reflector")]
    pub via: Via,
}

/// The kind of process at each hop of a loop.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `sluice probe reflect`: tcp_source -> tcp_sink.
    Reflector,
    /// `sluice probe relay`: bytes passed on unread.
    Relay,
}

impl Via {
    /// The `sluice probe` subcommand of such a hop.
    fn command(self) -> &'static str {
        match self {
            Via::Reflector => "reflect",
            Via::Relay => "relay",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Via::Reflector => "reflector",
            Via::Relay => "relay",
        }
    }
}

/// Arguments of `sluice probe relay`.
#[derive(Args, Debug)]
pub struct RelayArgs {
    /// One side (tcp-listen://host:port or tcp://host:port): the side the stream comes from.
    #[arg(long)]
    pub from: String,
    /// The other side.
    #[arg(long)]
    pub to: String,
    /// Hold every chunk back this many µs, each way.
    #[arg(long, default_value_t = 0)]
    pub delay_us: u64,
    /// Seconds to wait for the connections.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
}

/// A bit rate, or full speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate(pub Option<f64>);

fn parse_rate(s: &str) -> Result<Rate, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("full") || t == "0" {
        return Ok(Rate(None));
    }
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        Some('g' | 'G') => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(Rate(Some(v * mult))),
        _ => Err(format!(
            "'{s}' is not a bit rate (use 70M, 1.5G, 800k, a number of bits per second, or full)"
        )),
    }
}

/// Arguments of `sluice probe origin`.
#[derive(Args, Debug)]
pub struct OriginArgs {
    /// Where the packets go: the first reflector (tcp://host:port or tcp-listen://host:port).
    #[arg(long)]
    pub to: String,
    /// Where they come back from: the last reflector.
    #[arg(long)]
    pub from: String,
    #[command(flatten)]
    pub opts: OriginOpts,
}

/// How a reflector runs.
#[derive(Args, Debug, Clone)]
pub struct ReflectOpts {
    /// Threads of the reflector graph: 1 (tcp_source and tcp_sink on one thread, no hand-off
    /// between threads) or 2 (one each).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub threads: u32,
    /// tcp_sink flush_us: how long committed bytes may wait to be batched.
    #[arg(long, default_value_t = 50)]
    pub flush_us: u64,
    /// tcp_source spin_us: how long to busy-poll the socket after a frame before sleeping.
    #[arg(long, default_value_t = 0)]
    pub spin_us: u64,
    /// tcp_sink frame_bytes (and the tcp_source queue it sizes).
    #[arg(long, default_value_t = 1 << 20)]
    pub frame_bytes: usize,
    /// tcp_sink retention_bytes (its input queue holds half of this at least).
    #[arg(long, default_value_t = 8 << 20)]
    pub retention_bytes: usize,
}

/// Arguments of `sluice probe reflect`.
#[derive(Args, Debug)]
pub struct ReflectArgs {
    /// Where the stream comes from (tcp-listen://host:port or tcp://host:port).
    #[arg(long)]
    pub from: String,
    /// Where it goes.
    #[arg(long)]
    pub to: String,
    /// Seconds to wait for the first connections.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    #[command(flatten)]
    pub opts: ReflectOpts,
}

/// Arguments of `sluice probe loop`.
#[derive(Args, Debug)]
pub struct LoopArgs {
    /// Reflector processes in the loop (1: the seed's two machines, 2: its three).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub reflectors: u32,
    #[command(flatten)]
    pub origin: OriginOpts,
    #[command(flatten)]
    pub reflect: ReflectOpts,
}

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

/// Runs `sluice probe …`.
pub fn run(cmd: ProbeCommand) -> anyhow::Result<()> {
    match cmd {
        ProbeCommand::Origin(a) => origin(a),
        ProbeCommand::Reflect(a) => reflect(a),
        ProbeCommand::Relay(a) => relay(a),
        ProbeCommand::Loop(a) => run_loop(a),
        ProbeCommand::Table(a) => table(a),
    }
}

fn seconds(s: f64, what: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(s).map_err(|_| anyhow::anyhow!("--{what} must be seconds ≥ 0"))
}

fn origin_config(to: String, from: String, o: &OriginOpts) -> anyhow::Result<OriginConfig> {
    Ok(OriginConfig {
        to,
        from,
        size: o.size,
        count: o.count,
        warmup: o.warmup,
        rate: o.rate.0,
        crc: o.crc,
        spin: Duration::from_micros(o.origin_spin_us),
        timeout: seconds(o.timeout, "timeout")?,
        ..OriginConfig::default()
    })
}

fn origin(a: OriginArgs) -> anyhow::Result<()> {
    let origin = Origin::new(origin_config(a.to, a.from, &a.opts)?)?;
    if let Some(addr) = origin.from_addr() {
        println!("origin: packets come back on {addr}");
    }
    let cpu0 = sluice_os::process_cpu_time();
    let run = origin.run()?;
    let cpu = (sluice_os::process_cpu_time() - cpu0).as_secs_f64();
    report(&a.opts, &run, cpu, &[])
}

fn reflect_options(o: &ReflectOpts, timeout: Duration) -> (TcpOptions, TcpOptions) {
    let base = TcpOptions {
        connect_timeout: timeout,
        frame_bytes: o.frame_bytes,
        ..TcpOptions::default()
    };
    let source = TcpOptions {
        spin: Duration::from_micros(o.spin_us),
        ..base.clone()
    };
    let sink = TcpOptions {
        flush: Duration::from_micros(o.flush_us),
        retention_bytes: o.retention_bytes,
        ..base
    };
    (source, sink)
}

fn reflect(a: ReflectArgs) -> anyhow::Result<()> {
    let (source, sink) = reflect_options(&a.opts, seconds(a.timeout, "timeout")?);
    let r = Reflector::new(&a.from, &a.to, source, sink)?;
    // The first line says where it listens, for whoever started it (`sluice probe loop`).
    match (r.from_addr(), r.to_addr()) {
        (Some(f), _) => println!("reflect: listening on {f}"),
        (None, Some(t)) => println!("reflect: listening on {t}"),
        _ => println!("reflect: connecting both ways"),
    }
    let cpu0 = sluice_os::process_cpu_time();
    let report = r.run(a.opts.threads == 1)?;
    let cpu = (sluice_os::process_cpu_time() - cpu0).as_secs_f64();
    let bytes = report.node("from").map_or(0, |n| n.items_out);
    println!(
        "reflect: passed {bytes} bytes in {:.2} s, CPU {cpu:.3} s ({} thread{}, flush {} µs, spin {} µs)",
        report.wall.as_secs_f64(),
        a.opts.threads,
        if a.opts.threads == 1 { "" } else { "s" },
        a.opts.flush_us,
        a.opts.spin_us
    );
    println!("reflect-cpu {cpu:.6} {bytes}");
    Ok(())
}

fn relay(a: RelayArgs) -> anyhow::Result<()> {
    let r = Relay::new(
        &a.from,
        &a.to,
        Duration::from_micros(a.delay_us),
        seconds(a.timeout, "timeout")?,
    )?;
    match (r.from_addr(), r.to_addr()) {
        (Some(f), _) => println!("relay: listening on {f}"),
        (None, Some(t)) => println!("relay: listening on {t}"),
        _ => println!("relay: connecting both ways"),
    }
    let cpu0 = sluice_os::process_cpu_time();
    let st = r.run()?;
    let cpu = (sluice_os::process_cpu_time() - cpu0).as_secs_f64();
    println!(
        "relay: passed {} bytes forward and {} back, CPU {cpu:.3} s (delay {} µs)",
        st.forward, st.back, a.delay_us
    );
    println!("reflect-cpu {cpu:.6} {}", st.forward);
    Ok(())
}

/// Child processes that are killed if the loop ends before they do.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

fn run_loop(a: LoopArgs) -> anyhow::Result<()> {
    // The origin listens both ways; the first reflector connects to its outgoing stream and
    // listens for the next, …, the last connects to the origin's returning stream.
    let listen = "tcp-listen://127.0.0.1:0".to_string();
    let origin = Origin::new(origin_config(listen.clone(), listen, &a.origin)?)?;
    let (out_addr, back_addr) = origin
        .to_addr()
        .zip(origin.from_addr())
        .context("the origin's listeners have no address")?;
    let exe = std::env::current_exe().context("cannot find the sluice executable")?;
    let mut children = Children(Vec::new());
    let mut outputs = Vec::new();
    let mut prev = out_addr.to_string();
    for i in 1..=a.reflectors {
        let r = &a.reflect;
        let to = if i == a.reflectors {
            format!("tcp://{back_addr}")
        } else {
            "tcp-listen://127.0.0.1:0".to_string()
        };
        let mut cmd = Command::new(&exe);
        cmd.args(["probe", a.origin.via.command()])
            .args(["--from", &format!("tcp://{prev}"), "--to", &to])
            .args(["--timeout", &a.origin.timeout.to_string()]);
        if a.origin.via == Via::Reflector {
            cmd.args(["--threads", &r.threads.to_string()])
                .args(["--flush-us", &r.flush_us.to_string()])
                .args(["--spin-us", &r.spin_us.to_string()])
                .args(["--frame-bytes", &r.frame_bytes.to_string()])
                .args(["--retention-bytes", &r.retention_bytes.to_string()]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", exe.display()))?;
        let mut out = BufReader::new(child.stdout.take().context("no reflector stdout")?);
        children.0.push(child);
        let mut line = String::new();
        out.read_line(&mut line)
            .context("reading the reflector's first line")?;
        if i < a.reflectors {
            prev = line
                .trim()
                .split_once(": listening on ")
                .map(|(_, a)| a)
                .with_context(|| format!("reflector {i} said '{}'", line.trim()))?
                .to_string();
        }
        outputs.push(out);
    }
    let mut opts = a.origin.clone();
    opts.hops = a.reflectors;
    let cpu0 = sluice_os::process_cpu_time();
    let run = origin.run()?;
    let cpu = (sluice_os::process_cpu_time() - cpu0).as_secs_f64();
    let mut reflector_cpu = Vec::new();
    for (child, out) in children.0.iter_mut().zip(outputs) {
        let status = child.wait().context("waiting for a reflector")?;
        let mut cpu = None;
        for line in out.lines() {
            let line = line.unwrap_or_default();
            if let Some(rest) = line.strip_prefix("reflect-cpu ") {
                cpu = rest.split(' ').next().and_then(|v| v.parse::<f64>().ok());
            } else {
                println!("  {line}");
            }
        }
        anyhow::ensure!(status.success(), "a reflector failed ({status})");
        reflector_cpu.push(cpu.unwrap_or(f64::NAN));
    }
    report(&opts, &run, cpu, &reflector_cpu)
}

fn rate_words(rate: Option<f64>) -> String {
    match rate {
        None => "full speed".to_string(),
        Some(r) if r >= 1e9 => format!("{} Gbit/s", r / 1e9),
        Some(r) if r >= 1e6 => format!("{} Mbit/s", r / 1e6),
        Some(r) => format!("{} kbit/s", r / 1e3),
    }
}

/// Prints a run's summary and writes its CSV (every packet), JSON (the summary) and PNG.
fn report(
    o: &OriginOpts,
    run: &OriginRun,
    origin_cpu: f64,
    reflector_cpu: &[f64],
) -> anyhow::Result<()> {
    let lat: Vec<f64> = run.samples.iter().map(|s| s.latency_us()).collect();
    let s = Summary::of(&lat).context("no packet came back")?;
    let n = run.samples.len() as f64;
    let label = o.label.clone().unwrap_or_else(|| {
        format!(
            "{} machines ({} {}{}), {}",
            o.hops + 1,
            o.hops,
            o.via.name(),
            if o.hops == 1 { "" } else { "s" },
            rate_words(o.rate.0)
        )
    });
    let achieved = n * o.size as f64 * 8.0 / run.secs.max(1e-9);
    println!("# {}", machine_description());
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
    std::fs::create_dir_all(&o.out)
        .with_context(|| format!("cannot create {}", o.out.display()))?;
    let base = o.out.join(&o.name);
    let mut csv = String::from("seq,sent_us,received_us,latency_us\n");
    for x in &run.samples {
        csv.push_str(&format!(
            "{},{:.3},{:.3},{:.3}\n",
            x.seq,
            x.sent_ns as f64 / 1e3,
            x.received_ns as f64 / 1e3,
            x.latency_us()
        ));
    }
    let csv_path = base.with_extension("csv");
    std::fs::write(&csv_path, csv).with_context(|| format!("writing {}", csv_path.display()))?;
    let json = serde_json::json!({
        "benchmark": "probe",
        "machine": machine_description(),
        "label": label,
        "hops": o.hops,
        "via": o.via.name(),
        "size": o.size,
        "count": o.count,
        "warmup": o.warmup,
        "rate_bps": o.rate.0,
        "crc": o.crc,
        "secs": run.secs,
        "achieved_bps": achieved,
        "frames_back": run.frames_back,
        "summary_us": {
            "packets": s.packets, "mean": s.mean, "std": s.std, "min": s.min, "p50": s.p50,
            "p99": s.p99, "p999": s.p999, "max": s.max,
        },
        "origin_cpu_s": origin_cpu,
        "reflector_cpu_s": reflector_cpu,
        "peers": [run.peers.0, run.peers.1],
    });
    let json_path = base.with_extension("json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&json)?)
        .with_context(|| format!("writing {}", json_path.display()))?;
    let png = base.with_extension("png");
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

/// One run's summary as `table` reads it back.
struct Row {
    label: String,
    via: String,
    hops: u64,
    size: u64,
    rate: Option<f64>,
    s: Summary,
}

fn read_row(path: &Path) -> anyhow::Result<Row> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let bad = || anyhow::anyhow!("{}: not a `sluice probe` summary", path.display());
    let num = |x: &serde_json::Value, k: &str| x.get(k).and_then(|y| y.as_f64()).ok_or_else(bad);
    let su = v.get("summary_us").ok_or_else(bad)?;
    Ok(Row {
        label: v
            .get("label")
            .and_then(|l| l.as_str())
            .ok_or_else(bad)?
            .to_string(),
        via: v
            .get("via")
            .and_then(|l| l.as_str())
            .unwrap_or("reflector")
            .to_string(),
        hops: num(&v, "hops")? as u64,
        size: num(&v, "size")? as u64,
        rate: v.get("rate_bps").and_then(|r| r.as_f64()),
        s: Summary {
            packets: num(su, "packets")? as u64,
            mean: num(su, "mean")?,
            std: num(su, "std")?,
            min: num(su, "min")?,
            p50: num(su, "p50")?,
            p99: num(su, "p99")?,
            p999: num(su, "p999")?,
            max: num(su, "max")?,
        },
    })
}

fn table(a: TableArgs) -> anyhow::Result<()> {
    let rows: Vec<Row> = a
        .files
        .iter()
        .map(|f| read_row(f))
        .collect::<anyhow::Result<_>>()?;
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
    for more in &rows {
        let fewer = rows.iter().find(|f| {
            f.hops + 1 == more.hops
                && f.rate == more.rate
                && f.size == more.size
                && f.via == more.via
        });
        if let Some(f) = fewer {
            let d = more.s.added_over(&f.s);
            added.push(vec![
                format!("{} -> {} {}s", f.hops, more.hops, more.via),
                rate_words(more.rate),
                format!("{:+.1}", d.mean),
                format!("{:.1}", d.jitter),
                format!("{:+.1}", more.s.p50 - f.s.p50),
                format!("{:+.1}", d.p99),
            ]);
        }
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
