//! Small messages in `sluice bench net`: the message rate of 100-byte messages, each its own
//! DATA frame, and the round trip of one 100-byte message through a reflector, for sluice and
//! libzmq (PUSH/PULL, REQ/REP) in the same run.
//!
//! * **Rate.** A graph `messages -> tcp_sink` (frame_bytes = the message size, so each message
//!   is one frame; flush_us 50) sends to `tcp_source -> drop`. Messages/s over the whole run;
//!   CPU µs per message on each end (each graph runs on one thread, read from its clock).
//! * **Round trip.** Graph A `tcp_source -> pinger -> tcp_sink`, graph B `tcp_source ->
//!   tcp_sink` (the probe's reflector), each on one thread. The pinger commits a message, and
//!   the next when the reply is back; a round trip is timed from its commit to the reply's
//!   window. With `spin`, both tcp_sources busy-poll their socket that long after each frame
//!   instead of sleeping in `poll`. CPU µs per round trip is A's and B's threads together.

use super::net::{BenchNetArgs, Case, Measured};
use super::net_zmq::{num, Zmq};
use super::plot::{lines, Series};
use super::report::{median, Table};
use sluice_net::probe::quantile;
use sluice_net::{TcpOptions, TcpSink, TcpSource};
use sluice_runtime::{
    Graph, Node, NodeError, Ports, RunOptions, Scheduler, TagPolicy, Work, WorkIo,
};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Commits `left` bytes in as large pieces as the queue takes, writing nothing (transport
/// cost only); the sink cuts them into one frame per message.
struct Messages {
    left: u64,
}

impl Node for Messages {
    fn ports(&self) -> Ports {
        Ports::new().output::<u8>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.left == 0 {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u8>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min(self.left as usize);
        out.commit(n);
        self.left -= n as u64;
        Ok(Work::Progress)
    }
}

/// Consumes every byte without reading it.
struct Drain;

impl Node for Drain {
    fn ports(&self) -> Ports {
        Ports::new().input::<u8>("in")
    }
    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u8>(0)?;
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

fn one_thread() -> RunOptions {
    RunOptions {
        scheduler: Scheduler::Pooled(1),
        deadlock_timeout: Duration::from_secs(60),
        ..RunOptions::default()
    }
}

/// Adds `node` to `g`, measuring its thread's CPU into `cpu` (once per graph: one thread).
fn add_measured<N: Node + 'static>(
    g: &mut Graph,
    name: &str,
    node: N,
    cpu: &Arc<Mutex<Duration>>,
) -> anyhow::Result<sluice_runtime::NodeId> {
    Ok(g.add(
        name,
        Measured {
            inner: node,
            cpu: Arc::clone(cpu),
        },
    )?)
}

fn secs(cpu: &Arc<Mutex<Duration>>) -> f64 {
    cpu.lock().unwrap_or_else(|e| e.into_inner()).as_secs_f64()
}

/// Runs the two graphs, `a` on a thread of its own; both must succeed.
fn run_pair(a: Graph, b: Graph) -> anyhow::Result<f64> {
    let start = Instant::now();
    let ta = std::thread::spawn(move || a.run(&one_thread()));
    let rb = b.run(&one_thread());
    let ra = ta.join().map_err(|_| anyhow::anyhow!("a graph panicked"))?;
    let wall = start.elapsed().as_secs_f64();
    ra?;
    rb?;
    Ok(wall)
}

/// One rate run: (messages/s, sender CPU µs/message, receiver CPU µs/message).
pub(super) fn rate(size: usize, count: u64) -> anyhow::Result<(f64, f64, f64)> {
    let opts = TcpOptions {
        frame_bytes: size,
        ..TcpOptions::default()
    };
    let (tx_cpu, rx_cpu) = (Arc::default(), Arc::default());
    let source = TcpSource::<u8>::new("tcp-listen://127.0.0.1:0", opts.clone())?;
    let addr = source
        .local_addr()
        .ok_or_else(|| anyhow::anyhow!("no listening address"))?;
    let mut rx = Graph::new();
    let a = add_measured(&mut rx, "rx", source, &rx_cpu)?;
    let b = rx.add("drain", Drain)?;
    rx.connect(a, "out", b, "in")?;
    let mut tx = Graph::new();
    let c = tx.add(
        "messages",
        Messages {
            left: count * size as u64,
        },
    )?;
    let d = add_measured(
        &mut tx,
        "tx",
        TcpSink::<u8>::new(&format!("tcp://{addr}"), opts)?,
        &tx_cpu,
    )?;
    tx.connect(c, "out", d, "in")?;
    let wall = run_pair(rx, tx)?;
    let n = count as f64;
    Ok((n / wall, secs(&tx_cpu) / n * 1e6, secs(&rx_cpu) / n * 1e6))
}

/// Sends message after message, each when the previous one is back; times each round trip.
struct Pinger {
    size: usize,
    count: u64,
    seq: u64,
    sent: Option<Instant>,
    rtts: Arc<Mutex<Vec<f64>>>,
}

impl Node for Pinger {
    fn ports(&self) -> Ports {
        Ports::new().input::<u8>("in").output::<u8>("out")
    }
    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let size = self.size;
        if let Some(t0) = self.sent {
            let input = io.inputs.get::<u8>(0)?;
            let Some(w) = input.window(size)? else {
                return Ok(Work::NeedInput {
                    port: 0,
                    items: size,
                });
            };
            let rtt = t0.elapsed().as_secs_f64() * 1e6;
            let mut seq = [0u8; 8];
            seq.copy_from_slice(&w[..8.min(w.len())]);
            if w.len() < size || u64::from_le_bytes(seq) != self.seq {
                return Err(NodeError::msg(format!(
                    "reply {} is not the message sent ({} bytes, sequence {})",
                    self.seq,
                    w.len(),
                    u64::from_le_bytes(seq)
                )));
            }
            input.consume(size);
            self.rtts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(rtt);
            self.sent = None;
            self.seq += 1;
            // The next message goes in this same call: on a thread shared with tcp_source,
            // returning first would let the source sleep in poll before it is sent.
        }
        if self.seq == self.count {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u8>(0)?;
        let Some(space) = out.reserve(size)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: size,
            });
        };
        space[..8].copy_from_slice(&self.seq.to_le_bytes());
        out.commit(size);
        self.sent = Some(Instant::now());
        Ok(Work::Progress)
    }
}

