//! One test per runtime defect found in review (each failed before its fix): panics that hung
//! the run, tags published after their items, the pooled scheduler's false deadlock, nodes that
//! spin on a need they already have, and pinning outside the allowed CPUs.

use sluice_runtime::{
    Graph, Node, NodeError, Ports, RunOptions, RuntimeError, StopHandle, Tag, TagValue,
};
use sluice_runtime::{Work, WorkIo};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Emits 0, 1, 2, … (u32) up to `total` in chunks of at most `chunk`, tagging item `tag_at`.
struct Source {
    next: u64,
    total: u64,
    chunk: usize,
    tag_at: Option<u64>,
    /// A tag pushed as given (with its source) when its item is written.
    extra_tag: Option<Tag>,
}

impl Source {
    fn new(total: u64) -> Self {
        Source {
            next: 0,
            total,
            chunk: usize::MAX,
            tag_at: None,
            extra_tag: None,
        }
    }
}

impl Node for Source {
    fn ports(&self) -> Ports {
        Ports::new().output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next >= self.total {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u32>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space
            .len()
            .min(self.chunk)
            .min((self.total - self.next) as usize);
        for (i, s) in space[..n].iter_mut().enumerate() {
            *s = (self.next + i as u64) as u32;
        }
        if let Some(at) = self
            .tag_at
            .filter(|&at| at >= self.next && at < self.next + n as u64)
        {
            out.add_tag(at, "mark", TagValue::U64(at));
        }
        if let Some(tag) = self
            .extra_tag
            .take_if(|t| t.index >= self.next && t.index < self.next + n as u64)
        {
            out.push_tag(tag);
        }
        out.commit(n);
        self.next += n as u64;
        Ok(Work::Progress)
    }
}

/// Passes items through (1:1); optionally panics, fails, or lingers after its last commit.
#[derive(Default)]
struct Pass {
    panic_at: Option<u64>,
    linger_after_commit: Option<Duration>,
}

impl Node for Pass {
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in").output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u32>(0)?;
        let output = io.outputs.get::<u32>(0)?;
        if self.panic_at.is_some_and(|at| input.items_read() >= at) {
            panic!("index out of range in the pass node");
        }
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
        y[..n].copy_from_slice(&x[..n]);
        input.consume(n);
        output.commit(n);
        if let Some(pause) = self.linger_after_commit {
            // Give downstream every chance to read what was committed before this call returns.
            std::thread::sleep(pause);
        }
        Ok(Work::Progress)
    }
}

/// Collects items and tags.
struct Sink {
    items: Arc<Mutex<Vec<u32>>>,
    tags: Arc<Mutex<Vec<Tag>>>,
    max_chunk: usize,
}

type Collected = (Arc<Mutex<Vec<u32>>>, Arc<Mutex<Vec<Tag>>>);

fn sink(max_chunk: usize) -> (Sink, Collected) {
    let items = Arc::new(Mutex::new(Vec::new()));
    let tags = Arc::new(Mutex::new(Vec::new()));
    (
        Sink {
            items: items.clone(),
            tags: tags.clone(),
            max_chunk,
        },
        (items, tags),
    )
}

impl Node for Sink {
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let n = x.len().min(self.max_chunk);
        self.items.lock().unwrap().extend_from_slice(&x[..n]);
        input.consume(n);
        input.take_tags(input.items_read(), &mut self.tags.lock().unwrap());
        Ok(Work::Progress)
    }
    fn tag_policy(&self) -> sluice_runtime::TagPolicy {
        sluice_runtime::TagPolicy::Drop
    }
}

/// Runs `g` on another thread and gives up (failing the test) after `limit` instead of hanging.
fn run_bounded(
    g: Graph,
    opts: Option<RunOptions>,
    limit: Duration,
) -> Result<sluice_runtime::RunReport, RuntimeError> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let result = match opts {
            Some(opts) => g.run(&opts),
            None => g.run_stepped(),
        };
        let _ = tx.send(result);
    });
    rx.recv_timeout(limit)
        .expect("the graph did not return: it hangs")
}

