//! The gr-zeromq blocks end to end between two sluice graphs: items and tags cross exactly
//! (PUSH/PULL and REQ/REP), a late subscriber gets a consecutive stream with its tags (PUB/SUB),
//! and a graph file wires them by name.

use num_complex::Complex32;
use sluice_runtime::{
    Graph, Node, NodeError, Ports, RunOptions, StopHandle, Tag, TagPolicy, TagValue, Work, WorkIo,
};
use sluice_zmq::{SocketType, ZmqOptions, ZmqSink, ZmqSource};
use std::sync::{Arc, Mutex};

fn item(i: u64) -> Complex32 {
    Complex32::new(i as f32, -(i as f32) * 0.5)
}

/// Produces `item(0..count)`, tags at each index of `tags`.
struct Counter {
    count: u64,
    next: u64,
    tags: Vec<Tag>,
}

impl Node for Counter {
    fn ports(&self) -> Ports {
        Ports::new().output::<Complex32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next == self.count {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<Complex32>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min((self.count - self.next) as usize).min(5000);
        for (k, x) in space[..n].iter_mut().enumerate() {
            *x = item(self.next + k as u64);
        }
        let end = self.next + n as u64;
        for t in self
            .tags
            .iter()
            .filter(|t| t.index >= self.next && t.index < end)
        {
            out.push_tag(t.clone());
        }
        out.commit(n);
        self.next = end;
        Ok(Work::Progress)
    }
}

#[derive(Default)]
struct Seen {
    items: Vec<Complex32>,
    tags: Vec<Tag>,
}

/// Keeps the first `limit` items and their tags, then ends (which ends the source).
struct Keeper {
    limit: usize,
    seen: Arc<Mutex<Seen>>,
}

impl Node for Keeper {
    fn ports(&self) -> Ports {
        Ports::new().input::<Complex32>("in")
    }
    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<Complex32>(0)?;
        let mut seen = self.seen.lock().unwrap();
        if seen.items.len() >= self.limit {
            return Ok(Work::Done);
        }
        let start = input.items_read();
        let Some(w) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if w.is_empty() {
            return Ok(Work::Done);
        }
        let n = w.len().min(self.limit - seen.items.len());
        seen.items.extend_from_slice(&w[..n]);
        let mut tags = Vec::new();
        input.take_tags(start + n as u64, &mut tags);
        seen.tags.extend(tags);
        input.consume(n);
        Ok(Work::Progress)
    }
}

fn keeper(limit: usize) -> (Keeper, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    (
        Keeper {
            limit,
            seen: seen.clone(),
        },
        seen,
    )
}

/// Tags of every PMT type GNU Radio sends, every 997 items.
fn tags(count: u64) -> Vec<Tag> {
    let values = [
        TagValue::F64(2.4e9),
        TagValue::rx_time(1_700_000_000, 0.25),
        TagValue::I64(-7),
        TagValue::I64(1 << 40),
        TagValue::U64(u64::MAX),
        TagValue::Bool(true),
        TagValue::Str("hello".into()),
        TagValue::Complex(num_complex::Complex64::new(1.0, -2.0)),
        TagValue::Null,
        TagValue::pair(TagValue::I64(1), TagValue::Str("x".into())),
        TagValue::Vector(vec![TagValue::I64(1), TagValue::F64(2.0)]),
        TagValue::dict([("a", TagValue::I64(1))]),
        TagValue::bytes(&[1, 2, 3]),
    ];
    (0..count)
        .step_by(997)
        .enumerate()
        .map(|(k, i)| {
            let key = [
                "rx_freq", "rx_time", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k",
            ][k % values.len()];
            if k % 2 == 0 {
                Tag::with_source(i, key, values[k % values.len()].clone(), "counter")
            } else {
                Tag::new(i, key, values[k % values.len()].clone())
            }
        })
        .collect()
}

/// Runs a sender graph (counter → sink) and a receiver graph (source → keeper) together.
fn run_pair(
    sink: ZmqSink<Complex32>,
    source: ZmqSource<Complex32>,
    count: u64,
    limit: usize,
) -> Seen {
    let mut tx = Graph::new();
    let a = tx
        .add(
            "count",
            Counter {
                count,
                next: 0,
                tags: tags(count),
            },
        )
        .unwrap();
    let b = tx.add("zmq_sink", sink).unwrap();
    tx.connect(a, "out", b, "in").unwrap();
    let mut rx = Graph::new();
    let (k, seen) = keeper(limit);
    let c = rx.add("zmq_source", source).unwrap();
    let d = rx.add("keep", k).unwrap();
    rx.connect(c, "out", d, "in").unwrap();
    let stop = StopHandle::new();
    let tx_opts = RunOptions {
        stop: Some(stop.clone()),
        ..RunOptions::default()
    };
    let rx = std::thread::spawn(move || rx.run(&RunOptions::default()));
    let tx = std::thread::spawn(move || tx.run(&tx_opts));
    rx.join().unwrap().expect("receiver graph");
    stop.stop();
    tx.join().unwrap().expect("sender graph");
    Arc::try_unwrap(seen).ok().unwrap().into_inner().unwrap()
}

