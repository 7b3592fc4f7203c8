//! [`Pace`]: releases items at a rate in real time, for the blocks that pace a stream (a
//! throttle, a recording replayed as if its radio were live).

use sluice_runtime::NodeError;
use std::time::{Duration, Instant};

/// The longest single sleep, so that a stopped graph is noticed promptly.
const MAX_SLEEP: Duration = Duration::from_millis(10);

/// Items are released in batches of this much stream time: one wake-up per batch, not per item
/// (a throttle that woke for every item of a 48 kHz stream kept a core busy).
const BATCH: Duration = Duration::from_millis(5);

/// Paces items to `rate` per second on average, measured from the first item asked for (or
/// from the last rate change), in batches of 5 ms of stream.
#[derive(Debug)]
pub struct Pace {
    rate: f64,
    batch: u64,
    start: Option<Instant>,
    passed: u64,
}

impl Pace {
    /// A pace of `rate` items per second (must be positive and finite).
    pub fn new(rate: f64) -> Result<Self, NodeError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(NodeError::msg(format!(
                "a pace must be a positive number of items per second, not {rate}"
            )));
        }
        Ok(Pace {
            rate,
            batch: ((rate * BATCH.as_secs_f64()) as u64).max(1),
            start: None,
            passed: 0,
        })
    }

    /// How many items may pass now. When none may, it first sleeps (at most 10 ms, through
    /// the runtime so that `--stats` counts it as sleeping) and returns 0: the caller returns
    /// `Work::Progress` and is called again.
    pub fn allowed(&mut self) -> u64 {
        let start = *self.start.get_or_insert_with(Instant::now);
        // At time t, up to t·rate items plus one batch may have passed.
        let allowed = (start.elapsed().as_secs_f64() * self.rate) as u64 + self.batch;
        if self.passed < allowed {
            return allowed - self.passed;
        }
        // A whole batch is allowed again once `passed` items are due.
        let due = start + Duration::from_secs_f64(self.passed as f64 / self.rate);
        sluice_runtime::sleep(due.saturating_duration_since(Instant::now()).min(MAX_SLEEP));
        0
    }

    /// Counts `n` items as passed.
    pub fn advance(&mut self, n: u64) {
        self.passed += n;
    }

    /// Paces at `rate` from now on (a recording whose rate changed): the schedule restarts at
    /// the items passed so far. A rate that is not positive and finite keeps the old one.
    pub fn set_rate(&mut self, rate: f64) {
        if rate.is_finite() && rate > 0.0 && rate != self.rate {
            *self = Pace {
                start: Some(Instant::now()),
                ..Pace::new(rate).expect("checked above")
            };
        }
    }
}
