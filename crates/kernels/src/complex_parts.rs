//! Complex samples taken apart and put together: conjugate, magnitude, magnitude squared, real
//! and imaginary parts, and a complex stream from a real and an imaginary one.
//!
//! Every function works on the shorter of its slices and returns that length (one output per
//! input item), as the other elementwise kernels do.

use num_complex::Complex32;

/// `out[j] = conj(x[j])`; returns the items done.
pub fn conjugate(x: &[Complex32], out: &mut [Complex32]) -> usize {
    let n = x.len().min(out.len());
    for (o, v) in out[..n].iter_mut().zip(&x[..n]) {
        *o = v.conj();
    }
    n
}

/// `out[j] = |x[j]|`, computed as `sqrt(re² + im²)` (no overflow guard: samples are far below
/// `f32::MAX.sqrt()`); returns the items done.
pub fn magnitude(x: &[Complex32], out: &mut [f32]) -> usize {
    let n = x.len().min(out.len());
    for (o, v) in out[..n].iter_mut().zip(&x[..n]) {
        *o = (v.re * v.re + v.im * v.im).sqrt();
    }
    n
}

/// `out[j] = |x[j]|² = re² + im²` (a power); returns the items done.
pub fn magnitude_squared(x: &[Complex32], out: &mut [f32]) -> usize {
    let n = x.len().min(out.len());
    for (o, v) in out[..n].iter_mut().zip(&x[..n]) {
        *o = v.re * v.re + v.im * v.im;
    }
    n
}

/// `out[j] = re(x[j])`; returns the items done.
pub fn real_part(x: &[Complex32], out: &mut [f32]) -> usize {
    let n = x.len().min(out.len());
    for (o, v) in out[..n].iter_mut().zip(&x[..n]) {
        *o = v.re;
    }
    n
}

/// `out[j] = im(x[j])`; returns the items done.
pub fn imag_part(x: &[Complex32], out: &mut [f32]) -> usize {
    let n = x.len().min(out.len());
    for (o, v) in out[..n].iter_mut().zip(&x[..n]) {
        *o = v.im;
    }
    n
}

/// `out[j] = re[j] + i·im[j]`; returns the items done (the shortest of the three).
pub fn to_complex(re: &[f32], im: &[f32], out: &mut [Complex32]) -> usize {
    let n = re.len().min(im.len()).min(out.len());
    for ((o, &a), &b) in out[..n].iter_mut().zip(&re[..n]).zip(&im[..n]) {
        *o = Complex32::new(a, b);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::rand_c;
    use num_complex::Complex64;
    use rand::SeedableRng;

    #[test]
    fn parts_match_f64_and_put_back_together() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let x = rand_c(777, &mut rng);
        let mut m = vec![0.0f32; 777];
        let mut p = vec![0.0f32; 777];
        let (mut re, mut im) = (vec![0.0f32; 777], vec![0.0f32; 777]);
        assert_eq!(magnitude(&x, &mut m), 777);
        assert_eq!(magnitude_squared(&x, &mut p), 777);
        assert_eq!(real_part(&x, &mut re), 777);
        assert_eq!(imag_part(&x, &mut im), 777);
        for (j, v) in x.iter().enumerate() {
            let w = Complex64::new(v.re.into(), v.im.into());
            assert!((f64::from(m[j]) - w.norm()).abs() <= 1e-6 * w.norm().max(1e-3));
            assert!((f64::from(p[j]) - w.norm_sqr()).abs() <= 1e-6 * w.norm_sqr().max(1e-6));
            assert_eq!((re[j], im[j]), (v.re, v.im));
        }
        let mut back = vec![Complex32::default(); 800];
        assert_eq!(to_complex(&re, &im[..700], &mut back), 700);
        assert_eq!(back[..700], x[..700]);
        let mut c = vec![Complex32::default(); 10];
        assert_eq!(conjugate(&x, &mut c), 10);
        assert_eq!(c[4], Complex32::new(x[4].re, -x[4].im));
    }

    #[test]
    fn chunking_does_not_change_the_result() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(10);
        let x = rand_c(300, &mut rng);
        let mut whole = vec![0.0f32; 300];
        magnitude(&x, &mut whole);
        let mut parts = vec![0.0f32; 300];
        let mut at = 0;
        for len in [1, 5, 200, 94] {
            at += magnitude(&x[at..at + len], &mut parts[at..]);
        }
        assert_eq!((at, whole), (300, parts));
    }
}
