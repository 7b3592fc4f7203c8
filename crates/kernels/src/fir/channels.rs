//! Many channels, one FIR each, over interleaved frames: the multi-channel form of [`Fir`].
//!
//! The input is a sequence of frames of `channels` samples (one per channel, as a channelizer
//! or a multi-channel file delivers them). Every channel is filtered by the same real taps,
//! optionally decimated. Output frame `n`, channel `c`:
//! `Σ_k taps[k] · input[n·D + taps − 1 − k][c]`.
//!
//! The inner loop runs across channels (one multiply-add of a tap into a whole frame), which
//! the compiler vectorizes for any channel count: 333 channels cost one pass over 333 samples
//! per tap, with no per-channel state, thread or queue. History lives in the caller's window as
//! with [`Fir`]: the first `taps − 1` frames of a window are the previous call's last frames.
//!
//! [`Fir`]: super::Fir

use crate::DspError;
use std::ops::{AddAssign, Mul};

/// Samples a multi-channel FIR filters with real taps: `f32` and `Complex32`.
pub trait ChannelSample: Copy + Default + AddAssign + Mul<f32, Output = Self> + Send {}

impl<S: Copy + Default + AddAssign + Mul<f32, Output = S> + Send> ChannelSample for S {}

/// One FIR per channel over interleaved frames (see the module docs).
#[derive(Debug, Clone)]
pub struct ChannelFir {
    /// The taps in reading order: `reversed[j]` multiplies frame `n·D + j` of the window.
    reversed: Vec<f32>,
    channels: usize,
    decimation: usize,
}

impl ChannelFir {
    /// Filters `channels` interleaved channels with `taps`, keeping one output frame in
    /// `decimation`.
    pub fn new(taps: &[f32], channels: usize, decimation: usize) -> Result<Self, DspError> {
        if taps.is_empty() {
            return Err(DspError::EmptyTaps);
        }
        if decimation == 0 {
            return Err(DspError::InvalidDecimation(decimation));
        }
        if channels == 0 {
            return Err(DspError::InvalidDesign {
                name: "channels",
                value: "0".into(),
                expected: "at least 1",
            });
        }
        Ok(ChannelFir {
            reversed: taps.iter().rev().copied().collect(),
            channels,
            decimation,
        })
    }

    /// Samples per frame.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Number of taps: the frames one output frame reads.
    pub fn taps(&self) -> usize {
        self.reversed.len()
    }

    /// Input frames consumed per output frame.
    pub fn decimation(&self) -> usize {
        self.decimation
    }

    /// Computes `frames` output frames into `output` (`frames · channels` samples) from
    /// `input`, which must hold `((frames − 1) · decimation + taps) · channels` samples.
    pub fn filter<S: ChannelSample>(
        &self,
        frames: usize,
        input: &[S],
        output: &mut [S],
    ) -> Result<(), DspError> {
        let c = self.channels;
        if frames == 0 {
            return Ok(());
        }
        let needed = ((frames - 1) * self.decimation + self.taps()) * c;
        if input.len() < needed {
            return Err(DspError::WindowTooShort {
                needed,
                got: input.len(),
            });
        }
        if output.len() < frames * c {
            return Err(DspError::OutputTooShort {
                needed: frames * c,
                got: output.len(),
            });
        }
        let output = &mut output[..frames * c];
        #[cfg(target_arch = "x86_64")]
        {
            use crate::SimdLevel::{Avx2Fma, Avx512};
            match crate::simd::best() {
                Avx512 => {
                    // SAFETY: avx512f is usable here (simd::best); the loop indexes with checks.
                    unsafe { self.run_avx512(input, output) };
                    return Ok(());
                }
                Avx2Fma => {
                    // SAFETY: avx2 is usable here (simd::best); the loop indexes with checks.
                    unsafe { self.run_avx2(input, output) };
                    return Ok(());
                }
                _ => {}
            }
        }
        self.run(input, output);
        Ok(())
    }

    /// The filter loop, for whole output frames of `output`. The same multiplies and adds in
    /// the same order at every instruction-set level (no fused multiply-add), so the wider
    /// builds below change the speed, not the bits: the baseline build runs it four lanes at
    /// a time, which made this the AMPS receiver's third-dearest stage.
    #[inline(always)]
    fn run<S: ChannelSample>(&self, input: &[S], output: &mut [S]) {
        let c = self.channels;
        for (n, out) in output.chunks_exact_mut(c).enumerate() {
            out.fill(S::default());
            let first = n * self.decimation * c;
            let frames_read = input[first..first + self.taps() * c].chunks_exact(c);
            for (&tap, frame) in self.reversed.iter().zip(frames_read) {
                for (y, &x) in out.iter_mut().zip(frame) {
                    *y += x * tap;
                }
            }
        }
    }

