//! The AMPS band generator: chosen voice channels, each FM-modulated by its own
//! [`TestVoice`] (optionally pre-emphasised), synthesised together by a filter bank at
//! 15.36 M samples/s, resampled to 20 M samples/s, shifted onto the raster, plus complex
//! Gaussian noise at a chosen carrier-to-noise ratio in 30 kHz; written as SigMF (`cf32_le`).

use super::{
    bin, channel_offset_hz, PfbSynthesizer, TestVoice, BAND_RATE, BANK_CHANNELS, BANK_DECIMATION,
    CENTRE_HZ, CHANNELS, CHANNEL_RATE, DEVIATION_HZ, RASTER_SHIFT_HZ, RESAMPLING, SPACING_HZ, TAU,
};
use num_complex::Complex32;
use sluice_kernels::{deemphasis, lowpass, DspError, RationalResampler, Rotator, Window};
use std::f64::consts::TAU as TWO_PI;
use std::io::Write;
use std::path::Path;

/// What the band holds.
#[derive(Debug, Clone)]
pub struct BandConfig {
    /// Occupied channels, 1-based (1 … 333), distinct.
    pub channels: Vec<usize>,
    /// Carrier-to-noise ratio in 30 kHz, dB (`None`: no noise).
    pub cn_db: Option<f64>,
    /// Pre-emphasise the audio (75 µs, the exact inverse of the receiver's de-emphasis).
    pub preemphasis: bool,
    /// Carrier offsets are drawn uniformly in ±this, Hz.
    pub max_offset_hz: f64,
    /// Each carrier's amplitude (its power is the square).
    pub amplitude: f32,
    /// Seed of the offsets and the noise.
    pub seed: u64,
}

impl Default for BandConfig {
    fn default() -> Self {
        BandConfig {
            channels: (1..=CHANNELS).collect(),
            cn_db: Some(25.0),
            preemphasis: true,
            max_offset_hz: 300.0,
            amplitude: 0.05,
            seed: 1,
        }
    }
}

/// Pre-emphasis scale: keeps the pre-emphasised voice (gain up to 1.7 at 2.8 kHz) inside
/// the peak deviation.
const PRE_SCALE: f64 = 0.5;
/// The inverse de-emphasis has its pole at `z = −1`; pulled in to this radius, the start-up
/// transient dies away, and in the voice band the response moves by under 1 %.
const PRE_POLE: f64 = 0.98;
/// Frames synthesised per chunk.
const CHUNK_FRAMES: usize = 2048;

/// One channel's modulator.
#[derive(Debug, Clone)]
struct Modulator {
    voice: TestVoice,
    offset_hz: f64,
    phase: f64,
    /// Pre-emphasis state: the previous voice sample and output.
    prev_in: f64,
    prev_out: f64,
}

