//! Automatic gain control: scales each channel so that its envelope sits at a reference level.
//!
//! Per sample `x` of a channel, with its envelope `e` (starting at `reference`, i.e. gain 1):
//!
//! ```text
//! m = |x|
//! e = e + r·(m − e)       r = attack when m > e (the level rises), decay otherwise
//! y = x · reference / max(e, reference / max_gain)
//! ```
//!
//! `attack` and `decay` are the fraction of the distance to the new level the envelope covers
//! per sample (1 follows at once; 0.001 takes about 1000 samples, a time constant of
//! `1 / (rate · sample_rate)` seconds). A fast attack and a slow decay (the usual choice) stop
//! a sudden loud signal from clipping while letting quiet passages come up slowly.
//! `max_gain` bounds the gain on silence, so noise is not amplified without end.
//!
//! **The state has infinite memory**: the envelope depends on the whole past input (fading
//! with the decay rate); a restarted AGC starts from gain 1 and needs about `1 / decay` samples
//! to reach the same gain.

use super::DspError;
use num_complex::Complex32;
use std::ops::Mul;

/// Samples an AGC scales: `f32` and `Complex32`.
pub trait AgcSample: Copy + Mul<f32, Output = Self> + Send {
    /// `|x|`.
    fn level(self) -> f32;
}

impl AgcSample for f32 {
    #[inline]
    fn level(self) -> f32 {
        self.abs()
    }
}

impl AgcSample for Complex32 {
    #[inline]
    fn level(self) -> f32 {
        (self.re * self.re + self.im * self.im).sqrt()
    }
}

/// The AGC's settings (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgcSettings {
    /// The output envelope it aims for (> 0).
    pub reference: f32,
    /// Rate (0 < attack ≤ 1) at which the envelope follows a rising level.
    pub attack: f32,
    /// Rate (0 < decay ≤ 1) at which it follows a falling level.
    pub decay: f32,
    /// The largest gain (≥ 1).
    pub max_gain: f32,
}

impl Default for AgcSettings {
    fn default() -> Self {
        AgcSettings {
            reference: 1.0,
            attack: 0.1,
            decay: 0.001,
            max_gain: 1e5,
        }
    }
}

/// An AGC on `channels` interleaved channels, one envelope each.
#[derive(Debug, Clone)]
pub struct Agc {
    settings: AgcSettings,
    floor: f32,
    envelope: Vec<f32>,
}

impl Agc {
    /// An AGC with `settings` on `channels` (at least 1) channels; every envelope starts at the
    /// reference (gain 1).
    pub fn new(settings: AgcSettings, channels: usize) -> Result<Self, DspError> {
        let bad = |name, value: f32, expected| {
            Err(DspError::InvalidParameter {
                name,
                value: value.to_string(),
                expected,
            })
        };
        let AgcSettings {
            reference,
            attack,
            decay,
            max_gain,
        } = settings;
        if !(reference.is_finite() && reference > 0.0) {
            return bad("reference", reference, "a positive level");
        }
        if !(attack > 0.0 && attack <= 1.0) {
            return bad("attack", attack, "a rate above 0 and at most 1");
        }
        if !(decay > 0.0 && decay <= 1.0) {
            return bad("decay", decay, "a rate above 0 and at most 1");
        }
        if !(max_gain.is_finite() && max_gain >= 1.0) {
            return bad("max_gain", max_gain, "a finite gain of at least 1");
        }
        if channels == 0 {
            return bad("channels", 0.0, "at least 1");
        }
        Ok(Agc {
            settings,
            floor: reference / max_gain,
            envelope: vec![reference; channels],
        })
    }

    /// Samples per frame.
    pub fn channels(&self) -> usize {
        self.envelope.len()
    }

    /// Back to gain 1 on every channel.
    pub fn reset(&mut self) {
        self.envelope.fill(self.settings.reference);
    }

