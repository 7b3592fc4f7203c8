//! `sluice bench net`: sluice's TCP stream (tcp_sink → tcp_source, two graphs) against a raw
//! TCP `write`/`read` loop on loopback, at each frame size, in the same run.
//!
//! Each frame size also runs sluice with a cluster key on both ends (the secure channel:
//! every byte sealed in Noise records), in the same run, with its ratio to plaintext.
//!
//! Both move the same bytes. The sluice sender's source commits space it does not fill and
//! the receiver's sink consumes without reading, so both sides measure the transport (frames,
//! queues, sockets), as the raw loop does. Each graph runs on one thread (two threads in all,
//! as the raw loop has; on this 2-core machine four threads ran 5-25 % slower). CPU seconds
//! per GB are per end: the sender's thread (source and tcp_sink) and the receiver's
//! (tcp_source and sink), read from the thread's clock; the raw loop's from its two threads. The table
//! gives medians over `--runs` interleaved runs.
//!
//! libzmq runs in the same invocation through a C harness (`peers/zmq_bench.c`, compiled at
//! run time against libzmq3-dev): PUSH/PULL at each frame size with zero-copy sends
//! (`zmq_msg_init_data`), CPU from `getrusage` of each process (its I/O thread included).
//! Then the small-message cases (`net_small.rs`): 100-byte messages each its own frame
//! against libzmq PUSH/PULL's message rate, and the 100-byte round trip against REQ/REP.
//! Without libzmq the bench stops and names the package, unless `--no-zmq` says to run
//! without it.

use super::net_small;
use super::net_zmq::{num, Zmq};
use super::plot::{lines, Series};
use super::report::{machine_description, median, results_dir, Table};
use clap::Args;
use sluice_net::{Security, TcpOptions, TcpSink, TcpSource};
use sluice_runtime::{
    Graph, Node, NodeError, Ports, RunOptions, Scheduler, TagPolicy, Work, WorkIo,
};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Arguments of `sluice bench net`.
#[derive(Args, Debug)]
pub struct BenchNetArgs {
    /// Bytes moved per run.
    #[arg(long, default_value_t = 2 << 30)]
    pub bytes: u64,
    /// Frame (and raw write) sizes in bytes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1048576,65536")]
    pub frames: Vec<usize>,
    /// Runs per variant (interleaved); the table shows medians.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Directory for the CSV, JSON and PNG results.
    #[arg(long, default_value = "target/bench/net")]
    pub out: PathBuf,
    /// Small messages: bytes per message (rate and round trip).
    #[arg(long, default_value_t = 100)]
    pub message_bytes: usize,
    /// Small messages: messages per rate run.
    #[arg(long, default_value_t = 1_000_000)]
    pub messages: u64,
    /// Small messages: round trips per run.
    #[arg(long, default_value_t = 20_000)]
    pub round_trips: u64,
    /// Small messages: the busy-poll window (tcp_source spin_us) of the spinning round trip.
    #[arg(long, default_value_t = 50)]
    pub spin_us: u64,
    /// Run without the libzmq peer (its rows say it was not run).
    #[arg(long)]
    pub no_zmq: bool,
    /// Which cases to run, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "throughput,rate,rtt"
    )]
    pub cases: Vec<Case>,
}

/// The cases of `sluice bench net`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// Bulk throughput at each `--frames` size (raw TCP, libzmq PUSH/PULL, sluice).
    Throughput,
    /// The message rate of `--message-bytes` messages, each its own frame.
    Rate,
    /// The round trip of one `--message-bytes` message.
    Rtt,
}

/// One measurement: GB/s, sender CPU s/GB, receiver CPU s/GB.
type Sample = (f64, f64, f64);

/// Commits `total` u64 items without writing them (transport cost only).
struct Blank {
    left: u64,
}

impl Node for Blank {
    fn ports(&self) -> Ports {
        Ports::new().output::<u64>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.left == 0 {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u64>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min(self.left as usize);
        out.commit(n);
        self.left -= n as u64;
        Ok(Work::Progress)
    }
}

/// Consumes everything without reading it.
struct Drop_;

impl Node for Drop_ {
    fn ports(&self) -> Ports {
        Ports::new().input::<u64>("in")
    }
    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u64>(0)?;
        let Some(w) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if w.is_empty() {
            return Ok(Work::Done);
        }
        let n = w.len();
        input.consume(n);
        Ok(Work::Progress)
    }
}

/// Runs `inner` and adds its thread's CPU time to `cpu` when it stops (wrap one node per
/// thread).
pub(super) struct Measured<N> {
    pub(super) inner: N,
    pub(super) cpu: Arc<Mutex<Duration>>,
}

