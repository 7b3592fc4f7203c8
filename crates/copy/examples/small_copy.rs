//! Time per small copy: `Channel::copy_slice` against an inline `copy_from_slice`
//! (`cargo run --release -p sluice-copy --example small_copy`).

use std::hint::black_box;
use std::time::Instant;

use sluice_copy::{Engine, Priority};

fn main() {
    let engine = Engine::with_defaults().expect("engine");
    let mut ch = engine.channel(Priority::NORMAL);
    for n in [64usize, 128, 256, 512, 1024, 4096] {
        let src = vec![1u8; n];
        let mut dst = vec![0u8; n];
        let iters = 2_000_000;
        let mut best = (f64::MAX, f64::MAX);
        for _ in 0..5 {
            let t = Instant::now();
            for _ in 0..iters {
                dst.copy_from_slice(black_box(&src));
                black_box(&mut dst);
            }
            best.0 = best.0.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for _ in 0..iters {
                let _ = ch.copy_slice(black_box(&src), &mut dst);
                black_box(&mut dst);
            }
            best.1 = best.1.min(t.elapsed().as_secs_f64());
        }
        let ns = |s: f64| s / iters as f64 * 1e9;
        println!(
            "{n:>5} B: memcpy {:.2} ns, copy_slice {:.2} ns",
            ns(best.0),
            ns(best.1)
        );
    }
}
