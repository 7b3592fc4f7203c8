//! The live convolver's JACK callback allocates nothing in the steady state: with a counting
//! global allocator, a second of real-time processing on a dummy-backend server (about 750
//! callbacks at period 64, wet/dry mix and a 2x2 matrix, so every path of the callback runs)
//! adds no allocation. libjack's own C code does not go through Rust's allocator; every Rust
//! allocation of the process, the callback's included, does. Needs the jackd2 package.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sluice_audio::{DummyServer, LiveConvolver, LiveSpec};
use sluice_conv::IrMatrix;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn the_callback_allocates_nothing_in_the_steady_state() {
    let server = DummyServer::start(
        &format!("sluice-alloc-{}", std::process::id()),
        48000,
        64,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let ir = |seed: u32| -> Vec<f32> {
        let mut s = seed;
        (0..8192)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s as f32 / 4_294_967_296.0 - 0.5) * (-(i as f32) / 1500.0).exp()
            })
            .collect()
    };
    let irs = IrMatrix::true_stereo(ir(1), ir(2), ir(3), ir(4)).unwrap();
    let mut spec = LiveSpec::new("alloc", irs);
    spec.server = Some(server.name().to_string());
    spec.mix = 0.5;
    spec.dry_sources = vec![Some(0), Some(1)];
    spec.connect_inputs = vec![
        vec!["system:capture_1".into()],
        vec!["system:capture_2".into()],
    ];
    let live = LiveConvolver::start(spec, Duration::ZERO).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (a0, p0) = (ALLOCATIONS.load(Ordering::SeqCst), live.stats().periods);
    std::thread::sleep(Duration::from_secs(1));
    let a1 = ALLOCATIONS.load(Ordering::SeqCst);
    let stats = live.stats();
    assert!(stats.periods > p0 + 100, "the callback ran: {stats}");
    assert_eq!(
        a1 - a0,
        0,
        "allocations during {} callbacks",
        stats.periods - p0
    );
}
