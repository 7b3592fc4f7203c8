//! Hostile and broken peers on loopback: each closes its own connection only (counted and
//! logged), never the socket, and the legitimate peer's messages arrive whole and in order.
//! Every timeout and limit is set to at most 1 s; every loop is bounded.

mod common;

use common::{pattern, recv_msg, send_msg};
use sluice_zmq::zmtp::{self, SocketType};
use sluice_zmq::{Sent, Socket, SocketOptions};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(10);

/// Short settings, as the tests need them.
fn short() -> SocketOptions {
    SocketOptions {
        handshake_ivl: Duration::from_millis(300),
        frame_timeout: Duration::from_millis(300),
        accept_backoff: Duration::from_millis(20),
        log_interval: Duration::from_millis(100),
        ..SocketOptions::default()
    }
}

fn bound(kind: SocketType, opts: SocketOptions) -> (Socket, String) {
    let s = Socket::new(kind, "tcp://127.0.0.1:0", true, opts).unwrap();
    let url = format!("tcp://{}", s.local_addr().unwrap());
    (s, url)
}

fn raw(url: &str) -> TcpStream {
    let c = TcpStream::connect(url.trim_start_matches("tcp://")).unwrap();
    c.set_nodelay(true).unwrap();
    c
}

/// A raw peer's handshake as a `kind` socket: greeting and READY.
fn handshake(kind: SocketType) -> Vec<u8> {
    let mut b = zmtp::greeting().to_vec();
    b.extend_from_slice(&zmtp::ready(kind));
    b
}