fn schedulers() -> Vec<(&'static str, Option<RunOptions>)> {
    vec![
        ("thread per node", Some(RunOptions::default())),
        (
            "pooled",
            Some(RunOptions {
                scheduler: sluice_runtime::Scheduler::Pooled(2),
                ..RunOptions::default()
            }),
        ),
        ("stepped", None),
    ]
}

#[test]
fn a_panicking_node_stops_the_graph_and_is_reported_by_name() {
    for (label, opts) in schedulers() {
        let mut g = Graph::new();
        let src = g.add("src", Source::new(u64::MAX)).unwrap();
        let pass = g
            .add(
                "pass",
                Pass {
                    panic_at: Some(50_000),
                    ..Pass::default()
                },
            )
            .unwrap();
        let (snk, _) = sink(usize::MAX);
        let snk = g.add("sink", snk).unwrap();
        g.connect(src, "out", pass, "in").unwrap();
        g.connect(pass, "out", snk, "in").unwrap();
        let err = run_bounded(g, opts, Duration::from_secs(20)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "node 'pass' panicked: index out of range in the pass node",
            "{label}"
        );
    }
}

#[test]
fn a_failing_node_in_the_middle_releases_an_endless_source() {
    struct Fail;
    impl Node for Fail {
        fn ports(&self) -> Ports {
            Ports::new().input::<u32>("in").output::<u32>("out")
        }
        fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            let input = io.inputs.get::<u32>(0)?;
            match input.window(1000)? {
                Some(_) => Err(NodeError::msg("bad frame")),
                None => Ok(Work::NeedInput {
                    port: 0,
                    items: 1000,
                }),
            }
        }
    }
    for (label, opts) in schedulers() {
        let mut g = Graph::new();
        let src = g.add("src", Source::new(u64::MAX)).unwrap();
        let fail = g.add("fail", Fail).unwrap();
        let (snk, _) = sink(usize::MAX);
        let snk = g.add("sink", snk).unwrap();
        g.connect(src, "out", fail, "in").unwrap();
        g.connect(fail, "out", snk, "in").unwrap();
        let err = run_bounded(g, opts, Duration::from_secs(20)).unwrap_err();
        assert_eq!(err.to_string(), "node 'fail' failed: bad frame", "{label}");
    }
}

/// A node that commits its items and then takes a while to return: its tags used to be attached
/// after the commit, so a fast sink could read every item and end before the tags arrived.
#[test]
fn tags_reach_downstream_before_their_items() {
    for (label, opts) in schedulers() {
        let mut g = Graph::new();
        let mut source = Source::new(1000);
        source.tag_at = Some(999);
        let src = g.add("src", source).unwrap();
        let pass = g
            .add(
                "pass",
                Pass {
                    linger_after_commit: Some(Duration::from_millis(30)),
                    ..Pass::default()
                },
            )
            .unwrap();
        let (snk, (items, tags)) = sink(100);
        let snk = g.add("sink", snk).unwrap();
        g.connect(src, "out", pass, "in").unwrap();
        g.connect(pass, "out", snk, "in").unwrap();
        run_bounded(g, opts, Duration::from_secs(20)).unwrap();
        assert_eq!(items.lock().unwrap().len(), 1000, "{label}");
        assert_eq!(
            *tags.lock().unwrap(),
            vec![Tag::new(999, "mark", TagValue::U64(999))],
            "{label}"
        );
    }
}

