//! `soapy_source`: samples from a SoapySDR device's RX channels into c32 streams, one output
//! per channel, time-aligned (one `readStream` call fills every channel).
//!
//! Nothing is lost silently. The first item carries `rx_rate`, `rx_freq`, `rx_gain` and, when
//! the device has a clock, `rx_time` (GNU Radio's keys, as gr-uhd and gr-soapy send them). An
//! overflow (the device dropped samples because the graph was behind) is counted, reported
//! when the node ends, and marked on the first item after it with a `gap` tag (how many items
//! were lost, from the device's timestamps; 0 when it has none) and a fresh `rx_time`. A change
//! of `frequency` or `gain` while running puts `rx_freq` / `rx_gain` (the value the device
//! reports back) on the first item read after it took effect.
//!
//! Integer formats (CS16, CS8, CU8) are read into a scratch buffer and converted into the
//! output queue by the `iq_to_c32` kernel; CF32 is read straight into queue memory.

use crate::device::{Device, Read, MAX_CHANNELS};
use crate::settings::{set_frequency, set_gain};
use crate::{Direction, RadioSettings, StreamFormat};
use num_complex::Complex32;
use sluice_kernels::iq_to_c32;
use sluice_runtime::{
    control, metadata, ControlSpec, Node, NodeError, Output, Ports, TagValue, Work, WorkIo,
};
use std::time::Duration;

/// The run-time parameter `frequency`.
pub const FREQUENCY: ControlSpec = ControlSpec {
    name: "frequency",
    expects: "a frequency in Hz",
    help: "centre frequency (Hz) of every channel",
};

/// The run-time parameter `gain`.
pub const GAIN: ControlSpec = ControlSpec {
    name: "gain",
    expects: "a gain in dB",
    help: "overall gain (dB) of every channel, spread over its elements by the driver",
};

/// How long one read may wait for samples before the node looks at its stop flag again.
const READ_TIMEOUT: Duration = Duration::from_millis(100);

/// Integer samples waiting for conversion, one buffer per channel.
enum Scratch {
    None,
    I16(Vec<Vec<i16>>),
    U8(Vec<Vec<u8>>),
}

/// A SoapySDR receiver (see the module docs).
pub struct SoapySource {
    settings: RadioSettings,
    limit: Option<u64>,
    device: Option<Device>,
    mtu: usize,
    scratch: Scratch,
    started: bool,
    /// A time reference: the device's sample counter and time (ns) of one sample.
    reference: Option<(u64, i64)>,
    /// Samples the device has produced or dropped (the next sample's number).
    device_samples: u64,
    overflowed: bool,
    overflows: u64,
    lost: u64,
    uncounted: u64,
    /// Tags for the next item out, from run-time changes.
    pending: Vec<(&'static str, TagValue)>,
}

impl SoapySource {
    /// A source for `settings` that ends after `limit` samples per channel (`None`: when the
    /// graph stops). Opens the device only when the graph starts.
    pub fn new(settings: RadioSettings, limit: Option<u64>) -> Result<Self, NodeError> {
        if settings.channels.is_empty() || settings.channels.len() > MAX_CHANNELS {
            return Err(NodeError::msg(format!(
                "a source has 1 to {MAX_CHANNELS} channels, not {}",
                settings.channels.len()
            )));
        }
        if !(settings.rate.is_finite() && settings.rate > 0.0) {
            return Err(NodeError::msg(format!(
                "the sample rate must be positive, not {}",
                settings.rate
            )));
        }
        Ok(SoapySource {
            settings,
            limit,
            device: None,
            mtu: 0,
            scratch: Scratch::None,
            started: false,
            reference: None,
            device_samples: 0,
            overflowed: false,
            overflows: 0,
            lost: 0,
            uncounted: 0,
            pending: Vec::new(),
        })
    }

    fn tag_all(outs: &mut [Option<&mut Output<Complex32>>], at: u64, key: &str, value: &TagValue) {
        for out in outs.iter_mut().flatten() {
            out.add_tag(at, key, value.clone());
        }
    }

