//! Every operation against a straightforward reference, on random shapes, strides, sizes,
//! offsets (unaligned edges) and patterns, through the engine with several strategies
//! (thresholds shrunk so that `rep movsb` and the non-temporal paths run on small sizes) and
//! both on the caller (below break-even) and on a worker. Out-of-bounds and overlapping
//! operations must be rejected with the destination untouched.

use proptest::prelude::*;
use sluice_copy::{
    BreakEven, CopyError, Engine, EngineOptions, ItemSize, Op, Pattern, Plane, Priority, Segment,
    Strategy as CopyStrategy, Transform, Turn,
};

/// Engines to run each case on: detected strategy on a worker, tiny thresholds on a worker,
/// and everything inline on the caller.
fn engines() -> Vec<Engine> {
    let small = CopyStrategy {
        rep_movsb_from: 64,
        non_temporal_from: 1024,
        nt_fill: true,
        ..CopyStrategy::detect()
    };
    let no_simd = CopyStrategy {
        rep_movsb_from: 64,
        non_temporal_from: 1024,
        avx512: false,
        ..CopyStrategy::detect()
    };
    let mk = |strategy: Option<CopyStrategy>, be: BreakEven| {
        Engine::new(EngineOptions {
            workers: 1,
            break_even: be,
            strategy,
            ..EngineOptions::default()
        })
        .unwrap()
    };
    vec![
        mk(None, BreakEven::never_inline()),
        mk(Some(small.clone()), BreakEven::never_inline()),
        mk(Some(no_simd), BreakEven::never_inline()),
        mk(Some(small), BreakEven::always_inline()),
    ]
}

fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Runs `op` from `src` into a copy of `dst` on every engine; each result must equal
/// `expect` (or, when the reference says the op is invalid, be rejected with the buffer
/// untouched).
fn check(op: &Op, src: &[u8], dst: &[u8], expect: Result<Vec<u8>, ()>) {
    for engine in engines() {
        let mut ch = engine.channel(Priority::NORMAL);
        match (ch.enqueue(op.clone(), src.to_vec(), dst.to_vec()), &expect) {
            (Ok(t), Ok(want)) => {
                ch.submit();
                let (s, d) = t.wait().into_result().unwrap();
                assert_eq!(s, src, "source changed by {op:?}");
                assert!(d == *want, "wrong result for {op:?}");
            }
            (Err(rej), Err(())) => {
                assert_eq!(rej.buffers.1, dst, "rejected op wrote");
            }
            (Ok(_), Err(())) => panic!("{op:?} should have been rejected"),
            (Err(rej), Ok(_)) => panic!("{op:?} rejected: {}", rej.error),
        }
    }
}

fn in_bounds(off: usize, len: usize, buf: usize) -> bool {
    off.checked_add(len).is_some_and(|e| e <= buf)
}

fn ref_copy(src: &[u8], dst: &[u8], so: usize, d: usize, len: usize) -> Result<Vec<u8>, ()> {
    if !in_bounds(so, len, src.len()) || !in_bounds(d, len, dst.len()) {
        return Err(());
    }
    let mut out = dst.to_vec();
    out[d..d + len].copy_from_slice(&src[so..so + len]);
    Ok(out)
}

fn plane_end(off: usize, stride: usize, row: usize, rows: usize) -> usize {
    if row == 0 || rows == 0 {
        off
    } else {
        off + (rows - 1) * stride + row
    }
}

