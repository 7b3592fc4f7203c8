//! The real-time throttle in both modes, against the accounting a device would do.

use super::*;
use crate::blocks::{VectorSink, VectorSource};
use sluice_runtime::{Graph, RunOptions, Scheduler};

/// Tags of `key` as (index, value).
fn gaps(tags: &[Tag], key: &str) -> Vec<(u64, u64)> {
    tags.iter()
        .filter(|t| &*t.key == key)
        .map(|t| match t.value {
            TagValue::U64(n) => (t.index, n),
            ref v => panic!("{v:?}"),
        })
        .collect()
}

/// A node that passes items but stalls for `pause` once after `after` items: a graph that
/// falls behind for a moment.
struct Stall {
    after: u64,
    pause: Duration,
    passed: u64,
}

impl Node for Stall {
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in").output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.passed >= self.after && !self.pause.is_zero() {
            std::thread::sleep(std::mem::take(&mut self.pause));
        }
        let limit = if self.passed < self.after {
            self.after - self.passed
        } else {
            u64::MAX
        };
        let (work, n) = crate::blocks::basic::pass_through::<u32>(io, limit)?;
        self.passed += n as u64;
        Ok(work)
    }
}

#[test]
fn a_source_that_overflows_drops_the_oldest_and_tags_the_gap() {
    // 20 kHz for 0.3 s; downstream stalls 100 ms after 1000 items: about 2000 items are due
    // meanwhile, the 256-item queue and the 200-item device buffer hold some, the rest drop.
    let x: Vec<u32> = (0..6000).collect();
    let mut g = Graph::new();
    let src = g
        .add(
            "src",
            VectorSource::new(x.clone()).with_tag(0, "first", TagValue::U64(0)),
        )
        .unwrap();
    let rt = g
        .add(
            "rt",
            RtThrottle::<u32>::new(20_000.0, RtMode::Source, 200).unwrap(),
        )
        .unwrap();
    let stall = Stall {
        after: 1000,
        pause: Duration::from_millis(100),
        passed: 0,
    };
    let stall = g.add("stall", stall).unwrap();
    let (sink, data) = VectorSink::<u32>::new();
    let sink = g.add("sink", sink).unwrap();
    g.connect(src, "out", rt, "in").unwrap();
    g.connect_with(rt, "out", stall, "in", Some(256)).unwrap();
    g.connect_with(stall, "out", sink, "in", Some(256)).unwrap();
    let opts = RunOptions {
        scheduler: Scheduler::ThreadPerNode,
        ..RunOptions::default()
    };
    let report = g.run(&opts).unwrap();
    let items = data.items();
    let tags = data.tags();
    let lost = gaps(&tags, OVERFLOW);
    assert!(
        !lost.is_empty(),
        "a 100 ms stall at 20 kHz must overflow a 456-item buffer"
    );
    let mut expected = 0u32;
    for (k, &v) in items.iter().enumerate() {
        let gap = lost.iter().find(|(i, _)| *i == k as u64).map_or(0, |g| g.1);
        assert_eq!(u64::from(v - expected), gap, "item {k} is {v}");
        expected = v + 1;
    }
    let dropped: u64 = lost.iter().map(|g| g.1).sum();
    assert_eq!(items.len() as u64 + dropped, 6000);
    assert!(tags.iter().any(|t| &*t.key == "first" && t.index == 0));
    let w = &report.node("rt").unwrap().warnings;
    assert!(
        w[0].contains(&format!("({dropped} items dropped)")),
        "{w:?}"
    );
}

#[test]
fn a_sink_that_underflows_plays_zeros_for_the_late_items() {
    // Upstream stalls 100 ms after 1000 items of a 20 kHz stream with a 100-item buffer:
    // about 1900 zeros are played, tagged, and then the rest of the stream follows.
    let x: Vec<u32> = (1..=3000).collect();
    let mut g = Graph::new();
    let src = g.add("src", VectorSource::new(x.clone())).unwrap();
    let stall = Stall {
        after: 1000,
        pause: Duration::from_millis(100),
        passed: 0,
    };
    let stall = g.add("stall", stall).unwrap();
    let rt = g
        .add(
            "rt",
            RtThrottle::<u32>::new(20_000.0, RtMode::Sink, 100).unwrap(),
        )
        .unwrap();
    let (sink, data) = VectorSink::<u32>::new();
    let sink = g.add("sink", sink).unwrap();
    g.connect_with(src, "out", stall, "in", Some(256)).unwrap();
    g.connect_with(stall, "out", rt, "in", Some(256)).unwrap();
    g.connect(rt, "out", sink, "in").unwrap();
    let opts = RunOptions {
        scheduler: Scheduler::ThreadPerNode,
        ..RunOptions::default()
    };
    g.run(&opts).unwrap();
    let items = data.items();
    let filled = gaps(&data.tags(), UNDERFLOW);
    assert!(
        !filled.is_empty(),
        "a 100 ms stall at 20 kHz must underflow"
    );
    let zeros: u64 = filled.iter().map(|g| g.1).sum();
    assert_eq!(items.len() as u64, 3000 + zeros);
    let data_only: Vec<u32> = items.iter().copied().filter(|&v| v != 0).collect();
    assert_eq!(data_only, x, "every item passes, in order");
    for &(at, n) in &filled {
        assert!(items[at as usize..(at + n) as usize]
            .iter()
            .all(|&v| v == 0));
    }
    assert!(RtThrottle::<u32>::new(0.0, RtMode::Sink, 1).is_err());
}
