//! The buffer contract: what every ring flavor offers its writer and its readers.
//!
//! A writer asks for free space with `reserve(n)` and gets a slice of at least `n` items in the
//! ring's own memory; it fills some prefix and publishes it with `commit(k)`. A reader asks for
//! `window(n)` and gets at least `n` items (fewer only at end of stream, none once it is over),
//! then releases a prefix with `consume(k)`, `k` possibly smaller than what it read: reading
//! more than you consume is the firing threshold that lets sliding-window DSP run in place.
//!
//! # Lossy readers
//!
//! A [`LossyReader`](crate::LossyReader) (from a [`TapPoint`](crate::TapPoint), which any thread
//! may hold while the writer runs) is a reader the writer never waits for: it holds no slot in
//! the writer's scan for the slowest reader, so attaching, lagging or detaching it changes
//! nothing the writer or the lossless readers see. What it promises instead:
//!
//! * **Only intact items reach a view.** It never lends ring memory; it copies a run out, then
//!   proves the run was not overwritten meanwhile and drops the prefix that may have been
//!   (seqlock style). The proof: the writer only writes positions below its *bound*
//!   (`min_reader + capacity` at its last look, the end of everything it may reserve), and it
//!   raises `write_bound` (a Relaxed store followed by a Release fence) *before* writing past
//!   the old one. The reader loads `written` (Acquire), copies `[p, p + n)` with `p + n ≤
//!   written`, then reads `write_bound` = `B` with a read-don't-modify-write (`fetch_add(0,
//!   AcqRel)`, Boehm's seqlock reader): its Release half keeps the copy before it, and an RMW
//!   reads the newest value in the bound's modification order. Position `q` shares its memory
//!   with `q + capacity`, which the writer touches only after raising the bound above it; if
//!   the copy saw any such write, the raise came earlier in that order, so `B` includes it and
//!   every `q ≥ B − capacity` still holds what was committed at `q`. Items below `B −
//!   capacity` are discarded and counted as skipped. (A plain Acquire fence and load is not
//!   enough in the model: loom found it may return a stale bound.)
//! * **Falling behind moves it forward.** A reader more than `capacity` behind jumps to
//!   `written − capacity`; `read_latest` jumps to the newest items. Every item passed over is
//!   counted ([`TapRead::skipped`](crate::TapRead), `LossyReader::skipped`).
//! * **No undefined behaviour from the race.** The writer fills its reservation with plain
//!   writes through `&mut [T]`, so a plain read of the same bytes at the same time would be a
//!   data race. The copy is therefore made by the kernel (`process_vm_readv` on our own
//!   process): a read outside the Rust abstract machine, like a device's DMA, which can at
//!   worst observe a mix of old and new bytes, and those the bound check discards. `T` is
//!   `Pod`, so any bytes are a valid `T` even before the check. If a seccomp filter refuses
//!   the call, the fallback is relaxed byte-wise atomic loads: no torn value escapes the check
//!   either, but a plain write racing with an atomic read is still formally a data race in the
//!   C++/Rust model (the case RFC 3301's per-byte atomics will close); the hardware we run on
//!   (x86-64, AArch64) gives such loads no effect beyond the value read.
//! * **Ordering of the hardware.** On x86-64 the fences are compiler barriers and TSO orders the
//!   writer's store of the bound before its later writes; on AArch64 a Release fence is a
//!   `dmb ish`, which orders all earlier accesses before all later ones, plain writes included.
//!   The system call ends the copy before the reader's RMW. The writer's cost is one store and
//!   a fence each time it looks for the slowest reader again, not per item.
//!
//! Checked by `tests/lossy.rs` (a writer, a lossless reader and taps attached and detached from
//! other threads, every delivered item checked against its index), the model test (taps
//! against the model of the lossless readers), loom (a tap racing a writer that overwrites
//! the run it copies) and Miri (the sequential cases, on the copying flavor).

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
