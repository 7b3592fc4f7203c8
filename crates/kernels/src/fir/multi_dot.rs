//! Dot products of one tap vector with four windows at once, for decimating and polyphase
//! filters whose outputs are not consecutive (the frequency-translating FIR, the rational
//! resampler): each tap vector loaded serves four windows, eight accumulators cover the
//! multiply-add latency, and the result is reduced to the even and odd lane sums, i.e. the
//! real and imaginary parts when the windows are interleaved complex samples and each real tap
//! is written twice (`[h, h]`).
//!
//! The AVX2+FMA and AVX-512F loops are written with `std::arch` (the portable form of them did
//! not vectorise); the portable loop does the same sums in plain Rust. The AVX-512 loops halve
//! the loads and multiply-adds per tap on CPUs that run 512-bit operations at full width
//! (Intel Xeon): measured with `sluice bench radio --cases xlating,rational`.

/// Windows per call.
pub(crate) const GROUP: usize = 4;

/// `[Σ_even t[i]·w[i], Σ_odd t[i]·w[i]]` for each window `w` (each at least `t.len()` long;
/// `t.len()` even). Panics if a window is shorter than the taps.
#[cfg(test)]
pub(crate) fn dots(t: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
    assert!(
        t.len().is_multiple_of(2) && windows.iter().all(|w| w.len() >= t.len()),
        "dots: windows shorter than the taps"
    );
    dots_at(crate::simd::best(), t, windows)
}

/// [`dots`] with the kernel chosen once, for callers that make many short dot products (the
/// rational resampler's 48-tap phases: there, looking up the CPU's features on every call cost
/// as much as the products).
#[derive(Clone, Copy)]
pub(crate) struct Dots {
    kernel: DotsKernel,
    periods: PeriodsKernel,
}

/// A polyphase filter's outputs, a whole number of `GROUP`s of periods at once (see
/// [`Dots::periods`]).
type PeriodsKernel = fn(&Periods<'_>, &[f32], &mut [[f32; 2]]);

/// What [`Dots::periods`] computes: `count` periods, each `steps.len()` outputs, period `q`
/// reading `stride` floats further on than period `q − 1`. Output `r` of a period is the pair
/// sum of `phases[steps[r].0]` against the window at `base + q·stride + steps[r].1` floats.
pub(crate) struct Periods<'a> {
    /// The sub-filters (each written twice per tap, all of one length).
    pub phases: &'a [Vec<f32>],
    /// Per output of a period: its sub-filter and its window's offset in floats.
    pub steps: &'a [(usize, usize)],
    /// Floats from one period's windows to the next's.
    pub stride: usize,
    /// Offset (floats) of period 0.
    pub base: usize,
    /// Periods, a multiple of `GROUP`.
    pub count: usize,
}

/// The periods loop around a four-window kernel; inlined into each kernel's caller so the
/// kernel inlines into it.
#[inline(always)]
fn periods_with(
    dots: impl Fn(&[f32], [&[f32]; GROUP]) -> [[f32; 2]; GROUP],
    job: &Periods<'_>,
    x: &[f32],
    out: &mut [[f32; 2]],
) {
    let (steps, stride) = (job.steps.len(), job.stride);
    for q in (0..job.count).step_by(GROUP) {
        let base = job.base + q * stride;
        let out = &mut out[q * steps..(q + GROUP) * steps];
        for (r, &(phase, offset)) in job.steps.iter().enumerate() {
            let t = &job.phases[phase];
            let at = base + offset;
            let windows: [&[f32]; GROUP] =
                std::array::from_fn(|g| &x[at + g * stride..at + g * stride + t.len()]);
            for (g, s) in dots(t, windows).into_iter().enumerate() {
                out[g * steps + r] = s;
            }
        }
    }
}

/// Four pair sums of `t` against four windows (see [`Dots::run`]).
type DotsKernel = fn(&[f32], [&[f32]; GROUP]) -> [[f32; 2]; GROUP];

impl std::fmt::Debug for Dots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dots")
    }
}

impl Dots {
    /// The best kernel this CPU runs.
    pub(crate) fn new() -> Dots {
        #[cfg(target_arch = "x86_64")]
        {
            use crate::simd::usable;
            use crate::SimdLevel::{Avx2Fma, Avx512};
            if crate::simd::best() == Avx512 && usable(Avx512) && usable(Avx2Fma) {
                return Dots {
                    kernel: avx512_dots,
                    periods: avx512_periods,
                };
            }
            if usable(Avx2Fma) {
                return Dots {
                    kernel: avx2_dots,
                    periods: avx2_periods,
                };
            }
        }
        Dots {
            kernel: portable,
            periods: |job, x, out| periods_with(portable, job, x, out),
        }
    }

