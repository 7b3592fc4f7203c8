//! Dot products of one tap vector with four windows at once, for decimating and polyphase
//! filters whose outputs are not consecutive (the frequency-translating FIR, the rational
//! resampler): each tap vector loaded serves four windows, eight accumulators cover the
//! multiply-add latency, and the result is reduced to the even and odd lane sums, i.e. the
//! real and imaginary parts when the windows are interleaved complex samples and each real tap
//! is written twice (`[h, h]`).
//!
//! The AVX2+FMA loop is written with `std::arch` (the portable form of it did not vectorise);
//! the portable loop does the same sums in plain Rust.

/// Windows per call.
pub(super) const GROUP: usize = 4;

/// `[Σ_even t[i]·w[i], Σ_odd t[i]·w[i]]` for each window `w` (each at least `t.len()` long;
/// `t.len()` even). Panics if a window is shorter than the taps.
pub(super) fn dots(t: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
    assert!(
        t.len().is_multiple_of(2) && windows.iter().all(|w| w.len() >= t.len()),
        "dots: windows shorter than the taps"
    );
    #[cfg(target_arch = "x86_64")]
    if super::simd::usable(super::SimdLevel::Avx2Fma) {
        // SAFETY: avx2 and fma were detected on this CPU just above; every window holds at
        // least t.len() floats (asserted above).
        return unsafe { x86::dots(t, windows) };
    }
    portable(t, windows)
}

/// Complex taps (`re`, `im`: real and imaginary parts, each written twice) against four
/// windows of interleaved complex samples: `Σ_i (re_i + j·im_i)·w_i` per window.
pub(super) fn complex_dots(re: &[f32], im: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
    assert!(
        re.len() == im.len(),
        "complex_dots: real and imaginary taps differ in length"
    );
    let (a, b) = dots_pair(re, im, windows);
    // a = [Σ re·xr, Σ re·xi], b = [Σ im·xr, Σ im·xi].
    std::array::from_fn(|g| [a[g][0] - b[g][1], a[g][1] + b[g][0]])
}

/// ([`dots`] of `t`, [`dots`] of `u`), with one pass over the windows on AVX2.
fn dots_pair(
    t: &[f32],
    u: &[f32],
    windows: [&[f32]; GROUP],
) -> ([[f32; 2]; GROUP], [[f32; 2]; GROUP]) {
    #[cfg(target_arch = "x86_64")]
    if super::simd::usable(super::SimdLevel::Avx2Fma) {
        assert!(
            t.len().is_multiple_of(2) && windows.iter().all(|w| w.len() >= t.len()),
            "dots: windows shorter than the taps"
        );
        // SAFETY: avx2 and fma were detected just above; every window holds at least t.len()
        // floats (asserted) and u has t's length (asserted by the caller).
        return unsafe { x86::dots2(t, u, windows) };
    }
    (dots(t, windows), dots(u, windows))
}

/// [`dots`] with one window: `[Σ_even t[i]·w[i], Σ_odd t[i]·w[i]]`.
pub(super) fn dot(t: &[f32], w: &[f32]) -> [f32; 2] {
    assert!(
        t.len().is_multiple_of(2) && w.len() >= t.len(),
        "dots: windows shorter than the taps"
    );
    #[cfg(target_arch = "x86_64")]
    if super::simd::usable(super::SimdLevel::Avx2Fma) {
        // SAFETY: avx2 and fma were detected just above; `w` holds t.len() floats (asserted).
        return unsafe { x86::dot(t, w) };
    }
    portable(t, [w; GROUP])[0]
}

