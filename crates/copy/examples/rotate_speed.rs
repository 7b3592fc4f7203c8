//! Quick look at rotation speed against memcpy of the same bytes (the full comparison is
//! `sluice bench copy`): `cargo run --release -p sluice-copy --example rotate_speed`.

use std::time::Instant;

use sluice_copy::{AlignedBuf, Engine, ItemSize, Priority, Transform, Turn};

fn main() {
    let engine = Engine::with_defaults().expect("engine");
    let mut ch = engine.channel(Priority::NORMAL);
    for (name, side, item, t) in [
        (
            "transpose c32",
            4096usize,
            ItemSize::B8,
            Transform::TRANSPOSE,
        ),
        (
            "rotate 90 u32",
            2048,
            ItemSize::B4,
            Transform::turn(Turn::R90),
        ),
    ] {
        let len = side * side * item.bytes();
        let mut src = AlignedBuf::zeroed(len);
        src.as_mut_slice().fill(1);
        let mut dst = AlignedBuf::zeroed(len);
        dst.as_mut_slice().fill(2);
        let mut best_m = f64::MAX;
        for _ in 0..5 {
            let t0 = Instant::now();
            dst.as_mut_slice().copy_from_slice(src.as_slice());
            best_m = best_m.min(t0.elapsed().as_secs_f64());
        }
        let mut bufs = Some((src, dst));
        let mut best_e = f64::MAX;
        for _ in 0..5 {
            let (s, d) = bufs.take().expect("buffers");
            let t0 = Instant::now();
            let ticket = ch
                .rotate(s, d, side, side, item, t)
                .expect("valid rotation");
            ch.submit();
            bufs = Some(ticket.wait().buffers);
            best_e = best_e.min(t0.elapsed().as_secs_f64());
        }
        let gb = |s: f64| len as f64 / s / 1e9;
        println!(
            "{name}: engine {:.2} GB/s, memcpy {:.2} GB/s, ratio {:.3}",
            gb(best_e),
            gb(best_m),
            best_m / best_e
        );
    }
}