    /// [`dots`] of `t` against `windows`. Panics if a window is shorter than the taps.
    #[inline]
    pub(crate) fn run(&self, t: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
        assert!(
            t.len().is_multiple_of(2) && windows.iter().all(|w| w.len() >= t.len()),
            "dots: windows shorter than the taps"
        );
        (self.kernel)(t, windows)
    }

    /// The outputs `job` describes, period after period, into `out` (`count × steps` pair
    /// sums, output `r` of period `q` at `q·steps + r`): one call for many outputs, so the
    /// loop around the four-window products is compiled with them. Panics if a window runs
    /// past `x`, a sub-filter is odd in length, `count` is not a multiple of `GROUP`, or `out`
    /// is short.
    pub(crate) fn periods(&self, job: &Periods<'_>, x: &[f32], out: &mut [[f32; 2]]) {
        let w = job.phases.first().map_or(0, Vec::len);
        let last = job.steps.iter().map(|s| s.1).max().unwrap_or(0);
        assert!(
            w.is_multiple_of(2)
                && job.phases.iter().all(|p| p.len() == w)
                && job.steps.iter().all(|s| s.0 < job.phases.len())
                && job.count.is_multiple_of(GROUP)
                && out.len() >= job.count * job.steps.len(),
            "periods: malformed job"
        );
        assert!(
            job.count == 0 || job.base + (job.count - 1) * job.stride + last + w <= x.len(),
            "periods: windows run past the input"
        );
        (self.periods)(job, x, out)
    }
}

/// Only reachable through [`Dots::new`], which checked avx512f, avx2 and fma.
#[cfg(target_arch = "x86_64")]
fn avx512_periods(job: &Periods<'_>, x: &[f32], out: &mut [[f32; 2]]) {
    // SAFETY: `Dots::new` hands this out only where avx512f, avx2 and fma were detected;
    // `periods_with` slices every window to the taps' length (checked indexing).
    unsafe { x86_512::periods(job, x, out) }
}

/// Only reachable through [`Dots::new`], which checked avx2 and fma.
#[cfg(target_arch = "x86_64")]
fn avx2_periods(job: &Periods<'_>, x: &[f32], out: &mut [[f32; 2]]) {
    // SAFETY: `Dots::new` hands this out only where avx2 and fma were detected; windows as
    // in `avx512_periods`.
    unsafe { x86::periods(job, x, out) }
}

/// Only reachable through [`Dots::new`], which checked avx512f, avx2 and fma.
#[cfg(target_arch = "x86_64")]
fn avx512_dots(t: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
    // SAFETY: `Dots::new` hands this out only where avx512f, avx2 and fma were detected;
    // `Dots::run` asserted every window holds t.len() floats and t.len() is even.
    unsafe { x86_512::dots(t, windows) }
}

/// Only reachable through [`Dots::new`], which checked avx2 and fma.
#[cfg(target_arch = "x86_64")]
fn avx2_dots(t: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
    // SAFETY: `Dots::new` hands this out only where avx2 and fma were detected; `Dots::run`
    // asserted every window holds t.len() floats and t.len() is even.
    unsafe { x86::dots(t, windows) }
}

/// [`dots`] at `level` (falling back to the next level down where `level` cannot run here).
#[cfg(test)]
fn dots_at(level: crate::SimdLevel, t: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::simd::usable;
        use crate::SimdLevel::{Avx2Fma, Avx512};
        if level == Avx512 && usable(Avx512) && usable(Avx2Fma) {
            // SAFETY: avx512f, avx2 and fma were detected on this CPU just above; every window
            // holds at least t.len() floats (asserted by the callers).
            return unsafe { x86_512::dots(t, windows) };
        }
        if level != crate::SimdLevel::Portable && usable(Avx2Fma) {
            // SAFETY: avx2 and fma were detected on this CPU just above; every window holds at
            // least t.len() floats (asserted by the callers).
            return unsafe { x86::dots(t, windows) };
        }
    }
    let _ = level;
    portable(t, windows)
}

