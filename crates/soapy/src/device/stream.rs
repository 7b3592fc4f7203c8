//! The streams of a [`Device`]: opening, reading, writing and the TX side's reports. Every
//! call hands the library pointers to buffers checked here for their number, length and
//! alignment.

use super::{c_string, code_text, last_error, Device, OpenStream, MAX_CHANNELS};
use crate::ffi;
use crate::{Direction, SoapyError, StreamFormat};
use std::os::raw::{c_int, c_long, c_void};
use std::ptr;
use std::time::Duration;

/// What one read gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// `n` samples in every channel's buffer, the first at hardware time `time_ns` if the
    /// device said.
    Samples {
        /// Samples per channel.
        n: usize,
        /// The first sample's time (ns), when the device has a clock.
        time_ns: Option<i64>,
    },
    /// Nothing arrived within the timeout.
    Timeout,
    /// The device dropped samples before the next ones (it reports how many only through the
    /// next read's time).
    Overflow,
}

/// What the TX side of a device reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxEvent {
    /// The device ran out of samples inside a burst.
    Underflow,
    /// A timed packet arrived after its time.
    Late,
    /// Another report (its SoapySDR status code), e.g. a burst's end acknowledged.
    Other(c_int),
}

impl Device {
    /// Opens and activates the stream of direction `dir` on `channels` in `format`, with the
    /// driver's stream arguments `args` (`"bufflen=16384"`). Returns its MTU in samples.
    pub fn start_stream(
        &mut self,
        dir: Direction,
        format: StreamFormat,
        channels: &[usize],
        args: &str,
    ) -> Result<usize, SoapyError> {
        if channels.is_empty() || channels.len() > MAX_CHANNELS {
            return Err(SoapyError::BadArgs {
                args: format!("{channels:?}"),
                message: format!("a stream carries 1 to {MAX_CHANNELS} channels"),
            });
        }
        self.stop_stream(dir);
        let c_format = c_string("the format", format.name())?;
        let c_args = c_string("the stream arguments", args)?;
        // SAFETY: a valid C string; the kwargs are cleared below.
        let mut kw = unsafe { (self.api.kwargs_from_string)(c_args.as_ptr()) };
        // SAFETY: a live device, valid strings, `channels.len()` channel numbers, valid kwargs.
        let raw = unsafe {
            (self.api.setup_stream)(
                self.raw,
                dir.raw(),
                c_format.as_ptr(),
                channels.as_ptr(),
                channels.len(),
                &kw,
            )
        };
        let message = last_error(self.api);
        // SAFETY: `kw` came from kwargs_from_string and is cleared once.
        unsafe { (self.api.kwargs_clear)(&mut kw) };
        if raw.is_null() {
            return Err(SoapyError::Call {
                what: format!("{} stream of {dir} channels {channels:?}", format.name()),
                message,
            });
        }
        let stream = OpenStream {
            raw,
            format,
            channels: channels.len(),
        };
        // SAFETY: a live device and the stream it just opened.
        let mtu = unsafe { (self.api.stream_mtu)(self.raw, raw) };
        // SAFETY: as above; no flags, no time, continuous.
        let code = unsafe { (self.api.activate_stream)(self.raw, raw, 0, 0, 0) };
        match dir {
            Direction::Rx => self.rx = Some(stream),
            Direction::Tx => self.tx = Some(stream),
        }
        self.check(|| format!("activating the {dir} stream"), code)?;
        Ok(mtu.max(1))
    }

    /// Deactivates and closes the stream of direction `dir`, if open.
    pub fn stop_stream(&mut self, dir: Direction) {
        let stream = match dir {
            Direction::Rx => self.rx.take(),
            Direction::Tx => self.tx.take(),
        };
        if let Some(s) = stream {
            // SAFETY: a live device and its open stream, closed once; errors at teardown
            // have no one to go to.
            unsafe {
                (self.api.deactivate_stream)(self.raw, s.raw, 0, 0);
                (self.api.close_stream)(self.raw, s.raw);
            }
        }
    }

