//! `sluice bench copy --calibrate`: per operation and size, the caller's CPU time to run it
//! inline against the caller's CPU time to hand it to the engine and collect it (enqueue,
//! submit, wait parked). The break-even size is the smallest size from which handing off
//! costs the caller less, at that size and every larger one measured.

use std::path::Path;

use anyhow::Context;
use sluice_copy::{
    AlignedBuf, BreakEven, Channel, ItemSize, Op, OpKind, Pattern, Plane, Priority, Segment,
    Transform,
};

use super::figures::{engine, touched};
use super::BenchCopyArgs;
use crate::plot::{self, Series};
use crate::report::{median, Table};

/// CPU time of the calling thread, in seconds.
fn thread_cpu() -> f64 {
    sluice_os::thread_cpu_time().as_secs_f64()
}

/// The operation of `kind` writing about `size` bytes, and the source/destination sizes.
fn op_for(kind: OpKind, size: usize) -> (Op, usize, usize) {
    match kind {
        OpKind::Copy => (
            Op::Copy {
                src: 0,
                dst: 0,
                len: size,
            },
            size,
            size,
        ),
        OpKind::Fill => (
            Op::Fill {
                dst: 0,
                len: size,
                pattern: Pattern::byte(0x33),
            },
            64,
            size,
        ),
        OpKind::Copy2d => {
            let rows = (size / 256).max(1);
            (
                Op::Copy2d {
                    src: Plane {
                        offset: 0,
                        stride: 512,
                    },
                    dst: Plane {
                        offset: 0,
                        stride: 256,
                    },
                    row_bytes: 256,
                    rows,
                },
                rows * 512,
                rows * 256,
            )
        }
        OpKind::Rotate => {
            let side = (((size / 4) as f64).sqrt() as usize).max(1);
            let bytes = side * side * 4;
            (
                Op::Rotate {
                    src: Plane {
                        offset: 0,
                        stride: side * 4,
                    },
                    dst: Plane {
                        offset: 0,
                        stride: side * 4,
                    },
                    width: side,
                    height: side,
                    item: ItemSize::B4,
                    transform: Transform::TRANSPOSE,
                },
                bytes,
                bytes,
            )
        }
        OpKind::KeyedCopy => {
            let mut key = [0u8; 16];
            key[..4].copy_from_slice(&7u32.to_ne_bytes());
            (
                Op::KeyedCopy {
                    src: 0,
                    dst: 0,
                    len: size / 4 * 4,
                    item: ItemSize::B4,
                    key,
                },
                size,
                size,
            )
        }
        OpKind::Sg => {
            let piece = (size / 16).max(1);
            let src = (0..16)
                .map(|i| Segment {
                    offset: i * 2 * piece,
                    len: piece,
                })
                .collect();
            (
                Op::Sg {
                    src,
                    dst: vec![Segment {
                        offset: 0,
                        len: 16 * piece,
                    }],
                },
                32 * piece,
                16 * piece,
            )
        }
    }
}

/// Median caller CPU seconds per operation: run `reps` times, `trials` trials.
fn caller_cpu(
    ch: &mut Channel,
    op: &Op,
    bufs: &mut Option<(AlignedBuf, AlignedBuf)>,
    reps: usize,
    trials: usize,
) -> f64 {
    let per: Vec<f64> = (0..trials)
        .map(|_| {
            let t0 = thread_cpu();
            for _ in 0..reps {
                let (s, d) = bufs.take().unwrap_or_else(|| unreachable!());
                let ticket = match ch.enqueue(op.clone(), s, d) {
                    Ok(t) => t,
                    Err(r) => panic!("calibration op rejected: {}", r.error),
                };
                ch.submit();
                *bufs = Some(ticket.wait().buffers);
            }
            (thread_cpu() - t0) / reps as f64
        })
        .collect();
    median(&per)
}