    /// [`ChannelFir::run`] compiled for AVX-512.
    ///
    /// # Safety
    /// The CPU must support avx512f.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn run_avx512<S: ChannelSample>(&self, input: &[S], output: &mut [S]) {
        self.run(input, output)
    }

    /// [`ChannelFir::run`] compiled for AVX2.
    ///
    /// # Safety
    /// The CPU must support avx2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn run_avx2<S: ChannelSample>(&self, input: &[S], output: &mut [S]) {
        self.run(input, output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::{Complex32, Complex64};

    /// Channel `c` of frames `x`, filtered alone in f64 and decimated: the reference.
    fn reference(
        taps: &[f32],
        x: &[Complex32],
        channels: usize,
        c: usize,
        d: usize,
    ) -> Vec<Complex64> {
        let samples: Vec<Complex64> = x
            .iter()
            .skip(c)
            .step_by(channels)
            .map(|s| Complex64::new(s.re.into(), s.im.into()))
            .collect();
        let l = taps.len();
        (0..=(samples.len() - l) / d)
            .map(|n| {
                (0..l)
                    .map(|k| samples[n * d + l - 1 - k] * f64::from(taps[k]))
                    .sum()
            })
            .collect()
    }

    /// Every instruction-set build of the loop gives the portable loop's bits (the AMPS
    /// receiver's output stays the same whichever runs).
    #[test]
    fn every_level_gives_the_portable_bits() {
        let (channels, d) = (333, 5);
        let taps: Vec<f32> = (0..127).map(|k| ((k as f32) * 0.11).cos() / 30.0).collect();
        let frames_in = 5 * 12 + 127 - 5;
        let frames_out = (frames_in - taps.len()) / d + 1;
        let fir = ChannelFir::new(&taps, channels, d).unwrap();
        let x = crate::test_util::c32_noise(frames_in * channels, 9);
        let xr: Vec<f32> = x.iter().map(|v| v.re).collect();
        let mut want = vec![0.0f32; frames_out * channels];
        fir.run(&xr, &mut want);
        let mut want_c = vec![Complex32::default(); frames_out * channels];
        fir.run(&x, &mut want_c);
        for level in crate::SimdLevel::supported() {
            let mut got = vec![f32::NAN; frames_out * channels];
            let mut got_c = vec![Complex32::default(); frames_out * channels];
            match level {
                crate::SimdLevel::Portable => {
                    fir.filter(frames_out, &xr, &mut got).unwrap();
                    fir.filter(frames_out, &x, &mut got_c).unwrap();
                }
                #[cfg(target_arch = "x86_64")]
                crate::SimdLevel::Avx2Fma => {
                    // SAFETY: this CPU supports avx2 (SimdLevel::supported).
                    unsafe {
                        fir.run_avx2(&xr, &mut got);
                        fir.run_avx2(&x, &mut got_c);
                    }
                }
                #[cfg(target_arch = "x86_64")]
                crate::SimdLevel::Avx512 => {
                    // SAFETY: this CPU supports avx512f (SimdLevel::supported).
                    unsafe {
                        fir.run_avx512(&xr, &mut got);
                        fir.run_avx512(&x, &mut got_c);
                    }
                }
                #[cfg(not(target_arch = "x86_64"))]
                _ => {}
            }
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{level:?}");
            assert_eq!(got_c, want_c, "{level:?}");
        }
    }

    #[test]
    fn each_of_333_channels_matches_its_own_f64_filter() {
        let (channels, d) = (333, 3);
        let taps: Vec<f32> = (0..31).map(|k| ((k as f32) * 0.37).sin() / 8.0).collect();
        let frames_in = 3 * 40 + 31 - 3;
        let x = crate::test_util::c32_noise(frames_in * channels, 7);
        let fir = ChannelFir::new(&taps, channels, d).unwrap();
        let frames_out = (frames_in - taps.len()) / d + 1;
        let mut y = vec![Complex32::default(); frames_out * channels];
        fir.filter(frames_out, &x, &mut y).unwrap();
        for c in 0..channels {
            let want = reference(&taps, &x, channels, c, d);
            assert_eq!(want.len(), frames_out);
            for (n, w) in want.iter().enumerate() {
                let got = y[n * channels + c];
                let err = (Complex64::new(got.re.into(), got.im.into()) - w).norm();
                assert!(
                    err <= 1e-5 * (1.0 + w.norm()),
                    "channel {c} frame {n}: {got} vs {w}"
                );
            }
        }
    }

    #[test]
    fn short_windows_and_bad_settings_are_errors() {
        let fir = ChannelFir::new(&[1.0, 2.0], 4, 2).unwrap();
        let mut y = [0.0f32; 8];
        assert!(matches!(
            fir.filter(2, &[0.0f32; 15], &mut y),
            Err(DspError::WindowTooShort {
                needed: 16,
                got: 15
            })
        ));
        assert!(fir.filter(2, &[0.0f32; 16], &mut y[..7]).is_err());
        assert!(ChannelFir::new(&[], 4, 1).is_err());
        assert!(ChannelFir::new(&[1.0], 0, 1).is_err());
        assert!(ChannelFir::new(&[1.0], 4, 0).is_err());
    }
}
