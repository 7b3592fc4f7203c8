//! The x86 loops of the beamformers (`beamform.rs`, `beamform_ttd.rs`): AVX2+FMA, and AVX-512F
//! for phase steering (the same loop on 8 complex per vector).
//!
//! Phase steering: with `x = [xr, xi, …]` (4 complex per vector), `dup_re(x)·[wr, wi]` +
//! `dup_im(x)·[−wi, wr]` = `x·w`, so each (beam, antenna) costs two FMAs with the weights
//! pre-expanded in memory, and each beam needs one accumulator: up to 8 beams are formed per
//! pass over the inputs (8 accumulators + the input and its two duplicates fit 16 registers).
//!
//! Fractional delays: `acc_a += x · gr`, `acc_b += swap(x) · gi`, `addsub(acc_a, acc_b)` =
//! `x · g` summed over the taps, for 2 vectors (8 outputs) per pass.

use num_complex::Complex32;
use std::arch::x86_64::*;

/// Beams formed per pass over the inputs.
const GROUP: usize = 8;

/// Forms beams for items `0..m − m % 4` (`m` = the outputs' length) and returns that count.
///
/// # Safety
/// The CPU must support avx2 and fma. Every input holds at least `m` items and every output
/// exactly `m`; `expanded` holds 16 f32 per (beam, antenna), beam-major, `antennas` =
/// `inputs.len()`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn phase_avx2(
    inputs: &[&[Complex32]],
    outputs: &mut [&mut [Complex32]],
    expanded: &[f32],
    antennas: usize,
    accumulate: bool,
) -> usize {
    let m = outputs[0].len();
    let end = m - m % 4;
    let mut ptrs = [std::ptr::null::<f32>(); super::beamform::MAX_ANTENNAS];
    for (p, x) in ptrs.iter_mut().zip(inputs) {
        *p = x.as_ptr().cast();
    }
    let ptrs = &ptrs[..antennas];
    let mut b0 = 0;
    while b0 < outputs.len() {
        let g = GROUP.min(outputs.len() - b0);
        let w = &expanded[b0 * antennas * 16..];
        let outs = &mut outputs[b0..b0 + g];
        // SAFETY: forwarded from the caller; `w` holds 16 f32 for each of the g beams here.
        unsafe {
            match g {
                8 => group::<8>(ptrs, outs, w, end, accumulate),
                7 => group::<7>(ptrs, outs, w, end, accumulate),
                6 => group::<6>(ptrs, outs, w, end, accumulate),
                5 => group::<5>(ptrs, outs, w, end, accumulate),
                4 => group::<4>(ptrs, outs, w, end, accumulate),
                3 => group::<3>(ptrs, outs, w, end, accumulate),
                2 => group::<2>(ptrs, outs, w, end, accumulate),
                _ => group::<1>(ptrs, outs, w, end, accumulate),
            }
        }
        b0 += g;
    }
    end
}

/// `G` beams, items `0..end` (a multiple of 4).
///
/// # Safety
/// As [`phase_avx2`]: each pointer in `inputs` reads `end` complex, each output holds `end`,
/// `w` holds `G · inputs.len() · 16` f32.
#[target_feature(enable = "avx2,fma")]
unsafe fn group<const G: usize>(
    inputs: &[*const f32],
    outputs: &mut [&mut [Complex32]],
    w: &[f32],
    end: usize,
    accumulate: bool,
) {
    let n = inputs.len();
    let wp = w.as_ptr();
    let mut outs = [std::ptr::null_mut::<f32>(); G];
    for (o, y) in outs.iter_mut().zip(outputs.iter_mut()) {
        *o = y.as_mut_ptr().cast();
    }
    let mut t = 0;
    while t < end {
        let mut acc = [_mm256_setzero_ps(); G];
        for (k, &p) in inputs.iter().enumerate() {
            // SAFETY: t + 4 <= end items readable from each input (caller); the weight index
            // (j·n + k)·16 + 15 < G·n·16 (caller).
            unsafe {
                let x = _mm256_loadu_ps(p.add(2 * t));
                let xr = _mm256_moveldup_ps(x);
                let xi = _mm256_movehdup_ps(x);
                for (j, a) in acc.iter_mut().enumerate() {
                    let e = wp.add((j * n + k) * 16);
                    *a = _mm256_fmadd_ps(xr, _mm256_loadu_ps(e), *a);
                    *a = _mm256_fmadd_ps(xi, _mm256_loadu_ps(e.add(8)), *a);
                }
            }
        }
        for (a, &o) in acc.iter().zip(&outs) {
            // SAFETY: t + 4 <= end items writable in each output (caller).
            unsafe {
                let dst = o.add(2 * t);
                let v = if accumulate {
                    _mm256_add_ps(_mm256_loadu_ps(dst), *a)
                } else {
                    *a
                };
                _mm256_storeu_ps(dst, v);
            }
        }
        t += 4;
    }
}

