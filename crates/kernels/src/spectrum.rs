//! Power spectra with averaging: each output is a frame of `size` power values in dB,
//! averaged over `averages` consecutive windowed FFTs of `size` samples (Welch's method
//! without overlap).
//!
//! Frame `k` of the input, `x_k[n]`, gives `P_k[m] = |Σ_n w[n]·x_k[n]·e^{−2πi·mn/size}|² / (Σ w)²`,
//! and the output is `10·log10(mean_k P_k)`: a complex tone of amplitude A on a bin reads
//! `20·log10 A` dB (0 dB at full scale), whatever the window. Bins are in frequency order with
//! DC in the middle (`fftshift`): output `j` is frequency `(j − size/2) / size` cycles/sample,
//! from −½ up. A real input is analysed as complex (its spectrum is symmetric; a real tone of
//! amplitude A reads `20·log10(A/2)` dB on each side).

use super::{DspError, FftPlanCache};
use num_complex::Complex32;
use rustfft::Fft;
use std::f64::consts::PI;
use std::sync::Arc;

/// The window of a spectrum frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpectrumWindow {
    /// Hann: −31 dB side lobes, 1.5 bins of noise bandwidth.
    Hann,
    /// 4-term Blackman–Harris: −92 dB side lobes, 2.0 bins of noise bandwidth.
    BlackmanHarris,
    /// No window (rectangular): for tones on bins only.
    Rectangular,
}

impl SpectrumWindow {
    /// The window called `name` (`hann`, `blackman_harris`, `rectangular`).
    pub fn parse(name: &str) -> Result<Self, DspError> {
        match name {
            "hann" => Ok(SpectrumWindow::Hann),
            "blackman_harris" => Ok(SpectrumWindow::BlackmanHarris),
            "rectangular" => Ok(SpectrumWindow::Rectangular),
            other => Err(DspError::InvalidParameter {
                name: "window",
                value: other.to_string(),
                expected: "hann, blackman_harris or rectangular",
            }),
        }
    }

    /// `len` coefficients (periodic form, as spectral analysis uses).
    pub fn coefficients(self, len: usize) -> Vec<f64> {
        let cos_sum = |a: &[f64]| -> Vec<f64> {
            (0..len)
                .map(|n| {
                    let t = 2.0 * PI * n as f64 / len as f64;
                    a.iter()
                        .enumerate()
                        .map(|(k, c)| {
                            c * (k as f64 * t).cos() * if k % 2 == 1 { -1.0 } else { 1.0 }
                        })
                        .sum()
                })
                .collect()
        };
        match self {
            SpectrumWindow::Hann => cos_sum(&[0.5, 0.5]),
            SpectrumWindow::BlackmanHarris => cos_sum(&[0.35875, 0.48829, 0.14128, 0.01168]),
            SpectrumWindow::Rectangular => vec![1.0; len],
        }
    }
}

/// Samples a spectrum analyses: `f32` and `Complex32`.
pub trait SpectrumSample: Copy {
    /// The sample as complex.
    fn complex(self) -> Complex32;
}

impl SpectrumSample for f32 {
    fn complex(self) -> Complex32 {
        Complex32::new(self, 0.0)
    }
}

impl SpectrumSample for Complex32 {
    fn complex(self) -> Complex32 {
        self
    }
}

/// The largest FFT of a spectrum.
pub const MAX_SPECTRUM_SIZE: usize = 1 << 22;

/// An averaging power spectrum (see the module docs).
pub struct PowerSpectrum {
    size: usize,
    averages: usize,
    window: Vec<f32>,
    fft: Arc<dyn Fft<f32>>,
    buf: Vec<Complex32>,
    scratch: Vec<Complex32>,
    power: Vec<f64>,
    /// `1 / ((Σ w)² · averages)`.
    norm: f64,
}

impl std::fmt::Debug for PowerSpectrum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PowerSpectrum")
            .field("size", &self.size)
            .field("averages", &self.averages)
            .finish_non_exhaustive()
    }
}

impl PowerSpectrum {
    /// Spectra of `size` bins (2 ..= 2²²; any size, powers of two are fastest), each the mean
    /// of `averages` (at least 1) frames, windowed by `window`.
    pub fn new(size: usize, window: SpectrumWindow, averages: usize) -> Result<Self, DspError> {
        if !(2..=MAX_SPECTRUM_SIZE).contains(&size) {
            return Err(DspError::InvalidParameter {
                name: "fft_size",
                value: size.to_string(),
                expected: "between 2 and 4194304",
            });
        }
        if averages == 0 {
            return Err(DspError::InvalidParameter {
                name: "averages",
                value: "0".into(),
                expected: "at least 1",
            });
        }
        let w = window.coefficients(size);
        let gain: f64 = w.iter().sum();
        let fft = FftPlanCache::global().forward(size);
        Ok(PowerSpectrum {
            size,
            averages,
            window: w.iter().map(|&v| v as f32).collect(),
            scratch: vec![Complex32::default(); fft.get_inplace_scratch_len()],
            fft,
            buf: vec![Complex32::default(); size],
            power: vec![0.0; size],
            norm: 1.0 / (gain * gain * averages as f64),
        })
    }

