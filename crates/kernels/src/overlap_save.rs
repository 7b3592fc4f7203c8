//! Overlap-save FFT filter for complex items with complex taps.
//!
//! With FFT size `N` and `L` taps, one block reads a window of exactly `N` items (the first
//! `L − 1` are the overlap with the previous block) and yields `step = N − L + 1` outputs,
//! equal to the direct-form filter's ([`super::Fir`]) over the same window. Blocks advance by
//! `step` items, so a reader of a sluice queue does `window(N)`, [`OverlapSave::process_block`],
//! `consume(step)`: the overlap is never copied.
//!
//! Per block: the window is copied into the forward FFT's buffer (rustfft transforms destroy
//! their input, so this copy is the transform's, not staging), forward FFT, multiply by the
//! stored filter spectrum, inverse FFT. The stored spectrum is that of the taps rotated left
//! by `L − 1` (and scaled by `1/N`), which rotates the circular result so the `step` valid
//! outputs come first; when the caller's output slice has room for `N` items the inverse FFT
//! writes straight into it (items `step..N` are then scratch, left unspecified), otherwise it
//! writes into the kernel's buffer and the valid part is copied out.
//!
//! The kernel keeps no state between blocks (the overlap is in the caller's window), so it
//! needs no `reset`. `process_block` allocates nothing.

use std::sync::Arc;

use num_complex::Complex32;
use rustfft::Fft;

use super::{cmul_assign, DspError, FftPlanCache};

/// An overlap-save FFT filter (see the module docs).
pub struct OverlapSave {
    fft_size: usize,
    taps_len: usize,
    forward: Arc<dyn Fft<f32>>,
    inverse: Arc<dyn Fft<f32>>,
    /// Spectrum of the rotated taps, scaled by `1/N`.
    spectrum: Vec<Complex32>,
    buf: Vec<Complex32>,
    freq: Vec<Complex32>,
    scratch: Vec<Complex32>,
}

impl std::fmt::Debug for OverlapSave {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OverlapSave")
            .field("fft_size", &self.fft_size)
            .field("taps_len", &self.taps_len)
            .finish()
    }
}

impl OverlapSave {
    /// A filter with complex `taps` and FFT size `fft_size`, planned through the global cache.
    pub fn new(taps: &[Complex32], fft_size: usize) -> Result<Self, DspError> {
        Self::with_cache(taps, fft_size, FftPlanCache::global())
    }

    /// As [`OverlapSave::new`] with real taps.
    pub fn new_real(taps: &[f32], fft_size: usize) -> Result<Self, DspError> {
        let c: Vec<Complex32> = taps.iter().map(|&t| Complex32::new(t, 0.0)).collect();
        Self::new(&c, fft_size)
    }

    /// As [`OverlapSave::new`], planning through `cache`.
    pub fn with_cache(
        taps: &[Complex32],
        fft_size: usize,
        cache: &FftPlanCache,
    ) -> Result<Self, DspError> {
        if taps.is_empty() {
            return Err(DspError::EmptyTaps);
        }
        if fft_size < 2 || !fft_size.is_power_of_two() {
            return Err(DspError::FftSizeNotPowerOfTwo(fft_size));
        }
        if taps.len() > fft_size {
            return Err(DspError::TapsTooLong {
                taps: taps.len(),
                fft_size,
            });
        }
        let (n, l) = (fft_size, taps.len());
        let forward = cache.forward(n);
        let inverse = cache.inverse(n);
        // Rotate left by L−1: tap k goes to (k − (L−1)) mod N.
        let scale = 1.0 / n as f32;
        let mut spectrum = vec![Complex32::new(0.0, 0.0); n];
        for (k, t) in taps.iter().enumerate() {
            spectrum[(k + n - (l - 1)) % n] = t * scale;
        }
        forward.process(&mut spectrum);
        let scratch_len = forward
            .get_outofplace_scratch_len()
            .max(inverse.get_outofplace_scratch_len());
        Ok(OverlapSave {
            fft_size: n,
            taps_len: l,
            forward,
            inverse,
            spectrum,
            buf: vec![Complex32::new(0.0, 0.0); n],
            freq: vec![Complex32::new(0.0, 0.0); n],
            scratch: vec![Complex32::new(0.0, 0.0); scratch_len],
        })
    }