#[allow(clippy::too_many_arguments)]
fn ref_copy_2d(
    src: &[u8],
    dst: &[u8],
    so: usize,
    ss: usize,
    d: usize,
    ds: usize,
    row: usize,
    rows: usize,
) -> Result<Vec<u8>, ()> {
    if plane_end(so, ss, row, rows) > src.len() || plane_end(d, ds, row, rows) > dst.len() {
        return Err(());
    }
    if rows > 1 && row > 0 && ds < row {
        return Err(());
    }
    let mut out = dst.to_vec();
    // Zero-width rows touch nothing (and their offsets may lie past the end).
    for r in (0..rows).filter(|_| row > 0) {
        out[d + r * ds..d + r * ds + row].copy_from_slice(&src[so + r * ss..so + r * ss + row]);
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn ref_rotate(
    src: &[u8],
    dst: &[u8],
    so: usize,
    ss: usize,
    d: usize,
    ds: usize,
    w: usize,
    h: usize,
    b: usize,
    t: Transform,
) -> Result<Vec<u8>, ()> {
    let (ow, oh) = if t.swaps_axes() { (h, w) } else { (w, h) };
    if plane_end(so, ss, w * b, h) > src.len() || plane_end(d, ds, ow * b, oh) > dst.len() {
        return Err(());
    }
    if oh > 1 && ow > 0 && ds < ow * b {
        return Err(());
    }
    let mut out = dst.to_vec();
    for y in 0..h {
        for x in 0..w {
            let xm = if t.mirror { w - 1 - x } else { x };
            let (ox, oy) = match t.turn {
                Turn::R0 => (xm, y),
                Turn::R90 => (h - 1 - y, xm),
                Turn::R180 => (w - 1 - xm, h - 1 - y),
                Turn::R270 => (y, w - 1 - xm),
            };
            let from = so + y * ss + x * b;
            let to = d + oy * ds + ox * b;
            out[to..to + b].copy_from_slice(&src[from..from + b]);
        }
    }
    Ok(out)
}

fn transforms() -> impl Strategy<Value = Transform> {
    (0..4usize, any::<bool>()).prop_map(|(t, mirror)| Transform {
        turn: [Turn::R0, Turn::R90, Turn::R180, Turn::R270][t],
        mirror,
    })
}

fn item_sizes() -> impl Strategy<Value = usize> {
    prop_oneof![Just(1usize), Just(2), Just(4), Just(8), Just(16)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn copy_matches_reference(
        src_len in 0usize..20_000, dst_len in 0usize..20_000,
        so in 0usize..200, d in 0usize..200, len in 0usize..20_000, seed in any::<u64>(),
    ) {
        let (src, dst) = (noise(src_len, seed), noise(dst_len, !seed));
        let op = Op::Copy { src: so, dst: d, len };
        check(&op, &src, &dst, ref_copy(&src, &dst, so, d, len));
    }

    #[test]
    fn fill_matches_reference(
        dst_len in 0usize..20_000, d in 0usize..200, len in 0usize..20_000,
        pat in proptest::collection::vec(any::<u8>(), 1..=16), seed in any::<u64>(),
    ) {
        let dst = noise(dst_len, seed);
        let op = Op::Fill { dst: d, len, pattern: Pattern::new(&pat).unwrap() };
        let expect = if in_bounds(d, len, dst_len) {
            let mut out = dst.clone();
            for i in 0..len {
                out[d + i] = pat[i % pat.len()];
            }
            Ok(out)
        } else {
            Err(())
        };
        check(&op, &[], &dst, expect);
    }

    #[test]
    fn copy_2d_matches_reference(
        row in 0usize..300, rows in 0usize..40, sgap in 0usize..70, dgap in 0usize..70,
        so in 0usize..100, d in 0usize..100, short in 0usize..3, seed in any::<u64>(),
    ) {
        // Sometimes a destination stride shorter than a row (must be rejected), and buffers
        // sometimes a little too short (out of bounds).
        let ds = if short == 0 { row / 2 } else { row + dgap };
        let ss = row + sgap;
        let src_len = plane_end(so, ss, row, rows) + sgap % 3 - usize::from(sgap % 5 == 0 && plane_end(so, ss, row, rows) > 0);
        let dst_len = plane_end(d, ds, row, rows) + dgap % 3;
        let (src, dst) = (noise(src_len, seed), noise(dst_len, !seed));
        let op = Op::Copy2d {
            src: Plane { offset: so, stride: ss },
            dst: Plane { offset: d, stride: ds },
            row_bytes: row,
            rows,
        };
        check(&op, &src, &dst, ref_copy_2d(&src, &dst, so, ss, d, ds, row, rows));
    }

    #[test]
    fn rotate_matches_reference(
        w in 0usize..70, h in 0usize..70, b in item_sizes(), t in transforms(),
        sgap in 0usize..40, dgap in 0usize..40, so in 0usize..50, d in 0usize..50,
        trim in 0usize..4, seed in any::<u64>(),
    ) {
        let (ow, oh) = if t.swaps_axes() { (h, w) } else { (w, h) };
        let (ss, ds) = (w * b + sgap, ow * b + dgap);
        let src_len = plane_end(so, ss, w * b, h);
        // trim == 0: one byte short of the destination (rejected unless empty).
        let dst_len = plane_end(d, ds, ow * b, oh).saturating_sub(usize::from(trim == 0));
        let (src, dst) = (noise(src_len, seed), noise(dst_len, !seed));
        let op = Op::Rotate {
            src: Plane { offset: so, stride: ss },
            dst: Plane { offset: d, stride: ds },
            width: w,
            height: h,
            item: ItemSize::from_bytes(b).unwrap(),
            transform: t,
        };
        check(&op, &src, &dst, ref_rotate(&src, &dst, so, ss, d, ds, w, h, b, t));
    }

    #[test]
    fn keyed_copy_matches_reference(
        n in 0usize..3000, b in item_sizes(), so in 0usize..40, d in 0usize..40,
        ragged in 0usize..4, seed in any::<u64>(),
    ) {
        let len = n * b + usize::from(ragged == 0 && b > 1);
        let mut src = noise(so + len, seed);
        // Make about a third of the items equal to the key.
        let key: Vec<u8> = noise(b, seed ^ 7);
        for i in (0..n).step_by(3) {
            src[so + i * b..so + i * b + b].copy_from_slice(&key);
        }
        let dst = noise(d + len, !seed);
        let mut k = [0u8; 16];
        k[..b].copy_from_slice(&key);
        let op = Op::KeyedCopy { src: so, dst: d, len, item: ItemSize::from_bytes(b).unwrap(), key: k };
        let expect = if len % b != 0 {
            Err(())
        } else {
            let mut out = dst.clone();
            for i in 0..n {
                let item = &src[so + i * b..so + i * b + b];
                if item != key.as_slice() {
                    out[d + i * b..d + i * b + b].copy_from_slice(item);
                }
            }
            Ok(out)
        };
        check(&op, &src, &dst, expect);
    }

    #[test]
    fn sg_matches_reference(
        src_lens in proptest::collection::vec(0usize..3000, 0..8),
        cuts in proptest::collection::vec(0usize..3000, 0..8),
        gap in 0usize..50, extra in 0usize..3, seed in any::<u64>(),
    ) {
        // Source segments laid out with gaps, in a shuffled order of offsets.
        let mut src_list = Vec::new();
        let mut off = gap;
        for &l in src_lens.iter().rev() {
            src_list.push(Segment { offset: off, len: l });
            off += l + gap;
        }
        src_list.reverse();
        let total: usize = src_lens.iter().sum();
        // Destination segments: the same total cut at random points (+extra to mismatch).
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (total + 1)).collect();
        points.push(0);
        points.push(total + usize::from(extra == 0));
        points.sort_unstable();
        let mut dst_list = Vec::new();
        let mut doff = 3;
        for p in points.windows(2) {
            dst_list.push(Segment { offset: doff, len: p[1] - p[0] });
            doff += p[1] - p[0] + gap / 2;
        }
        let src = noise(off, seed);
        let dst = noise(doff, !seed);
        let dst_total: usize = dst_list.iter().map(|s| s.len).sum();
        let expect = if dst_total != total {
            Err(())
        } else {
            let gathered: Vec<u8> = src_list.iter().flat_map(|s| src[s.offset..s.offset + s.len].to_vec()).collect();
            let mut out = dst.clone();
            let mut i = 0;
            for s in &dst_list {
                out[s.offset..s.offset + s.len].copy_from_slice(&gathered[i..i + s.len]);
                i += s.len;
            }
            Ok(out)
        };
        check(&Op::Sg { src: src_list, dst: dst_list }, &src, &dst, expect);
    }
}

proptest! {
    // Rotations big enough for the engine's tall blocks (128 output rows) and their edges.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn larger_rotations_match_reference(
        w in 100usize..300, h in 100usize..300, b in item_sizes(), t in transforms(),
        sgap in 0usize..20, so in 0usize..20, seed in any::<u64>(),
    ) {
        let (ow, oh) = if t.swaps_axes() { (h, w) } else { (w, h) };
        let (ss, ds) = (w * b + sgap, ow * b);
        let src = noise(plane_end(so, ss, w * b, h), seed);
        let dst = noise(ds * oh, !seed);
        let op = Op::Rotate {
            src: Plane { offset: so, stride: ss },
            dst: Plane { offset: 0, stride: ds },
            width: w,
            height: h,
            item: ItemSize::from_bytes(b).unwrap(),
            transform: t,
        };
        check(&op, &src, &dst, ref_rotate(&src, &dst, so, ss, 0, ds, w, h, b, t));
    }
}

proptest! {
    // Regions up to 16 MiB: few cases, they are big.
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    #[test]
    fn large_copies_fills_and_transposes(
        len in (1usize << 20)..(16usize << 20), so in 0usize..64, d in 0usize..64,
        side in 256usize..1024, seed in any::<u64>(),
    ) {
        let src = noise(len + so, seed);
        let dst = noise(len + d, !seed);
        check(&Op::Copy { src: so, dst: d, len }, &src, &dst, ref_copy(&src, &dst, so, d, len));
        let mut want = dst.clone();
        for (i, x) in want[d..].iter_mut().enumerate() {
            *x = b"0123456789abc"[i % 13];
        }
        check(
            &Op::Fill { dst: d, len, pattern: Pattern::new(b"0123456789abc").unwrap() },
            &[],
            &dst,
            Ok(want),
        );
        let (w, h, b) = (side, side + 3, 8);
        let src = noise(w * h * b + so, seed);
        let dst = noise(w * h * b, seed);
        let op = Op::Rotate {
            src: Plane { offset: so, stride: w * b },
            dst: Plane { offset: 0, stride: h * b },
            width: w,
            height: h,
            item: ItemSize::B8,
            transform: Transform::TRANSPOSE,
        };
        check(&op, &src, &dst, ref_rotate(&src, &dst, so, w * b, 0, h * b, w, h, b, Transform::TRANSPOSE));
    }
}

#[test]
fn transpose_is_mirror_then_270() {
    // out[x][y] = in[y][x] on a 3 × 2 image.
    let engine = Engine::with_defaults().unwrap();
    let mut ch = engine.channel(Priority::NORMAL);
    let src: Vec<u32> = vec![1, 2, 3, 4, 5, 6];
    let t = ch
        .rotate(src, vec![0u32; 6], 3, 2, ItemSize::B4, Transform::TRANSPOSE)
        .unwrap();
    ch.submit();
    let (_, d) = t.wait().into_result().unwrap();
    assert_eq!(d, vec![1, 4, 2, 5, 3, 6]);
    let t = ch
        .rotate(
            vec![1u8, 2, 3, 4, 5, 6],
            vec![0u8; 6],
            3,
            2,
            ItemSize::B1,
            Transform::turn(Turn::R90),
        )
        .unwrap();
    ch.submit();
    // 1 2 3        4 1
    // 4 5 6   ->   5 2
    //              6 3
    assert_eq!(t.wait().into_result().unwrap().1, vec![4, 1, 5, 2, 6, 3]);
}

#[test]
fn overlapping_regions_in_one_buffer_are_rejected_before_writing() {
    let engine = Engine::with_defaults().unwrap();
    let mut ch = engine.channel(Priority::NORMAL);
    let buf: Vec<u8> = (0..=255).collect();
    let rej = ch
        .enqueue_within(
            Op::Copy {
                src: 0,
                dst: 10,
                len: 11,
            },
            buf.clone(),
        )
        .unwrap_err();
    assert_eq!(rej.error, CopyError::Overlap);
    assert_eq!(rej.buffers, buf);
    // Touching but not overlapping is fine.
    let t = ch
        .enqueue_within(
            Op::Copy {
                src: 0,
                dst: 10,
                len: 10,
            },
            buf.clone(),
        )
        .unwrap();
    ch.submit();
    let out = t.wait().into_result().unwrap();
    assert_eq!(&out[10..20], &buf[0..10]);
    // A 2-D copy whose destination rows interleave with the source rows.
    let op = Op::Copy2d {
        src: Plane {
            offset: 0,
            stride: 32,
        },
        dst: Plane {
            offset: 16,
            stride: 32,
        },
        row_bytes: 8,
        rows: 4,
    };
    assert_eq!(
        ch.enqueue_within(op, buf.clone()).unwrap_err().error,
        CopyError::Overlap
    );
    // Two scatter segments that overlap each other.
    let op = Op::Sg {
        src: vec![Segment { offset: 0, len: 8 }],
        dst: vec![
            Segment {
                offset: 100,
                len: 4,
            },
            Segment {
                offset: 102,
                len: 4,
            },
        ],
    };
    assert_eq!(
        ch.enqueue(op, buf.clone(), buf.clone()).unwrap_err().error,
        CopyError::Overlap
    );
}

#[test]
fn raw_regions_that_overlap_are_rejected() {
    let engine = Engine::with_defaults().unwrap();
    let mut ch = engine.channel(Priority::NORMAL);
    let mut mem = vec![7u8; 4096];
    let p = mem.as_mut_ptr();
    // SAFETY: `mem` outlives the channel use below and is not touched until the tickets end.
    let (a, b) = unsafe {
        (
            sluice_copy::RawRegion::new(p, 2048),
            sluice_copy::RawRegion::new(p.add(1024), 2048),
        )
    };
    let rej = ch.copy(a, b).unwrap_err();
    assert_eq!(rej.error, CopyError::Overlap);
    // SAFETY: as above; the halves are disjoint.
    let (a, b) = unsafe {
        (
            sluice_copy::RawRegion::new(p, 2048),
            sluice_copy::RawRegion::new(p.add(2048), 2048),
        )
    };
    let t = ch.fill(b, Pattern::byte(9)).unwrap();
    ch.submit();
    t.wait().into_result().unwrap();
    let _ = a;
    assert!(mem[..2048].iter().all(|&x| x == 7));
    assert!(mem[2048..].iter().all(|&x| x == 9));
}

#[test]
fn bad_parameters_are_typed_errors() {
    assert_eq!(Pattern::new(&[]).unwrap_err(), CopyError::BadPattern(0));
    assert_eq!(
        Pattern::new(&[0; 17]).unwrap_err(),
        CopyError::BadPattern(17)
    );
    assert_eq!(
        ItemSize::from_bytes(3).unwrap_err(),
        CopyError::BadItemSize(3)
    );
    let engine = Engine::with_defaults().unwrap();
    let mut ch = engine.channel(Priority::NORMAL);
    let rej = ch
        .keyed_copy(vec![0u8; 8], vec![0u8; 8], &[1, 2, 3])
        .unwrap_err();
    assert_eq!(rej.error, CopyError::BadItemSize(3));
    let op = Op::Copy {
        src: usize::MAX,
        dst: 0,
        len: 2,
    };
    assert!(matches!(
        ch.enqueue(op, vec![0u8; 8], vec![0u8; 8])
            .unwrap_err()
            .error,
        CopyError::Overflow { .. }
    ));
    let rej = ch.copy(vec![0u8; 9], vec![0u8; 8]).unwrap_err();
    assert_eq!(
        rej.error,
        CopyError::OutOfBounds {
            side: sluice_copy::Side::Destination,
            end: 9,
            len: 8
        }
    );
}

#[test]
fn aligned_rotations_of_whole_blocks_match_reference() {
    // 64-byte aligned destinations with line-multiple strides take the in-register
    // transpose with streaming stores; check all eight transforms on 4- and 8-byte items.
    let engine = Engine::new(EngineOptions {
        break_even: BreakEven::never_inline(),
        ..EngineOptions::default()
    })
    .unwrap();
    let mut ch = engine.channel(Priority::NORMAL);
    for (w, h) in [(64usize, 48usize), (80, 96), (33, 70), (128, 192)] {
        for b in [1usize, 2, 4, 8, 16] {
            for t in 0..8 {
                let t = Transform {
                    turn: [Turn::R0, Turn::R90, Turn::R180, Turn::R270][t % 4],
                    mirror: t >= 4,
                };
                let src = noise(w * h * b, (w * 31 + b) as u64);
                let mut dst = sluice_copy::AlignedBuf::zeroed(w * h * b);
                dst.as_mut_slice().copy_from_slice(&noise(w * h * b, 5));
                let before = dst.as_slice().to_vec();
                let item = ItemSize::from_bytes(b).unwrap();
                let ticket = ch.rotate(src.clone(), dst, w, h, item, t).unwrap();
                ch.submit();
                let (_, got) = ticket.wait().into_result().unwrap();
                let (ow, _) = if t.swaps_axes() { (h, w) } else { (w, h) };
                let want = ref_rotate(&src, &before, 0, w * b, 0, ow * b, w, h, b, t).unwrap();
                assert!(got.as_slice() == want.as_slice(), "{w}x{h} item {b} {t:?}");
            }
        }
    }
}
