//! The synchronous slice path (`copy_slice`, `run_slices`) allocates nothing on the caller's
//! thread after its first call, inline or on the engine's workers (a block's `work` or a
//! real-time callback may call it). The engine's workers are not counted: the counter is
//! thread-local.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use sluice_copy::{BreakEven, Engine, EngineOptions, ItemSize, Op, Plane, Priority, Transform};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    if COUNTING.with(Cell::get) {
        COUNT.with(|c| c.set(c.get() + 1));
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator, which upholds the
// GlobalAlloc contract; counting touches only const-initialised thread-locals.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's layout, as the caller's contract requires.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from the system allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` came from the system allocator with `layout`; the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    COUNT.with(Cell::get)
}

#[test]
fn synchronous_slices_allocate_nothing_inline_or_on_the_engine() {
    for (name, be) in [
        ("inline", BreakEven::always_inline()),
        ("engine", BreakEven::never_inline()),
    ] {
        let engine = Engine::new(EngineOptions {
            break_even: be,
            ..EngineOptions::default()
        })
        .unwrap();
        let mut ch = engine.channel(Priority::NORMAL);
        let (w, h) = (64usize, 32usize);
        let src: Vec<u8> = (0..w * h * 8).map(|i| i as u8).collect();
        let mut dst = vec![0u8; src.len()];
        let rotate = Op::Rotate {
            src: Plane {
                offset: 0,
                stride: w * 8,
            },
            dst: Plane {
                offset: 0,
                stride: h * 8,
            },
            width: w,
            height: h,
            item: ItemSize::B8,
            transform: Transform::TRANSPOSE,
        };
        let mut run = || {
            ch.copy_slice(&src, &mut dst).unwrap();
            ch.run_slices(rotate.clone(), &src, &mut dst).unwrap();
        };
        // The first call may grow the channel's staging list.
        run();
        let n = allocations(|| {
            for _ in 0..100 {
                run();
            }
        });
        assert_eq!(n, 0, "{name}: allocations in 100 synchronous calls");
    }
}