/// Whether the server closed `c` (EOF or reset) within `limit`, reading and dropping what
/// it sent meanwhile; `during` runs between reads (it drives the server's socket).
fn closed_within(c: &mut TcpStream, limit: Duration, mut during: impl FnMut()) -> bool {
    c.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    while start.elapsed() < limit {
        during();
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
    false
}

/// A PUSH socket connected to `url` that sends `count` messages (`pattern(i, 100)`).
fn push_messages(url: &str, count: usize) -> std::thread::JoinHandle<()> {
    let url = url.to_string();
    std::thread::spawn(move || {
        let mut s = Socket::new(SocketType::Push, &url, false, SocketOptions::default()).unwrap();
        for i in 0..count {
            send_msg(&mut s, &[&pattern(i, 100)], LIMIT);
        }
        s.linger(Duration::from_millis(500));
    })
}

/// A bound PULL socket with a hostile peer that sent `attack`, then a legitimate PUSH: its
/// ten messages arrive (the socket never fails) and the hostile connection was refused.
fn pull_survives(attack: &[u8], opts: SocketOptions) -> String {
    let (mut s, url) = bound(SocketType::Pull, opts);
    let mut bad = raw(&url);
    bad.write_all(attack).unwrap();
    // The hostile bytes are taken in (and refused) first.
    let start = Instant::now();
    while s.refused() == 0 {
        assert!(start.elapsed() < LIMIT, "the hostile peer is never refused");
        assert_eq!(s.next_frame().expect("the socket lives on"), None);
        s.wait(Duration::from_millis(5), false);
    }
    let pusher = push_messages(&url, 10);
    for i in 0..10 {
        assert_eq!(recv_msg(&mut s, LIMIT), vec![pattern(i, 100)]);
    }
    pusher.join().unwrap();
    assert!(
        closed_within(&mut bad, LIMIT, || {
            let _ = s.next_frame().expect("the socket lives on");
        }),
        "the hostile connection stays open"
    );
    assert!(s.refused() >= 1, "refusal not counted");
    s.last_refusal().unwrap().to_string()
}

#[test]
fn an_http_probe_closes_only_its_connection_on_a_pull_source() {
    let why = pull_survives(b"GET / HTTP/1.1\r\n\r\n", short());
    assert!(why.contains("not a ZeroMQ peer"), "{why}");
    // What the peer sent is shown escaped, never raw.
    assert!(why.contains(r"GET / HTTP/1.1\r\n\r\n"), "{why}");
}

#[test]
fn an_oversize_frame_closes_only_its_connection() {
    let mut attack = handshake(SocketType::Push);
    attack.push(zmtp::LONG);
    attack.extend_from_slice(&(1u64 << 62).to_be_bytes());
    let why = pull_survives(&attack, short());
    assert!(why.contains("exceeds the limit"), "{why}");
}

#[test]
fn a_wrong_mechanism_closes_only_its_connection() {
    let mut attack = zmtp::greeting().to_vec();
    attack[12..32].fill(0);
    attack[12..17].copy_from_slice(b"CURVE");
    let why = pull_survives(&attack, short());
    assert!(why.contains("CURVE"), "{why}");
}

#[test]
fn a_wrong_socket_type_closes_only_its_connection() {
    let why = pull_survives(&handshake(SocketType::Pub), short());
    assert!(why.contains("PUB"), "{why}");
}

#[test]
fn an_http_probe_closes_only_its_connection_on_a_pub_sink() {
    let (mut s, url) = bound(SocketType::Pub, short());
    let mut bad = raw(&url);
    bad.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let sub = {
        let (url, done) = (url.clone(), done.clone());
        std::thread::spawn(move || {
            let mut s =
                Socket::new(SocketType::Sub, &url, false, SocketOptions::default()).unwrap();
            let got = recv_msg(&mut s, LIMIT);
            done.store(true, Ordering::SeqCst);
            got
        })
    };
    let start = Instant::now();
    let body = pattern(1, 100);
    while !done.load(Ordering::SeqCst) {
        assert!(start.elapsed() < LIMIT, "the subscriber got nothing");
        s.send(&[&[&body]]).expect("the socket lives on");
        s.wait(Duration::from_millis(5), false);
    }
    assert_eq!(sub.join().unwrap(), vec![body]);
    assert!(closed_within(&mut bad, LIMIT, || s
        .poll()
        .expect("the socket lives on")));
    assert!(s.refused() >= 1);
}

#[test]
fn silent_connections_meet_the_handshake_deadline_and_the_peer_cap() {
    let opts = SocketOptions {
        max_peers: 4,
        ..short()
    };
    let (mut s, url) = bound(SocketType::Pull, opts);
    let mut silent: Vec<TcpStream> = (0..8).map(|_| raw(&url)).collect();
    for c in &mut silent {
        assert!(
            closed_within(c, LIMIT, || {
                let _ = s.next_frame().expect("the socket lives on");
                s.wait(Duration::from_millis(1), false);
            }),
            "a silent connection is never closed"
        );
    }
    assert!(s.refused() >= 8, "refused {}", s.refused());
    let pusher = push_messages(&url, 3);
    for i in 0..3 {
        assert_eq!(recv_msg(&mut s, LIMIT), vec![pattern(i, 100)]);
    }
    pusher.join().unwrap();
}

/// A connection to `url` from `source` (any address of 127/8: Linux routes them all to the
/// loopback interface), as a host other than 127.0.0.1 would make it.
fn raw_from(source: std::net::Ipv4Addr, url: &str) -> TcpStream {
    use rustix::net::{bind, connect, socket, AddressFamily, SocketType as Kind};
    let to: std::net::SocketAddr = url.trim_start_matches("tcp://").parse().unwrap();
    let fd = socket(AddressFamily::INET, Kind::STREAM, None).unwrap();
    bind(&fd, &std::net::SocketAddrV4::new(source, 0)).unwrap();
    connect(&fd, &to).unwrap();
    TcpStream::from(fd)
}

#[test]
fn silent_connections_from_one_address_leave_room_for_another() {
    let opts = SocketOptions {
        max_peers: 8,
        max_pending_per_ip: 2,
        // Long enough for the legitimate peer to come while the held ones wait.
        handshake_ivl: Duration::from_secs(1),
        ..short()
    };
    let (mut s, url) = bound(SocketType::Pull, opts);
    let attacker = std::net::Ipv4Addr::new(127, 0, 0, 2);
    // More than max_peers: without a cap per address they would take every place.
    let _silent: Vec<TcpStream> = (0..12).map(|_| raw_from(attacker, &url)).collect();
    let start = Instant::now();
    while s.refused() < 10 {
        assert!(
            start.elapsed() < LIMIT,
            "only {} of the silent connections from 127.0.0.2 were refused; the last: {:?}",
            s.refused(),
            s.last_refusal()
        );
        assert_eq!(s.next_frame().expect("the socket lives on"), None);
        s.wait(Duration::from_millis(5), false);
    }
    assert!(
        s.last_refusal()
            .unwrap_or_default()
            .contains("max_pending_per_ip"),
        "{:?}",
        s.last_refusal()
    );
    // The legitimate peer connects once from 127.0.0.1 and sends one large message.
    let body = pattern(7, 100_000);
    let mut hello = handshake(SocketType::Push);
    hello.push(0x02); // a long final frame
    hello.extend_from_slice(&(body.len() as u64).to_be_bytes());
    hello.extend_from_slice(&body);
    let mut good = raw(&url);
    let writer = std::thread::spawn(move || {
        // A refused connection fails this write; the receiving side below then says so.
        let _ = good.write_all(&hello);
        good
    });
    assert_eq!(recv_msg(&mut s, LIMIT), vec![body]);
    drop(writer.join().unwrap());
}

/// A connecting socket that a listener cuts off at its cap (the listener closes the connection
/// unread, which resets it before any greeting) retries as libzmq does, and its messages come
/// once the silent connections from its own address are gone. (It used to fail at once:
/// "the peer closed the connection during the handshake".)
#[test]
fn a_connecting_peer_cut_off_at_the_cap_of_its_own_address_retries_and_gets_through() {
    let opts = SocketOptions {
        max_pending_per_ip: 2,
        // The silent connections below are closed after this; the legitimate peer then fits.
        handshake_ivl: Duration::from_millis(500),
        ..short()
    };
    let (mut push, url) = bound(SocketType::Push, opts);
    // Two silent connections from 127.0.0.1 take that address's places.
    let silent: Vec<TcpStream> = (0..2).map(|_| raw(&url)).collect();
    let body = pattern(3, 1000);
    let sender = {
        let body = body.clone();
        std::thread::spawn(move || {
            send_msg(&mut push, &[&body], LIMIT);
            push.linger(Duration::from_millis(500));
        })
    };
    // The legitimate PULL, from 127.0.0.1 too, retrying for up to its own handshake_ivl.
    let mut pull = Socket::new(
        SocketType::Pull,
        &url,
        false,
        SocketOptions {
            handshake_ivl: Duration::from_secs(5),
            ..short()
        },
    )
    .unwrap();
    assert_eq!(recv_msg(&mut pull, LIMIT), vec![body]);
    sender.join().unwrap();
    drop(silent);
}

#[test]
fn a_peer_that_stops_in_the_middle_of_a_frame_is_closed() {
    let (mut s, url) = bound(SocketType::Pull, short());
    let mut bad = raw(&url);
    let mut attack = handshake(SocketType::Push);
    attack.extend_from_slice(&[0, 200]);
    attack.extend_from_slice(&[0xee; 10]);
    bad.write_all(&attack).unwrap();
    // The frame starts; its body never ends.
    let start = Instant::now();
    let frame = loop {
        assert!(start.elapsed() < LIMIT, "the frame never started");
        if let Some(f) = s.next_frame().expect("the socket lives on") {
            break f;
        }
        s.wait(Duration::from_millis(5), false);
    };
    assert_eq!(frame.len, 200);
    let mut body = [0u8; 200];
    let mut at = 0;
    let err = loop {
        assert!(
            start.elapsed() < LIMIT,
            "a stalled frame is waited for forever"
        );
        match s.read_into(&mut body[at..]) {
            Ok(k) => at += k,
            Err(e) => break e,
        }
        s.wait(Duration::from_millis(5), false);
    };
    assert!(err.is_peer(), "{err}");
    assert_eq!(at, 10);
    let pusher = push_messages(&url, 3);
    for i in 0..3 {
        assert_eq!(recv_msg(&mut s, LIMIT), vec![pattern(i, 100)]);
    }
    pusher.join().unwrap();
    assert!(s.last_refusal().unwrap().contains("frame_timeout"));
}

/// A PULL peer that completes its handshake and never reads again, and a sluice PULL that
/// counts what it gets: the PUSH must keep delivering to the second.
fn push_skips_a_peer_that_never_reads(size: usize) {
    let opts = SocketOptions {
        hwm_bytes: 64 << 10,
        ..short()
    };
    let (mut s, url) = bound(SocketType::Push, opts);
    let mut deaf = raw(&url);
    deaf.write_all(&handshake(SocketType::Pull)).unwrap();
    let start = Instant::now();
    while s.ready_peers() < 1 {
        assert!(start.elapsed() < LIMIT);
        s.poll().unwrap();
        s.wait(Duration::from_millis(5), false);
    }
    const WANT: usize = 2000;
    let got = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (url, got) = (url.clone(), got.clone());
        std::thread::spawn(move || {
            let mut r =
                Socket::new(SocketType::Pull, &url, false, SocketOptions::default()).unwrap();
            let start = Instant::now();
            while got.load(Ordering::SeqCst) < WANT && start.elapsed() < LIMIT {
                let m = recv_msg(&mut r, LIMIT);
                assert_eq!(m[0].len(), size);
                got.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let body = vec![7u8; size];
    let start = Instant::now();
    while got.load(Ordering::SeqCst) < WANT {
        assert!(
            start.elapsed() < LIMIT,
            "delivery stopped after {} messages of {size} bytes",
            got.load(Ordering::SeqCst)
        );
        match s.send(&[&[&body]]).expect("send") {
            Sent::Done => {}
            Sent::Pending | Sent::NoPeer => s.wait(Duration::from_millis(1), true),
        }
    }
    reader.join().unwrap();
    drop(deaf);
}

#[test]
fn push_skips_a_peer_that_never_reads_large_messages() {
    push_skips_a_peer_that_never_reads(16 << 10);
}

#[test]
fn push_skips_a_peer_that_never_reads_small_messages() {
    push_skips_a_peer_that_never_reads(1 << 10);
}

#[test]
fn a_pub_counts_repeated_subscriptions_and_bounds_distinct_ones() {
    let opts = SocketOptions {
        max_subscriptions: 16,
        ..short()
    };
    let (mut s, url) = bound(SocketType::Pub, opts);
    let mut sub = raw(&url);
    let mut b = handshake(SocketType::Sub);
    for _ in 0..10_000 {
        b.extend_from_slice(&zmtp::subscription_message(b"abc", true));
    }
    b.extend_from_slice(&zmtp::subscription_command(b"zz", true));
    sub.write_all(&b).unwrap();
    let start = Instant::now();
    while s.subscriptions() < 2 {
        assert!(
            start.elapsed() < LIMIT,
            "subscriptions: {}",
            s.subscriptions()
        );
        s.poll().unwrap();
        s.wait(Duration::from_millis(5), false);
    }
    // Ten thousand repeats hold one topic.
    assert_eq!(s.subscriptions(), 2);
    assert_eq!(s.refused(), 0);
    // Distinct topics beyond the bound close the connection.
    let mut b = Vec::new();
    for i in 0..20u8 {
        b.extend_from_slice(&zmtp::subscription_message(&[b't', i], true));
    }
    sub.write_all(&b).unwrap();
    assert!(closed_within(&mut sub, LIMIT, || s
        .poll()
        .expect("the socket lives on")));
    assert_eq!(s.refused(), 1);
    assert_eq!(s.subscriptions(), 0);
}

// ---- The blocks: a graph keeps running, and only whole messages of the legitimate peer
// reach the stream.

use sluice_runtime::{Graph, Node, NodeError, Ports, RunOptions, StopHandle, Work, WorkIo};
use sluice_zmq::{ZmqOptions, ZmqSink, ZmqSource};
use std::sync::Mutex;

/// Keeps the first `limit` bytes, then ends (which ends the source).
struct Keep {
    limit: usize,
    seen: Arc<Mutex<Vec<u8>>>,
}

impl Node for Keep {
    fn ports(&self) -> Ports {
        Ports::new().input::<u8>("in")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u8>(0)?;
        let mut seen = self.seen.lock().unwrap();
        if seen.len() >= self.limit {
            return Ok(Work::Done);
        }
        let Some(w) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if w.is_empty() {
            return Ok(Work::Done);
        }
        let n = w.len().min(self.limit - seen.len());
        seen.extend_from_slice(&w[..n]);
        input.consume(n);
        Ok(Work::Progress)
    }
}

/// Produces `count` bytes `0, 1, 2, ...` (mod 256).
struct Bytes {
    count: usize,
    next: usize,
}

impl Node for Bytes {
    fn ports(&self) -> Ports {
        Ports::new().output::<u8>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next == self.count {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u8>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min(self.count - self.next);
        for (k, x) in space[..n].iter_mut().enumerate() {
            *x = (self.next + k) as u8;
        }
        out.commit(n);
        self.next += n;
        Ok(Work::Progress)
    }
}

/// Runs `graph` on a thread until `done` returns; stops it then (also when `done` panics).
fn run_while(graph: Graph, done: impl FnOnce()) {
    let stop = StopHandle::new();
    let opts = RunOptions {
        stop: Some(stop.clone()),
        ..RunOptions::default()
    };
    let t = std::thread::spawn(move || graph.run(&opts));
    struct Stop(StopHandle);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.stop();
        }
    }
    let guard = Stop(stop);
    done();
    drop(guard);
    t.join().unwrap().expect("the graph ran to its end");
}

fn block_opts() -> ZmqOptions {
    ZmqOptions {
        frame_timeout: Duration::from_millis(300),
        handshake_ivl: Duration::from_secs(1),
        ..ZmqOptions::new("tcp://127.0.0.1:0", true)
    }
}

#[test]
fn a_pull_source_never_delivers_a_stalled_peers_partial_message() {
    let source = ZmqSource::<u8>::new(SocketType::Pull, block_opts()).unwrap();
    let url = format!("tcp://{}", source.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut g = Graph::new();
    let a = g.add("zmq_source", source).unwrap();
    let b = g
        .add(
            "keep",
            Keep {
                limit: 300,
                seen: seen.clone(),
            },
        )
        .unwrap();
    g.connect(a, "out", b, "in").unwrap();
    let mut bad = raw(&url);
    let mut attack = handshake(SocketType::Push);
    attack.extend_from_slice(&[0, 200]);
    attack.extend_from_slice(&[0xee; 10]);
    bad.write_all(&attack).unwrap();
    run_while(g, || {
        std::thread::sleep(Duration::from_millis(100));
        let pusher = push_messages(&url, 3);
        let start = Instant::now();
        while seen.lock().unwrap().len() < 300 {
            assert!(
                start.elapsed() < LIMIT,
                "the legitimate messages did not arrive: {:?}",
                seen.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        pusher.join().unwrap();
    });
    let want: Vec<u8> = (0..3).flat_map(|i| pattern(i, 100)).collect();
    assert_eq!(*seen.lock().unwrap(), want);
}

#[test]
fn a_rep_sink_survives_a_late_request_and_serves_the_next_requester() {
    let sink = ZmqSink::<u8>::new(
        SocketType::Rep,
        ZmqOptions {
            frame_timeout: Duration::from_millis(500),
            ..block_opts()
        },
    )
    .unwrap();
    let url = format!("tcp://{}", sink.local_addr().unwrap());
    let mut g = Graph::new();
    let a = g
        .add(
            "bytes",
            Bytes {
                count: 1000,
                next: 0,
            },
        )
        .unwrap();
    let b = g.add("zmq_sink", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    // A request whose body comes 1.2 s after its header.
    let mut late = raw(&url);
    let mut req = handshake(SocketType::Req);
    req.extend_from_slice(&[zmtp::MORE, 0, 0, 4, 10, 0]);
    late.write_all(&req).unwrap();
    run_while(g, || {
        std::thread::sleep(Duration::from_millis(100));
        let mut s = Socket::new(SocketType::Req, &url, false, SocketOptions::default()).unwrap();
        send_msg(&mut s, &[&10u32.to_le_bytes()], LIMIT);
        let reply = recv_msg(&mut s, LIMIT);
        assert_eq!(reply.len(), 1);
        assert_eq!(reply[0].len(), 10);
        std::thread::sleep(Duration::from_millis(1200));
        let _ = late.write_all(&[0, 0]);
        // The sink still serves.
        send_msg(&mut s, &[&5u32.to_le_bytes()], LIMIT);
        let reply = recv_msg(&mut s, LIMIT);
        assert_eq!(reply[0].len(), 5);
    });
}

#[test]
fn what_a_peer_names_is_escaped_before_it_is_logged() {
    let evil = b"\x1b[2J\x07PUSH\n";
    let mut props = vec![11u8];
    props.extend_from_slice(b"Socket-Type");
    props.extend_from_slice(&(evil.len() as u32).to_be_bytes());
    props.extend_from_slice(evil);
    let mut attack = zmtp::greeting().to_vec();
    attack.extend_from_slice(&zmtp::command("READY", &props));
    let why = pull_survives(&attack, short());
    assert!(why.contains(r"\x1b[2J\x07PUSH\n"), "{why}");
    assert!(!why.contains('\x1b') && !why.contains('\x07'), "{why}");
}
