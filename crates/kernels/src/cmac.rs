//! Complex multiply (`out[i] = a[i]·b[i]`, `a[i] *= b[i]`) and multiply-accumulate
//! (`acc[i] += a[i]·b[i]`) over `Complex32` slices.
//!
//! Three implementations, chosen once at run time: AVX-512F, AVX2+FMA (both through
//! `std::arch`) and a portable loop. [`SimdLevel::detect`] picks the best the CPU has; the
//! `*_with` functions run one level explicitly (tests and benches compare them).
//!
//! The x86 paths use the classic interleaved trick: with `a = [ar, ai]`, `b = [br, bi]`,
//! `fmaddsub(a, dup_re(b), swap(a)·dup_im(b))` gives `[ar·br − ai·bi, ai·br + ar·bi]`.

use num_complex::Complex32;

#[cfg(target_arch = "x86_64")]
use super::cmac_x86;
use super::DspError;

/// An implementation level of the complex-multiply kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimdLevel {
    /// The plain loop (any CPU).
    Portable,
    /// AVX2 with FMA, 4 complex per vector.
    Avx2Fma,
    /// AVX-512F, 8 complex per vector.
    Avx512,
}

impl SimdLevel {
    /// The best level this CPU supports (detected once, then cached).
    pub fn detect() -> SimdLevel {
        use std::sync::OnceLock;
        static LEVEL: OnceLock<SimdLevel> = OnceLock::new();
        *LEVEL.get_or_init(|| {
            if SimdLevel::Avx512.is_supported() {
                SimdLevel::Avx512
            } else if SimdLevel::Avx2Fma.is_supported() {
                SimdLevel::Avx2Fma
            } else {
                SimdLevel::Portable
            }
        })
    }

