//! Run-time parameters (`ControlHandle::set`, `Node::set_control`) and the stop request seen
//! inside `work`, under every scheduler.

use sluice_runtime::control::{self, ControlError};
use sluice_runtime::{
    ControlSpec, Graph, Node, NodeError, Ports, RunOptions, RunReport, RuntimeError, Scheduler,
    StopHandle, Tag, TagValue, Work, WorkIo,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every scheduler, as a function that runs a graph with a stop handle.
type Runner = fn(Graph, &StopHandle) -> Result<RunReport, RuntimeError>;

fn schedulers() -> Vec<(&'static str, Runner)> {
    fn threaded(
        g: Graph,
        stop: &StopHandle,
        scheduler: Scheduler,
    ) -> Result<RunReport, RuntimeError> {
        g.run(&RunOptions {
            scheduler,
            stop: Some(stop.clone()),
            deadlock_timeout: Duration::from_secs(10),
            ..RunOptions::default()
        })
    }
    vec![
        ("default", |g, s| threaded(g, s, Scheduler::Auto)),
        ("thread per node", |g, s| {
            threaded(g, s, Scheduler::ThreadPerNode)
        }),
        ("pooled", |g, s| threaded(g, s, Scheduler::Pooled(2))),
        ("stepped", |g, s| g.run_stepped_with(s)),
    ]
}

/// An endless stream of `level`, in chunks of 512 items; `level` can be changed while running.
struct Level {
    level: f32,
}

impl Node for Level {
    fn ports(&self) -> Ports {
        Ports::new().output::<f32>("out")
    }
    fn controls(&self) -> Vec<ControlSpec> {
        vec![ControlSpec {
            name: "level",
            expects: "a number",
            help: "the value produced",
        }]
    }
    fn set_control(&mut self, name: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        assert_eq!(name, "level", "the runtime delivers declared controls only");
        self.level = control::number(value, "a number")? as f32;
        Ok(())
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let out = io.outputs.get::<f32>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min(512);
        space[..n].fill(self.level);
        out.commit(n);
        Ok(Work::Progress)
    }
}

/// `out = gain · in`; `gain` can be changed while running, and must be finite.
struct Gain {
    gain: f32,
}

impl Node for Gain {
    fn ports(&self) -> Ports {
        Ports::new().input::<f32>("in").output::<f32>("out")
    }
    fn controls(&self) -> Vec<ControlSpec> {
        vec![ControlSpec {
            name: "gain",
            expects: "a finite number",
            help: "linear gain",
        }]
    }
    fn set_control(&mut self, _: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        let gain = control::number(value, "a finite number")?;
        if !gain.is_finite() {
            return Err(NodeError::BadValue {
                expected: "a finite number".into(),
            });
        }
        self.gain = gain as f32;
        Ok(())
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<f32>(0)?;
        let output = io.outputs.get::<f32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = x.len().min(y.len());
        for (o, i) in y[..n].iter_mut().zip(&x[..n]) {
            *o = self.gain * i;
        }
        output.commit(n);
        input.consume(n);
        Ok(Work::Progress)
    }
}

/// What a [`Recorder`] saw: the stream as runs of equal values (start index, value), its tags,
/// its item count, and the offsets its own `mark` control was applied at.
#[derive(Default, Debug)]
struct Record {
    runs: Vec<(u64, f32)>,
    tags: Vec<Tag>,
    items: u64,
    marks: Vec<u64>,
}

/// A sink that records its stream in constant memory; `mark` can be set while running.
struct Recorder(Arc<Mutex<Record>>);

impl Node for Recorder {
    fn ports(&self) -> Ports {
        Ports::new().input::<f32>("in")
    }
    fn controls(&self) -> Vec<ControlSpec> {
        vec![ControlSpec {
            name: "mark",
            expects: "anything",
            help: "records where it was applied",
        }]
    }
    fn set_control(&mut self, _: &str, _: &TagValue, at: u64) -> Result<(), NodeError> {
        self.0.lock().unwrap().marks.push(at);
        Ok(())
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<f32>(0)?;
        let start = input.items_read();
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let n = x.len();
        let mut rec = self.0.lock().unwrap();
        for (i, &v) in x.iter().enumerate() {
            if rec.runs.last().is_none_or(|&(_, last)| last != v) {
                rec.runs.push((start + i as u64, v));
            }
        }
        rec.items += n as u64;
        let mut tags = Vec::new();
        input.take_tags(start + n as u64, &mut tags);
        rec.tags.extend(tags);
        input.consume(n);
        Ok(Work::Progress)
    }
}

/// level → gain → recorder, with a handle on the record.
fn chain() -> (Graph, Arc<Mutex<Record>>) {
    let record = Arc::new(Mutex::new(Record::default()));
    let mut g = Graph::new();
    let src = g.add("src", Level { level: 1.0 }).unwrap();
    let gain = g.add("gain", Gain { gain: 1.0 }).unwrap();
    let sink = g.add("sink", Recorder(Arc::clone(&record))).unwrap();
    g.connect(src, "out", gain, "in").unwrap();
    g.connect(gain, "out", sink, "in").unwrap();
    (g, record)
}

/// Runs `g` on another thread with `runner`, calls `body` with a control handle, then stops
/// the graph and returns its report.
fn while_running<T>(
    g: Graph,
    runner: Runner,
    body: impl FnOnce(&sluice_runtime::ControlHandle) -> T,
) -> (T, RunReport) {
    let handle = g.control_handle();
    let stop = StopHandle::new();
    let running = {
        let stop = stop.clone();
        std::thread::spawn(move || runner(g, &stop))
    };
    let out = body(&handle);
    stop.stop();
    let report = running.join().unwrap().unwrap();
    (out, report)
}

#[test]
fn a_change_takes_effect_at_the_returned_offset_and_is_tagged_there() {
    for (name, runner) in schedulers() {
        let (g, record) = chain();
        let ((at_gain, at_level, at_mark), report) = while_running(g, runner, |h| {
            let gain = h.set("gain", "gain", TagValue::F64(3.0)).unwrap();
            let level = h.set("src", "level", TagValue::I64(2)).unwrap();
            let mark = h.set("sink", "mark", TagValue::Bool(true)).unwrap();
            (gain, level, mark)
        });
        assert!(report.stopped, "{name}");
        let rec = record.lock().unwrap();
        // The stream is level(i) · gain(i), each changing exactly at its returned offset.
        let value = |i: u64| {
            let level = if i < at_level { 1.0 } else { 2.0 };
            let gain = if i < at_gain { 1.0 } else { 3.0 };
            level * gain
        };
        let mut breaks = vec![0, at_gain, at_level];
        breaks.sort();
        breaks.dedup();
        let expected: Vec<(u64, f32)> =
            breaks
                .iter()
                .map(|&i| (i, value(i)))
                .fold(Vec::new(), |mut runs, (i, v)| {
                    if runs.last().is_none_or(|&(_, last)| last != v) {
                        runs.push((i, v));
                    }
                    runs
                });
        assert!(rec.items > at_gain.max(at_level), "{name}: {rec:?}");
        assert_eq!(rec.runs, expected, "{name}");
        // Each change is tagged at its offset, by the node that applied it.
        let tag = |key: &str| {
            let found: Vec<(u64, TagValue, Option<&str>)> = rec
                .tags
                .iter()
                .filter(|t| &*t.key == key)
                .map(|t| (t.index, t.value.clone(), t.source.as_deref()))
                .collect();
            found
        };
        assert_eq!(
            tag("set:gain"),
            vec![(at_gain, TagValue::F64(3.0), Some("gain"))],
            "{name}"
        );
        assert_eq!(
            tag("set:level"),
            vec![(at_level, TagValue::I64(2), Some("src"))],
            "{name}"
        );
        // A sink's change takes effect at the next item it consumes.
        assert_eq!(rec.marks, vec![at_mark], "{name}");
        assert!(at_mark <= rec.items, "{name}");
    }
}

#[test]
fn unknown_nodes_parameters_and_bad_values_are_named_errors() {
    let (g, record) = chain();
    let (errors, _) = while_running(
        g,
        |g, s| g.run_stepped_with(s),
        |h| {
            let errors: Vec<String> = [
                h.set("gian", "gain", TagValue::F64(2.0)),
                h.set("gain", "gian", TagValue::F64(2.0)),
                h.set("gain", "gain", control::parse_value("loud")),
                h.set("gain", "gain", TagValue::F64(f64::NAN)),
            ]
            .into_iter()
            .map(|r| r.unwrap_err().to_string())
            .collect();
            // The node runs on, and takes a good value after the bad ones.
            h.set("gain", "gain", TagValue::F64(0.5)).unwrap();
            errors
        },
    );
    assert_eq!(
        errors,
        [
            "no node named 'gian' in the graph (nodes with run-time parameters: src, gain, sink)",
            "node 'gain' has no run-time parameter 'gian' (it has: gain)",
            "node 'gain': parameter 'gain' must be a finite number, not 'loud'",
            "node 'gain': parameter 'gain' must be a finite number, not NaN",
        ]
    );
    assert_eq!(record.lock().unwrap().runs.last().map(|r| r.1), Some(0.5));
}

#[test]
fn a_node_without_run_time_parameters_says_so() {
    /// Endless zeros, no controls.
    struct Zeros;
    impl Node for Zeros {
        fn ports(&self) -> Ports {
            Ports::new().output::<f32>("out")
        }
        fn work(&mut self, _: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            Ok(Work::Done)
        }
    }
    let mut g = Graph::new();
    g.add("zeros", Zeros).unwrap();
    let err = g
        .control_handle()
        .set("zeros", "level", TagValue::F64(1.0))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "node 'zeros' has no run-time parameter 'level' (it has none)"
    );
}

