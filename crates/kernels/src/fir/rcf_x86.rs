//! The AVX2+FMA kernel of [`super::rcf`]: real taps on interleaved complex items, 12
//! accumulators of 4 complex outputs, two taps per step (see that module for the scheme).
//!
//! There is no AVX-512 kernel: the machines this was measured on do not expose AVX-512 to
//! their guests, so such a kernel could not be tested or timed here; and on the AMD Zen 4
//! CPUs they run on, 512-bit multiply-adds issue as two 256-bit halves, so the peak rate is
//! the same. CPUs with AVX-512 run this kernel.

use super::rcf::{tail, Phases};
use std::arch::x86_64::*;

/// Complex items per vector.
pub(super) const C: usize = 4;

/// Accumulators (vectors of outputs) per block: 12 plus two broadcast taps and one data
/// vector fill 15 of the 16 registers.
const R: usize = 12;

/// Filters `out.len()/2` outputs from `x` with `taps` laid out for `C`-item vectors.
///
/// # Safety
/// The CPU must support avx2 and fma; `x` must hold at least `out.len()/2 + taps − 1`
/// complex items (`2×` that many floats).
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn run(taps: &Phases<'_>, x: &[f32], out: &mut [f32]) {
    let n = out.len() / 2;
    let blk = C * R;
    let full = n / blk * blk;
    let mut b = 0;
    while b < full {
        let mut acc = [_mm256_setzero_ps(); R];
        for s in 0..taps.count {
            let t = taps.phase(s);
            // Vector j of phase s holds items b + s + C·j …: accumulator r at tap q reads
            // vector q + r, the last one read is b + s + C·(len − 1 + R − 1) + C − 1 =
            // b + blk − 1 + k_max ≤ n − 1 + taps − 1, inside `x` (the caller's contract).
            let px = x.as_ptr().wrapping_add(2 * (b + s));
            let mut q = 0;
            while q + 2 <= t.len() {
                // SAFETY: vectors q .. q + R of this phase are inside `x` (see above), and
                // q + 1 < t.len(); unaligned loads.
                unsafe {
                    let t0 = _mm256_set1_ps(*t.get_unchecked(q));
                    let t1 = _mm256_set1_ps(*t.get_unchecked(q + 1));
                    let p = px.add(2 * C * q);
                    let mut d = _mm256_loadu_ps(p);
                    acc[0] = _mm256_fmadd_ps(t0, d, acc[0]);
                    for r in 1..R {
                        d = _mm256_loadu_ps(p.add(2 * C * r));
                        acc[r] = _mm256_fmadd_ps(t0, d, acc[r]);
                        acc[r - 1] = _mm256_fmadd_ps(t1, d, acc[r - 1]);
                    }
                    d = _mm256_loadu_ps(p.add(2 * C * R));
                    acc[R - 1] = _mm256_fmadd_ps(t1, d, acc[R - 1]);
                }
                q += 2;
            }
            if q < t.len() {
                // SAFETY: vectors q .. q + R − 1 are inside `x` (see above); unaligned loads.
                unsafe {
                    let t0 = _mm256_set1_ps(t[q]);
                    let p = px.add(2 * C * q);
                    for (r, a) in acc.iter_mut().enumerate() {
                        *a = _mm256_fmadd_ps(t0, _mm256_loadu_ps(p.add(2 * C * r)), *a);
                    }
                }
            }
        }
        let o = &mut out[2 * b..2 * (b + blk)];
        for (r, a) in acc.iter().enumerate() {
            // SAFETY: `o` holds 2·C·R floats; vector r is o[2·C·r .. 2·C·(r + 1)].
            unsafe { _mm256_storeu_ps(o.as_mut_ptr().add(2 * C * r), *a) };
        }
        b += blk;
    }
    // The tail in the same order, with the same (fused) multiply-add as the vectors.
    tail(taps, C, x, out, full, |acc, t, v| t.mul_add(v, acc));
}
