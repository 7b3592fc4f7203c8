//! The hostile-peer soak (run by scripts/soak_hostile.sh): legitimate streams run for
//! `SOAK_SECONDS` (default 180) on loopback while attacker threads do their worst against
//! every listener, and each stream must arrive whole, in order and unchanged, the process's
//! memory must stay bounded, and the cluster worker must live on and still admit a controller.
//!
//! Streams: a keyed tcp stream, a fenced tcp stream, ZeroMQ PUSH→PULL and PUB→SUB between
//! sluice's own blocks, and a cluster worker. Attacks: silent connections in waves, trickled
//! handshakes (a byte every 500 ms), HTTP probes and garbage first frames against every
//! listener; a PULL that never reads on the PUSH sink, a SUB with thousands of duplicate and
//! distinct subscriptions, a peer announcing a huge frame and stopping; a connection flood
//! against the worker.

use sluice_cluster::worker::{self, Worker, WorkerOptions};
use sluice_net::accept::AcceptOptions;
use sluice_net::auth::ClusterKey;
use sluice_net::secure::{self, Credentials, Purpose};
use sluice_net::{Fence, TcpOptions, TcpSink, TcpSource};
use sluice_runtime::{
    Graph, Node, NodeError, Ports, RunOptions, RunReport, RuntimeError, StopHandle, TagPolicy,
    Work, WorkIo,
};
use sluice_zmq::zmtp;
use sluice_zmq::{SocketType, ZmqOptions, ZmqSink, ZmqSource};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const MASK: u64 = (1 << 40) - 1;

/// Item `i` of every stream: the index in the low 40 bits, a hash of it above.
fn make(i: u64) -> u64 {
    i | ((i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) << 40)
}

/// The index of an item, if it is one `make` gives.
fn index_of(v: u64) -> Option<u64> {
    let i = v & MASK;
    (make(i) == v).then_some(i)
}

fn fnv(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(0x100000001b3)
}

const FNV0: u64 = 0xcbf29ce484222325;

#[derive(Default)]
struct TxStat {
    sent: u64,
    sum: u64,
}

/// Produces `make(0..)` at a bounded rate until `stop`, then ends.
struct Gen {
    stop: Arc<AtomicBool>,
    stat: Arc<Mutex<TxStat>>,
}

impl Node for Gen {
    fn ports(&self) -> Ports {
        Ports::new().output::<u64>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.stop.load(Ordering::SeqCst) {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u64>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min(2048);
        let mut stat = self.stat.lock().unwrap();
        for (k, x) in space[..n].iter_mut().enumerate() {
            *x = make(stat.sent + k as u64);
            stat.sum = fnv(stat.sum, *x);
        }
        stat.sent += n as u64;
        drop(stat);
        out.commit(n);
        // About 1 M items a second: the soak shares its cores with the attackers.
        std::thread::sleep(Duration::from_millis(2));
        Ok(Work::Progress)
    }
}

#[derive(Default)]
struct RxStat {
    delivered: u64,
    /// The index of the first item received.
    first: Option<u64>,
    last: Option<u64>,
    /// Items skipped between received ones.
    gaps: u64,
    /// Items that are not `make(i)` or came out of order.
    bad: u64,
    sum: u64,
}

/// Checks what arrives: every item `make(i)`, indexes increasing.
struct Check {
    stat: Arc<Mutex<RxStat>>,
}

impl Node for Check {
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
        let mut s = self.stat.lock().unwrap();
        for &v in w {
            s.sum = fnv(s.sum, v);
            match index_of(v) {
                None => s.bad += 1,
                Some(i) => {
                    match s.last {
                        None => s.first = Some(i),
                        Some(l) if i <= l => s.bad += 1,
                        Some(l) => s.gaps += i - l - 1,
                    }
                    s.last = Some(i);
                }
            }
        }
        s.delivered += n as u64;
        drop(s);
        input.consume(n);
        Ok(Work::Progress)
    }
}