    /// Scales the whole frames of `x` that fit `out`; returns the samples done (consumed and
    /// produced, a multiple of `channels`).
    pub fn process<S: AgcSample>(&mut self, x: &[S], out: &mut [S]) -> usize {
        let c = self.envelope.len();
        let n = x.len().min(out.len()) / c * c;
        let AgcSettings {
            reference,
            attack,
            decay,
            ..
        } = self.settings;
        for (xf, yf) in x[..n].chunks_exact(c).zip(out.chunks_exact_mut(c)) {
            for ((y, &v), e) in yf.iter_mut().zip(xf).zip(self.envelope.iter_mut()) {
                let m = v.level();
                let rate = if m > *e { attack } else { decay };
                *e += rate * (m - *e);
                *y = v * (reference / e.max(self.floor));
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{chunked, rand_c};
    use rand::SeedableRng;

    /// The module docs' recursion in f64 on one channel.
    fn reference(s: AgcSettings, x: &[Complex32]) -> Vec<(f64, f64)> {
        let mut e = f64::from(s.reference);
        let floor = f64::from(s.reference) / f64::from(s.max_gain);
        x.iter()
            .map(|v| {
                let m = f64::from(v.re).hypot(f64::from(v.im));
                let r = if m > e { s.attack } else { s.decay };
                e += f64::from(r) * (m - e);
                let g = f64::from(s.reference) / e.max(floor);
                (f64::from(v.re) * g, f64::from(v.im) * g)
            })
            .collect()
    }

    #[test]
    fn each_channel_follows_the_f64_recursion_and_settles_at_the_reference() {
        let s = AgcSettings {
            reference: 0.5,
            attack: 0.05,
            decay: 0.002,
            max_gain: 100.0,
        };
        let channels = 3;
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        // Channel c at level 10^(c−1): quiet, unit, loud.
        let x: Vec<Complex32> = rand_c(6000 * channels, &mut rng)
            .iter()
            .enumerate()
            .map(|(i, v)| v * 10f32.powi((i % channels) as i32 - 1))
            .collect();
        let mut agc = Agc::new(s, channels).unwrap();
        let mut y = vec![Complex32::default(); x.len()];
        assert_eq!(agc.process(&x, &mut y), x.len());
        for c in 0..channels {
            let xc: Vec<Complex32> = x.iter().skip(c).step_by(channels).copied().collect();
            let want = reference(s, &xc);
            for (n, &(re, im)) in want.iter().enumerate() {
                let got = y[n * channels + c];
                let err = (f64::from(got.re) - re).hypot(f64::from(got.im) - im);
                assert!(err <= 1e-4 * (1.0 + re.hypot(im)), "ch {c} n {n}");
            }
            let tail = &y[y.len() / 2..];
            let level: f32 = tail
                .iter()
                .skip(c)
                .step_by(channels)
                .map(|v| v.norm())
                .sum::<f32>()
                / (tail.len() / channels) as f32;
            assert!(
                (0.15..0.8).contains(&level),
                "channel {c} settles at {level}"
            );
        }
    }

    #[test]
    fn chunking_and_reset_give_the_same_output_and_bad_settings_are_errors() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let x: Vec<f32> = rand_c(2000, &mut rng).iter().map(|v| v.re * 3.0).collect();
        let mut agc = Agc::new(AgcSettings::default(), 2).unwrap();
        let mut whole = vec![0.0f32; 2000];
        agc.process(&x, &mut whole);
        agc.reset();
        let pieces = chunked(&x, 50, 2, &mut rng, |w, out| {
            let n = agc.process(w, out);
            (n, n)
        });
        assert_eq!(pieces, whole);
        let with = |f: fn(&mut AgcSettings)| {
            let mut s = AgcSettings::default();
            f(&mut s);
            Agc::new(s, 1).unwrap_err().to_string()
        };
        assert!(with(|s| s.reference = 0.0).contains("reference"));
        assert!(with(|s| s.attack = 1.5).contains("attack"));
        assert!(with(|s| s.decay = 0.0).contains("decay"));
        assert!(with(|s| s.max_gain = 0.5).contains("max_gain"));
        assert!(Agc::new(AgcSettings::default(), 0).is_err());
    }
}
