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
    #[cfg(target_os = "linux")]
    // SAFETY: FUTEX_WAIT_BITSET reads the aligned u32 behind `word`, which outlives the call;
    // a null timeout means no timeout; spurious returns are handled by every caller's loop.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            mask,
        );
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = mask;
        if word.load(Ordering::SeqCst) == expected {
            std::thread::yield_now();
        }
    }
}

/// Wakes every waiter on `word` whose wait mask intersects `mask`: one system call.
pub(crate) fn futex_wake(word: &AtomicU32, mask: u32) {
    #[cfg(target_os = "linux")]
    // SAFETY: FUTEX_WAKE_BITSET only uses the address of `word` as a key.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE_BITSET | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            mask,
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (word, mask);
}

/// Asks for SCHED_FIFO at `priority` for the calling thread. Returns whether it was granted.
///
/// Fallback when refused (no CAP_SYS_NICE / RLIMIT_RTPRIO): the thread stays SCHED_OTHER and
/// we lower its nice value by `nice` steps relative to the process (larger levels get larger
/// nice values, so shorter periods still win under contention). That is always permitted and
/// keeps results correct; only deadline guarantees are lost.
pub(crate) fn set_realtime(priority: i32, fallback_nice: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param {
            sched_priority: priority.clamp(1, 99),
        };
        // SAFETY: plain FFI call on the calling thread with a valid, initialised param.
        let rc =
            unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
        if rc == 0 {
            return true;
        }
        set_nice(fallback_nice);
        false
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (priority, fallback_nice);
        false
    }
}

/// Raises the calling thread's nice value by `nice` (never lowers it, which needs privileges).
pub(crate) fn set_nice(nice: i32) {
    #[cfg(target_os = "linux")]
    if nice > 0 {
        // SAFETY: gettid has no preconditions; setpriority on our own thread id only changes
        // this thread's nice value.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            let cur = libc::getpriority(libc::PRIO_PROCESS, tid);
            libc::setpriority(libc::PRIO_PROCESS, tid, (cur + nice).min(19));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// Pins the calling thread to `core`. Returns whether the kernel accepted it.
pub(crate) fn pin_to_core(core: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        if core >= libc::CPU_SETSIZE as usize {
            return false;
        }
        // SAFETY: cpu_set_t is plain data, zeroed is its empty set; CPU_SET stays in bounds
        // (checked above); sched_setaffinity(0, ..) applies to the calling thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(core, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = core;
        false
    }
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
