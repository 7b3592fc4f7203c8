//! The polyphase multiply-accumulate of the channelizer: for `F` frames at once,
//! `u_f[r] = Σ_j H[j][r] · x[starts[f] + j·M + r]` over the `P` branch taps `j`, for every
//! branch `r < M`, with `H` real (written twice per tap, for interleaved complex samples) and
//! `x` complex. The loop runs across branches (contiguous in both `H` and `x`), so it
//! vectorises for any `M`; each tap vector loaded serves the `F` frames.

use super::simd;
use super::SimdLevel;

/// Frames per call at most.
pub(super) const FRAMES: usize = 4;

/// `out[f][2r..2r+2] = Σ_j h[j·2M + 2r..] · x[2(starts[f] + j·M + r)..]` for `f < starts.len()`
/// (at most [`FRAMES`]); `h` holds `P·2M` floats, `x` interleaved complex, `out[f]` `2M`
/// floats. Panics if a window runs past `x`.
pub(super) fn mac(h: &[f32], m: usize, x: &[f32], starts: &[usize], out: &mut [&mut [f32]]) {
    let p = h.len() / (2 * m);
    assert!(starts.len() <= FRAMES && out.len() >= starts.len() && p * 2 * m == h.len());
    for (&s, o) in starts.iter().zip(out.iter()) {
        assert!(
            2 * (s + p * m) <= x.len() && o.len() >= 2 * m,
            "pfb: window too short"
        );
    }
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if simd::best() != SimdLevel::Portable {
        // SAFETY: avx2 and fma are usable (simd::best); every window and output was checked
        // just above.
        done = unsafe { x86::mac(h, m, p, x, starts, out) };
    }
    // The remaining branches (all of them on the portable path).
    for (f, &s) in starts.iter().enumerate() {
        for r in done..m {
            let (mut re, mut im) = (0.0f32, 0.0f32);
            for j in 0..p {
                let t = h[j * 2 * m + 2 * r];
                let at = 2 * (s + j * m + r);
                re += t * x[at];
                im += t * x[at + 1];
            }
            out[f][2 * r] = re;
            out[f][2 * r + 1] = im;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::FRAMES;
    use std::arch::x86_64::*;

    /// Branches in blocks of 8 (two vectors of 4 complex); returns how many branches it did.
    ///
    /// # Safety
    /// The CPU must support avx2 and fma; the windows and outputs are as `mac` checks.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn mac(
        h: &[f32],
        m: usize,
        p: usize,
        x: &[f32],
        starts: &[usize],
        out: &mut [&mut [f32]],
    ) -> usize {
        let blocks = m / 8 * 8;
        let frames = starts.len();
        let (ph, px) = (h.as_ptr(), x.as_ptr());
        let mut r = 0;
        while r < blocks {
            let mut acc = [[_mm256_setzero_ps(); 2]; FRAMES];
            for j in 0..p {
                // SAFETY: tap j, branches r .. r + 8: floats 2(j·M + r) .. + 16 < P·2M; frame
                // f reads 2(starts[f] + j·M + r) .. + 16 ≤ 2(starts[f] + P·M) ≤ x.len().
                unsafe {
                    let o = 2 * (j * m + r);
                    let (h0, h1) = (_mm256_loadu_ps(ph.add(o)), _mm256_loadu_ps(ph.add(o + 8)));
                    for (a, &s) in acc.iter_mut().zip(starts) {
                        let q = px.add(2 * s + o);
                        a[0] = _mm256_fmadd_ps(h0, _mm256_loadu_ps(q), a[0]);
                        a[1] = _mm256_fmadd_ps(h1, _mm256_loadu_ps(q.add(8)), a[1]);
                    }
                }
            }
            for (a, o) in acc.iter().zip(out.iter_mut()).take(frames) {
                // SAFETY: each output holds 2M floats ≥ 2(r + 8).
                unsafe {
                    _mm256_storeu_ps(o.as_mut_ptr().add(2 * r), a[0]);
                    _mm256_storeu_ps(o.as_mut_ptr().add(2 * r + 8), a[1]);
                }
            }
            r += 8;
        }
        blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn matches_the_f64_sum_for_any_branch_count_and_frame_count() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for (m, p) in [(2, 1), (8, 3), (13, 4), (24, 2), (33, 5)] {
            let h: Vec<f32> = (0..p * m)
                .flat_map(|_| {
                    let t = rng.gen_range(-1.0f32..1.0);
                    [t, t]
                })
                .collect();
            let x: Vec<f32> = (0..2 * (p * m + 3 * m + 7))
                .map(|_| rng.gen_range(-1.0..1.0))
                .collect();
            for frames in 1..=FRAMES {
                let starts: Vec<usize> = (0..frames).map(|f| f * m / 2 + f).collect();
                let mut rows = vec![vec![0.0f32; 2 * m]; frames];
                let mut views: Vec<&mut [f32]> = rows.iter_mut().map(|r| &mut r[..]).collect();
                mac(&h, m, &x, &starts, &mut views);
                for (f, &s) in starts.iter().enumerate() {
                    for r in 0..m {
                        for part in 0..2 {
                            let want: f64 = (0..p)
                                .map(|j| {
                                    f64::from(h[2 * (j * m + r)])
                                        * f64::from(x[2 * (s + j * m + r) + part])
                                })
                                .sum();
                            let got = f64::from(rows[f][2 * r + part]);
                            assert!(
                                (got - want).abs() < 1e-5,
                                "M {m} P {p} frame {f} branch {r}"
                            );
                        }
                    }
                }
            }
        }
    }
}
