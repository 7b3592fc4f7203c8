//! Safe handles on libSoapySDR: [`Device`] (settings, one RX and one TX stream) and
//! [`enumerate`]. Every call into the C library is here, with the rules it must keep: strings
//! the library returns are copied and freed with the library's own `free`, lists with their
//! own clear functions, and a stream is closed before its device is released.
//!
//! Text that comes from a device module (keys, values, error messages) is escaped before it
//! reaches a message, as anything from outside the process is.

use crate::ffi::{self, Api, Kwargs, RawDevice, RawRange, RawStream};

mod stream;

use crate::{Direction, Range, SoapyError, StreamFormat};
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::ptr;
pub use stream::{Read, TxEvent};

/// The most channels one stream may carry (the pointer array lives on the stack).
pub const MAX_CHANNELS: usize = 16;

/// `text` with control characters escaped: device modules are third-party code.
pub fn escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| -> Box<dyn Iterator<Item = char>> {
            if c.is_control() {
                Box::new(c.escape_default())
            } else {
                Box::new(std::iter::once(c))
            }
        })
        .collect()
}

fn c_string(what: &str, text: &str) -> Result<CString, SoapyError> {
    CString::new(text).map_err(|_| SoapyError::BadArgs {
        args: escape(text),
        message: format!("{what} contains a NUL byte"),
    })
}

/// Copies a C string the library lent (not to be freed by us).
///
/// # Safety
/// `p` is null or points to a NUL-terminated string valid for this call.
unsafe fn lent(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: by this function's contract.
    escape(&unsafe { CStr::from_ptr(p) }.to_string_lossy())
}

/// Copies and frees a C string the library allocated for us.
fn owned(api: &Api, p: *mut c_char) -> String {
    // SAFETY: the library returns null or a NUL-terminated string allocated with its malloc.
    let text = unsafe { lent(p) };
    if !p.is_null() {
        // SAFETY: `p` came from the library and is freed once, with its own free.
        unsafe { (api.free)(p.cast()) };
    }
    text
}

/// Copies and clears a string list the library allocated (`char **` of `len`).
fn owned_list(api: &Api, list: *mut *mut c_char, len: usize) -> Vec<String> {
    if list.is_null() {
        return Vec::new();
    }
    let out = (0..len)
        // SAFETY: the library returned `len` valid string pointers at `list`.
        .map(|i| unsafe { lent(*list.add(i)) })
        .collect();
    let mut list = list;
    // SAFETY: the list and its strings came from the library; cleared once, as documented.
    unsafe { (api.strings_clear)(&mut list, len) };
    out
}

/// Copies and frees a range list the library allocated.
fn owned_ranges(api: &Api, list: *mut RawRange, len: usize) -> Vec<Range> {
    if list.is_null() {
        return Vec::new();
    }
    // SAFETY: the library returned `len` ranges at `list`.
    let out = unsafe { std::slice::from_raw_parts(list, len) }
        .iter()
        .map(|r| Range::from(*r))
        .collect();
    // SAFETY: allocated by the library with its malloc; freed once.
    unsafe { (api.free)(list.cast()) };
    out
}

/// Copies and clears key/value pairs the library allocated.
fn owned_kwargs(api: &Api, mut kw: Kwargs) -> Vec<(String, String)> {
    let out = (0..kw.size)
        .map(|i| {
            // SAFETY: a kwargs struct holds `size` valid keys and values.
            unsafe { (lent(*kw.keys.add(i)), lent(*kw.vals.add(i))) }
        })
        .collect();
    // SAFETY: the struct's arrays came from the library; cleared once.
    unsafe { (api.kwargs_clear)(&mut kw) };
    out
}

/// The library's message for the last failed call on this thread.
fn last_error(api: &Api) -> String {
    // SAFETY: lastError returns a thread-local string, valid until the next call.
    unsafe { lent((api.last_error)()) }
}

/// The name of error code `code` (`TIMEOUT`, `OVERFLOW`, …).
fn code_text(api: &Api, code: c_int) -> String {
    // SAFETY: errToStr returns a static string for any code.
    unsafe { lent((api.err_to_str)(code)) }
}

/// The devices SoapySDR finds for `args` (`""`: all), each as its key/value pairs.
pub fn enumerate(args: &str) -> Result<Vec<Vec<(String, String)>>, SoapyError> {
    let api = ffi::api()?;
    let c_args = c_string("the device arguments", args)?;
    let mut len = 0usize;
    // SAFETY: a valid C string and a valid out-pointer.
    let list = unsafe { (api.enumerate)(c_args.as_ptr(), &mut len) };
    if list.is_null() {
        return Ok(Vec::new());
    }
    let out = (0..len)
        .map(|i| {
            // SAFETY: the library returned `len` kwargs at `list`.
            let kw = unsafe { &*list.add(i) };
            (0..kw.size)
                // SAFETY: each kwargs holds `size` valid keys and values.
                .map(|j| unsafe { (lent(*kw.keys.add(j)), lent(*kw.vals.add(j))) })
                .collect()
        })
        .collect();
    // SAFETY: the list came from enumerate and is cleared once.
    unsafe { (api.kwargs_list_clear)(list, len) };
    Ok(out)
}

