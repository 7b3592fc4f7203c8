//! The AVX2+FMA and AVX-512F loops of [`super::pfb_mac`], every lane summing its taps in order
//! from zero, so all of them give the same bits: with AVX-512 and a full batch of frames
//! [`mac512_frames`] (all taps per block of branches, one accumulator per frame); otherwise the
//! frames [`CHUNK`] at a time: with AVX2 all taps per block of branches (as before the 16-frame
//! loop), with AVX-512 the taps in passes of [`PASS`], the partial sums kept in the outputs
//! between passes (the rows of the taps and windows are 4 KiB apart for 512 branches, so all
//! taps of a block of branches fall in one or two L1 sets).

use super::pfb_mac::FRAMES;
use std::arch::x86_64::*;

/// Frames per call of the kernels other than [`mac512_frames`]: their working sets (four
/// frames' accumulators in registers, or partial sums in L1) hold no more.
pub(super) const CHUNK: usize = 4;

/// Taps per pass: three tap rows, the windows' rows of four frames (some shared between frames
/// `D = M/2` apart) and the four output rows stay within L1's ways.
const PASS: usize = 3;

/// Branches in blocks of 8 (two vectors of 4 complex), all taps per block, for up to
/// [`CHUNK`] frames; returns how many branches it did.
///
/// # Safety
/// The CPU must support avx2 and fma; at most [`CHUNK`] frames; the windows and outputs are
/// as `mac` checks.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn mac256(
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
        let mut acc = [[_mm256_setzero_ps(); 2]; CHUNK];
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

/// The taps in passes of [`PASS`] with 512-bit vectors, for up to [`CHUNK`] frames at any
/// starts: branches in blocks of 8; returns how many it did.
///
/// # Safety
/// The CPU must support avx512f and fma; the slices are as [`mac256`] needs.
#[target_feature(enable = "avx512f,fma")]
pub(super) unsafe fn mac512(
    h: &[f32],
    m: usize,
    p: usize,
    x: &[f32],
    starts: &[usize],
    out: &mut [&mut [f32]],
) -> usize {
    let width = m / 8 * 16;
    let po: [*mut f32; CHUNK] = std::array::from_fn(|f| {
        out.get_mut(f)
            .map_or(std::ptr::null_mut(), |o| o.as_mut_ptr())
    });
    let job = Job {
        h: h.as_ptr(),
        x: x.as_ptr(),
        w: 2 * m,
        width,
        starts,
        out: po,
    };
    let mut j0 = 0;
    while j0 < p {
        // SAFETY: avx512f and fma (this function's features); taps j0 .. j0 + N ≤ p.
        unsafe {
            match p - j0 {
                1 => pass512::<1>(&job, j0),
                2 => pass512::<2>(&job, j0),
                _ => pass512::<PASS>(&job, j0),
            }
        }
        j0 += PASS.min(p - j0);
    }
    width / 2
}

/// One call's pointers and sizes.
struct Job<'a> {
    h: *const f32,
    x: *const f32,
    /// Floats per row (`2M`), and floats of each row the SIMD loop covers.
    w: usize,
    width: usize,
    starts: &'a [usize],
    out: [*mut f32; CHUNK],
}

/// Taps `j0 .. j0 + N` into every frame's partial sums (started from zero when `j0` is 0).
///
/// # Safety
/// The CPU must support avx512f and fma; `j0 + N ≤ P` and the job's slices as [`mac256`]
/// needs.
#[inline(always)]
unsafe fn pass512<const N: usize>(job: &Job<'_>, j0: usize) {
    let w = job.w;
    let mut r = 0;
    while r < job.width {
        // SAFETY: taps j0 .. j0 + N ≤ P, floats r .. r + 16 ≤ 2M of each row: within h
        // (P·2M floats), each window and each output, as the caller guarantees.
        unsafe {
            let t: [__m512; N] =
                std::array::from_fn(|i| _mm512_loadu_ps(job.h.add((j0 + i) * w + r)));
            for (f, &s) in job.starts.iter().enumerate() {
                let o = job.out[f].add(r);
                let q = job.x.add(2 * s + j0 * w + r);
                let mut a = if j0 == 0 {
                    _mm512_setzero_ps()
                } else {
                    _mm512_loadu_ps(o)
                };
                for (i, &v) in t.iter().enumerate() {
                    a = _mm512_fmadd_ps(v, _mm512_loadu_ps(q.add(i * w)), a);
                }
                _mm512_storeu_ps(o, a);
            }
        }
        r += 16;
    }
}

/// All [`FRAMES`] frames, `D` apart, with 512-bit vectors: per block of 8 branches, every tap
/// into one accumulator per frame (16 of the 32 registers). Each tap vector loaded serves all
/// the frames, and the windows of frames `D = M/2` apart share rows, so a block's rows stay in
/// L1 while it is summed: a fraction of the L2 traffic of four frames at a time, which bound
/// the AMPS receiver's bank. Returns how many branches it did.
///
/// # Safety
/// The CPU must support avx512f and fma; frame `f`'s window starts at `first + f·d`, and
/// `h`, `x` and `out` are as [`mac256`] needs for `FRAMES` frames.
#[target_feature(enable = "avx512f,fma")]
pub(super) unsafe fn mac512_frames(
    h: &[f32],
    m: usize,
    p: usize,
    x: &[f32],
    (first, d): (usize, usize),
    out: &mut [&mut [f32]],
) -> usize {
    let width = m / 8 * 16;
    let w = 2 * m;
    let ph = h.as_ptr();
    // SAFETY: the first frame's window starts within x (the caller's contract).
    let px = unsafe { x.as_ptr().add(2 * first) };
    let mut r = 0;
    while r < width {
        let mut acc = [_mm512_setzero_ps(); FRAMES];
        for j in 0..p {
            // SAFETY: tap j < p, floats r .. r + 16 ≤ 2m of row j: within h (p·2m floats);
            // frame f reads 2(first + f·d + j·m) + r .. + 16 ≤ 2(starts[f] + p·m) ≤ x.len().
            unsafe {
                let t = _mm512_loadu_ps(ph.add(j * w + r));
                let q = px.add(j * w + r);
                for (f, a) in acc.iter_mut().enumerate() {
                    *a = _mm512_fmadd_ps(t, _mm512_loadu_ps(q.add(f * 2 * d)), *a);
                }
            }
        }
        for (a, o) in acc.iter().zip(out.iter_mut()) {
            // SAFETY: each output holds at least 2m ≥ r + 16 floats.
            unsafe { _mm512_storeu_ps(o.as_mut_ptr().add(r), *a) };
        }
        r += 16;
    }
    width / 2
}