/// One round-trip run: (sorted round trips in µs after a 1 % warm-up, CPU µs per round trip
/// of both graphs together).
pub(super) fn round_trip(
    size: usize,
    count: u64,
    spin: Duration,
) -> anyhow::Result<(Vec<f64>, f64)> {
    anyhow::ensure!(
        size >= 8,
        "round-trip messages carry an 8-byte sequence number"
    );
    let opts = TcpOptions {
        frame_bytes: size,
        spin,
        flush: Duration::ZERO,
        ..TcpOptions::default()
    };
    let (a_cpu, b_cpu) = (Arc::default(), Arc::default());
    let rtts = Arc::new(Mutex::new(Vec::with_capacity(count as usize)));
    // B: the reflector, listening for A's messages, connecting back to A.
    let b_rx = TcpSource::<u8>::new("tcp-listen://127.0.0.1:0", opts.clone())?;
    let b_addr = b_rx
        .local_addr()
        .ok_or_else(|| anyhow::anyhow!("no address"))?;
    let a_rx = TcpSource::<u8>::new("tcp-listen://127.0.0.1:0", opts.clone())?;
    let a_addr = a_rx
        .local_addr()
        .ok_or_else(|| anyhow::anyhow!("no address"))?;
    let mut b = Graph::new();
    let x = add_measured(&mut b, "b-rx", b_rx, &b_cpu)?;
    let y = b.add(
        "b-tx",
        TcpSink::<u8>::new(&format!("tcp://{a_addr}"), opts.clone())?,
    )?;
    b.connect(x, "out", y, "in")?;
    let mut a = Graph::new();
    let p = a.add("a-rx", a_rx)?;
    let q = add_measured(
        &mut a,
        "pinger",
        Pinger {
            size,
            count,
            seq: 0,
            sent: None,
            rtts: Arc::clone(&rtts),
        },
        &a_cpu,
    )?;
    let r = a.add(
        "a-tx",
        TcpSink::<u8>::new(&format!("tcp://{b_addr}"), opts)?,
    )?;
    a.connect(p, "out", q, "in")?;
    a.connect(q, "out", r, "in")?;
    run_pair(b, a)?;
    let mut v = std::mem::take(&mut *rtts.lock().unwrap_or_else(|e| e.into_inner()));
    anyhow::ensure!(
        v.len() as u64 == count,
        "{} of {count} round trips",
        v.len()
    );
    let cpu = (secs(&a_cpu) + secs(&b_cpu)) / count as f64 * 1e6;
    let skip = (v.len() / 100).max(1);
    v.drain(..skip);
    v.sort_by(|x, y| x.total_cmp(y));
    Ok((v, cpu))
}