#[test]
fn a_set_on_a_finished_or_dropped_graph_is_an_error_not_a_hang() {
    // A finite graph that ran to its end.
    let record = Arc::new(Mutex::new(Record::default()));
    let mut g = Graph::new();
    let src = g.add("src", Level { level: 1.0 }).unwrap();
    let sink = g.add("sink", Recorder(Arc::clone(&record))).unwrap();
    g.connect(src, "out", sink, "in").unwrap();
    let h = g.control_handle().with_timeout(Duration::from_secs(30));
    let stop = StopHandle::new();
    stop.stop(); // the source ends at once; the run ends
    g.run_stepped_with(&stop).unwrap();
    let t0 = Instant::now();
    assert_eq!(
        h.set("sink", "mark", TagValue::Bool(true)),
        Err(ControlError::NotRunning {
            node: "sink".into(),
            param: "mark".into()
        })
    );
    // Refused at once, not after the 30 s timeout (a generous bound, not a timing claim).
    assert!(t0.elapsed() < Duration::from_secs(20));
    // A graph dropped without running.
    let (g, _) = chain();
    let h = g.control_handle();
    drop(g);
    assert!(matches!(
        h.set("gain", "gain", TagValue::F64(1.0)),
        Err(ControlError::NotRunning { .. })
    ));
}

