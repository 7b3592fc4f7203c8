//! Prepared FIR taps and their dot products with a window of items.
//!
//! Taps are stored reversed, so output `j` of a filter is the plain dot product of the taps
//! with `window[j .. j + taps]`, and the inner loop walks both arrays forward. Complex items
//! are read as interleaved `f32` (`re, im, re, im, …`); each tap is stored duplicated into the
//! lanes it multiplies (`[h, h]` for a real tap, `[re, re]` and `[im, im]` for a complex one),
//! so the inner loop is lane-wise fused multiply-adds with no shuffle, reduced once at the end.
//!
//! The lane loop is written once in portable Rust over 16-lane accumulators, which LLVM turns
//! into vector code, and reduced by halving (vector adds, not a serial scalar sum); an
//! AVX2+FMA copy of it (same source, `#[target_feature]`, `mul_add`) is chosen at run time
//! where the CPU has it. Runs of consecutive outputs ([`FirTaps::filter_run`]) go through the
//! multi-output kernels of `lanes.rs` instead, which need no reduction at all.

use num_complex::Complex32;

use super::{lanes, rcf};
use crate::DspError;

const LANES: usize = 16;

/// Real (`f32`) taps, prepared for filtering real or complex items.
#[derive(Debug, Clone)]
pub struct RealTaps {
    /// The taps reversed.
    pub(super) rev: Vec<f32>,
    /// The taps reversed, each written twice (for interleaved complex items).
    rev_dup: Vec<f32>,
}

/// Complex taps, prepared for filtering complex items.
#[derive(Debug, Clone)]
pub struct ComplexTaps {
    /// Real parts of the reversed taps.
    pub(super) re_rev: Vec<f32>,
    /// Imaginary parts of the reversed taps.
    pub(super) im_rev: Vec<f32>,
    /// Real parts of the reversed taps, each written twice.
    re_dup: Vec<f32>,
    /// Imaginary parts of the reversed taps, each written twice.
    im_dup: Vec<f32>,
}

impl RealTaps {
    /// Prepares `taps` (in the usual order: `taps[0]` weights the newest item).
    pub fn new(taps: &[f32]) -> Result<Self, DspError> {
        if taps.is_empty() {
            return Err(DspError::EmptyTaps);
        }
        let rev: Vec<f32> = taps.iter().rev().copied().collect();
        let rev_dup = rev.iter().flat_map(|&t| [t, t]).collect();
        Ok(RealTaps { rev, rev_dup })
    }
}

impl ComplexTaps {
    /// Prepares `taps` (in the usual order: `taps[0]` weights the newest item).
    pub fn new(taps: &[Complex32]) -> Result<Self, DspError> {
        if taps.is_empty() {
            return Err(DspError::EmptyTaps);
        }
        let re_rev: Vec<f32> = taps.iter().rev().map(|t| t.re).collect();
        let im_rev: Vec<f32> = taps.iter().rev().map(|t| t.im).collect();
        let re_dup = re_rev.iter().flat_map(|&t| [t, t]).collect();
        let im_dup = im_rev.iter().flat_map(|&t| [t, t]).collect();
        Ok(ComplexTaps {
            re_rev,
            im_rev,
            re_dup,
            im_dup,
        })
    }
}

/// Taps that can filter items of type `I` (into items of type `Self::Output`).
pub trait FirTaps<I> {
    /// The output item type.
    type Output: Copy;
    /// Number of taps.
    fn len(&self) -> usize;
    /// Whether there are no taps (never true for prepared taps).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `Σ_k taps[k] · window[len-1-k]` over the first `len()` items of `window`.
    /// Panics if `window` is shorter than `len()`.
    fn dot(&self, window: &[I]) -> Self::Output;
    /// `out[j] = dot(&window[j..])` for every `j < out.len()`; `window` must hold at least
    /// `out.len() + len() − 1` items (panics otherwise).
    fn filter_run(&self, window: &[I], out: &mut [Self::Output]);
}

