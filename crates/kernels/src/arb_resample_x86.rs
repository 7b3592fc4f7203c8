//! The AVX-512 and AVX2+FMA inner products of [`super::arb_resample`]: per output, the three
//! coefficient vectors of its interval against one window of interleaved complex input, each
//! input vector loaded once and used by three multiply-adds, then `X·c0 + a·(X·c1 + a·X·c2)`
//! in the vector and one reduction to the even (real) and odd (imaginary) lane sums.
//!
//! Both are written with `std::arch`: the portable loop did not vectorise across the three
//! sums. The AVX-512 loop is the default on CPUs that have it: on the Xeon (Sapphire Rapids
//! class) this was measured on, 75 against 66 million input samples per second of CPU time
//! at ratio 1.37 (`arb_timing` in `arb_resample.rs`; portable: 7.7).
//!
//! Loads go through [`load`], not `_mm512_loadu_ps`/`_mm256_loadu_ps`: those are written as
//! `copy_nonoverlapping`, whose precondition checks stay in builds with debug assertions (the
//! `test` profile the benchmarks are built with) and made every load a check, a store to the
//! stack and a reload: the whole loop ran at half speed.

use super::arb_resample::{run_with, Job, Operands, ORDER};
use num_complex::Complex32;
use std::arch::x86_64::*;

/// [`run_with`] with the AVX-512 inner products.
///
/// # Safety
/// The CPU must support avx512f, avx2 and fma.
#[target_feature(enable = "avx512f,avx2,fma")]
pub(super) unsafe fn run_avx512(
    job: &Job<'_>,
    at: &mut (usize, u64),
    out: &mut [Complex32],
) -> usize {
    run_with(
        // SAFETY: this closure runs inside a function compiled for (and only called on CPUs
        // with) avx512f, avx2 and fma; `run_with` hands it coefficients of ORDER·w floats
        // and a window of w floats, w a multiple of 16 (the taps are padded to 8).
        |op| unsafe { dot512(op) },
        // SAFETY: as above, for each of the four outputs.
        |ops, out| unsafe { dot4_512(ops, out) },
        job,
        at,
        out,
    )
}

/// [`run_with`] with the AVX2 inner products.
///
/// # Safety
/// The CPU must support avx2 and fma.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn run_avx2(
    job: &Job<'_>,
    at: &mut (usize, u64),
    out: &mut [Complex32],
) -> usize {
    run_with(
        // SAFETY: as in `run_avx512`, with avx2 and fma.
        |op| unsafe { dot256(op) },
        // SAFETY: as above, for each of the four outputs.
        |ops, out| unsafe { dot4_256(ops, out) },
        job,
        at,
        out,
    )
}

/// An unaligned vector at `p`: a read of a field of a packed struct (alignment 1), one
/// unaligned load with no debug-build checks.
///
/// # Safety
/// `p` is valid for reading `size_of::<V>()` bytes.
#[inline(always)]
unsafe fn load<V: Copy>(p: *const f32) -> V {
    #[repr(C, packed)]
    struct Unaligned<V>(V);
    // SAFETY: the caller's contract; `Unaligned<V>` has alignment 1.
    unsafe { (*p.cast::<Unaligned<V>>()).0 }
}

/// `[Σ_even, Σ_odd]` of `(t0 + a·(t1 + a·t2))·x`, `t = [t0 | t1 | t2]`.
///
/// # Safety
/// avx512f, avx2 and fma; `t.len() == ORDER·x.len()`, `x.len()` a multiple of 16.
#[inline(always)]
unsafe fn dot512((t, x, a): Operands<'_>) -> [f32; 2] {
    let w = x.len();
    let (pt, px) = (t.as_ptr(), x.as_ptr());
    // SAFETY: every load is at k < w with k + 16 ≤ w, in x, or at j·w + k in t (length 3w).
    unsafe {
        let mut acc = [_mm512_setzero_ps(); ORDER];
        let mut k = 0;
        while k < w {
            let xv = load::<__m512>(px.add(k));
            for (j, s) in acc.iter_mut().enumerate() {
                *s = _mm512_fmadd_ps(load::<__m512>(pt.add(j * w + k)), xv, *s);
            }
            k += 16;
        }
        let av = _mm512_set1_ps(a);
        let v = _mm512_fmadd_ps(_mm512_fmadd_ps(acc[2], av, acc[1]), av, acc[0]);
        // Lanes i and i + 8 (and i + 4, i + 2) have the same parity: fold down to one pair.
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
        pair(_mm256_add_ps(_mm512_castps512_ps256(v), hi))
    }
}