/// A tag's source and a structured value (GNU Radio's `rx_time` tuple, a dict, bytes) pass
/// through a node unchanged.
#[test]
fn tag_source_and_structured_values_survive_propagation() {
    let value = TagValue::dict([
        ("rx_time", TagValue::rx_time(1_700_000_000, 0.5)),
        ("payload", TagValue::bytes(&[1, 2, 3])),
    ]);
    let tag = Tag::with_source(10, "burst", value, "usrp_source0");
    for (label, opts) in schedulers() {
        let mut g = Graph::new();
        let mut source = Source::new(100);
        source.extra_tag = Some(tag.clone());
        let src = g.add("src", source).unwrap();
        let pass = g.add("pass", Pass::default()).unwrap();
        let (snk, (items, tags)) = sink(7);
        let snk = g.add("sink", snk).unwrap();
        g.connect(src, "out", pass, "in").unwrap();
        g.connect(pass, "out", snk, "in").unwrap();
        run_bounded(g, opts, Duration::from_secs(20)).unwrap();
        assert_eq!(items.lock().unwrap().len(), 100, "{label}");
        assert_eq!(*tags.lock().unwrap(), vec![tag.clone()], "{label}");
    }
}

/// Asks for its whole output queue at once: it can fire only when the queue is empty.
struct WholeQueueSource {
    rounds: u32,
}

impl Node for WholeQueueSource {
    fn ports(&self) -> Ports {
        Ports::new().output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.rounds == 0 {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u32>(0)?;
        let cap = out.capacity();
        let Some(space) = out.reserve(cap)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: cap,
            });
        };
        space[..cap].fill(self.rounds);
        out.commit(cap);
        self.rounds -= 1;
        Ok(Work::Progress)
    }
}

/// The pooled scheduler used to block on one queue until it was ready, never looking at the
/// other nodes of its thread: here thread 1 = [big source, tail] blocks on the source's output,
/// which empties only once the tail drains the small queue that thread 2's pass fills. Before
/// the fix this was reported as a deadlock after a second.
#[test]
fn a_pooled_thread_looks_at_its_whole_group_while_it_waits() {
    let mut g = Graph::new();
    let src = g.add("big", WholeQueueSource { rounds: 20 }).unwrap();
    let tail = g.add("tail", Pass::default()).unwrap();
    let pass = g.add("pass", Pass::default()).unwrap();
    let (snk, (items, _)) = sink(usize::MAX);
    let snk = g.add("sink", snk).unwrap();
    g.connect_with(src, "out", pass, "in", Some(16384)).unwrap();
    g.connect_with(pass, "out", tail, "in", Some(1024)).unwrap();
    g.connect(tail, "out", snk, "in").unwrap();
    // Weights (ports): big 1, tail 2, pass 2, sink 1 → groups [big, tail] and [pass, sink].
    let opts = RunOptions {
        scheduler: sluice_runtime::Scheduler::Pooled(2),
        deadlock_timeout: Duration::from_secs(1),
        ..RunOptions::default()
    };
    let report = run_bounded(g, Some(opts), Duration::from_secs(60)).unwrap();
    let total = report.node("big").unwrap().items_out;
    assert_eq!(items.lock().unwrap().len() as u64, total);
}

/// Returns `NeedInput` for 2 items although it has them: a bug that used to spin a core forever.
struct AsksForWhatItHas;

impl Node for AsksForWhatItHas {
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in")
    }
    fn work(&mut self, _io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        Ok(Work::NeedInput { port: 0, items: 2 })
    }
}

#[test]
fn a_node_asking_for_input_it_already_has_is_reported_as_a_bug() {
    for (label, opts) in schedulers() {
        let mut g = Graph::new();
        let src = g.add("src", Source::new(100)).unwrap();
        let bad = g.add("greedy", AsksForWhatItHas).unwrap();
        g.connect(src, "out", bad, "in").unwrap();
        let err = run_bounded(g, opts, Duration::from_secs(20)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(
                "node 'greedy' failed: bug in this node: it keeps asking for 2 items on input 'in'"
            ),
            "{label}: {text}"
        );
    }
}

/// Records the CPUs its thread may run on.
struct WhereAmI(mpsc::Sender<Vec<usize>>);

