//! The handshake between the callback and the level workers, and the sample buffers they share.
//!
//! # Protocol
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
//! * **Posting** ([`LevelSync::post`]): the callback writes the job record, stores `posted`
//!   (release), and at the end of the callback bumps one shared [`Epoch`] word and issues one
//!   `FUTEX_WAKE_BITSET` whose mask names the levels that got a new block: one system call
//!   per callback at most, and none in callbacks where no level starts a period. Before the
//!   callback waits for a worker it first wakes the workers it posted to (otherwise it could
//!   wait for a job its worker was never told about).
//! * **Completion** ([`publish_done`], [`wait_until`]): a worker stores `done` after its last
//!   write and wakes the callback only if the callback announced that it is about to sleep.
//!   Every write of the announcement flag is a swap (a read-modify-write), so the callback's
//!   announcement and the worker's check are ordered one way or the other: either the worker
//!   sees the flag and wakes, or the callback's swap reads the worker's and then sees its
//!   `done` before it sleeps. No wake-up is lost. The callback spins briefly before it sleeps.
//!
//! Level-private state (FFT plans, frequency-domain delay lines, IR spectra) is owned by the
//! worker thread outright and never shared.
//!
//! `tests/loom.rs` model-checks this module: one callback, one worker, every interleaving (up
//! to a preemption bound) of posting, waking, computing and reading, with loom tracking every
//! sample of both buffers so that a read overlapping a write fails the model.
//!
//! # Why the buffers hand out closures, not slices
//!
//! [`RaceBuf`] is written by one thread and read by another from a shared `&self`, so it cannot
//! hand out `&mut [f32]` tied to `&self` (that would let two overlapping exclusive views exist
//! with nothing but a comment to stop them). Instead [`RaceBuf::write`] and [`RaceBuf::read`]
//! lend a slice to a closure for the duration of one step of the protocol: the view cannot
//! outlive the step, and under loom each access is tracked for exactly that span.

use crate::sync::{futex_wait, futex_wake, AtomicBool, AtomicU32, AtomicU64, Ordering, SPINS};

/// A sample buffer written by one thread and read by another under the protocol above.
pub struct RaceBuf {
    cells: Box<[std::cell::UnsafeCell<f32>]>,
    /// Under loom, one tracked cell per sample: creating a view registers an access to each of
    /// its samples, which loom checks against every concurrent access.
    #[cfg(loom)]
    track: Box<[loom::cell::UnsafeCell<()>]>,
}

// SAFETY: all access goes through the unsafe accessors below, whose callers uphold the
// single-writer protocol documented at the top of this module; f32 itself is Send.
unsafe impl Sync for RaceBuf {}
// SAFETY: the buffer owns plain f32 data.
unsafe impl Send for RaceBuf {}