    /// Whether this CPU can run this level.
    pub fn is_supported(self) -> bool {
        match self {
            SimdLevel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2Fma => {
                is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => is_x86_feature_detected!("avx512f"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Every level this CPU supports, portable first.
    pub fn supported() -> Vec<SimdLevel> {
        [SimdLevel::Portable, SimdLevel::Avx2Fma, SimdLevel::Avx512]
            .into_iter()
            .filter(|l| l.is_supported())
            .collect()
    }

    /// A short name ("portable", "avx2+fma", "avx512f").
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Portable => "portable",
            SimdLevel::Avx2Fma => "avx2+fma",
            SimdLevel::Avx512 => "avx512f",
        }
    }
}

/// What a kernel does with each product.
#[derive(Clone, Copy)]
pub(super) enum Op {
    /// `out = a·b`.
    Mul,
    /// `out += a·b`.
    Mac,
}

/// `out[i] = a[i]·b[i]` at the best level. Panics if the three lengths differ.
pub fn cmul(a: &[Complex32], b: &[Complex32], out: &mut [Complex32]) {
    run(SimdLevel::detect(), Op::Mul, a, b, out);
}

/// `acc[i] += a[i]·b[i]` at the best level. Panics if the three lengths differ.
pub fn cmac(a: &[Complex32], b: &[Complex32], acc: &mut [Complex32]) {
    run(SimdLevel::detect(), Op::Mac, a, b, acc);
}

/// `a[i] *= b[i]` at the best level (in place, no copy). Panics if the two lengths differ.
pub fn cmul_assign(a: &mut [Complex32], b: &[Complex32]) {
    assert_eq!(a.len(), b.len(), "cmul_assign: slice lengths differ");
    let p = a.as_mut_ptr();
    // SAFETY: `p` covers a.len() items and `b` as many (assert); the kernels read element i
    // (or vector i) of the first operand before writing the same element, so aliasing the
    // first operand with the output is sound; no reference to `a` is alive meanwhile.
    unsafe { run_raw(SimdLevel::detect(), Op::Mul, p, b.as_ptr(), p, a.len()) }
}

/// `out[i] = a[i]·b[i]` at `level`; `Err` if the CPU lacks it. Panics if lengths differ.
pub fn cmul_with(
    level: SimdLevel,
    a: &[Complex32],
    b: &[Complex32],
    out: &mut [Complex32],
) -> Result<(), DspError> {
    if !level.is_supported() {
        return Err(DspError::SimdUnavailable(level.name()));
    }
    run(level, Op::Mul, a, b, out);
    Ok(())
}

/// `acc[i] += a[i]·b[i]` at `level`; `Err` if the CPU lacks it. Panics if lengths differ.
pub fn cmac_with(
    level: SimdLevel,
    a: &[Complex32],
    b: &[Complex32],
    acc: &mut [Complex32],
) -> Result<(), DspError> {
    if !level.is_supported() {
        return Err(DspError::SimdUnavailable(level.name()));
    }
    run(level, Op::Mac, a, b, acc);
    Ok(())
}

fn run(level: SimdLevel, op: Op, a: &[Complex32], b: &[Complex32], out: &mut [Complex32]) {
    assert!(
        a.len() == b.len() && a.len() == out.len(),
        "complex multiply: slice lengths differ ({}, {}, {})",
        a.len(),
        b.len(),
        out.len()
    );
    // SAFETY: the three slices have out.len() items each (assert above) and `out` is a unique
    // borrow, so it does not overlap `a` or `b`.
    unsafe {
        run_raw(
            level,
            op,
            a.as_ptr(),
            b.as_ptr(),
            out.as_mut_ptr(),
            out.len(),
        )
    }
}

/// Dispatches to the level's kernel, falling back to the portable loop if it is unsupported.
///
/// # Safety
/// `a` and `b` must be valid for reading, `out` for writing, `n` items each; `out` may equal
/// `a` (in place) but must not otherwise overlap `a` or `b`.
unsafe fn run_raw(
    level: SimdLevel,
    op: Op,
    a: *const Complex32,
    b: *const Complex32,
    out: *mut Complex32,
    n: usize,
) {
    match level {
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 if level.is_supported() => {
            // SAFETY: avx512f detected just above; pointer validity is the caller's contract.
            unsafe { cmac_x86::avx512(op, a.cast(), b.cast(), out.cast(), n) }
        }
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2Fma if level.is_supported() => {
            // SAFETY: avx2 and fma detected just above; pointer validity is the caller's.
            unsafe { cmac_x86::avx2(op, a.cast(), b.cast(), out.cast(), n) }
        }
        // SAFETY: pointer validity and aliasing rules are the caller's contract.
        _ => unsafe { scalar(op, a, b, out, 0, n) },
    }
}

/// The plain loop over items `from..n`, element by element (so `out == a` is allowed).
///
/// # Safety
/// As for [`run_raw`].
#[inline(always)]
pub(super) unsafe fn scalar(
    op: Op,
    a: *const Complex32,
    b: *const Complex32,
    out: *mut Complex32,
    from: usize,
    n: usize,
) {
    for i in from..n {
        // SAFETY: i < n, and the caller guarantees n valid items behind each pointer.
        unsafe {
            let p = *a.add(i) * *b.add(i);
            match op {
                Op::Mul => *out.add(i) = p,
                Op::Mac => *out.add(i) += p,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn random(n: usize, rng: &mut impl Rng) -> Vec<Complex32> {
        (0..n)
            .map(|_| Complex32::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
            .collect()
    }

    #[test]
    fn every_level_matches_the_plain_loop() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for n in [0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 64, 1000, 1027] {
            let (a, b, acc0) = (
                random(n, &mut rng),
                random(n, &mut rng),
                random(n, &mut rng),
            );
            let want_mul: Vec<Complex32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
            let want_mac: Vec<Complex32> = acc0.iter().zip(&want_mul).map(|(c, p)| c + p).collect();
            for level in SimdLevel::supported() {
                let mut out = vec![Complex32::new(9.0, 9.0); n];
                cmul_with(level, &a, &b, &mut out).expect("supported level");
                let mut acc = acc0.clone();
                cmac_with(level, &a, &b, &mut acc).expect("supported level");
                for i in 0..n {
                    assert!(
                        (out[i] - want_mul[i]).norm() < 1e-6,
                        "{level:?} mul n={n} i={i}"
                    );
                    assert!(
                        (acc[i] - want_mac[i]).norm() < 1e-6,
                        "{level:?} mac n={n} i={i}"
                    );
                }
            }
            let mut inplace = a.clone();
            cmul_assign(&mut inplace, &b);
            for i in 0..n {
                assert!(
                    (inplace[i] - want_mul[i]).norm() < 1e-6,
                    "assign n={n} i={i}"
                );
            }
        }
    }

    #[test]
    fn detection_is_consistent_and_unsupported_levels_are_refused() {
        let best = SimdLevel::detect();
        assert!(best.is_supported());
        assert!(SimdLevel::supported().contains(&best));
        for level in [SimdLevel::Avx2Fma, SimdLevel::Avx512] {
            if !level.is_supported() {
                let e = cmul_with(level, &[], &[], &mut []).expect_err("unsupported");
                assert!(e.to_string().contains(level.name()));
            }
        }
    }

    #[test]
    #[should_panic(expected = "lengths differ")]
    fn mismatched_lengths_panic() {
        let a = [Complex32::new(1.0, 0.0); 3];
        let mut out = [Complex32::new(0.0, 0.0); 2];
        cmul(&a, &a, &mut out);
    }
}
