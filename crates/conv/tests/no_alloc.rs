//! `process` allocates nothing in steady state (threaded mode, and the others).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use sluice_conv::{Convolver, ConvolverConfig, IrMatrix, Scheduling};

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static ON_THIS_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) && ON_THIS_THREAD.with(|c| c.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        if COUNTING.load(Ordering::Relaxed) && ON_THIS_THREAD.with(|c| c.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) && ON_THIS_THREAD.with(|c| c.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Counts allocations made by `process` on the calling thread and, separately, by all
/// threads (workers included) while it runs.
fn allocations_in_process(cfg: ConvolverConfig, channels: usize) -> usize {
    let ir: Vec<f32> = (0..30_000)
        .map(|i| ((i as f32) * 0.01).sin() * (-(i as f32) / 5000.0).exp())
        .collect();
    let irs = IrMatrix::mono_per_channel(channels, &ir);
    let b = cfg.block_size;
    let mut conv = Convolver::new(cfg, &irs).unwrap();
    let xs: Vec<Vec<f32>> = (0..channels).map(|c| vec![0.25 + c as f32; b]).collect();
    let mut ys: Vec<Vec<f32>> = vec![vec![0.0; b]; channels];
    let ins: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
    let mut outs: Vec<&mut [f32]> = ys.iter_mut().map(Vec::as_mut_slice).collect();
    // Warm up: one full period of the largest level and then some.
    for _ in 0..2000 {
        conv.process(&ins, &mut outs).unwrap();
    }
    ALLOCS.store(0, Ordering::SeqCst);
    ON_THIS_THREAD.with(|c| c.set(true));
    COUNTING.store(true, Ordering::SeqCst);
    for _ in 0..3000 {
        conv.process(&ins, &mut outs).unwrap();
    }
    COUNTING.store(false, Ordering::SeqCst);
    ON_THIS_THREAD.with(|c| c.set(false));
    assert!(conv.stats().periods == 5000);
    ALLOCS.load(Ordering::SeqCst)
}

#[test]
fn process_does_not_allocate() {
    for (block, sched) in [
        (
            64,
            Scheduling::Threaded {
                pin_cores: None,
                realtime_priority: None,
            },
        ),
        (
            16,
            Scheduling::Threaded {
                pin_cores: None,
                realtime_priority: None,
            },
        ),
        (
            100,
            Scheduling::Threaded {
                pin_cores: None,
                realtime_priority: None,
            },
        ),
        (64, Scheduling::Cooperative),
        (64, Scheduling::SingleThread),
    ] {
        let cfg = ConvolverConfig {
            block_size: block,
            scheduling: sched.clone(),
            ..Default::default()
        };
        assert_eq!(allocations_in_process(cfg, 2), 0, "block {block} {sched:?}");
    }
}
