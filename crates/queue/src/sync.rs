//! The synchronisation primitives the queue's protocols use: std's, or loom's under `cfg(loom)`.
//!
//! Every atomic, mutex and `Arc` that the index, park/wake and tag protocols touch comes from
//! here, so `RUSTFLAGS="--cfg loom" cargo test -p sluice-queue --test loom` model-checks the
//! crate's own code rather than a re-implementation of it. The futex calls have a loom stand-in
//! in `park.rs`.

#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    Arc, Mutex,
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    Arc, Mutex,
};

/// Locks `m`, ignoring poisoning: the data behind our mutexes (tag lists) stays consistent even
/// if a thread panicked while holding the lock, because every update is a single push or pop.
pub(crate) fn lock<T>(m: &Mutex<T>) -> impl std::ops::DerefMut<Target = T> + '_ {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
