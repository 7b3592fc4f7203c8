//! Zero allocation in the steady state (as GNU Radio 4's `qa_NoHeapScheduler`): every block type
//! of the standard registry, built from its example parameters, runs in a real graph (stepped,
//! on this thread) fed by endless noise of its input types and drained by sinks; after a
//! warm-up of 16 `work` calls that made progress, the next 48 such calls (and every call in
//! between) must allocate nothing. Only the block's own `work` is counted: a wrapper node
//! brackets it with a thread-local switch of the counting global allocator, so the runtime's
//! bookkeeping and the test's sources and sinks are not. The first allocation of a failing
//! block is reported with its backtrace.
//!
//! Block types that cannot run here, or that allocate by their nature, are listed in
//! [`EXEMPT`] with the reason, and those that still allocate for a known cause in [`KNOWN`];
//! the test fails if one of those is no longer in the registry (or, for [`KNOWN`], no longer
//! allocates).
//! The convolution engine's period (`crates/conv/tests/no_alloc.rs`) and the JACK callback
//! (`crates/audio/tests/no_alloc.rs`) have their own counting tests.

use num_complex::Complex32;
use sluice_blocks::graph_blocks::standard_registry;
use sluice_formats::wav::{Encoding, WavWriter};
use sluice_graph::{BlockType, Params};
use sluice_runtime::{
    ControlHandle, ControlSpec, Graph, Item, Node, NodeError, Ports, StopHandle, TagPolicy,
    TagValue, Work, WorkIo,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// The counting allocator.

struct Counting;

thread_local! {
    /// Whether allocations on this thread are being counted (inside a wrapped `work`).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    /// Allocations counted on this thread.
    static COUNT: Cell<u64> = const { Cell::new(0) };
    /// The backtrace of the first allocation counted since the last reset.
    static FIRST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Counts one allocation of `size` bytes if counting is on; the first one's backtrace is kept
/// (with counting off, so that capturing it is not counted or recursive).
fn count(size: usize) {
    if !COUNTING.with(Cell::get) {
        return;
    }
    COUNTING.with(|c| c.set(false));
    COUNT.with(|c| c.set(c.get() + 1));
    FIRST.with(|f| {
        let mut f = f.borrow_mut();
        if f.is_none() {
            // Our own frames (the workspace's functions and files) between the allocator and
            // the wrapper, for a short report.
            let trace = std::backtrace::Backtrace::force_capture().to_string();
            let mut ours: Vec<&str> = Vec::new();
            for line in trace.lines() {
                let test = line.contains("tests/no_alloc.rs");
                if test && !ours.is_empty() {
                    break;
                }
                if !test && (line.contains("sluice") || line.contains("crates/")) {
                    ours.push(line.trim());
                }
            }
            *f = Some(format!("{size} bytes at\n{}", ours.join("\n")));
        }
    });
    COUNTING.with(|c| c.set(true));
}

// SAFETY: every call is forwarded unchanged to the system allocator, which upholds the
// GlobalAlloc contract; counting touches only const-initialised thread-locals.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded with the caller's layout, as the caller's contract requires.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, i.e. from the system allocator, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: `ptr` came from the system allocator with `layout`; the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------------------------------------------------------------------------------------------
// The wrapper that counts a block's `work`.

/// `work` calls that made progress before counting starts.
const WARM_UP: u64 = 16;
/// `work` calls that made progress while counting, after which the graph is stopped.
const MEASURED: u64 = 48;

#[derive(Default)]
struct Tally {
    /// Calls that returned `Progress`, warm-up included.
    progress: u64,
    /// Calls counted (whatever they returned).
    counted: u64,
    /// Calls counted that returned `Progress`.
    counted_progress: u64,
    allocations: u64,
    first: Option<String>,
}

/// Forwards everything to the block; counts the allocations of its `work` after the warm-up.
struct Counted {
    inner: Box<dyn Node>,
    tally: Arc<Mutex<Tally>>,
    stop: StopHandle,
}

impl Node for Counted {
    fn ports(&self) -> Ports {
        self.inner.ports()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let mut tally = self.tally.lock().unwrap_or_else(PoisonError::into_inner);
        let measuring = tally.progress >= WARM_UP && tally.counted_progress < MEASURED;
        if !measuring {
            drop(tally);
            let work = self.inner.work(io)?;
            let mut tally = self.tally.lock().unwrap_or_else(PoisonError::into_inner);
            if work == Work::Progress {
                tally.progress += 1;
            }
            return Ok(work);
        }
        COUNT.with(|c| c.set(0));
        COUNTING.with(|c| c.set(true));
        let work = self.inner.work(io);
        COUNTING.with(|c| c.set(false));
        tally.counted += 1;
        tally.allocations += COUNT.with(Cell::get);
        if tally.first.is_none() {
            tally.first = FIRST.with(|f| f.borrow_mut().take());
        }
        FIRST.with(|f| f.borrow_mut().take());
        let work = work?;
        if work == Work::Progress {
            tally.progress += 1;
            tally.counted_progress += 1;
            if tally.counted_progress == MEASURED {
                self.stop.stop();
            }
        }
        Ok(work)
    }

    fn tag_policy(&self) -> TagPolicy {
        self.inner.tag_policy()
    }
    fn init(&mut self) -> Result<(), NodeError> {
        self.inner.init()
    }
    fn controls(&self) -> Vec<ControlSpec> {
        self.inner.controls()
    }
    fn set_control(&mut self, name: &str, value: &TagValue, at_item: u64) -> Result<(), NodeError> {
        self.inner.set_control(name, value, at_item)
    }
    fn attach_control(&mut self, handle: ControlHandle) {
        self.inner.attach_control(handle)
    }
    fn history(&self) -> u64 {
        self.inner.history()
    }
    fn stop(&mut self) {
        self.inner.stop()
    }
    fn length(&self) -> Option<u64> {
        self.inner.length()
    }
    fn batch_wait(&self) -> Option<Duration> {
        self.inner.batch_wait()
    }
    fn warnings(&mut self) -> Vec<String> {
        self.inner.warnings()
    }
}

// ---------------------------------------------------------------------------------------------
// Endless noise sources and draining sinks of any item type and vector length.

/// Items the test can make noise of.
trait Noise: Item + Copy {
    fn noise(i: usize) -> Self;
}
impl Noise for f32 {
    fn noise(i: usize) -> Self {
        // A cheap hash to [-1, 1).
        let h = (i as u32).wrapping_mul(2_654_435_761).rotate_left(13) ^ 0x9e37_79b9;
        (h as f32 / u32::MAX as f32) * 2.0 - 1.0
    }
}
impl Noise for Complex32 {
    fn noise(i: usize) -> Self {
        Complex32::new(f32::noise(2 * i), f32::noise(2 * i + 1))
    }
}
impl Noise for i16 {
    fn noise(i: usize) -> Self {
        (f32::noise(i) * 20_000.0) as i16
    }
}
impl Noise for u8 {
    fn noise(i: usize) -> Self {
        ((f32::noise(i) + 1.0) * 127.0) as u8
    }
}

/// Items of noise handed out per `work` call (whole vectors of them).
const CHUNK: usize = 4096;

struct Endless<T> {
    noise: Vec<T>,
    vlen: usize,
    at: usize,
}

impl<T: Noise> Endless<T> {
    fn new(vlen: usize) -> Self {
        // Whole vectors, so that a chunk never splits one.
        let len = (CHUNK.div_ceil(vlen) * vlen).max(vlen) * 4;
        Endless {
            noise: (0..len).map(T::noise).collect(),
            vlen,
            at: 0,
        }
    }
}

impl<T: Noise> Node for Endless<T> {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        ports.add_output_vectors::<T>("out", self.vlen, CHUNK.max(self.vlen));
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let out = io.outputs.get::<T>(0)?;
        let Some(space) = out.reserve(self.vlen)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: self.vlen,
            });
        };
        let n = space
            .len()
            .min(CHUNK.max(self.vlen))
            .min(self.noise.len() - self.at);
        let n = n - n % self.vlen;
        space[..n].copy_from_slice(&self.noise[self.at..self.at + n]);
        out.commit(n);
        self.at = (self.at + n) % self.noise.len();
        Ok(Work::Progress)
    }
}