impl RaceBuf {
    /// `len` zeros.
    pub fn new(len: usize) -> Self {
        Self {
            cells: (0..len).map(|_| std::cell::UnsafeCell::new(0.0)).collect(),
            #[cfg(loom)]
            track: (0..len).map(|_| loom::cell::UnsafeCell::new(())).collect(),
        }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Lends samples `start..start+len` to `f` for reading.
    ///
    /// # Safety
    /// While `f` runs no other thread may write these samples. Under the protocol above: the
    /// callback may read an output slot of block `j` only after [`wait_until`] or a load of
    /// `done` showed `done >= j+1`, and only until block `j + nslots` is posted; a worker may
    /// read the ring window of a block it took from [`LevelSync::job`] until it calls
    /// [`publish_done`] for that block. The callback reads what it wrote itself (level 0,
    /// inline and cooperative levels) freely.
    ///
    /// Panics if the range is out of bounds.
    #[inline]
    pub unsafe fn read<R>(&self, start: usize, len: usize, f: impl FnOnce(&[f32]) -> R) -> R {
        assert!(start <= self.cells.len() && len <= self.cells.len() - start);
        #[cfg(loom)]
        let _reads: Vec<_> = self.track[start..start + len]
            .iter()
            .map(|c| c.get())
            .collect();
        // SAFETY: in bounds (checked above); UnsafeCell<f32> has the layout of f32; the caller
        // guarantees that no thread writes these samples while `f` runs, and the view does not
        // outlive `f`.
        let view = unsafe {
            std::slice::from_raw_parts(
                std::cell::UnsafeCell::raw_get(self.cells.as_ptr().add(start)),
                len,
            )
        };
        f(view)
    }

    /// Lends samples `start..start+len` to `f` for writing.
    ///
    /// # Safety
    /// While `f` runs no other thread may read or write these samples, and `f` must not open
    /// another view of them. Under the protocol above: the callback writes the ring window of
    /// period `k` only after block `j-2` of every threaded level is done (checked before
    /// posting block `j`), and clears the buffers only while every worker is idle; a worker
    /// writes the output slot of a block it took from [`LevelSync::job`] until it calls
    /// [`publish_done`] for that block.
    ///
    /// Panics if the range is out of bounds.
    #[inline]
    pub unsafe fn write<R>(&self, start: usize, len: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
        assert!(start <= self.cells.len() && len <= self.cells.len() - start);
        #[cfg(loom)]
        let _writes: Vec<_> = self.track[start..start + len]
            .iter()
            .map(|c| c.get_mut())
            .collect();
        // SAFETY: in bounds (checked above); interior mutability through UnsafeCell; the caller
        // guarantees that no other thread reads or writes these samples while `f` runs and that
        // `f` opens no other view of them; the view does not outlive `f`.
        let view = unsafe {
            std::slice::from_raw_parts_mut(
                std::cell::UnsafeCell::raw_get(self.cells.as_ptr().add(start)),
                len,
            )
        };
        f(view)
    }
}

/// `true` when wrapping counter `value` has reached `target` (they differ by far less than
/// 2^31 in this crate: at most a few blocks).
#[inline]
pub fn reached(value: u32, target: u32) -> bool {
    (value.wrapping_sub(target) as i32) >= 0
}

/// Waits (spin, then futex) until `done` reaches `target`; `waiting` is the sleep flag the
/// worker checks after storing `done`. Returns whether it had to wait at all.
pub fn wait_until(done: &AtomicU32, waiting: &AtomicU32, target: u32) -> bool {
    if reached(done.load(Ordering::Acquire), target) {
        return false;
    }
    for _ in 0..SPINS {
        std::hint::spin_loop();
        if reached(done.load(Ordering::Acquire), target) {
            return true;
        }
    }
    loop {
        // A swap, not a store: every write of `waiting` is a read-modify-write, so they form one
        // chain and the worker's swap in `publish_done` either comes after this one (and sees
        // the flag) or before it (and this swap synchronises with it, so the load below sees
        // its `done`).
        waiting.swap(1, Ordering::SeqCst);
        let d = done.load(Ordering::SeqCst);
        if reached(d, target) {
            waiting.swap(0, Ordering::Relaxed);
            return true;
        }
        futex_wait(done, d, u32::MAX);
    }
}

/// Worker side of [`wait_until`]: publish completion, wake the callback if it sleeps.
pub fn publish_done(done: &AtomicU32, waiting: &AtomicU32, value: u32) {
    done.store(value, Ordering::SeqCst);
    if waiting.swap(0, Ordering::SeqCst) != 0 {
        futex_wake(done, u32::MAX);
    }
}

/// The synchronisation words of one threaded level.
pub struct LevelSync {
    /// Jobs posted so far (wrapping); written by the callback.
    pub posted: AtomicU32,
    /// Jobs done so far (wrapping); written by the worker.
    pub done: AtomicU32,
    /// Set by the callback when it is about to sleep on `done`.
    pub waiting: AtomicU32,
    /// Block index of job `seq % 4` (at most two jobs are outstanding).
    pub jobs: [AtomicU64; 4],
    /// Bumped by `reset` while the worker is idle; the worker then clears its delay lines.
    pub generation: AtomicU32,
}

impl Default for LevelSync {
    fn default() -> Self {
        Self::new()
    }
}

impl LevelSync {
    /// No job posted or done.
    pub fn new() -> Self {
        Self {
            posted: AtomicU32::new(0),
            done: AtomicU32::new(0),
            waiting: AtomicU32::new(0),
            jobs: [
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
            ],
            generation: AtomicU32::new(0),
        }
    }