    /// The FFT size `N` (= the window length a block reads).
    pub fn fft_size(&self) -> usize {
        self.fft_size
    }

    /// The number of taps `L` (the overlap is `L − 1`).
    pub fn taps_len(&self) -> usize {
        self.taps_len
    }

    /// Outputs per block and items consumed per block: `N − L + 1`.
    pub fn step(&self) -> usize {
        self.fft_size - self.taps_len + 1
    }

    /// Filters one block: reads `window[..N]`, writes `step()` outputs to `out[..step()]`.
    /// If `out.len() ≥ N`, `out[step()..N]` is used as scratch. `Err` if `window` is shorter
    /// than `N` or `out` shorter than `step()`.
    pub fn process_block(
        &mut self,
        window: &[Complex32],
        out: &mut [Complex32],
    ) -> Result<(), DspError> {
        let (n, step) = (self.fft_size, self.step());
        if window.len() < n {
            return Err(DspError::WindowTooShort {
                needed: n,
                got: window.len(),
            });
        }
        if out.len() < step {
            return Err(DspError::OutputTooShort {
                needed: step,
                got: out.len(),
            });
        }
        self.buf.copy_from_slice(&window[..n]);
        self.forward.process_outofplace_with_scratch(
            &mut self.buf,
            &mut self.freq,
            &mut self.scratch,
        );
        cmul_assign(&mut self.freq, &self.spectrum);
        if out.len() >= n {
            self.inverse.process_outofplace_with_scratch(
                &mut self.freq,
                &mut out[..n],
                &mut self.scratch,
            );
        } else {
            self.inverse.process_outofplace_with_scratch(
                &mut self.freq,
                &mut self.buf,
                &mut self.scratch,
            );
            out[..step].copy_from_slice(&self.buf[..step]);
        }
        Ok(())
    }

    /// Filters as many whole blocks as fit (sliding-window contract of [`super::Fir`]: the
    /// first `L − 1` input items are history). Returns `(consumed, produced)`, both a multiple
    /// of `step()`.
    pub fn filter(&mut self, input: &[Complex32], output: &mut [Complex32]) -> (usize, usize) {
        let step = self.step();
        let mut done = 0;
        while done + self.fft_size <= input.len() && done + step <= output.len() {
            let out = &mut output[done..];
            let window = &input[done..done + self.fft_size];
            // Both lengths were checked by the loop condition, so this cannot fail.
            if self.process_block(window, out).is_err() {
                break;
            }
            done += step;
        }
        (done, done)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{allocations_in, assert_close, chunked, direct_f64, rand_c};
    use super::super::{ComplexTaps, Fir, RealTaps};
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn blocks_match_the_f64_direct_convolution() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(31);
        for (n, l) in [
            (2, 1),
            (2, 2),
            (16, 1),
            (16, 5),
            (64, 64),
            (256, 100),
            (1024, 257),
            (4096, 1024),
        ] {
            let (h, x) = (rand_c(l, &mut rng), rand_c(3 * n, &mut rng));
            let mut os = OverlapSave::new(&h, n).unwrap();
            assert_eq!((os.fft_size(), os.taps_len(), os.step()), (n, l, n - l + 1));
            let want = direct_f64(&h, &x[..n], 1);
            // Short output (copy path) and long output (direct inverse FFT path).
            let mut short = vec![Complex32::default(); os.step()];
            os.process_block(&x[..n], &mut short).unwrap();
            assert_close(&short, &want, &format!("N={n} L={l} short"));
            let mut long = vec![Complex32::default(); n + 3];
            os.process_block(&x[..n + 3], &mut long).unwrap();
            assert_close(&long[..os.step()], &want, &format!("N={n} L={l} long"));
            // Whole-stream form over several blocks.
            let mut all = vec![Complex32::default(); 3 * n];
            let (c, p) = os.filter(&x, &mut all);
            assert_eq!(c, p);
            assert_close(&all[..p], &direct_f64(&h, &x[..p + l - 1], 1), "filter");
        }
    }

