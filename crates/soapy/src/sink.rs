//! `soapy_sink`: c32 streams out of a SoapySDR device's TX channels, one input per channel.
//!
//! Bursts follow the tags GNU Radio's UHD and Soapy sinks use: `tx_time` (whole seconds and a
//! fraction, as `rx_time`) on an item makes the packet starting there go out at that hardware
//! time; `tx_sob` on an item starts a burst there and `tx_eob` on an item ends the burst after
//! it. Tags of the first input govern every channel. `frequency` and `gain` can change while
//! it runs. Underflows and late packets the device
//! reports are counted and reported when the node ends; so are values clipped when converting
//! to an integer format.

use crate::device::{Device, TxEvent, MAX_CHANNELS};
use crate::settings::{set_frequency, set_gain};
use crate::source::{FREQUENCY, GAIN};
use crate::{Direction, RadioSettings, StreamFormat};
use num_complex::Complex32;
use sluice_kernels::c32_to_iq;
use sluice_runtime::{
    control, ControlSpec, Input, Node, NodeError, Ports, Tag, TagPolicy, TagValue, Work, WorkIo,
};
use std::time::Duration;

use sluice_runtime::metadata::{TX_EOB, TX_SOB, TX_TIME};

/// How long one write may wait for room in the device's buffers.
const WRITE_TIMEOUT: Duration = Duration::from_millis(100);

/// A SoapySDR transmitter (see the module docs).
pub struct SoapySink {
    settings: RadioSettings,
    device: Option<Device>,
    mtu: usize,
    scratch: Vec<Vec<i16>>,
    tags: Vec<Tag>,
    next_time: Option<i64>,
    burst_open: bool,
    underflows: u64,
    late: u64,
    clipped: u64,
}

/// Nanoseconds from a `tx_time`/`rx_time` value.
pub fn time_ns(value: &TagValue) -> Option<i64> {
    match value {
        TagValue::Tuple(v) if v.len() == 2 => {
            let secs = v[0]
                .as_u64()
                .or_else(|| v[0].as_i64().and_then(|i| u64::try_from(i).ok()))?;
            let frac = v[1].as_f64()?;
            Some(secs as i64 * 1_000_000_000 + (frac * 1e9).round() as i64)
        }
        _ => None,
    }
}

impl SoapySink {
    /// A sink for `settings` (CF32 or CS16 on the wire). Opens the device when the graph
    /// starts.
    pub fn new(settings: RadioSettings) -> Result<Self, NodeError> {
        if settings.channels.is_empty() || settings.channels.len() > MAX_CHANNELS {
            return Err(NodeError::msg(format!(
                "a sink has 1 to {MAX_CHANNELS} channels, not {}",
                settings.channels.len()
            )));
        }
        if !matches!(settings.format, StreamFormat::Cf32 | StreamFormat::Cs16) {
            return Err(NodeError::msg(format!(
                "a sink sends CF32 or CS16, not {}",
                settings.format.name()
            )));
        }
        Ok(SoapySink {
            settings,
            device: None,
            mtu: 0,
            scratch: Vec::new(),
            tags: Vec::new(),
            next_time: None,
            burst_open: false,
            underflows: 0,
            late: 0,
            clipped: 0,
        })
    }

    fn poll_events(&mut self) {
        let Some(dev) = self.device.as_mut() else {
            return;
        };
        while let Some(e) = dev.tx_event(Duration::ZERO) {
            match e {
                TxEvent::Underflow => self.underflows += 1,
                TxEvent::Late => self.late += 1,
                TxEvent::Other(_) => {}
            }
        }
    }

    /// The length of the packet that starts at `pos` (at most `n`), whether it ends a burst,
    /// having applied the tags on `pos` itself.
    fn packet(&mut self, pos: u64, n: usize) -> (usize, bool) {
        let mut len = n as u64;
        let mut eob = false;
        for t in &self.tags {
            if t.index < pos {
                continue;
            }
            match &*t.key {
                TX_TIME if t.index == pos => {
                    self.next_time = time_ns(&t.value);
                }
                TX_SOB if t.index == pos => self.burst_open = true,
                TX_TIME | TX_SOB if t.index - pos < len => len = t.index - pos,
                TX_EOB if t.index - pos < len => {
                    len = t.index - pos + 1;
                    eob = true;
                }
                _ => {}
            }
        }
        (len as usize, eob)
    }
}

