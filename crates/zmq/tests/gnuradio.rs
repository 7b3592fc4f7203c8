//! Interop with a real GNU Radio 3.10 flowgraph (Debian's `gnuradio`, Python API), both
//! directions, `pass_tags` on, samples and tags compared exactly:
//!
//! * a GNU Radio Python block emits a ramp with a tag of every PMT type → `zeromq.push_sink`
//!   → sluice `ZmqSource` (PULL);
//! * sluice `ZmqSink` (PUSH) with the same tags → `zeromq.pull_source` → `head` → a GNU Radio
//!   Python sink that reads the tags (printed as serialized PMTs) and the samples (a file).
//!
//! Run: `cargo test -p sluice-zmq --test gnuradio` (after scripts/setup.sh). Without
//! `/usr/bin/python3` and gnuradio each test fails and names the package.

mod common;

use common::Py;
use num_complex::{Complex32, Complex64};
use sluice_pmt as pmt;
use sluice_runtime::{
    Graph, Node, NodeError, Ports, RunOptions, StopHandle, Tag, TagPolicy, TagValue, Uniform, Work,
    WorkIo,
};
use sluice_zmq::{SocketType, ZmqOptions, ZmqSink, ZmqSource};
use std::sync::{Arc, Mutex};

const N: u64 = 100_000;

fn item(i: u64) -> Complex32 {
    Complex32::new(i as f32, -(i as f32) * 0.5)
}

/// The tags both directions carry: one of every PMT type GNU Radio sends in tags, as
/// (key, value); tag `k` sits on item `6000 k + 3`.
fn values() -> Vec<(&'static str, TagValue)> {
    vec![
        ("bool", TagValue::Bool(true)),
        ("sym", TagValue::Str("hello".into())),
        ("i32", TagValue::I64(-7)),
        ("i64", TagValue::I64(1 << 40)),
        ("u64", TagValue::U64(u64::MAX)),
        ("rx_freq", TagValue::F64(2.4e9)),
        ("cplx", TagValue::Complex(Complex64::new(1.0, -2.0))),
        ("null", TagValue::Null),
        (
            "pair",
            TagValue::pair(TagValue::I64(1), TagValue::Str("x".into())),
        ),
        ("rx_time", TagValue::rx_time(1_700_000_000, 0.25)),
        (
            "vec",
            TagValue::Vector(vec![TagValue::I64(1), TagValue::F64(2.0)]),
        ),
        ("dict", TagValue::dict([("a", TagValue::I64(1))])),
        ("u8v", TagValue::bytes(&[1, 2, 3])),
        (
            "f32v",
            TagValue::Uniform(Uniform::F32(vec![1.5f32, -2.0].into())),
        ),
        (
            "c32v",
            TagValue::Uniform(Uniform::C32(vec![Complex32::new(1.0, 2.0)].into())),
        ),
        ("rx_rate", TagValue::F64(1e6)),
    ]
}

fn expected_tags(source: &str) -> Vec<Tag> {
    values()
        .into_iter()
        .enumerate()
        .map(|(k, (key, v))| Tag::with_source(6000 * k as u64 + 3, key, v, source))
        .collect()
}