type Run = JoinHandle<Result<RunReport, RuntimeError>>;

fn spawn(graph: Graph, stop: Option<StopHandle>) -> Run {
    std::thread::spawn(move || {
        graph.run(&RunOptions {
            stop,
            ..RunOptions::default()
        })
    })
}

fn warnings(r: &Result<RunReport, RuntimeError>) -> Vec<String> {
    match r {
        Ok(report) => report
            .nodes
            .iter()
            .flat_map(|n| n.warnings.iter().map(|w| format!("{}: {w}", n.name)))
            .collect(),
        Err(e) => vec![format!("the graph failed: {e}")],
    }
}

/// One legitimate stream under test.
struct Stream {
    name: &'static str,
    /// Its listening end, attacked.
    listen: SocketAddr,
    gen_stop: Arc<AtomicBool>,
    tx: Arc<Mutex<TxStat>>,
    rx: Arc<Mutex<RxStat>>,
    tx_run: Run,
    rx_run: Run,
    /// For the zmq streams, which do not end by themselves.
    stops: Option<(StopHandle, StopHandle)>,
}

fn pair(
    name: &'static str,
    listen: SocketAddr,
    sink: impl Node + 'static,
    source: impl Node + 'static,
    stoppable: bool,
) -> Stream {
    let gen_stop = Arc::new(AtomicBool::new(false));
    let tx = Arc::new(Mutex::new(TxStat { sent: 0, sum: FNV0 }));
    let rx = Arc::new(Mutex::new(RxStat {
        sum: FNV0,
        ..RxStat::default()
    }));
    let mut rg = Graph::new();
    let a = rg.add("rx", source).unwrap();
    let b = rg.add("check", Check { stat: rx.clone() }).unwrap();
    rg.connect(a, "out", b, "in").unwrap();
    let mut tg = Graph::new();
    let c = tg
        .add(
            "gen",
            Gen {
                stop: gen_stop.clone(),
                stat: tx.clone(),
            },
        )
        .unwrap();
    let d = tg.add("tx", sink).unwrap();
    tg.connect(c, "out", d, "in").unwrap();
    let stops = stoppable.then(|| (StopHandle::new(), StopHandle::new()));
    let rx_run = spawn(rg, stops.as_ref().map(|s| s.0.clone()));
    let tx_run = spawn(tg, stops.as_ref().map(|s| s.1.clone()));
    Stream {
        name,
        listen,
        gen_stop,
        tx,
        rx,
        tx_run,
        rx_run,
        stops,
    }
}

fn tcp_opts() -> TcpOptions {
    TcpOptions {
        connect_timeout: Duration::from_secs(30),
        ..TcpOptions::default()
    }
}

fn keyed_tcp() -> Stream {
    let key = ClusterKey::random().unwrap();
    let opts = TcpOptions {
        key: Some(key),
        ..tcp_opts()
    };
    let source = TcpSource::<u64>::new("tcp-listen://127.0.0.1:0", opts.clone()).unwrap();
    let addr = source.local_addr().unwrap();
    let sink = TcpSink::<u64>::new(&format!("tcp://{addr}"), opts).unwrap();
    pair("tcp keyed", addr, sink, source, false)
}

fn fenced_tcp() -> Stream {
    let source = TcpSource::<u64>::new(
        "tcp-listen://127.0.0.1:0",
        TcpOptions {
            fenced: true,
            ..tcp_opts()
        },
    )
    .unwrap();
    let addr = source.local_addr().unwrap();
    let fence = Fence::named("soak-primary");
    fence.promote(1);
    let sink = TcpSink::<u64>::new(
        &format!("tcp://{addr}"),
        TcpOptions {
            fence: Some(fence),
            ..tcp_opts()
        },
    )
    .unwrap();
    pair("tcp fenced", addr, sink, source, false)
}