impl Node for WhereAmI {
    fn ports(&self) -> Ports {
        Ports::new().output::<u32>("out")
    }
    fn work(&mut self, _io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let _ = self.0.send(thread_cpus());
        Ok(Work::Done)
    }
}

fn thread_cpus() -> Vec<usize> {
    sluice_os::allowed_cpus()
}

/// With `taskset -c LAST` (here: this thread's mask), pinned node threads stay on LAST. They used
/// to be pinned to CPU i, outside the mask.
#[test]
fn pinning_respects_the_allowed_cpus() {
    let all = thread_cpus();
    assert!(
        all.len() >= 2,
        "this test needs at least two CPUs to restrict the mask (found {all:?})"
    );
    let last = *all.last().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        sluice_os::pin_current_thread(last).unwrap();
        let mut g = Graph::new();
        let a = g.add("a", WhereAmI(tx.clone())).unwrap();
        let b = g.add("b", WhereAmI(tx)).unwrap();
        let (s1, _) = sink(usize::MAX);
        let (s2, _) = sink(usize::MAX);
        let s1 = g.add("s1", s1).unwrap();
        let s2 = g.add("s2", s2).unwrap();
        g.connect(a, "out", s1, "in").unwrap();
        g.connect(b, "out", s2, "in").unwrap();
        let report = g
            .run(&RunOptions {
                pin_cores: true,
                ..RunOptions::default()
            })
            .unwrap();
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    })
    .join()
    .unwrap();
    let seen: Vec<Vec<usize>> = rx.iter().collect();
    assert_eq!(seen, vec![vec![last], vec![last]]);
}

/// Does `rounds` dependent multiply-adds of arithmetic per item it passes on (a stand-in for a
/// filter: real CPU work, not waiting).
struct Heavy {
    rounds: u32,
}

impl Node for Heavy {
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in").output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u32>(0)?;
        let output = io.outputs.get::<u32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = x.len().min(y.len()).min(4096);
        for (o, &i) in y[..n].iter_mut().zip(&x[..n]) {
            let mut v = i as f32;
            for _ in 0..self.rounds {
                v = std::hint::black_box(v * 1.000_001 + 0.5);
            }
            // The result is used (so the work cannot be optimised away) but leaves the item as
            // it was: v is finite and positive, so its sign bit is 0.
            *o = i | (v.to_bits() >> 31);
        }
        input.consume(n);
        output.commit(n);
        Ok(Work::Progress)
    }
}

/// A [`Heavy`] node that works `penalty` times as hard on any thread but the one that first ran
/// it: a split that moves it to another thread runs slower than one thread, on any machine.
struct HomeBound {
    heavy: Heavy,
    rounds: u32,
    penalty: u32,
    home: Option<std::thread::ThreadId>,
}

impl HomeBound {
    fn new(rounds: u32, penalty: u32) -> Self {
        HomeBound {
            heavy: Heavy { rounds },
            rounds,
            penalty,
            home: None,
        }
    }
}

impl Node for HomeBound {
    fn ports(&self) -> Ports {
        self.heavy.ports()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let here = std::thread::current().id();
        let home = *self.home.get_or_insert(here);
        self.heavy.rounds = if here == home {
            self.rounds
        } else {
            self.rounds * self.penalty
        };
        self.heavy.work(io)
    }
}

/// Writes zeros (a memset per chunk: a cheap source), `left` items in all.
struct Zeros {
    left: u64,
}

impl Node for Zeros {
    fn ports(&self) -> Ports {
        Ports::new().output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.left == 0 {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u32>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min(self.left as usize);
        space[..n].fill(0);
        out.commit(n);
        self.left -= n as u64;
        Ok(Work::Progress)
    }
}

/// Consumes and discards (a cheap sink).
struct Discard;

impl Node for Discard {
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let n = x.len();
        input.consume(n);
        Ok(Work::Progress)
    }
}

