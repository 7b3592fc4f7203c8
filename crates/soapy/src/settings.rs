//! What a radio block asks of its device, checked against what the device says it takes, so
//! that a wrong value is refused naming the device's range rather than silently clamped by a
//! driver (what gr-soapy leaves to each driver).

use crate::device::{escape, Device};
use crate::{ranges_text, Direction, Range, SoapyError};
use sluice_kernels::IqFormat;

/// A stream format as SoapySDR names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFormat {
    /// Complex `f32` (what the graph carries; no conversion).
    Cf32,
    /// Complex `i16`, full scale 32768.
    Cs16,
    /// Complex `i8`, full scale 128.
    Cs8,
    /// Complex `u8` offset by 127.5 (RTL-SDR's own).
    Cu8,
}

impl StreamFormat {
    /// Every format, in the order `sluice blocks` lists them.
    pub const ALL: [StreamFormat; 4] = [
        StreamFormat::Cf32,
        StreamFormat::Cs16,
        StreamFormat::Cs8,
        StreamFormat::Cu8,
    ];

    /// The format called `name` (`CF32`, `CS16`, `CS8`, `CU8`, any case).
    pub fn parse(name: &str) -> Option<StreamFormat> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// SoapySDR's name.
    pub fn name(self) -> &'static str {
        match self {
            StreamFormat::Cf32 => "CF32",
            StreamFormat::Cs16 => "CS16",
            StreamFormat::Cs8 => "CS8",
            StreamFormat::Cu8 => "CU8",
        }
    }

    /// Bytes of one sample (I and Q).
    pub fn sample_bytes(self) -> usize {
        match self {
            StreamFormat::Cf32 => 8,
            StreamFormat::Cs16 => 4,
            StreamFormat::Cs8 | StreamFormat::Cu8 => 2,
        }
    }

    /// The alignment a buffer of this format needs.
    pub fn alignment(self) -> usize {
        match self {
            StreamFormat::Cf32 => 4,
            StreamFormat::Cs16 => 2,
            StreamFormat::Cs8 | StreamFormat::Cu8 => 1,
        }
    }

    /// The integer IQ format the conversion kernel reads (`None` for CF32).
    pub fn iq(self) -> Option<IqFormat> {
        match self {
            StreamFormat::Cf32 => None,
            StreamFormat::Cs16 => Some(IqFormat::Ci16),
            StreamFormat::Cs8 => Some(IqFormat::Ci8),
            StreamFormat::Cu8 => Some(IqFormat::Cu8),
        }
    }
}

/// The settings of a radio block, applied to every channel of its stream when it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct RadioSettings {
    /// Device arguments (`driver=rtlsdr,serial=…`).
    pub args: String,
    /// The device's channels the stream carries, in port order.
    pub channels: Vec<usize>,
    /// Samples per second.
    pub rate: f64,
    /// Centre frequency (Hz).
    pub frequency: Option<f64>,
    /// Baseband filter bandwidth (Hz).
    pub bandwidth: Option<f64>,
    /// Overall gain (dB), spread by the driver.
    pub gain: Option<f64>,
    /// Named gain elements (dB), set after the overall gain.
    pub gains: Vec<(String, f64)>,
    /// Antenna.
    pub antenna: Option<String>,
    /// Automatic gain control.
    pub agc: Option<bool>,
    /// Frequency correction (ppm).
    pub ppm: Option<f64>,
    /// Automatic DC offset correction.
    pub dc_offset_mode: Option<bool>,
    /// Automatic IQ balance correction.
    pub iq_balance_mode: Option<bool>,
    /// The stream format on the wire between driver and sluice.
    pub format: StreamFormat,
    /// The driver's stream arguments (`bufflen=16384,buffers=16`).
    pub stream_args: String,
    /// The most samples per read or write (0: the stream's MTU).
    pub mtu: usize,
}

impl RadioSettings {
    /// Settings for `args` at `rate`, channel 0, CF32, all else left as the device has it.
    pub fn new(args: &str, rate: f64) -> Self {
        RadioSettings {
            args: args.to_string(),
            channels: vec![0],
            rate,
            frequency: None,
            bandwidth: None,
            gain: None,
            gains: Vec::new(),
            antenna: None,
            agc: None,
            ppm: None,
            dc_offset_mode: None,
            iq_balance_mode: None,
            format: StreamFormat::Cf32,
            stream_args: String::new(),
            mtu: 0,
        }
    }