fn zmq_push() -> Stream {
    let sink =
        ZmqSink::<u64>::new(SocketType::Push, ZmqOptions::new("tcp://127.0.0.1:0", true)).unwrap();
    let addr = sink.local_addr().unwrap();
    let source = ZmqSource::<u64>::new(
        SocketType::Pull,
        ZmqOptions::new(&format!("tcp://{addr}"), false),
    )
    .unwrap();
    pair("zmq push/pull", addr, sink, source, true)
}

fn zmq_pub() -> Stream {
    let sink = ZmqSink::<u64>::new(
        SocketType::Pub,
        ZmqOptions {
            key: b"iq".to_vec(),
            drop_on_hwm: false,
            ..ZmqOptions::new("tcp://127.0.0.1:0", true)
        },
    )
    .unwrap();
    let addr = sink.local_addr().unwrap();
    let source = ZmqSource::<u64>::new(
        SocketType::Sub,
        ZmqOptions {
            key: b"iq".to_vec(),
            ..ZmqOptions::new(&format!("tcp://{addr}"), false)
        },
    )
    .unwrap();
    pair("zmq pub/sub", addr, sink, source, true)
}

fn rss_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// What each attack did, by name and counter.
#[derive(Clone, Default)]
struct Tally(Arc<Mutex<BTreeMap<String, u64>>>);

impl Tally {
    fn add(&self, what: &str, n: u64) {
        *self.0.lock().unwrap().entry(what.to_string()).or_default() += n;
    }
}