struct OpenStream {
    raw: *mut RawStream,
    format: StreamFormat,
    channels: usize,
}

/// An open SoapySDR device: its settings, and at most one RX and one TX stream. Dropping it
/// closes the streams and releases the device.
pub struct Device {
    api: &'static Api,
    raw: *mut RawDevice,
    args: String,
    rx: Option<OpenStream>,
    tx: Option<OpenStream>,
}

// SAFETY: a SoapySDR device handle may be used from any thread, one thread at a time (the C
// API keeps no thread affinity; only lastError is per thread, and it is read on the thread
// that made the call). `Device` is not `Sync` and every call takes it by reference from its
// single owner.
unsafe impl Send for Device {}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("args", &self.args).finish()
    }
}

impl Device {
    /// Opens the device `args` names (`driver=rtlsdr,serial=…`). When none matches, the error
    /// lists what SoapySDR found instead.
    pub fn open(args: &str) -> Result<Device, SoapyError> {
        let api = ffi::api()?;
        let c_args = c_string("the device arguments", args)?;
        // SAFETY: a valid C string; the handle is released in Drop.
        let raw = unsafe { (api.make)(c_args.as_ptr()) };
        if raw.is_null() {
            let message = last_error(api);
            let found = enumerate("")?;
            let found = if found.is_empty() {
                "SoapySDR finds no device at all".to_string()
            } else {
                let names: Vec<String> = found
                    .iter()
                    .map(|kw| {
                        kw.iter()
                            .filter(|(k, _)| k == "driver" || k == "serial" || k == "label")
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .collect();
                format!("devices found: {}", names.join("; "))
            };
            return Err(SoapyError::NoDevice {
                args: escape(args),
                message,
                found,
            });
        }
        Ok(Device {
            api,
            raw,
            args: escape(args),
            rx: None,
            tx: None,
        })
    }

    /// The arguments it was opened with.
    pub fn args(&self) -> &str {
        &self.args
    }

    fn check(&self, what: impl FnOnce() -> String, code: c_int) -> Result<(), SoapyError> {
        if code == 0 {
            return Ok(());
        }
        let mut message = last_error(self.api);
        if message.is_empty() {
            message = code_text(self.api, code);
        }
        Err(SoapyError::Call {
            what: what(),
            message,
        })
    }

    /// The driver's name (`rtlsdr`).
    pub fn driver_key(&self) -> String {
        // SAFETY: a live device; the string is freed by `owned`.
        owned(self.api, unsafe { (self.api.driver_key)(self.raw) })
    }

    /// The hardware's name.
    pub fn hardware_key(&self) -> String {
        // SAFETY: as for driver_key.
        owned(self.api, unsafe { (self.api.hardware_key)(self.raw) })
    }

    /// What the driver says about the hardware.
    pub fn hardware_info(&self) -> Vec<(String, String)> {
        // SAFETY: a live device; the kwargs are cleared by `owned_kwargs`.
        owned_kwargs(self.api, unsafe { (self.api.hardware_info)(self.raw) })
    }

    /// Channels in direction `dir`.
    pub fn num_channels(&self, dir: Direction) -> usize {
        // SAFETY: a live device.
        unsafe { (self.api.num_channels)(self.raw, dir.raw()) }
    }

    /// The stream formats channel `ch` offers (`CF32`, `CS16`, …).
    pub fn stream_formats(&self, dir: Direction, ch: usize) -> Vec<String> {
        let mut len = 0;
        // SAFETY: a live device and a valid out-pointer.
        let list = unsafe { (self.api.stream_formats)(self.raw, dir.raw(), ch, &mut len) };
        owned_list(self.api, list, len)
    }

    /// The hardware's own format and its full-scale value.
    pub fn native_format(&self, dir: Direction, ch: usize) -> (String, f64) {
        let mut full = 0.0;
        // SAFETY: a live device and a valid out-pointer.
        let p = unsafe { (self.api.native_format)(self.raw, dir.raw(), ch, &mut full) };
        (owned(self.api, p), full)
    }

    /// The antennas of channel `ch`.
    pub fn antennas(&self, dir: Direction, ch: usize) -> Vec<String> {
        let mut len = 0;
        // SAFETY: a live device and a valid out-pointer.
        let list = unsafe { (self.api.list_antennas)(self.raw, dir.raw(), ch, &mut len) };
        owned_list(self.api, list, len)
    }

    /// Selects antenna `name`.
    pub fn set_antenna(&mut self, dir: Direction, ch: usize, name: &str) -> Result<(), SoapyError> {
        let c = c_string("the antenna", name)?;
        // SAFETY: a live device and a valid C string.
        let code = unsafe { (self.api.set_antenna)(self.raw, dir.raw(), ch, c.as_ptr()) };
        self.check(
            || format!("antenna {} of {dir} channel {ch}", escape(name)),
            code,
        )
    }

    /// Whether the channel has automatic DC offset correction.
    pub fn has_dc_offset_mode(&self, dir: Direction, ch: usize) -> bool {
        // SAFETY: a live device.
        unsafe { (self.api.has_dc_offset_mode)(self.raw, dir.raw(), ch) }
    }

    /// Turns automatic DC offset correction on or off.
    pub fn set_dc_offset_mode(
        &mut self,
        dir: Direction,
        ch: usize,
        on: bool,
    ) -> Result<(), SoapyError> {
        // SAFETY: a live device.
        let code = unsafe { (self.api.set_dc_offset_mode)(self.raw, dir.raw(), ch, on) };
        self.check(|| format!("DC offset mode of {dir} channel {ch}"), code)
    }

    /// Whether the channel has automatic IQ balance correction.
    pub fn has_iq_balance_mode(&self, dir: Direction, ch: usize) -> bool {
        // SAFETY: a live device.
        unsafe { (self.api.has_iq_balance_mode)(self.raw, dir.raw(), ch) }
    }

    /// Turns automatic IQ balance correction on or off.
    pub fn set_iq_balance_mode(
        &mut self,
        dir: Direction,
        ch: usize,
        on: bool,
    ) -> Result<(), SoapyError> {
        // SAFETY: a live device.
        let code = unsafe { (self.api.set_iq_balance_mode)(self.raw, dir.raw(), ch, on) };
        self.check(|| format!("IQ balance mode of {dir} channel {ch}"), code)
    }

    /// Whether the channel takes a frequency correction.
    pub fn has_frequency_correction(&self, dir: Direction, ch: usize) -> bool {
        // SAFETY: a live device.
        unsafe { (self.api.has_frequency_correction)(self.raw, dir.raw(), ch) }
    }

    /// Sets the frequency correction in ppm.
    pub fn set_frequency_correction(
        &mut self,
        dir: Direction,
        ch: usize,
        ppm: f64,
    ) -> Result<(), SoapyError> {
        // SAFETY: a live device.
        let code = unsafe { (self.api.set_frequency_correction)(self.raw, dir.raw(), ch, ppm) };
        self.check(
            || format!("frequency correction {ppm} ppm of {dir} channel {ch}"),
            code,
        )
    }

    /// The channel's named gain elements (`LNA`, `VGA`, …).
    pub fn gains(&self, dir: Direction, ch: usize) -> Vec<String> {
        let mut len = 0;
        // SAFETY: a live device and a valid out-pointer.
        let list = unsafe { (self.api.list_gains)(self.raw, dir.raw(), ch, &mut len) };
        owned_list(self.api, list, len)
    }

    /// Whether the channel has automatic gain control.
    pub fn has_gain_mode(&self, dir: Direction, ch: usize) -> bool {
        // SAFETY: a live device.
        unsafe { (self.api.has_gain_mode)(self.raw, dir.raw(), ch) }
    }

    /// Turns automatic gain control on or off.
    pub fn set_gain_mode(&mut self, dir: Direction, ch: usize, on: bool) -> Result<(), SoapyError> {
        // SAFETY: a live device.
        let code = unsafe { (self.api.set_gain_mode)(self.raw, dir.raw(), ch, on) };
        self.check(|| format!("automatic gain of {dir} channel {ch}"), code)
    }

    /// The overall gain's range (dB).
    pub fn gain_range(&self, dir: Direction, ch: usize) -> Range {
        // SAFETY: a live device; the range is returned by value.
        Range::from(unsafe { (self.api.gain_range)(self.raw, dir.raw(), ch) })
    }

    /// A gain element's range (dB).
    pub fn gain_element_range(
        &self,
        dir: Direction,
        ch: usize,
        name: &str,
    ) -> Result<Range, SoapyError> {
        let c = c_string("the gain element", name)?;
        // SAFETY: a live device and a valid C string.
        Ok(Range::from(unsafe {
            (self.api.gain_element_range)(self.raw, dir.raw(), ch, c.as_ptr())
        }))
    }

    /// Sets the overall gain (dB), spread over the elements by the driver.
    pub fn set_gain(&mut self, dir: Direction, ch: usize, db: f64) -> Result<(), SoapyError> {
        // SAFETY: a live device.
        let code = unsafe { (self.api.set_gain)(self.raw, dir.raw(), ch, db) };
        self.check(|| format!("gain {db} dB of {dir} channel {ch}"), code)
    }

    /// Sets one gain element (dB).
    pub fn set_gain_element(
        &mut self,
        dir: Direction,
        ch: usize,
        name: &str,
        db: f64,
    ) -> Result<(), SoapyError> {
        let c = c_string("the gain element", name)?;
        // SAFETY: a live device and a valid C string.
        let code = unsafe { (self.api.set_gain_element)(self.raw, dir.raw(), ch, c.as_ptr(), db) };
        self.check(
            || format!("gain {} {db} dB of {dir} channel {ch}", escape(name)),
            code,
        )
    }

    /// The overall gain now (dB).
    pub fn gain(&self, dir: Direction, ch: usize) -> f64 {
        // SAFETY: a live device.
        unsafe { (self.api.get_gain)(self.raw, dir.raw(), ch) }
    }

    /// Tunes the channel's centre frequency (Hz).
    pub fn set_frequency(&mut self, dir: Direction, ch: usize, hz: f64) -> Result<(), SoapyError> {
        // SAFETY: a live device; null tune arguments are allowed.
        let code = unsafe { (self.api.set_frequency)(self.raw, dir.raw(), ch, hz, ptr::null()) };
        self.check(|| format!("frequency {hz} Hz of {dir} channel {ch}"), code)
    }

    /// The centre frequency now (Hz).
    pub fn frequency(&self, dir: Direction, ch: usize) -> f64 {
        // SAFETY: a live device.
        unsafe { (self.api.get_frequency)(self.raw, dir.raw(), ch) }
    }

    /// The frequencies the channel tunes to.
    pub fn frequency_range(&self, dir: Direction, ch: usize) -> Vec<Range> {
        let mut len = 0;
        // SAFETY: a live device and a valid out-pointer.
        let list = unsafe { (self.api.frequency_range)(self.raw, dir.raw(), ch, &mut len) };
        owned_ranges(self.api, list, len)
    }

    /// Sets the sample rate (samples/s).
    pub fn set_sample_rate(
        &mut self,
        dir: Direction,
        ch: usize,
        rate: f64,
    ) -> Result<(), SoapyError> {
        // SAFETY: a live device.
        let code = unsafe { (self.api.set_sample_rate)(self.raw, dir.raw(), ch, rate) };
        self.check(|| format!("sample rate {rate} of {dir} channel {ch}"), code)
    }

    /// The sample rate now.
    pub fn sample_rate(&self, dir: Direction, ch: usize) -> f64 {
        // SAFETY: a live device.
        unsafe { (self.api.get_sample_rate)(self.raw, dir.raw(), ch) }
    }

    /// The sample rates the channel takes.
    pub fn sample_rate_range(&self, dir: Direction, ch: usize) -> Vec<Range> {
        let mut len = 0;
        // SAFETY: a live device and a valid out-pointer.
        let list = unsafe { (self.api.sample_rate_range)(self.raw, dir.raw(), ch, &mut len) };
        owned_ranges(self.api, list, len)
    }

    /// Sets the baseband filter's bandwidth (Hz).
    pub fn set_bandwidth(&mut self, dir: Direction, ch: usize, hz: f64) -> Result<(), SoapyError> {
        // SAFETY: a live device.
        let code = unsafe { (self.api.set_bandwidth)(self.raw, dir.raw(), ch, hz) };
        self.check(|| format!("bandwidth {hz} Hz of {dir} channel {ch}"), code)
    }

    /// The bandwidths the channel's filter takes.
    pub fn bandwidth_range(&self, dir: Direction, ch: usize) -> Vec<Range> {
        let mut len = 0;
        // SAFETY: a live device and a valid out-pointer.
        let list = unsafe { (self.api.bandwidth_range)(self.raw, dir.raw(), ch, &mut len) };
        owned_ranges(self.api, list, len)
    }

    /// Whether the device has a hardware clock.
    pub fn has_hardware_time(&self) -> bool {
        // SAFETY: a live device; null means the default clock.
        unsafe { (self.api.has_hardware_time)(self.raw, ptr::null()) }
    }

    /// The hardware clock now (ns).
    pub fn hardware_time(&self) -> i64 {
        // SAFETY: a live device; null means the default clock.
        unsafe { (self.api.hardware_time)(self.raw, ptr::null()) }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        self.stop_stream(Direction::Rx);
        self.stop_stream(Direction::Tx);
        // SAFETY: the handle came from make, its streams are closed, and it is released once.
        unsafe { (self.api.unmake)(self.raw) };
    }
}