/// Complex taps (`re`, `im`: real and imaginary parts, each written twice) against four
/// windows of interleaved complex samples: `Σ_i (re_i + j·im_i)·w_i` per window.
pub(crate) fn complex_dots(re: &[f32], im: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
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
    dots_pair_at(crate::simd::best(), t, u, windows)
}

/// [`dots_pair`] at `level` (falling back to the next level down where it cannot run here).
fn dots_pair_at(
    level: crate::SimdLevel,
    t: &[f32],
    u: &[f32],
    windows: [&[f32]; GROUP],
) -> ([[f32; 2]; GROUP], [[f32; 2]; GROUP]) {
    assert!(
        t.len().is_multiple_of(2) && windows.iter().all(|w| w.len() >= t.len()),
        "dots: windows shorter than the taps"
    );
    #[cfg(target_arch = "x86_64")]
    {
        use crate::simd::usable;
        use crate::SimdLevel::{Avx2Fma, Avx512};
        if level == Avx512 && usable(Avx512) && usable(Avx2Fma) {
            // SAFETY: avx512f, avx2 and fma were detected just above; every window holds at
            // least t.len() floats (asserted) and u has t's length (asserted by the caller).
            return unsafe { x86_512::dots2(t, u, windows) };
        }
        if level != crate::SimdLevel::Portable && usable(Avx2Fma) {
            // SAFETY: avx2 and fma were detected just above; every window holds at least
            // t.len() floats (asserted) and u has t's length (asserted by the caller).
            return unsafe { x86::dots2(t, u, windows) };
        }
    }
    let _ = level;
    (portable(t, windows), portable(u, windows))
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
    #[inline]
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
        // SAFETY: this function runs with avx2 and fma.
        unsafe { finish4(acc.map(|a| _mm256_add_ps(a[0], a[1])), t, windows, k) }
    }

    /// [`super::Dots::periods`] with [`dots`].
    ///
    /// # Safety
    /// The CPU must support avx2 and fma.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn periods(job: &super::Periods<'_>, x: &[f32], out: &mut [[f32; 2]]) {
        // SAFETY: this function runs with avx2 and fma; every window is sliced to the taps'
        // length.
        super::periods_with(|t, w| unsafe { dots(t, w) }, job, x, out)
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
        (
            // SAFETY: this function runs with avx2 and fma.
            unsafe { finish4(acc.map(|a| a[0]), t, windows, k) },
            // SAFETY: as above.
            unsafe { finish4(acc.map(|a| a[1]), u, windows, k) },
        )
    }

    /// The even and odd lane sums of four windows: the four vectors are reduced together (two
    /// unpacks, a cross-lane permute and adds, nine operations instead of twenty-four), which
    /// matters for short filters (the rational resampler's 48-tap phases).
    ///
    /// Not a `target_feature` function, so it can be inlined (always) into the AVX2 and
    /// AVX-512 loops that call it: called on its own, passing the four vectors through memory
    /// and back cost the rational resampler's 48-tap phases a third of their time.
    ///
    /// # Safety
    /// Only from functions compiled for avx2 and fma (the CPU supports them).
    #[inline(always)]
    pub(super) unsafe fn finish4(
        v: [__m256; GROUP],
        t: &[f32],
        windows: [&[f32]; GROUP],
        k: usize,
    ) -> [[f32; 2]; GROUP] {
        // Pair j of vector g is (even, odd) lanes 2j, 2j + 1; unpacks work on 64-bit pairs:
        // [a.p0 b.p0 | a.p2 b.p2] + [a.p1 b.p1 | a.p3 b.p3] for (a, b) = (v0, v1) and (v2, v3).
        let mut lanes = [0.0f32; 8];
        // SAFETY: the caller runs with avx2 (these are its instructions); `lanes` holds 8
        // floats.
        unsafe {
            let [a, b, c, d] = v.map(|x| _mm256_castps_pd(x));
            let s01 = _mm256_add_ps(
                _mm256_castpd_ps(_mm256_unpacklo_pd(a, b)),
                _mm256_castpd_ps(_mm256_unpackhi_pd(a, b)),
            );
            let s23 = _mm256_add_ps(
                _mm256_castpd_ps(_mm256_unpacklo_pd(c, d)),
                _mm256_castpd_ps(_mm256_unpackhi_pd(c, d)),
            );
            let r = _mm256_add_ps(
                _mm256_permute2f128_ps::<0x20>(s01, s23),
                _mm256_permute2f128_ps::<0x31>(s01, s23),
            );
            _mm256_storeu_ps(lanes.as_mut_ptr(), r);
        }
        let mut sums = [[0.0f32; 2]; GROUP];
        for (g, s) in sums.iter_mut().enumerate() {
            *s = [lanes[2 * g], lanes[2 * g + 1]];
        }
        // The last few floats (the vector loops took all of them for most tap counts).
        if k < t.len() {
            for (s, w) in sums.iter_mut().zip(windows) {
                for i in (k..t.len()).step_by(2) {
                    s[0] = t[i].mul_add(w[i], s[0]);
                    s[1] = t[i + 1].mul_add(w[i + 1], s[1]);
                }
            }
        }
        sums
    }
}

