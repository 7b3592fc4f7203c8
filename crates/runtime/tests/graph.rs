//! The runtime's contract, through small nodes: errors that name what went wrong, end of stream,
//! deadlock detection in both schedulers, statistics.

use sluice_runtime::{Graph, Node, NodeError, Ports, RunOptions, Work, WorkIo};
use std::time::Duration;

/// Emits 0, 1, 2, … up to `total`, then ends.
struct Count {
    next: u32,
    total: u32,
}

impl Node for Count {
    fn ports(&self) -> Ports {
        Ports::new().output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next == self.total {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u32>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min((self.total - self.next) as usize);
        for (i, s) in space[..n].iter_mut().enumerate() {
            *s = self.next + i as u32;
        }
        out.commit(n);
        self.next += n as u32;
        Ok(Work::Progress)
    }
}

/// Sums windows of `window` items, consuming one at a time (a moving sum): a firing threshold.
struct MovingSum {
    window: usize,
    fail_at: Option<u64>,
}

impl Node for MovingSum {
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in").output::<u64>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u32>(0)?;
        let output = io.outputs.get::<u64>(0)?;
        if let Some(at) = self.fail_at {
            if input.items_read() >= at {
                return Err(NodeError::msg("sensor unplugged"));
            }
        }
        let Some(x) = input.window(self.window)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: self.window,
            });
        };
        if x.len() < self.window {
            return Ok(Work::Done);
        }
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let k = (x.len() - self.window + 1).min(y.len());
        for (i, o) in y[..k].iter_mut().enumerate() {
            *o = x[i..i + self.window].iter().map(|&v| u64::from(v)).sum();
        }
        input.consume(k);
        output.commit(k);
        Ok(Work::Progress)
    }
}

/// Collects u64 items and checks them against a closure of the index.
struct Check {
    seen: u64,
    expect: fn(u64) -> u64,
}

impl Node for Check {
    fn ports(&self) -> Ports {
        Ports::new().input::<u64>("in")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u64>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        for &v in x {
            let want = (self.expect)(self.seen);
            if v != want {
                return Err(NodeError::msg(format!(
                    "item {} is {v}, not {want}",
                    self.seen
                )));
            }
            self.seen += 1;
        }
        let n = x.len();
        input.consume(n);
        Ok(Work::Progress)
    }
}

fn moving_sum_graph(total: u32, window: usize, capacity: Option<usize>) -> Graph {
    let mut g = Graph::new();
    let src = g.add("count", Count { next: 0, total }).unwrap();
    let sum = g
        .add(
            "sum",
            MovingSum {
                window,
                fail_at: None,
            },
        )
        .unwrap();
    let chk = g
        .add(
            "check",
            Check {
                seen: 0,
                expect: |i| 3 * i + 3, // i + (i+1) + (i+2) for window 3
            },
        )
        .unwrap();
    g.connect_with(src, "out", sum, "in", capacity).unwrap();
    g.connect(sum, "out", chk, "in").unwrap();
    g
}

#[test]
fn sliding_windows_run_in_both_schedulers() {
    let report = moving_sum_graph(300_000, 3, Some(1024))
        .run(&RunOptions::default())
        .unwrap();
    assert_eq!(report.node("check").unwrap().items_in, 300_000 - 2);
    assert_eq!(report.node("count").unwrap().items_out, 300_000);
    let report = moving_sum_graph(50_000, 3, Some(1024))
        .run_stepped()
        .unwrap();
    assert_eq!(report.node("check").unwrap().items_in, 50_000 - 2);
    assert!(report.render().contains("check"));
}

#[test]
fn pooled_threads_give_the_same_results() {
    for threads in [1, 2, 3] {
        let opts = RunOptions {
            scheduler: sluice_runtime::Scheduler::Pooled(threads),
            ..RunOptions::default()
        };
        let report = moving_sum_graph(200_000, 3, Some(1024)).run(&opts).unwrap();
        assert_eq!(report.node("check").unwrap().items_in, 200_000 - 2);
        assert_eq!(report.nodes.len(), 3);
    }
}

#[test]
fn mismatched_item_types_name_both_ends() {
    let mut g = Graph::new();
    let src = g.add("count", Count { next: 0, total: 1 }).unwrap();
    let chk = g
        .add(
            "check",
            Check {
                seen: 0,
                expect: |i| i,
            },
        )
        .unwrap();
    let err = g.connect(src, "out", chk, "in").unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot connect count.out (u32) to check.in (u64): the item types differ"
    );
}

