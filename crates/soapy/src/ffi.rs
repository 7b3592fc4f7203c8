//! libSoapySDR's C API (`SoapySDR/Device.h`, `Types.h`, `Errors.h`), opened at run time.
//!
//! The library is loaded once per process on first use, so the workspace builds and runs
//! without it; a missing library is [`SoapyError::NotInstalled`] naming the Debian package.
//! Only the calls sluice makes are bound. [`crate::device`] is the only user of this module:
//! everything here is raw, and the safe wrappers there uphold the C API's rules.

use crate::SoapyError;
use libloading::Library;
use std::os::raw::{c_char, c_int, c_long, c_void};
use std::sync::OnceLock;

/// The file names tried, newest ABI first (Debian's `libsoapysdr0.8` ships the first; the
/// unversioned name comes with `libsoapysdr-dev`).
const LIBRARY_NAMES: &[&str] = &["libSoapySDR.so.0.8", "libSoapySDR.so"];

/// An environment variable naming the library file to load instead (a build of one's own).
pub const LIBRARY_VARIABLE: &str = "SLUICE_SOAPY_LIBRARY";

/// `SOAPY_SDR_TX`.
pub const TX: c_int = 0;
/// `SOAPY_SDR_RX`.
pub const RX: c_int = 1;
/// `SOAPY_SDR_END_BURST`.
pub const END_BURST: c_int = 1 << 1;
/// `SOAPY_SDR_HAS_TIME`.
pub const HAS_TIME: c_int = 1 << 2;
/// `SOAPY_SDR_TIMEOUT`.
pub const TIMEOUT: c_int = -1;
/// `SOAPY_SDR_OVERFLOW`.
pub const OVERFLOW: c_int = -4;
/// `SOAPY_SDR_NOT_SUPPORTED`.
pub const NOT_SUPPORTED: c_int = -5;
/// `SOAPY_SDR_TIME_ERROR`.
pub const TIME_ERROR: c_int = -6;
/// `SOAPY_SDR_UNDERFLOW`.
pub const UNDERFLOW: c_int = -7;

/// `SoapySDRDevice` (opaque).
#[repr(C)]
pub struct RawDevice {
    _opaque: [u8; 0],
}

/// `SoapySDRStream` (opaque).
#[repr(C)]
pub struct RawStream {
    _opaque: [u8; 0],
}

/// `SoapySDRKwargs`: `size` keys and values, C strings owned by the library.
#[repr(C)]
pub struct Kwargs {
    /// Number of pairs.
    pub size: usize,
    /// The keys.
    pub keys: *mut *mut c_char,
    /// The values.
    pub vals: *mut *mut c_char,
}

/// `SoapySDRRange`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawRange {
    /// Smallest.
    pub minimum: f64,
    /// Largest.
    pub maximum: f64,
    /// Step (0: continuous).
    pub step: f64,
}

type Dev = *mut RawDevice;
type CDev = *const RawDevice;
type Str = *const c_char;