    /// Bins per spectrum.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Input samples per spectrum (`size · averages`).
    pub fn input_per_output(&self) -> usize {
        self.size * self.averages
    }

    /// Makes as many spectra as `x` and `out` hold (each reads `size · averages` samples and
    /// writes `size` values); returns `(consumed, produced)`.
    pub fn process<S: SpectrumSample>(&mut self, x: &[S], out: &mut [f32]) -> (usize, usize) {
        let per = self.input_per_output();
        let spectra = (x.len() / per).min(out.len() / self.size);
        for (xs, ys) in x
            .chunks_exact(per)
            .zip(out.chunks_exact_mut(self.size))
            .take(spectra)
        {
            self.power.fill(0.0);
            for frame in xs.chunks_exact(self.size) {
                for ((b, &v), &w) in self.buf.iter_mut().zip(frame).zip(&self.window) {
                    *b = v.complex() * w;
                }
                self.fft
                    .process_with_scratch(&mut self.buf, &mut self.scratch);
                for (p, b) in self.power.iter_mut().zip(&self.buf) {
                    *p += f64::from(b.norm_sqr());
                }
            }
            let half = self.size / 2;
            for (j, y) in ys.iter_mut().enumerate() {
                let p = self.power[(j + self.size - half) % self.size] * self.norm;
                *y = (10.0 * p.max(1e-30).log10()) as f32;
            }
        }
        (spectra * per, spectra * self.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::rand_c;
    use num_complex::Complex64;
    use rand::SeedableRng;

    /// The module docs' formula by a direct DFT in f64, in linear power, shifted.
    fn reference(x: &[Complex32], size: usize, averages: usize, w: &[f64]) -> Vec<f64> {
        let gain: f64 = w.iter().sum();
        let mut p = vec![0.0; size];
        for frame in x.chunks_exact(size).take(averages) {
            for (m, pm) in p.iter_mut().enumerate() {
                let s: Complex64 = frame
                    .iter()
                    .enumerate()
                    .map(|(n, v)| {
                        Complex64::new(v.re.into(), v.im.into())
                            * w[n]
                            * Complex64::from_polar(1.0, -2.0 * PI * (m * n) as f64 / size as f64)
                    })
                    .sum();
                *pm += s.norm_sqr() / (gain * gain * averages as f64);
            }
        }
        (0..size).map(|j| p[(j + size - size / 2) % size]).collect()
    }

    #[test]
    fn matches_a_direct_dft_and_reads_a_full_scale_tone_as_0_db() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(6);
        for (size, window) in [
            (64, SpectrumWindow::Hann),
            (45, SpectrumWindow::BlackmanHarris),
        ] {
            let averages = 3;
            let x = rand_c(size * averages * 2 + 5, &mut rng);
            let mut s = PowerSpectrum::new(size, window, averages).unwrap();
            let mut y = vec![0.0f32; 3 * size];
            assert_eq!(s.process(&x, &mut y), (2 * size * averages, 2 * size));
            let want = reference(&x, size, averages, &window.coefficients(size));
            let total: f64 = want.iter().sum();
            for (j, w) in want.iter().enumerate() {
                let got = 10f64.powf(f64::from(y[j]) / 10.0);
                assert!(
                    (got - w).abs() <= 1e-5 * total,
                    "{window:?} bin {j}: {got} vs {w}"
                );
            }
        }
        let size = 256;
        let tone: Vec<Complex32> = (0..size)
            .map(|n| {
                let (s, c) = (2.0 * PI * 32.0 * n as f64 / size as f64).sin_cos();
                Complex32::new(c as f32, s as f32)
            })
            .collect();
        let mut s = PowerSpectrum::new(size, SpectrumWindow::BlackmanHarris, 1).unwrap();
        let mut y = vec![0.0f32; size];
        s.process(&tone, &mut y);
        assert!(y[128 + 32].abs() < 1e-3, "tone bin reads {} dB", y[160]);
        assert!(y[128] < -90.0, "DC reads {} dB", y[128]);
    }

    #[test]
    fn chunking_gives_the_same_spectra_and_bad_settings_are_errors() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let x: Vec<f32> = rand_c(32 * 2 * 10, &mut rng).iter().map(|v| v.re).collect();
        let mut s = PowerSpectrum::new(32, SpectrumWindow::Hann, 2).unwrap();
        let mut whole = vec![0.0f32; 320];
        assert_eq!(s.process(&x, &mut whole), (640, 320));
        let (mut read, mut written, mut parts) = (0, 0, vec![0.0f32; 320]);
        for len in [70, 64, 200, 1, 129].iter().cycle().take(100) {
            let end = (read + len).min(x.len());
            let (c, p) = s.process(&x[read..end], &mut parts[written..]);
            (read, written) = (read + c, written + p);
        }
        assert_eq!((read, written), (640, 320));
        assert_eq!(parts, whole);
        assert!(PowerSpectrum::new(1, SpectrumWindow::Hann, 1).is_err());
        assert!(PowerSpectrum::new(8, SpectrumWindow::Hann, 0).is_err());
        assert!(SpectrumWindow::parse("hamming")
            .unwrap_err()
            .to_string()
            .contains("hann"));
    }
}