    /// The tags that go on the first item of this read.
    fn tag_read(
        &mut self,
        outs: &mut [Option<&mut Output<Complex32>>],
        at: u64,
        time_ns: Option<i64>,
    ) {
        let rate = self.settings.rate;
        let mut fresh_time = !self.started;
        if !self.started {
            self.started = true;
            Self::tag_all(
                outs,
                at,
                metadata::SAMPLE_RATE,
                &metadata::sample_rate(rate),
            );
            if let Some(dev) = &self.device {
                let ch = self.settings.channels[0];
                let f = dev.frequency(Direction::Rx, ch);
                Self::tag_all(outs, at, metadata::CENTER_FREQUENCY, &TagValue::F64(f));
                let g = dev.gain(Direction::Rx, ch);
                Self::tag_all(outs, at, metadata::GAIN, &TagValue::F64(g));
            }
        }
        if std::mem::take(&mut self.overflowed) {
            fresh_time = true;
            let lost = match (self.reference, time_ns) {
                (Some((k0, t0)), Some(t)) => {
                    let expected = t0 as f64 + (self.device_samples - k0) as f64 * 1e9 / rate;
                    ((t as f64 - expected) * rate / 1e9).round().max(0.0) as u64
                }
                _ => {
                    self.uncounted += 1;
                    0
                }
            };
            self.lost += lost;
            sluice_runtime::count(sluice_runtime::Trouble::Dropped, lost);
            self.device_samples += lost;
            Self::tag_all(outs, at, metadata::GAP, &TagValue::U64(lost));
        }
        for (key, value) in self.pending.drain(..) {
            for out in outs.iter_mut().flatten() {
                out.add_tag(at, key, value.clone());
            }
        }
        if let Some(t) = time_ns {
            self.reference = Some((self.device_samples, t));
            if fresh_time {
                let secs = t.div_euclid(1_000_000_000);
                let frac = t.rem_euclid(1_000_000_000) as f64 * 1e-9;
                Self::tag_all(
                    outs,
                    at,
                    metadata::TIME,
                    &TagValue::rx_time(secs as u64, frac),
                );
            }
        }
    }
}

fn device_error(e: crate::SoapyError) -> NodeError {
    NodeError::msg(e.to_string())
}

impl Node for SoapySource {
    fn ports(&self) -> Ports {
        (0..self.settings.channels.len()).fold(Ports::new(), |p, c| {
            p.output::<Complex32>(&format!("out{c}"))
        })
    }

    fn length(&self) -> Option<u64> {
        self.limit
    }

    fn controls(&self) -> Vec<ControlSpec> {
        vec![FREQUENCY, GAIN]
    }

    fn set_control(&mut self, name: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        let x = control::number(
            value,
            if name == "gain" {
                GAIN.expects
            } else {
                FREQUENCY.expects
            },
        )?;
        let channels = self.settings.channels.clone();
        let ch = channels[0];
        match (name, self.device.as_mut()) {
            ("frequency", None) => self.settings.frequency = Some(x),
            ("gain", None) => self.settings.gain = Some(x),
            ("frequency", Some(dev)) => {
                set_frequency(dev, Direction::Rx, &channels, x).map_err(device_error)?;
                let f = dev.frequency(Direction::Rx, ch);
                self.pending
                    .push((metadata::CENTER_FREQUENCY, TagValue::F64(f)));
            }
            ("gain", Some(dev)) => {
                set_gain(dev, Direction::Rx, &channels, x).map_err(device_error)?;
                let g = dev.gain(Direction::Rx, ch);
                self.pending.push((metadata::GAIN, TagValue::F64(g)));
            }
            _ => unreachable!("the runtime only delivers declared controls"),
        }
        Ok(())
    }