/// The plain loop: pair sums, tap by tap.
fn portable(t: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
    windows.map(|w| {
        let mut s = [0.0f32; 2];
        for (tp, wp) in t.chunks_exact(2).zip(w.chunks_exact(2)) {
            s[0] += tp[0] * wp[0];
            s[1] += tp[1] * wp[1];
        }
        s
    })
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::GROUP;
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must support avx2 and fma; every window holds at least `t.len()` floats, and
    /// `t.len()` is even.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dots(t: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
        let n = t.len();
        let pt = t.as_ptr();
        let pw = windows.map(|w| w.as_ptr());
        let mut acc = [[_mm256_setzero_ps(); 2]; GROUP];
        let mut k = 0;
        while k + 16 <= n {
            // SAFETY: k + 16 ≤ n ≤ every slice's length; unaligned loads.
            unsafe {
                let (t0, t1) = (_mm256_loadu_ps(pt.add(k)), _mm256_loadu_ps(pt.add(k + 8)));
                for (a, p) in acc.iter_mut().zip(&pw) {
                    a[0] = _mm256_fmadd_ps(t0, _mm256_loadu_ps(p.add(k)), a[0]);
                    a[1] = _mm256_fmadd_ps(t1, _mm256_loadu_ps(p.add(k + 8)), a[1]);
                }
            }
            k += 16;
        }
        if k + 8 <= n {
            // SAFETY: k + 8 ≤ n ≤ every slice's length.
            unsafe {
                let t0 = _mm256_loadu_ps(pt.add(k));
                for (a, p) in acc.iter_mut().zip(&pw) {
                    a[0] = _mm256_fmadd_ps(t0, _mm256_loadu_ps(p.add(k)), a[0]);
                }
            }
            k += 8;
        }
        let mut out = [[0.0f32; 2]; GROUP];
        for (g, a) in acc.iter().enumerate() {
            out[g] = finish(_mm256_add_ps(a[0], a[1]), t, windows[g], k);
        }
        out
    }

    /// Two tap vectors against four windows: ([`dots`] of `t`, [`dots`] of `u`), each tap
    /// and data vector loaded once.
    ///
    /// # Safety
    /// As for [`dots`]; `u` has the length of `t`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dots2(
        t: &[f32],
        u: &[f32],
        windows: [&[f32]; GROUP],
    ) -> ([[f32; 2]; GROUP], [[f32; 2]; GROUP]) {
        let n = t.len();
        let (pt, pu) = (t.as_ptr(), u.as_ptr());
        let pw = windows.map(|w| w.as_ptr());
        let mut acc = [[_mm256_setzero_ps(); 2]; GROUP];
        let mut k = 0;
        while k + 8 <= n {
            // SAFETY: k + 8 ≤ n ≤ every slice's length; unaligned loads.
            unsafe {
                let (tv, uv) = (_mm256_loadu_ps(pt.add(k)), _mm256_loadu_ps(pu.add(k)));
                for (a, p) in acc.iter_mut().zip(&pw) {
                    let x = _mm256_loadu_ps(p.add(k));
                    a[0] = _mm256_fmadd_ps(tv, x, a[0]);
                    a[1] = _mm256_fmadd_ps(uv, x, a[1]);
                }
            }
            k += 8;
        }
        let mut out = ([[0.0f32; 2]; GROUP], [[0.0f32; 2]; GROUP]);
        for (g, a) in acc.iter().enumerate() {
            out.0[g] = finish(a[0], t, windows[g], k);
            out.1[g] = finish(a[1], u, windows[g], k);
        }
        out
    }

    /// One window, four accumulators.
    ///
    /// # Safety
    /// As for [`dots`], with one window.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot(t: &[f32], w: &[f32]) -> [f32; 2] {
        let n = t.len();
        let (pt, pw) = (t.as_ptr(), w.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut k = 0;
        while k + 32 <= n {
            for (j, a) in acc.iter_mut().enumerate() {
                // SAFETY: k + 32 ≤ n ≤ both lengths; unaligned loads.
                *a = unsafe {
                    let o = k + 8 * j;
                    _mm256_fmadd_ps(_mm256_loadu_ps(pt.add(o)), _mm256_loadu_ps(pw.add(o)), *a)
                };
            }
            k += 32;
        }
        while k + 8 <= n {
            // SAFETY: k + 8 ≤ n ≤ both lengths.
            acc[0] = unsafe {
                _mm256_fmadd_ps(
                    _mm256_loadu_ps(pt.add(k)),
                    _mm256_loadu_ps(pw.add(k)),
                    acc[0],
                )
            };
            k += 8;
        }
        let v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        finish(v, t, w, k)
    }

    /// Reduces `[e0 o0 e1 o1 | e2 o2 e3 o3]` to `[e, o]` and adds the floats from `k` on
    /// (fewer than 8, an even number: they keep lane parity).
    #[target_feature(enable = "avx2,fma")]
    fn finish(v: __m256, t: &[f32], w: &[f32], k: usize) -> [f32; 2] {
        let q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let h = _mm_add_ps(q, _mm_movehl_ps(q, q));
        let mut s = [_mm_cvtss_f32(h), _mm_cvtss_f32(_mm_shuffle_ps::<1>(h, h))];
        for i in (k..t.len()).step_by(2) {
            s[0] = t[i].mul_add(w[i], s[0]);
            s[1] = t[i + 1].mul_add(w[i + 1], s[1]);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn dispatched_and_portable_match_f64_pair_sums() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        for len in [0, 2, 6, 8, 10, 16, 22, 34, 66, 96, 512, 514] {
            let t: Vec<f32> = (0..len).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let w: Vec<Vec<f32>> = (0..GROUP)
                .map(|g| (0..len + g).map(|_| rng.gen_range(-1.0..1.0)).collect())
                .collect();
            let windows: [&[f32]; GROUP] = std::array::from_fn(|g| &w[g][..]);
            let single: [[f32; 2]; GROUP] = std::array::from_fn(|g| dot(&t, windows[g]));
            for got in [dots(&t, windows), portable(&t, windows), single] {
                for (g, pair) in got.iter().enumerate() {
                    for (parity, &sum) in pair.iter().enumerate() {
                        let want: f64 = (parity..len)
                            .step_by(2)
                            .map(|i| f64::from(t[i]) * f64::from(w[g][i]))
                            .sum();
                        assert!((f64::from(sum) - want).abs() < 1e-5, "len {len} window {g}");
                    }
                }
            }
        }
    }

    #[test]
    fn complex_taps_match_f64_complex_sums() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for taps in [1, 3, 4, 5, 17, 128, 256] {
            let h: Vec<(f32, f32)> = (0..taps)
                .map(|_| (rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
                .collect();
            let re: Vec<f32> = h.iter().flat_map(|t| [t.0, t.0]).collect();
            let im: Vec<f32> = h.iter().flat_map(|t| [t.1, t.1]).collect();
            let w: Vec<Vec<f32>> = (0..GROUP)
                .map(|_| (0..2 * taps).map(|_| rng.gen_range(-1.0..1.0)).collect())
                .collect();
            let got = complex_dots(&re, &im, std::array::from_fn(|g| &w[g][..]));
            for g in 0..GROUP {
                let (mut sr, mut si) = (0.0f64, 0.0f64);
                for (i, t) in h.iter().enumerate() {
                    let (xr, xi) = (f64::from(w[g][2 * i]), f64::from(w[g][2 * i + 1]));
                    sr += f64::from(t.0) * xr - f64::from(t.1) * xi;
                    si += f64::from(t.0) * xi + f64::from(t.1) * xr;
                }
                assert!(
                    (f64::from(got[g][0]) - sr).abs() < 1e-5
                        && (f64::from(got[g][1]) - si).abs() < 1e-5,
                    "taps {taps}"
                );
            }
        }
    }

    #[test]
    #[should_panic(expected = "shorter than the taps")]
    fn short_windows_panic() {
        dots(&[1.0; 4], [&[1.0; 4], &[1.0; 4], &[1.0; 2], &[1.0; 4]]);
    }
}
