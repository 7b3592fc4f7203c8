//! FFT plans through rustfft/realfft, created once per size and shared.
//!
//! Planning is expensive (it measures nothing but builds twiddle tables and picks an
//! algorithm for the CPU's SIMD level); a [`FftPlanCache`] keeps every plan it made, so a
//! second kernel of the same size gets the same `Arc`. The cache is thread-safe: one global
//! instance ([`FftPlanCache::global`]) serves the whole process, and private ones can be made.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftDirection, FftPlanner};

/// A thread-safe cache of complex and real FFT plans, keyed by size and direction.
pub struct FftPlanCache {
    inner: Mutex<Planners>,
}

struct Planners {
    complex: FftPlanner<f32>,
    real: RealFftPlanner<f32>,
    complex_plans: HashMap<(usize, bool), Arc<dyn Fft<f32>>>,
    r2c: HashMap<usize, Arc<dyn RealToComplex<f32>>>,
    c2r: HashMap<usize, Arc<dyn ComplexToReal<f32>>>,
}

impl Default for FftPlanCache {
    fn default() -> Self {
        Self::new()
    }
}

impl FftPlanCache {
    /// An empty cache.
    pub fn new() -> Self {
        FftPlanCache {
            inner: Mutex::new(Planners {
                complex: FftPlanner::new(),
                real: RealFftPlanner::new(),
                complex_plans: HashMap::new(),
                r2c: HashMap::new(),
                c2r: HashMap::new(),
            }),
        }
    }

    /// The process-wide cache.
    pub fn global() -> &'static FftPlanCache {
        static GLOBAL: OnceLock<FftPlanCache> = OnceLock::new();
        GLOBAL.get_or_init(FftPlanCache::new)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Planners> {
        // A panic while planning leaves only complete plans in the maps: keep using them.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The complex FFT of `len` points in `direction` (unnormalised, like rustfft).
    pub fn complex(&self, len: usize, direction: FftDirection) -> Arc<dyn Fft<f32>> {
        let mut p = self.lock();
        let key = (len, direction == FftDirection::Forward);
        if let Some(plan) = p.complex_plans.get(&key) {
            return Arc::clone(plan);
        }
        let plan = p.complex.plan_fft(len, direction);
        p.complex_plans.insert(key, Arc::clone(&plan));
        plan
    }

    /// The forward complex FFT of `len` points.
    pub fn forward(&self, len: usize) -> Arc<dyn Fft<f32>> {
        self.complex(len, FftDirection::Forward)
    }

    /// The inverse complex FFT of `len` points (unnormalised: scale by `1/len` yourself).
    pub fn inverse(&self, len: usize) -> Arc<dyn Fft<f32>> {
        self.complex(len, FftDirection::Inverse)
    }

    /// The real-to-complex FFT of `len` real points (`len/2 + 1` bins).
    pub fn real_forward(&self, len: usize) -> Arc<dyn RealToComplex<f32>> {
        let mut p = self.lock();
        if let Some(plan) = p.r2c.get(&len) {
            return Arc::clone(plan);
        }
        let plan = p.real.plan_fft_forward(len);
        p.r2c.insert(len, Arc::clone(&plan));
        plan
    }

    /// The complex-to-real inverse FFT of `len` real points (unnormalised).
    pub fn real_inverse(&self, len: usize) -> Arc<dyn ComplexToReal<f32>> {
        let mut p = self.lock();
        if let Some(plan) = p.c2r.get(&len) {
            return Arc::clone(plan);
        }
        let plan = p.real.plan_fft_inverse(len);
        p.c2r.insert(len, Arc::clone(&plan));
        plan
    }

    /// Number of distinct plans held (complex and real).
    pub fn len(&self) -> usize {
        let p = self.lock();
        p.complex_plans.len() + p.r2c.len() + p.c2r.len()
    }

    /// Whether the cache holds no plan.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex32;

    #[test]
    fn plans_are_reused_per_size_and_direction() {
        let cache = FftPlanCache::new();
        let a = cache.forward(64);
        let b = cache.forward(64);
        assert!(Arc::ptr_eq(&a, &b));
        let c = cache.inverse(64);
        assert!(!Arc::ptr_eq(&a, &c));
        let _ = cache.real_forward(64);
        let _ = cache.real_forward(64);
        let _ = cache.real_inverse(64);
        assert_eq!(cache.len(), 4);
        assert_eq!(a.len(), 64);
    }

    #[test]
    fn forward_then_inverse_is_identity_times_len() {
        let cache = FftPlanCache::global();
        let n = 128;
        let x: Vec<Complex32> = (0..n)
            .map(|i| Complex32::new((i as f32 * 0.37).sin(), (i as f32 * 0.11).cos()))
            .collect();
        let mut y = x.clone();
        cache.forward(n).process(&mut y);
        cache.inverse(n).process(&mut y);
        for (a, b) in x.iter().zip(&y) {
            assert!((a * n as f32 - b).norm() < 1e-3);
        }
    }
}
