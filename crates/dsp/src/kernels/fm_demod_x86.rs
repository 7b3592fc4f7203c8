//! The AVX2+FMA kernel of [`super::fm_demod`]: 8 samples per step, deinterleaved into real and
//! imaginary vectors, the conjugate product, the arctangent of the module docs, the gain.
//! (No AVX-512 kernel: see `fir_rcf_x86.rs`; CPUs with AVX-512 run this one.)

use super::fm_demod::{demod_lanes, ATAN};
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
    let full = n / 8 * 8;
    let (pc, pp) = (cur.as_ptr().cast::<f32>(), prev.as_ptr().cast::<f32>());
    let sign = _mm256_set1_ps(-0.0);
    let zero = _mm256_setzero_ps();
    let tiny = _mm256_set1_ps(f32::MIN_POSITIVE);
    let (half_pi, pi, g) = (
        _mm256_set1_ps(FRAC_PI_2),
        _mm256_set1_ps(PI),
        _mm256_set1_ps(gain),
    );
    let mut i = 0;
    while i < full {
        // SAFETY: i + 8 ≤ n ≤ cur.len(), prev.len(): 16 floats readable at 2i in each, and 8
        // writable at i in `out`; unaligned accesses.
        unsafe {
            let (a0, a1) = (
                _mm256_loadu_ps(pc.add(2 * i)),
                _mm256_loadu_ps(pc.add(2 * i + 8)),
            );
            let (b0, b1) = (
                _mm256_loadu_ps(pp.add(2 * i)),
                _mm256_loadu_ps(pp.add(2 * i + 8)),
            );
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
            let hi = _mm256_max_ps(_mm256_blendv_ps(ax, ay, swap), tiny);
            let t = _mm256_div_ps(lo, hi);
            let u = _mm256_mul_ps(t, t);
            let mut p = _mm256_set1_ps(ATAN[6]);
            for &c in ATAN[..6].iter().rev() {
                p = _mm256_fmadd_ps(p, u, _mm256_set1_ps(c));
            }
            let mut a = _mm256_mul_ps(p, t);
            a = _mm256_blendv_ps(a, _mm256_sub_ps(half_pi, a), swap);
            a = _mm256_blendv_ps(
                a,
                _mm256_sub_ps(pi, a),
                _mm256_cmp_ps::<_CMP_LT_OQ>(re, zero),
            );
            a = _mm256_blendv_ps(
                a,
                _mm256_xor_ps(a, sign),
                _mm256_cmp_ps::<_CMP_LT_OQ>(im, zero),
            );
            // Back to 0 … 7: move the 64-bit pairs (0 1)(4 5)(2 3)(6 7) into order.
            let y = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(
                _mm256_mul_ps(a, g),
            )));
            _mm256_storeu_ps(out.as_mut_ptr().add(i), y);
        }
        i += 8;
    }
    demod_lanes::<true>(gain, &cur[full..n], &prev[full..n], &mut out[full..]);
}
