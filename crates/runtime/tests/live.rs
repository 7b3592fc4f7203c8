//! Changing a running graph: branches attached to an output and detached again (a hundred
//! times, from another thread) leave the main path's output bit-identical and each see a
//! gapless run of the stream; a node replaced at item N gives the old node's output before N
//! and the new node's from N, warmed up on its history.

use sluice_runtime::{
    Detach, Graph, LiveError, LiveGraph, Node, NodeError, Ports, RunOptions, Scheduler, Work,
    WorkIo,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counts 0, 1, 2, … as u32 up to `total`, never beyond `gate` (a test opens it as it goes).
struct Counter {
    next: u64,
    total: u64,
    gate: Arc<AtomicU64>,
    /// How many it has written so far.
    made: Arc<AtomicU64>,
}

impl Node for Counter {
    fn ports(&self) -> Ports {
        Ports::new().output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next == self.total || io.stop_requested() {
            return Ok(Work::Done);
        }
        let open = self.gate.load(Ordering::Acquire).min(self.total);
        if self.next >= open {
            std::thread::sleep(Duration::from_millis(1));
            return Ok(Work::Progress);
        }
        let out = io.outputs.get::<u32>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min(4096).min((open - self.next) as usize);
        for (i, s) in space[..n].iter_mut().enumerate() {
            *s = (self.next + i as u64) as u32;
        }
        out.commit(n);
        self.next += n as u64;
        self.made.store(self.next, Ordering::Release);
        Ok(Work::Progress)
    }
}

/// The sum of the last `width` inputs (zeros before the first): a node with history, kept in
/// its own state as a filter keeps its delay line.
struct MovingSum {
    width: usize,
    past: Vec<u32>,
    /// It reads no item from this one on (`u64::MAX`: no such limit).
    read_below: u64,
}

impl MovingSum {
    fn new(width: usize) -> Self {
        MovingSum {
            width,
            past: vec![0; width - 1],
            read_below: u64::MAX,
        }
    }
}

impl Node for MovingSum {
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in").output::<u32>("out")
    }
    fn history(&self) -> u64 {
        self.width as u64 - 1
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u32>(0)?;
        let output = io.outputs.get::<u32>(0)?;
        let allowed = self.read_below.saturating_sub(input.items_read());
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = x
            .len()
            .min(y.len())
            .min(allowed.try_into().unwrap_or(usize::MAX));
        if n == 0 {
            return Ok(Work::Progress);
        }
        for (o, &v) in y[..n].iter_mut().zip(&x[..n]) {
            *o = self.past.iter().fold(v, |a, &p| a.wrapping_add(p));
            if !self.past.is_empty() {
                self.past.remove(0);
                self.past.push(v);
            }
        }
        input.consume(n);
        output.commit(n);
        Ok(Work::Progress)
    }
}

/// Keeps every item it reads.
struct Collect(Arc<Mutex<Vec<u32>>>);

impl Node for Collect {
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
        self.0.lock().unwrap().extend_from_slice(x);
        let n = x.len();
        input.consume(n);
        Ok(Work::Progress)
    }
}

/// FNV-1a over the items, in order.
struct Checksum(Arc<AtomicU64>);

impl Node for Checksum {
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
        let mut h = self.0.load(Ordering::Relaxed);
        for &v in x {
            h = (h ^ u64::from(v)).wrapping_mul(0x100_0000_01b3);
        }
        self.0.store(h, Ordering::Relaxed);
        let n = x.len();
        input.consume(n);
        Ok(Work::Progress)
    }
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// count → sum (width 3) → checksum, the graph the branch tests change.
fn main_graph(total: u64, gate: &Arc<AtomicU64>, sum: &Arc<AtomicU64>) -> Graph {
    let mut g = Graph::new();
    let c = g
        .add(
            "count",
            Counter {
                next: 0,
                total,
                gate: Arc::clone(gate),
                made: Default::default(),
            },
        )
        .unwrap();
    let m = g.add("sum", MovingSum::new(3)).unwrap();
    let k = g.add("check", Checksum(Arc::clone(sum))).unwrap();
    g.connect(c, "out", m, "in").unwrap();
    g.connect(m, "out", k, "in").unwrap();
    g
}

