//! The AVX2+FMA kernel of [`super::fm_demod`]: 8 samples per vector, deinterleaved into real
//! and imaginary parts, the conjugate product, the arctangent of the module docs (its
//! polynomial evaluated by Estrin's scheme, so the dependency chain is 3 multiply-adds deep
//! rather than 4), the gain; two vectors per step keep both FMA pipes busy.
//! `demod512` is the same with 16 samples per vector and mask selects, for AVX-512 CPUs.

use super::fm_demod::ATAN;
use num_complex::Complex32;
use std::arch::x86_64::*;
use std::f32::consts::{FRAC_PI_2, PI};

/// `out[i] = gain · arg(cur[i] · conj(prev[i]))` for every `i < out.len()`.
///
/// # Safety
/// The CPU must support avx2 and fma; `cur` and `prev` must hold `out.len()` samples.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn demod(gain: f32, cur: &[Complex32], prev: &[Complex32], out: &mut [f32]) {
    let n = out.len();
    assert!(
        cur.len() >= n && prev.len() >= n,
        "fm: inputs shorter than the output"
    );
    let full = n / 16 * 16;
    let (pc, pp, po) = (
        cur.as_ptr().cast::<f32>(),
        prev.as_ptr().cast::<f32>(),
        out.as_mut_ptr(),
    );
    let mut i = 0;
    while i < full {
        // SAFETY: i + 16 ≤ n ≤ cur.len(), prev.len(): 32 floats readable at 2i in each, and
        // 16 writable at i in `out`.
        unsafe {
            let y0 = octet(gain, pc.add(2 * i), pp.add(2 * i));
            let y1 = octet(gain, pc.add(2 * i + 16), pp.add(2 * i + 16));
            _mm256_storeu_ps(po.add(i), y0);
            _mm256_storeu_ps(po.add(i + 8), y1);
        }
        i += 16;
    }
    if full < n {
        // The remainder through the same octets on zero-padded copies: a sample's bits must
        // not depend on where a work call cut the stream (clusters and failover compare runs
        // bit for bit).
        let (c, p) = (padded(&cur[full..n]), padded(&prev[full..n]));
        let mut y = [0.0f32; 16];
        // SAFETY: `c` and `p` hold 16 complex (32 floats) each; `y` 16 floats.
        unsafe {
            let (pc, pp) = (c.as_ptr().cast::<f32>(), p.as_ptr().cast::<f32>());
            _mm256_storeu_ps(y.as_mut_ptr(), octet(gain, pc, pp));
            _mm256_storeu_ps(y.as_mut_ptr().add(8), octet(gain, pc.add(16), pp.add(16)));
        }
        out[full..].copy_from_slice(&y[..n - full]);
    }
}

/// Up to 16 samples, zero-padded to 16.
fn padded(x: &[Complex32]) -> [Complex32; 16] {
    let mut block = [Complex32::default(); 16];
    block[..x.len()].copy_from_slice(x);
    block
}

/// Eight samples: `cur` and `prev` point at 16 floats each (8 interleaved complex).
///
/// # Safety
/// avx2 and fma; 16 floats readable behind each pointer.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn octet(gain: f32, cur: *const f32, prev: *const f32) -> __m256 {
    // SAFETY: 16 floats behind each pointer (the caller's contract); unaligned loads.
    let (a0, a1, b0, b1) = unsafe {
        (
            _mm256_loadu_ps(cur),
            _mm256_loadu_ps(cur.add(8)),
            _mm256_loadu_ps(prev),
            _mm256_loadu_ps(prev.add(8)),
        )
    };
    let sign = _mm256_set1_ps(-0.0);
    // Lanes in the order 0 1 4 5 2 3 6 7 (shuffles work within 128-bit halves).
    let ar = _mm256_shuffle_ps::<0b10_00_10_00>(a0, a1);
    let ai = _mm256_shuffle_ps::<0b11_01_11_01>(a0, a1);
    let br = _mm256_shuffle_ps::<0b10_00_10_00>(b0, b1);
    let bi = _mm256_shuffle_ps::<0b11_01_11_01>(b0, b1);
    let re = _mm256_fmadd_ps(ar, br, _mm256_mul_ps(ai, bi));
    let im = _mm256_fmsub_ps(ai, br, _mm256_mul_ps(ar, bi));
    let (ax, ay) = (_mm256_andnot_ps(sign, re), _mm256_andnot_ps(sign, im));
    let swap = _mm256_cmp_ps::<_CMP_GT_OQ>(ay, ax);
    let lo = _mm256_blendv_ps(ay, ax, swap);
    let hi = _mm256_max_ps(
        _mm256_blendv_ps(ax, ay, swap),
        _mm256_set1_ps(f32::MIN_POSITIVE),
    );
    // lo / hi with the reciprocal estimate (12 bits) and one Newton step (~23 bits).
    let r0 = _mm256_rcp_ps(hi);
    let r = _mm256_mul_ps(r0, _mm256_fnmadd_ps(hi, r0, _mm256_set1_ps(2.0)));
    let t = _mm256_mul_ps(lo, r);
    // P(u) = (c0 + c1·u) + u²·(c2 + c3·u) + u⁴·c4, u = t².
    let c = |k: usize| _mm256_set1_ps(ATAN[k]);
    let u = _mm256_mul_ps(t, t);
    let u2 = _mm256_mul_ps(u, u);
    let u4 = _mm256_mul_ps(u2, u2);
    let p01 = _mm256_fmadd_ps(c(1), u, c(0));
    let p23 = _mm256_fmadd_ps(c(3), u, c(2));
    let p = _mm256_fmadd_ps(u4, c(4), _mm256_fmadd_ps(u2, p23, p01));
    let mut a = _mm256_mul_ps(p, t);
    a = _mm256_blendv_ps(a, _mm256_sub_ps(_mm256_set1_ps(FRAC_PI_2), a), swap);
    let west = _mm256_cmp_ps::<_CMP_LT_OQ>(re, _mm256_setzero_ps());
    a = _mm256_blendv_ps(a, _mm256_sub_ps(_mm256_set1_ps(PI), a), west);
    let south = _mm256_cmp_ps::<_CMP_LT_OQ>(im, _mm256_setzero_ps());
    a = _mm256_blendv_ps(a, _mm256_xor_ps(a, sign), south);
    // Back to 0 … 7: move the 64-bit pairs (0 1)(4 5)(2 3)(6 7) into order.
    _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(
        _mm256_mul_ps(a, _mm256_set1_ps(gain)),
    )))
}

