//! Stream metadata: what a stream's samples mean, carried as stream tags on its items so that it
//! travels with them through every node, queue and (later) network hop.
//!
//! The keys are GNU Radio's, as its hardware sources (`gr-uhd`) send them, so that tags reach
//! and come from GNU Radio flowgraphs unchanged:
//!
//! | key | value | meaning |
//! |---|---|---|
//! | [`SAMPLE_RATE`] (`rx_rate`) | f64, Hz | the stream's sample rate from this item on |
//! | [`CENTER_FREQUENCY`] (`rx_freq`) | f64, Hz | the RF centre frequency of a complex baseband stream |
//! | [`TIME`] (`rx_time`) | (u64 seconds, f64 fraction) | the time of this item's sample |
//! | [`GAP`] (`gap`) | u64, items | this many items of the stream were lost just before this item (0: an unknown number, the source could not count them) |
//! | [`GAIN`] (`rx_gain`) | f64, dB | a receiver's overall gain from this item on |
//! | [`TX_TIME`] (`tx_time`) | (u64 seconds, f64 fraction) | a transmitter sends this item at this hardware time |
//! | [`TX_SOB`] (`tx_sob`) | bool | a transmit burst starts at this item |
//! | [`TX_EOB`] (`tx_eob`) | bool | a transmit burst ends after this item |
//!
//! A source tags its first item with what it knows (a WAV source its file's rate, a signal
//! generator its rate). The runtime rescales the sample rate as the tag passes a node whose
//! [`TagPolicy`](crate::TagPolicy) changes the rate (a decimating FIR by 4 turns 48 kHz into
//! 12 kHz), and sinks that need it (a WAV sink) read it, so a 44.1 kHz WAV comes out of a graph
//! labelled 44.1 kHz.

use sluice_queue::TagValue;

/// The key of a stream's sample rate in Hz (f64): GNU Radio's `rx_rate`.
pub const SAMPLE_RATE: &str = "rx_rate";

/// The key of a complex stream's centre frequency in Hz (f64): GNU Radio's `rx_freq`.
pub const CENTER_FREQUENCY: &str = "rx_freq";

/// The key of a sample's time: GNU Radio's `rx_time`, whole seconds and a fraction.
pub const TIME: &str = "rx_time";

/// The key of a gap in a stream: items lost just before the tagged item (u64, how many), by a
/// real-time source that could not wait (an overflow) or a link whose sender had to drop what
/// it could not keep. Not a GNU Radio key: GNU Radio's hardware sources re-send `rx_time`
/// after an overflow instead, which a sluice source that knows the time does as well.
pub const GAP: &str = "gap";

/// The key of a receiver's overall gain in dB (f64) from the tagged item on. Not a GNU Radio
/// key (its hardware sources tag only rate, frequency and time): sluice's radio sources add
/// it so that a recording knows the gain of every stretch.
pub const GAIN: &str = "rx_gain";

/// The key of a packet's transmit time, as [`TIME`]: GNU Radio's `tx_time` (gr-uhd, gr-soapy).
pub const TX_TIME: &str = "tx_time";

/// The key that starts a transmit burst at the tagged item: GNU Radio's `tx_sob`.
pub const TX_SOB: &str = "tx_sob";

/// The key that ends a transmit burst after the tagged item: GNU Radio's `tx_eob`.
pub const TX_EOB: &str = "tx_eob";

/// A sample rate as a tag value.
pub fn sample_rate(hz: f64) -> TagValue {
    TagValue::F64(hz)
}

/// The value a tag with `key` has after a node with `interpolation`/`decimation` passed it on:
/// the sample rate scales with the node's rate change; everything else is unchanged.
pub(crate) fn rescaled(
    key: &str,
    value: &TagValue,
    interpolation: u64,
    decimation: u64,
) -> TagValue {
    match value {
        TagValue::F64(hz) if key == SAMPLE_RATE && interpolation != decimation => {
            TagValue::F64(hz * interpolation as f64 / decimation.max(1) as f64)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_sample_rate_scales_with_the_rate() {
        assert_eq!(
            rescaled(SAMPLE_RATE, &TagValue::F64(48000.0), 1, 4),
            TagValue::F64(12000.0)
        );
        assert_eq!(
            rescaled(SAMPLE_RATE, &TagValue::F64(8000.0), 3, 2),
            TagValue::F64(12000.0)
        );
        assert_eq!(
            rescaled(CENTER_FREQUENCY, &TagValue::F64(1e8), 1, 4),
            TagValue::F64(1e8)
        );
    }
}
