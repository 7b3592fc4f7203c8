//! Throttle: paces a stream to a sample rate (for running file- or generator-driven graphs at
//! real-time speed without hardware).

use super::basic::pass_through;
use super::pace::Pace;
use sluice_runtime::{Item, Node, NodeError, Ports, Work, WorkIo};
use std::marker::PhantomData;

/// Passes items through at `rate` items per second on average (measured from the first item),
/// in batches of 5 ms of stream (see [`Pace`]).
#[derive(Debug)]
pub struct Throttle<T> {
    pace: Pace,
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
            pace: Pace::new(rate)?,
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
        let allowed = self.pace.allowed();
        if allowed == 0 {
            return Ok(Work::Progress);
        }
        let (work, n) = pass_through::<T>(io, allowed)?;
        self.pace.advance(n as u64);
        Ok(work)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::vector::{VectorSink, VectorSource};
    use sluice_runtime::{Graph, RunOptions};
    use std::time::Duration;

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