/// One libzmq PUSH/PULL rate run: (messages/s, push CPU µs/message, pull CPU µs/message).
fn zmq_rate(zmq: &Zmq, size: usize, count: u64) -> anyhow::Result<(f64, f64, f64)> {
    let (pull, push) = zmq.pair("pull", "push", size, count, &[])?;
    let n = count as f64;
    Ok((
        num(&pull, "timed_messages")? / num(&pull, "secs")?,
        num(&push, "cpu_s")? / n * 1e6,
        num(&pull, "cpu_s")? / n * 1e6,
    ))
}

/// One libzmq REQ/REP run: (sorted round trips in µs, CPU µs per round trip of both ends).
fn zmq_round_trip(
    zmq: &Zmq,
    size: usize,
    count: u64,
    file: &Path,
) -> anyhow::Result<(Vec<f64>, f64)> {
    let f = file.to_string_lossy().into_owned();
    let (rep, req) = zmq.pair("rep", "req", size, count, &[&f])?;
    let text = std::fs::read_to_string(file)?;
    let v: Vec<f64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    anyhow::ensure!(!v.is_empty(), "zmq_bench req wrote no round trips to {f}");
    Ok((
        v,
        (num(&rep, "cpu_s")? + num(&req, "cpu_s")?) / count as f64 * 1e6,
    ))
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The round-trip figures of one variant over its runs (medians) and its last distribution.
struct Trips {
    name: String,
    spins: String,
    runs: Vec<(f64, f64, f64, f64)>,
    last: Vec<f64>,
}

impl Trips {
    fn push(&mut self, (v, cpu): (Vec<f64>, f64)) {
        self.runs
            .push((mean(&v), quantile(&v, 0.5), quantile(&v, 0.99), cpu));
        self.last = v;
    }
    fn med(&self, f: fn(&(f64, f64, f64, f64)) -> f64) -> f64 {
        median(&self.runs.iter().map(f).collect::<Vec<_>>())
    }
}

/// Runs the small-message cases, prints their tables, writes net-rate.{csv,json},
/// net-rtt.{csv,json} and net-rtt.png.
pub(super) fn report(args: &BenchNetArgs, zmq: Option<&Zmq>, out: &Path) -> anyhow::Result<()> {
    if args.cases.contains(&Case::Rate) {
        rate_table(args, zmq, out)?;
    }
    if args.cases.contains(&Case::Rtt) {
        rtt_table(args, zmq, out)?;
    }
    Ok(())
}

fn rate_table(args: &BenchNetArgs, zmq: Option<&Zmq>, out: &Path) -> anyhow::Result<()> {
    let size = args.message_bytes;
    let runs = args.runs.max(1);
    println!(
        "\n# {size}-byte messages, each its own DATA frame (frame_bytes {size}, flush_us 50), {} messages per run, {runs} runs; each graph on one thread",
        args.messages
    );
    let (mut s, mut z) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        s.push(rate(size, args.messages)?);
        if let Some(zmq) = zmq {
            z.push(zmq_rate(zmq, size, args.messages)?);
        }
    }
    let med = |v: &[(f64, f64, f64)], f: fn(&(f64, f64, f64)) -> f64| {
        median(&v.iter().map(f).collect::<Vec<_>>())
    };
    let mut t = Table::new(&[
        "variant",
        "messages/s",
        "sender CPU µs/msg",
        "receiver CPU µs/msg",
        "sluice/libzmq",
    ]);
    let zr = med(&z, |x| x.0);
    for (name, v) in [("libzmq PUSH/PULL", &z), ("sluice TCP", &s)] {
        if v.is_empty() {
            t.push(vec![
                name.into(),
                "not run (--no-zmq)".into(),
                String::new(),
                String::new(),
                String::new(),
            ]);
            continue;
        }
        let r = med(v, |x| x.0);
        t.push(vec![
            name.into(),
            format!("{r:.0}"),
            format!("{:.2}", med(v, |x| x.1)),
            format!("{:.2}", med(v, |x| x.2)),
            if name.starts_with("sluice") && !z.is_empty() {
                format!("{:.2}", r / zr)
            } else {
                String::new()
            },
        ]);
    }
    print!("{}", t.render());
    t.write_csv(&out.join("net-rate.csv"))?;
    t.write_json(&out.join("net-rate.json"), "net-rate")?;
    println!("wrote net-rate.csv and net-rate.json in {}", out.display());
    Ok(())
}

