//! Spin-then-park waiting with wake-ups only for parked peers.
//!
//! An [`Event`] is one futex word (`seq`) and a count of parked waiters. The protocol is the
//! Dekker pattern, so a wake-up can never be lost:
//!
//! * A **waiter** reads `seq`, announces itself (`waiters += 1`), issues a SeqCst fence and only
//!   then re-checks its condition. If the condition still fails it sleeps with
//!   `futex_wait(seq, seen)`, which returns at once if `seq` changed since it was read.
//! * A **notifier** first publishes its state change (a Release store of a counter), issues a
//!   SeqCst fence, and then reads `waiters`. Only if somebody is parked does it bump `seq` and
//!   make the `futex_wake` system call.
//!
//! The two fences are totally ordered. If the notifier's fence comes first, the waiter's re-check
//! sees the published counter and does not sleep. If the waiter's fence comes first, the notifier
//! sees `waiters > 0`, bumps `seq` and wakes; the waiter either sees the bumped `seq` in
//! `futex_wait` (which then returns immediately) or is already asleep and is woken. So in the
//! steady state, where nobody is parked, a notification is a fence and a load: no system call.
//!
//! **Wake thresholds.** A waiter also registers the level it waits for (`wake_at`, the smallest
//! of all parked waiters' levels), and [`Event::notify_level`] wakes only once the notifier's
//! level reaches it: a writer waiting for half a ring of space is not woken by every single
//! consume, only by the one that frees enough. The registration happens before the waiter's
//! fence and the check after the notifier's, so the same argument shows no wake-up is lost; a
//! wake resets `wake_at`, and every woken waiter registers again before it sleeps again.

use crate::sync::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

/// Busy-wait iterations before a waiter parks. Short: on a machine with fewer cores than
/// threads a spinning waiter only steals time from the peer it waits for. `sluice bench chain`
/// on the 2-core development machine ran faster with 32 spins and 1 yield than with 64 and 8
/// (where `sched_yield` took a quarter of all cycles in `perf`). Under loom there is no spinning:
/// every wait parks, which is the path whose interleavings matter.
const SPIN_LIMIT: u32 = if cfg!(loom) { 0 } else { 32 };
/// Iterations of `thread::yield_now` after spinning, before parking.
const YIELD_LIMIT: u32 = if cfg!(loom) { 0 } else { 1 };

/// A futex-backed event that waiters park on and notifiers wake, see the module docs.
///
/// `SHARED` events live in memory shared between processes (`shm.rs`) and use the futex
/// without the private flag; their layout is `repr(C)` so both processes agree on it.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Event<const SHARED: bool = false> {
    seq: AtomicU32,
    waiters: AtomicU32,
    /// The lowest level a parked waiter waits for (`u64::MAX`: none registered).
    wake_at: AtomicU64,
    #[cfg(loom)]
    futex: loom_futex::Futex,
}

impl<const SHARED: bool> Default for Event<SHARED> {
    fn default() -> Self {
        Event {
            seq: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            wake_at: AtomicU64::new(u64::MAX),
            #[cfg(loom)]
            futex: loom_futex::Futex::default(),
        }
    }
}

