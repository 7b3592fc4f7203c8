//! [`Convolve`]: partitioned convolution with long impulse responses (`sluice-conv`) as a
//! graph block, mono or multi-channel, in the channel layouts of `sluice convolve`
//! ([`Layout`]).
//!
//! Ports are one per channel, `in0` … and `out0` … (f32), as `wav_source` and `wav_sink` have
//! them. Output frame `n` is the convolution at input frame `n` (the engine's latency is
//! removed), and after the inputs end the tail follows (`IR length − 1` frames) unless
//! `tail` is off. The loop is [`StreamConvolver`], the one behind `sluice convolve`: whole
//! blocks are convolved straight from the input windows into the output reservations.
//!
//! For a wet/dry mix, feed the input also to `multiply_const` and `add` it (without the tail,
//! which `add` would cut anyway). Tags go to every output at the frame they were on. A stream
//! whose `rx_rate` differs from the impulse response's rate is an error: an IR at the wrong
//! rate would sound wrong without a word (give `sample_rate` to resample the IR).
//!
//! **The state has memory of one IR length** (the convolution's history): a replica started
//! later gives the same output once it has seen that many frames.

use sluice_conv::{ConvolverConfig, Layout, StreamConvolver};
use sluice_runtime::metadata::SAMPLE_RATE;
use sluice_runtime::{Node, NodeError, Ports, Tag, TagPolicy, TagValue, Work, WorkIo};

/// The most input or output channels of one `convolve` node.
pub const MAX_CONVOLVE_CHANNELS: usize = 64;

/// Partitioned convolution of `inputs` channels (see the module docs).
pub struct Convolve {
    stream: StreamConvolver,
    inputs: usize,
    outputs: usize,
    tail: bool,
    ir_name: String,
    ir_rate: u32,
    frames_in: u64,
    frames_out: u64,
    ending: bool,
    tags: Vec<Tag>,
}

impl std::fmt::Debug for Convolve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Convolve")
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("ir", &self.ir_name)
            .finish_non_exhaustive()
    }
}

impl Convolve {
    /// Convolves `inputs` channels with the IR channels `ir` (all the same length, at
    /// `ir_rate` Hz, from `ir_name` for messages), laid out by [`Layout::choose`], with the
    /// engine `config`; `tail` adds the tail after the end.
    pub fn new(
        ir: &[Vec<f32>],
        ir_rate: u32,
        ir_name: &str,
        inputs: usize,
        config: ConvolverConfig,
        tail: bool,
    ) -> Result<Self, NodeError> {
        let layout = Layout::choose(inputs, ir.len()).map_err(|e| NodeError::caused(ir_name, e))?;
        let outputs = layout.outputs(inputs, ir.len());
        if inputs.max(outputs) > MAX_CONVOLVE_CHANNELS {
            return Err(NodeError::msg(format!(
                "{inputs} inputs and {outputs} outputs: at most {MAX_CONVOLVE_CHANNELS} channels each"
            )));
        }
        let conv_err = |e: sluice_conv::ConvError| NodeError::caused(ir_name, e);
        let matrix = layout.matrix(inputs, ir).map_err(conv_err)?;
        Ok(Convolve {
            stream: StreamConvolver::new(config, &matrix).map_err(conv_err)?,
            inputs,
            outputs,
            tail,
            ir_name: ir_name.to_string(),
            ir_rate,
            frames_in: 0,
            frames_out: 0,
            ending: false,
            tags: Vec::new(),
        })
    }

    /// Output channels.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Whether everything has been handed out.
    fn done(&self) -> bool {
        self.stream.is_done() || (!self.tail && self.ending && self.frames_out >= self.frames_in)
    }
}

impl Convolve {
    /// A rate tag among those consumed must agree with the impulse response's rate.
    fn check_rate(&self) -> Result<(), NodeError> {
        for tag in &self.tags {
            if let (SAMPLE_RATE, TagValue::F64(hz)) = (&*tag.key, &tag.value) {
                if (hz - f64::from(self.ir_rate)).abs() > 0.5 {
                    return Err(NodeError::msg(format!(
                        "the stream is {hz} Hz but the impulse response {} is {} Hz; give \
                         sample_rate = {hz} to resample it",
                        self.ir_name, self.ir_rate
                    )));
                }
            }
        }
        Ok(())
    }
}

impl Node for Convolve {
    fn ports(&self) -> Ports {
        let ports = (0..self.inputs).fold(Ports::new(), |p, c| p.input::<f32>(&format!("in{c}")));
        (0..self.outputs).fold(ports, |p, c| p.output::<f32>(&format!("out{c}")))
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let mut frames = usize::MAX;
        for (port, input) in io.inputs.all::<f32>()?.enumerate() {
            match input.window(1)? {
                Some([]) => self.ending = true,
                Some(x) => frames = frames.min(x.len()),
                None if !self.ending => return Ok(Work::NeedInput { port, items: 1 }),
                None => {}
            }
        }
        if self.ending {
            self.stream.finish();
            frames = 0;
        }
        if self.done() {
            return Ok(Work::Done);
        }
        let mut room = usize::MAX;
        for (port, output) in io.outputs.all::<f32>()?.enumerate() {
            match output.reserve(1)? {
                Some(y) => room = room.min(y.len()),
                None => return Ok(Work::NeedOutput { port, items: 1 }),
            }
        }
        if !self.tail && self.ending {
            room = room.min((self.frames_in - self.frames_out) as usize);
        }
        let mut held_in: [&[f32]; MAX_CONVOLVE_CHANNELS] = [&[]; MAX_CONVOLVE_CHANNELS];
        for (k, input) in io.inputs.all::<f32>()?.enumerate() {
            if frames > 0 {
                held_in[k] = &input.window(frames)?.unwrap_or_default()[..frames];
            }
        }
        let mut held_out: [&mut [f32]; MAX_CONVOLVE_CHANNELS] =
            std::array::from_fn(|_| <&mut [f32]>::default());
        for (k, output) in io.outputs.all::<f32>()?.enumerate() {
            if let Some(y) = output.reserve(room)? {
                held_out[k] = &mut y[..room];
            }
        }
        let (consumed, produced) = self
            .stream
            .process(&held_in[..self.inputs], &mut held_out[..self.outputs])
            .map_err(|e| NodeError::caused(self.ir_name.clone(), e))?;
        let before = self.frames_in + consumed as u64;
        for input in io.inputs.all::<f32>()? {
            input.take_tags(before, &mut self.tags);
            input.consume(consumed);
        }
        self.check_rate()?;
        for output in io.outputs.all::<f32>()? {
            for tag in &self.tags {
                output.push_tag(tag.clone());
            }
            output.commit(produced);
        }
        self.tags.clear();
        self.frames_in = before;
        self.frames_out += produced as u64;
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

#[cfg(test)]
mod tests;