fn collector() -> (Graph, Arc<Mutex<Vec<u32>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut g = Graph::new();
    g.add("keep", Collect(Arc::clone(&seen))).unwrap();
    (g, seen)
}

#[test]
fn branches_attached_and_detached_a_hundred_times_leave_the_main_path_bit_identical() {
    let total = 40_000_000;
    let open = Arc::new(AtomicU64::new(u64::MAX));
    // Without changes.
    let plain = Arc::new(AtomicU64::new(FNV_START));
    main_graph(total, &open, &plain)
        .run(&RunOptions::default())
        .unwrap();

    for scheduler in [Scheduler::Auto, Scheduler::ThreadPerNode] {
        let changed = Arc::new(AtomicU64::new(FNV_START));
        let graph = main_graph(total, &open, &changed);
        let live = LiveGraph::new();
        let opts = RunOptions {
            scheduler,
            ..RunOptions::default()
        };
        let runner = {
            let live = live.clone();
            std::thread::spawn(move || graph.run_live(&opts, &live))
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !live.is_running() {
            assert!(Instant::now() < deadline, "the graph never started");
            std::thread::yield_now();
        }
        let mut branches = 0;
        for i in 0..100 {
            let (branch, seen) = collector();
            let feed = if i % 2 == 0 { "count.out" } else { "sum.out" };
            let attached = live.attach(
                &format!("b{i}"),
                branch,
                &[(feed, "keep.in")],
                None,
                &RunOptions::default(),
            );
            let branch = match attached {
                Ok(b) => b,
                Err(LiveError::NotRunning) => break, // the stream ended first
                Err(e) => panic!("{e}"),
            };
            let first = branch.first_items()[0];
            std::thread::sleep(Duration::from_micros(200));
            let how = if i % 3 == 0 {
                Detach::Drop
            } else {
                Detach::Drain
            };
            branch.detach(how).unwrap();
            let seen = seen.lock().unwrap();
            // A gapless run of the stream from where the branch attached.
            if feed == "count.out" {
                for (k, &v) in seen.iter().enumerate() {
                    assert_eq!(v, (first + k as u64) as u32, "branch {i}, item {k}");
                }
            }
            branches += 1;
        }
        assert!(live.branch_names().is_empty());
        runner.join().unwrap().unwrap();
        assert_eq!(branches, 100, "{scheduler:?}: the stream ended first");
        assert_eq!(
            changed.load(Ordering::Relaxed),
            plain.load(Ordering::Relaxed),
            "{scheduler:?}: the main path changed"
        );
    }
}

#[test]
fn a_branch_starts_at_a_stated_item_while_the_ring_holds_it() {
    let gate = Arc::new(AtomicU64::new(1000));
    let sum = Arc::new(AtomicU64::new(FNV_START));
    let graph = main_graph(5000, &gate, &sum);
    let live = LiveGraph::new();
    let runner = {
        let live = live.clone();
        std::thread::spawn(move || graph.run_live(&RunOptions::default(), &live))
    };
    while !live.is_running() {
        std::thread::yield_now();
    }
    // Before the run, and with a bad feed, the errors say what is wrong.
    let (branch, _) = collector();
    let e = live
        .attach(
            "x",
            branch,
            &[("count.nope", "keep.in")],
            None,
            &RunOptions::default(),
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "the running graph has no stream output 'count.nope' (it has: count.out, sum.out)"
    );
    // Item 2000 is not written yet.
    let e = live
        .attach(
            "early",
            collector().0,
            &[("count.out", "keep.in")],
            Some(2000),
            &RunOptions::default(),
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("cannot read count.out from item 2000: item 2000 is not in the queue"),
        "{e}"
    );
    // Once the first 1000 items have gone through, item 200 is consumed by every reader, so
    // no longer held.
    let deadline = Instant::now() + Duration::from_secs(20);
    let e = loop {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
        if live.items_written("count.out").unwrap() < 1000 {
            continue;
        }
        match live.attach(
            "late",
            collector().0,
            &[("count.out", "keep.in")],
            Some(200),
            &RunOptions::default(),
        ) {
            Err(LiveError::NotInRing { source, .. }) => break source,
            Ok(b) => drop(b.detach(Detach::Drop).unwrap()), // still held: readers are slow
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(
        e.to_string(),
        "item 200 is not in the queue: it holds items 1000 to 1000 (exclusive) now"
    );
    // Item 1000 is the next one: attaching there sees everything from it.
    let (branch, seen) = collector();
    let b = live
        .attach(
            "at",
            branch,
            &[("count.out", "keep.in")],
            Some(1000),
            &RunOptions::default(),
        )
        .unwrap();
    assert_eq!(b.first_items(), [1000]);
    gate.store(u64::MAX, Ordering::Release);
    b.wait().unwrap();
    runner.join().unwrap().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 4000);
    assert!(seen.iter().enumerate().all(|(k, &v)| v == 1000 + k as u32));
    assert!(matches!(
        live.attach(
            "after",
            collector().0,
            &[("count.out", "keep.in")],
            None,
            &RunOptions::default()
        ),
        Err(LiveError::NotRunning)
    ));
}

/// The moving sum of `width` over 0, 1, 2, … at item n.
fn moving_sum(width: u64, n: u64) -> u32 {
    (n.saturating_sub(width - 1)..=n).fold(0u32, |a, v| a.wrapping_add(v as u32))
}

#[test]
fn a_node_replaced_at_item_n_gives_the_old_output_before_n_and_the_new_from_n() {
    for scheduler in [Scheduler::Auto, Scheduler::ThreadPerNode] {
        let (total, at) = (50_000u64, 20_000u64);
        let gate = Arc::new(AtomicU64::new(at / 2));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut g = Graph::new();
        let c = g
            .add(
                "count",
                Counter {
                    next: 0,
                    total,
                    gate: Arc::clone(&gate),
                    made: Default::default(),
                },
            )
            .unwrap();
        let m = g.add("filter", MovingSum::new(4)).unwrap();
        let k = g.add("keep", Collect(Arc::clone(&seen))).unwrap();
        g.connect(c, "out", m, "in").unwrap();
        g.connect(m, "out", k, "in").unwrap();
        let live = LiveGraph::new();
        let opts = RunOptions {
            scheduler,
            ..RunOptions::default()
        };
        let runner = {
            let live = live.clone();
            std::thread::spawn(move || g.run_live(&opts, &live))
        };
        while !live.is_running() {
            std::thread::yield_now();
        }
        // Wrong ports, and an offset already passed, are refused.
        struct Other;
        impl Node for Other {
            fn ports(&self) -> Ports {
                Ports::new().input::<f32>("in").output::<u32>("out")
            }
            fn work(&mut self, _: &mut WorkIo<'_>) -> Result<Work, NodeError> {
                Ok(Work::Done)
            }
        }
        let e = live.replace("filter", Box::new(Other), at).unwrap_err();
        assert!(matches!(e, LiveError::PortsChanged { .. }), "{e}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while seen.lock().unwrap().len() < (at / 2) as usize {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(1));
        }
        let e = live
            .replace("filter", Box::new(MovingSum::new(9)), 10)
            .unwrap()
            .wait(Duration::from_secs(20))
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("node 'filter' is past item 10 already"),
            "{e}"
        );
        // The switch: a wider filter from item `at`, warmed up on the 8 items before it.
        let pending = live
            .replace("filter", Box::new(MovingSum::new(9)), at)
            .unwrap();
        // The source goes up to `at` only until the switch: the node's thread takes a request
        // up between two `work` calls, so one call begun just before could otherwise read past
        // `at` first (the replacement is then refused as passed).
        gate.store(at, Ordering::Release);
        assert_eq!(pending.wait(Duration::from_secs(20)).unwrap(), at);
        gate.store(u64::MAX, Ordering::Release);
        runner.join().unwrap().unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len() as u64, total, "{scheduler:?}");
        for (n, &v) in seen.iter().enumerate() {
            let n = n as u64;
            let want = if n < at {
                moving_sum(4, n)
            } else {
                moving_sum(9, n)
            };
            assert_eq!(v, want, "{scheduler:?}: item {n}");
        }
    }
}

