//! Shared test helpers: random data, the f64 direct-convolution reference, a chunked driver.

use num_complex::{Complex32, Complex64};
use rand::Rng;

/// `n` uniform reals in [-1, 1).
pub fn rand_r(n: usize, rng: &mut impl Rng) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

/// `n` complex values with uniform parts in [-1, 1).
pub fn rand_c(n: usize, rng: &mut impl Rng) -> Vec<Complex32> {
    (0..n)
        .map(|_| Complex32::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
        .collect()
}

/// Direct convolution in f64 under the sliding-window contract: output `j` is
/// `Σ_k h[k]·x[j·d + L − 1 − k]`, for every `j` with `j·d + L ≤ x.len()`.
pub fn direct_f64(h: &[Complex32], x: &[Complex32], d: usize) -> Vec<Complex32> {
    let l = h.len();
    let mut out = Vec::new();
    let mut j = 0;
    while j * d + l <= x.len() {
        let mut acc = Complex64::new(0.0, 0.0);
        for (k, t) in h.iter().enumerate() {
            let v = x[j * d + l - 1 - k];
            acc +=
                Complex64::new(t.re as f64, t.im as f64) * Complex64::new(v.re as f64, v.im as f64);
        }
        out.push(Complex32::new(acc.re as f32, acc.im as f32));
        j += 1;
    }
    out
}

/// Asserts equal lengths and max |got − want| ≤ 1e-5 × max |want|.
pub fn assert_close(got: &[Complex32], want: &[Complex32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let peak = want
        .iter()
        .map(|v| v.norm())
        .fold(0.0f32, f32::max)
        .max(1e-30);
    let err = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).norm())
        .fold(0.0f32, f32::max);
    assert!(err <= 1e-5 * peak, "{what}: max error {err} vs peak {peak}");
}

/// Streams `x` through `f` (a `(window, out) -> (consumed, produced)` kernel) in random input
/// chunks of 1..=`max_chunk` items and output capacities of `min_out..=min_out + max_chunk`,
/// keeping unconsumed items as the next window's start; returns all outputs.
pub fn chunked<T: Copy + Default>(
    x: &[T],
    max_chunk: usize,
    min_out: usize,
    rng: &mut impl Rng,
    mut f: impl FnMut(&[T], &mut [T]) -> (usize, usize),
) -> Vec<T> {
    let mut pending: Vec<T> = Vec::new();
    let mut result = Vec::new();
    let mut fed = 0;
    let mut out = vec![T::default(); min_out + max_chunk];
    loop {
        if fed < x.len() {
            let k = rng.gen_range(1..=max_chunk).min(x.len() - fed);
            pending.extend_from_slice(&x[fed..fed + k]);
            fed += k;
        }
        loop {
            let cap = rng.gen_range(min_out..=min_out + max_chunk);
            let (c, p) = f(&pending, &mut out[..cap]);
            result.extend_from_slice(&out[..p]);
            pending.drain(..c);
            if p == 0 {
                break;
            }
        }
        if fed == x.len() {
            return result;
        }
    }
}

/// Counts heap allocations made by the current thread (the test binary's global allocator).
pub struct CountingAlloc;

std::thread_local! {
    static ALLOCATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator, which upholds the
// GlobalAlloc contract; the counter is a const-initialised thread-local Cell (no allocation).
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded with the caller's layout, as the caller's contract requires.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from `alloc` above, i.e. from the system allocator, with `layout`.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Heap allocations the current thread made while running `f`.
pub fn allocations_in(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(|c| c.get());
    f();
    ALLOCATIONS.with(|c| c.get()) - before
}

/// `len` complex samples of deterministic noise (the same as the block tests' `c32_noise`).
pub fn c32_noise(len: usize, seed: u64) -> Vec<Complex32> {
    let mut g = crate::Gaussian::new(seed);
    (0..len)
        .map(|_| {
            let (a, b) = g.pair();
            Complex32::new(a, b)
        })
        .collect()
}