/// The same tags built in GNU Radio's Python API.
const PY_TAGS: &str = r#"
import numpy as np, pmt, sys, time
from gnuradio import gr, blocks, zeromq
N = int(sys.argv[1])
vec = pmt.make_vector(2, pmt.PMT_NIL)
pmt.vector_set(vec, 0, pmt.from_long(1))
pmt.vector_set(vec, 1, pmt.from_double(2.0))
VALUES = [
    ("bool", pmt.PMT_T),
    ("sym", pmt.intern("hello")),
    ("i32", pmt.from_long(-7)),
    ("i64", pmt.from_long(1 << 40)),
    ("u64", pmt.from_uint64(2**64 - 1)),
    ("rx_freq", pmt.from_double(2.4e9)),
    ("cplx", pmt.from_complex(1 - 2j)),
    ("null", pmt.PMT_NIL),
    ("pair", pmt.cons(pmt.from_long(1), pmt.intern("x"))),
    ("rx_time", pmt.make_tuple(pmt.from_uint64(1700000000), pmt.from_double(0.25))),
    ("vec", vec),
    ("dict", pmt.dict_add(pmt.make_dict(), pmt.intern("a"), pmt.from_long(1))),
    ("u8v", pmt.init_u8vector(3, [1, 2, 3])),
    ("f32v", pmt.init_f32vector(2, [1.5, -2.0])),
    ("c32v", pmt.init_c32vector(1, [1 + 2j])),
    ("rx_rate", pmt.from_double(1e6)),
]
TAGS = [(6000 * k + 3, key, v) for k, (key, v) in enumerate(VALUES)]
"#;

fn gnuradio(body: &str, args: &[String]) -> Py {
    Py::start(
        &format!("{PY_TAGS}{body}"),
        args,
        "gnuradio.zeromq",
        "gnuradio",
    )
}

struct Counter {
    next: u64,
    tags: Vec<Tag>,
}