    #[test]
    fn random_chunking_equals_one_shot() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(32);
        let (h, x) = (rand_c(40, &mut rng), rand_c(5000, &mut rng));
        let mut os = OverlapSave::new(&h, 128).unwrap();
        let mut once = vec![Complex32::default(); 5000];
        let (_, n) = os.filter(&x, &mut once);
        once.truncate(n);
        let step = os.step();
        let streamed = chunked(&x, 300, step, &mut rng, |w, o| os.filter(w, o));
        assert_eq!(streamed, once);
    }

    #[test]
    fn invalid_configurations_are_refused_with_the_value() {
        let h = vec![Complex32::new(1.0, 0.0); 8];
        let e = OverlapSave::new(&[], 16).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the filter has no taps (at least 1 is needed)"
        );
        let e = OverlapSave::new(&h, 24).unwrap_err();
        assert_eq!(
            e.to_string(),
            "FFT size 24 is not a power of two (at least 2)"
        );
        assert!(OverlapSave::new(&h, 0)
            .unwrap_err()
            .to_string()
            .contains("size 0"));
        let e = OverlapSave::new(&h, 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "8 taps do not fit an FFT of size 4 (at most 4 taps)"
        );
        let mut os = OverlapSave::new(&h, 16).unwrap();
        let mut out = vec![Complex32::default(); 16];
        let e = os.process_block(&out.clone()[..15], &mut out).unwrap_err();
        assert!(e.to_string().contains("holds 15 items") && e.to_string().contains("needs 16"));
        let w = vec![Complex32::default(); 16];
        let e = os.process_block(&w, &mut out[..8]).unwrap_err();
        assert!(e.to_string().contains("holds 8 items") && e.to_string().contains("writes 9"));
    }

    #[test]
    fn steady_state_filtering_does_not_allocate() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(33);
        let (h, x) = (rand_c(100, &mut rng), rand_c(4096, &mut rng));
        let mut os = OverlapSave::new(&h, 512).unwrap();
        let mut fir = Fir::new(ComplexTaps::new(&h).unwrap());
        let mut dec = Fir::decimating(RealTaps::new(&[0.5; 33]).unwrap(), 4).unwrap();
        let mut out = vec![Complex32::default(); 4096];
        os.filter(&x, &mut out); // first call: nothing left to set up, but be sure
        let n = allocations_in(|| {
            for _ in 0..3 {
                os.filter(&x, &mut out);
                os.process_block(&x[..512], &mut out[..413]).unwrap(); // copy-out path
                fir.filter(&x[..], &mut out);
                dec.filter(&x[..], &mut out);
            }
        });
        assert_eq!(n, 0, "allocations in steady state");
        assert!(
            allocations_in(|| drop(std::hint::black_box(vec![0u8; 8]))) >= 1,
            "counts"
        );
    }

    #[test]
    fn real_taps_constructor_matches_complex() {
        let mut a = OverlapSave::new_real(&[0.5, -1.0, 2.0], 8).unwrap();
        let h = [0.5, -1.0, 2.0].map(|t| Complex32::new(t, 0.0));
        let mut b = OverlapSave::new(&h, 8).unwrap();
        let x = rand_c(8, &mut rand::rngs::StdRng::seed_from_u64(1));
        let (mut oa, mut ob) = (vec![Complex32::default(); 6], vec![Complex32::default(); 6]);
        a.process_block(&x, &mut oa).unwrap();
        b.process_block(&x, &mut ob).unwrap();
        assert_eq!(oa, ob);
    }
}
