//! Multiplication by a constant: `out[j] = gain · x[j]`, for real and complex samples.

use num_complex::Complex32;
use std::ops::Mul;

/// Samples that can be scaled by a real gain: `f32` and `Complex32`.
pub trait Scalable: Copy + Mul<f32, Output = Self> {}

impl Scalable for f32 {}
impl Scalable for Complex32 {}

/// `out[j] = gain · x[j]` for `j < n`, with `n` the shorter of `x` and `out`; returns `n`
/// (consumed and produced: one output per input).
pub fn scale<T: Scalable>(x: &[T], gain: f32, out: &mut [T]) -> usize {
    let n = x.len().min(out.len());
    for (o, &v) in out[..n].iter_mut().zip(&x[..n]) {
        *o = v * gain;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_the_shorter_length_against_a_naive_reference() {
        let x: Vec<f32> = (0..10).map(|i| i as f32 - 4.5).collect();
        let mut out = vec![0.0f32; 7];
        assert_eq!(scale(&x, -2.0, &mut out), 7);
        for (j, o) in out.iter().enumerate() {
            assert_eq!(*o, -2.0 * x[j]);
        }
        let c = [Complex32::new(1.0, -2.0), Complex32::new(0.5, 3.0)];
        let mut out = [Complex32::default(); 4];
        assert_eq!(scale(&c, 3.0, &mut out), 2);
        assert_eq!(
            out[..2],
            [Complex32::new(3.0, -6.0), Complex32::new(1.5, 9.0)]
        );
        assert_eq!(out[2], Complex32::default());
    }

    #[test]
    fn chunking_does_not_change_the_result() {
        let x: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.37).sin()).collect();
        let mut whole = vec![0.0; 1000];
        scale(&x, 0.7, &mut whole);
        let mut pieces = vec![0.0; 1000];
        let mut at = 0;
        for len in [1, 13, 400, 586] {
            at += scale(&x[at..at + len], 0.7, &mut pieces[at..]);
        }
        assert_eq!(at, 1000);
        assert_eq!(whole, pieces);
    }
}