fn chain_of(stage: impl Fn() -> Box<dyn Node>, stages: usize, items: u64) -> Graph {
    let mut g = Graph::new();
    let mut last = g.add("src", Zeros { left: items }).unwrap();
    for i in 0..stages {
        let s = g.add_boxed(&format!("s{i}"), stage()).unwrap();
        g.connect(last, "out", s, "in").unwrap();
        last = s;
    }
    let snk = g.add("sink", Discard).unwrap();
    g.connect(last, "out", snk, "in").unwrap();
    g
}

/// The default scheduler measures, decides, says what it decided and why, and runs on the
/// threads it decided. (Whether a 1-stage copy chain is worth splitting depends on the build and
/// the machine: an unoptimised build makes every node heavy. The decision itself is tested on
/// stated measurements in `run/auto.rs`.)
#[test]
fn the_default_scheduler_reports_and_follows_its_decision() {
    let g = chain_of(|| Box::new(Pass::default()), 1, 200_000_000);
    let report = run_bounded(g, Some(RunOptions::default()), Duration::from_secs(60)).unwrap();
    let text = report.render();
    // "split into N threads, before 's0', …"
    let split: Option<usize> = report
        .scheduling
        .strip_prefix("split into ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok());
    let kept = report.scheduling.starts_with("kept on one thread")
        || report.scheduling == "one thread (the run ended before the measurement)";
    assert!(split.is_some() || kept, "{text}");
    assert_eq!(report.threads, split.unwrap_or(1), "{text}");
    assert_eq!(report.node("sink").unwrap().items_in, 200_000_000, "{text}");
}

/// Whether the default scheduler kept one thread because its thread hardly ran while it was
/// measured ("kept on one thread: X ms of work and Y ms waiting in Z ms", X under a tenth of
/// Z): other processes took the cores (as when these tests run beside a second loop of
/// themselves), so no split was worth trying. The tests of its splits accept that outcome.
fn preempted_while_measured(scheduling: &str) -> bool {
    let ms = |text: &str, before: &str| -> Option<f64> {
        text.split(before).next()?.rsplit(' ').next()?.parse().ok()
    };
    let Some(rest) = scheduling.strip_prefix("kept on one thread: ") else {
        return false;
    };
    let (Some(work), Some(elapsed)) = (
        ms(rest, " ms of work"),
        rest.split(" in ").nth(1).and_then(|t| ms(t, " ms")),
    ) else {
        return false;
    };
    work < 0.1 * elapsed
}

/// A split that runs slower than one thread (whatever the model promised) is taken back: the
/// other thread hands its nodes back, every node runs on the first thread again, and every item
/// arrives.
#[test]
fn the_default_scheduler_takes_back_a_split_that_does_not_pay() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cores >= 2, "this test needs two CPUs (found {cores})");
    let mut g = Graph::new();
    let src = g.add("homebound-src", Zeros { left: 2_000_000 }).unwrap();
    let a = g.add("homebound-a", HomeBound::new(100, 20)).unwrap();
    let b = g.add("homebound-b", HomeBound::new(100, 20)).unwrap();
    let snk = g.add("homebound-sink", Discard).unwrap();
    g.connect(src, "out", a, "in").unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g.connect(b, "out", snk, "in").unwrap();
    let report = run_bounded(g, Some(RunOptions::default()), Duration::from_secs(60)).unwrap();
    let text = report.render();
    assert!(
        (report
            .scheduling
            .starts_with("kept on one thread: split into 2 threads")
            && report.scheduling.contains("but the split ran"))
            || preempted_while_measured(&report.scheduling),
        "{text}"
    );
    assert_eq!(report.threads, 1, "{text}");
    assert_eq!(
        report.node("homebound-sink").unwrap().items_in,
        2_000_000,
        "{text}"
    );
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

