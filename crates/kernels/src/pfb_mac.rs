//! The polyphase multiply-accumulate of the channelizer: for `F` frames at once,
//! `u_f[r] = Σ_j H[j][r] · x[starts[f] + j·M + r]` over the `P` branch taps `j`, for every
//! branch `r < M`, with `H` real (written twice per tap, for interleaved complex samples) and
//! `x` complex. The loop runs across branches (contiguous in both `H` and `x`), so it
//! vectorises for any `M`; each tap vector loaded serves the `F` frames.
//!
//! With 16 frames at once (AVX-512: one accumulator register per frame, see `pfb_mac_x86.rs`)
//! each tap vector serves 16 frames instead of 4, and the rows the frames share stay in L1:
//! the AMPS receiver's bank (`M` = 512, `P` = 18, 16 KiB rows of taps and windows that L1 does
//! not hold whole) spent its time streaming `H` and the windows from L2, four frames at a time.
//! Every SIMD loop sums each lane's taps in order, one multiply-add at a time from zero, so the
//! result is the same to the bit whichever runs.

use super::simd;
use super::SimdLevel;

/// Frames per call at most: sixteen frames share each tap vector loaded (see
/// `pfb_mac_x86.rs`).
pub(super) const FRAMES: usize = 16;

/// `out[f][2r..2r+2] = Σ_j h[j·2M + 2r..] · x[2(starts[f] + j·M + r)..]` for `f < starts.len()`
/// (at most [`FRAMES`]); `h` holds `P·2M` floats, `x` interleaved complex, `out[f]` `2M`
/// floats. Panics if a window runs past `x`.
pub(super) fn mac(h: &[f32], m: usize, x: &[f32], starts: &[usize], out: &mut [&mut [f32]]) {
    mac_at(simd::best(), h, m, x, starts, out);
}

/// [`mac`] at `level` (the next level down where `level` cannot run here).
pub(super) fn mac_at(
    level: SimdLevel,
    h: &[f32],
    m: usize,
    x: &[f32],
    starts: &[usize],
    out: &mut [&mut [f32]],
) {
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
    {
        use super::pfb_mac_x86 as x86;
        let d = starts.get(1).map_or(0, |&s1| s1.wrapping_sub(starts[0]));
        let even = starts.len() == FRAMES
            && starts
                .iter()
                .enumerate()
                .all(|(f, &s)| s == starts[0] + f * d);
        if even && level == SimdLevel::Avx512 && simd::usable(SimdLevel::Avx512) {
            // SAFETY: avx512f and fma are usable (simd::usable); FRAMES windows `d` apart,
            // every window and output checked just above.
            done = unsafe { x86::mac512_frames(h, m, p, x, (starts[0], d), out) };
        } else if level != SimdLevel::Portable && simd::usable(SimdLevel::Avx2Fma) {
            let wide = level == SimdLevel::Avx512 && simd::usable(SimdLevel::Avx512);
            for (s, o) in starts.chunks(x86::CHUNK).zip(out.chunks_mut(x86::CHUNK)) {
                done = if wide {
                    // SAFETY: avx512f and fma are usable (simd::usable); at most CHUNK
                    // frames, every window and output checked just above.
                    unsafe { x86::mac512(h, m, p, x, s, o) }
                } else {
                    // SAFETY: avx2 and fma are usable (simd::usable); at most CHUNK frames,
                    // every window and output checked just above.
                    unsafe { x86::mac256(h, m, p, x, s, o) }
                };
            }
        }
    }
    let _ = level;
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn matches_the_f64_sum_for_any_branch_count_and_frame_count() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for (m, p) in [(2, 1), (8, 3), (13, 4), (24, 2), (33, 5), (40, 7), (64, 18)] {
            let h: Vec<f32> = (0..p * m)
                .flat_map(|_| {
                    let t = rng.gen_range(-1.0f32..1.0);
                    [t, t]
                })
                .collect();
            let x: Vec<f32> = (0..2 * (p * m + FRAMES * (m / 2 + 1)))
                .map(|_| rng.gen_range(-1.0..1.0))
                .collect();
            for (level, frames) in SimdLevel::supported()
                .into_iter()
                .flat_map(|l| (1..=FRAMES).map(move |f| (l, f)))
            {
                // Evenly spaced windows (the channelizer's) for a full batch, others not.
                let skew = usize::from(frames < FRAMES);
                let starts: Vec<usize> = (0..frames).map(|f| f * (m / 2 + skew)).collect();
                let mut rows = vec![vec![f32::NAN; 2 * m]; frames];
                let mut views: Vec<&mut [f32]> = rows.iter_mut().map(|r| &mut r[..]).collect();
                mac_at(level, &h, m, &x, &starts, &mut views);
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
                                "{level:?}: M {m} P {p} frame {f} branch {r}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The SIMD levels sum each lane's taps in order with one fused multiply-add each, as
    /// they always have: the channelizer's output stays the same to the bit (branch counts
    /// a multiple of 8 are all in SIMD blocks at both widths).
    #[test]
    fn simd_levels_match_in_order_fused_sums_to_the_bit() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for (m, p) in [(8, 1), (16, 2), (32, 4), (64, 18), (512, 18)] {
            let h: Vec<f32> = (0..p * m)
                .flat_map(|_| {
                    let t = rng.gen_range(-1.0f32..1.0);
                    [t, t]
                })
                .collect();
            let x: Vec<f32> = (0..2 * (p * m + FRAMES * m))
                .map(|_| rng.gen_range(-1.0..1.0))
                .collect();
            let even: Vec<usize> = (0..FRAMES).map(|f| 3 + f * m / 2).collect();
            let uneven: Vec<usize> = (0..FRAMES / 2).map(|f| f * (m / 2 + 1)).collect();
            for (level, starts) in SimdLevel::supported()
                .into_iter()
                .flat_map(|l| [(l, &even), (l, &uneven)])
            {
                if level == SimdLevel::Portable {
                    continue;
                }
                let mut rows = vec![vec![f32::NAN; 2 * m]; starts.len()];
                let mut views: Vec<&mut [f32]> = rows.iter_mut().map(|r| &mut r[..]).collect();
                mac_at(level, &h, m, &x, starts, &mut views);
                for (f, &s) in starts.iter().enumerate() {
                    for i in 0..2 * m {
                        let want = (0..p).fold(0.0f32, |a, j| {
                            h[j * 2 * m + i].mul_add(x[2 * (s + j * m) + i], a)
                        });
                        assert_eq!(
                            rows[f][i].to_bits(),
                            want.to_bits(),
                            "{level:?}: M {m} P {p} frame {f} float {i}"
                        );
                    }
                }
            }
        }
    }
}