impl FirTaps<f32> for RealTaps {
    type Output = f32;
    fn len(&self) -> usize {
        self.rev.len()
    }
    fn dot(&self, window: &[f32]) -> f32 {
        let (a, _) = lanes_dispatch(&self.rev, None, &window[..self.rev.len()]);
        a[0] + a[1]
    }
    fn filter_run(&self, window: &[f32], out: &mut [f32]) {
        lanes::real(&self.rev, &window[..out.len() + self.rev.len() - 1], out, 1);
    }
}

impl FirTaps<Complex32> for RealTaps {
    type Output = Complex32;
    fn len(&self) -> usize {
        self.rev.len()
    }
    fn dot(&self, window: &[Complex32]) -> Complex32 {
        let x: &[f32] = bytemuck::cast_slice(&window[..self.rev.len()]);
        let (a, _) = lanes_dispatch(&self.rev_dup, None, x);
        Complex32::new(a[0], a[1])
    }
    fn filter_run(&self, window: &[Complex32], out: &mut [Complex32]) {
        let x: &[f32] = bytemuck::cast_slice(&window[..out.len() + self.rev.len() - 1]);
        rcf::filter(&self.rev, x, bytemuck::cast_slice_mut(out));
    }
}

impl FirTaps<Complex32> for ComplexTaps {
    type Output = Complex32;
    fn len(&self) -> usize {
        self.re_dup.len() / 2
    }
    fn dot(&self, window: &[Complex32]) -> Complex32 {
        let x: &[f32] = bytemuck::cast_slice(&window[..self.re_dup.len() / 2]);
        // a = Σ re·x = [Σ re·xr, Σ re·xi], b = Σ im·x = [Σ im·xr, Σ im·xi].
        let (a, b) = lanes_dispatch(&self.re_dup, Some(&self.im_dup), x);
        Complex32::new(a[0] - b[1], a[1] + b[0])
    }
    fn filter_run(&self, window: &[Complex32], out: &mut [Complex32]) {
        let x: &[f32] = bytemuck::cast_slice(&window[..out.len() + self.re_rev.len() - 1]);
        lanes::complex(&self.re_rev, &self.im_rev, x, bytemuck::cast_slice_mut(out));
    }
}

/// Even and odd lane sums of each accumulator: `([Σ a_even, Σ a_odd], [Σ b_even, Σ b_odd])`.
type Acc = ([f32; 2], [f32; 2]);

/// Lane-wise `Σ t1·x` (and `Σ t2·x`), all three slices the same length (`x.len()`).
fn lanes_dispatch(t1: &[f32], t2: Option<&[f32]>, x: &[f32]) -> Acc {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static FMA: OnceLock<bool> = OnceLock::new();
        if *FMA.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
        {
            // SAFETY: avx2 and fma were detected on this CPU (cached above).
            return unsafe { lanes_avx2(t1, t2, x) };
        }
    }
    lanes::<false>(t1, t2, x)
}

/// [`lanes`] compiled for AVX2 with fused multiply-adds.
///
/// # Safety
/// The CPU must support avx2 and fma.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn lanes_avx2(t1: &[f32], t2: Option<&[f32]>, x: &[f32]) -> Acc {
    lanes::<true>(t1, t2, x)
}

#[inline(always)]
fn lanes<const FMA: bool>(t1: &[f32], t2: Option<&[f32]>, x: &[f32]) -> Acc {
    let n = x.len();
    let t1 = &t1[..n];
    let mut a = [0.0f32; LANES];
    let mut b = [0.0f32; LANES];
    let madd = |acc: f32, t: f32, v: f32| if FMA { t.mul_add(v, acc) } else { acc + t * v };
    let whole = n - n % LANES;
    match t2 {
        None => {
            for (tc, xc) in t1[..whole]
                .chunks_exact(LANES)
                .zip(x[..whole].chunks_exact(LANES))
            {
                for k in 0..LANES {
                    a[k] = madd(a[k], tc[k], xc[k]);
                }
            }
        }
        Some(t2) => {
            let t2 = &t2[..n];
            let chunks = t1[..whole]
                .chunks_exact(LANES)
                .zip(t2[..whole].chunks_exact(LANES))
                .zip(x[..whole].chunks_exact(LANES));
            for ((tc, uc), xc) in chunks {
                for k in 0..LANES {
                    a[k] = madd(a[k], tc[k], xc[k]);
                    b[k] = madd(b[k], uc[k], xc[k]);
                }
            }
            for i in whole..n {
                b[i % LANES] = madd(b[i % LANES], t2[i], x[i]);
            }
        }
    }
    // The tail goes to the lane of the same index parity, so even/odd reductions stay right.
    for i in whole..n {
        a[i % LANES] = madd(a[i % LANES], t1[i], x[i]);
    }
    (halve(a), halve(b))
}