/// A second run of a graph of the same shape in the same process starts in the grouping the
/// first one measured, says so, and runs on as many threads.
#[test]
fn the_default_scheduler_remembers_its_decision_for_the_same_graph() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cores >= 2, "this test needs two CPUs (found {cores})");
    // Names no other test uses, so that no other run is remembered for this shape.
    let graph = || {
        let mut g = Graph::new();
        let src = g.add("remembered-src", Zeros { left: 2_000_000 }).unwrap();
        let a = g.add("remembered-a", Heavy { rounds: 100 }).unwrap();
        let b = g.add("remembered-b", Heavy { rounds: 100 }).unwrap();
        let snk = g.add("remembered-sink", Discard).unwrap();
        g.connect(src, "out", a, "in").unwrap();
        g.connect(a, "out", b, "in").unwrap();
        g.connect(b, "out", snk, "in").unwrap();
        g
    };
    let first = run_bounded(
        graph(),
        Some(RunOptions::default()),
        Duration::from_secs(60),
    )
    .unwrap();
    assert!(
        !first
            .scheduling
            .ends_with("(remembered from an earlier run)"),
        "{}",
        first.render()
    );
    let second = run_bounded(
        graph(),
        Some(RunOptions::default()),
        Duration::from_secs(60),
    )
    .unwrap();
    assert_eq!(
        second.scheduling,
        format!("{} (remembered from an earlier run)", first.scheduling),
        "{}",
        second.render()
    );
    assert_eq!(second.threads, first.threads);
    assert_eq!(second.node("remembered-sink").unwrap().items_in, 2_000_000);
    assert!(second.warnings.is_empty(), "{:?}", second.warnings);
}

/// Two heavy nodes in a row get a core each.
#[test]
fn the_default_scheduler_splits_two_heavy_nodes() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cores >= 2, "this test needs two CPUs (found {cores})");
    let g = chain_of(|| Box::new(Heavy { rounds: 100 }), 2, 2_000_000);
    let report = run_bounded(g, Some(RunOptions::default()), Duration::from_secs(60)).unwrap();
    let text = report.render();
    // The split is made; it stays unless its trial found it slower (on a machine busy with
    // other work, two pinned threads can be).
    assert!(
        report
            .scheduling
            .starts_with("split into 2 threads, before 's1'")
            || report
                .scheduling
                .starts_with("kept on one thread: split into 2 threads, before 's1'")
            || preempted_while_measured(&report.scheduling),
        "{text}"
    );
    let kept = report.scheduling.starts_with("split");
    assert_eq!(report.threads, if kept { 2 } else { 1 }, "{text}");
    assert_eq!(report.node("sink").unwrap().items_in, 2_000_000);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

/// A graph asked to stop from another thread ends its sources, drains what is in flight (every
/// item the source produced reaches the sink) and returns its report, marked as stopped.
#[test]
fn a_stop_handle_ends_the_sources_and_drains_the_rest() {
    for (label, opts) in schedulers() {
        let mut g = Graph::new();
        let src = g.add("src", Source::new(u64::MAX)).unwrap();
        let pass = g.add("pass", Pass::default()).unwrap();
        let (snk, (items, _)) = sink(usize::MAX);
        let snk = g.add("sink", snk).unwrap();
        g.connect(src, "out", pass, "in").unwrap();
        g.connect(pass, "out", snk, "in").unwrap();
        let stop = StopHandle::new();
        let stopper = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            stopper.stop();
        });
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let result = match opts {
                Some(opts) => g.run(&RunOptions {
                    stop: Some(stop),
                    ..opts
                }),
                None => g.run_stepped_with(&stop),
            };
            let _ = tx.send(result);
        });
        let report = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("a stopped graph must return")
            .unwrap();
        assert!(report.stopped, "{label}");
        let produced = report.node("src").unwrap().items_out;
        assert!(produced > 0, "{label}");
        let got = items.lock().unwrap().len() as u64;
        assert_eq!(got, produced, "{label}: items lost in the drain");
        // And in order: the sink saw 0, 1, 2, ...
        let items = items.lock().unwrap();
        assert!(
            items.iter().enumerate().all(|(i, &v)| v == i as u32),
            "{label}"
        );
    }
}