    /// Whether job count `target` is done.
    #[inline]
    pub fn is_done(&self, target: u32) -> bool {
        reached(self.done.load(Ordering::Acquire), target)
    }

    /// Waits until job count `target` is done; returns whether it had to wait.
    pub fn wait(&self, target: u32) -> bool {
        wait_until(&self.done, &self.waiting, target)
    }

    /// Callback: posts `block` as job `*seq` and counts it. The caller has checked (with
    /// [`LevelSync::is_done`], waking and then [`LevelSync::wait`]ing) that job `*seq - 2` is
    /// done, so at most two jobs are outstanding. The worker learns of it at the next
    /// [`Epoch::wake`] that names its level.
    #[inline]
    pub fn post(&self, seq: &mut u32, block: u64) {
        self.jobs[(*seq % 4) as usize].store(block, Ordering::Relaxed);
        *seq = seq.wrapping_add(1);
        self.posted.store(*seq, Ordering::Release);
    }

    /// Worker: the block of job `next` if it has been posted (acquire: the callback's ring
    /// writes before the post are visible).
    #[inline]
    pub fn job(&self, next: u32) -> Option<u64> {
        if self.posted.load(Ordering::Acquire) == next {
            return None;
        }
        Some(self.jobs[(next % 4) as usize].load(Ordering::Relaxed))
    }

    /// Worker: job count `value` is done (release: its output writes are visible to the
    /// callback that sees it); wakes the callback if it sleeps.
    #[inline]
    pub fn publish(&self, value: u32) {
        publish_done(&self.done, &self.waiting, value);
    }
}

/// The word every worker sleeps on, bumped once per callback that posted work.
pub struct Epoch {
    word: AtomicU32,
}

impl Default for Epoch {
    fn default() -> Self {
        Self::new()
    }
}

impl Epoch {
    /// A fresh word.
    pub fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
        }
    }

    /// Worker: the value to sleep against; read before looking for work, so a wake that comes
    /// after the look changes it and the sleep returns at once.
    #[inline]
    pub fn seen(&self) -> u32 {
        self.word.load(Ordering::SeqCst)
    }

    /// Worker: sleeps until a wake whose mask intersects `mask` (or returns at once if the word
    /// moved past `seen`).
    #[inline]
    pub fn sleep(&self, seen: u32, mask: u32) {
        futex_wait(&self.word, seen, mask);
    }

    /// Callback: wakes the workers whose level bit is in `mask` (one system call).
    #[inline]
    pub fn wake(&self, mask: u32) {
        self.word.fetch_add(1, Ordering::SeqCst);
        futex_wake(&self.word, mask);
    }
}

/// The worker's loop for one level: takes each posted job in order, runs `run(block)` on it and
/// publishes it done; sleeps on `epoch` (with `mask`, its level's bit) when there is nothing to
/// do; returns once `stop` is set (the setter then wakes every worker).
pub fn worker_loop(
    epoch: &Epoch,
    stop: &AtomicBool,
    sync: &LevelSync,
    mask: u32,
    mut run: impl FnMut(u64),
) {
    let mut next: u32 = 0;
    loop {
        let e = epoch.seen();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if let Some(block) = sync.job(next) {
            run(block);
            next = next.wrapping_add(1);
            sync.publish(next);
            continue;
        }
        epoch.sleep(e, mask);
    }
}
