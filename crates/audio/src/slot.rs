//! A single-item, lock-free hand-over slot between one producer thread and one consumer thread:
//! how prepared impulse responses reach the JACK callback and retired ones leave it, with no
//! allocation, lock or system call on the real-time side.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU8, Ordering};

const EMPTY: u8 = 0;
const BUSY: u8 = 1;
const FULL: u8 = 2;

/// Holds at most one `T`. [`Slot::put`] and [`Slot::take`] never block: they fail (handing the
/// value back, or returning `None`) when the slot is full, empty or being used by the other side.
pub struct Slot<T> {
    state: AtomicU8,
    value: UnsafeCell<Option<T>>,
}

// SAFETY: the value is only touched by the thread that moved `state` to BUSY (a successful
// compare-exchange), so no two threads access it at once; `T: Send` lets it cross threads.
unsafe impl<T: Send> Sync for Slot<T> {}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Self {
            state: AtomicU8::new(EMPTY),
            value: UnsafeCell::new(None),
        }
    }
}

impl<T> Slot<T> {
    /// Stores `value` if the slot is empty, else gives it back.
    pub fn put(&self, value: T) -> Result<(), T> {
        if self
            .state
            .compare_exchange(EMPTY, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(value);
        }
        // SAFETY: this thread owns the value exclusively while `state` is BUSY (see the Sync impl).
        unsafe { *self.value.get() = Some(value) };
        self.state.store(FULL, Ordering::Release);
        Ok(())
    }

    /// Takes the value if there is one.
    pub fn take(&self) -> Option<T> {
        if self
            .state
            .compare_exchange(FULL, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // SAFETY: exclusive while BUSY, as in `put`.
        let value = unsafe { (*self.value.get()).take() };
        self.state.store(EMPTY, Ordering::Release);
        value
    }

    /// Whether a value waits in the slot.
    pub fn is_full(&self) -> bool {
        self.state.load(Ordering::Acquire) == FULL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_at_a_time_across_threads() {
        let slot = std::sync::Arc::new(Slot::<u64>::default());
        assert_eq!(slot.take(), None);
        assert_eq!(slot.put(1), Ok(()));
        assert_eq!(slot.put(2), Err(2));
        assert!(slot.is_full());
        assert_eq!(slot.take(), Some(1));
        let s2 = slot.clone();
        let producer = std::thread::spawn(move || {
            for v in 0..10_000u64 {
                let mut v = v;
                while let Err(back) = s2.put(v) {
                    v = back;
                    std::hint::spin_loop();
                }
            }
        });
        let mut next = 0;
        while next < 10_000 {
            if let Some(v) = slot.take() {
                assert_eq!(v, next);
                next += 1;
            }
        }
        producer.join().unwrap();
    }
}
