//! Thread plumbing: shared sample buffers, futex wake/wait, priorities and pinning.
//!
//! # Protocol between the callback and the level workers
//!
//! * The callback owns the time-domain **input ring** (`4 * largest level size` samples per
//!   input) and writes `n0` samples into it per internal period. A worker reading block `j` of
//!   a level of size `S` reads ring samples `[(j-1)S, (j+1)S)`. Before posting block `j` the
//!   callback waits until block `j-2` is done, so at most two blocks of a level are
//!   outstanding and the callback never overwrites samples an outstanding block reads
//!   (it writes at most `(j+2)S` before the next check, which maps onto `(j-2)S`).
//! * Each level has `nslots` **output slots** (triple buffering or more). A worker writes slot
//!   `j % nslots` for block `j`; the callback reads it only after observing `done >= j+1`
//!   (acquire), and only during the periods where those output samples are due, which end
//!   before block `j + nslots` is posted.
//! * **Posting**: the callback writes the job record, stores `posted` (release), and at the
//!   end of the callback bumps one shared `epoch` word and issues one
//!   `FUTEX_WAKE_BITSET` whose mask names the levels that got a new block: one system call
//!   per callback at most, and none in callbacks where no level starts a period.
//! * **Completion**: a worker stores `done` (SeqCst) after its last write and wakes the
//!   callback only if the callback announced (SeqCst flag) that it is about to sleep.
//!   The callback spins briefly before it sleeps.
//!
//! Level-private state (FFT plans, frequency-domain delay lines, IR spectra) is owned by the
//! worker thread outright and never shared.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};

/// A sample buffer written by one thread and read by another under the protocol above.
pub(crate) struct RaceBuf {
    cells: Box<[UnsafeCell<f32>]>,
}

// SAFETY: all access goes through the unsafe accessors below, whose callers uphold the
// single-writer protocol documented at the top of this module; f32 itself is Send.
unsafe impl Sync for RaceBuf {}
// SAFETY: the buffer owns plain f32 data.
unsafe impl Send for RaceBuf {}

impl RaceBuf {
    pub(crate) fn new(len: usize) -> Self {
        Self {
            cells: (0..len).map(|_| UnsafeCell::new(0.0)).collect(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.cells.len()
    }

    /// Shared view of `start..start+len`.
    ///
    /// # Safety
    /// No other thread may write these samples while the returned slice lives.
    #[inline]
    pub(crate) unsafe fn slice(&self, start: usize, len: usize) -> &[f32] {
        assert!(start + len <= self.cells.len());
        // SAFETY: in bounds (checked above); UnsafeCell<f32> has the layout of f32; the caller
        // guarantees no concurrent writer.
        unsafe {
            std::slice::from_raw_parts(UnsafeCell::raw_get(self.cells.as_ptr().add(start)), len)
        }
    }

    /// Exclusive view of `start..start+len`.
    ///
    /// # Safety
    /// No other thread may read or write these samples while the returned slice lives, and
    /// the caller must not create overlapping views.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub(crate) unsafe fn slice_mut(&self, start: usize, len: usize) -> &mut [f32] {
        assert!(start + len <= self.cells.len());
        // SAFETY: in bounds; interior mutability through UnsafeCell; exclusivity is the
        // caller's promise.
        unsafe {
            std::slice::from_raw_parts_mut(UnsafeCell::raw_get(self.cells.as_ptr().add(start)), len)
        }
    }
}

/// `true` when wrapping counter `value` has reached `target` (they differ by far less than
/// 2^31 in this crate: at most a few blocks).
#[inline]
pub(crate) fn reached(value: u32, target: u32) -> bool {
    (value.wrapping_sub(target) as i32) >= 0
}

/// Sleeps while `*word == expected` and `mask` matches a waker's mask (Linux futex).
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, mask: u32) {
    sluice_os::futex_wait_bitset(word, expected, mask);
}

/// Wakes every waiter on `word` whose wait mask intersects `mask`: one system call.
pub(crate) fn futex_wake(word: &AtomicU32, mask: u32) {
    sluice_os::futex_wake_bitset(word, mask);
}

/// Asks for SCHED_FIFO at `priority` for the calling thread. Returns whether it was granted.
///
/// Fallback when refused (no CAP_SYS_NICE / RLIMIT_RTPRIO): the thread stays SCHED_OTHER and
/// we lower its nice value by `nice` steps relative to the process (larger levels get larger
/// nice values, so shorter periods still win under contention). That is always permitted and
/// keeps results correct; only deadline guarantees are lost.
pub(crate) fn set_realtime(priority: i32, fallback_nice: i32) -> bool {
    if sluice_os::set_fifo_priority(priority.clamp(1, 99)).is_ok() {
        return true;
    }
    set_nice(fallback_nice);
    false
}

/// Raises the calling thread's nice value by `nice` (never lowers it, which needs privileges).
pub(crate) fn set_nice(nice: i32) {
    sluice_os::raise_nice(nice);
}

/// Pins the calling thread to `core`. Returns whether the kernel accepted it.
pub(crate) fn pin_to_core(core: usize) -> bool {
    sluice_os::pin_current_thread(core).is_ok()
}

/// Waits (spin, then futex) until `done` reaches `target`; `waiting` is the sleep flag the
/// worker checks after storing `done`. Returns whether it had to wait at all.
pub(crate) fn wait_until(done: &AtomicU32, waiting: &AtomicU32, target: u32) -> bool {
    if reached(done.load(Ordering::Acquire), target) {
        return false;
    }
    for _ in 0..4000 {
        std::hint::spin_loop();
        if reached(done.load(Ordering::Acquire), target) {
            return true;
        }
    }
    loop {
        waiting.store(1, Ordering::SeqCst);
        let d = done.load(Ordering::SeqCst);
        if reached(d, target) {
            waiting.store(0, Ordering::Relaxed);
            return true;
        }
        futex_wait(done, d, u32::MAX);
    }
}

/// Worker side of [`wait_until`]: publish completion, wake the callback if it sleeps.
pub(crate) fn publish_done(done: &AtomicU32, waiting: &AtomicU32, value: u32) {
    done.store(value, Ordering::SeqCst);
    if waiting.swap(0, Ordering::SeqCst) != 0 {
        futex_wake(done, u32::MAX);
    }
}