fn sleep_unless(stop: &AtomicBool, d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether the peer closed `c` (EOF or an error) now, without waiting.
fn closed(mut c: &TcpStream) -> bool {
    let _ = c.set_nonblocking(true);
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

fn connect(to: SocketAddr) -> Option<TcpStream> {
    TcpStream::connect_timeout(&to, Duration::from_secs(1)).ok()
}

/// Silent connections in waves: 16 to each target, held 3 s.
fn silent(targets: Vec<SocketAddr>, stop: Arc<AtomicBool>, t: Tally) {
    while !stop.load(Ordering::SeqCst) {
        let held: Vec<TcpStream> = targets
            .iter()
            .flat_map(|&a| (0..16).filter_map(move |_| connect(a)))
            .collect();
        t.add("silent: connections", held.len() as u64);
        sleep_unless(&stop, Duration::from_secs(3));
        let gone = held.iter().filter(|c| closed(c)).count();
        t.add("silent: closed by the listener", gone as u64);
    }
}

/// Half-open handshakes: one byte of a handshake every 500 ms on a connection per target.
fn trickle(targets: Vec<SocketAddr>, stop: Arc<AtomicBool>, t: Tally) {
    let greeting = zmtp::greeting();
    let mut conns: Vec<(SocketAddr, Option<TcpStream>, usize)> =
        targets.iter().map(|&a| (a, None, 0)).collect();
    while !stop.load(Ordering::SeqCst) {
        for (addr, conn, at) in conns.iter_mut() {
            if conn.is_none() {
                *conn = connect(*addr);
                *at = 0;
                t.add("trickle: connections", 1);
            }
            if let Some(c) = conn {
                let byte = greeting[*at % greeting.len()];
                if c.write_all(&[byte]).is_err() || closed(c) {
                    t.add("trickle: closed by the listener", 1);
                    *conn = None;
                } else {
                    t.add("trickle: bytes", 1);
                    *at += 1;
                }
            }
        }
        sleep_unless(&stop, Duration::from_millis(500));
    }
}

/// HTTP probes and random garbage first frames, one every 100 ms, on each target in turn.
fn probes(targets: Vec<SocketAddr>, stop: Arc<AtomicBool>, t: Tally) {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut k = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let addr = targets[k % targets.len()];
        k += 1;
        let Some(mut c) = connect(addr) else {
            t.add("probe: connect failed", 1);
            continue;
        };
        let bytes: Vec<u8> = if k.is_multiple_of(2) {
            t.add("probe: http", 1);
            b"GET / HTTP/1.1\r\nHost: soak\r\nUser-Agent: probe\r\n\r\n".to_vec()
        } else {
            t.add("probe: garbage", 1);
            (0..256)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect()
        };
        let _ = c.write_all(&bytes);
        let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
        let mut buf = [0u8; 4096];
        let start = Instant::now();
        let mut gone = false;
        while start.elapsed() < Duration::from_secs(2) && !stop.load(Ordering::SeqCst) {
            match c.read(&mut buf) {
                Ok(0) => {
                    gone = true;
                    break;
                }
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => {
                    gone = true;
                    break;
                }
            }
        }
        if gone {
            t.add("probe: closed by the listener", 1);
        }
        sleep_unless(&stop, Duration::from_millis(100));
    }
}

/// A PULL peer on the PUSH sink that never reads while the soak runs; at the end it reads
/// what it was given and returns the indexes of the items in it (they are the stream's too).
fn deaf_pull(push: SocketAddr, stop: Arc<AtomicBool>, t: Tally) -> Vec<u64> {
    let Some(mut c) = connect(push) else {
        return Vec::new();
    };
    let mut hello = zmtp::greeting().to_vec();
    hello.extend_from_slice(&zmtp::ready(SocketType::Pull));
    let _ = c.write_all(&hello);
    t.add("deaf pull: connections", 1);
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Read all it holds (the sink may have closed it meanwhile).
    let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
    let mut bytes = Vec::new();
    let _ = c.read_to_end(&mut bytes);
    t.add("deaf pull: bytes given to it", bytes.len() as u64);
    let mut items = Vec::new();
    let mut at = zmtp::greeting().len();
    while at + 2 <= bytes.len() {
        let flags = bytes[at];
        let (len, head) = if flags & 2 != 0 {
            if at + 9 > bytes.len() {
                break;
            }
            (
                u64::from_be_bytes(bytes[at + 1..at + 9].try_into().unwrap()) as usize,
                9,
            )
        } else {
            (bytes[at + 1] as usize, 2)
        };
        let body = at + head;
        if body + len > bytes.len() {
            // A message cut off: the sink closed this peer while it did not read, and the
            // rest of the message went with the connection (as in libzmq). Its items were
            // given to this peer: count them from the first.
            if flags & 4 == 0 && body + 8 <= bytes.len() {
                let first = u64::from_le_bytes(bytes[body..body + 8].try_into().unwrap());
                if let Some(i) = index_of(first) {
                    items.extend(i..i + len as u64 / 8);
                    t.add("deaf pull: items in a message cut off", len as u64 / 8);
                }
            }
            break;
        }
        if flags & 4 == 0 {
            for w in bytes[body..body + len].chunks_exact(8) {
                items.extend(index_of(u64::from_le_bytes(w.try_into().unwrap())));
            }
        }
        at = body + len;
    }
    t.add(
        "deaf pull: bytes left unparsed",
        (bytes.len().max(at) - at) as u64,
    );
    t.add("deaf pull: items given to it", items.len() as u64);
    items
}

/// A SUB that subscribes to thousands of duplicate and distinct prefixes (none the stream's),
/// a new connection each second.
fn sub_storm(pub_addr: SocketAddr, stop: Arc<AtomicBool>, t: Tally) {
    let mut round = 0u32;
    while !stop.load(Ordering::SeqCst) {
        round += 1;
        if let Some(mut c) = connect(pub_addr) {
            let mut b = zmtp::greeting().to_vec();
            b.extend_from_slice(&zmtp::ready(SocketType::Sub));
            for _ in 0..5000 {
                b.extend_from_slice(&zmtp::subscription_message(b"zz", true));
            }
            for i in 0..2000u32 {
                b.extend_from_slice(&zmtp::subscription_message(
                    format!("zz{round}-{i}").as_bytes(),
                    true,
                ));
            }
            if c.write_all(&b).is_ok() {
                t.add("sub storm: subscriptions sent", 7000);
            }
            sleep_unless(&stop, Duration::from_secs(1));
            if closed(&c) {
                t.add("sub storm: closed by the publisher", 1);
            }
            t.add("sub storm: connections", 1);
        }
    }
}

/// Peers that announce a huge frame, send a little of it and stop: on the PUSH sink a
/// command before READY (so that no items are routed to it), on the PUB sink a subscription
/// message after READY.
fn huge_frame(push: SocketAddr, pub_addr: SocketAddr, stop: Arc<AtomicBool>, t: Tally) {
    while !stop.load(Ordering::SeqCst) {
        let mut held = Vec::new();
        for (addr, ready) in [(push, None), (pub_addr, Some(SocketType::Sub))] {
            if let Some(mut c) = connect(addr) {
                let mut b = zmtp::greeting().to_vec();
                let flags = match ready {
                    Some(kind) => {
                        b.extend_from_slice(&zmtp::ready(kind));
                        0
                    }
                    None => 4,
                };
                let (head, n) = zmtp::frame_header(1 << 40, flags);
                b.extend_from_slice(&head[..n]);
                b.extend_from_slice(&[0u8; 100]);
                let _ = c.write_all(&b);
                t.add("huge frame: announced 1 TiB", 1);
                held.push(c);
            }
        }
        sleep_unless(&stop, Duration::from_secs(2));
        let gone = held.iter().filter(|c| closed(c)).count();
        t.add("huge frame: closed by the listener", gone as u64);
    }
}

/// A connection flood on the worker: 200 connections, held 2 s, in waves.
fn worker_flood(worker: SocketAddr, stop: Arc<AtomicBool>, t: Tally) {
    while !stop.load(Ordering::SeqCst) {
        let held: Vec<TcpStream> = (0..200)
            .filter_map(|_| TcpStream::connect_timeout(&worker, Duration::from_millis(500)).ok())
            .collect();
        t.add("worker flood: connections", held.len() as u64);
        sleep_unless(&stop, Duration::from_secs(2));
        let gone = held.iter().filter(|c| closed(c)).count();
        t.add("worker flood: closed by the worker", gone as u64);
    }
}

fn start_worker(key: ClusterKey) -> (SocketAddr, StopHandle, JoinHandle<Result<(), String>>) {
    let opts = WorkerOptions {
        accept: AcceptOptions {
            budget: Duration::from_secs(1),
            ..worker::default_accept()
        },
        ..WorkerOptions::new(
            "soak",
            "soak",
            key,
            PathBuf::from("/nonexistent/key"),
            std::env::temp_dir(),
        )
    };
    let w = Worker::bind(opts, sluice_blocks::graph_blocks::standard_registry()).unwrap();
    let addr = w.local_addr();
    let stop = StopHandle::new();
    let s = stop.clone();
    let run = std::thread::spawn(move || w.serve(&s).map_err(|e| e.to_string()));
    (addr, stop, run)
}

/// A controller's handshake with the worker, retried for up to 30 s.
fn controller_handshake(addr: SocketAddr, key: ClusterKey) -> Result<Duration, String> {
    let creds = Credentials::from_key(key, Purpose::Control).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut last = String::from("no connection");
    while start.elapsed() < Duration::from_secs(30) {
        if let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            match secure::connect(&mut s, &creds, Duration::from_secs(10)) {
                Ok(_) => return Ok(start.elapsed()),
                Err(e) => last = e.to_string(),
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(last)
}

#[test]
#[ignore = "a soak: scripts/soak_hostile.sh"]
fn hostile_peers_cannot_stop_freeze_or_bloat_a_graph() {
    let seconds: u64 = std::env::var("SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(180);
    let rss_start = rss_mib();
    let streams = vec![keyed_tcp(), fenced_tcp(), zmq_push(), zmq_pub()];
    let worker_key = ClusterKey::random().unwrap();
    let (worker_addr, worker_stop, worker_run) = start_worker(worker_key.clone());

    // The attackers.
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Tally::default();
    let mut targets: Vec<SocketAddr> = streams.iter().map(|s| s.listen).collect();
    targets.push(worker_addr);
    let push_addr = streams[2].listen;
    let pub_addr = streams[3].listen;
    let mut attackers: Vec<JoinHandle<()>> = Vec::new();
    {
        let (s, t, ts) = (stop.clone(), tally.clone(), targets.clone());
        attackers.push(std::thread::spawn(move || silent(ts, s, t)));
        let (s, t, ts) = (stop.clone(), tally.clone(), targets.clone());
        attackers.push(std::thread::spawn(move || trickle(ts, s, t)));
        let (s, t, ts) = (stop.clone(), tally.clone(), targets.clone());
        attackers.push(std::thread::spawn(move || probes(ts, s, t)));
        let (s, t) = (stop.clone(), tally.clone());
        attackers.push(std::thread::spawn(move || sub_storm(pub_addr, s, t)));
        let (s, t) = (stop.clone(), tally.clone());
        attackers.push(std::thread::spawn(move || {
            huge_frame(push_addr, pub_addr, s, t)
        }));
        let (s, t) = (stop.clone(), tally.clone());
        attackers.push(std::thread::spawn(move || worker_flood(worker_addr, s, t)));
    }
    let streams_ended = Arc::new(AtomicBool::new(false));
    let deaf = {
        let (s, t) = (streams_ended.clone(), tally.clone());
        std::thread::spawn(move || deaf_pull(push_addr, s, t))
    };

    // The soak: a line a second.
    let started = Instant::now();
    let mut rss_max = rss_start;
    let mut worker_died = false;
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_secs(1));
        let rss = rss_mib();
        rss_max = rss_max.max(rss);
        let delivered: Vec<String> = streams
            .iter()
            .map(|s| format!("{}={}", s.name, s.rx.lock().unwrap().delivered))
            .collect();
        println!(
            "t={:>4}s rss={:>7.1} MiB {}",
            started.elapsed().as_secs(),
            rss,
            delivered.join(" ")
        );
        if worker_run.is_finished() {
            worker_died = true;
            println!("the worker ended during the soak");
            break;
        }
    }

    // The worker still admits a controller while the attacks go on.
    let handshake = controller_handshake(worker_addr, worker_key);
    println!("controller handshake with the worker at the end: {handshake:?}");

    // The end: the attackers stop, the streams end.
    stop.store(true, Ordering::SeqCst);
    for a in attackers {
        a.join().unwrap();
    }
    for s in &streams {
        s.gen_stop.store(true, Ordering::SeqCst);
    }
    // The deaf PULL reads what it was given once nothing more is produced.
    std::thread::sleep(Duration::from_secs(1));
    streams_ended.store(true, Ordering::SeqCst);
    let deaf_items = deaf.join().unwrap();
    let mut failures = Vec::new();
    let mut rows = Vec::new();
    let mut listener_lines = Vec::new();
    for s in streams {
        let Stream {
            name,
            tx,
            rx,
            tx_run,
            rx_run,
            stops,
            ..
        } = s;
        let (tx_result, rx_result) = match stops {
            None => (tx_run.join().unwrap(), rx_run.join().unwrap()),
            Some((rx_stop, tx_stop)) => {
                // Wait for the receiver to take in what was sent (or stop coming), then stop.
                let t0 = Instant::now();
                while !tx_run.is_finished() && t0.elapsed() < Duration::from_secs(3) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let sent = tx.lock().unwrap().sent;
                let extra = if name == "zmq push/pull" {
                    deaf_items.len() as u64
                } else {
                    0
                };
                let mut last = (Instant::now(), u64::MAX);
                loop {
                    let r = rx.lock().unwrap();
                    let have = r.delivered + r.first.unwrap_or(0) + extra;
                    drop(r);
                    if have >= sent || last.0.elapsed() > Duration::from_secs(5) {
                        break;
                    }
                    if have != last.1 {
                        last = (Instant::now(), have);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                rx_stop.stop();
                tx_stop.stop();
                (tx_run.join().unwrap(), rx_run.join().unwrap())
            }
        };
        for w in warnings(&tx_result).into_iter().chain(warnings(&rx_result)) {
            listener_lines.push(format!("{name}: {w}"));
        }
        if let Err(e) = &tx_result {
            failures.push(format!("{name}: the sender failed: {e}"));
        }
        if let Err(e) = &rx_result {
            failures.push(format!("{name}: the receiver failed: {e}"));
        }
        let tx = tx.lock().unwrap();
        let rx = rx.lock().unwrap();
        let (identical, note) = match name {
            "zmq push/pull" => {
                // Round robin: what the deaf peer was given is missing from the receiver;
                // together they are the stream, each item once.
                let mut all: Vec<u64> = deaf_items.clone();
                all.sort_unstable();
                let deaf_ok = all.windows(2).all(|w| w[0] < w[1]);
                let ok =
                    rx.bad == 0 && deaf_ok && rx.delivered + deaf_items.len() as u64 == tx.sent;
                (
                    ok,
                    format!(
                        "{} went to the deaf PULL (round robin; its last {:?}, the receiver's last {:?})",
                        deaf_items.len(),
                        all.last(),
                        rx.last
                    ),
                )
            }
            "zmq pub/sub" => {
                // A subscriber joins late: it may miss the head, then must have every item.
                let head = rx.first.unwrap_or(0);
                let ok = rx.bad == 0 && rx.gaps == 0 && rx.delivered + head == tx.sent;
                (ok, format!("{head} published before the subscription took"))
            }
            _ => (
                rx.bad == 0 && rx.delivered == tx.sent && rx.sum == tx.sum,
                String::new(),
            ),
        };
        if !identical {
            failures.push(format!(
                "{name}: sent {} delivered {} (gaps {}, bad {}, checksums {:#x}/{:#x})",
                tx.sent, rx.delivered, rx.gaps, rx.bad, tx.sum, rx.sum
            ));
        }
        rows.push(format!(
            "{name:<14} {:>12} {:>12} {:>10}  {note}",
            tx.sent,
            rx.delivered,
            if identical { "yes" } else { "NO" }
        ));
    }
    let handshake_ok = handshake.is_ok();
    worker_stop.stop();
    let worker_result = worker_run.join().unwrap();
    if worker_died || !handshake_ok || worker_result.is_err() {
        failures.push(format!(
            "the worker: died {worker_died}, handshake {handshake:?}, serve {worker_result:?}"
        ));
    }
    // Let the last connections close before the last sample.
    std::thread::sleep(Duration::from_secs(1));
    let rss_end = rss_mib();
    rss_max = rss_max.max(rss_end);
    if rss_end > rss_start + 256.0 {
        failures.push(format!(
            "RSS grew from {rss_start:.1} MiB to {rss_end:.1} MiB"
        ));
    }

    println!("\n==== soak summary ({seconds} s) ====");
    println!(
        "{:<14} {:>12} {:>12} {:>10}",
        "stream", "sent", "delivered", "identical"
    );
    for r in &rows {
        println!("{r}");
    }
    println!(
        "worker: alive {}, controller handshake at the end {handshake:?}",
        !worker_died && worker_result.is_ok()
    );
    println!("RSS MiB: start {rss_start:.1}, max {rss_max:.1}, end {rss_end:.1}");
    println!("-- what the listeners reported (run-report warnings) --");
    for l in &listener_lines {
        println!("{l}");
    }
    println!("-- what the attackers did --");
    for (what, n) in tally.0.lock().unwrap().iter() {
        println!("{what:<40} {n}");
    }
    assert!(
        failures.is_empty(),
        "the soak failed:\n{}",
        failures.join("\n")
    );
}