struct Drain<T> {
    vlen: usize,
    _item: std::marker::PhantomData<T>,
}

impl<T: Item> Node for Drain<T> {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        ports.add_input_vectors::<T>("in", self.vlen, self.vlen);
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        match input.window(1)? {
            Some(w) if !w.is_empty() => {
                let n = w.len();
                input.consume(n);
                Ok(Work::Progress)
            }
            Some(_) => Ok(Work::Done),
            None => Ok(Work::NeedInput { port: 0, items: 1 }),
        }
    }
}

fn endless(item: &str, vlen: usize) -> Box<dyn Node> {
    match item {
        "f32" => Box::new(Endless::<f32>::new(vlen)),
        "c32" => Box::new(Endless::<Complex32>::new(vlen)),
        "i16" => Box::new(Endless::<i16>::new(vlen)),
        "u8" => Box::new(Endless::<u8>::new(vlen)),
        other => panic!("no test source of {other}"),
    }
}

fn drain(item: &str, vlen: usize) -> Box<dyn Node> {
    fn of<T: Item>(vlen: usize) -> Box<dyn Node> {
        Box::new(Drain::<T> {
            vlen,
            _item: std::marker::PhantomData,
        })
    }
    match item {
        "f32" => of::<f32>(vlen),
        "c32" => of::<Complex32>(vlen),
        "i16" => of::<i16>(vlen),
        "u8" => of::<u8>(vlen),
        other => panic!("no test sink of {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Which blocks, with what parameters.

/// Block types not run here, and why.
const EXEMPT: &[(&str, &str)] = &[
    (
        "stdin_source",
        "reads the process's standard input, which the test harness owns",
    ),
    (
        "stdout_sink",
        "writes the items to the process's standard output, which the test harness owns",
    ),
    (
        "message_strobe",
        "makes a message (a heap value) per period: messages are allocated by design",
    ),
    (
        "message_debug",
        "receives messages, which are heap values by design",
    ),
    (
        "tagged_stream_to_pdu",
        "makes a PDU (a heap vector) per packet: PDUs are allocated by design",
    ),
    (
        "pdu_to_tagged_stream",
        "reads PDUs, which are heap values by design",
    ),
    ("pdu_fm_demod", "PDU in, PDU out: allocated by design"),
    ("pdu_set", "PDU in, PDU out: allocated by design"),
    ("add_system_time", "PDU in, PDU out: allocated by design"),
    ("time_delta", "PDU in, PDU out: allocated by design"),
    (
        "message_to_param",
        "reads messages (heap values by design) and sets another node's parameter",
    ),
    (
        "pdu_file_sink",
        "reads PDUs, which are heap values by design, and writes JSON lines",
    ),
];

/// Block types that still allocate in steady state, with where and why; they run, and the
/// test fails if one of them stops allocating (so that this list stays true).
const KNOWN: &[(&str, &str)] = &[];

/// Parameters given in place of the example's, and why.
fn overrides(name: &str, dir: &Path) -> Vec<(&'static str, toml::Value)> {
    let path = |file: &str| toml::Value::String(dir.join(file).display().to_string());
    match name {
        // The example's 48,000 items would end before the measurement.
        "head" => vec![("items", toml::Value::Integer(1 << 40))],
        // The example's 100,000 samples would end before the measurement.
        "array_source" => vec![("items", toml::Value::Integer(1 << 40))],
        // Files go to the test's own directory.
        "file_source" => vec![("path", path("in.c32")), ("repeat", true.into())],
        "file_sink" => vec![("path", path("out.c32"))],
        "wav_source" => vec![("path", path("in.wav"))],
        "wav_sink" => vec![("path", path("out.wav"))],
        "sigmf_source" => vec![("path", path("in.sigmf-meta"))],
        "sigmf_sink" => vec![("path", path("capture"))],
        "wav_files" => vec![("path", path("amps_ch{}.wav"))],
        "spectrum_png" => vec![("path", path("waterfall.png"))],
        "beam_pattern" => vec![("path", path("pattern.png"))],
        "convolve" => vec![("ir", path("ir.wav"))],
        _ => Vec::new(),
    }
}

/// A temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("sluice-no-alloc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The files the example nodes read, long enough for the warm-up and the measurement.
fn write_inputs(dir: &Path) {
    let c32: Vec<u8> = (0..65_536)
        .flat_map(|i| bytemuck::bytes_of(&Complex32::noise(i)).to_vec())
        .collect();
    std::fs::write(dir.join("in.c32"), &c32).unwrap();
    let wav = |path: PathBuf, channels: usize, frames: usize| {
        let s: Vec<f32> = (0..frames * channels)
            .map(|i| f32::noise(i) * 0.5)
            .collect();
        let mut w = WavWriter::create(&path, channels, Some(48_000), Encoding::Float(32)).unwrap();
        w.write(&s).unwrap();
        w.finish().unwrap();
    };
    // The WAV source reads 4096 frames per call.
    wav(
        dir.join("in.wav"),
        2,
        4096 * (WARM_UP + MEASURED + 8) as usize,
    );
    wav(dir.join("ir.wav"), 1, 4096);
    // The SigMF source reads 16384 samples per call.
    let samples = (1 << 14) * (WARM_UP + MEASURED + 8) as usize;
    let ci16: Vec<u8> = (0..2 * samples)
        .flat_map(|i| i16::noise(i).to_le_bytes())
        .collect();
    std::fs::write(dir.join("in.sigmf-data"), &ci16).unwrap();
    let meta = r#"{"global": {"core:datatype": "ci16_le", "core:version": "1.0.0",
        "core:sample_rate": 1000000}, "captures": [{"core:sample_start": 0}], "annotations": []}"#;
    std::fs::write(dir.join("in.sigmf-meta"), meta).unwrap();
}

/// The example's parameters with the test's overrides.
fn params(b: &BlockType, dir: &Path) -> Params {
    let doc: toml::Table = toml::from_str(&format!("p = {{ {} }}", b.example)).unwrap();
    let mut values = match doc.get("p") {
        Some(toml::Value::Table(t)) => t.clone(),
        _ => toml::Table::new(),
    };
    for (k, v) in overrides(&b.name, dir) {
        values.insert(k.to_string(), v);
    }
    Params::from_values(values)
}

/// Runs block type `b` in a graph and counts the allocations of its steady-state `work`.
fn run_block(b: &BlockType, dir: &Path) -> Result<Tally, String> {
    let mut params = params(b, dir);
    let node = b
        .instantiate(&mut params)
        .map_err(|e| format!("build: {e:?}"))?;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let stop = StopHandle::new();
    let mut g = Graph::new();
    let dut = g
        .add_boxed(
            "dut",
            Box::new(Counted {
                inner: node,
                tally: tally.clone(),
                stop: stop.clone(),
            }),
        )
        .map_err(|e| format!("add: {e}"))?;
    let ports = g.ports(dut).cloned().expect("the node's ports");
    for (i, p) in ports.inputs.iter().enumerate() {
        let src = g
            .add_boxed(&format!("src{i}"), endless(p.item.name(), p.vlen))
            .unwrap();
        g.connect(src, "out", dut, &p.name)
            .map_err(|e| format!("connect {}: {e}", p.name))?;
    }
    for (i, p) in ports.outputs.iter().enumerate() {
        let sink = g
            .add_boxed(&format!("sink{i}"), drain(p.item.name(), p.vlen))
            .unwrap();
        g.connect(dut, &p.name, sink, "in")
            .map_err(|e| format!("connect {}: {e}", p.name))?;
    }
    g.run_stepped_with(&stop).map_err(|e| format!("run: {e}"))?;
    let tally = std::mem::take(&mut *tally.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(tally)
}

#[test]
fn every_standard_block_works_without_allocating() {
    let registry = standard_registry();
    for (name, _) in EXEMPT.iter().chain(KNOWN) {
        assert!(
            registry.find(name).is_some(),
            "{name} is exempt but no longer a block type"
        );
    }
    let dir = TempDir::new();
    write_inputs(&dir.0);
    let mut failures = Vec::new();
    for b in registry.types() {
        if EXEMPT.iter().any(|(n, _)| *n == b.name) {
            continue;
        }
        let t = match run_block(b, &dir.0) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{}: {e}", b.name));
                continue;
            }
        };
        println!(
            "{}: {} allocations in {} steady-state work calls",
            b.name, t.allocations, t.counted
        );
        let known = KNOWN.iter().any(|(n, _)| *n == b.name);
        if t.counted_progress < MEASURED {
            failures.push(format!(
                "{}: only {} calls made progress ({} measured); no steady state reached",
                b.name, t.progress, t.counted_progress
            ));
        } else if known && t.allocations == 0 {
            failures.push(format!(
                "{}: allocates no more in steady state: take it off KNOWN",
                b.name
            ));
        } else if t.allocations > 0 && !known {
            failures.push(format!(
                "{}: {} allocations in {} steady-state work calls; the first: {}",
                b.name,
                t.allocations,
                t.counted,
                t.first.as_deref().unwrap_or("?")
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}