/// [`dot512`] with 8-float vectors.
///
/// # Safety
/// avx2 and fma; `t.len() == ORDER·x.len()`, `x.len()` a multiple of 16.
#[inline(always)]
unsafe fn dot256((t, x, a): Operands<'_>) -> [f32; 2] {
    let w = x.len();
    let (pt, px) = (t.as_ptr(), x.as_ptr());
    // SAFETY: every load is at k with k + 8 ≤ w, in x, or at j·w + k in t (length 3w).
    unsafe {
        let mut acc = [_mm256_setzero_ps(); ORDER];
        let mut k = 0;
        while k < w {
            let xv = load::<__m256>(px.add(k));
            for (j, s) in acc.iter_mut().enumerate() {
                *s = _mm256_fmadd_ps(load::<__m256>(pt.add(j * w + k)), xv, *s);
            }
            k += 8;
        }
        let av = _mm256_set1_ps(a);
        pair(_mm256_fmadd_ps(
            _mm256_fmadd_ps(acc[2], av, acc[1]),
            av,
            acc[0],
        ))
    }
}

/// `[e0 o0 e1 o1 | e2 o2 e3 o3]` to `[Σe, Σo]`, summed as [`store4`] sums (pairs 0 + 1,
/// 2 + 3, then those), so an output is the same whichever of the two computed it.
///
/// # Safety
/// avx2 (inlined into the functions above).
#[inline(always)]
unsafe fn pair(v: __m256) -> [f32; 2] {
    // SAFETY: the callers run with avx2.
    unsafe {
        // [p0 + p1, p1 + p0 | p2 + p3, p3 + p2] (pairs as 64-bit lanes; addition commutes).
        let s = _mm256_add_ps(v, _mm256_permute_ps::<0b0100_1110>(v));
        let h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps::<1>(s));
        [_mm_cvtss_f32(h), _mm_cvtss_f32(_mm_movehdup_ps(h))]
    }
}

/// Four outputs' [`dot512`]s, interleaved (twelve accumulators), reduced together and stored
/// as one vector.
///
/// # Safety
/// As for [`dot512`], for each of the four; all windows of one length.
#[inline(always)]
unsafe fn dot4_512(ops: [Operands<'_>; 4], out: &mut [Complex32; 4]) {
    let w = ops[0].1.len();
    // (No `array::map` or `from_fn` here: their closures would not inline into this
    // `target_feature` code, and the accumulators would live in memory.)
    let pt = [
        ops[0].0.as_ptr(),
        ops[1].0.as_ptr(),
        ops[2].0.as_ptr(),
        ops[3].0.as_ptr(),
    ];
    let px = [
        ops[0].1.as_ptr(),
        ops[1].1.as_ptr(),
        ops[2].1.as_ptr(),
        ops[3].1.as_ptr(),
    ];
    // SAFETY: as in `dot512`, for each output.
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); ORDER]; 4];
        let mut k = 0;
        while k < w {
            for g in 0..4 {
                let xv = load::<__m512>(px[g].add(k));
                for (j, s) in acc[g].iter_mut().enumerate() {
                    *s = _mm512_fmadd_ps(load::<__m512>(pt[g].add(j * w + k)), xv, *s);
                }
            }
            k += 16;
        }
        // Written out for each output (constant indices): a loop here was not unrolled, and
        // the accumulators were kept in memory.
        #[inline(always)]
        fn fold(s: &[__m512; ORDER], a: f32) -> __m256 {
            // SAFETY: inlined into `dot4_512`, which runs with avx512f and avx2.
            unsafe {
                let av = _mm512_set1_ps(a);
                let u = _mm512_fmadd_ps(_mm512_fmadd_ps(s[2], av, s[1]), av, s[0]);
                let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(u)));
                _mm256_add_ps(_mm512_castps512_ps256(u), hi)
            }
        }
        let v = [
            fold(&acc[0], ops[0].2),
            fold(&acc[1], ops[1].2),
            fold(&acc[2], ops[2].2),
            fold(&acc[3], ops[3].2),
        ];
        store4(v, out);
    }
}

