//! Throttle: paces a stream to a sample rate (for running file- or generator-driven graphs at
//! real-time speed without hardware).

use super::basic::pass_through;
use sluice_runtime::{Item, Node, NodeError, Ports, Work, WorkIo};
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// The longest single sleep, so that a stopped graph is noticed promptly.
const MAX_SLEEP: Duration = Duration::from_millis(10);

/// Items are released in batches of this much stream time: one wake-up per batch, not per item
/// (a throttle that woke for every item of a 48 kHz stream kept a core busy).
const BATCH: Duration = Duration::from_millis(5);

/// Passes items through at `rate` items per second on average (measured from the first item),
/// in batches of 5 ms of stream.
#[derive(Debug)]
pub struct Throttle<T> {
    rate: f64,
    batch: u64,
    start: Option<Instant>,
    passed: u64,
    _items: PhantomData<T>,
}

impl<T> Throttle<T> {
    /// A throttle at `rate` items per second (must be positive).
    pub fn new(rate: f64) -> Result<Self, NodeError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(NodeError::msg(format!(
                "throttle rate must be a positive number of items per second, not {rate}"
            )));
        }
        Ok(Throttle {
            rate,
            batch: ((rate * BATCH.as_secs_f64()) as u64).max(1),
            start: None,
            passed: 0,
            _items: PhantomData,
        })
    }
}

impl<T: Item> Node for Throttle<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in").output::<T>("out")
    }

    /// Sleeps (at most 10 ms at a time) when a batch ahead of schedule: pacing is this node's
    /// job.
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let start = *self.start.get_or_insert_with(Instant::now);
        // At time t, up to t·rate items plus one batch may have passed.
        let allowed = (start.elapsed().as_secs_f64() * self.rate) as u64 + self.batch;
        if self.passed >= allowed {
            // A whole batch is allowed again once `passed` items are due.
            let due = start + Duration::from_secs_f64(self.passed as f64 / self.rate);
            sluice_runtime::sleep(due.saturating_duration_since(Instant::now()).min(MAX_SLEEP));
            return Ok(Work::Progress);
        }
        let (work, n) = pass_through::<T>(io, allowed - self.passed)?;
        self.passed += n as u64;
        Ok(work)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::vector::{VectorSink, VectorSource};
    use sluice_runtime::{Graph, RunOptions};

    #[test]
    fn throttle_paces_and_passes_everything() {
        let mut g = Graph::new();
        let src = g
            .add("src", VectorSource::new((0..2000u32).collect()))
            .unwrap();
        let thr = g
            .add("thr", Throttle::<u32>::new(20_000.0).unwrap())
            .unwrap();
        let (sink, data) = VectorSink::<u32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", thr, "in").unwrap();
        g.connect(thr, "out", sink, "in").unwrap();
        let report = g.run(&RunOptions::default()).unwrap();
        assert_eq!(data.items(), (0..2000u32).collect::<Vec<_>>());
        // 2000 items at 20 kHz take 0.1 s; allow generous slack either way on a loaded box.
        assert!(
            report.wall >= Duration::from_millis(90),
            "{:?}",
            report.wall
        );
        // Its pacing is sleeping, not work: `--stats` shows it apart from busy.
        let thr = report.node("thr").unwrap();
        assert!(
            thr.sleeping >= Duration::from_millis(50) && thr.busy < thr.sleeping,
            "{}",
            report.render()
        );
        assert!(report.render().lines().next().unwrap().contains("sleeping"));
    }

    #[test]
    fn bad_rate_is_an_error() {
        let err = Throttle::<f32>::new(-1.0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "throttle rate must be a positive number of items per second, not -1"
        );
    }
}