    fn init(&mut self) -> Result<(), NodeError> {
        let mut dev = Device::open(&self.settings.args).map_err(device_error)?;
        self.settings
            .apply(&mut dev, Direction::Rx)
            .map_err(device_error)?;
        let s = &self.settings;
        let mtu = dev
            .start_stream(Direction::Rx, s.format, &s.channels, &s.stream_args)
            .map_err(device_error)?;
        self.mtu = if s.mtu > 0 { s.mtu } else { mtu };
        let n = s.channels.len();
        self.scratch = match s.format {
            StreamFormat::Cf32 => Scratch::None,
            StreamFormat::Cs16 => Scratch::I16(vec![vec![0; 2 * self.mtu]; n]),
            StreamFormat::Cs8 | StreamFormat::Cu8 => Scratch::U8(vec![vec![0; 2 * self.mtu]; n]),
        };
        self.device = Some(dev);
        Ok(())
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let done = self.device_samples - self.lost;
        let left = self.limit.map_or(u64::MAX, |l| l.saturating_sub(done));
        if left == 0 || io.stop_requested() {
            return Ok(Work::Done);
        }
        let nch = self.settings.channels.len();
        let mut outs: [Option<&mut Output<Complex32>>; MAX_CHANNELS] =
            std::array::from_fn(|_| None);
        for (slot, out) in outs.iter_mut().zip(io.outputs.all::<Complex32>()?) {
            *slot = Some(out);
        }
        let mut k = self.mtu.min(usize::try_from(left).unwrap_or(usize::MAX));
        for (c, out) in outs.iter_mut().take(nch).enumerate() {
            let out = out.as_mut().expect("one output per channel");
            // Wait for room for a whole packet (half the queue at most): a read into whatever
            // little room a consumer just freed costs a device call per few samples.
            let want = k.min(out.capacity() / 2).max(1);
            match out.reserve(want)? {
                None => {
                    return Ok(Work::NeedOutput {
                        port: c,
                        items: want,
                    })
                }
                Some(y) => k = k.min(y.len()),
            }
        }
        let at = outs[0].as_ref().map_or(0, |o| o.items_written());
        let Some(dev) = self.device.as_mut() else {
            return Err(NodeError::msg("the device is not open"));
        };
        let read = {
            let mut ys: [&mut [Complex32]; MAX_CHANNELS] = Default::default();
            for (y, out) in ys.iter_mut().zip(outs.iter_mut().take(nch)) {
                let out = out.as_mut().expect("one output per channel");
                *y = &mut out.reserve(k)?.expect("room was there")[..k];
            }
            match &mut self.scratch {
                Scratch::None => dev.read(&mut ys[..nch], READ_TIMEOUT),
                Scratch::I16(bufs) => convert(dev, bufs, &mut ys[..nch], k, self.settings.format),
                Scratch::U8(bufs) => convert(dev, bufs, &mut ys[..nch], k, self.settings.format),
            }
            .map_err(device_error)?
        };
        match read {
            Read::Timeout => Ok(Work::Progress),
            Read::Overflow => {
                self.overflows += 1;
                self.overflowed = true;
                sluice_runtime::count(sluice_runtime::Trouble::Late, 1);
                Ok(Work::Progress)
            }
            Read::Samples { n, time_ns } => {
                if n > 0 {
                    self.tag_read(&mut outs[..nch], at, time_ns);
                    for out in outs.iter_mut().take(nch).flatten() {
                        out.commit(n);
                    }
                    self.device_samples += n as u64;
                }
                Ok(Work::Progress)
            }
        }
    }

    fn stop(&mut self) {
        self.device = None;
    }

    fn warnings(&mut self) -> Vec<String> {
        if self.overflows == 0 {
            return Vec::new();
        }
        let mut w = format!(
            "{} overflows: the device dropped {} samples per channel while the graph was behind",
            self.overflows, self.lost
        );
        if self.uncounted > 0 {
            w.push_str(&format!(
                " ({} more gaps of unknown length: the device gave no time)",
                self.uncounted
            ));
        }
        vec![w]
    }
}

/// Reads integer samples into `bufs` and converts them into `ys` (the first `k` of each).
fn convert<V: bytemuck::Pod + sluice_kernels::IqValue>(
    dev: &mut Device,
    bufs: &mut [Vec<V>],
    ys: &mut [&mut [Complex32]],
    k: usize,
    format: StreamFormat,
) -> Result<Read, crate::SoapyError> {
    let mut xs: [&mut [V]; MAX_CHANNELS] = Default::default();
    for (x, b) in xs.iter_mut().zip(bufs.iter_mut()) {
        let len = (2 * k).min(b.len());
        *x = &mut b[..len];
    }
    let read = dev.read(&mut xs[..ys.len()], READ_TIMEOUT)?;
    if let Read::Samples { n, .. } = read {
        let iq = format.iq().expect("an integer format");
        for (x, y) in xs.iter().zip(ys.iter_mut()) {
            iq_to_c32(iq, &x[..2 * n], &mut y[..n]);
        }
    }
    Ok(read)
}