/// Measures, prints and (unless `--no-store`) stores the break-even table.
pub(super) fn run(args: &BenchCopyArgs, out: &Path) -> anyhow::Result<()> {
    let inline_engine = engine(args, BreakEven::always_inline())?;
    let offload_engine = engine(args, BreakEven::never_inline())?;
    let mut inline_ch = inline_engine.channel(Priority::NORMAL);
    let mut offload_ch = offload_engine.channel(Priority::NORMAL);
    let sizes: Vec<usize> = (0..8).map(|i| 1024usize << (2 * i)).collect(); // 1 KiB … 16 MiB
    let mut table = Table::new(&["op", "bytes", "inline_us", "offload_us", "offload_wins"]);
    let mut result = BreakEven::default();
    let mut plots = Vec::new();
    for (g, kind) in OpKind::ALL.into_iter().enumerate() {
        let mut wins = Vec::new();
        let (mut pi, mut po) = (Vec::new(), Vec::new());
        for &size in &sizes {
            let (op, sl, dl) = op_for(kind, size);
            let mut bufs = Some((touched(sl, 7), touched(dl, 1)));
            let reps = (4 * 1024 * 1024 / size).clamp(3, 2000);
            let trials = args.trials.max(3);
            let i = caller_cpu(&mut inline_ch, &op, &mut bufs, reps, trials);
            let o = caller_cpu(&mut offload_ch, &op, &mut bufs, reps, trials);
            wins.push(o < i);
            table.push(vec![
                kind.name().to_string(),
                op.bytes().to_string(),
                format!("{:.2}", i * 1e6),
                format!("{:.2}", o * 1e6),
                (o < i).to_string(),
            ]);
            println!(
                "{:>10} {:>9} B: inline {:>9.2} us, hand-off {:>9.2} us (caller CPU)",
                kind.name(),
                op.bytes(),
                i * 1e6,
                o * 1e6
            );
            let x = (op.bytes().max(1) as f64).log2();
            pi.push((x, (i * 1e6).log10()));
            po.push((x, (o * 1e6).log10()));
        }
        // Smallest size from which hand-off wins at every larger size too.
        let mut be = usize::MAX;
        for (k, &size) in sizes.iter().enumerate().rev() {
            if wins[k] {
                be = op_for(kind, size).0.bytes();
            } else {
                break;
            }
        }
        result.set(kind, be);
        plots.push(Series {
            label: format!("{} inline", kind.name()),
            style: 0,
            group: g,
            points: pi,
        });
        plots.push(Series {
            label: format!("{} hand-off", kind.name()),
            style: 1,
            group: g,
            points: po,
        });
    }
    print!("{}", table.render());
    println!(
        "\n# break-even table for this machine (operations smaller than this run on the caller):"
    );
    let mut be_table = Table::new(&["op", "break_even_bytes"]);
    for kind in OpKind::ALL {
        let v = result.threshold(kind);
        be_table.push(vec![
            kind.name().to_string(),
            if v == usize::MAX {
                "never".to_string()
            } else {
                v.to_string()
            },
        ]);
    }
    print!("{}", be_table.render());
    table
        .write_csv(&out.join("copy-calibrate.csv"))
        .context("writing copy-calibrate.csv")?;
    table
        .write_json(&out.join("copy-calibrate.json"), "copy-calibrate")
        .context("writing copy-calibrate.json")?;
    std::fs::write(out.join("copy-breakeven.txt"), result.to_text())
        .context("writing copy-breakeven.txt")?;
    plot::lines(
        &out.join("copy-calibrate.png"),
        "Caller CPU per operation: inline vs hand-off to the engine",
        "log2(bytes)",
        "log10(caller CPU microseconds per operation)",
        &plots,
    )?;
    if args.no_store {
        println!("not stored (--no-store)");
    } else if let Some(path) = BreakEven::machine_path() {
        result
            .store(&path)
            .with_context(|| format!("storing {}", path.display()))?;
        println!("stored for this machine in {}", path.display());
    } else {
        println!("no HOME or XDG_CACHE_HOME: not stored");
    }
    Ok(())
}