/// [`dot4_512`] with 8-float vectors.
///
/// # Safety
/// As for [`dot256`], for each of the four; all windows of one length.
#[inline(always)]
unsafe fn dot4_256(ops: [Operands<'_>; 4], out: &mut [Complex32; 4]) {
    let w = ops[0].1.len();
    // (No `array::map` or `from_fn` here: their closures would not inline into this
    // `target_feature` code, and the accumulators would live in memory.)
    let pt = [
        ops[0].0.as_ptr(),
        ops[1].0.as_ptr(),
        ops[2].0.as_ptr(),
        ops[3].0.as_ptr(),
    ];
    let px = [
        ops[0].1.as_ptr(),
        ops[1].1.as_ptr(),
        ops[2].1.as_ptr(),
        ops[3].1.as_ptr(),
    ];
    // SAFETY: as in `dot256`, for each output.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); ORDER]; 4];
        let mut k = 0;
        while k < w {
            for g in 0..4 {
                let xv = load::<__m256>(px[g].add(k));
                for (j, s) in acc[g].iter_mut().enumerate() {
                    *s = _mm256_fmadd_ps(load::<__m256>(pt[g].add(j * w + k)), xv, *s);
                }
            }
            k += 8;
        }
        // As in `dot4_512`.
        #[inline(always)]
        fn fold(s: &[__m256; ORDER], a: f32) -> __m256 {
            // SAFETY: inlined into `dot4_256`, which runs with avx2 and fma.
            unsafe {
                let av = _mm256_set1_ps(a);
                _mm256_fmadd_ps(_mm256_fmadd_ps(s[2], av, s[1]), av, s[0])
            }
        }
        let v = [
            fold(&acc[0], ops[0].2),
            fold(&acc[1], ops[1].2),
            fold(&acc[2], ops[2].2),
            fold(&acc[3], ops[3].2),
        ];
        store4(v, out);
    }
}

/// Four vectors `[e0 o0 e1 o1 | e2 o2 e3 o3]` reduced to their `[Σe, Σo]` pairs, stored as
/// four complex outputs: two unpacks, a cross-lane permute and three adds for all four.
///
/// # Safety
/// avx2 (inlined into the functions above).
#[inline(always)]
unsafe fn store4(v: [__m256; 4], out: &mut [Complex32; 4]) {
    #[repr(C, packed)]
    struct Unaligned(__m256);
    // SAFETY: the callers run with avx2; `out` is 32 bytes, written through a type of
    // alignment 1.
    unsafe {
        let (a, b) = (_mm256_castps_pd(v[0]), _mm256_castps_pd(v[1]));
        let (c, d) = (_mm256_castps_pd(v[2]), _mm256_castps_pd(v[3]));
        // [a.p0 b.p0 | a.p2 b.p2] + [a.p1 b.p1 | a.p3 b.p3], pairs as 64-bit lanes.
        let ab = _mm256_add_ps(
            _mm256_castpd_ps(_mm256_unpacklo_pd(a, b)),
            _mm256_castpd_ps(_mm256_unpackhi_pd(a, b)),
        );
        let cd = _mm256_add_ps(
            _mm256_castpd_ps(_mm256_unpacklo_pd(c, d)),
            _mm256_castpd_ps(_mm256_unpackhi_pd(c, d)),
        );
        let r = _mm256_add_ps(
            _mm256_permute2f128_ps::<0x20>(ab, cd),
            _mm256_permute2f128_ps::<0x31>(ab, cd),
        );
        (*out.as_mut_ptr().cast::<Unaligned>()).0 = r;
    }
}
