//! What `sluice devices` prints: the devices SoapySDR finds, and one device's channels, rates,
//! frequencies, gain elements and antennas (as `SoapySDRUtil --probe` shows them), as text or
//! JSON. Every string in them comes from a driver and is escaped on the way in.

use crate::device::{enumerate, Device};
use crate::{ranges_text, Direction, Range, SoapyError};
use serde::Serialize;
use std::fmt::Write as _;

/// One device SoapySDR found: its key/value pairs (`driver`, `serial`, `label`, …).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Found {
    /// Its arguments, in the library's order.
    pub args: Vec<(String, String)>,
}

impl Found {
    /// The arguments as one `key=value,…` string (what `device = "…"` takes).
    pub fn args_text(&self) -> String {
        self.args
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The devices SoapySDR finds for `args` (`""`: all).
pub fn list(args: &str) -> Result<Vec<Found>, SoapyError> {
    Ok(enumerate(args)?
        .into_iter()
        .map(|args| Found { args })
        .collect())
}

/// The devices as text, one per line.
pub fn render_list(found: &[Found]) -> String {
    if found.is_empty() {
        return "SoapySDR finds no device (is the driver module installed? see docs/radio/hardware.md)\n".to_string();
    }
    let mut out = String::new();
    for (i, f) in found.iter().enumerate() {
        let _ = writeln!(out, "{i}: {}", f.args_text());
    }
    out
}

/// One gain element and its range.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GainElement {
    /// Its name (`LNA`).
    pub name: String,
    /// Its range (dB).
    pub range: Range,
}

/// One channel of a device.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Channel {
    /// RX or TX.
    pub direction: Direction,
    /// Its number.
    pub index: usize,
    /// Stream formats offered.
    pub formats: Vec<String>,
    /// The hardware's own format.
    pub native_format: String,
    /// Its full scale.
    pub full_scale: f64,
    /// Antennas.
    pub antennas: Vec<String>,
    /// Overall gain range (dB).
    pub gain: Range,
    /// Named gain elements.
    pub gain_elements: Vec<GainElement>,
    /// Automatic gain control.
    pub agc: bool,
    /// Frequency ranges (Hz).
    pub frequencies: Vec<Range>,
    /// Sample-rate ranges.
    pub rates: Vec<Range>,
    /// Bandwidth ranges (Hz).
    pub bandwidths: Vec<Range>,
    /// Frequency correction available.
    pub frequency_correction: bool,
    /// DC offset mode available.
    pub dc_offset_mode: bool,
    /// IQ balance mode available.
    pub iq_balance_mode: bool,
}

/// What a device says about itself.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Probe {
    /// The arguments it was opened with.
    pub args: String,
    /// Its driver.
    pub driver: String,
    /// Its hardware.
    pub hardware: String,
    /// The driver's hardware information.
    pub info: Vec<(String, String)>,
    /// Whether it has a hardware clock (timestamps).
    pub hardware_time: bool,
    /// Its channels, RX first.
    pub channels: Vec<Channel>,
}

/// Opens the device `args` names and asks it everything `sluice devices --probe` shows.
pub fn probe(args: &str) -> Result<Probe, SoapyError> {
    let dev = Device::open(args)?;
    let mut channels = Vec::new();
    for dir in [Direction::Rx, Direction::Tx] {
        for index in 0..dev.num_channels(dir) {
            let (native_format, full_scale) = dev.native_format(dir, index);
            let gain_elements = dev
                .gains(dir, index)
                .into_iter()
                .map(|name| {
                    let range = dev.gain_element_range(dir, index, &name)?;
                    Ok(GainElement { name, range })
                })
                .collect::<Result<_, SoapyError>>()?;
            channels.push(Channel {
                direction: dir,
                index,
                formats: dev.stream_formats(dir, index),
                native_format,
                full_scale,
                antennas: dev.antennas(dir, index),
                gain: dev.gain_range(dir, index),
                gain_elements,
                agc: dev.has_gain_mode(dir, index),
                frequencies: dev.frequency_range(dir, index),
                rates: dev.sample_rate_range(dir, index),
                bandwidths: dev.bandwidth_range(dir, index),
                frequency_correction: dev.has_frequency_correction(dir, index),
                dc_offset_mode: dev.has_dc_offset_mode(dir, index),
                iq_balance_mode: dev.has_iq_balance_mode(dir, index),
            });
        }
    }
    Ok(Probe {
        args: dev.args().to_string(),
        driver: dev.driver_key(),
        hardware: dev.hardware_key(),
        info: dev.hardware_info(),
        hardware_time: dev.has_hardware_time(),
        channels,
    })
}

/// A probe as text, laid out as `SoapySDRUtil --probe` lays it out.
pub fn render_probe(p: &Probe) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "device {}", p.args);
    let _ = writeln!(out, "  driver: {}", p.driver);
    let _ = writeln!(out, "  hardware: {}", p.hardware);
    for (k, v) in &p.info {
        let _ = writeln!(out, "  {k}: {v}");
    }
    let count = |d| p.channels.iter().filter(|c| c.direction == d).count();
    let _ = writeln!(
        out,
        "  channels: {} RX, {} TX",
        count(Direction::Rx),
        count(Direction::Tx)
    );
    let _ = writeln!(
        out,
        "  timestamps: {}",
        if p.hardware_time { "yes" } else { "no" }
    );
    for c in &p.channels {
        let _ = writeln!(out, "{} channel {}", c.direction, c.index);
        let _ = writeln!(
            out,
            "  formats: {} (native {}, full scale {})",
            c.formats.join(", "),
            c.native_format,
            c.full_scale
        );
        let _ = writeln!(out, "  antennas: {}", c.antennas.join(", "));
        let _ = writeln!(
            out,
            "  gain: {} dB{}",
            c.gain,
            if c.agc { ", AGC" } else { "" }
        );
        for g in &c.gain_elements {
            let _ = writeln!(out, "    {}: {} dB", g.name, g.range);
        }
        let _ = writeln!(out, "  frequency: {} Hz", ranges_text(&c.frequencies));
        let _ = writeln!(out, "  sample rate: {} samples/s", ranges_text(&c.rates));
        let _ = writeln!(out, "  bandwidth: {} Hz", ranges_text(&c.bandwidths));
        let mut corrections = Vec::new();
        if c.frequency_correction {
            corrections.push("frequency (ppm)");
        }
        if c.dc_offset_mode {
            corrections.push("DC offset mode");
        }
        if c.iq_balance_mode {
            corrections.push("IQ balance mode");
        }
        let _ = writeln!(
            out,
            "  corrections: {}",
            if corrections.is_empty() {
                "none".to_string()
            } else {
                corrections.join(", ")
            }
        );
    }
    out
}