impl<N: Node> Node for Measured<N> {
    fn ports(&self) -> Ports {
        self.inner.ports()
    }
    fn tag_policy(&self) -> TagPolicy {
        self.inner.tag_policy()
    }
    fn init(&mut self) -> Result<(), NodeError> {
        self.inner.init()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        self.inner.work(io)
    }
    fn stop(&mut self) {
        self.inner.stop();
        *self.cpu.lock().unwrap_or_else(|e| e.into_inner()) += sluice_os::thread_cpu_time();
    }
}

/// One sluice run; with `secure`, both ends hold a fresh cluster key, so every byte goes
/// through the secure channel's records (at most 256 KiB each) under that security: AES-256-GCM
/// (`Encrypt`) or GMAC (`Authenticate`); without, plaintext.
fn sluice_run(bytes: u64, frame: usize, secure: Option<Security>) -> anyhow::Result<Sample> {
    let opts = TcpOptions {
        frame_bytes: frame,
        retention_bytes: (8 << 20).max(4 * frame),
        key: match secure {
            Some(_) => Some(sluice_net::auth::ClusterKey::random()?),
            None => None,
        },
        security: secure.unwrap_or(Security::Encrypt),
        ..TcpOptions::default()
    };
    let items = bytes / 8;
    let (tx_cpu, rx_cpu) = (Arc::default(), Arc::default());
    let source = TcpSource::<u64>::new("tcp-listen://127.0.0.1:0", opts.clone())?;
    let addr = source
        .local_addr()
        .ok_or_else(|| anyhow::anyhow!("no listening address"))?;
    let mut rx = Graph::new();
    let a = rx.add(
        "rcv-rx",
        Measured {
            inner: source,
            cpu: Arc::clone(&rx_cpu),
        },
    )?;
    let b = rx.add("rcv-drop", Drop_)?;
    rx.connect(a, "out", b, "in")?;
    let mut tx = Graph::new();
    let c = tx.add("snd-src", Blank { left: items })?;
    let sink = TcpSink::<u64>::new(&format!("tcp://{addr}"), opts)?;
    let d = tx.add(
        "snd-tx",
        Measured {
            inner: sink,
            cpu: Arc::clone(&tx_cpu),
        },
    )?;
    tx.connect(c, "out", d, "in")?;
    let run = RunOptions {
        scheduler: Scheduler::Pooled(1),
        ..RunOptions::default()
    };
    let run2 = run.clone();
    let start = Instant::now();
    let rx = std::thread::spawn(move || rx.run(&run2));
    let tx_result = tx.run(&run);
    let rx_result = rx
        .join()
        .map_err(|_| anyhow::anyhow!("the receiving graph panicked"))?;
    let secs = start.elapsed().as_secs_f64();
    tx_result?;
    rx_result?;
    let gb = (items * 8) as f64 / 1e9;
    let cpu =
        |c: &Arc<Mutex<Duration>>| c.lock().unwrap_or_else(|e| e.into_inner()).as_secs_f64() / gb;
    Ok((gb / secs, cpu(&tx_cpu), cpu(&rx_cpu)))
}

fn raw_run(bytes: u64, frame: usize) -> anyhow::Result<Sample> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let reader = std::thread::spawn(move || -> std::io::Result<(u64, f64)> {
        let (mut s, _) = listener.accept()?;
        let mut buf = vec![0u8; frame];
        let mut got = 0u64;
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                break;
            }
            got += n as u64;
        }
        Ok((got, sluice_os::thread_cpu_time().as_secs_f64()))
    });
    let start = Instant::now();
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    let buf = vec![1u8; frame];
    let cpu0 = sluice_os::thread_cpu_time();
    let mut left = bytes;
    while left > 0 {
        let n = (left as usize).min(frame);
        s.write_all(&buf[..n])?;
        left -= n as u64;
    }
    let tx_cpu = (sluice_os::thread_cpu_time() - cpu0).as_secs_f64();
    drop(s);
    let (got, rx_cpu) = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the raw reader panicked"))??;
    let secs = start.elapsed().as_secs_f64();
    anyhow::ensure!(got == bytes, "raw TCP moved {got} of {bytes} bytes");
    let gb = bytes as f64 / 1e9;
    Ok((gb / secs, tx_cpu / gb, rx_cpu / gb))
}

/// One libzmq PUSH/PULL run of `bytes` in messages of `frame` bytes.
fn zmq_run(zmq: &Zmq, bytes: u64, frame: usize) -> anyhow::Result<Sample> {
    let count = (bytes / frame as u64).max(2);
    let (pull, push) = zmq.pair("pull", "push", frame, count, &[])?;
    let gb = (count * frame as u64) as f64 / 1e9;
    let timed = num(&pull, "timed_messages")? * frame as f64 / 1e9;
    Ok((
        timed / num(&pull, "secs")?,
        num(&push, "cpu_s")? / gb,
        num(&pull, "cpu_s")? / gb,
    ))
}