#[test]
fn unknown_ports_duplicates_and_unconnected_ports_are_errors() {
    let mut g = Graph::new();
    let src = g.add("count", Count { next: 0, total: 1 }).unwrap();
    let sum = g
        .add(
            "sum",
            MovingSum {
                window: 2,
                fail_at: None,
            },
        )
        .unwrap();
    assert_eq!(
        g.add(
            "sum",
            MovingSum {
                window: 2,
                fail_at: None
            }
        )
        .unwrap_err()
        .to_string(),
        "a node named 'sum' already exists"
    );
    assert_eq!(
        g.connect(src, "output", sum, "in").unwrap_err().to_string(),
        "node 'count' has no output port 'output' (it has: out)"
    );
    g.connect(src, "out", sum, "in").unwrap();
    assert_eq!(
        g.connect(src, "out", sum, "in").unwrap_err().to_string(),
        "input sum.in is already connected (an input takes one stream; use a second port or an adder)"
    );
    let err = g.run_stepped().unwrap_err();
    assert_eq!(err.to_string(), "output sum.out is not connected");
}

#[test]
fn a_failing_node_stops_the_graph_and_is_named() {
    for threaded in [true, false] {
        let mut g = Graph::new();
        let src = g
            .add(
                "count",
                Count {
                    next: 0,
                    total: u32::MAX,
                },
            )
            .unwrap();
        let sum = g
            .add(
                "sum",
                MovingSum {
                    window: 1,
                    fail_at: Some(10_000),
                },
            )
            .unwrap();
        let chk = g
            .add(
                "check",
                Check {
                    seen: 0,
                    expect: |i| i,
                },
            )
            .unwrap();
        g.connect(src, "out", sum, "in").unwrap();
        g.connect(sum, "out", chk, "in").unwrap();
        let err = if threaded {
            g.run(&RunOptions::default())
        } else {
            g.run_stepped()
        }
        .unwrap_err();
        assert_eq!(err.to_string(), "node 'sum' failed: sensor unplugged");
    }
}

#[test]
fn a_window_larger_than_the_queue_is_an_error_not_a_hang() {
    let err = moving_sum_graph(10_000, 5000, Some(1024))
        .run(&RunOptions::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "node 'sum' failed: requested 5000 items but the queue holds at most 1024"
    );
}

/// Reads one item from each of two inputs at a time (a "zip"): fed by two paths of which one
/// is delayed by a deep window, it deadlocks on small queues.
struct Zip;

impl Node for Zip {
    fn ports(&self) -> Ports {
        Ports::new()
            .input::<u32>("a")
            .input::<u64>("b")
            .output::<u64>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let a = io.inputs.get::<u32>(0)?;
        let Some(x) = a.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let take = x.len();
        let b = io.inputs.get::<u64>(1)?;
        let Some(y) = b.window(1)? else {
            return Ok(Work::NeedInput { port: 1, items: 1 });
        };
        if y.is_empty() {
            return Ok(Work::Done);
        }
        let n = take.min(y.len());
        let out = io.outputs.get::<u64>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = n.min(space.len());
        space[..n].fill(0);
        out.commit(n);
        io.inputs.get::<u32>(0)?.consume(n);
        io.inputs.get::<u64>(1)?.consume(n);
        Ok(Work::Progress)
    }
}

/// Sums each block of `n` items into one output (consumes the whole window: a decimator).
struct BlockSum {
    n: usize,
}

impl Node for BlockSum {
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in").output::<u64>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u32>(0)?;
        let Some(x) = input.window(self.n)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: self.n,
            });
        };
        if x.len() < self.n {
            return Ok(Work::Done);
        }
        let sum = x[..self.n].iter().map(|&v| u64::from(v)).sum();
        let output = io.outputs.get::<u64>(0)?;
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        y[0] = sum;
        output.commit(1);
        input.consume(self.n);
        Ok(Work::Progress)
    }
}

