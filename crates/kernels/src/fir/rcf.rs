//! Direct-form FIR with real taps on complex items: the inner loop of [`RealTaps`] over
//! `Complex32` (GNU Radio's `fir_filter_ccf`).
//!
//! Outputs are computed in blocks of `R` vectors of `C` complex items (`R·C` consecutive
//! outputs) held in registers while the loop walks the taps, so no horizontal reduction is
//! needed. The taps are walked phase by phase (`k = C·q + s`, `s < C`): within a phase,
//! accumulator `r` at tap `q` reads data vector `q + r`, so the vector just loaded for
//! accumulator `r` at tap `q + 1` is the one accumulator `r + 1` needs at tap `q`. Taking two
//! taps per step, `R + 1` loads feed `2R` multiply-adds, and the loop runs at the machine's
//! multiply-add rate rather than its load rate (`sluice bench radio` reports the share of the
//! measured peak). Each output sums its taps in one order (phase by phase, ascending within a
//! phase) in blocks and tail alike, so an output's bits do not depend on where a call begins.
//!
//! The AVX2+FMA kernel is in `rcf_x86.rs`; this file holds the dispatch, the tap layout and
//! the portable kernel (same order, plain multiply and add).
//!
//! [`RealTaps`]: super::RealTaps

use crate::simd;
use crate::SimdLevel;

/// The taps reordered phase by phase for vectors of `c` complex items: phase `s` holds
/// `rev[s], rev[s + c], …` at `taps[firsts[s]..firsts[s + 1]]`.
pub(super) struct Phases<'a> {
    pub(super) taps: &'a [f32],
    pub(super) firsts: [usize; 17],
    pub(super) count: usize,
}

/// Lays `rev` out phase by phase for vectors of `c` (≤ 16) complex items, into `buf`.
pub(super) fn phases<'a>(rev: &[f32], c: usize, buf: &'a mut Vec<f32>) -> Phases<'a> {
    buf.clear();
    let count = c.min(rev.len());
    let mut firsts = [0usize; 17];
    for s in 0..count {
        buf.extend(rev[s..].iter().step_by(c));
        firsts[s + 1] = buf.len();
    }
    Phases {
        taps: buf,
        firsts,
        count,
    }
}

impl Phases<'_> {
    /// The taps of phase `s`.
    pub(super) fn phase(&self, s: usize) -> &[f32] {
        &self.taps[self.firsts[s]..self.firsts[s + 1]]
    }
}