fn rtt_table(args: &BenchNetArgs, zmq: Option<&Zmq>, out: &Path) -> anyhow::Result<()> {
    let size = args.message_bytes;
    let runs = args.runs.max(1);

    println!(
        "\n# {size}-byte round trip, {} per run, {runs} runs (first 1 % not counted): sluice A (tcp_source -> pinger -> tcp_sink) <-> B (tcp_source -> tcp_sink), each graph on one thread; libzmq REQ/REP",
        args.round_trips
    );
    let spin = Duration::from_micros(args.spin_us);
    let mut variants = vec![
        Trips {
            name: "sluice TCP".into(),
            spins: "no (sleeps in poll)".into(),
            runs: Vec::new(),
            last: Vec::new(),
        },
        Trips {
            name: "sluice TCP".into(),
            spins: format!("yes, {} µs after each frame", args.spin_us),
            runs: Vec::new(),
            last: Vec::new(),
        },
    ];
    let mut zt = Trips {
        name: "libzmq REQ/REP".into(),
        spins: "no".into(),
        runs: Vec::new(),
        last: Vec::new(),
    };
    for _ in 0..runs {
        variants[0].push(round_trip(size, args.round_trips, Duration::ZERO)?);
        variants[1].push(round_trip(size, args.round_trips, spin)?);
        if let Some(zmq) = zmq {
            zt.push(zmq_round_trip(
                zmq,
                size,
                args.round_trips,
                &out.join("zmq-rtt.txt"),
            )?);
        }
    }
    let mut t = Table::new(&[
        "variant",
        "spins",
        "mean µs",
        "p50 µs",
        "p99 µs",
        "CPU µs/round trip",
        "mean/libzmq",
        "p99/libzmq",
    ]);
    let (zm, z99) = (zt.med(|x| x.0), zt.med(|x| x.2));
    if zmq.is_some() {
        variants.insert(0, zt);
    } else {
        t.push(vec![
            "libzmq REQ/REP".into(),
            "not run (--no-zmq)".into(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
    for v in &variants {
        let sluice = v.name.starts_with("sluice") && zmq.is_some();
        t.push(vec![
            v.name.clone(),
            v.spins.clone(),
            format!("{:.1}", v.med(|x| x.0)),
            format!("{:.1}", v.med(|x| x.1)),
            format!("{:.1}", v.med(|x| x.2)),
            format!("{:.2}", v.med(|x| x.3)),
            if sluice {
                format!("{:.2}", v.med(|x| x.0) / zm)
            } else {
                String::new()
            },
            if sluice {
                format!("{:.2}", v.med(|x| x.2) / z99)
            } else {
                String::new()
            },
        ]);
    }
    print!("{}", t.render());
    t.write_csv(&out.join("net-rtt.csv"))?;
    t.write_json(&out.join("net-rtt.json"), "net-rtt")?;
    let series: Vec<Series> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let n = v.last.len().max(1) as f64;
            Series {
                label: format!("{}, spin: {}", v.name, v.spins),
                style: 0,
                group: i,
                points: v
                    .last
                    .iter()
                    .enumerate()
                    .map(|(k, x)| (100.0 * (k + 1) as f64 / n, *x))
                    .filter(|(p, _)| *p <= 99.9)
                    .collect(),
            }
        })
        .collect();
    lines(
        &out.join("net-rtt.png"),
        &format!("{size}-byte round trip on loopback (last run, up to p99.9)"),
        "percentile",
        "round trip µs",
        &series,
    )?;
    println!(
        "wrote net-rtt.csv, net-rtt.json and net-rtt.png in {}",
        out.display()
    );
    Ok(())
}