/// A graceful stop spares the sources named in `spared_by_stop` (a cluster host's stream
/// receivers): they run to the end of their own streams, and everything they produce arrives.
#[test]
fn a_stop_spares_the_named_sources() {
    for (label, opts) in schedulers() {
        let Some(opts) = opts else { continue }; // the stepper ends every source
        for spare in [true, false] {
            let mut g = Graph::new();
            let src = g.add("src", Source::new(u64::MAX)).unwrap();
            let (snk_a, _) = sink(usize::MAX);
            let snk_a = g.add("sink_a", snk_a).unwrap();
            g.connect(src, "out", snk_a, "in").unwrap();
            let rx = g.add("rx", Source::new(100_000)).unwrap();
            let (snk_b, (items, _)) = sink(usize::MAX);
            let snk_b = g.add("sink_b", snk_b).unwrap();
            g.connect(rx, "out", snk_b, "in").unwrap();
            // Asked to stop before it starts: every source not spared ends at once.
            let stop = StopHandle::new();
            stop.stop();
            let report = g
                .run(&RunOptions {
                    stop: Some(stop),
                    spared_by_stop: if spare { vec!["rx".into()] } else { Vec::new() },
                    ..opts.clone()
                })
                .unwrap();
            assert!(report.stopped, "{label}");
            let got = items.lock().unwrap().len();
            if spare {
                assert_eq!(got, 100_000, "{label}: the spared source was cut short");
            } else {
                assert!(
                    got < 100_000,
                    "{label}: the stop did not end 'rx' ({got} items)"
                );
            }
        }
    }
}

/// Passes one item per call, 5 ms apart: 200 items a second.
struct Slow;

impl Node for Slow {
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in").output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u32>(0)?;
        let output = io.outputs.get::<u32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        y[0] = x[0];
        input.consume(1);
        output.commit(1);
        std::thread::sleep(Duration::from_millis(5));
        Ok(Work::Progress)
    }
}

/// The hard stop: a graph whose graceful drain would take many seconds (a full queue before a
/// node that passes 200 items a second) returns at once, marked as stopped, with the queued
/// items dropped; every node is still finished.
#[test]
fn an_abort_returns_at_once_without_draining() {
    for (label, opts) in schedulers()
        .into_iter()
        .filter_map(|(l, o)| o.map(|o| (l, o)))
    {
        let mut g = Graph::new();
        let src = g.add("src", Source::new(u64::MAX)).unwrap();
        let pass = g.add("pass", Slow).unwrap();
        let (snk, (items, _)) = sink(usize::MAX);
        let snk = g.add("sink", snk).unwrap();
        g.connect(src, "out", pass, "in").unwrap();
        g.connect(pass, "out", snk, "in").unwrap();
        let stop = StopHandle::new();
        let stopper = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            stopper.abort();
        });
        let (tx, rx) = mpsc::channel();
        let asked = std::time::Instant::now();
        std::thread::spawn(move || {
            let _ = tx.send(g.run(&RunOptions {
                stop: Some(stop),
                ..opts
            }));
        });
        // A graceful stop would drain thousands of queued items at 200 a second.
        let report = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("an aborted graph must return at once")
            .unwrap();
        assert!(report.stopped, "{label}");
        let produced = report.node("src").unwrap().items_out;
        let got = items.lock().unwrap().len() as u64;
        assert!(
            got + 100 < produced,
            "{label}: {got} of {produced} items reached the sink: the queue was drained"
        );
        eprintln!(
            "{label}: returned {:.0} ms after start, {got} of {produced} items through",
            asked.elapsed().as_secs_f64() * 1e3
        );
    }
}