std::thread_local! {
    /// The phase-ordered taps of the current call (grown on first use on each thread).
    static TAPS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `out[m] = Σ_k rev[k] · x[m + k]` over interleaved complex `x` and `out` (as f32 pairs);
/// `x` must hold at least `out.len()/2 + rev.len() − 1` items (panics otherwise).
pub(super) fn filter(rev: &[f32], x: &[f32], out: &mut [f32]) {
    filter_with(simd::best(), rev, x, out)
}

/// [`filter`] at `level` (the portable kernel where the CPU cannot run it, and for AVX-512,
/// which has no kernel of its own: see `rcf_x86.rs`).
pub(super) fn filter_with(level: SimdLevel, rev: &[f32], x: &[f32], out: &mut [f32]) {
    let n = out.len() / 2;
    assert!(
        !rev.is_empty() && out.len().is_multiple_of(2) && x.len() >= 2 * (n + rev.len() - 1),
        "fir: window too short"
    );
    TAPS.with(|buf| {
        let buf = &mut buf.borrow_mut();
        #[cfg(target_arch = "x86_64")]
        if level != SimdLevel::Portable && simd::usable(SimdLevel::Avx2Fma) {
            let taps = phases(rev, super::rcf_x86::C, buf);
            // SAFETY: avx2 and fma were detected on this CPU just above; `x` holds
            // `n + taps − 1` items (asserted above), which is what the kernel reads.
            return unsafe { super::rcf_x86::run(&taps, x, out) };
        }
        portable(&phases(rev, PORTABLE_C, buf), x, out)
    })
}

/// Complex items per vector of the portable kernel (two SSE registers).
const PORTABLE_C: usize = 4;

/// Accumulators of the portable kernel.
const PORTABLE_R: usize = 6;

/// The portable kernel: blocks of `PORTABLE_R` vectors, one tap at a time, then the tail.
fn portable(taps: &Phases<'_>, x: &[f32], out: &mut [f32]) {
    const W: usize = 2 * PORTABLE_C;
    let blk = PORTABLE_C * PORTABLE_R;
    let n = out.len() / 2;
    let full = n / blk * blk;
    for b in (0..full).step_by(blk) {
        let mut acc = [[0.0f32; W]; PORTABLE_R];
        for s in 0..taps.count {
            let (vecs, _) = x[2 * (b + s)..].as_chunks::<W>();
            for (q, &t) in taps.phase(s).iter().enumerate() {
                for (a, d) in acc.iter_mut().zip(&vecs[q..q + PORTABLE_R]) {
                    for l in 0..W {
                        a[l] += t * d[l];
                    }
                }
            }
        }
        for (dst, a) in out[2 * b..2 * (b + blk)].chunks_exact_mut(W).zip(&acc) {
            dst.copy_from_slice(a);
        }
    }
    tail(taps, PORTABLE_C, x, out, full, |acc, t, v| acc + t * v);
}

/// Outputs `from..` one at a time, the taps in the block kernels' order, with `madd`.
#[inline(always)]
pub(super) fn tail(
    taps: &Phases<'_>,
    c: usize,
    x: &[f32],
    out: &mut [f32],
    from: usize,
    madd: impl Fn(f32, f32, f32) -> f32,
) {
    for i in from..out.len() / 2 {
        let (mut re, mut im) = (0.0f32, 0.0f32);
        for s in 0..taps.count {
            for (q, &t) in taps.phase(s).iter().enumerate() {
                let at = 2 * (i + s + c * q);
                re = madd(re, t, x[at]);
                im = madd(im, t, x[at + 1]);
            }
        }
        out[2 * i] = re;
        out[2 * i + 1] = im;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn every_level_matches_an_f64_sum_on_blocks_and_tails() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for (taps, n) in [
            (1, 1),
            (3, 47),
            (5, 48),
            (64, 1100),
            (9, 97),
            (256, 500),
            (2, 961),
        ] {
            let rev: Vec<f32> = (0..taps).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let x: Vec<f32> = (0..2 * (n + taps - 1))
                .map(|_| rng.gen_range(-1.0..1.0))
                .collect();
            for level in SimdLevel::supported() {
                let mut out = vec![0.0f32; 2 * n];
                filter_with(level, &rev, &x, &mut out);
                for m in 0..n {
                    for part in 0..2 {
                        let want: f64 = (0..taps)
                            .map(|k| f64::from(rev[k]) * f64::from(x[2 * (m + k) + part]))
                            .sum();
                        let got = f64::from(out[2 * m + part]);
                        assert!(
                            (got - want).abs() < 1e-5 * (1.0 + taps as f64).sqrt(),
                            "{level:?} taps {taps} output {m}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn an_output_does_not_depend_on_where_the_call_starts() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(6);
        let rev: Vec<f32> = (0..37).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let x: Vec<f32> = (0..2 * 600).map(|_| rng.gen_range(-1.0..1.0)).collect();
        for level in SimdLevel::supported() {
            let mut whole = vec![0.0f32; 2 * 564];
            filter_with(level, &rev, &x, &mut whole);
            for start in [1, 7, 13, 50] {
                let mut part = vec![0.0f32; 2 * (564 - start)];
                filter_with(level, &rev, &x[2 * start..], &mut part);
                assert_eq!(part[..], whole[2 * start..], "{level:?} from {start}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "window too short")]
    fn short_window_panics() {
        filter(&[1.0, 2.0], &[1.0, 2.0], &mut [0.0, 0.0]);
    }
}
