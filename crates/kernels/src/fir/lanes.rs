//! Multi-output FIR inner loops: a block of consecutive outputs is accumulated in vector
//! registers while the loop walks the taps, so no horizontal reduction is needed.
//!
//! Data are `f32` lanes: real items, or interleaved complex items (`stride` 2 floats per
//! item). For output lane `i` of a block starting at lane `base`, tap `k` (taps reversed)
//! multiplies `x[base + i + k·stride]`: one broadcast tap, one unaligned load, one
//! fused multiply-add per vector. Complex taps keep two accumulators (`Σ re·x`, `Σ im·x`) and
//! combine them once per block. The loops are portable Rust that LLVM vectorises; an AVX2+FMA
//! build of the same source is chosen at run time where the CPU has it.

/// Lanes per block: 4 AVX2 vectors per accumulator, enough independent FMA chains.
const BLK: usize = 32;

fn has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static FMA: OnceLock<bool> = OnceLock::new();
        *FMA.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Real taps: `out[i] = Σ_k rev[k] · x[i + k·stride]`; needs
/// `x.len() ≥ out.len() + (rev.len() − 1)·stride` (panics otherwise).
pub(super) fn real(rev: &[f32], x: &[f32], out: &mut [f32], stride: usize) {
    assert!(
        x.len() + stride >= out.len() + rev.len() * stride,
        "fir: window too short"
    );
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: avx2 and fma were detected on this CPU.
        return unsafe { real_avx2(rev, x, out, stride) };
    }
    real_lanes::<false>(rev, x, out, stride)
}

/// Complex taps over interleaved complex data (`x`, `out` as f32 pairs):
/// `out[m] = Σ_k (re[k] + i·im[k]) · x[m + k]`; needs `x.len() ≥ out.len() + 2·(len − 1)`.
pub(super) fn complex(re: &[f32], im: &[f32], x: &[f32], out: &mut [f32]) {
    assert!(
        x.len() + 2 >= out.len() + 2 * re.len(),
        "fir: window too short"
    );
    assert!(re.len() == im.len() && out.len().is_multiple_of(2));
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: avx2 and fma were detected on this CPU.
        return unsafe { complex_avx2(re, im, x, out) };
    }
    complex_lanes::<false>(re, im, x, out)
}

/// # Safety
/// The CPU must support avx2 and fma.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn real_avx2(rev: &[f32], x: &[f32], out: &mut [f32], stride: usize) {
    real_lanes::<true>(rev, x, out, stride)
}

/// # Safety
/// The CPU must support avx2 and fma.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn complex_avx2(re: &[f32], im: &[f32], x: &[f32], out: &mut [f32]) {
    complex_lanes::<true>(re, im, x, out)
}

#[inline(always)]
fn madd<const FMA: bool>(acc: f32, t: f32, v: f32) -> f32 {
    if FMA {
        t.mul_add(v, acc)
    } else {
        acc + t * v
    }
}

#[inline(always)]
fn real_lanes<const FMA: bool>(rev: &[f32], x: &[f32], out: &mut [f32], stride: usize) {
    let blocks = out.len() / BLK;
    for (b, o) in out.chunks_exact_mut(BLK).enumerate() {
        let base = b * BLK;
        let mut acc = [0.0f32; BLK];
        for (k, &t) in rev.iter().enumerate() {
            let xs: &[f32; BLK] = x[base + k * stride..][..BLK]
                .try_into()
                .unwrap_or(&[0.0; BLK]);
            for i in 0..BLK {
                acc[i] = madd::<FMA>(acc[i], t, xs[i]);
            }
        }
        o.copy_from_slice(&acc);
    }
    for (i, o) in out.iter_mut().enumerate().skip(blocks * BLK) {
        let mut s = 0.0f32;
        for (k, &t) in rev.iter().enumerate() {
            s = madd::<FMA>(s, t, x[i + k * stride]);
        }
        *o = s;
    }
}

