//! The bookkeeping of a real-time device that cannot wait: a clock that makes items due at a
//! fixed rate, and a counter of the gaps (items dropped on overflow, or zeros played on
//! underflow) that tells the next item how many went missing before it.
//!
//! Pure arithmetic on the elapsed time it is given, so that it can be tested without clocks:
//! a block reads the time and asks.

use super::DspError;

/// Items due at `rate` per second from time 0; counts those already accounted for (passed
/// on, dropped or filled).
#[derive(Debug, Clone)]
pub struct RtClock {
    rate: f64,
    accounted: u64,
}

impl RtClock {
    /// A clock at `rate` items per second (positive and finite).
    pub fn new(rate: f64) -> Result<Self, DspError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(DspError::InvalidParameter {
                name: "rate",
                value: rate.to_string(),
                expected: "a positive number of items per second",
            });
        }
        Ok(RtClock { rate, accounted: 0 })
    }

    /// Items due by `elapsed` seconds and not yet accounted for (item `k` is due at `k / rate`).
    pub fn due(&self, elapsed: f64) -> u64 {
        let due = (elapsed.max(0.0) * self.rate).floor() as u64 + 1;
        due.saturating_sub(self.accounted)
    }

    /// Marks `n` more items accounted for.
    pub fn account(&mut self, n: u64) {
        self.accounted += n;
    }

    /// Items accounted for so far.
    pub fn accounted(&self) -> u64 {
        self.accounted
    }

    /// The time (seconds from 0) at which the next item falls due.
    pub fn next_due(&self) -> f64 {
        self.accounted as f64 / self.rate
    }
}

/// Gaps in a stream: how many, how many items in all, and what the item after the current gap
/// must be tagged with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GapCounter {
    gaps: u64,
    items: u64,
    pending: u64,
}

impl GapCounter {
    /// A counter with no gaps.
    pub fn new() -> Self {
        GapCounter::default()
    }

    /// `n` items went missing here (adds to the current gap if nothing passed since the last).
    pub fn lose(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        if self.pending == 0 {
            self.gaps += 1;
        }
        self.pending += n;
        self.items += n;
    }

    /// The size of the gap just before the next item, once: the value of that item's tag.
    pub fn take_pending(&mut self) -> Option<u64> {
        (self.pending > 0).then(|| std::mem::take(&mut self.pending))
    }

    /// Gaps so far.
    pub fn gaps(&self) -> u64 {
        self.gaps
    }

    /// Items missing in all.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// `"3 overflows (1200 items dropped)"` for `what` = `"overflow"`, `verb` = `"dropped"`,
    /// or `None` when there was no gap.
    pub fn summary(&self, what: &str, verb: &str) -> Option<String> {
        (self.gaps > 0).then(|| {
            let plural = if self.gaps == 1 { "" } else { "s" };
            format!("{} {what}{plural} ({} items {verb})", self.gaps, self.items)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_fall_due_at_the_rate_and_accounting_removes_them() {
        let mut clock = RtClock::new(1000.0).unwrap();
        assert_eq!(clock.due(0.0), 1, "item 0 is due at once");
        assert_eq!(clock.due(0.0099), 10);
        clock.account(4);
        assert_eq!(clock.due(0.0099), 6);
        assert!((clock.next_due() - 0.004).abs() < 1e-12);
        clock.account(100);
        assert_eq!(clock.due(0.05), 0, "ahead of time: nothing due");
        assert_eq!(clock.accounted(), 104);
        // Accounting in chunks or at once reaches the same state.
        let mut a = RtClock::new(48000.0).unwrap();
        let mut b = a.clone();
        while a.due(1.0) > 0 {
            let n = a.due(1.0).min(1000);
            a.account(n);
        }
        b.account(b.due(1.0));
        assert_eq!(a.due(2.0), b.due(2.0));
        assert!(RtClock::new(0.0).is_err());
        assert!(RtClock::new(f64::NAN).is_err());
    }

    #[test]
    fn gaps_merge_until_an_item_passes_and_are_summarised() {
        let mut g = GapCounter::new();
        assert_eq!(g.take_pending(), None);
        g.lose(0);
        g.lose(10);
        g.lose(5);
        assert_eq!(g.take_pending(), Some(15));
        assert_eq!(g.take_pending(), None);
        g.lose(7);
        assert_eq!((g.gaps(), g.items()), (2, 22));
        assert_eq!(
            g.summary("overflow", "dropped").unwrap(),
            "2 overflows (22 items dropped)"
        );
        assert_eq!(GapCounter::new().summary("underflow", "filled"), None);
    }
}
