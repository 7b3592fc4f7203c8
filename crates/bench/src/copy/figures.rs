//! The figures of `sluice bench copy` (see the parent module for what each one measures).

use std::hint::black_box;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use anyhow::Context;
use num_complex::Complex32;
use sluice_copy::{
    AlignedBuf, BreakEven, Channel, Engine, EngineOptions, ItemSize, Kernels, Op, Pattern,
    Priority, Strategy, Transform, Turn,
};
use sluice_kernels::{Fir, RealTaps};

use super::BenchCopyArgs;
use crate::plot::{self, Series};
use crate::report::{median, Table};

const MIB: usize = 1 << 20;

/// A buffer of `len` bytes with every page touched.
pub(super) fn touched(len: usize, byte: u8) -> AlignedBuf {
    let mut b = AlignedBuf::zeroed(len);
    b.as_mut_slice().fill(byte);
    b
}

/// Seconds `f` takes.
pub(super) fn secs(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

fn gbps(bytes: usize, s: f64) -> f64 {
    bytes as f64 / s / 1e9
}

fn med(trials: usize, mut f: impl FnMut() -> f64) -> f64 {
    median(&(0..trials).map(|_| f()).collect::<Vec<_>>())
}

pub(super) fn engine(args: &BenchCopyArgs, break_even: BreakEven) -> anyhow::Result<Engine> {
    Engine::new(EngineOptions {
        workers: 1,
        cpus: args.engine_cpu.into_iter().collect(),
        break_even,
        ..EngineOptions::default()
    })
    .context("starting the copy engine")
}

/// Copies `src` into `dst` on the engine and waits; the buffers come back.
fn engine_copy(ch: &mut Channel, src: AlignedBuf, dst: AlignedBuf) -> (AlignedBuf, AlignedBuf) {
    let t = match ch.copy(src, dst) {
        Ok(t) => t,
        Err(r) => panic!("bench copy rejected: {}", r.error),
    };
    ch.submit();
    let done = t.wait();
    if let Err(e) = done.status {
        panic!("bench copy failed: {e}");
    }
    done.buffers
}

/// Every core copying its own buffer at once, with glibc `memcpy` and with streaming stores;
/// the better of the two is the machine's copy bandwidth (bytes copied per second).
fn stream_bandwidth(trials: usize) -> (f64, f64) {
    (stream_with(trials, false), stream_with(trials, true))
}

fn stream_with(trials: usize, nt: bool) -> f64 {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let len = 128 * MIB;
    let rates: Vec<f64> = (0..trials)
        .map(|_| {
            let barrier = Arc::new(Barrier::new(threads + 1));
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let b = barrier.clone();
                    std::thread::spawn(move || {
                        let src = touched(len, 1);
                        let mut dst = touched(len, 2);
                        let kernels = Kernels::with_strategy(Strategy {
                            non_temporal_from: 0,
                            ..Strategy::detect()
                        });
                        let op = Op::Copy {
                            src: 0,
                            dst: 0,
                            len,
                        };
                        b.wait();
                        for _ in 0..3 {
                            if nt {
                                let (from, to) =
                                    (src.as_slice().as_ptr(), dst.as_mut_slice().as_mut_ptr());
                                // SAFETY: `op` copies `len` bytes between two distinct
                                // buffers of `len` bytes owned by this thread.
                                unsafe { kernels.run(&op, from, to) };
                            } else {
                                dst.as_mut_slice()
                                    .copy_from_slice(black_box(src.as_slice()));
                            }
                        }
                        b.wait();
                    })
                })
                .collect();
            barrier.wait();
            let t = Instant::now();
            barrier.wait();
            let s = t.elapsed().as_secs_f64();
            for h in handles {
                let _ = h.join();
            }
            gbps(3 * len * threads, s)
        })
        .collect();
    median(&rates)
}

fn write(table: &Table, out: &Path, name: &str) -> anyhow::Result<()> {
    let csv = out.join(format!("{name}.csv"));
    table
        .write_csv(&csv)
        .with_context(|| format!("writing {}", csv.display()))?;
    let json = out.join(format!("{name}.json"));
    table
        .write_json(&json, name)
        .with_context(|| format!("writing {}", json.display()))?;
    Ok(())
}

fn series(label: &str, group: usize, style: usize, points: Vec<(f64, f64)>) -> Series {
    Series {
        label: label.to_string(),
        style,
        group,
        points,
    }
}