impl Node for SoapySink {
    fn ports(&self) -> Ports {
        (0..self.settings.channels.len())
            .fold(Ports::new(), |p, c| p.input::<Complex32>(&format!("in{c}")))
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn controls(&self) -> Vec<ControlSpec> {
        vec![FREQUENCY, GAIN]
    }

    fn set_control(&mut self, name: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        let expects = if name == "gain" {
            GAIN.expects
        } else {
            FREQUENCY.expects
        };
        let x = control::number(value, expects)?;
        let channels = self.settings.channels.clone();
        let err = |e: crate::SoapyError| NodeError::msg(e.to_string());
        match (name, self.device.as_mut()) {
            ("frequency", None) => self.settings.frequency = Some(x),
            ("gain", None) => self.settings.gain = Some(x),
            ("frequency", Some(dev)) => {
                set_frequency(dev, Direction::Tx, &channels, x).map_err(err)?
            }
            ("gain", Some(dev)) => set_gain(dev, Direction::Tx, &channels, x).map_err(err)?,
            _ => unreachable!("the runtime only delivers declared controls"),
        }
        Ok(())
    }

    fn init(&mut self) -> Result<(), NodeError> {
        let err = |e: crate::SoapyError| NodeError::msg(e.to_string());
        let mut dev = Device::open(&self.settings.args).map_err(err)?;
        self.settings.apply(&mut dev, Direction::Tx).map_err(err)?;
        let s = &self.settings;
        let mtu = dev
            .start_stream(Direction::Tx, s.format, &s.channels, &s.stream_args)
            .map_err(err)?;
        self.mtu = if s.mtu > 0 { s.mtu } else { mtu };
        if s.format == StreamFormat::Cs16 {
            self.scratch = vec![vec![0; 2 * self.mtu]; s.channels.len()];
        }
        self.device = Some(dev);
        Ok(())
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        self.poll_events();
        let nch = self.settings.channels.len();
        let mut ins: [Option<&mut Input<Complex32>>; MAX_CHANNELS] = std::array::from_fn(|_| None);
        for (slot, input) in ins.iter_mut().zip(io.inputs.all::<Complex32>()?) {
            *slot = Some(input);
        }
        let mut n = usize::MAX;
        for (c, input) in ins.iter_mut().take(nch).enumerate() {
            let input = input.as_mut().expect("one input per channel");
            match input.window(1)? {
                None => return Ok(Work::NeedInput { port: c, items: 1 }),
                Some(x) => n = n.min(x.len()),
            }
        }
        let pos = ins[0].as_ref().map_or(0, |i| i.items_read());
        if n == 0 {
            // End of stream: close an open burst so the device does not underflow forever.
            if self.burst_open {
                let dev = self
                    .device
                    .as_mut()
                    .ok_or_else(|| NodeError::msg("the device is not open"))?;
                let empty: [&[Complex32]; MAX_CHANNELS] = [&[]; MAX_CHANNELS];
                dev.write(&empty[..nch], None, true, WRITE_TIMEOUT)
                    .map_err(|e| NodeError::msg(e.to_string()))?;
                self.burst_open = false;
            }
            self.poll_events();
            return Ok(Work::Done);
        }
        n = n.min(self.mtu);
        if let Some(first) = ins[0].as_mut() {
            first.take_tags(pos + n as u64, &mut self.tags);
        }
        let (len, eob) = self.packet(pos, n);
        let dev = self
            .device
            .as_mut()
            .ok_or_else(|| NodeError::msg("the device is not open"))?;
        let written = {
            let mut xs: [&[Complex32]; MAX_CHANNELS] = [&[]; MAX_CHANNELS];
            for (x, input) in xs.iter_mut().zip(ins.iter_mut().take(nch)) {
                let input = input.as_mut().expect("one input per channel");
                *x = &input.window(len)?.expect("the window was there")[..len];
            }
            let time = self.next_time;
            let r = if self.settings.format == StreamFormat::Cs16 {
                let mut ys: [&[i16]; MAX_CHANNELS] = [&[]; MAX_CHANNELS];
                for ((y, b), x) in ys.iter_mut().zip(self.scratch.iter_mut()).zip(&xs[..nch]) {
                    let (_, clipped) =
                        c32_to_iq(sluice_kernels::IqFormat::Ci16, x, &mut b[..2 * len]);
                    self.clipped += clipped;
                    *y = &b[..2 * len];
                }
                dev.write(&ys[..nch], time, eob, WRITE_TIMEOUT)
            } else {
                dev.write(&xs[..nch], time, eob, WRITE_TIMEOUT)
            };
            r.map_err(|e| NodeError::msg(e.to_string()))?
        };
        if written > 0 {
            self.next_time = None;
            if written == len && eob {
                self.burst_open = false;
            }
            for input in ins.iter_mut().take(nch).flatten() {
                input.consume(written);
            }
            let done = pos + written as u64;
            self.tags.retain(|t| t.index >= done);
        }
        Ok(Work::Progress)
    }

    fn stop(&mut self) {
        self.poll_events();
        self.device = None;
    }

    fn warnings(&mut self) -> Vec<String> {
        let mut w = Vec::new();
        if self.underflows > 0 {
            w.push(format!(
                "{} underflows: the device ran out of samples inside a burst",
                self.underflows
            ));
        }
        if self.late > 0 {
            w.push(format!(
                "{} late packets: their tx_time had passed when they reached the device",
                self.late
            ));
        }
        if self.clipped > 0 {
            w.push(format!(
                "{} values clipped converting to {}",
                self.clipped,
                self.settings.format.name()
            ));
        }
        w
    }
}
