//! Nodes the console's tests run: a paced tone with a settable gain, and a sink that records
//! where the output's magnitude changes.
#![allow(dead_code)]

use num_complex::Complex32;
use sluice_runtime::{control, ControlSpec, Node, NodeError, Ports, TagValue, Work, WorkIo};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The tone's frequency in cycles per sample: bin 512 + 1024/8 of a 1024-point spectrum.
pub const TONE: f32 = 0.125;

/// An endless complex tone at `TONE`, paced at about 4 M samples/s, with a settable gain.
pub struct Tone {
    pub n: u64,
    pub gain: f32,
    /// Amplitude of the added noise (a deterministic generator), 0 for none.
    pub noise: f32,
}

impl Node for Tone {
    fn ports(&self) -> Ports {
        Ports::new().output::<Complex32>("out")
    }
    fn controls(&self) -> Vec<ControlSpec> {
        vec![ControlSpec {
            name: "gain",
            expects: "a number",
            help: "amplitude",
        }]
    }
    fn set_control(&mut self, _: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        self.gain = control::number(value, "a number")? as f32;
        Ok(())
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if io.stop_requested() {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<Complex32>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let k = space.len().min(4096);
        for (i, s) in space[..k].iter_mut().enumerate() {
            let phase =
                2.0 * std::f64::consts::PI * f64::from(TONE) * ((self.n + i as u64) % 8) as f64;
            let j = self.n + i as u64;
            // splitmix64: white, so the noise floor is flat.
            let hash = |k: u64| {
                let mut z = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            };
            let noise = Complex32::new(hash(2 * j), hash(2 * j + 1)) * self.noise;
            *s = Complex32::new(phase.cos() as f32, phase.sin() as f32) * self.gain + noise;
        }
        out.commit(k);
        self.n += k as u64;
        sluice_runtime::sleep(Duration::from_millis(1));
        Ok(Work::Progress)
    }
}

/// Records (index, magnitude rounded to the quantum `.2`) wherever that changes.
pub struct Steps(pub Arc<Mutex<Vec<(u64, f32)>>>, pub u64, pub f32);

impl Node for Steps {
    fn ports(&self) -> Ports {
        Ports::new().input::<Complex32>("in")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<Complex32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let mut steps = self.0.lock().unwrap();
        for (i, v) in x.iter().enumerate() {
            let m = (v.norm() / self.2).round() * self.2;
            if steps.last().is_none_or(|s| s.1 != m) {
                steps.push((self.1 + i as u64, m));
            }
        }
        let n = x.len();
        self.1 += n as u64;
        input.consume(n);
        Ok(Work::Progress)
    }
}

/// Reads its input and counts every item as dropped (as a real-time source that fell behind
/// would), and one late deadline on its first call.
pub struct Lossy {
    pub calls: u64,
}

impl Node for Lossy {
    fn ports(&self) -> Ports {
        Ports::new().input::<Complex32>("in")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<Complex32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let n = x.len();
        input.consume(n);
        if self.calls == 0 {
            sluice_runtime::count(sluice_runtime::Trouble::Late, 1);
        }
        self.calls += 1;
        sluice_runtime::count(sluice_runtime::Trouble::Dropped, n as u64);
        Ok(Work::Progress)
    }
}

/// Reads its input until its `fail` parameter is set, then fails with the value set as its
/// error (a node whose work returns an error, on cue).
#[derive(Default)]
pub struct Breaks {
    pub reason: Option<String>,
}

impl Node for Breaks {
    fn ports(&self) -> Ports {
        Ports::new().input::<Complex32>("in")
    }
    fn controls(&self) -> Vec<ControlSpec> {
        vec![ControlSpec {
            name: "fail",
            expects: "the error's text",
            help: "makes the next work call fail",
        }]
    }
    fn set_control(&mut self, _: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        self.reason = Some(control::value_text(value));
        Ok(())
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if let Some(reason) = &self.reason {
            return Err(NodeError::msg(format!("asked to fail: {reason}")));
        }
        let input = io.inputs.get::<Complex32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let n = x.len();
        input.consume(n);
        Ok(Work::Progress)
    }
}
