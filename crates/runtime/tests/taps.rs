//! Taps on a running graph: attached to an edge and detached again, a hundred times during a
//! run, from another thread, they leave the graph's output bit-identical, and they see the
//! items of the edge they watch.

use sluice_runtime::{
    Graph, Monitor, Node, NodeError, Ports, RunOptions, Scheduler, StopHandle, Work, WorkIo,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Counts 0, 1, 2, … (as u32, wrapping) until `total` items or a stop.
struct Counter {
    next: u64,
    total: u64,
}

impl Node for Counter {
    fn ports(&self) -> Ports {
        Ports::new().output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next == self.total || io.stop_requested() {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u32>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min(4096).min((self.total - self.next) as usize);
        for (i, s) in space[..n].iter_mut().enumerate() {
            *s = (self.next + i as u64) as u32;
        }
        out.commit(n);
        self.next += n as u64;
        Ok(Work::Progress)
    }
}

fn mix(x: u32) -> u32 {
    x.wrapping_mul(2_654_435_761).rotate_left(7)
}

/// A running hash of x·2654435761 (a stand-in for any 1:1 block), kept in order.
struct Mix;

impl Node for Mix {
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
        let n = x.len().min(y.len());
        for (o, i) in y[..n].iter_mut().zip(&x[..n]) {
            *o = mix(*i);
        }
        input.consume(n);
        output.commit(n);
        Ok(Work::Progress)
    }
}

/// Checks every item against `mix(index)` as it reads (nothing stored, so an endless run
/// costs no memory): counts items and mismatches.
struct Check {
    items: Arc<AtomicU64>,
    wrong: Arc<AtomicU64>,
}

impl Node for Check {
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
        let start = self.items.load(Ordering::Relaxed);
        let wrong = x
            .iter()
            .enumerate()
            .filter(|(k, v)| **v != mix((start + *k as u64) as u32))
            .count();
        self.wrong.fetch_add(wrong as u64, Ordering::Relaxed);
        self.items.fetch_add(x.len() as u64, Ordering::Relaxed);
        let n = x.len();
        input.consume(n);
        Ok(Work::Progress)
    }
}

/// Runs count → mix → check; returns (items checked, mismatches).
fn run(total: u64, monitor: Option<Monitor>, stop: Option<StopHandle>) -> (u64, u64) {
    let (items, wrong) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut g = Graph::new();
    let src = g.add("count", Counter { next: 0, total }).unwrap();
    let m = g.add("mix", Mix).unwrap();
    let out = g
        .add(
            "check",
            Check {
                items: Arc::clone(&items),
                wrong: Arc::clone(&wrong),
            },
        )
        .unwrap();
    g.connect(src, "out", m, "in").unwrap();
    g.connect(m, "out", out, "in").unwrap();
    g.run(&RunOptions {
        scheduler: Scheduler::ThreadPerNode,
        monitor,
        stop,
        deadlock_timeout: Duration::from_secs(10),
        ..RunOptions::default()
    })
    .unwrap();
    (items.load(Ordering::Relaxed), wrong.load(Ordering::Relaxed))
}

#[test]
fn a_tap_attached_and_detached_100_times_leaves_the_output_bit_identical() {
    // Without taps: the reference (and a check that the checker can see a wrong item: the
    // mix is not the identity).
    assert_ne!(mix(1), 1);
    assert_eq!(run(100_000, None, None), (100_000, 0));
    // With taps, on an endless run that the watcher stops once it is done, so that every
    // attach, read and detach happens while the graph runs.
    let monitor = Monitor::new();
    let stop = StopHandle::new();
    let watcher = {
        let (monitor, stop) = (monitor.clone(), stop.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(20);
            while monitor.edges().is_empty() {
                assert!(
                    Instant::now() < deadline,
                    "the run never registered its edges"
                );
                std::thread::yield_now();
            }
            let edge = monitor
                .edge("count", "out")
                .expect("count.out is an edge")
                .clone();
            assert_eq!(edge.readers, vec![("mix".to_string(), "in".to_string())]);
            assert_eq!(monitor.edges().len(), 2);
            let mut buf = vec![0u32; 1024];
            for round in 0..100 {
                let mut tap = edge.attach();
                assert!(edge.taps() >= 1);
                // Read until the tap has delivered something (the source never stops first).
                let mut delivered = 0;
                let mut latest = round % 2 == 0;
                while delivered == 0 {
                    assert!(Instant::now() < deadline, "the tap never saw an item");
                    let read = if latest {
                        tap.read_latest(&mut buf).unwrap()
                    } else {
                        tap.read(&mut buf).unwrap()
                    };
                    // Every item a tap delivers is the one written at its index.
                    for (k, v) in buf[..read.items].iter().enumerate() {
                        assert_eq!(*v as u64, (read.first + k as u64) as u32 as u64);
                    }
                    delivered += read.items;
                    latest = !latest;
                }
                assert!(
                    tap.read(&mut vec![0f32; 4]).is_err(),
                    "a wrong type is refused"
                );
                drop(tap);
            }
            assert_eq!(edge.taps(), 0, "every tap detached");
            stop.stop();
        })
    };
    let (items, wrong) = run(u64::MAX, Some(monitor), Some(stop));
    watcher.join().unwrap();
    assert!(items > 0);
    assert_eq!(
        wrong, 0,
        "the output changed under taps ({wrong} of {items} items)"
    );
}
