//! [`RtThrottle`]: a throttle that behaves like a real-time device, which cannot wait.
//!
//! `throttle` paces a stream and, when the graph is slow, waits and catches up later: no item
//! is ever lost. A radio or a sound card does not wait. `rt_throttle` runs the same clock
//! (item `k` is due at `k / rate` seconds after the first arrived) and, when a side is late:
//!
//! - `mode = "source"` (a receiver: overflow): items due while downstream has no room pile up
//!   in the device's buffer of `buffer` items; beyond that the oldest are dropped. The first
//!   item passed after a gap carries the tag [`OVERFLOW`] (`rt_overflow`, `U64`: items
//!   dropped just before it), and tags of dropped items move onto it.
//! - `mode = "sink"` (a transmitter or sound card: underflow): items may be passed up to
//!   `buffer` ahead of the clock; when an item is due and upstream has none, the device plays
//!   zeros for every due item instead, and the first zero of each such run carries the tag
//!   [`UNDERFLOW`] (`rt_underflow`, `U64`: the zeros in the run). The late items follow.
//!
//! Either way the counts are reported when the node ends. Use it to rehearse a receiver with
//! a file at the radio's rate, or to see what a graph too slow for its device would lose.

use super::fd_io::OVERFLOW;
use super::tag_map::move_tags;
use sluice_kernels::{GapCounter, RtClock};
use sluice_runtime::{
    Input, Item, Node, NodeError, Output, Ports, Tag, TagPolicy, TagValue, Work, WorkIo,
};
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// The tag a real-time sink puts on the first of the zeros it played for items that came late
/// (value: `U64`, the number of zeros).
pub const UNDERFLOW: &str = "rt_underflow";

/// The longest single sleep, so that a stopped graph is noticed promptly.
const MAX_SLEEP: Duration = Duration::from_millis(10);

/// Which side of the graph the device is on (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtMode {
    /// A receiver: drops on overflow.
    Source,
    /// A transmitter: plays zeros on underflow.
    Sink,
}

/// A real-time device's clock on a stream (see the module docs).
#[derive(Debug)]
pub struct RtThrottle<T> {
    clock: RtClock,
    mode: RtMode,
    buffer: u64,
    start: Option<Instant>,
    gaps: GapCounter,
    /// Output index = input index + `shift` for passed items (drops lower it, zeros raise it).
    shift: i128,
    tags: Vec<Tag>,
    /// Tags of dropped items, for the next item passed.
    held: Vec<Tag>,
    _items: PhantomData<T>,
}

impl<T: Item> RtThrottle<T> {
    /// A device at `rate` items per second on side `mode`, with a buffer of `buffer` items.
    pub fn new(rate: f64, mode: RtMode, buffer: u64) -> Result<Self, NodeError> {
        Ok(RtThrottle {
            clock: RtClock::new(rate).map_err(NodeError::from_error)?,
            mode,
            buffer,
            start: None,
            gaps: GapCounter::new(),
            shift: 0,
            tags: Vec::new(),
            held: Vec::new(),
            _items: PhantomData,
        })
    }

    /// Items lost (source) or zeros played (sink) so far.
    pub fn gap_items(&self) -> u64 {
        self.gaps.items()
    }

    /// Sleeps towards the next item's due time (at most [`MAX_SLEEP`]).
    fn sleep(&self, start: Instant) -> Work {
        let due = start + Duration::from_secs_f64(self.clock.next_due());
        sluice_runtime::sleep(due.saturating_duration_since(Instant::now()).min(MAX_SLEEP));
        Work::Progress
    }
}

impl<T: Item> RtThrottle<T> {
    /// The device's buffer overflowed: the oldest `lost` items are gone.
    fn overflow(&mut self, input: &mut Input<T>, lost: u64) {
        let read = input.items_read();
        input.take_tags(read + lost, &mut self.held);
        input.consume(lost as usize);
        self.clock.account(lost);
        self.gaps.lose(lost);
        sluice_runtime::count(sluice_runtime::Trouble::Dropped, lost);
        self.shift -= i128::from(lost);
    }

    /// Nothing to play: the device plays zeros for every `due` item.
    fn underflow(&mut self, output: &mut Output<T>, due: u64) -> Result<Work, NodeError> {
        let written = output.items_written();
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let zeros = (due.min(y.len() as u64)) as usize;
        y[..zeros].fill(T::zeroed());
        output.add_tag(written, UNDERFLOW, TagValue::U64(zeros as u64));
        self.gaps.lose(zeros as u64);
        sluice_runtime::count(sluice_runtime::Trouble::Underflow, zeros as u64);
        self.gaps.take_pending(); // each fill is its own gap, tagged here
        self.clock.account(zeros as u64);
        self.shift += zeros as i128;
        output.commit(zeros);
        Ok(Work::Progress)
    }
}

impl<T: Item> Node for RtThrottle<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in").output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        let output = io.outputs.get::<T>(0)?;
        let (read, written) = (input.items_read(), output.items_written());
        let available = match input.window(1)? {
            Some([]) => return Ok(Work::Done),
            Some(x) => x.len(),
            None if self.start.is_none() => return Ok(Work::NeedInput { port: 0, items: 1 }),
            None => 0,
        };
        // The clock starts with the first item.
        let start = *self.start.get_or_insert_with(Instant::now);
        let due = self.clock.due(start.elapsed().as_secs_f64());
        let allowed = match self.mode {
            RtMode::Source if due > self.buffer => {
                self.overflow(input, (due - self.buffer).min(available as u64));
                return Ok(Work::Progress);
            }
            RtMode::Source => due,
            RtMode::Sink if available == 0 && due > 0 => return self.underflow(output, due),
            RtMode::Sink => due + self.buffer,
        };
        if available == 0 {
            // A sink cannot wait for input: it sleeps towards the next due item and, if
            // nothing came by then, plays zeros (above). A source waits for its input.
            return Ok(match self.mode {
                RtMode::Sink => self.sleep(start),
                RtMode::Source => Work::NeedInput { port: 0, items: 1 },
            });
        }
        if allowed == 0 {
            return Ok(self.sleep(start));
        }
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let x = input.window(1)?.unwrap_or_default();
        let n = (allowed.min(y.len() as u64) as usize).min(x.len());
        y[..n].copy_from_slice(&x[..n]);
        if let Some(lost) = self.gaps.take_pending() {
            output.add_tag(written, OVERFLOW, TagValue::U64(lost));
        }
        for mut tag in self.held.drain(..) {
            tag.index = written;
            output.push_tag(tag);
        }
        let shift = self.shift;
        move_tags(input, output, read + n as u64, &mut self.tags, |i| {
            u64::try_from(i128::from(i) + shift).ok()
        });
        input.consume(n);
        output.commit(n);
        self.clock.account(n as u64);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn warnings(&mut self) -> Vec<String> {
        match self.mode {
            RtMode::Source => self.gaps.summary("overflow", "dropped"),
            RtMode::Sink => self.gaps.summary("underflow", "of zeros played"),
        }
        .into_iter()
        .collect()
    }
}

#[cfg(test)]
mod tests;