fn deadlocking_graph() -> Graph {
    // count fans out (one shared 4096-item queue) to zip.a and to a block sum of 3000 items that
    // feeds zip.b. After the first block, zip consumes `a` one item per block sum, so `a` lags
    // ~4095 items behind and the queue is full, while the block sum waits for 3000 new items:
    // an artificial deadlock of the process network.
    let mut g = Graph::new();
    let src = g
        .add(
            "count",
            Count {
                next: 0,
                total: 100_000,
            },
        )
        .unwrap();
    let sum = g.add("sum", BlockSum { n: 3000 }).unwrap();
    let zip = g.add("zip", Zip).unwrap();
    let chk = g
        .add(
            "check",
            Check {
                seen: 0,
                expect: |_| 0,
            },
        )
        .unwrap();
    g.connect_with(src, "out", zip, "a", Some(1024)).unwrap();
    g.connect_with(src, "out", sum, "in", Some(4096)).unwrap();
    g.connect(sum, "out", zip, "b").unwrap();
    g.connect(zip, "out", chk, "in").unwrap();
    g
}

#[test]
fn artificial_deadlock_is_reported_with_the_queues_involved() {
    let opts = RunOptions {
        deadlock_timeout: Duration::from_millis(300),
        ..RunOptions::default()
    };
    let err = deadlocking_graph().run(&opts).unwrap_err().to_string();
    assert!(err.starts_with("deadlock: every node is blocked"), "{err}");
    assert!(
        err.contains("'count' waits for room for 1 items on output out (queue count.out -> zip.a, capacity 4096)"),
        "{err}"
    );
    assert!(
        err.contains("'sum' waits for 3000 items on input in"),
        "{err}"
    );

    let pooled = RunOptions {
        scheduler: sluice_runtime::Scheduler::Pooled(2),
        ..opts
    };
    let err = deadlocking_graph().run(&pooled).unwrap_err().to_string();
    assert!(err.starts_with("deadlock: every node is blocked"), "{err}");

    let err = deadlocking_graph().run_stepped().unwrap_err().to_string();
    assert!(err.starts_with("deadlock: every node is blocked"), "{err}");
    assert!(err.contains("'zip' waits for 1 items on input b"), "{err}");
}

#[test]
fn refused_realtime_priority_is_a_warning_and_the_run_still_works() {
    let opts = RunOptions {
        realtime_priority: Some(10),
        pin_cores: true,
        ..RunOptions::default()
    };
    let report = moving_sum_graph(10_000, 3, None).run(&opts).unwrap();
    assert_eq!(report.node("check").unwrap().items_in, 10_000 - 2);
    // Where SCHED_FIFO is permitted there is no warning; where not, one per node names it.
    for w in &report.warnings {
        assert!(
            w.contains("SCHED_FIFO priority 10 refused") || w.contains("could not pin"),
            "{w}"
        );
    }
}

/// A cycle used to run until the watchdog called it a deadlock, a second later; it is now an
/// error when the graph is built, naming the nodes on it.
#[test]
fn a_cycle_is_an_error_before_anything_runs() {
    struct Relay;
    impl Node for Relay {
        fn ports(&self) -> Ports {
            Ports::new().input::<u32>("in").output::<u32>("out")
        }
        fn work(&mut self, _io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            Ok(Work::NeedInput { port: 0, items: 1 })
        }
    }
    let build = || {
        let mut g = Graph::new();
        let a = g.add("a", Relay).unwrap();
        let b = g.add("b", Relay).unwrap();
        let c = g.add("c", Relay).unwrap();
        g.connect(a, "out", b, "in").unwrap();
        g.connect(b, "out", c, "in").unwrap();
        g.connect(c, "out", a, "in").unwrap();
        g
    };
    // The watchdog's error would be "deadlock: …"; this one comes from the build.
    for err in [
        build().run(&RunOptions::default()).unwrap_err(),
        build().run_stepped().unwrap_err(),
    ] {
        assert_eq!(
            err.to_string(),
            "the graph has a cycle: a -> b -> c -> a; a node's output may not lead back to its own input"
        );
    }
}

/// A queue larger than the machine's available memory is refused before anything is mapped,
/// naming the edge and what sized it (not a bare `mmap` error, nor the machine swapping).
#[test]
fn a_queue_larger_than_memory_is_refused_naming_the_edge() {
    // 2^44 u32 items: 64 TiB, more than any machine this runs on.
    let err = moving_sum_graph(10, 3, Some(1 << 44))
        .check()
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("edge count.out -> sum.in: its queue needs 64.0 TiB (17592186044416 items of 4 bytes: the graph's queue_bytes or the edge's capacity)"),
        "{err}"
    );
    assert!(
        err.ends_with("this machine has available; lower queue_bytes or the edge's capacity"),
        "{err}"
    );
    // The same graph with a sane queue passes.
    moving_sum_graph(10, 3, Some(1 << 10)).check().unwrap();
}
