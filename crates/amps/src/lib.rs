//! sluice-amps: AMPS (the 1980s analogue cellular system) as a whole-band test case, a demo
//! library for `sluice amps`, `sluice bench amps` and the example receiver's test: the channel raster,
//! a band generator and the measurements that prove every recovered channel intelligible.
//!
//! # How the receiver meets the raster
//!
//! The forward (base-to-mobile) voice channels sit at `870.030 + 0.030·(n − 1)` MHz,
//! `n = 1 … 333`, and the capture is 20 M samples/s centred on 875 MHz. A channelizer with
//! `M` channels puts its channels at `k·fs/M`; `20e6 / 30e3 = 666.67` is not an integer, and
//! the raster is not centred on 875 MHz either: channel 1 is 4.970 MHz below it, 165.67
//! channel widths. Both are fixed once, on the whole band, before the filter bank:
//!
//! 1. shift the band down by 10 kHz (one rotator): channel `n` moves to
//!    `(n − 167)·30 kHz`, an integer multiple of 30 kHz (channel 167 lands on 0 Hz);
//! 2. resample by 96/125 to 15.36 M samples/s (one rational resampler), so that
//!    `fs/M = 30 kHz` with `M = 512`: channel `n` is bin `(n − 167) mod 512`.
//!
//! A 2× oversampled bank (a frame every 256 samples, 60 k samples/s per channel) then
//! keeps each channel's FM spectrum (about 30 kHz wide by Carson's rule) clear of aliasing.
//! Why 15.36 M samples/s and not 19.98 M (999/1000, `M = 666`, this plan until 2026-11-26):
//! the channels span ±5.0 MHz, well inside the ±7.68 MHz of 15.36 M samples/s, and nothing
//! the 20 M samples/s capture holds (±10 MHz) folds onto them (`15.36 − 10 = 5.36` MHz lies
//! past the last channel); the bank's FFT is then 512 points instead of 666 (`2·3²·37`,
//! which needs Rader's algorithm for the 37), its polyphase filter sees 23 % fewer samples,
//! and the resampler has 96 phases instead of 999 (its taps stay in the L1 cache). Measured
//! with `sluice bench amps`: the whole receiver about 1.4× faster. The alternative, an
//! oversampled bank at 20 M samples/s with a fine frequency shift per channel, costs a mixer
//! per channel at the channel rate and leaves the channel edges unaligned with the bank's;
//! resampling the whole band once costs one polyphase filter at the input rate and leaves
//! every channel exactly on a bin.
//!
//! The generator runs the same plan backwards: a synthesis filter bank (`M = 512`, an
//! inverse FFT and a polyphase interpolator, [`PfbSynthesizer`]) builds the band at
//! 15.36 M samples/s from all channels at once, then a rational resampler (125/96) and a
//! +10 kHz shift give the 20 M samples/s capture: no per-channel mixer at the band rate.

//!
//! Architecture invariant: a demo library over `sluice-kernels` and `sluice-formats`; it knows
//! no runtime, graph or block (its test runs the example graph through `sluice-blocks`), and
//! no other library of sluice depends on it.
#![forbid(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod band;
mod quality;
mod synth;
mod voice;

pub use band::{write_band, BandConfig, BandGenerator};
pub use quality::{align_and_compare, band_limit, projected_power, Comparison};
pub use synth::PfbSynthesizer;
pub use voice::TestVoice;

/// The capture's sample rate, samples per second.
pub const BAND_RATE: f64 = 20e6;
/// The capture's centre frequency, Hz.
pub const CENTRE_HZ: f64 = 875e6;
/// The channel spacing, Hz.
pub const SPACING_HZ: f64 = 30e3;
/// Number of forward voice channels in the band.
pub const CHANNELS: usize = 333;
/// Channels of the filter bank (`fs/M = 30 kHz` at [`BANK_RATE`]).
pub const BANK_CHANNELS: usize = 512;
/// The resampling from the capture to the bank: interpolation, decimation (`96/125`).
pub const RESAMPLING: (usize, usize) = (96, 125);
/// The filter bank's sample rate: the capture resampled by [`RESAMPLING`].
pub const BANK_RATE: f64 = 15.36e6;
/// The shift that puts channel centres on multiples of 30 kHz: the band moves down by it.
pub const RASTER_SHIFT_HZ: f64 = 10e3;
/// Input samples per bank frame (2× oversampled): 60 k samples/s per channel.
pub const BANK_DECIMATION: usize = BANK_CHANNELS / 2;
/// Per-channel sample rate out of the bank, samples per second.
pub const CHANNEL_RATE: f64 = BANK_RATE / BANK_DECIMATION as f64;
/// Peak FM deviation, Hz.
pub const DEVIATION_HZ: f64 = 12e3;
/// The de-emphasis (and pre-emphasis) time constant, seconds.
pub const TAU: f64 = 75e-6;

/// Centre frequency of channel `n` (1-based), Hz.
pub fn channel_hz(n: usize) -> f64 {
    870.030e6 + SPACING_HZ * (n as f64 - 1.0)
}

/// Channel `n` (1-based) relative to the capture's centre, Hz.
pub fn channel_offset_hz(n: usize) -> f64 {
    channel_hz(n) - CENTRE_HZ
}

/// The filter-bank bin of channel `n` (1-based, at most [`CHANNELS`]): `(n − 167) mod 512`.
pub fn bin(n: usize) -> usize {
    (n + BANK_CHANNELS - 167) % BANK_CHANNELS
}

/// The bins of `channels` (1-based channel numbers), in order: the channelizer's `outputs`.
pub fn bins(channels: &[usize]) -> Vec<usize> {
    channels.iter().map(|&n| bin(n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_channel_lands_on_its_bin_after_the_shift() {
        for n in 1..=CHANNELS {
            let f = channel_offset_hz(n) - RASTER_SHIFT_HZ;
            let k = (f / SPACING_HZ).round();
            assert!((f - k * SPACING_HZ).abs() < 1e-3, "channel {n}: {f} Hz");
            assert_eq!(bin(n), k.rem_euclid(BANK_CHANNELS as f64) as usize);
        }
        assert_eq!(bin(167), 0);
        assert_eq!(bin(1), 346);
        assert!((BANK_RATE / BANK_CHANNELS as f64 - SPACING_HZ).abs() < 1e-6);
        let (i, d) = RESAMPLING;
        assert!((BAND_RATE * i as f64 / d as f64 - BANK_RATE).abs() < 1e-3);
        // Every channel (±15 kHz) lies inside what nothing of the capture folds onto.
        let edge = channel_offset_hz(CHANNELS).max(-channel_offset_hz(1)) + RASTER_SHIFT_HZ;
        assert!(edge + SPACING_HZ / 2.0 < BANK_RATE - BAND_RATE / 2.0);
    }
}