    /// Reads up to the shortest buffer's worth of samples into `buffers`, one per channel of
    /// the RX stream, each holding samples of the stream's format (`T` is any plain type, e.g.
    /// `Complex32` for CF32, `i16` pairs for CS16).
    pub fn read<T: bytemuck::Pod>(
        &mut self,
        buffers: &mut [&mut [T]],
        timeout: Duration,
    ) -> Result<Read, SoapyError> {
        let Some(stream) = &self.rx else {
            return Err(no_stream(Direction::Rx));
        };
        let n = check_buffers(
            stream,
            buffers.iter().map(|b| bytemuck::cast_slice::<T, u8>(b)),
        )?;
        let mut ptrs = [ptr::null_mut::<c_void>(); MAX_CHANNELS];
        for (p, b) in ptrs.iter_mut().zip(buffers.iter_mut()) {
            *p = b.as_mut_ptr().cast();
        }
        let (mut flags, mut time) = (0 as c_int, 0i64);
        // SAFETY: a live device and its RX stream; `stream.channels` buffers, each with room
        // for `n` samples of `bytes` each (checked above), alive and exclusively borrowed for
        // the call.
        let got = unsafe {
            (self.api.read_stream)(
                self.raw,
                stream.raw,
                ptrs.as_ptr(),
                n,
                &mut flags,
                &mut time,
                timeout.as_micros().min(c_long::MAX as u128) as c_long,
            )
        };
        match got {
            k if k >= 0 => Ok(Read::Samples {
                n: (k as usize).min(n),
                time_ns: (flags & ffi::HAS_TIME != 0).then_some(time),
            }),
            ffi::TIMEOUT => Ok(Read::Timeout),
            ffi::OVERFLOW => Ok(Read::Overflow),
            code => Err(SoapyError::Call {
                what: "reading the RX stream".to_string(),
                message: code_text(self.api, code),
            }),
        }
    }

    /// Writes `buffers` (one per channel of the TX stream, same length) as one packet: at
    /// `time_ns` when given, ending a burst when `end_burst`. Returns the samples taken (0 on
    /// a timeout).
    pub fn write<T: bytemuck::Pod>(
        &mut self,
        buffers: &[&[T]],
        time_ns: Option<i64>,
        end_burst: bool,
        timeout: Duration,
    ) -> Result<usize, SoapyError> {
        let Some(stream) = &self.tx else {
            return Err(no_stream(Direction::Tx));
        };
        let n = check_buffers(
            stream,
            buffers.iter().map(|b| bytemuck::cast_slice::<T, u8>(b)),
        )?;
        let mut ptrs = [ptr::null::<c_void>(); MAX_CHANNELS];
        for (p, b) in ptrs.iter_mut().zip(buffers) {
            *p = b.as_ptr().cast();
        }
        let mut flags = if end_burst { ffi::END_BURST } else { 0 };
        if time_ns.is_some() {
            flags |= ffi::HAS_TIME;
        }
        // SAFETY: a live device and its TX stream; `stream.channels` buffers of at least `n`
        // samples each (checked above), alive for the call.
        let got = unsafe {
            (self.api.write_stream)(
                self.raw,
                stream.raw,
                ptrs.as_ptr(),
                n,
                &mut flags,
                time_ns.unwrap_or(0),
                timeout.as_micros().min(c_long::MAX as u128) as c_long,
            )
        };
        match got {
            k if k >= 0 => Ok((k as usize).min(n)),
            ffi::TIMEOUT => Ok(0),
            code => Err(SoapyError::Call {
                what: "writing the TX stream".to_string(),
                message: code_text(self.api, code),
            }),
        }
    }

    /// The next report of the TX stream, waiting at most `timeout`; `None` when there is none
    /// (or the driver does not report).
    pub fn tx_event(&mut self, timeout: Duration) -> Option<TxEvent> {
        let stream = self.tx.as_ref()?;
        let (mut mask, mut flags, mut time) = (0usize, 0 as c_int, 0i64);
        // SAFETY: a live device and its TX stream; valid out-pointers.
        let code = unsafe {
            (self.api.read_stream_status)(
                self.raw,
                stream.raw,
                &mut mask,
                &mut flags,
                &mut time,
                timeout.as_micros().min(c_long::MAX as u128) as c_long,
            )
        };
        match code {
            ffi::TIMEOUT | ffi::NOT_SUPPORTED => None,
            ffi::UNDERFLOW => Some(TxEvent::Underflow),
            ffi::TIME_ERROR => Some(TxEvent::Late),
            other => Some(TxEvent::Other(other)),
        }
    }
}

fn no_stream(dir: Direction) -> SoapyError {
    SoapyError::Call {
        what: format!("the {dir} stream"),
        message: "it is not open".to_string(),
    }
}

/// The samples every buffer holds (the shortest), checking their number and alignment.
fn check_buffers<'a>(
    stream: &OpenStream,
    buffers: impl ExactSizeIterator<Item = &'a [u8]>,
) -> Result<usize, SoapyError> {
    if buffers.len() != stream.channels {
        return Err(SoapyError::Call {
            what: "a stream call".to_string(),
            message: format!("{} buffers for {} channels", buffers.len(), stream.channels),
        });
    }
    let bytes = stream.format.sample_bytes();
    let mut n = usize::MAX;
    for b in buffers {
        if !(b.as_ptr() as usize).is_multiple_of(stream.format.alignment()) {
            return Err(SoapyError::Call {
                what: "a stream call".to_string(),
                message: format!("a buffer is not aligned for {}", stream.format.name()),
            });
        }
        n = n.min(b.len() / bytes);
    }
    Ok(n)
}
