//! The synchronisation primitives the callback/worker handshake uses: std's, or loom's under
//! `cfg(loom)`.
//!
//! Every atomic that [`crate::handshake`] touches comes from here, and so does the futex, so
//! `RUSTFLAGS="--cfg loom" cargo test -p sluice-conv --test loom` model-checks the crate's own
//! handshake rather than a re-implementation of it. Under loom the futex is a stand-in with the
//! kernel's guarantee (the compare and the sleep are atomic with respect to wakes, and a wake
//! reaches only waiters whose mask it intersects), and there is no spinning before a sleep.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// How many times a waiter looks again before it sleeps (none under loom: each look would be
/// one more step for the model to explore, and sleeping at once covers the harder case).
pub(crate) const SPINS: u32 = if cfg!(loom) { 0 } else { 4000 };

/// Sleeps while `*word == expected` and `mask` matches a waker's mask (Linux futex; a spurious
/// return is possible, so callers re-check their condition).
#[cfg(not(loom))]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, mask: u32) {
    sluice_os::futex_wait_bitset(word, expected, mask);
}

/// Wakes every waiter on `word` whose wait mask intersects `mask`: one system call.
#[cfg(not(loom))]
pub(crate) fn futex_wake(word: &AtomicU32, mask: u32) {
    sluice_os::futex_wake_bitset(word, mask);
}

#[cfg(loom)]
pub(crate) use loom_futex::{futex_wait, futex_wake};

/// The futex as loom sees it. One table of sleepers for the whole model (the engine's words are
/// few and a wake names its word): a waiter registers under the lock only if the word still
/// holds `expected`, then sleeps until a wake of the same word with an intersecting mask marks
/// it woken.
#[cfg(loom)]
mod loom_futex {
    use super::{AtomicU32, Ordering};
    use loom::sync::{Condvar, Mutex};

    struct Sleeper {
        word: usize,
        mask: u32,
        woken: bool,
    }

    struct Table {
        sleepers: Mutex<Vec<Option<Sleeper>>>,
        changed: Condvar,
    }

    loom::lazy_static! {
        static ref TABLE: Table = Table {
            sleepers: Mutex::new(Vec::new()),
            changed: Condvar::new(),
        };
    }

    fn key(word: &AtomicU32) -> usize {
        word as *const AtomicU32 as usize
    }

    pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, mask: u32) {
        let mut sleepers = TABLE.sleepers.lock().unwrap();
        if word.load(Ordering::SeqCst) != expected {
            return;
        }
        let me = sleepers.len();
        sleepers.push(Some(Sleeper {
            word: key(word),
            mask,
            woken: false,
        }));
        while !sleepers[me].as_ref().is_some_and(|s| s.woken) {
            sleepers = TABLE.changed.wait(sleepers).unwrap();
        }
        sleepers[me] = None;
    }

    pub(crate) fn futex_wake(word: &AtomicU32, mask: u32) {
        let mut sleepers = TABLE.sleepers.lock().unwrap();
        for s in sleepers.iter_mut().flatten() {
            if s.word == key(word) && s.mask & mask != 0 {
                s.woken = true;
            }
        }
        TABLE.changed.notify_all();
    }
}