#[inline(always)]
fn complex_lanes<const FMA: bool>(re: &[f32], im: &[f32], x: &[f32], out: &mut [f32]) {
    let blocks = out.len() / BLK;
    for (b, o) in out.chunks_exact_mut(BLK).enumerate() {
        let base = b * BLK;
        let (mut a, mut c) = ([0.0f32; BLK], [0.0f32; BLK]);
        for (k, (&tr, &ti)) in re.iter().zip(im).enumerate() {
            let xs: &[f32; BLK] = x[base + 2 * k..][..BLK].try_into().unwrap_or(&[0.0; BLK]);
            for i in 0..BLK {
                a[i] = madd::<FMA>(a[i], tr, xs[i]);
                c[i] = madd::<FMA>(c[i], ti, xs[i]);
            }
        }
        // a = [Σ re·xr, Σ re·xi, …], c = [Σ im·xr, Σ im·xi, …].
        for m in 0..BLK / 2 {
            o[2 * m] = a[2 * m] - c[2 * m + 1];
            o[2 * m + 1] = a[2 * m + 1] + c[2 * m];
        }
    }
    // The tail accumulates exactly like a block lane (same order, same operations), so an
    // output's bits do not depend on where a call's block boundaries fall.
    for m in blocks * BLK / 2..out.len() / 2 {
        let ([mut ar, mut ai], [mut cr, mut ci]) = ([0.0f32; 2], [0.0f32; 2]);
        for (k, (&tr, &ti)) in re.iter().zip(im).enumerate() {
            let (xr, xi) = (x[2 * (m + k)], x[2 * (m + k) + 1]);
            ar = madd::<FMA>(ar, tr, xr);
            ai = madd::<FMA>(ai, tr, xi);
            cr = madd::<FMA>(cr, ti, xr);
            ci = madd::<FMA>(ci, ti, xi);
        }
        out[2 * m] = ar - ci;
        out[2 * m + 1] = ai + cr;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_and_dispatched_paths_agree_on_blocks_and_tails() {
        for (taps, n) in [(1, 1), (3, 31), (7, 32), (9, 65), (40, 200)] {
            let re: Vec<f32> = (0..taps).map(|k| (k as f32 * 0.7).sin()).collect();
            let im: Vec<f32> = (0..taps).map(|k| (k as f32 * 0.3).cos()).collect();
            let x: Vec<f32> = (0..2 * (n + taps))
                .map(|i| (i as f32 * 0.13).sin())
                .collect();
            for stride in [1, 2] {
                let len = n * stride;
                let (mut p, mut q) = (vec![0.0; len], vec![0.0; len]);
                real_lanes::<false>(&re, &x, &mut p, stride);
                real(&re, &x, &mut q, stride);
                for i in 0..len {
                    let want: f32 = (0..taps).map(|k| re[k] * x[i + k * stride]).sum();
                    assert!((p[i] - want).abs() < 1e-4 && (q[i] - want).abs() < 1e-4);
                }
            }
            let (mut p, mut q) = (vec![0.0; 2 * n], vec![0.0; 2 * n]);
            complex_lanes::<false>(&re, &im, &x, &mut p);
            complex(&re, &im, &x, &mut q);
            for m in 0..n {
                let mut want = (0.0f32, 0.0f32);
                for k in 0..taps {
                    let (xr, xi) = (x[2 * (m + k)], x[2 * (m + k) + 1]);
                    want.0 += re[k] * xr - im[k] * xi;
                    want.1 += re[k] * xi + im[k] * xr;
                }
                for v in [&p, &q] {
                    assert!(
                        (v[2 * m] - want.0).abs() < 1e-4 && (v[2 * m + 1] - want.1).abs() < 1e-4
                    );
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "window too short")]
    fn short_window_panics() {
        real(&[1.0, 2.0], &[1.0, 2.0], &mut [0.0, 0.0], 1);
    }
}
