//! gr-zeromq's message blocks against a real GNU Radio 3.10 (Debian's `gnuradio`, Python
//! API), both directions, over PUB/SUB, PUSH/PULL and REQ/REP, with messages of several PMT types
//! compared value for value; and hostile peers sending a source a frame over its limit and
//! bytes that are not a PMT.
//!
//! * GNU Radio → sluice: a Python block sends the messages through `zeromq.pub_msg_sink`,
//!   `zeromq.push_msg_sink` or `zeromq.rep_msg_sink` (connecting) → sluice `ZmqMsgSource`
//!   (binding) → `message_debug`, which keeps them.
//! * sluice → GNU Radio: a sluice node sends them → `ZmqMsgSink` (binding) →
//!   `zeromq.sub_msg_source`, `zeromq.pull_msg_source` or `zeromq.req_msg_source` (connecting)
//!   → `blocks.message_debug`, whose stored messages the script prints serialized, in hex.
//!
//! A subscriber misses what is published before its subscription arrives, so each sender
//! first repeats a `sync` symbol until the receiver has seen one; receivers leave those out.
//!
//! Run: `cargo test -p sluice-zmq --test messages` (after scripts/setup.sh).

mod common;

use common::Py;
use num_complex::Complex32;
use sluice_blocks::blocks::messages::MessageDebug;
use sluice_pmt as pmt;
use sluice_runtime::{
    Graph, Message, MessageKind, MessageOut, Node, NodeError, Pdu, Ports, RunOptions, Sent,
    StopHandle, TagValue, Uniform, Work, WorkIo,
};
use sluice_zmq::zmtp::{self, SocketType};
use sluice_zmq::{ZmqMsgSink, ZmqMsgSource, ZmqOptions};
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);

/// The messages both directions carry, as sluice builds them.
fn messages() -> Vec<Message> {
    vec![
        TagValue::Dict(vec![
            (TagValue::Str("a".into()), TagValue::I64(1)),
            (TagValue::Str("b".into()), TagValue::F64(2.5)),
        ]),
        TagValue::Tuple(vec![
            TagValue::I64(1),
            TagValue::Str("x".into()),
            TagValue::F64(0.5),
        ]),
        TagValue::Uniform(Uniform::F32(vec![1.5f32, -2.0, 0.25].into())),
        TagValue::bytes(&[0, 1, 254, 255]),
        Pdu {
            meta: vec![(TagValue::Str("len".into()), TagValue::I64(4))],
            data: Uniform::U8(vec![9u8, 8, 7, 6].into()),
        }
        .into_message(),
        Pdu {
            meta: vec![(TagValue::Str("freq".into()), TagValue::F64(1e6))],
            data: Uniform::F32(vec![0.5f32, -0.5, 3.0].into()),
        }
        .into_message(),
        Pdu {
            meta: vec![(TagValue::Str("burst".into()), TagValue::U64(u64::MAX))],
            data: Uniform::C32(vec![Complex32::new(1.0, -1.0)].into()),
        }
        .into_message(),
        TagValue::Str("hello".into()),
        TagValue::I64(1 << 40),
    ]
}

/// The same messages in GNU Radio's Python API. `dict_add` puts a new key in front, so `b`
/// is added first to put `a` first on the wire, as sluice's dict has it.
const PY_MESSAGES: &str = r#"
import pmt, sys, time, threading
from gnuradio import gr, blocks, zeromq
def d(*kv):
    m = pmt.make_dict()
    for k, v in reversed(kv):
        m = pmt.dict_add(m, pmt.intern(k), v)
    return m
MSGS = [
    d(("a", pmt.from_long(1)), ("b", pmt.from_double(2.5))),
    pmt.make_tuple(pmt.from_long(1), pmt.intern("x"), pmt.from_double(0.5)),
    pmt.init_f32vector(3, [1.5, -2.0, 0.25]),
    pmt.init_u8vector(4, [0, 1, 254, 255]),
    pmt.cons(d(("len", pmt.from_long(4))), pmt.init_u8vector(4, [9, 8, 7, 6])),
    pmt.cons(d(("freq", pmt.from_double(1e6))), pmt.init_f32vector(3, [0.5, -0.5, 3.0])),
    pmt.cons(d(("burst", pmt.from_uint64(2**64 - 1))), pmt.init_c32vector(1, [1 - 1j])),
    pmt.intern("hello"),
    pmt.from_long(1 << 40),
]
SYNC = pmt.intern("sync")
def is_sync(m):
    return pmt.is_symbol(m) and pmt.symbol_to_string(m) == "sync"
"#;

