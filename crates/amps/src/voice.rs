//! Speech-like test audio with a closed form, so a receiver's output can be compared with it
//! at any sample rate and any (fractional) delay: a voiced harmonic series on a gliding pitch
//! (100-220 Hz, ±8 % at under 1 Hz), harmonics up to 2.8 kHz falling off as `h^-0.7`, under a
//! syllabic envelope (3-5 Hz), peak at most 1.

use std::f64::consts::TAU;

/// One talker; see the module docs.
#[derive(Debug, Clone)]
pub struct TestVoice {
    f0: f64,
    glide_hz: f64,
    syllable_hz: f64,
    phase: f64,
    /// Harmonic amplitudes (scaled so the peak over the first second is 0.95) and phases
    /// (Schroeder's, for a low crest factor).
    harmonics: Vec<(f64, f64, (f64, f64))>,
}

/// Highest harmonic frequency, Hz (inside the 300-3,000 Hz voice band).
const TOP_HZ: f64 = 2800.0;
/// Relative pitch glide.
const GLIDE: f64 = 0.08;

impl TestVoice {
    /// The talker of channel `n` (each channel a different pitch, glide and syllable rate).
    pub fn for_channel(n: usize) -> Self {
        // A golden-ratio walk spreads neighbouring channels' pitches apart.
        let u = |k: f64| (n as f64 * 0.618_033_988_75 * k).fract();
        let f0 = 100.0 + 120.0 * u(1.0);
        let count = (TOP_HZ / (f0 * (1.0 + GLIDE))).floor().max(1.0) as usize;
        let raw: Vec<f64> = (1..=count).map(|h| (h as f64).powf(-0.7)).collect();
        let total: f64 = raw.iter().sum();
        let mut voice = TestVoice {
            f0,
            glide_hz: 0.3 + 0.6 * u(3.0),
            syllable_hz: 3.0 + 2.0 * u(7.0),
            phase: TAU * u(11.0),
            harmonics: raw
                .iter()
                .enumerate()
                .map(|(h, a)| {
                    let p = TAU * 0.5 * (h * h) as f64 / count as f64;
                    (a / total, p, p.sin_cos())
                })
                .collect(),
        };
        let peak = (0..16_000)
            .map(|i| voice.at(i as f64 / 16_000.0).abs())
            .fold(1e-9, f64::max);
        for h in &mut voice.harmonics {
            h.0 *= 0.95 / peak;
        }
        voice
    }

    /// The fundamental's mean frequency, Hz.
    pub fn pitch(&self) -> f64 {
        self.f0
    }

    /// The audio at time `t` seconds.
    pub fn at(&self, t: f64) -> f64 {
        // Instantaneous pitch f0·(1 + GLIDE·sin(2π·g·t)), integrated.
        let g = self.glide_hz;
        let theta =
            TAU * self.f0 * (t - GLIDE * ((TAU * g * t).cos() - 1.0) / (TAU * g)) + self.phase;
        let envelope = 0.6 + 0.4 * (TAU * self.syllable_hz * t + self.phase).sin();
        // Harmonic h is Im(e^{jhθ}·e^{jp_h}): one sin_cos, then a complex product per
        // harmonic (the sum runs at every sample of every channel of the band).
        let (s1, c1) = theta.sin_cos();
        let (mut re, mut im) = (1.0f64, 0.0f64);
        let mut voiced = 0.0;
        for &(a, _, (ps, pc)) in &self.harmonics {
            (re, im) = (re * c1 - im * s1, re * s1 + im * c1);
            voiced += a * (im * pc + re * ps);
        }
        envelope * voiced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn voices_stay_in_range_and_differ() {
        for n in [1, 2, 3, 166, 333] {
            let v = TestVoice::for_channel(n);
            assert!((100.0..=220.0).contains(&v.pitch()));
            let peak = (0..48_000)
                .map(|i| v.at(i as f64 / 48_000.0).abs())
                .fold(0.0, f64::max);
            assert!(peak <= 1.1 && peak > 0.5, "channel {n}: peak {peak}");
        }
        let (a, b) = (TestVoice::for_channel(7), TestVoice::for_channel(8));
        assert!((a.pitch() - b.pitch()).abs() > 5.0);
    }
}
