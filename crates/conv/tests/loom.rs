//! Loom model of the handshake between the convolution callback and a level worker, running the
//! crate's own code (`sluice_conv::handshake`, whose atomics and futex come from loom under
//! `cfg(loom)`):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p sluice-conv --test loom --release --target-dir target/loom
//! ```
//!
//! The callback runs the engine's period with one threaded level of the internal period's size
//! (`n0 = S = 1` sample: a block is posted every period and is due one period later, so the
//! level has two output slots and the ring four samples). Loom tracks every sample of the ring
//! and of the output slots: a callback read or write that overlaps a worker access without a
//! happens-before edge fails the model, and so does a lost wake-up (every thread asleep).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use sluice_conv::handshake::{worker_loop, Epoch, LevelSync, RaceBuf};
use std::sync::atomic::Ordering;

/// The level's bit in the wake mask (level 1, as in the engine).
const BIT: u32 = 1 << 1;
const RING: usize = 4;
const SLOTS: usize = 2;

struct Shared {
    ring: RaceBuf,
    out: RaceBuf,
    sync: LevelSync,
    epoch: Epoch,
    stop: loom::sync::atomic::AtomicBool,
}

/// What the worker computes for block `j`: the sum of its ring window `[j-1, j+1)`.
fn expected(j: u64) -> f32 {
    let x = |k: i64| if k < 0 { 0.0 } else { k as f32 + 1.0 };
    x(j as i64 - 1) + x(j as i64)
}

/// `periods` callbacks with the engine's posting and reading rules, then a reset (every job
/// waited for, both buffers cleared by the callback), then the worker is stopped.
fn callback_and_worker(periods: u64) {
    let shared = Arc::new(Shared {
        ring: RaceBuf::new(RING),
        out: RaceBuf::new(SLOTS),
        sync: LevelSync::new(),
        epoch: Epoch::new(),
        stop: loom::sync::atomic::AtomicBool::new(false),
    });
    let worker = {
        let shared = Arc::clone(&shared);
        thread::spawn(move || {
            let s = &*shared;
            worker_loop(&s.epoch, &s.stop, &s.sync, BIT, |j| {
                let start = (j as usize + RING - 1) % RING;
                // SAFETY: job `j` was posted and is not yet published done: the callback neither
                // writes its ring window nor touches its output slot (what loom checks).
                let sum = unsafe {
                    s.ring.read(start, 1, |a| a[0]) + s.ring.read(j as usize % RING, 1, |b| b[0])
                };
                // SAFETY: as above.
                unsafe { s.out.write(j as usize % SLOTS, 1, |o| o[0] = sum) };
            });
        })
    };

    let s = &*shared;
    let mut seq: u32 = 0;
    let mut wake_mask = 0;
    let flush = |mask: &mut u32| {
        if *mask != 0 {
            s.epoch.wake(*mask);
            *mask = 0;
        }
    };
    for k in 0..periods {
        // 1. This period's input into the ring.
        // SAFETY: block k-2 is done (checked before block k-1... and below before posting k), so
        // no outstanding block reads sample k.
        unsafe {
            s.ring
                .write(k as usize % RING, 1, |x| x[0] = k as f32 + 1.0)
        };
        // 3. The level's period ends: post block k once block k-2 is done.
        let need = seq.wrapping_sub(1);
        if !s.sync.is_done(need) {
            flush(&mut wake_mask);
            s.sync.wait(need);
        }
        s.sync.post(&mut seq, k);
        wake_mask |= BIT;
        // 4./5. Block k-1 is due now: wait for it (LatePolicy::Wait) and read its slot.
        if k >= 1 {
            let j = k - 1;
            let target = j as u32 + 1;
            if !s.sync.is_done(target) {
                flush(&mut wake_mask);
                s.sync.wait(target);
            }
            // SAFETY: block j is done (acquire) and its slot is rewritten only by block j + 2,
            // posted in a later period.
            let got = unsafe { s.out.read(j as usize % SLOTS, 1, |o| o[0]) };
            assert_eq!(got, expected(j), "block {j}");
        }
        // End of the callback: one wake for the levels posted to.
        flush(&mut wake_mask);
    }
    // Reset: every posted job done, then the callback owns both buffers.
    s.sync.wait(seq);
    // SAFETY: the worker is idle: every job it was given is published done.
    unsafe {
        s.ring.write(0, RING, |r| r.fill(0.0));
        s.out.write(0, SLOTS, |o| o.fill(0.0));
    }
    // Drop: stop, wake everyone, join.
    s.stop.store(true, Ordering::SeqCst);
    s.epoch.wake(u32::MAX);
    worker.join().unwrap();
}

/// Three periods: the second post waits for nothing, the third may have to wait for block 0
/// (at most two outstanding), and the callback waits for due blocks; then a reset.
#[test]
fn the_callback_never_touches_what_the_worker_is_working_on_and_no_wake_is_lost() {
    loom::model(|| callback_and_worker(3));
}

/// One period and a reset: the smallest case, where the worker may not have woken at all
/// before the callback waits for it.
#[test]
fn a_reset_right_after_the_first_post_waits_for_the_worker() {
    loom::model(|| callback_and_worker(1));
}
