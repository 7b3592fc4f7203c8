//! Lifecycle hooks (`Node::init`, `Node::stop`) and stream metadata (the sample rate tag,
//! rescaled by rate-changing nodes), under every scheduler.

use sluice_runtime::metadata::{self, SAMPLE_RATE};
use sluice_runtime::{
    Graph, Node, NodeError, Ports, RunOptions, Scheduler, TagPolicy, TagValue, Work, WorkIo,
};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

fn schedulers() -> Vec<(&'static str, Option<RunOptions>)> {
    let with = |scheduler| {
        Some(RunOptions {
            scheduler,
            ..RunOptions::default()
        })
    };
    vec![
        ("default", with(Scheduler::Auto)),
        ("thread per node", with(Scheduler::ThreadPerNode)),
        ("pooled", with(Scheduler::Pooled(2))),
        ("stepped", None),
    ]
}

fn run(g: Graph, opts: &Option<RunOptions>) -> Result<sluice_runtime::RunReport, String> {
    match opts {
        Some(o) => g.run(o),
        None => g.run_stepped(),
    }
    .map_err(|e| e.to_string())
}

/// What a node's hooks saw: (event, thread) in order.
type Log = Arc<Mutex<Vec<(&'static str, ThreadId)>>>;

/// `count` zeros; tags its first item with a sample rate; logs its hooks and work calls.
struct Source {
    left: u64,
    rate: Option<f64>,
    log: Log,
    fail_init: bool,
}

impl Node for Source {
    fn ports(&self) -> Ports {
        Ports::new().output::<f32>("out")
    }
    fn init(&mut self) -> Result<(), NodeError> {
        self.log
            .lock()
            .unwrap()
            .push(("init", std::thread::current().id()));
        if self.fail_init {
            return Err(NodeError::msg("the device is busy"));
        }
        Ok(())
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        self.log
            .lock()
            .unwrap()
            .push(("work", std::thread::current().id()));
        if self.left == 0 {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<f32>(0)?;
        if let Some(rate) = self.rate.take() {
            out.add_tag(
                out.items_written(),
                SAMPLE_RATE,
                metadata::sample_rate(rate),
            );
        }
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min(self.left as usize);
        space[..n].fill(0.0);
        out.commit(n);
        self.left -= n as u64;
        Ok(Work::Progress)
    }
    fn stop(&mut self) {
        self.log
            .lock()
            .unwrap()
            .push(("stop", std::thread::current().id()));
    }
}

/// Keeps one item in `n`, declaring the rate change to the runtime.
struct KeepOneIn(u64);

impl Node for KeepOneIn {
    fn ports(&self) -> Ports {
        Ports::new().input::<f32>("in").output::<f32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let n = self.0 as usize;
        let input = io.inputs.get::<f32>(0)?;
        let Some(x) = input.window(n)? else {
            return Ok(Work::NeedInput { port: 0, items: n });
        };
        if x.len() < n {
            let rest = x.len();
            input.consume(rest);
            return Ok(Work::Done);
        }
        let groups = x.len() / n;
        let output = io.outputs.get::<f32>(0)?;
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let k = groups.min(y.len());
        y[..k].fill(0.0);
        output.commit(k);
        io.inputs.get::<f32>(0)?.consume(k * n);
        Ok(Work::Progress)
    }
    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Ratio {
            interpolation: 1,
            decimation: self.0,
        }
    }
}

/// Consumes; records the tags it sees; fails on demand after some items.
struct Sink {
    tags: Arc<Mutex<Vec<(u64, String, TagValue)>>>,
    fail_after: Option<u64>,
    seen: u64,
    log: Log,
}

impl Node for Sink {
    fn ports(&self) -> Ports {
        Ports::new().input::<f32>("in")
    }
    fn init(&mut self) -> Result<(), NodeError> {
        self.log
            .lock()
            .unwrap()
            .push(("init", std::thread::current().id()));
        Ok(())
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<f32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let n = x.len();
        let mut tags = Vec::new();
        input.take_tags(input.items_read() + n as u64, &mut tags);
        self.tags.lock().unwrap().extend(
            tags.into_iter()
                .map(|t| (t.index, t.key.to_string(), t.value)),
        );
        input.consume(n);
        self.seen += n as u64;
        if self.fail_after.is_some_and(|f| self.seen >= f) {
            return Err(NodeError::msg("disk full"));
        }
        Ok(Work::Progress)
    }
    fn stop(&mut self) {
        self.log
            .lock()
            .unwrap()
            .push(("stop", std::thread::current().id()));
    }
    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

struct Built {
    graph: Graph,
    source_log: Log,
    sink_log: Log,
    tags: Arc<Mutex<Vec<(u64, String, TagValue)>>>,
}

fn graph(items: u64, fail_init: bool, fail_after: Option<u64>) -> Built {
    let source_log = Log::default();
    let sink_log = Log::default();
    let tags = Arc::default();
    let mut g = Graph::new();
    let src = g
        .add(
            "src",
            Source {
                left: items,
                rate: Some(48000.0),
                log: source_log.clone(),
                fail_init,
            },
        )
        .unwrap();
    let keep = g.add("keep", KeepOneIn(4)).unwrap();
    let sink = g
        .add(
            "sink",
            Sink {
                tags: Arc::clone(&tags),
                fail_after,
                seen: 0,
                log: sink_log.clone(),
            },
        )
        .unwrap();
    g.connect(src, "out", keep, "in").unwrap();
    g.connect(keep, "out", sink, "in").unwrap();
    Built {
        graph: g,
        source_log,
        sink_log,
        tags,
    }
}

/// init first, stop last, each once, both on the thread that ran `work`.
fn assert_lifecycle(label: &str, log: &Log) {
    let log = log.lock().unwrap();
    let events: Vec<&str> = log.iter().map(|(e, _)| *e).collect();
    assert_eq!(events.first(), Some(&"init"), "{label}: {events:?}");
    assert_eq!(events.last(), Some(&"stop"), "{label}: {events:?}");
    assert_eq!(
        events.iter().filter(|e| **e == "init").count(),
        1,
        "{label}"
    );
    assert_eq!(
        events.iter().filter(|e| **e == "stop").count(),
        1,
        "{label}"
    );
    let init_thread = log[0].1;
    assert!(
        log.iter().all(|(_, t)| *t == init_thread),
        "{label}: hooks and work ran on different threads"
    );
}

#[test]
fn init_runs_before_the_first_work_and_stop_after_the_last_on_the_same_thread() {
    for (label, opts) in schedulers() {
        let b = graph(100_000, false, None);
        run(b.graph, &opts).unwrap();
        assert_lifecycle(label, &b.source_log);
        assert_lifecycle(label, &b.sink_log);
    }
}

#[test]
fn stop_runs_when_another_node_fails() {
    for (label, opts) in schedulers() {
        let b = graph(u64::MAX, false, Some(10_000));
        let err = run(b.graph, &opts).unwrap_err();
        assert_eq!(err, "node 'sink' failed: disk full", "{label}");
        assert_lifecycle(label, &b.source_log);
        assert_lifecycle(label, &b.sink_log);
    }
}

#[test]
fn a_failing_init_stops_the_graph_with_the_nodes_name() {
    for (label, opts) in schedulers() {
        let b = graph(1000, true, None);
        let err = run(b.graph, &opts).unwrap_err();
        assert_eq!(err, "node 'src' failed: the device is busy", "{label}");
        // init ran (and failed), so stop is still owed and runs.
        assert_lifecycle(label, &b.source_log);
    }
}

#[test]
fn the_sample_rate_tag_is_rescaled_by_a_decimating_node() {
    for (label, opts) in schedulers() {
        let b = graph(100_000, false, None);
        run(b.graph, &opts).unwrap();
        let tags = b.tags.lock().unwrap();
        assert_eq!(
            *tags,
            vec![(0, SAMPLE_RATE.to_string(), TagValue::F64(12000.0))],
            "{label}"
        );
    }
}
