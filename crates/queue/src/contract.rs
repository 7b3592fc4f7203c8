//! The buffer contract: what every ring flavor offers its writer and its readers.
//!
//! A writer asks for free space with `reserve(n)` and gets a slice of at least `n` items in the
//! ring's own memory; it fills some prefix and publishes it with `commit(k)`. A reader asks for
//! `window(n)` and gets at least `n` items (fewer only at end of stream, none once it is over),
//! then releases a prefix with `consume(k)`, `k` possibly smaller than what it read: reading
//! more than you consume is the firing threshold that lets sliding-window DSP run in place.

use crate::QueueError;
use std::time::{Duration, Instant};

/// How long a `reserve` or `window` call may block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Never block: answer `None` when the request cannot be met now.
    Never,
    /// Block until the request can be met or this instant passes (then `None`).
    Until(Instant),
    /// Block until the request can be met.
    Forever,
}

/// The writing end of a ring.
pub trait RingWriter<T> {
    /// The ring's capacity in items (the largest possible `reserve`).
    fn capacity(&self) -> usize;

    /// Free space for at least `n` items (at least one when `n` is 0), waiting as `wait`
    /// allows. The slice may be longer than `n`: it holds the free space the writer knew of.
    /// `n > capacity` is an error, as is a queue whose readers have all gone.
    ///
    /// The space lives in memory owned *through* the writer (the ring's mapping, or a heap
    /// staging buffer), never inside the writer value itself: moving the writer does not move
    /// it, and it stays reserved until the next call on the writer. (`sluice-blocks`'s
    /// asynchronous copy into a queue moves the writer into the copy engine and relies on it.)
    fn reserve_with(&mut self, n: usize, wait: Wait) -> Result<Option<&mut [T]>, QueueError>;

    /// Publishes the first `k` items of the last reservation. Panics if `k` exceeds it.
    fn commit(&mut self, k: usize);

    /// Ends the stream: readers get what was committed, then an empty window.
    fn finish(&mut self);

    /// Free space for at least `n` items, blocking until there is.
    fn reserve(&mut self, n: usize) -> Result<&mut [T], QueueError> {
        match self.reserve_with(n, Wait::Forever)? {
            Some(slice) => Ok(slice),
            None => Err(QueueError::NoReaders),
        }
    }

    /// Free space for at least `n` items if there is some now.
    fn try_reserve(&mut self, n: usize) -> Result<Option<&mut [T]>, QueueError> {
        self.reserve_with(n, Wait::Never)
    }

    /// Free space for at least `n` items, waiting at most `timeout`.
    fn reserve_timeout(
        &mut self,
        n: usize,
        timeout: Duration,
    ) -> Result<Option<&mut [T]>, QueueError> {
        self.reserve_with(n, Wait::Until(Instant::now() + timeout))
    }
}

/// The reading end of a ring (one of possibly many readers, each with its own position).
pub trait RingReader<T> {
    /// The ring's capacity in items (the largest possible `window`).
    fn capacity(&self) -> usize;

    /// At least `n` readable items (at least one when `n` is 0), waiting as `wait` allows. The
    /// slice may be longer than `n`: it holds the items the reader knew were committed. It is
    /// shorter than `n` only at end of stream, and empty only once the stream is over. `n > capacity` is an error.
    fn window_with(&mut self, n: usize, wait: Wait) -> Result<Option<&[T]>, QueueError>;

    /// Releases the first `k` items of the last window. Panics if `k` exceeds it.
    fn consume(&mut self, k: usize);

    /// At least `n` items (fewer only at end of stream), blocking until there are.
    fn window(&mut self, n: usize) -> Result<&[T], QueueError> {
        match self.window_with(n, Wait::Forever)? {
            Some(slice) => Ok(slice),
            None => Ok(&[]),
        }
    }

    /// At least `n` items if they are there now (or the stream has ended).
    fn try_window(&mut self, n: usize) -> Result<Option<&[T]>, QueueError> {
        self.window_with(n, Wait::Never)
    }

    /// At least `n` items, waiting at most `timeout`.
    fn window_timeout(&mut self, n: usize, timeout: Duration) -> Result<Option<&[T]>, QueueError> {
        self.window_with(n, Wait::Until(Instant::now() + timeout))
    }
}