/// Runs every figure.
pub(super) fn run(args: &BenchCopyArgs, out: &Path) -> anyhow::Result<()> {
    let be = BreakEven::for_this_machine();
    println!(
        "# break-even table: {}",
        be.to_text().lines().skip(1).collect::<Vec<_>>().join(", ")
    );
    let engine = engine(args, be)?;
    println!(
        "# engine: 1 worker ({} backend), pinned: {:?}",
        engine.backend_name(),
        engine.pinned()
    );
    let mut ch = engine.channel(Priority::NORMAL);
    let trials = args.trials;
    let mut summary = Table::new(&["figure", "engine", "baseline", "ratio", "target", "met"]);
    let verdict = |summary: &mut Table,
                   name: &str,
                   e: String,
                   b: String,
                   ratio: f64,
                   target: &str,
                   met: bool| {
        summary.push(vec![
            name.to_string(),
            e,
            b,
            format!("{ratio:.3}"),
            target.to_string(),
            if met { "yes" } else { "no" }.to_string(),
        ]);
    };

    // Memory bandwidth of the machine, every core at once.
    let (stream_memcpy, stream_nt) = stream_bandwidth(trials);
    let stream = stream_memcpy.max(stream_nt);
    println!("memory bandwidth (all cores copying 128 MiB each): memcpy {stream_memcpy:.2} GB/s, streaming stores {stream_nt:.2} GB/s copied; best {stream:.2} GB/s copied = {:.2} GB/s read+write", 2.0 * stream);
    let mut bw = Table::new(&["method", "threads", "copy_gbps", "read_write_gbps"]);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    bw.push(vec![
        "memcpy".into(),
        threads.to_string(),
        format!("{stream_memcpy:.2}"),
        format!("{:.2}", 2.0 * stream_memcpy),
    ]);
    bw.push(vec![
        "streaming stores".into(),
        threads.to_string(),
        format!("{stream_nt:.2}"),
        format!("{:.2}", 2.0 * stream_nt),
    ]);
    write(&bw, out, "copy-bandwidth")?;

    // Large copies: one engine worker vs memcpy on one core.
    let mut large = Table::new(&[
        "mib",
        "memcpy_gbps",
        "engine_gbps",
        "ratio",
        "share_of_bandwidth",
    ]);
    let (mut pm, mut pe) = (Vec::new(), Vec::new());
    for &mib in args.sizes.iter().filter(|&&m| m >= 32) {
        let len = mib * MIB;
        let mut bufs = (touched(len, 3), touched(len, 4));
        let (mut vm, mut ve) = (Vec::new(), Vec::new());
        for _ in 0..trials {
            vm.push(secs(|| {
                bufs.1
                    .as_mut_slice()
                    .copy_from_slice(black_box(bufs.0.as_slice()))
            }));
            let t = Instant::now();
            bufs = engine_copy(&mut ch, bufs.0, bufs.1);
            ve.push(t.elapsed().as_secs_f64());
        }
        let (memcpy, eng) = (median(&vm), median(&ve));
        let (m, e) = (gbps(len, memcpy), gbps(len, eng));
        large.push(vec![
            mib.to_string(),
            format!("{m:.2}"),
            format!("{e:.2}"),
            format!("{:.3}", e / m),
            format!("{:.3}", e / stream),
        ]);
        println!("large copy {mib} MiB: memcpy {m:.2} GB/s, engine {e:.2} GB/s, ratio {:.3}, {:.1} % of the machine's copy bandwidth", e / m, 100.0 * e / stream);
        pm.push(((len as f64).log2(), m));
        pe.push(((len as f64).log2(), e));
        verdict(
            &mut summary,
            &format!("copy {mib} MiB, 1 engine worker"),
            format!("{e:.2} GB/s"),
            format!("memcpy {m:.2} GB/s"),
            e / m,
            ">= 0.95",
            e / m >= 0.95,
        );
    }
    if !pm.is_empty() {
        let xs: Vec<f64> = pm.iter().map(|p| p.0).collect();
        let bw = xs.iter().map(|&x| (x, stream)).collect();
        plot::lines(
            &out.join("copy-large.png"),
            "Large copy: one engine worker vs memcpy (GB/s copied)",
            "log2(bytes)",
            "GB/s",
            &[
                series("memcpy (caller)", 0, 0, pm),
                series("engine, 1 worker", 1, 0, pe),
                series("all cores memcpy (machine)", 2, 2, bw),
            ],
        )?;
    }
    print!("{}", large.render());
    write(&large, out, "copy-large")?;

    // Overlap: engine copy while the caller filters, vs memcpy then filter.
    let taps: Vec<f32> = (0..64).map(|k| ((k as f32) * 0.37).sin() / 64.0).collect();
    let mut fir = Fir::new(RealTaps::new(&taps).context("FIR taps")?);
    let mut overlap = Table::new(&[
        "mib",
        "memcpy_s",
        "fir_s",
        "sequential_s",
        "overlapped_s",
        "speedup",
        "fir_alone_s",
        "fir_during_copy_s",
        "caller_slowdown",
        "ideal_speedup",
    ]);
    let (mut psp, mut psl, mut pid) = (Vec::new(), Vec::new(), Vec::new());
    for &mib in &args.sizes {
        let len = mib * MIB;
        let n = len / 8;
        let input: Vec<Complex32> = (0..n + 63)
            .map(|i| Complex32::new((i % 97) as f32, 1.0))
            .collect();
        let mut output = vec![Complex32::default(); n];
        let mut bufs = (touched(len, 5), touched(len, 6));
        let mut filter = |output: &mut [Complex32]| {
            fir.filter(black_box(&input[..]), output);
        };
        // Each trial measures all four, one after the other.
        let (mut vm, mut vf, mut vs, mut vp, mut during) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..trials {
            vm.push(secs(|| {
                bufs.1
                    .as_mut_slice()
                    .copy_from_slice(black_box(bufs.0.as_slice()))
            }));
            vf.push(secs(|| filter(&mut output)));
            vs.push(secs(|| {
                bufs.1
                    .as_mut_slice()
                    .copy_from_slice(black_box(bufs.0.as_slice()));
                filter(&mut output);
            }));
            let t = Instant::now();
            let ticket = match ch.copy(bufs.0, bufs.1) {
                Ok(t) => t,
                Err(r) => panic!("bench copy rejected: {}", r.error),
            };
            ch.submit();
            let f0 = Instant::now();
            filter(&mut output);
            during.push(f0.elapsed().as_secs_f64());
            bufs = ticket.wait().buffers;
            vp.push(t.elapsed().as_secs_f64());
        }
        let (memcpy, fir_alone, seq, par) = (median(&vm), median(&vf), median(&vs), median(&vp));
        // With perfect overlap the pair takes max(copy, FIR): the best speedup possible.
        let ideal = seq / memcpy.max(fir_alone);
        let fir_during = median(&during);
        let speedup = seq / par;
        let slowdown = fir_during / fir_alone - 1.0;
        overlap.push(vec![
            mib.to_string(),
            format!("{memcpy:.5}"),
            format!("{fir_alone:.5}"),
            format!("{seq:.5}"),
            format!("{par:.5}"),
            format!("{speedup:.3}"),
            format!("{fir_alone:.5}"),
            format!("{fir_during:.5}"),
            format!("{:.3}", slowdown),
            format!("{ideal:.3}"),
        ]);
        println!("overlap {mib} MiB: sequential {seq:.4} s, overlapped {par:.4} s, speedup {speedup:.3} (perfect overlap would give {ideal:.3}), caller slowed {:.1} %", 100.0 * slowdown);
        psp.push(((len as f64).log2(), speedup));
        psl.push(((len as f64).log2(), 1.0 + slowdown));
        pid.push(((len as f64).log2(), ideal));
        verdict(
            &mut summary,
            &format!("copy {mib} MiB || 64-tap FIR (throughput)"),
            format!("{par:.4} s"),
            format!("memcpy+FIR {seq:.4} s"),
            speedup,
            ">= 1.6",
            speedup >= 1.6,
        );
        verdict(
            &mut summary,
            &format!("copy {mib} MiB || 64-tap FIR (caller FIR time)"),
            format!("{fir_during:.4} s"),
            format!("FIR alone {fir_alone:.4} s"),
            fir_during / fir_alone,
            "<= 1.10",
            slowdown <= 0.10,
        );
    }
    print!("{}", overlap.render());
    write(&overlap, out, "copy-overlap")?;
    if !psp.is_empty() {
        plot::lines(
            &out.join("copy-overlap.png"),
            "Engine copy overlapped with a 64-tap FIR on the caller",
            "log2(bytes copied = bytes filtered)",
            "ratio",
            &[
                series("speedup over memcpy then FIR", 0, 0, psp.clone()),
                series("caller FIR time / FIR alone", 1, 0, psl),
                series("perfect overlap: (copy + FIR) / max(copy, FIR)", 2, 1, pid),
                series(
                    "target speedup 1.6",
                    0,
                    2,
                    psp.iter().map(|p| (p.0, 1.6)).collect(),
                ),
            ],
        )?;
    }

    // 2-D: transpose and rotate against memcpy of the same bytes.
    let mut twod = Table::new(&[
        "figure",
        "bytes",
        "memcpy_gbps",
        "engine_gbps",
        "ratio",
        "naive_gbps",
    ]);
    let cases = [
        (
            "transpose c32",
            args.transpose_side,
            ItemSize::B8,
            Transform::TRANSPOSE,
        ),
        (
            "rotate 90 u32",
            args.rotate_side,
            ItemSize::B4,
            Transform::turn(Turn::R90),
        ),
    ];
    for (name, side, item, transform) in cases {
        let len = side * side * item.bytes();
        let mut bufs = (touched(len, 7), touched(len, 8));
        let (mut vm, mut vn, mut ve) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..trials {
            vm.push(secs(|| {
                bufs.1
                    .as_mut_slice()
                    .copy_from_slice(black_box(bufs.0.as_slice()))
            }));
            vn.push(secs(|| {
                naive_transpose(bufs.0.as_slice(), bufs.1.as_mut_slice(), side, item.bytes())
            }));
            let t = Instant::now();
            let ticket = match ch.rotate(bufs.0, bufs.1, side, side, item, transform) {
                Ok(t) => t,
                Err(r) => panic!("bench rotate rejected: {}", r.error),
            };
            ch.submit();
            bufs = ticket.wait().buffers;
            ve.push(t.elapsed().as_secs_f64());
        }
        let (memcpy, naive, eng) = (median(&vm), median(&vn), median(&ve));
        let (m, e, nv) = (gbps(len, memcpy), gbps(len, eng), gbps(len, naive));
        twod.push(vec![
            name.to_string(),
            len.to_string(),
            format!("{m:.2}"),
            format!("{e:.2}"),
            format!("{:.3}", e / m),
            format!("{nv:.2}"),
        ]);
        println!("{name} {side}x{side}: engine {e:.2} GB/s, memcpy {m:.2} GB/s, ratio {:.3}, naive loop {nv:.2} GB/s", e / m);
        verdict(
            &mut summary,
            &format!("{name} {side}x{side}"),
            format!("{e:.2} GB/s"),
            format!("memcpy {m:.2} GB/s"),
            e / m,
            ">= 0.60",
            e / m >= 0.6,
        );
    }

    // Fill against memset.
    {
        let len = args.fill_mib * MIB;
        let mut dst = touched(len, 9);
        let (mut vm, mut v1, mut v16) = (Vec::new(), Vec::new(), Vec::new());
        let p16 = Pattern::new(b"0123456789abcdef").context("pattern")?;
        for _ in 0..trials {
            vm.push(secs(|| dst.as_mut_slice().fill(black_box(0x5a))));
            for (pattern, v) in [(Pattern::byte(0x5a), &mut v1), (p16, &mut v16)] {
                let t = Instant::now();
                let ticket = match ch.fill(dst, pattern) {
                    Ok(t) => t,
                    Err(r) => panic!("bench fill rejected: {}", r.error),
                };
                ch.submit();
                dst = ticket.wait().buffers;
                v.push(t.elapsed().as_secs_f64());
            }
        }
        let (memset, f1, f16) = (median(&vm), median(&v1), median(&v16));
        let (m, e1, e16) = (gbps(len, memset), gbps(len, f1), gbps(len, f16));
        twod.push(vec![
            "fill 1-byte".into(),
            len.to_string(),
            format!("{m:.2}"),
            format!("{e1:.2}"),
            format!("{:.3}", e1 / m),
            "-".into(),
        ]);
        twod.push(vec![
            "fill 16-byte pattern".into(),
            len.to_string(),
            format!("{m:.2}"),
            format!("{e16:.2}"),
            format!("{:.3}", e16 / m),
            "-".into(),
        ]);
        println!("fill {} MiB: engine {e1:.2} GB/s (16-byte pattern {e16:.2}), memset {m:.2} GB/s, ratio {:.3}", args.fill_mib, e1 / m);
        verdict(
            &mut summary,
            &format!("fill {} MiB", args.fill_mib),
            format!("{e1:.2} GB/s"),
            format!("memset {m:.2} GB/s"),
            e1 / m,
            ">= 0.95",
            e1 / m >= 0.95,
        );
    }
    print!("{}", twod.render());
    write(&twod, out, "copy-2d-fill")?;

    // Small copies through the API vs inline memcpy.
    let mut small = Table::new(&[
        "bytes",
        "memcpy_ns",
        "copy_slice_ns",
        "ticket_ns",
        "copy_slice_ratio",
        "ticket_ratio",
    ]);
    let (mut sm, mut ss, mut st) = (Vec::new(), Vec::new(), Vec::new());
    let mut worst: f64 = 0.0;
    for shift in 6..=12 {
        let n = 1usize << shift;
        let src = touched(n, 1);
        let mut dst = touched(n, 2);
        let iters = 200_000;
        let per = |s: f64| s / iters as f64 * 1e9;
        // Alternating short trials (many of them: each is a few hundred microseconds).
        let (mut vm, mut vc) = (Vec::new(), Vec::new());
        let (s, d) = (src.as_slice(), dst.as_mut_slice());
        for _ in 0..4 * trials + 1 {
            vm.push(per(secs(|| {
                for _ in 0..iters {
                    d.copy_from_slice(black_box(s));
                    black_box(&mut *d);
                }
            })));
            vc.push(per(secs(|| {
                for _ in 0..iters {
                    let _ = ch.copy_slice(black_box(s), d);
                    black_box(&mut *d);
                }
            })));
        }
        let (m, c) = (median(&vm), median(&vc));
        let mut bufs = Some((
            vec![1u8; n].into_boxed_slice(),
            vec![0u8; n].into_boxed_slice(),
        ));
        let t = med(trials, || {
            per(secs(|| {
                for _ in 0..iters / 10 {
                    let (s, d) = bufs.take().unwrap_or_else(|| unreachable!());
                    let ticket = match ch.copy(s, d) {
                        Ok(t) => t,
                        Err(r) => panic!("bench copy rejected: {}", r.error),
                    };
                    ch.submit();
                    bufs = Some(ticket.wait().buffers);
                }
            })) * 10.0
        });
        worst = worst.max(c / m);
        small.push(vec![
            n.to_string(),
            format!("{m:.1}"),
            format!("{c:.1}"),
            format!("{t:.1}"),
            format!("{:.3}", c / m),
            format!("{:.3}", t / m),
        ]);
        sm.push((shift as f64, m));
        ss.push((shift as f64, c));
        st.push((shift as f64, t));
    }
    print!("{}", small.render());
    write(&small, out, "copy-small")?;
    plot::lines(
        &out.join("copy-small.png"),
        "Small copies: time per copy (below break-even, on the caller)",
        "log2(bytes)",
        "ns per copy",
        &[
            series("inline memcpy", 0, 0, sm),
            series("Channel::copy_slice", 1, 0, ss),
            series("enqueue+submit+wait (ticket)", 2, 0, st),
        ],
    )?;
    verdict(
        &mut summary,
        "small copies 64 B-4 KiB (copy_slice, worst size)",
        "-".into(),
        "inline memcpy".into(),
        worst,
        "<= 1.0",
        worst <= 1.0,
    );

    println!("\n# summary ({})", crate::report::machine_description());
    print!("{}", summary.render());
    write(&summary, out, "copy-summary")?;
    println!("wrote CSV, JSON and PNG files into {}", out.display());
    Ok(())
}

/// `dst[x][y] = src[y][x]`, one item at a time, for the naive reference.
fn naive_transpose(src: &[u8], dst: &mut [u8], side: usize, item: usize) {
    match item {
        8 => {
            let (s, d): (&[u64], &mut [u64]) =
                (bytemuck::cast_slice(src), bytemuck::cast_slice_mut(dst));
            for y in 0..side {
                for x in 0..side {
                    d[x * side + y] = s[y * side + x];
                }
            }
        }
        _ => {
            let (s, d): (&[u32], &mut [u32]) =
                (bytemuck::cast_slice(src), bytemuck::cast_slice_mut(dst));
            for y in 0..side {
                for x in 0..side {
                    d[x * side + y] = s[y * side + x];
                }
            }
        }
    }
}