/// GNU Radio publishes (`pub`) or pushes (`push`), connecting to `url`: `sync` until stdin
/// says go, then the messages; it stops when stdin says done.
const PY_SEND: &str = r#"
class Src(gr.basic_block):
    def __init__(self):
        gr.basic_block.__init__(self, "py_msg_src", None, None)
        self.message_port_register_out(pmt.intern("out"))
kind, url = sys.argv[1], sys.argv[2]
tb = gr.top_block()
src = Src()
make = {"pub": zeromq.pub_msg_sink, "push": zeromq.push_msg_sink, "rep": zeromq.rep_msg_sink}[kind]
snk = make(url, 100, False)
tb.msg_connect(src, "out", snk, "in")
tb.start()
go = threading.Event()
def wait_go():
    sys.stdin.readline()
    go.set()
threading.Thread(target=wait_go, daemon=True).start()
end = time.time() + 30
while not go.is_set() and time.time() < end:
    src.message_port_pub(pmt.intern("out"), SYNC)
    time.sleep(0.02)
for m in MSGS:
    src.message_port_pub(pmt.intern("out"), m)
print("sent", flush=True)
sys.stdin.readline()
tb.stop()
tb.wait()
"#;

/// GNU Radio subscribes (`sub`) or pulls (`pull`), connecting to `url`, into
/// `blocks.message_debug`; says `ready` at its first message, then prints each non-`sync`
/// message serialized in hex once it has them all, and `end`.
const PY_RECEIVE: &str = r#"
kind, url = sys.argv[1], sys.argv[2]
tb = gr.top_block()
make = {"sub": zeromq.sub_msg_source, "pull": zeromq.pull_msg_source, "req": zeromq.req_msg_source}[kind]
src = make(url, 100, False)
dbg = blocks.message_debug()
tb.msg_connect(src, "out", dbg, "store")
tb.start()
end = time.time() + 30
while dbg.num_messages() == 0 and time.time() < end:
    time.sleep(0.01)
print("ready", flush=True)
def payload():
    got = [dbg.get_message(i) for i in range(dbg.num_messages())]
    return [m for m in got if not is_sync(m)]
while len(payload()) < len(MSGS) and time.time() < end:
    time.sleep(0.02)
for m in payload():
    print(pmt.serialize_str(m).hex(), flush=True)
print("end", flush=True)
tb.stop()
tb.wait()
"#;

fn gnuradio(body: &str, args: &[String]) -> Py {
    Py::start(
        &format!("{PY_MESSAGES}{body}"),
        args,
        "gnuradio.zeromq",
        "gnuradio",
    )
}

fn is_sync(m: &Message) -> bool {
    *m == TagValue::Str("sync".into())
}

fn bound() -> ZmqOptions {
    ZmqOptions {
        frame_timeout: Duration::from_millis(500),
        handshake_ivl: Duration::from_secs(2),
        ..ZmqOptions::new("tcp://127.0.0.1:0", true)
    }
}

/// Runs `graph` on a thread until `during` returns, then stops it (also when `during` panics);
/// the run's node warnings.
fn run_while(graph: Graph, during: impl FnOnce()) -> Vec<String> {
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
    during();
    drop(guard);
    let report = t.join().unwrap().expect("the graph ran to its end");
    report
        .nodes
        .into_iter()
        .flat_map(|n| {
            n.warnings
                .into_iter()
                .map(move |w| format!("{}: {w}", n.name))
        })
        .collect()
}

