//! Elementwise sums of several streams: `out[j] = x0[j] + x1[j] + …`, written in place.
//!
//! The inputs are added left to right (`((x0 + x1) + x2) + …`), the order of a plain loop, so a
//! result is bit-exact against one. Items are processed in blocks of [`BLOCK`] and inputs in
//! groups of up to four, so that each loop vectorises and, with more than four inputs, the
//! partial sums stay in L1 between groups.

use std::ops::Add;

/// Items that can be summed elementwise: `f32`, `Complex32` and the like.
pub trait Summable: Copy + Add<Output = Self> {}

impl<T: Copy + Add<Output = T>> Summable for T {}

/// Items per block of the sums (4 KiB of `f32`, 8 KiB of `Complex32`).
const BLOCK: usize = 1024;

/// `out[j] = a[j] + b[j]` for `j < n`, with `n` the shortest of the three; returns `n`.
pub fn add<T: Summable>(a: &[T], b: &[T], out: &mut [T]) -> usize {
    let n = a.len().min(b.len()).min(out.len());
    for ((o, &x), &y) in out[..n].iter_mut().zip(&a[..n]).zip(&b[..n]) {
        *o = x + y;
    }
    n
}

/// `out[j] = inputs[0][j] + inputs[1][j] + …` for `j < n`, with `n` the shortest of `out` and
/// the inputs; returns `n` (0 when there are no inputs). One input is a copy.
pub fn sum<T: Summable>(inputs: &[&[T]], out: &mut [T]) -> usize {
    sum_blocks(inputs, out, false)
}

/// `out[j] = out[j] + inputs[0][j] + inputs[1][j] + …` (adds to what `out` holds), for `j < n`
/// as in [`sum`]; returns `n`. A sum of many inputs can be made in several calls.
pub fn sum_accumulate<T: Summable>(inputs: &[&[T]], out: &mut [T]) -> usize {
    sum_blocks(inputs, out, true)
}

fn sum_blocks<T: Summable>(inputs: &[&[T]], out: &mut [T], accumulate: bool) -> usize {
    if inputs.is_empty() {
        return 0;
    }
    let n = inputs.iter().map(|x| x.len()).fold(out.len(), usize::min);
    for start in (0..n).step_by(BLOCK) {
        let end = (start + BLOCK).min(n);
        let o = &mut out[start..end];
        let mut rest = inputs;
        if !accumulate {
            let (group, tail) = rest.split_at(rest.len().min(4));
            set(o, group, start);
            rest = tail;
        }
        while !rest.is_empty() {
            let (group, tail) = rest.split_at(rest.len().min(4));
            accumulate_group(o, group, start);
            rest = tail;
        }
    }
    n
}

/// `o = Σ group[..][start..]`, for a group of one to four inputs.
fn set<T: Summable>(o: &mut [T], group: &[&[T]], start: usize) {
    let m = o.len();
    let x = |i: usize| &group[i][start..start + m];
    match group.len() {
        1 => o.copy_from_slice(x(0)),
        2 => {
            for ((o, &a), &b) in o.iter_mut().zip(x(0)).zip(x(1)) {
                *o = a + b;
            }
        }
        3 => {
            for (((o, &a), &b), &c) in o.iter_mut().zip(x(0)).zip(x(1)).zip(x(2)) {
                *o = a + b + c;
            }
        }
        _ => {
            for ((((o, &a), &b), &c), &d) in o.iter_mut().zip(x(0)).zip(x(1)).zip(x(2)).zip(x(3)) {
                *o = a + b + c + d;
            }
        }
    }
}

/// `o = o + Σ group[..][start..]`, for a group of one to four inputs.
fn accumulate_group<T: Summable>(o: &mut [T], group: &[&[T]], start: usize) {
    let m = o.len();
    let x = |i: usize| &group[i][start..start + m];
    match group.len() {
        1 => {
            for (o, &a) in o.iter_mut().zip(x(0)) {
                *o = *o + a;
            }
        }
        2 => {
            for ((o, &a), &b) in o.iter_mut().zip(x(0)).zip(x(1)) {
                *o = *o + a + b;
            }
        }
        3 => {
            for (((o, &a), &b), &c) in o.iter_mut().zip(x(0)).zip(x(1)).zip(x(2)) {
                *o = *o + a + b + c;
            }
        }
        _ => {
            for ((((o, &a), &b), &c), &d) in o.iter_mut().zip(x(0)).zip(x(1)).zip(x(2)).zip(x(3)) {
                *o = *o + a + b + c + d;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex32;

    fn signal(len: usize, seed: u32) -> Vec<f32> {
        (0..len as u32)
            .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 1000) as f32 * 0.37 - 150.0)
            .collect()
    }

    /// The plain loop the kernels must match bit for bit.
    fn reference(inputs: &[Vec<f32>], n: usize) -> Vec<f32> {
        (0..n)
            .map(|j| {
                let mut acc = inputs[0][j];
                for x in &inputs[1..] {
                    acc += x[j];
                }
                acc
            })
            .collect()
    }

    #[test]
    fn sums_of_one_to_nine_inputs_match_a_plain_loop_bit_for_bit() {
        for count in 1..=9 {
            let inputs: Vec<Vec<f32>> = (0..count)
                .map(|i| signal(3 * BLOCK + 17 + i, i as u32))
                .collect();
            let views: Vec<&[f32]> = inputs.iter().map(|x| x.as_slice()).collect();
            let mut out = vec![0.0; 4 * BLOCK];
            let n = sum(&views, &mut out);
            assert_eq!(n, 3 * BLOCK + 17, "{count} inputs");
            assert_eq!(out[..n], reference(&inputs, n)[..], "{count} inputs");
        }
    }

    #[test]
    fn accumulating_in_groups_matches_one_sum() {
        let inputs: Vec<Vec<f32>> = (0..7).map(|i| signal(2000, i)).collect();
        let views: Vec<&[f32]> = inputs.iter().map(|x| x.as_slice()).collect();
        let mut whole = vec![0.0; 2000];
        sum(&views, &mut whole);
        let mut parts = vec![0.0; 2000];
        sum(&views[..3], &mut parts);
        sum_accumulate(&views[3..], &mut parts);
        assert_eq!(parts, whole);
    }

    #[test]
    fn add_is_a_two_input_sum_and_stops_at_the_shortest() {
        let (a, b) = (signal(100, 1), signal(90, 2));
        let mut out = vec![0.0; 95];
        assert_eq!(add(&a, &b, &mut out), 90);
        let mut want = vec![0.0; 95];
        sum(&[&a, &b], &mut want);
        assert_eq!(out[..90], want[..90]);
        let c: Vec<Complex32> = (0..10).map(|i| Complex32::new(i as f32, 1.0)).collect();
        let mut y = vec![Complex32::default(); 10];
        assert_eq!(add(&c, &c, &mut y), 10);
        assert_eq!(y[3], Complex32::new(6.0, 2.0));
        assert_eq!(sum::<f32>(&[], &mut out), 0);
    }
}
