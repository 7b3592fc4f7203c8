//! Elementwise arithmetic between two streams (`a − b`, `a · b`, and `a + b` from [`add`]) and
//! with a constant (`x + c`), for real and complex samples.
//!
//! Each function works on the shortest of its slices and returns that length (consumed from
//! every input and produced: one output per input item), so a caller hands it queue windows
//! and a reservation as they come.
//!
//! [`add`]: super::add

use num_complex::Complex32;
use std::ops::{Add, Mul, Sub};

/// Samples the two-stream operations take: `f32` and `Complex32`.
pub trait Arith: Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> {}

impl Arith for f32 {}
impl Arith for Complex32 {}

/// An operation between two streams, item by item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a − b`.
    Subtract,
    /// `a · b` (the complex product for complex samples).
    Multiply,
}

impl BinaryOp {
    /// `out[j] = a[j] ∘ b[j]` for `j < n`, `n` the shortest of the three; returns `n`.
    pub fn apply<T: Arith>(self, a: &[T], b: &[T], out: &mut [T]) -> usize {
        match self {
            BinaryOp::Add => super::add(a, b, out),
            BinaryOp::Subtract => subtract(a, b, out),
            BinaryOp::Multiply => multiply(a, b, out),
        }
    }
}

/// `out[j] = a[j] − b[j]` for `j < n`, with `n` the shortest of the three; returns `n`.
pub fn subtract<T: Arith>(a: &[T], b: &[T], out: &mut [T]) -> usize {
    let n = a.len().min(b.len()).min(out.len());
    for ((o, &x), &y) in out[..n].iter_mut().zip(&a[..n]).zip(&b[..n]) {
        *o = x - y;
    }
    n
}

/// `out[j] = a[j] · b[j]` for `j < n`, with `n` the shortest of the three; returns `n`.
pub fn multiply<T: Arith>(a: &[T], b: &[T], out: &mut [T]) -> usize {
    let n = a.len().min(b.len()).min(out.len());
    for ((o, &x), &y) in out[..n].iter_mut().zip(&a[..n]).zip(&b[..n]) {
        *o = x * y;
    }
    n
}

/// `out[j] = x[j] + c` for `j < n`, with `n` the shorter of `x` and `out`; returns `n`.
pub fn add_const<T: Arith>(x: &[T], c: T, out: &mut [T]) -> usize {
    let n = x.len().min(out.len());
    for (o, &v) in out[..n].iter_mut().zip(&x[..n]) {
        *o = v + c;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::rand_c;
    use num_complex::Complex64;
    use rand::SeedableRng;

    fn wide(z: Complex32) -> Complex64 {
        Complex64::new(z.re.into(), z.im.into())
    }

    #[test]
    fn each_operation_matches_f64_on_complex_noise() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let (a, b) = (rand_c(1000, &mut rng), rand_c(990, &mut rng));
        let mut out = vec![Complex32::default(); 1000];
        type Reference = fn(Complex64, Complex64) -> Complex64;
        let ops: [(BinaryOp, Reference); 3] = [
            (BinaryOp::Add, |x, y| x + y),
            (BinaryOp::Subtract, |x, y| x - y),
            (BinaryOp::Multiply, |x, y| x * y),
        ];
        for (op, reference) in ops {
            assert_eq!(op.apply(&a, &b, &mut out), 990, "{op:?}");
            for j in 0..990 {
                let want = reference(wide(a[j]), wide(b[j]));
                let err = (wide(out[j]) - want).norm();
                assert!(err <= 1e-6 * (1.0 + want.norm()), "{op:?} item {j}");
            }
        }
        let c = Complex32::new(0.25, -2.0);
        assert_eq!(add_const(&a[..7], c, &mut out), 7);
        assert_eq!(out[3], a[3] + c);
    }

    #[test]
    fn chunking_does_not_change_the_result_and_reals_work() {
        let a: Vec<f32> = (0..500).map(|i| (i as f32 * 0.3).sin()).collect();
        let b: Vec<f32> = (0..500).map(|i| (i as f32 * 0.7).cos()).collect();
        let mut whole = vec![0.0; 500];
        multiply(&a, &b, &mut whole);
        let mut parts = vec![0.0; 500];
        let mut at = 0;
        for len in [1, 2, 97, 400] {
            at += multiply(&a[at..at + len], &b[at..], &mut parts[at..]);
        }
        assert_eq!((at, &whole), (500, &parts));
        let mut d = vec![0.0; 3];
        assert_eq!(subtract(&a, &b, &mut d), 3);
        assert_eq!(d[2], a[2] - b[2]);
    }
}
