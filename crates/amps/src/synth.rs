//! Polyphase synthesis filter bank: the inverse of [`sluice_kernels::Channelizer`]. Chosen
//! channels at `fs/D` each are interpolated by `D` and shifted to `k·fs/M` together:
//!
//! `x[m] = Σ_l g[m − lD] · Σ_k s_k[l] · e^{j2πkm/M}`
//!
//! The inner sum depends on `m` only modulo `M`: it is one inverse FFT of the frame's `M`
//! bins, `S_l[r]`, and each frame adds `g[i]·S_l[(lD + i) mod M]` to the `L` outputs it
//! reaches (`g` the prototype, `L` taps, gain `D`). One FFT per frame and `L/D` multiply-adds
//! per output sample, whatever the number of channels.

use num_complex::Complex32;
use rustfft::Fft;
use sluice_kernels::{Channelizer, DspError, FftPlanCache};
use std::sync::Arc;

/// A synthesis filter bank; see the module docs.
pub struct PfbSynthesizer {
    m: usize,
    d: usize,
    g: Vec<f32>,
    bins: Vec<usize>,
    ifft: Arc<dyn Fft<f32>>,
    spectrum: Vec<Complex32>,
    scratch: Vec<Complex32>,
    /// Partial sums of the next `L` outputs.
    acc: Vec<Complex32>,
    /// `(l·D) mod M` for the next frame `l`.
    offset: usize,
}

impl std::fmt::Debug for PfbSynthesizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PfbSynthesizer")
            .field("m", &self.m)
            .field("d", &self.d)
            .field("taps", &self.g.len())
            .field("bins", &self.bins.len())
            .finish()
    }
}

impl PfbSynthesizer {
    /// `m` channels, `d` output samples per input frame (`d ≤ m`), the channel prototype of
    /// [`Channelizer::prototype`] with `taps_per_branch`, each input frame carrying one sample
    /// for each of `bins` (distinct, below `m`).
    pub fn new(
        m: usize,
        d: usize,
        taps_per_branch: usize,
        bins: &[usize],
    ) -> Result<Self, DspError> {
        if d == 0 || d > m {
            return Err(DspError::InvalidDecimation(d));
        }
        if bins.is_empty()
            || bins
                .iter()
                .enumerate()
                .any(|(i, &b)| b >= m || bins[..i].contains(&b))
        {
            return Err(DspError::InvalidDesign {
                name: "bins",
                value: format!("{bins:?}"),
                expected: "at least one distinct bin below the number of channels",
            });
        }
        let g: Vec<f32> = Channelizer::prototype(m, taps_per_branch)?
            .iter()
            .map(|v| v * d as f32)
            .collect();
        let ifft = FftPlanCache::global().inverse(m);
        let scratch = vec![Complex32::default(); ifft.get_inplace_scratch_len()];
        let acc = vec![Complex32::default(); g.len() + d];
        Ok(PfbSynthesizer {
            m,
            d,
            g,
            bins: bins.to_vec(),
            ifft,
            spectrum: vec![Complex32::default(); m],
            scratch,
            acc,
            offset: 0,
        })
    }

    /// Output samples per input frame.
    pub fn decimation(&self) -> usize {
        self.d
    }

    /// Takes whole frames of `input` (one sample per bin, in the order given to `new`) and
    /// appends `D` output samples per frame to `output`. The first `L − D` outputs are the
    /// filter's start-up; the delay through synthesis and analysis is `L − 1` samples.
    pub fn process(&mut self, input: &[Complex32], output: &mut Vec<Complex32>) {
        let k = self.bins.len();
        let (m, d, l) = (self.m, self.d, self.g.len());
        for frame in input.chunks_exact(k) {
            self.spectrum.fill(Complex32::default());
            for (&b, &s) in self.bins.iter().zip(frame) {
                self.spectrum[b] = s;
            }
            self.ifft
                .process_with_scratch(&mut self.spectrum, &mut self.scratch);
            // Tap i meets S[(offset + i) mod M]: walk the taps in runs of M.
            let mut i = 0;
            let mut r = self.offset;
            while i < l {
                let run = (m - r).min(l - i);
                for ((a, &g), &s) in self.acc[i..i + run]
                    .iter_mut()
                    .zip(&self.g[i..i + run])
                    .zip(&self.spectrum[r..r + run])
                {
                    *a += s * g;
                }
                i += run;
                r = 0;
            }
            output.extend_from_slice(&self.acc[..d]);
            self.acc.copy_within(d.., 0);
            let tail = self.acc.len() - d;
            self.acc[tail..].fill(Complex32::default());
            self.offset = (self.offset + d) % m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::TAU;

    /// Tones in three bins through synthesis then the analysis channelizer: each channel
    /// comes back as its own tone (after the bank's delay), and the others stay out of it.
    #[test]
    #[allow(clippy::needless_range_loop)]
    fn synthesis_then_analysis_returns_each_channel() {
        let (m, d) = (16, 8);
        let bins = [1, 5, 12];
        let frames = 3000;
        let tone = |c: usize, l: usize| {
            let f = 0.01 * (c + 1) as f64;
            let p = TAU * f * l as f64;
            Complex32::new(p.cos() as f32, p.sin() as f32)
        };
        let input: Vec<Complex32> = (0..frames)
            .flat_map(|l| (0..3).map(move |c| tone(c, l)))
            .collect();
        let mut synth = PfbSynthesizer::new(m, d, 12, &bins).unwrap();
        let mut band = Vec::new();
        synth.process(&input, &mut band);
        assert_eq!(band.len(), frames * d);
        let taps = Channelizer::prototype(m, 12).unwrap();
        let mut bank = Channelizer::new(m, d, &taps, Some(&bins)).unwrap();
        let mut out = vec![Complex32::default(); band.len()];
        let (_, produced) = bank.process(&band, &mut out);
        let got: Vec<&[Complex32]> = out[..produced].chunks_exact(3).collect();
        // Compare in the steady state, after the delay (2·12·16 − 1 samples, 48 frames),
        // with a constant phase per channel allowed.
        let delay = (2 * 12 * m - 1) / d;
        for c in 0..3 {
            let (mut num, mut pow, mut err) = (Complex32::default(), 0.0f32, 0.0f32);
            for l in delay + 10..got.len() - 1 {
                num += got[l][c] * tone(c, l - delay).conj();
            }
            let n = (got.len() - 1 - delay - 10) as f32;
            let rot = num / n;
            for l in delay + 10..got.len() - 1 {
                let e = got[l][c] - tone(c, l - delay) * rot;
                err += e.norm_sqr();
                pow += got[l][c].norm_sqr();
            }
            assert!(
                (rot.norm() - 1.0).abs() < 0.05,
                "channel {c} gain {}",
                rot.norm()
            );
            assert!(err / pow < 1e-3, "channel {c}: error {}", err / pow);
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(PfbSynthesizer::new(16, 0, 12, &[1]).is_err());
        assert!(PfbSynthesizer::new(16, 8, 12, &[16]).is_err());
        assert!(PfbSynthesizer::new(16, 8, 12, &[1, 1]).is_err());
        assert!(PfbSynthesizer::new(16, 8, 12, &[]).is_err());
    }
}