/// A 64-bit xorshift* generator (reproducible, no dependency).
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((v >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn gaussian_pair(&mut self) -> (f64, f64) {
        let (u, v) = (self.next(), self.next());
        let r = (-2.0 * u.ln()).sqrt();
        let (s, c) = (TWO_PI * v).sin_cos();
        (r * c, r * s)
    }
}

/// Generates the band chunk by chunk; see the module docs.
#[derive(Debug)]
pub struct BandGenerator {
    config: BandConfig,
    mods: Vec<Modulator>,
    /// De-emphasis numerator `b0, b1` and pole `a1` at the channel rate.
    de: (f64, f64, f64),
    synth: PfbSynthesizer,
    resampler: RationalResampler,
    rotator: Rotator,
    rng: Rng,
    noise_std: f64,
    frame: u64,
    frames: Vec<Complex32>,
    bank: Vec<Complex32>,
    pending: Vec<Complex32>,
}

impl BandGenerator {
    /// A generator for `config`; errors name the setting at fault.
    pub fn new(config: BandConfig) -> Result<Self, DspError> {
        let bad = |name, value: String, expected| DspError::InvalidDesign {
            name,
            value,
            expected,
        };
        let chans = &config.channels;
        if chans.is_empty()
            || chans
                .iter()
                .enumerate()
                .any(|(i, &n)| n == 0 || n > CHANNELS || chans[..i].contains(&n))
        {
            return Err(bad(
                "channels",
                format!("{chans:?}"),
                "distinct channel numbers 1-333",
            ));
        }
        if !(config.max_offset_hz.is_finite() && (0.0..=5000.0).contains(&config.max_offset_hz)) {
            return Err(bad(
                "max_offset_hz",
                config.max_offset_hz.to_string(),
                "0-5000 Hz",
            ));
        }
        let mut rng = Rng(config.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mods = chans
            .iter()
            .map(|&n| Modulator {
                voice: TestVoice::for_channel(n),
                offset_hz: config.max_offset_hz * (2.0 * rng.next() - 1.0),
                phase: 0.0,
                prev_in: 0.0,
                prev_out: 0.0,
            })
            .collect();
        let de = deemphasis(TAU, CHANNEL_RATE)?;
        let bins: Vec<usize> = chans.iter().map(|&n| bin(n)).collect();
        let synth = PfbSynthesizer::new(BANK_CHANNELS, BANK_DECIMATION, 48, &bins)?;
        // 15.36 → 20 M samples/s (the receiver's resampling backwards): low-pass at the
        // interpolated rate, gain I.
        let (d, i) = RESAMPLING;
        let taps: Vec<f32> = lowpass(i * 24, 0.4 / i as f64, Window::Kaiser { beta: 8.0 })?
            .iter()
            .map(|v| v * i as f32)
            .collect();
        let resampler = RationalResampler::new(i, d, &taps)?;
        let rotator = Rotator::new(RASTER_SHIFT_HZ / BAND_RATE)?;
        let noise_std = match config.cn_db {
            Some(cn) => {
                let carrier = f64::from(config.amplitude).powi(2);
                let per_sample = carrier / 10f64.powf(cn / 10.0) * BAND_RATE / SPACING_HZ;
                (per_sample / 2.0).sqrt()
            }
            None => 0.0,
        };
        Ok(BandGenerator {
            mods,
            de: (de.b[0], de.b[1], de.a[0]),
            synth,
            resampler,
            rotator,
            rng,
            noise_std,
            frame: 0,
            frames: Vec::new(),
            bank: Vec::new(),
            pending: Vec::new(),
            config,
        })
    }

    /// The carrier offset of each occupied channel, Hz, in the order of the configuration.
    pub fn offsets_hz(&self) -> Vec<f64> {
        self.mods.iter().map(|m| m.offset_hz).collect()
    }

    /// The audio channel `index` (of the configuration's list) carries at time `t`, as the
    /// receiver's de-emphasised demodulator output scaled to ±1 at the peak deviation would
    /// show it, offset aside.
    pub fn audio(&self, index: usize, t: f64) -> f64 {
        let scale = if self.config.preemphasis {
            PRE_SCALE
        } else {
            1.0
        };
        scale * self.mods[index].voice.at(t)
    }

    /// Fills `out` with the next `out.len()` samples of the band.
    pub fn fill(&mut self, out: &mut [Complex32]) {
        let mut done = 0;
        while done < out.len() {
            if self.pending.is_empty() {
                self.next_chunk();
            }
            let n = self.pending.len().min(out.len() - done);
            out[done..done + n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            done += n;
        }
    }

    /// Synthesises `CHUNK_FRAMES` frames into `pending` (20 M samples/s, shifted, noisy).
    fn next_chunk(&mut self) {
        let (b0, b1, a1) = self.de;
        let amp = f64::from(self.config.amplitude);
        self.frames.clear();
        for l in 0..CHUNK_FRAMES as u64 {
            let t = (self.frame + l) as f64 / CHANNEL_RATE;
            for m in &mut self.mods {
                let mut a = m.voice.at(t);
                if self.config.preemphasis {
                    // The inverse of y = b0·x + b1·x₁ − a1·y₁, pole pulled in to PRE_POLE.
                    let x = (PRE_SCALE * a + a1 * m.prev_in - PRE_POLE * b1 * m.prev_out) / b0;
                    m.prev_in = PRE_SCALE * a;
                    m.prev_out = x;
                    a = x;
                }
                m.phase += TWO_PI * (m.offset_hz + DEVIATION_HZ * a) / CHANNEL_RATE;
                m.phase %= TWO_PI;
                let (s, c) = m.phase.sin_cos();
                self.frames
                    .push(Complex32::new((amp * c) as f32, (amp * s) as f32));
            }
        }
        self.frame += CHUNK_FRAMES as u64;
        self.bank.clear();
        self.synth.process(&self.frames, &mut self.bank);
        let start = self.pending.len();
        // The resampler makes I/D samples of each bank sample (plus what it had buffered).
        let (d, i) = RESAMPLING;
        let (mut consumed, mut produced) = (0, 0);
        while consumed < self.bank.len() {
            let room = (self.bank.len() - consumed) * i / d + 8192;
            self.pending
                .resize(start + produced + room, Complex32::default());
            let (c, p) = self.resampler.process(
                &self.bank[consumed..],
                &mut self.pending[start + produced..],
            );
            consumed += c;
            produced += p;
        }
        self.pending.truncate(start + produced);
        self.rotator.process_in_place(&mut self.pending[start..]);
        if self.noise_std > 0.0 {
            for v in &mut self.pending[start..] {
                let (i, q) = self.rng.gaussian_pair();
                *v += Complex32::new((i * self.noise_std) as f32, (q * self.noise_std) as f32);
            }
        }
    }
}

/// Writes `seconds` of the band described by `config` as the SigMF recording `path`
/// (`path.sigmf-meta` and `path.sigmf-data`, `cf32_le`); returns the generator (for its
/// offsets and audio).
pub fn write_band(path: &Path, config: BandConfig, seconds: f64) -> Result<BandGenerator, String> {
    let mut generator = BandGenerator::new(config.clone()).map_err(|e| e.to_string())?;
    let (meta_path, data_path) = sluice_formats::sigmf::paths(path);
    let total = (seconds * BAND_RATE).round() as usize;
    let file = std::fs::File::create(&data_path)
        .map_err(|e| format!("cannot create {}: {e}", data_path.display()))?;
    let mut data = std::io::BufWriter::with_capacity(1 << 22, file);
    let mut chunk = vec![Complex32::default(); 1 << 20];
    let mut left = total;
    while left > 0 {
        let n = left.min(chunk.len());
        generator.fill(&mut chunk[..n]);
        data.write_all(bytemuck::cast_slice(&chunk[..n]))
            .map_err(|e| format!("cannot write {}: {e}", data_path.display()))?;
        left -= n;
    }
    data.flush()
        .map_err(|e| format!("cannot write {}: {e}", data_path.display()))?;
    let offsets = generator.offsets_hz();
    let annotations: Vec<serde_json::Value> = config
        .channels
        .iter()
        .zip(&offsets)
        .map(|(&n, off)| {
            let f = CENTRE_HZ + channel_offset_hz(n);
            serde_json::json!({
                "core:sample_start": 0,
                "core:sample_count": total,
                "core:freq_lower_edge": f - SPACING_HZ / 2.0,
                "core:freq_upper_edge": f + SPACING_HZ / 2.0,
                "core:label": format!("AMPS channel {n}, carrier offset {off:.1} Hz"),
            })
        })
        .collect();
    let meta = serde_json::json!({
        "global": {
            "core:datatype": "cf32_le",
            "core:sample_rate": BAND_RATE,
            "core:version": "1.0.0",
            "core:description": format!(
                "AMPS forward voice band: {} FM channels (±12 kHz, {}pre-emphasis), C/N {} in 30 kHz",
                config.channels.len(),
                if config.preemphasis { "75 µs " } else { "no " },
                config.cn_db.map_or("∞".to_string(), |c| format!("{c} dB")),
            ),
            "core:recorder": "sluice amps generate",
        },
        "captures": [{ "core:sample_start": 0, "core:frequency": CENTRE_HZ }],
        "annotations": annotations,
    });
    let text = serde_json::to_string_pretty(&meta).map_err(|e| e.to_string())?;
    std::fs::write(&meta_path, text)
        .map_err(|e| format!("cannot write {}: {e}", meta_path.display()))?;
    Ok(generator)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_kernels::{Channelizer, FmDemod};

    /// The example receiver's resampler: `rational_resampler`'s default design (a Kaiser
    /// low-pass at 0.8 of the lower Nyquist, 24 taps per phase, gain I).
    fn receiver_resampler() -> RationalResampler {
        let (i, d) = RESAMPLING;
        let taps: Vec<f32> = lowpass(i * 24, 0.4 / i.max(d) as f64, Window::Kaiser { beta: 8.0 })
            .unwrap()
            .iter()
            .map(|v| v * i as f32)
            .collect();
        RationalResampler::new(i, d, &taps).unwrap()
    }

    /// One channel, no noise, no pre-emphasis, received by the kernels of the receiver
    /// (shift, 96/125, bank, FM demodulator): the demodulated frequency follows the talker
    /// (±1 at the peak deviation, plus the carrier offset) with a constant delay.
    #[test]
    fn a_generated_channel_demodulates_to_its_talker() {
        let n = 100;
        let mut g = BandGenerator::new(BandConfig {
            channels: vec![n],
            cn_db: None,
            preemphasis: false,
            ..BandConfig::default()
        })
        .unwrap();
        let mut band = vec![Complex32::default(); 6_000_000];
        g.fill(&mut band);
        Rotator::new(-RASTER_SHIFT_HZ / BAND_RATE)
            .unwrap()
            .process_in_place(&mut band);
        let mut rs = receiver_resampler();
        let mut slow = vec![Complex32::default(); band.len()];
        let (_, p) = rs.process(&band, &mut slow);
        slow.truncate(p);
        let proto = Channelizer::prototype(BANK_CHANNELS, 48).unwrap();
        let mut bank =
            Channelizer::new(BANK_CHANNELS, BANK_DECIMATION, &proto, Some(&[bin(n)])).unwrap();
        let mut ch = vec![Complex32::default(); slow.len() / BANK_DECIMATION + 1];
        let (_, frames) = bank.process(&slow, &mut ch);
        let mut fm = FmDemod::new(1.0, 1).unwrap();
        let mut y = vec![0.0f32; frames];
        fm.process(&ch[..frames], &mut y);
        let gain = CHANNEL_RATE / (TWO_PI * DEVIATION_HZ);
        let offset = g.offsets_hz()[0] / DEVIATION_HZ;
        // Best integer delay over the first and the last thousand samples.
        let err = |from: usize, delay: usize| -> f64 {
            (from..from + 1000)
                .map(|i| {
                    let want = g.audio(0, (i - delay) as f64 / CHANNEL_RATE) + offset;
                    (f64::from(y[i]) * gain - want).powi(2)
                })
                .sum::<f64>()
                / 1000.0
        };
        let best = |from| {
            (0..200)
                .min_by(|&a, &b| err(from, a).total_cmp(&err(from, b)))
                .unwrap()
        };
        let (d1, d2) = (best(1000), best(frames - 1100));
        eprintln!(
            "frames {frames}, delays {d1} {d2}, errors {} {}",
            err(1000, d1),
            err(frames - 1100, d2)
        );
        assert_eq!(d1, d2);
        assert!(err(1000, d1) < 1e-3);
    }

    /// A noise-free band with channels 100, 101 and 103 occupied, through the receiver's
    /// shift, resampler and bank (the example's 18 taps per branch): the empty channel 102,
    /// between two occupied ones, holds at least 40 dB less power than either neighbour.
    #[test]
    fn an_empty_channel_between_occupied_ones_stays_empty() {
        let mut g = BandGenerator::new(BandConfig {
            channels: vec![100, 101, 103],
            cn_db: None,
            ..BandConfig::default()
        })
        .unwrap();
        let mut band = vec![Complex32::default(); 2_000_000];
        g.fill(&mut band);
        Rotator::new(-RASTER_SHIFT_HZ / BAND_RATE)
            .unwrap()
            .process_in_place(&mut band);
        let mut rs = receiver_resampler();
        let mut slow = vec![Complex32::default(); band.len()];
        let (_, p) = rs.process(&band, &mut slow);
        let proto = Channelizer::prototype(BANK_CHANNELS, 18).unwrap();
        let listened = [100, 101, 102, 103];
        let bins: Vec<usize> = listened.iter().map(|&n| bin(n)).collect();
        let mut bank =
            Channelizer::new(BANK_CHANNELS, BANK_DECIMATION, &proto, Some(&bins)).unwrap();
        let mut ch = vec![Complex32::default(); 4 * (p / BANK_DECIMATION + 1)];
        let (_, produced) = bank.process(&slow[..p], &mut ch);
        let power: Vec<f64> = (0..4)
            .map(|c| {
                let v: Vec<f64> = ch[..produced]
                    .chunks_exact(4)
                    .skip(500)
                    .map(|f| f64::from(f[c].norm_sqr()))
                    .collect();
                v.iter().sum::<f64>() / v.len() as f64
            })
            .collect();
        let db = |c: usize| 10.0 * (power[2] / power[c]).log10();
        eprintln!(
            "bank output power, dB: {:?}",
            power.iter().map(|p| 10.0 * p.log10()).collect::<Vec<_>>()
        );
        eprintln!(
            "channel 102 against 101: {:.1} dB, against 103: {:.1} dB",
            db(1),
            db(3)
        );
        assert!(db(1) <= -40.0 && db(3) <= -40.0, "{power:?}");
    }
}