/// Runs `sluice bench net`.
pub fn run(args: BenchNetArgs) -> anyhow::Result<()> {
    let out = results_dir(&args.out)?;
    let zmq = if args.no_zmq {
        println!("# libzmq: not run (--no-zmq)");
        None
    } else {
        let z = Zmq::build(&out.join("peers")).map_err(|e| {
            anyhow::anyhow!("the libzmq peer is missing: {e}; or run with --no-zmq to leave it out")
        })?;
        println!(
            "# libzmq: C harness {} (zmq_msg_init_data sends)",
            out.join("peers/zmq_bench").display()
        );
        Some(z)
    };
    println!("# {}", machine_description());
    if !args.cases.contains(&Case::Throughput) {
        return net_small::report(&args, zmq.as_ref(), &out);
    }
    println!(
        "# {} per run, {} runs, loopback; sluice: tcp_sink -> tcp_source (u64 items, CRC off), raw: write/read loop",
        args.bytes, args.runs
    );
    let mut table = Table::new(&[
        "frame bytes",
        "variant",
        "GB/s",
        "sender CPU s/GB",
        "receiver CPU s/GB",
        "sluice/raw",
        "sluice/libzmq",
        "secure/plaintext",
    ]);
    let mut plot = vec![Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for &frame in &args.frames {
        let (mut s, mut r, mut z, mut e) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut a = Vec::new();
        for _ in 0..args.runs.max(1) {
            r.push(raw_run(args.bytes, frame)?);
            s.push(sluice_run(args.bytes, frame, None)?);
            e.push(sluice_run(args.bytes, frame, Some(Security::Encrypt))?);
            a.push(sluice_run(args.bytes, frame, Some(Security::Authenticate))?);
            if let Some(zmq) = &zmq {
                z.push(zmq_run(zmq, args.bytes, frame)?);
            }
        }
        let med =
            |v: &[Sample], f: fn(&Sample) -> f64| median(&v.iter().map(f).collect::<Vec<_>>());
        let (sg, rg, zg) = (med(&s, |x| x.0), med(&r, |x| x.0), med(&z, |x| x.0));
        let (eg, ag) = (med(&e, |x| x.0), med(&a, |x| x.0));
        for (name, v, ratios) in [
            ("raw TCP", &r, [String::new(), String::new(), String::new()]),
            (
                "libzmq PUSH/PULL",
                &z,
                [String::new(), String::new(), String::new()],
            ),
            (
                "sluice TCP",
                &s,
                [
                    format!("{:.2}", sg / rg),
                    format!("{:.2}", sg / zg),
                    String::new(),
                ],
            ),
            (
                "sluice TCP encrypted",
                &e,
                [
                    format!("{:.2}", eg / rg),
                    format!("{:.2}", eg / zg),
                    format!("{:.2}", eg / sg),
                ],
            ),
            (
                "sluice TCP authenticated",
                &a,
                [
                    format!("{:.2}", ag / rg),
                    format!("{:.2}", ag / zg),
                    format!("{:.2}", ag / sg),
                ],
            ),
        ] {
            if v.is_empty() {
                table.push(vec![
                    frame.to_string(),
                    name.to_string(),
                    "not run (--no-zmq)".into(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
                continue;
            }
            let [to_raw, to_zmq, to_plain] = ratios;
            table.push(vec![
                frame.to_string(),
                name.to_string(),
                format!("{:.2}", med(v, |x| x.0)),
                format!("{:.3}", med(v, |x| x.1)),
                format!("{:.3}", med(v, |x| x.2)),
                to_raw,
                if zmq.is_some() { to_zmq } else { String::new() },
                to_plain,
            ]);
        }
        plot[0].push((frame as f64 / 1024.0, rg));
        plot[1].push((frame as f64 / 1024.0, sg));
        if zmq.is_some() {
            plot[2].push((frame as f64 / 1024.0, zg));
        }
        plot[3].push((frame as f64 / 1024.0, eg));
        plot[4].push((frame as f64 / 1024.0, ag));
    }
    print!("{}", table.render());
    table.write_csv(&out.join("net.csv"))?;
    table.write_json(&out.join("net.json"), "net")?;
    let mut series: Vec<Series> = [
        "raw TCP",
        "sluice TCP",
        "libzmq PUSH/PULL",
        "sluice TCP encrypted",
        "sluice TCP authenticated",
    ]
    .iter()
    .zip(plot)
    .enumerate()
    .map(|(i, (label, mut points))| {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        Series {
            label: label.to_string(),
            style: i,
            group: i,
            points,
        }
    })
    .collect();
    series.retain(|s| !s.points.is_empty());
    lines(
        &out.join("net.png"),
        "TCP loopback throughput",
        "frame KiB",
        "GB/s",
        &series,
    )?;
    println!("wrote net.csv, net.json and net.png in {}", out.display());
    net_small::report(&args, zmq.as_ref(), &out)
}