impl<const SHARED: bool> Event<SHARED> {
    /// Wakes every parked waiter, if there is one, whatever level it waits for. Call after
    /// publishing a state change that every waiter must see (end of stream, a reader leaving).
    #[inline]
    pub(crate) fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::Relaxed) != 0 {
            self.wake();
        }
    }

    /// Wakes the parked waiters if `level` (the counter just published) reaches the lowest
    /// level one of them waits for. Call after publishing the counter.
    #[inline]
    pub(crate) fn notify_level(&self, level: u64) {
        fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::Relaxed) != 0
            && level >= self.wake_at.load(Ordering::Relaxed)
        {
            self.wake();
        }
    }

    /// Puts a zeroed event (fresh shared memory) in its initial state: no level registered.
    pub(crate) fn reset(&self) {
        self.wake_at.store(u64::MAX, Ordering::Relaxed);
    }

    fn wake(&self) {
        // Every waiter wakes and registers its level again before it sleeps again.
        self.wake_at.store(u64::MAX, Ordering::Relaxed);
        self.seq.fetch_add(1, Ordering::Release);
        self.futex_wake_all();
    }

    /// Waits until `ready()` returns true or `deadline` passes; returns whether it became ready.
    /// `level` is the notifier level at which `ready` can become true (see
    /// [`Event::notify_level`]; 0 to be woken by every notification).
    ///
    /// `ready` is called repeatedly; it must read the shared state with Acquire loads.
    pub(crate) fn wait_until(
        &self,
        mut ready: impl FnMut() -> bool,
        deadline: Option<Instant>,
        level: u64,
    ) -> bool {
        for i in 0..SPIN_LIMIT + YIELD_LIMIT {
            if ready() {
                return true;
            }
            if i < SPIN_LIMIT {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        loop {
            let seen = self.seq.load(Ordering::Acquire);
            self.waiters.fetch_add(1, Ordering::SeqCst);
            self.wake_at.fetch_min(level, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if ready() {
                self.waiters.fetch_sub(1, Ordering::Relaxed);
                return true;
            }
            let timeout = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => {
                        self.waiters.fetch_sub(1, Ordering::Relaxed);
                        return ready();
                    }
                },
                None => None,
            };
            self.futex_wait(seen, timeout);
            self.waiters.fetch_sub(1, Ordering::Relaxed);
            if ready() {
                return true;
            }
        }
    }

    #[cfg(not(loom))]
    fn futex_wait(&self, expected: u32, timeout: Option<std::time::Duration>) {
        if SHARED {
            sluice_os::futex_wait_shared(&self.seq, expected, timeout);
        } else {
            futex_wait(&self.seq, expected, timeout);
        }
    }

    #[cfg(not(loom))]
    fn futex_wake_all(&self) {
        if SHARED {
            sluice_os::futex_wake_all_shared(&self.seq);
        } else {
            futex_wake_all(&self.seq);
        }
    }

    #[cfg(loom)]
    fn futex_wait(&self, expected: u32, timeout: Option<std::time::Duration>) {
        self.futex.wait(&self.seq, expected, timeout);
    }

    #[cfg(loom)]
    fn futex_wake_all(&self) {
        self.futex.wake_all();
    }
}

// The real futex: sluice-os's rustix wrappers (process-private, a wake releases every waiter).
#[cfg(not(loom))]
use sluice_os::{futex_wait, futex_wake_all};

/// The futex as loom sees it: `wait` sleeps only while the word still holds `expected`, checked
/// under the same lock that `wake_all` takes, which is exactly the kernel's guarantee (the
/// compare and the sleep are atomic with respect to wakes). A wait with a timeout returns at
/// once, as if the timeout had passed: callers re-check their condition either way.
#[cfg(loom)]
mod loom_futex {
    use loom::sync::{Condvar, Mutex};

    #[derive(Debug, Default)]
    pub(crate) struct Futex {
        lock: Mutex<()>,
        sleepers: Condvar,
    }

    impl Futex {
        pub(crate) fn wait(
            &self,
            word: &super::AtomicU32,
            expected: u32,
            timeout: Option<std::time::Duration>,
        ) {
            if timeout.is_some() {
                return;
            }
            let guard = self
                .lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if word.load(super::Ordering::Acquire) == expected {
                drop(self.sleepers.wait(guard));
            }
        }

        pub(crate) fn wake_all(&self) {
            let _guard = crate::sync::lock(&self.lock);
            self.sleepers.notify_all();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn wait_returns_false_at_deadline() {
        let e = Event::<false>::default();
        let start = Instant::now();
        assert!(!e.wait_until(|| false, Some(start + Duration::from_millis(20)), 0));
        assert!(start.elapsed() >= Duration::from_millis(20));
    }

    #[test]
    fn notify_wakes_a_parked_waiter() {
        let e = Arc::new(Event::<false>::default());
        let flag = Arc::new(AtomicBool::new(false));
        let (e2, f2) = (e.clone(), flag.clone());
        let t = std::thread::spawn(move || e2.wait_until(|| f2.load(Ordering::Acquire), None, 5));
        std::thread::sleep(Duration::from_millis(20));
        flag.store(true, Ordering::Release);
        e.notify_level(5);
        assert!(t.join().unwrap());
    }
}