impl Node for Counter {
    fn ports(&self) -> Ports {
        Ports::new().output::<Complex32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next == N {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<Complex32>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min((N - self.next) as usize).min(7000);
        for (k, x) in space[..n].iter_mut().enumerate() {
            *x = item(self.next + k as u64);
        }
        let end = self.next + n as u64;
        for t in self
            .tags
            .iter()
            .filter(|t| (self.next..end).contains(&t.index))
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

struct Keeper(Arc<Mutex<Seen>>);

impl Node for Keeper {
    fn ports(&self) -> Ports {
        Ports::new().input::<Complex32>("in")
    }
    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<Complex32>(0)?;
        let mut seen = self.0.lock().unwrap();
        if seen.items.len() as u64 >= N {
            return Ok(Work::Done);
        }
        let start = input.items_read();
        let Some(w) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if w.is_empty() {
            return Ok(Work::Done);
        }
        let n = w.len().min(N as usize - seen.items.len());
        seen.items.extend_from_slice(&w[..n]);
        let mut tags = Vec::new();
        input.take_tags(start + n as u64, &mut tags);
        seen.tags.extend(tags);
        input.consume(n);
        Ok(Work::Progress)
    }
}

fn opts(address: &str, bind: bool) -> ZmqOptions {
    ZmqOptions {
        pass_tags: true,
        ..ZmqOptions::new(address, bind)
    }
}

#[test]
fn gnuradio_push_sink_to_sluice_pull_source() {
    let mut p = gnuradio(
        r#"
class TaggedRamp(gr.sync_block):
    def __init__(self):
        gr.sync_block.__init__(self, "tagged_ramp", [], [np.complex64])
        self.n = 0
    def work(self, input_items, output_items):
        o = output_items[0]
        k = min(len(o), N - self.n)
        if k <= 0:
            return -1
        i = np.arange(self.n, self.n + k, dtype=np.float64)
        o[:k] = (i - 0.5j * i).astype(np.complex64)
        for off, key, v in TAGS:
            if self.n <= off < self.n + k:
                self.add_item_tag(0, off, pmt.intern(key), v, pmt.intern("gr_src"))
        self.n += k
        return k
tb = gr.top_block()
src = TaggedRamp()
snk = zeromq.push_sink(gr.sizeof_gr_complex, 1, "tcp://127.0.0.1:*", 100, True, -1)
tb.connect(src, snk)
print(snk.last_endpoint(), flush=True)
tb.start()
sys.stdin.readline()
tb.stop(); tb.wait()
"#,
        &[N.to_string()],
    );
    let endpoint = p.line();
    let source = ZmqSource::<Complex32>::new(SocketType::Pull, opts(&endpoint, false)).unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut g = Graph::new();
    let a = g.add("from_gnuradio", source).unwrap();
    let b = g.add("keep", Keeper(seen.clone())).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g.run(&RunOptions::default()).expect("sluice graph");
    p.say("done");
    p.finish();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.items.len() as u64, N);
    if let Some(i) = (0..N as usize).find(|&i| seen.items[i] != item(i as u64)) {
        panic!(
            "item {i} is {} instead of {}",
            seen.items[i],
            item(i as u64)
        );
    }
    assert_eq!(seen.tags, expected_tags("gr_src"));
}

#[test]
fn sluice_push_sink_to_gnuradio_pull_source() {
    let dir = std::env::temp_dir().join(format!("sluice-zmq-gr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let samples = dir.join("received.c32");
    let sink =
        ZmqSink::<Complex32>::new(SocketType::Push, opts("tcp://127.0.0.1:0", true)).unwrap();
    let url = format!("tcp://{}", sink.local_addr().unwrap());
    let mut g = Graph::new();
    let a = g
        .add(
            "count",
            Counter {
                next: 0,
                tags: expected_tags("sluice"),
            },
        )
        .unwrap();
    let b = g.add("to_gnuradio", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    let stop = StopHandle::new();
    let run_opts = RunOptions {
        stop: Some(stop.clone()),
        ..RunOptions::default()
    };
    let sender = std::thread::spawn(move || g.run(&run_opts));
    let mut p = gnuradio(
        r#"
class TagReader(gr.sync_block):
    def __init__(self):
        gr.sync_block.__init__(self, "tag_reader", [np.complex64], [])
        self.data = []
        self.tags = []
    def work(self, input_items, output_items):
        x = input_items[0]
        self.data.append(x.copy())
        start = self.nitems_read(0)
        for t in self.get_tags_in_range(0, start, start + len(x)):
            src = pmt.symbol_to_string(t.srcid) if pmt.is_symbol(t.srcid) else "-"
            self.tags.append((t.offset, pmt.symbol_to_string(t.key), src, pmt.serialize_str(t.value).hex()))
        return len(x)
tb = gr.top_block()
src = zeromq.pull_source(gr.sizeof_gr_complex, 1, sys.argv[2], 100, True, -1)
head = blocks.head(gr.sizeof_gr_complex, N)
rd = TagReader()
tb.connect(src, head, rd)
# A zeromq source never ends on its own (it waits for more messages even after head is
# done), so the flowgraph is stopped once the sink has everything.
tb.start()
end = time.time() + 30
while sum(len(d) for d in rd.data) < N and time.time() < end:
    time.sleep(0.02)
tb.stop()
tb.wait()
np.concatenate(rd.data).astype(np.complex64).tofile(sys.argv[3])
for off, key, s, v in rd.tags:
    print("tag", off, key, s, v, flush=True)
print("end", flush=True)
"#,
        &[N.to_string(), url, samples.display().to_string()],
    );
    let mut tags = Vec::new();
    loop {
        let line = p.line();
        if line == "end" {
            break;
        }
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 5, "unexpected line from GNU Radio: {line}");
        let bytes: Vec<u8> = (0..f[4].len())
            .step_by(2)
            .map(|k| u8::from_str_radix(&f[4][k..k + 2], 16).unwrap())
            .collect();
        let value = pmt::from_bytes(&bytes).expect("GNU Radio's serialization of the value");
        tags.push(Tag::with_source(f[1].parse().unwrap(), f[2], value, f[3]));
    }
    p.finish();
    stop.stop();
    sender.join().unwrap().expect("sluice graph");
    let got = std::fs::read(&samples).unwrap();
    let want: Vec<Complex32> = (0..N).map(item).collect();
    assert_eq!(
        got.len(),
        want.len() * 8,
        "GNU Radio received a different number of samples"
    );
    assert!(
        got == bytemuck::cast_slice::<Complex32, u8>(&want),
        "samples differ"
    );
    assert_eq!(tags, expected_tags("sluice"));
    std::fs::remove_dir_all(&dir).unwrap();
}