    /// Applies every setting to every channel of direction `dir` (the rate first, then the
    /// tuning, then the gains), refusing values outside the device's ranges.
    pub fn apply(&self, dev: &mut Device, dir: Direction) -> Result<(), SoapyError> {
        let have = dev.num_channels(dir);
        for &ch in &self.channels {
            if ch >= have {
                return Err(SoapyError::BadArgs {
                    args: dev.args().to_string(),
                    message: format!(
                        "{dir} channel {ch} asked for, the device has {have} ({dir} channels 0 .. {})",
                        have.saturating_sub(1)
                    ),
                });
            }
        }
        for &ch in &self.channels {
            let ranges = dev.sample_rate_range(dir, ch);
            within(
                dev,
                &ranges,
                self.rate,
                || format!("sample rate of {dir} channel {ch}"),
                "samples/s",
            )?;
            dev.set_sample_rate(dir, ch, self.rate)?;
            if let Some(bw) = self.bandwidth {
                let ranges = dev.bandwidth_range(dir, ch);
                within(
                    dev,
                    &ranges,
                    bw,
                    || format!("bandwidth of {dir} channel {ch}"),
                    "Hz",
                )?;
                dev.set_bandwidth(dir, ch, bw)?;
            }
            if let Some(name) = &self.antenna {
                let antennas = dev.antennas(dir, ch);
                if !antennas.iter().any(|a| a == name) {
                    return Err(refused(
                        dev,
                        format!("antenna '{}' of {dir} channel {ch}", escape(name)),
                        format!("its antennas are {}", antennas.join(", ")),
                    ));
                }
                dev.set_antenna(dir, ch, name)?;
            }
            if let Some(on) = self.dc_offset_mode {
                if !dev.has_dc_offset_mode(dir, ch) {
                    return Err(refused(
                        dev,
                        format!("DC offset mode of {dir} channel {ch}"),
                        "it has none".into(),
                    ));
                }
                dev.set_dc_offset_mode(dir, ch, on)?;
            }
            if let Some(on) = self.iq_balance_mode {
                if !dev.has_iq_balance_mode(dir, ch) {
                    return Err(refused(
                        dev,
                        format!("IQ balance mode of {dir} channel {ch}"),
                        "it has none".into(),
                    ));
                }
                dev.set_iq_balance_mode(dir, ch, on)?;
            }
            if let Some(ppm) = self.ppm {
                if !dev.has_frequency_correction(dir, ch) {
                    return Err(refused(
                        dev,
                        format!("frequency correction of {dir} channel {ch}"),
                        "it takes none".into(),
                    ));
                }
                dev.set_frequency_correction(dir, ch, ppm)?;
            }
            if let Some(on) = self.agc {
                if !dev.has_gain_mode(dir, ch) {
                    return Err(refused(
                        dev,
                        format!("automatic gain of {dir} channel {ch}"),
                        "it has none".into(),
                    ));
                }
                dev.set_gain_mode(dir, ch, on)?;
            }
        }
        if let Some(hz) = self.frequency {
            set_frequency(dev, dir, &self.channels, hz)?;
        }
        if let Some(db) = self.gain {
            set_gain(dev, dir, &self.channels, db)?;
        }
        for (name, db) in &self.gains {
            for &ch in &self.channels {
                let elements = dev.gains(dir, ch);
                if !elements.iter().any(|e| e == name) {
                    return Err(refused(
                        dev,
                        format!("gain element '{}' of {dir} channel {ch}", escape(name)),
                        format!("its gain elements are {}", elements.join(", ")),
                    ));
                }
                let range = dev.gain_element_range(dir, ch, name)?;
                within(
                    dev,
                    &[range],
                    *db,
                    || format!("gain {} of {dir} channel {ch}", escape(name)),
                    "dB",
                )?;
                dev.set_gain_element(dir, ch, name, *db)?;
            }
        }
        Ok(())
    }
}

/// Tunes every channel to `hz`, refusing a frequency outside the device's range.
pub(crate) fn set_frequency(
    dev: &mut Device,
    dir: Direction,
    channels: &[usize],
    hz: f64,
) -> Result<(), SoapyError> {
    for &ch in channels {
        let ranges = dev.frequency_range(dir, ch);
        within(
            dev,
            &ranges,
            hz,
            || format!("frequency of {dir} channel {ch}"),
            "Hz",
        )?;
        dev.set_frequency(dir, ch, hz)?;
    }
    Ok(())
}

/// Sets every channel's overall gain to `db`, refusing a gain outside the device's range.
pub(crate) fn set_gain(
    dev: &mut Device,
    dir: Direction,
    channels: &[usize],
    db: f64,
) -> Result<(), SoapyError> {
    for &ch in channels {
        let range = dev.gain_range(dir, ch);
        within(
            dev,
            &[range],
            db,
            || format!("gain of {dir} channel {ch}"),
            "dB",
        )?;
        dev.set_gain(dir, ch, db)?;
    }
    Ok(())
}

/// `Ok` if `x` lies in one of `ranges` (or the device reports none: it is then the driver's to
/// refuse).
fn within(
    dev: &Device,
    ranges: &[Range],
    x: f64,
    what: impl FnOnce() -> String,
    unit: &'static str,
) -> Result<(), SoapyError> {
    if !x.is_finite() || (!ranges.is_empty() && !ranges.iter().any(|r| r.contains(x))) {
        return Err(SoapyError::OutOfRange {
            what: what(),
            value: x,
            unit,
            device: dev.driver_key(),
            range: format!("{} {unit}", ranges_text(ranges)),
        });
    }
    Ok(())
}

fn refused(dev: &Device, what: String, message: String) -> SoapyError {
    SoapyError::Call {
        what: format!("{what} on {}", dev.driver_key()),
        message,
    }
}