/// [`demod`] with 16 samples per vector (AVX-512F): the same arithmetic, selects by mask.
///
/// # Safety
/// The CPU must support avx512f, avx2 and fma; `cur` and `prev` must hold `out.len()` samples.
#[target_feature(enable = "avx512f,avx2,fma")]
pub(super) unsafe fn demod512(gain: f32, cur: &[Complex32], prev: &[Complex32], out: &mut [f32]) {
    let n = out.len();
    assert!(
        cur.len() >= n && prev.len() >= n,
        "fm: inputs shorter than the output"
    );
    let full = n / 16 * 16;
    let (pc, pp, po) = (
        cur.as_ptr().cast::<f32>(),
        prev.as_ptr().cast::<f32>(),
        out.as_mut_ptr(),
    );
    let mut i = 0;
    while i < full {
        // SAFETY: i + 16 ≤ n ≤ cur.len(), prev.len(): 32 floats readable at 2i in each, and
        // 16 writable at i in `out`.
        unsafe {
            let y = sixteen(gain, pc.add(2 * i), pp.add(2 * i));
            _mm512_storeu_ps(po.add(i), y);
        }
        i += 16;
    }
    if full < n {
        // The remainder through the same kernel, zero-padded (see `demod`).
        let (c, p) = (padded(&cur[full..n]), padded(&prev[full..n]));
        let mut y = [0.0f32; 16];
        // SAFETY: `c` and `p` hold 16 complex (32 floats) each; `y` 16 floats.
        unsafe {
            let (pc, pp) = (c.as_ptr().cast::<f32>(), p.as_ptr().cast::<f32>());
            _mm512_storeu_ps(y.as_mut_ptr(), sixteen(gain, pc, pp));
        }
        out[full..].copy_from_slice(&y[..n - full]);
    }
}

/// Sixteen samples: `cur` and `prev` point at 32 floats each (16 interleaved complex).
///
/// # Safety
/// avx512f; 32 floats readable behind each pointer.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn sixteen(gain: f32, cur: *const f32, prev: *const f32) -> __m512 {
    // SAFETY: 32 floats behind each pointer (the caller's contract); unaligned loads.
    let (a0, a1, b0, b1) = unsafe {
        (
            _mm512_loadu_ps(cur),
            _mm512_loadu_ps(cur.add(16)),
            _mm512_loadu_ps(prev),
            _mm512_loadu_ps(prev.add(16)),
        )
    };
    // Lanes in the order 0 1 8 9 2 3 10 11 4 5 12 13 6 7 14 15 (shuffles stay in 128 bits).
    let ar = _mm512_shuffle_ps::<0b10_00_10_00>(a0, a1);
    let ai = _mm512_shuffle_ps::<0b11_01_11_01>(a0, a1);
    let br = _mm512_shuffle_ps::<0b10_00_10_00>(b0, b1);
    let bi = _mm512_shuffle_ps::<0b11_01_11_01>(b0, b1);
    let re = _mm512_fmadd_ps(ar, br, _mm512_mul_ps(ai, bi));
    let im = _mm512_fmsub_ps(ai, br, _mm512_mul_ps(ar, bi));
    let (ax, ay) = (_mm512_abs_ps(re), _mm512_abs_ps(im));
    let swap = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(ay, ax);
    let lo = _mm512_mask_blend_ps(swap, ay, ax);
    let hi = _mm512_max_ps(
        _mm512_mask_blend_ps(swap, ax, ay),
        _mm512_set1_ps(f32::MIN_POSITIVE),
    );
    // lo / hi with the reciprocal estimate (14 bits) and one Newton step.
    let r0 = _mm512_rcp14_ps(hi);
    let r = _mm512_mul_ps(r0, _mm512_fnmadd_ps(hi, r0, _mm512_set1_ps(2.0)));
    let t = _mm512_mul_ps(lo, r);
    let c = |k: usize| _mm512_set1_ps(ATAN[k]);
    let u = _mm512_mul_ps(t, t);
    let u2 = _mm512_mul_ps(u, u);
    let u4 = _mm512_mul_ps(u2, u2);
    let p01 = _mm512_fmadd_ps(c(1), u, c(0));
    let p23 = _mm512_fmadd_ps(c(3), u, c(2));
    let p = _mm512_fmadd_ps(u4, c(4), _mm512_fmadd_ps(u2, p23, p01));
    let mut a = _mm512_mul_ps(p, t);
    a = _mm512_mask_sub_ps(a, swap, _mm512_set1_ps(FRAC_PI_2), a);
    let west = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(re, _mm512_setzero_ps());
    a = _mm512_mask_sub_ps(a, west, _mm512_set1_ps(PI), a);
    let south = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(im, _mm512_setzero_ps());
    a = _mm512_mask_sub_ps(a, south, _mm512_setzero_ps(), a);
    // Back to 0 … 15: lane i takes the element that holds sample i.
    let order = _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    _mm512_permutexvar_ps(order, _mm512_mul_ps(a, _mm512_set1_ps(gain)))
}
