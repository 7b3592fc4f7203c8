//! `sluice probe`: the seed's latency and jitter experiment (see `sluice_net::probe`).
//!
//! `origin` and `reflect` are the two roles, one process each, wherever they run (namespaces,
//! machines); `loop` runs the whole loop on this machine with the reflectors as child
//! processes on loopback; `table` puts several runs side by side with what each hop added.

use crate::probe_report::{self, TableArgs};
use anyhow::Context;
use clap::{Args, Subcommand};
use sluice_net::probe::{self, cpu_line, LocalHops, Origin, OriginConfig, Reflector, Relay};
use sluice_net::TcpOptions;
use std::path::PathBuf;
use std::process::Command;
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

    /// The word for such a hop in reports (`reflector`, `relay`).
    pub(crate) fn name(self) -> &'static str {
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
    probe::parse_bit_rate(s).map(Rate)
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

/// Runs `sluice probe …`.
pub fn run(cmd: ProbeCommand) -> anyhow::Result<()> {
    match cmd {
        ProbeCommand::Origin(a) => origin(a),
        ProbeCommand::Reflect(a) => reflect(a),
        ProbeCommand::Relay(a) => relay(a),
        ProbeCommand::Loop(a) => run_loop(a),
        ProbeCommand::Table(a) => probe_report::table(a),
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
    probe_report::report(&a.opts, &run, cpu, &[])
}

fn reflect_options(o: &ReflectOpts, timeout: Duration) -> (TcpOptions, TcpOptions) {
    let base = TcpOptions {
        connect_timeout: timeout,
        frame_bytes: o.frame_bytes,
        // The probe measures the plaintext transport, between the namespaces its loop made
        // (the origin and relays are plain sockets too): it may listen beyond loopback
        // without credentials, with the warning that says so.
        security: sluice_net::Security::None,
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
    println!("{}", cpu_line(cpu, bytes));
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
    println!("{}", cpu_line(cpu, st.forward));
    Ok(())
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
    let hops = LocalHops::start(a.reflectors, out_addr, back_addr, |from, to| {
        let r = &a.reflect;
        let mut cmd = Command::new(&exe);
        cmd.args(["probe", a.origin.via.command()])
            .args(["--from", from, "--to", to])
            .args(["--timeout", &a.origin.timeout.to_string()]);
        if a.origin.via == Via::Reflector {
            cmd.args(["--threads", &r.threads.to_string()])
                .args(["--flush-us", &r.flush_us.to_string()])
                .args(["--spin-us", &r.spin_us.to_string()])
                .args(["--frame-bytes", &r.frame_bytes.to_string()])
                .args(["--retention-bytes", &r.retention_bytes.to_string()]);
        }
        cmd
    })?;
    let mut opts = a.origin.clone();
    opts.hops = a.reflectors;
    let cpu0 = sluice_os::process_cpu_time();
    let run = origin.run()?;
    let cpu = (sluice_os::process_cpu_time() - cpu0).as_secs_f64();
    let reflector_cpu = hops.finish(|line| println!("  {line}"))?;
    probe_report::report(&opts, &run, cpu, &reflector_cpu)
}