/// A source that waits inside `work` (as one reading a socket would) until the graph is asked
/// to stop, then produces `tail` items. It tells the test when it is inside `work`, and counts
/// the changes applied to it. A 10 s safety bound turns a stop that is never seen into an
/// error instead of a hung test.
struct Blocking {
    inside: Arc<AtomicBool>,
    applied: Arc<Mutex<u32>>,
    tail: usize,
}

impl Node for Blocking {
    fn ports(&self) -> Ports {
        Ports::new().output::<f32>("out")
    }
    fn controls(&self) -> Vec<ControlSpec> {
        vec![ControlSpec {
            name: "level",
            expects: "a number",
            help: "unused",
        }]
    }
    fn set_control(&mut self, _: &str, _: &TagValue, _: u64) -> Result<(), NodeError> {
        *self.applied.lock().unwrap() += 1;
        Ok(())
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.tail == 0 {
            return Ok(Work::Done);
        }
        self.inside.store(true, Ordering::Release);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !io.stop_requested() {
            if Instant::now() > deadline {
                return Err(NodeError::msg("the stop request never became visible"));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let out = io.outputs.get::<f32>(0)?;
        let Some(space) = out.reserve(self.tail)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: self.tail,
            });
        };
        space[..self.tail].fill(7.0);
        out.commit(self.tail);
        self.tail = 0;
        Ok(Work::Progress)
    }
}

fn wait_until(flag: &AtomicBool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !flag.load(Ordering::Acquire) {
        assert!(Instant::now() < deadline, "the node never started working");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_node_waiting_inside_work_sees_the_stop_and_the_graph_drains() {
    for (name, runner) in schedulers() {
        let inside = Arc::new(AtomicBool::new(false));
        let record = Arc::new(Mutex::new(Record::default()));
        let mut g = Graph::new();
        let src = g
            .add(
                "src",
                Blocking {
                    inside: Arc::clone(&inside),
                    applied: Arc::default(),
                    tail: 100,
                },
            )
            .unwrap();
        // Parked on its input while the source waits inside work.
        let gain = g.add("gain", Gain { gain: 2.0 }).unwrap();
        let sink = g.add("sink", Recorder(Arc::clone(&record))).unwrap();
        g.connect(src, "out", gain, "in").unwrap();
        g.connect(gain, "out", sink, "in").unwrap();
        let stop = StopHandle::new();
        let running = {
            let stop = stop.clone();
            std::thread::spawn(move || runner(g, &stop))
        };
        wait_until(&inside);
        stop.stop();
        let report = running
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(report.stopped, "{name}");
        // What the source produced after seeing the stop drained through to the sink.
        let rec = record.lock().unwrap();
        assert_eq!(
            (rec.items, rec.runs.clone()),
            (100, vec![(0, 14.0)]),
            "{name}"
        );
    }
}

#[test]
fn a_change_for_a_node_that_does_not_fire_times_out_and_is_never_applied() {
    for (name, runner) in schedulers() {
        let inside = Arc::new(AtomicBool::new(false));
        let applied = Arc::new(Mutex::new(0));
        let mut g = Graph::new();
        let src = g
            .add(
                "src",
                Blocking {
                    inside: Arc::clone(&inside),
                    applied: Arc::clone(&applied),
                    tail: 1,
                },
            )
            .unwrap();
        let sink = g
            .add("sink", Recorder(Arc::new(Mutex::new(Record::default()))))
            .unwrap();
        g.connect(src, "out", sink, "in").unwrap();
        let h = g.control_handle().with_timeout(Duration::from_millis(50));
        let stop = StopHandle::new();
        let running = {
            let stop = stop.clone();
            std::thread::spawn(move || runner(g, &stop))
        };
        wait_until(&inside);
        let err = h.set("src", "level", TagValue::F64(1.0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "node 'src' has not fired for 50ms (it waits for input, or blocks inside work): 'level' was not set",
            "{name}"
        );
        stop.stop();
        running.join().unwrap().unwrap();
        // Withdrawn: not applied when the node fired again after the stop.
        assert_eq!(*applied.lock().unwrap(), 0, "{name}");
    }
}