fn opts(address: &str, bind: bool) -> ZmqOptions {
    ZmqOptions {
        pass_tags: true,
        ..ZmqOptions::new(address, bind)
    }
}

#[test]
fn push_pull_carries_items_and_every_tag_type_exactly() {
    const N: u64 = 300_000;
    let sink = ZmqSink::new(SocketType::Push, opts("tcp://127.0.0.1:0", true)).unwrap();
    let url = format!("tcp://{}", sink.local_addr().unwrap());
    let source = ZmqSource::new(SocketType::Pull, opts(&url, false)).unwrap();
    let seen = run_pair(sink, source, N, N as usize);
    assert_eq!(seen.items.len(), N as usize);
    assert!(seen
        .items
        .iter()
        .enumerate()
        .all(|(i, x)| *x == item(i as u64)));
    assert_eq!(seen.tags, tags(N));
}

#[test]
fn req_rep_carries_items_and_tags_exactly() {
    const N: u64 = 100_000;
    let sink = ZmqSink::new(SocketType::Rep, opts("tcp://127.0.0.1:0", true)).unwrap();
    let url = format!("tcp://{}", sink.local_addr().unwrap());
    let source = ZmqSource::new(SocketType::Req, opts(&url, false)).unwrap();
    let seen = run_pair(sink, source, N, N as usize);
    assert!(seen
        .items
        .iter()
        .enumerate()
        .all(|(i, x)| *x == item(i as u64)));
    assert_eq!(seen.tags, tags(N));
}

#[test]
fn a_late_subscriber_gets_a_consecutive_stream_with_its_tags() {
    const N: u64 = 50_000_000; // more than the test waits for: the publisher runs until stopped
    let sink = ZmqSink::new(
        SocketType::Pub,
        ZmqOptions {
            key: b"iq".to_vec(),
            drop_on_hwm: false,
            ..opts("tcp://127.0.0.1:0", true)
        },
    )
    .unwrap();
    let url = format!("tcp://{}", sink.local_addr().unwrap());
    let source = ZmqSource::new(
        SocketType::Sub,
        ZmqOptions {
            key: b"iq".to_vec(),
            ..opts(&url, false)
        },
    )
    .unwrap();
    let seen = run_pair(sink, source, N, 200_000);
    let first = seen.items[0].re as u64;
    assert!(
        seen.items
            .iter()
            .enumerate()
            .all(|(k, x)| *x == item(first + k as u64)),
        "a hole in the stream"
    );
    let expected: Vec<Tag> = tags(first + 200_000)
        .into_iter()
        .filter(|t| t.index >= first)
        .map(|t| Tag {
            index: t.index - first,
            ..t
        })
        .collect();
    assert_eq!(seen.tags, expected);
}

#[test]
fn a_graph_file_wires_push_and_pull_by_name() {
    let dir = std::env::temp_dir().join(format!("sluice-zmq-graph-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.c32");
    let output = dir.join("out.c32");
    let data: Vec<Complex32> = (0..100_000).map(item).collect();
    std::fs::write(&input, bytemuck::cast_slice(&data)).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut registry = sluice_blocks::graph_blocks::standard_registry();
    sluice_zmq::graph_blocks::register(&mut registry);
    let rx = format!(
        r#"
[[node]]
name = "from_net"
type = "zmq_pull_source"
params = {{ item = "c32", address = "tcp://127.0.0.1:{port}", bind = true, pass_tags = true }}

[[node]]
name = "head"
type = "head"
params = {{ item = "c32", items = 100000 }}

[[node]]
name = "save"
type = "file_sink"
params = {{ item = "c32", path = "{}" }}

[[edge]]
from = "from_net.out"
to = "head.in"

[[edge]]
from = "head.out"
to = "save.in"
"#,
        output.display()
    );
    let tx = format!(
        r#"
[[node]]
name = "read"
type = "file_source"
params = {{ item = "c32", path = "{}" }}

[[node]]
name = "to_net"
type = "zmq_push_sink"
params = {{ item = "c32", address = "tcp://127.0.0.1:{port}", bind = false, pass_tags = true }}

[[edge]]
from = "read.out"
to = "to_net.in"
"#,
        input.display()
    );
    let rx = sluice_graph::load_str(&rx, "rx.toml", &registry).unwrap();
    let tx = sluice_graph::load_str(&tx, "tx.toml", &registry).unwrap();
    let rx = std::thread::spawn(move || rx.run(&RunOptions::default()));
    tx.run(&RunOptions::default()).unwrap();
    rx.join().unwrap().unwrap();
    assert_eq!(
        std::fs::read(&output).unwrap(),
        std::fs::read(&input).unwrap()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_parameters_name_the_parameter() {
    let mut registry = sluice_graph::Registry::new();
    sluice_zmq::graph_blocks::register(&mut registry);
    let text = r#"
[[node]]
name = "x"
type = "zmq_pull_source"
params = { item = "c32", address = "ipc:///tmp/x" }
"#;
    let e = sluice_graph::load_str(text, "bad.toml", &registry)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("address") && e.contains("ipc://"), "{e}");
}