/// Sums like [`MovingSum`] but reads nothing from item `cap` on until `release` is set; once
/// there and the source has written up to `at`, it blocks inside its `work` call until then,
/// and that call then reads on to `at` at once (as a node busy on a long call would).
struct Paused {
    inner: MovingSum,
    made: Arc<AtomicU64>,
    at: u64,
    inside: Arc<AtomicBool>,
    release: Arc<AtomicBool>,
}

impl Node for Paused {
    fn ports(&self) -> Ports {
        self.inner.ports()
    }
    fn history(&self) -> u64 {
        self.inner.history()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let read = io.inputs.get::<u32>(0)?.items_read();
        if self.inner.read_below != u64::MAX && read == self.inner.read_below {
            if self.made.load(Ordering::Acquire) < self.at {
                std::thread::sleep(Duration::from_millis(1));
                return Ok(Work::Progress);
            }
            self.inside.store(true, Ordering::Release);
            let deadline = Instant::now() + Duration::from_secs(20);
            while !self.release.load(Ordering::Acquire) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            self.inner.read_below = u64::MAX;
        }
        self.inner.work(io)
    }
}

/// A request that arrives while the node is inside a `work` call that then reads every item
/// up to the offset at once: the new node's history must still be in the ring when the node's
/// thread takes the request up. (Before the caller held the node back at the history, this
/// failed with "item 19992 is no longer in the ring".)
#[test]
fn a_replacement_asked_during_a_long_work_call_still_warms_up_on_its_history() {
    for scheduler in [Scheduler::Auto, Scheduler::ThreadPerNode] {
        let (total, at) = (30_000u64, 20_000u64);
        let gate = Arc::new(AtomicU64::new(at));
        let made = Arc::new(AtomicU64::new(0));
        let (inside, release) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut g = Graph::new();
        let c = g
            .add(
                "count",
                Counter {
                    next: 0,
                    total,
                    gate: Arc::clone(&gate),
                    made: Arc::clone(&made),
                },
            )
            .unwrap();
        let mut inner = MovingSum::new(4);
        inner.read_below = at - 100;
        let paused = Paused {
            inner,
            made: Arc::clone(&made),
            at,
            inside: Arc::clone(&inside),
            release: Arc::clone(&release),
        };
        let m = g.add("filter", paused).unwrap();
        let k = g.add("keep", Collect(Arc::clone(&seen))).unwrap();
        g.connect(c, "out", m, "in").unwrap();
        g.connect(m, "out", k, "in").unwrap();
        let live = LiveGraph::new();
        let opts = RunOptions {
            scheduler,
            ..RunOptions::default()
        };
        let runner = {
            let live = live.clone();
            std::thread::spawn(move || g.run_live(&opts, &live))
        };
        // The filter is inside the call that will read on to `at`, below the 8 items of history.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !inside.load(Ordering::Acquire) {
            assert!(
                Instant::now() < deadline,
                "{scheduler:?}: the filter never paused"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let pending = live
            .replace("filter", Box::new(MovingSum::new(9)), at)
            .unwrap();
        release.store(true, Ordering::Release);
        assert_eq!(
            pending.wait(Duration::from_secs(20)).unwrap(),
            at,
            "{scheduler:?}"
        );
        gate.store(u64::MAX, Ordering::Release);
        runner.join().unwrap().unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len() as u64, total, "{scheduler:?}");
        for (n, &v) in seen.iter().enumerate() {
            let n = n as u64;
            let want = moving_sum(if n < at { 4 } else { 9 }, n);
            assert_eq!(v, want, "{scheduler:?}: item {n}");
        }
    }
}