/// Declares the bound functions once: the table's fields and the code that looks them up.
macro_rules! api {
    ($($field:ident = $symbol:literal: fn($($arg:ty),*) -> $ret:ty;)*) => {
        /// The bound functions of the library, which stays loaded as long as the table lives
        /// (for the whole process: the table is a static).
        pub struct Api {
            _library: Library,
            $(#[doc = $symbol] pub $field: unsafe extern "C" fn($($arg),*) -> $ret,)*
        }

        impl Api {
            fn bind(library: Library) -> Result<Api, libloading::Error> {
                $(
                    // SAFETY: the symbol is the C function of that name in libSoapySDR 0.8,
                    // whose signature (Device.h, Types.h, Errors.h) the type spells out; the
                    // pointer is used only while `_library` (moved into the table) is loaded.
                    let $field = unsafe {
                        *library.get::<unsafe extern "C" fn($($arg),*) -> $ret>(
                            concat!($symbol, "\0").as_bytes(),
                        )?
                    };
                )*
                Ok(Api { _library: library, $($field),* })
            }
        }
    };
}

api! {
    last_error = "SoapySDRDevice_lastError": fn() -> Str;
    err_to_str = "SoapySDR_errToStr": fn(c_int) -> Str;
    free = "SoapySDR_free": fn(*mut c_void) -> ();
    strings_clear = "SoapySDRStrings_clear": fn(*mut *mut *mut c_char, usize) -> ();
    kwargs_from_string = "SoapySDRKwargs_fromString": fn(Str) -> Kwargs;
    kwargs_clear = "SoapySDRKwargs_clear": fn(*mut Kwargs) -> ();
    kwargs_list_clear = "SoapySDRKwargsList_clear": fn(*mut Kwargs, usize) -> ();
    enumerate = "SoapySDRDevice_enumerateStrArgs": fn(Str, *mut usize) -> *mut Kwargs;
    make = "SoapySDRDevice_makeStrArgs": fn(Str) -> Dev;
    unmake = "SoapySDRDevice_unmake": fn(Dev) -> c_int;
    driver_key = "SoapySDRDevice_getDriverKey": fn(CDev) -> *mut c_char;
    hardware_key = "SoapySDRDevice_getHardwareKey": fn(CDev) -> *mut c_char;
    hardware_info = "SoapySDRDevice_getHardwareInfo": fn(CDev) -> Kwargs;
    num_channels = "SoapySDRDevice_getNumChannels": fn(CDev, c_int) -> usize;
    stream_formats = "SoapySDRDevice_getStreamFormats": fn(CDev, c_int, usize, *mut usize) -> *mut *mut c_char;
    native_format = "SoapySDRDevice_getNativeStreamFormat": fn(CDev, c_int, usize, *mut f64) -> *mut c_char;
    setup_stream = "SoapySDRDevice_setupStream": fn(Dev, c_int, Str, *const usize, usize, *const Kwargs) -> *mut RawStream;
    close_stream = "SoapySDRDevice_closeStream": fn(Dev, *mut RawStream) -> c_int;
    stream_mtu = "SoapySDRDevice_getStreamMTU": fn(CDev, *mut RawStream) -> usize;
    activate_stream = "SoapySDRDevice_activateStream": fn(Dev, *mut RawStream, c_int, i64, usize) -> c_int;
    deactivate_stream = "SoapySDRDevice_deactivateStream": fn(Dev, *mut RawStream, c_int, i64) -> c_int;
    read_stream = "SoapySDRDevice_readStream": fn(Dev, *mut RawStream, *const *mut c_void, usize, *mut c_int, *mut i64, c_long) -> c_int;
    write_stream = "SoapySDRDevice_writeStream": fn(Dev, *mut RawStream, *const *const c_void, usize, *mut c_int, i64, c_long) -> c_int;
    read_stream_status = "SoapySDRDevice_readStreamStatus": fn(Dev, *mut RawStream, *mut usize, *mut c_int, *mut i64, c_long) -> c_int;
    list_antennas = "SoapySDRDevice_listAntennas": fn(CDev, c_int, usize, *mut usize) -> *mut *mut c_char;
    set_antenna = "SoapySDRDevice_setAntenna": fn(Dev, c_int, usize, Str) -> c_int;
    has_dc_offset_mode = "SoapySDRDevice_hasDCOffsetMode": fn(CDev, c_int, usize) -> bool;
    set_dc_offset_mode = "SoapySDRDevice_setDCOffsetMode": fn(Dev, c_int, usize, bool) -> c_int;
    has_iq_balance_mode = "SoapySDRDevice_hasIQBalanceMode": fn(CDev, c_int, usize) -> bool;
    set_iq_balance_mode = "SoapySDRDevice_setIQBalanceMode": fn(Dev, c_int, usize, bool) -> c_int;
    has_frequency_correction = "SoapySDRDevice_hasFrequencyCorrection": fn(CDev, c_int, usize) -> bool;
    set_frequency_correction = "SoapySDRDevice_setFrequencyCorrection": fn(Dev, c_int, usize, f64) -> c_int;
    list_gains = "SoapySDRDevice_listGains": fn(CDev, c_int, usize, *mut usize) -> *mut *mut c_char;
    has_gain_mode = "SoapySDRDevice_hasGainMode": fn(CDev, c_int, usize) -> bool;
    set_gain_mode = "SoapySDRDevice_setGainMode": fn(Dev, c_int, usize, bool) -> c_int;
    set_gain = "SoapySDRDevice_setGain": fn(Dev, c_int, usize, f64) -> c_int;
    set_gain_element = "SoapySDRDevice_setGainElement": fn(Dev, c_int, usize, Str, f64) -> c_int;
    get_gain = "SoapySDRDevice_getGain": fn(CDev, c_int, usize) -> f64;
    gain_range = "SoapySDRDevice_getGainRange": fn(CDev, c_int, usize) -> RawRange;
    gain_element_range = "SoapySDRDevice_getGainElementRange": fn(CDev, c_int, usize, Str) -> RawRange;
    set_frequency = "SoapySDRDevice_setFrequency": fn(Dev, c_int, usize, f64, *const Kwargs) -> c_int;
    get_frequency = "SoapySDRDevice_getFrequency": fn(CDev, c_int, usize) -> f64;
    frequency_range = "SoapySDRDevice_getFrequencyRange": fn(CDev, c_int, usize, *mut usize) -> *mut RawRange;
    set_sample_rate = "SoapySDRDevice_setSampleRate": fn(Dev, c_int, usize, f64) -> c_int;
    get_sample_rate = "SoapySDRDevice_getSampleRate": fn(CDev, c_int, usize) -> f64;
    sample_rate_range = "SoapySDRDevice_getSampleRateRange": fn(CDev, c_int, usize, *mut usize) -> *mut RawRange;
    set_bandwidth = "SoapySDRDevice_setBandwidth": fn(Dev, c_int, usize, f64) -> c_int;
    bandwidth_range = "SoapySDRDevice_getBandwidthRange": fn(CDev, c_int, usize, *mut usize) -> *mut RawRange;
    has_hardware_time = "SoapySDRDevice_hasHardwareTime": fn(CDev, Str) -> bool;
    hardware_time = "SoapySDRDevice_getHardwareTime": fn(CDev, Str) -> i64;
}

/// The library, loaded on first use (the same table for the whole process).
pub fn api() -> Result<&'static Api, SoapyError> {
    static API: OnceLock<Result<Api, SoapyError>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Api, SoapyError> {
    let names: Vec<String> = match std::env::var(LIBRARY_VARIABLE) {
        Ok(path) if !path.is_empty() => vec![path],
        _ => LIBRARY_NAMES.iter().map(|s| s.to_string()).collect(),
    };
    let mut reasons = Vec::new();
    for name in &names {
        // SAFETY: loading libSoapySDR runs its static constructors (its module registry and
        // logger), which have no preconditions; no other code of ours runs during the load.
        match unsafe { Library::new(name) } {
            Ok(library) => {
                return Api::bind(library).map_err(|e| SoapyError::NotInstalled {
                    tried: name.clone(),
                    reason: format!("it lacks a SoapySDR 0.8 call: {e}"),
                })
            }
            Err(e) => reasons.push(e.to_string()),
        }
    }
    Err(SoapyError::NotInstalled {
        tried: names.join(", "),
        reason: reasons.join("; "),
    })
}