/// `out[j] += Σ_q g[q] · x[j + q]` for `j` in `0..m − m % 8` (`m = out.len()`); returns that
/// count.
///
/// # Safety
/// The CPU must support avx2 and fma; `x` holds at least `m + g.len() − 1` items.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn fir_accumulate(
    x: &[Complex32],
    g: &[Complex32],
    out: &mut [Complex32],
) -> usize {
    let m = out.len();
    let end = m - m % 8;
    let xp: *const f32 = x.as_ptr().cast();
    let op: *mut f32 = out.as_mut_ptr().cast();
    let mut j = 0;
    while j < end {
        let (mut a0, mut b0, mut a1, mut b1) = (
            _mm256_setzero_ps(),
            _mm256_setzero_ps(),
            _mm256_setzero_ps(),
            _mm256_setzero_ps(),
        );
        for (q, tap) in g.iter().enumerate() {
            // SAFETY: j + q + 8 <= end + g.len() − 1 <= x.len() (caller).
            unsafe {
                let gr = _mm256_set1_ps(tap.re);
                let gi = _mm256_set1_ps(tap.im);
                let x0 = _mm256_loadu_ps(xp.add(2 * (j + q)));
                let x1 = _mm256_loadu_ps(xp.add(2 * (j + q + 4)));
                a0 = _mm256_fmadd_ps(x0, gr, a0);
                b0 = _mm256_fmadd_ps(_mm256_permute_ps::<0xB1>(x0), gi, b0);
                a1 = _mm256_fmadd_ps(x1, gr, a1);
                b1 = _mm256_fmadd_ps(_mm256_permute_ps::<0xB1>(x1), gi, b1);
            }
        }
        // SAFETY: j + 8 <= m items writable in `out`.
        unsafe {
            let d0 = op.add(2 * j);
            let d1 = op.add(2 * (j + 4));
            let y0 = _mm256_add_ps(_mm256_loadu_ps(d0), _mm256_addsub_ps(a0, b0));
            let y1 = _mm256_add_ps(_mm256_loadu_ps(d1), _mm256_addsub_ps(a1, b1));
            _mm256_storeu_ps(d0, y0);
            _mm256_storeu_ps(d1, y1);
        }
        j += 8;
    }
    end
}

/// The AVX-512F version of [`phase_avx2`]: 8 complex per vector, items `start..end` with `end`
/// = `m − (m − start) % 8` (returned), with weights expanded to 32 f32 per (beam, antenna)
/// (8 × `[wr, wi]`, then 8 × `[−wi, wr]`).
///
/// # Safety
/// The CPU must support avx512f; `start <= m`; otherwise as [`phase_avx2`], with 32 f32 of
/// weights per (beam, antenna).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn phase_avx512(
    inputs: &[&[Complex32]],
    outputs: &mut [&mut [Complex32]],
    expanded: &[f32],
    antennas: usize,
    accumulate: bool,
    start: usize,
) -> usize {
    let m = outputs[0].len();
    let end = m - (m - start) % 8;
    let mut b0 = 0;
    while b0 < outputs.len() {
        let g = GROUP.min(outputs.len() - b0);
        let w = &expanded[b0 * antennas * 32..];
        let outs = &mut outputs[b0..b0 + g];
        // SAFETY: forwarded from the caller; `w` holds 32 f32 for each of the g beams here.
        unsafe {
            match g {
                8 => group512::<8>(inputs, outs, w, start, end, accumulate),
                7 => group512::<7>(inputs, outs, w, start, end, accumulate),
                6 => group512::<6>(inputs, outs, w, start, end, accumulate),
                5 => group512::<5>(inputs, outs, w, start, end, accumulate),
                4 => group512::<4>(inputs, outs, w, start, end, accumulate),
                3 => group512::<3>(inputs, outs, w, start, end, accumulate),
                2 => group512::<2>(inputs, outs, w, start, end, accumulate),
                _ => group512::<1>(inputs, outs, w, start, end, accumulate),
            }
        }
        b0 += g;
    }
    end
}

/// `G` beams at AVX-512, items `start..end` (`end − start` a multiple of 8).
///
/// # Safety
/// As [`phase_avx512`]; `w` holds `G · inputs.len() · 32` f32.
#[target_feature(enable = "avx512f")]
unsafe fn group512<const G: usize>(
    inputs: &[&[Complex32]],
    outputs: &mut [&mut [Complex32]],
    w: &[f32],
    start: usize,
    end: usize,
    accumulate: bool,
) {
    let n = inputs.len();
    let n_beams = G.min(outputs.len());
    let mut t = start;
    while t < end {
        let mut acc = [_mm512_setzero_ps(); G];
        for (k, x) in inputs.iter().enumerate() {
            // SAFETY: t + 8 <= end items readable from each input (caller); the weight index
            // (j·n + k)·32 + 31 < G·n·32 (caller).
            unsafe {
                let x = _mm512_loadu_ps(x.as_ptr().add(t).cast());
                let xr = _mm512_moveldup_ps(x);
                let xi = _mm512_movehdup_ps(x);
                for (j, a) in acc.iter_mut().enumerate() {
                    let e = w.as_ptr().add((j * n + k) * 32);
                    *a = _mm512_fmadd_ps(xr, _mm512_loadu_ps(e), *a);
                    *a = _mm512_fmadd_ps(xi, _mm512_loadu_ps(e.add(16)), *a);
                }
            }
        }
        for (a, y) in acc.iter().zip(outputs.iter_mut()).take(n_beams) {
            // SAFETY: t + 8 <= end items writable in each output (caller).
            unsafe {
                let dst: *mut f32 = y.as_mut_ptr().add(t).cast();
                let v = if accumulate {
                    _mm512_add_ps(_mm512_loadu_ps(dst), *a)
                } else {
                    *a
                };
                _mm512_storeu_ps(dst, v);
            }
        }
        t += 8;
    }
}
