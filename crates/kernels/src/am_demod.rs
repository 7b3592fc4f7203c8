//! AM demodulation by envelope detection: `|x|` of the complex baseband, with the carrier's
//! DC level removed by a DC blocker ([`dc_blocker`](super::dc_blocker)), on N interleaved
//! channels.
//!
//! For `x = A·(1 + m·s(t))·e^{jφ(t)}` with `|m·s| < 1`, `|x| = A + A·m·s(t)`, and the DC
//! blocker leaves `A·m·s(t)` (the audio, scaled by the carrier's amplitude: follow it with an
//! `agc` for a steady level). Any carrier phase or small frequency offset is ignored.
//!
//! **The DC blocker's state has infinite memory** (see [`BiquadCascade`]).

use super::{dc_blocker, magnitude, BiquadCascade, DspError};
use num_complex::Complex32;

/// An envelope AM demodulator (see the module docs).
#[derive(Debug, Clone)]
pub struct AmDemod {
    dc: BiquadCascade<f32>,
}

impl AmDemod {
    /// A demodulator for `channels` interleaved channels whose DC blocker has its pole at
    /// `dc_pole` (0 < dc_pole < 1; 0.999 passes audio above about 8 Hz at 48 kHz).
    pub fn new(dc_pole: f64, channels: usize) -> Result<Self, DspError> {
        Ok(AmDemod {
            dc: BiquadCascade::new(&[dc_blocker(dc_pole)?], channels)?,
        })
    }

    /// Samples per frame.
    pub fn channels(&self) -> usize {
        self.dc.channels()
    }

    /// Back to rest.
    pub fn reset(&mut self) {
        self.dc.reset();
    }

    /// Demodulates the whole frames of `x` that fit `out`; returns the samples done (consumed
    /// and produced, a multiple of `channels`).
    pub fn process(&mut self, x: &[Complex32], out: &mut [f32]) -> usize {
        let c = self.dc.channels();
        let n = x.len().min(out.len()) / c * c;
        magnitude(&x[..n], &mut out[..n]);
        self.dc.process_in_place(&mut out[..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::chunked;
    use rand::SeedableRng;
    use std::f64::consts::PI;

    /// A 1 kHz tone at depth 0.5 on a carrier of amplitude 0.8 with a drifting phase.
    fn am(n: usize) -> (Vec<Complex32>, Vec<f64>) {
        let fs = 48000.0;
        let audio: Vec<f64> = (0..n)
            .map(|k| (2.0 * PI * 1000.0 * k as f64 / fs).sin())
            .collect();
        let x = audio
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let a = 0.8 * (1.0 + 0.5 * s);
                let phase = 0.3 + 2.0 * PI * 3.0 * k as f64 / fs;
                Complex32::new((a * phase.cos()) as f32, (a * phase.sin()) as f32)
            })
            .collect();
        (x, audio)
    }

    #[test]
    fn recovers_the_modulating_tone_as_the_f64_envelope_and_dc_blocker_do() {
        let (x, audio) = am(48000);
        let mut demod = AmDemod::new(0.999, 1).unwrap();
        let mut y = vec![0.0f32; x.len()];
        assert_eq!(demod.process(&x, &mut y), x.len());
        // The f64 reference: |x| through y[n] = e[n] − e[n−1] + pole·y[n−1].
        let (mut prev_e, mut prev_y) = (0.0f64, 0.0f64);
        for (k, v) in x.iter().enumerate() {
            let e = f64::from(v.re).hypot(f64::from(v.im));
            let want = e - prev_e + 0.999 * prev_y;
            (prev_e, prev_y) = (e, want);
            assert!((f64::from(y[k]) - want).abs() < 1e-5, "sample {k}");
        }
        // After the blocker settles (a few time constants of 1000 samples), the audio is the
        // tone scaled by 0.8 · 0.5.
        for k in 20000..48000 {
            assert!(
                (f64::from(y[k]) - 0.4 * audio[k]).abs() < 0.01,
                "sample {k}"
            );
        }
    }

    #[test]
    fn chunking_gives_the_same_output_and_bad_settings_are_errors() {
        let (x, _) = am(3 * 1000);
        let mut demod = AmDemod::new(0.99, 3).unwrap();
        let mut whole = vec![0.0f32; x.len()];
        demod.process(&x, &mut whole);
        demod.reset();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mut out = vec![0.0f32; 64];
        let pieces: Vec<f32> = chunked(&x, 60, 3, &mut rng, |w, o| {
            let n = demod.process(w, &mut out[..o.len()]);
            o[..n]
                .iter_mut()
                .zip(&out[..n])
                .for_each(|(o, v)| o.re = *v);
            (n, n)
        })
        .iter()
        .map(|v| v.re)
        .collect();
        assert_eq!(pieces, whole);
        assert!(AmDemod::new(1.0, 1).is_err());
        assert!(AmDemod::new(0.9, 0).is_err());
    }
}
