//! The x86 paths of [`super::cmac`]: AVX-512F (8 complex per vector) and AVX2+FMA (4).
//!
//! With `a = [ar, ai, …]` and `b = [br, bi, …]` interleaved:
//! `fmaddsub(a, dup_re(b), swap(a) · dup_im(b)) = [ar·br − ai·bi, ai·br + ar·bi, …]`.

use super::cmac::{scalar, Op};
use std::arch::x86_64::*;

/// AVX-512F path: 8 complex per iteration, the remainder through the scalar loop.
///
/// # Safety
/// The CPU must support avx512f; pointers as for `run_raw` (`n` complex = `2n` f32).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn avx512(op: Op, pa: *const f32, pb: *const f32, po: *mut f32, n: usize) {
    let vec_end = n - n % 8;
    let mut i = 0;
    while i < vec_end {
        // SAFETY: i + 8 <= n complex, i.e. 16 f32 readable/writable from offset 2i (caller);
        // loads happen before the store, so `po == pa` is fine; unaligned access is used.
        unsafe {
            let va = _mm512_loadu_ps(pa.add(2 * i));
            let vb = _mm512_loadu_ps(pb.add(2 * i));
            let re = _mm512_moveldup_ps(vb);
            let im = _mm512_movehdup_ps(vb);
            let sw = _mm512_permute_ps::<0xB1>(va);
            let prod = _mm512_fmaddsub_ps(va, re, _mm512_mul_ps(sw, im));
            let res = match op {
                Op::Mul => prod,
                Op::Mac => _mm512_add_ps(_mm512_loadu_ps(po.add(2 * i)), prod),
            };
            _mm512_storeu_ps(po.add(2 * i), res);
        }
        i += 8;
    }
    // SAFETY: same pointers and bounds as above, items vec_end..n.
    unsafe { scalar(op, pa.cast(), pb.cast(), po.cast(), vec_end, n) }
}

/// AVX2+FMA path: 4 complex per iteration, the remainder through the scalar loop.
///
/// # Safety
/// The CPU must support avx2 and fma; pointers as for `run_raw`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2(op: Op, pa: *const f32, pb: *const f32, po: *mut f32, n: usize) {
    let vec_end = n - n % 4;
    let mut i = 0;
    while i < vec_end {
        // SAFETY: i + 4 <= n complex, i.e. 8 f32 readable/writable from offset 2i (caller);
        // loads happen before the store, so `po == pa` is fine; unaligned access is used.
        unsafe {
            let va = _mm256_loadu_ps(pa.add(2 * i));
            let vb = _mm256_loadu_ps(pb.add(2 * i));
            let re = _mm256_moveldup_ps(vb);
            let im = _mm256_movehdup_ps(vb);
            let sw = _mm256_permute_ps::<0xB1>(va);
            let prod = _mm256_fmaddsub_ps(va, re, _mm256_mul_ps(sw, im));
            let res = match op {
                Op::Mul => prod,
                Op::Mac => _mm256_add_ps(_mm256_loadu_ps(po.add(2 * i)), prod),
            };
            _mm256_storeu_ps(po.add(2 * i), res);
        }
        i += 4;
    }
    // SAFETY: same pointers and bounds as above, items vec_end..n.
    unsafe { scalar(op, pa.cast(), pb.cast(), po.cast(), vec_end, n) }
}
