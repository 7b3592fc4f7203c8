//! SoapySDR radios for sluice: the `soapy_source` and `soapy_sink` blocks and device
//! discovery (`sluice devices`), on libSoapySDR's C API opened at run time.
//!
//! SoapySDR is the vendor-neutral driver layer behind GNU Radio's gr-soapy and FutureSDR's
//! seify: one integration reaches RTL-SDR, HackRF, Airspy, LimeSDR, bladeRF, USRP (SoapyUHD),
//! PlutoSDR and remote devices (SoapyRemote), each through its Debian module package
//! (`docs/radio/hardware.md`). The library is loaded when a block starts or devices are listed,
//! so the workspace builds without it; a machine without it gets
//! [`SoapyError::NotInstalled`], naming the package `libsoapysdr0.8`.
//!
//! - [`device`]: the safe handle on a device (every `unsafe` call of the crate is there and in
//!   [`ffi`]).
//! - [`SoapySource`], [`SoapySink`]: the blocks; [`graph_blocks::register`] declares them.
//! - [`probe`]: what `sluice devices` prints.
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod device;
pub mod ffi;
pub mod graph_blocks;
pub mod probe;
mod settings;
mod sink;
mod source;

pub use device::{enumerate, Device, Read, TxEvent};
pub use settings::{RadioSettings, StreamFormat};
pub use sink::SoapySink;
pub use source::SoapySource;

use std::fmt;
use thiserror::Error;

/// Why a SoapySDR call failed. Every message names the device, setting or value concerned.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum SoapyError {
    /// libSoapySDR could not be loaded.
    #[error("libSoapySDR could not be loaded ({tried}: {reason}); install Debian's package libsoapysdr0.8 (apt-get install libsoapysdr0.8) and the module of your radio (docs/radio/hardware.md)")]
    NotInstalled {
        /// The file names tried.
        tried: String,
        /// What the loader said.
        reason: String,
    },
    /// No device matches the arguments.
    #[error("no SoapySDR device matches '{args}' ({message}); {found}")]
    NoDevice {
        /// The arguments given.
        args: String,
        /// SoapySDR's reason.
        message: String,
        /// What SoapySDR finds instead, in words.
        found: String,
    },
    /// Arguments that cannot be passed on.
    #[error("bad device arguments '{args}': {message}")]
    BadArgs {
        /// The arguments.
        args: String,
        /// What is wrong.
        message: String,
    },
    /// A value outside what the device takes.
    #[error("{what} {value} {unit} is outside what {device} takes ({range})")]
    OutOfRange {
        /// The setting (e.g. "sample rate of RX channel 0").
        what: String,
        /// The value asked for.
        value: f64,
        /// Its unit.
        unit: &'static str,
        /// The device (its driver).
        device: String,
        /// The device's ranges, in words.
        range: String,
    },
    /// The device refused a call.
    #[error("{what}: {message}")]
    Call {
        /// The call (e.g. "frequency 1e12 Hz of RX channel 0").
        what: String,
        /// The device's message.
        message: String,
    },
}

/// A stream direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Direction {
    /// Receive.
    Rx,
    /// Transmit.
    Tx,
}

impl Direction {
    fn raw(self) -> std::os::raw::c_int {
        match self {
            Direction::Rx => ffi::RX,
            Direction::Tx => ffi::TX,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Rx => "RX",
            Direction::Tx => "TX",
        })
    }
}

/// A range of values a device takes: `min ..= max` in steps of `step` (0: any).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Range {
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// The step (0: continuous).
    pub step: f64,
}

impl From<ffi::RawRange> for Range {
    fn from(r: ffi::RawRange) -> Self {
        Range {
            min: r.minimum,
            max: r.maximum,
            step: r.step,
        }
    }
}

impl Range {
    /// Whether `x` lies within (a relative tolerance of 1e-9 allows for rounding).
    pub fn contains(&self, x: f64) -> bool {
        let slack = 1e-9 * self.max.abs().max(1.0);
        x >= self.min - slack && x <= self.max + slack
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max {
            write!(f, "{}", self.min)
        } else if self.step > 0.0 {
            write!(f, "{} .. {} step {}", self.min, self.max, self.step)
        } else {
            write!(f, "{} .. {}", self.min, self.max)
        }
    }
}

/// Ranges in words: `225001 .. 300000, 900001 .. 3200000`.
pub fn ranges_text(ranges: &[Range]) -> String {
    if ranges.is_empty() {
        return "none reported".to_string();
    }
    ranges
        .iter()
        .map(Range::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