#[cfg(target_arch = "x86_64")]
mod x86_512 {
    use super::GROUP;
    use std::arch::x86_64::*;

    /// The two 256-bit halves of `v` added: lane `i` and lane `i + 8` have the same parity,
    /// so even and odd sums stay apart.
    #[inline]
    #[target_feature(enable = "avx512f,avx2,fma")]
    fn halves(v: __m512) -> __m256 {
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
        _mm256_add_ps(_mm512_castps512_ps256(v), hi)
    }

    /// [`super::x86::dots`] with 16-float vectors.
    ///
    /// # Safety
    /// The CPU must support avx512f, avx2 and fma; every window holds at least `t.len()`
    /// floats, and `t.len()` is even.
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) unsafe fn dots(t: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
        // SAFETY: this function runs with avx512f, avx2 and fma; the windows as it requires.
        unsafe { dots_inline(t, windows) }
    }

    /// The body of [`dots`], inlined (always) into [`periods`] as [`super::x86::finish4`] is:
    /// as a call of its own per four outputs, saving and restoring registers and setting up
    /// its loops cost the rational resampler's 48-tap phases about as much as the
    /// multiply-adds. The same instructions in the same order either way.
    ///
    /// # Safety
    /// Only from functions compiled for avx512f, avx2 and fma; the windows as for [`dots`].
    #[inline(always)]
    unsafe fn dots_inline(t: &[f32], windows: [&[f32]; GROUP]) -> [[f32; 2]; GROUP] {
        let n = t.len();
        let pt = t.as_ptr();
        let pw = windows.map(|w| w.as_ptr());
        // SAFETY: the caller runs with avx512f (the contract above).
        let mut acc = [[unsafe { _mm512_setzero_ps() }; 2]; GROUP];
        let mut k = 0;
        while k + 32 <= n {
            // SAFETY: k + 32 ≤ n ≤ every slice's length; unaligned loads.
            unsafe {
                let (t0, t1) = (_mm512_loadu_ps(pt.add(k)), _mm512_loadu_ps(pt.add(k + 16)));
                for (a, p) in acc.iter_mut().zip(&pw) {
                    a[0] = _mm512_fmadd_ps(t0, _mm512_loadu_ps(p.add(k)), a[0]);
                    a[1] = _mm512_fmadd_ps(t1, _mm512_loadu_ps(p.add(k + 16)), a[1]);
                }
            }
            k += 32;
        }
        if k + 16 <= n {
            // SAFETY: k + 16 ≤ n ≤ every slice's length.
            unsafe {
                let t0 = _mm512_loadu_ps(pt.add(k));
                for (a, p) in acc.iter_mut().zip(&pw) {
                    a[0] = _mm512_fmadd_ps(t0, _mm512_loadu_ps(p.add(k)), a[0]);
                }
            }
            k += 16;
        }
        // SAFETY: the caller runs with avx512f (the contract above).
        let mut v = acc.map(|a| unsafe { halves(_mm512_add_ps(a[0], a[1])) });
        if k + 8 <= n {
            // SAFETY: k + 8 ≤ n ≤ every slice's length.
            unsafe {
                let t0 = _mm256_loadu_ps(pt.add(k));
                for (a, p) in v.iter_mut().zip(&pw) {
                    *a = _mm256_fmadd_ps(t0, _mm256_loadu_ps(p.add(k)), *a);
                }
            }
            k += 8;
        }
        // SAFETY: this function runs with avx2 and fma.
        unsafe { super::x86::finish4(v, t, windows, k) }
    }

    /// [`super::Dots::periods`] with [`dots`].
    ///
    /// # Safety
    /// The CPU must support avx512f, avx2 and fma.
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) unsafe fn periods(job: &super::Periods<'_>, x: &[f32], out: &mut [[f32; 2]]) {
        // SAFETY: this function runs with avx512f, avx2 and fma; every window is sliced to
        // the taps' length.
        super::periods_with(|t, w| unsafe { dots_inline(t, w) }, job, x, out)
    }

    /// [`super::x86::dots2`] with 16-float vectors.
    ///
    /// # Safety
    /// As for [`dots`]; `u` has the length of `t`.
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) unsafe fn dots2(
        t: &[f32],
        u: &[f32],
        windows: [&[f32]; GROUP],
    ) -> ([[f32; 2]; GROUP], [[f32; 2]; GROUP]) {
        let n = t.len();
        let (pt, pu) = (t.as_ptr(), u.as_ptr());
        let pw = windows.map(|w| w.as_ptr());
        let mut acc = [[_mm512_setzero_ps(); 2]; GROUP];
        let mut k = 0;
        while k + 16 <= n {
            // SAFETY: k + 16 ≤ n ≤ every slice's length; unaligned loads.
            unsafe {
                let (tv, uv) = (_mm512_loadu_ps(pt.add(k)), _mm512_loadu_ps(pu.add(k)));
                for (a, p) in acc.iter_mut().zip(&pw) {
                    let x = _mm512_loadu_ps(p.add(k));
                    a[0] = _mm512_fmadd_ps(tv, x, a[0]);
                    a[1] = _mm512_fmadd_ps(uv, x, a[1]);
                }
            }
            k += 16;
        }
        let mut v0 = acc.map(|a| halves(a[0]));
        let mut v1 = acc.map(|a| halves(a[1]));
        if k + 8 <= n {
            // SAFETY: k + 8 ≤ n ≤ every slice's length.
            unsafe {
                let (tv, uv) = (_mm256_loadu_ps(pt.add(k)), _mm256_loadu_ps(pu.add(k)));
                for g in 0..GROUP {
                    let x = _mm256_loadu_ps(pw[g].add(k));
                    v0[g] = _mm256_fmadd_ps(tv, x, v0[g]);
                    v1[g] = _mm256_fmadd_ps(uv, x, v1[g]);
                }
            }
            k += 8;
        }
        (
            // SAFETY: this function runs with avx2 and fma.
            unsafe { super::x86::finish4(v0, t, windows, k) },
            // SAFETY: as above.
            unsafe { super::x86::finish4(v1, u, windows, k) },
        )
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
            for got in [dots(&t, windows), portable(&t, windows)] {
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
    fn every_level_matches_f64_pair_sums() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(6);
        for level in crate::SimdLevel::supported() {
            for len in [0, 2, 6, 8, 14, 16, 18, 24, 30, 32, 34, 48, 62, 66, 512, 514] {
                let t: Vec<f32> = (0..len).map(|_| rng.gen_range(-1.0..1.0)).collect();
                let u: Vec<f32> = (0..len).map(|_| rng.gen_range(-1.0..1.0)).collect();
                let w: Vec<Vec<f32>> = (0..GROUP)
                    .map(|g| (0..len + g).map(|_| rng.gen_range(-1.0..1.0)).collect())
                    .collect();
                let windows: [&[f32]; GROUP] = std::array::from_fn(|g| &w[g][..]);
                let (pt, pu) = dots_pair_at(level, &t, &u, windows);
                for (taps, got) in [(&t, dots_at(level, &t, windows)), (&t, pt), (&u, pu)] {
                    for (g, pair) in got.iter().enumerate() {
                        for (parity, &sum) in pair.iter().enumerate() {
                            let want: f64 = (parity..len)
                                .step_by(2)
                                .map(|i| f64::from(taps[i]) * f64::from(w[g][i]))
                                .sum();
                            assert!(
                                (f64::from(sum) - want).abs() < 1e-5,
                                "{} len {len} window {g}",
                                level.name()
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_chosen_kernel_gives_what_dots_gives() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let k = Dots::new();
        for len in [2, 16, 96, 98, 512] {
            let t: Vec<f32> = (0..len).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let w: Vec<Vec<f32>> = (0..GROUP)
                .map(|_| (0..len).map(|_| rng.gen_range(-1.0..1.0)).collect())
                .collect();
            let windows: [&[f32]; GROUP] = std::array::from_fn(|g| &w[g][..]);
            assert_eq!(k.run(&t, windows), dots(&t, windows), "len {len}");
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