/// Pairwise reduction 16 → 8 → 4 → 2 lanes; each step keeps lane parity.
#[inline(always)]
fn halve(mut v: [f32; LANES]) -> [f32; 2] {
    let mut width = LANES;
    while width > 2 {
        width /= 2;
        for k in 0..width {
            v[k] += v[k + width];
        }
    }
    [v[0], v[1]]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn dot_products_match_f64_sums() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for len in [1, 2, 5, 8, 15, 16, 17, 33, 100] {
            let h: Vec<f32> = (0..len).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let hc: Vec<Complex32> = (0..len)
                .map(|_| Complex32::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
                .collect();
            let x: Vec<f32> = (0..len).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let xc: Vec<Complex32> = (0..len)
                .map(|_| Complex32::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
                .collect();
            let (rt, ct) = (RealTaps::new(&h).unwrap(), ComplexTaps::new(&hc).unwrap());
            let mut want = (0.0f64, [0.0f64; 2], [0.0f64; 2]);
            for k in 0..len {
                let j = len - 1 - k;
                want.0 += h[k] as f64 * x[j] as f64;
                want.1[0] += h[k] as f64 * xc[j].re as f64;
                want.1[1] += h[k] as f64 * xc[j].im as f64;
                want.2[0] += hc[k].re as f64 * xc[j].re as f64 - hc[k].im as f64 * xc[j].im as f64;
                want.2[1] += hc[k].re as f64 * xc[j].im as f64 + hc[k].im as f64 * xc[j].re as f64;
            }
            assert!((rt.dot(&x[..]) as f64 - want.0).abs() < 1e-5, "rrf {len}");
            let got: Complex32 = rt.dot(&xc[..]);
            assert!(
                (got.re as f64 - want.1[0]).abs() < 1e-5
                    && (got.im as f64 - want.1[1]).abs() < 1e-5
            );
            let got: Complex32 = ct.dot(&xc[..]);
            assert!(
                (got.re as f64 - want.2[0]).abs() < 1e-5
                    && (got.im as f64 - want.2[1]).abs() < 1e-5
            );
            assert_eq!(FirTaps::<Complex32>::len(&ct), len);
        }
    }

    #[test]
    fn portable_and_fma_lanes_agree() {
        let t: Vec<f32> = (0..37).map(|i| (i as f32 * 0.3).sin()).collect();
        let x: Vec<f32> = (0..37).map(|i| (i as f32 * 0.7).cos()).collect();
        let p = lanes::<false>(&t, Some(&t), &x);
        let q = lanes_dispatch(&t, Some(&t), &x);
        let want_even: f32 = t.iter().zip(&x).step_by(2).map(|(a, b)| a * b).sum();
        for k in 0..2 {
            assert!((p.0[k] - q.0[k]).abs() < 1e-5 && (p.1[k] - q.1[k]).abs() < 1e-5);
        }
        assert!((p.0[0] - want_even).abs() < 1e-5 && (p.1[0] - want_even).abs() < 1e-5);
    }

    #[test]
    fn empty_taps_are_refused() {
        assert!(matches!(RealTaps::new(&[]), Err(DspError::EmptyTaps)));
        let e = ComplexTaps::new(&[]).unwrap_err();
        assert!(e.to_string().contains("no taps"));
    }
}