fn gnuradio_to_sluice(kind: SocketType, py_kind: &str) {
    let source = ZmqMsgSource::new(kind, bound()).unwrap();
    let url = format!("tcp://{}", source.local_addr().unwrap());
    let (debug, log) = MessageDebug::new(false, true);
    let mut g = Graph::new();
    let a = g.add("from_gnuradio", source).unwrap();
    let b = g.add("keep", debug).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    let mut p = gnuradio(PY_SEND, &[py_kind.to_string(), url]);
    let want = messages();
    let warnings = run_while(g, || {
        let start = Instant::now();
        while !log.messages().iter().any(is_sync) {
            assert!(start.elapsed() < LIMIT, "no sync message from GNU Radio");
            std::thread::sleep(Duration::from_millis(10));
        }
        p.say("go");
        assert_eq!(p.line(), "sent");
        while log.messages().iter().filter(|m| !is_sync(m)).count() < want.len() {
            assert!(
                start.elapsed() < LIMIT,
                "the messages did not all arrive: {:?}",
                log.messages()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    p.say("done");
    p.finish();
    let got: Vec<Message> = log.messages().into_iter().filter(|m| !is_sync(m)).collect();
    assert_eq!(got, want);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn gnuradio_pub_msg_sink_to_sluice_sub_msg_source() {
    gnuradio_to_sluice(SocketType::Sub, "pub");
}

#[test]
fn gnuradio_push_msg_sink_to_sluice_pull_msg_source() {
    gnuradio_to_sluice(SocketType::Pull, "push");
}

#[test]
fn gnuradio_rep_msg_sink_to_sluice_req_msg_source() {
    gnuradio_to_sluice(SocketType::Req, "rep");
}

/// Sends `sync` every 20 ms until `go`, then the test's messages, then ends.
struct Announcer {
    go: Arc<AtomicBool>,
    todo: Vec<Message>,
    next_sync: Instant,
    syncs: u32,
    held: Option<Message>,
    out: MessageOut,
    ports: Ports,
}

impl Announcer {
    fn new(go: Arc<AtomicBool>) -> Self {
        let mut ports = Ports::new();
        let out = ports.add_message_output("out", MessageKind::Any);
        let mut todo = messages();
        todo.reverse();
        Announcer {
            go,
            todo,
            next_sync: Instant::now(),
            syncs: 0,
            held: None,
            out,
            ports,
        }
    }
}

impl Node for Announcer {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let msg = match self.held.take() {
            Some(m) => m,
            None if self.go.load(Ordering::Acquire) => match self.todo.pop() {
                Some(m) => m,
                None => return Ok(Work::Done),
            },
            // 1500 syncs: 30 s without an answer ends the test's graph.
            None if self.syncs >= 1500 => return Ok(Work::Done),
            None => {
                let now = Instant::now();
                if now < self.next_sync {
                    std::thread::sleep(self.next_sync - now);
                    return Ok(Work::Progress);
                }
                self.next_sync = now + Duration::from_millis(20);
                self.syncs += 1;
                TagValue::Str("sync".into())
            }
        };
        if let Sent::Full(m) = io.outputs.message(self.out.index())?.send(msg)? {
            self.held = Some(m);
            return Ok(self.out.need());
        }
        Ok(Work::Progress)
    }
}

fn sluice_to_gnuradio(kind: SocketType, py_kind: &str) {
    let sink = ZmqMsgSink::new(kind, bound()).unwrap();
    let url = format!("tcp://{}", sink.local_addr().unwrap());
    let go = Arc::new(AtomicBool::new(false));
    let mut g = Graph::new();
    let a = g.add("announce", Announcer::new(go.clone())).unwrap();
    let b = g.add("to_gnuradio", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    let sender = std::thread::spawn(move || g.run(&RunOptions::default()));
    let mut p = gnuradio(PY_RECEIVE, &[py_kind.to_string(), url]);
    assert_eq!(p.line(), "ready");
    go.store(true, Ordering::Release);
    let mut got = Vec::new();
    loop {
        let line = p.line();
        if line == "end" {
            break;
        }
        let bytes: Vec<u8> = (0..line.len())
            .step_by(2)
            .map(|k| u8::from_str_radix(&line[k..k + 2], 16).unwrap())
            .collect();
        got.push(pmt::from_bytes(&bytes).expect("GNU Radio's serialization of a message"));
    }
    p.finish();
    let report = sender.join().unwrap().expect("sluice graph");
    assert_eq!(got, messages());
    let warnings: Vec<&String> = report.nodes.iter().flat_map(|n| &n.warnings).collect();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn sluice_push_msg_sink_to_gnuradio_pull_msg_source() {
    sluice_to_gnuradio(SocketType::Push, "pull");
}

#[test]
fn sluice_pub_msg_sink_to_gnuradio_sub_msg_source() {
    sluice_to_gnuradio(SocketType::Pub, "sub");
}

#[test]
fn sluice_rep_msg_sink_to_gnuradio_req_msg_source() {
    sluice_to_gnuradio(SocketType::Rep, "req");
}

/// A raw PUSH peer of `url`: its handshake sent.
fn raw_pusher(url: &str) -> TcpStream {
    let mut c = TcpStream::connect(url.trim_start_matches("tcp://")).unwrap();
    c.set_nodelay(true).unwrap();
    let mut hello = zmtp::greeting().to_vec();
    hello.extend_from_slice(&zmtp::ready(SocketType::Push));
    c.write_all(&hello).unwrap();
    c
}

/// A short data frame (one frame, no more) of `body`.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8, body.len() as u8];
    f.extend_from_slice(body);
    f
}

#[test]
fn a_pull_msg_source_drops_hostile_frames_and_goes_on() {
    let source = ZmqMsgSource::new(
        SocketType::Pull,
        ZmqOptions {
            max_frame: 1000,
            ..bound()
        },
    )
    .unwrap();
    let url = format!("tcp://{}", source.local_addr().unwrap());
    let (debug, log) = MessageDebug::new(false, true);
    let mut g = Graph::new();
    let a = g.add("zmq_msg", source).unwrap();
    let b = g.add("keep", debug).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    let good = pmt::to_bytes(&TagValue::Str("fine".into())).unwrap();
    let warnings = run_while(g, || {
        // A frame that announces 1 MiB (long form, flag 0x02) over a limit of 1000 bytes:
        // refused from its header, the connection closed.
        let mut liar = raw_pusher(&url);
        let mut huge = vec![0x02u8];
        huge.extend_from_slice(&(1u64 << 20).to_be_bytes());
        liar.write_all(&huge).unwrap();
        // Bytes that are not a PMT, with a terminal escape among them: counted, shown in hex.
        let mut garbage = raw_pusher(&url);
        garbage
            .write_all(&frame(b"\x3b\x1b[2J not a pmt\n"))
            .unwrap();
        // A symbol whose length runs past the frame's end.
        garbage
            .write_all(&frame(&[0x02, 0x00, 0x40, b'x']))
            .unwrap();
        // The garbage peer stays connected and is heard: a good message after its bad ones.
        garbage.write_all(&frame(&good)).unwrap();
        let start = Instant::now();
        while log.count() < 1 {
            assert!(start.elapsed() < LIMIT, "the good message did not arrive");
            std::thread::sleep(Duration::from_millis(10));
        }
        // The liar's connection was closed (EOF or reset) by the source.
        liar.set_read_timeout(Some(LIMIT)).unwrap();
        let mut buf = [0u8; 256];
        let closed = loop {
            match std::io::Read::read(&mut liar, &mut buf) {
                Ok(0) | Err(_) => break true,
                Ok(_) => continue,
            }
        };
        assert!(closed);
        // A second peer with a good message after the attack: the source still takes new
        // connections.
        let mut late = raw_pusher(&url);
        late.write_all(&frame(&good)).unwrap();
        while log.count() < 2 {
            assert!(start.elapsed() < LIMIT, "the late message did not arrive");
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    assert_eq!(log.messages(), vec![TagValue::Str("fine".into()); 2]);
    let all = warnings.join("\n");
    assert!(all.contains("2 frames were not PMT values"), "{all}");
    assert!(all.contains("it starts 020040"), "{all}");
    assert!(
        all.contains("1 connections were closed") && all.contains("exceeds the limit of 1000"),
        "{all}"
    );
    assert!(!all.contains('\x1b'), "{all}");
}

#[test]
fn a_graph_file_wires_the_message_blocks_by_name() {
    let source = ZmqMsgSource::new(SocketType::Pull, bound()).unwrap();
    let port = source.local_addr().unwrap().port();
    let (debug, log) = MessageDebug::new(false, true);
    let mut rx = Graph::new();
    let a = rx.add("from_net", source).unwrap();
    let b = rx.add("keep", debug).unwrap();
    rx.connect(a, "out", b, "in").unwrap();
    let mut registry = sluice_blocks::graph_blocks::standard_registry();
    sluice_zmq::graph_blocks::register(&mut registry);
    let tx = format!(
        r#"
[[node]]
name = "strobe"
type = "message_strobe"
params = {{ kind = "pdu", item = "f32", pdu_items = 4, meta = {{ seq = 7 }}, period = 0.01, count = 3 }}

[[node]]
name = "to_net"
type = "zmq_push_msg_sink"
params = {{ address = "tcp://127.0.0.1:{port}", bind = false, timeout = 50 }}

[[edge]]
from = "strobe.out"
to = "to_net.in"
"#
    );
    let tx = sluice_graph::load_str(&tx, "tx.toml", &registry).unwrap();
    run_while(rx, || {
        tx.run(&RunOptions::default()).unwrap();
        let start = Instant::now();
        while log.count() < 3 {
            assert!(start.elapsed() < LIMIT, "the PDUs did not arrive");
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let pdu = Pdu {
        meta: vec![(TagValue::Str("seq".into()), TagValue::I64(7))],
        data: Uniform::F32(vec![0.0f32; 4].into()),
    }
    .into_message();
    assert_eq!(log.messages(), vec![pdu; 3]);
    // The subscriber and publisher load too, and a bad limit names its parameter.
    let pubsub = r#"
[[node]]
name = "sub"
type = "zmq_sub_msg_source"
params = { address = "tcp://127.0.0.1:1", max_frame = 4096 }

[[node]]
name = "pub"
type = "zmq_pub_msg_sink"
params = { address = "tcp://127.0.0.1:0", max_subscriptions = 8 }

[[edge]]
from = "sub.out"
to = "pub.in"
"#;
    sluice_graph::load_str(pubsub, "pubsub.toml", &registry).unwrap();
    let bad = pubsub.replace("max_subscriptions = 8", "max_subscriptions = 0");
    let e = sluice_graph::load_str(&bad, "bad.toml", &registry)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("max_subscriptions"), "{e}");
}
