//! The sparse matrix of impulse responses.

use crate::ConvError;

/// A sparse `inputs x outputs` matrix of impulse responses.
///
/// Entry `(i, o)` is the impulse response from input channel `i` to output channel `o`; output
/// `o` is the sum over all inputs of `input[i] * ir[i][o]`. Missing entries cost nothing.
/// Entries may have different lengths.
///
/// The constructors that return `Self` do not validate the samples; [`crate::Convolver::new`]
/// validates every entry (empty, silent, non-finite, too long) and names the offending one.
#[derive(Clone, Debug, PartialEq)]
pub struct IrMatrix {
    inputs: usize,
    outputs: usize,
    /// Row-major by input: `entries[i * outputs + o]`.
    entries: Vec<Option<Vec<f32>>>,
}

impl IrMatrix {
    /// An empty matrix of `inputs x outputs`; fill it with [`IrMatrix::set`].
    pub fn new(inputs: usize, outputs: usize) -> Self {
        Self {
            inputs,
            outputs,
            entries: vec![None; inputs * outputs],
        }
    }

    /// Sets the impulse response from `input` to `output`, replacing any previous one.
    ///
    /// Errors if the entry is outside the matrix or `ir` is empty, silent or not finite.
    pub fn set(&mut self, input: usize, output: usize, ir: Vec<f32>) -> Result<(), ConvError> {
        if input >= self.inputs || output >= self.outputs {
            return Err(ConvError::EntryOutOfRange {
                input,
                output,
                inputs: self.inputs,
                outputs: self.outputs,
            });
        }
        validate_ir(input, output, &ir)?;
        self.entries[input * self.outputs + output] = Some(ir);
        Ok(())
    }

    /// The same impulse response on each of `channels` independent channels (input `i` feeds
    /// only output `i`).
    pub fn mono_per_channel(channels: usize, ir: &[f32]) -> Self {
        let mut m = Self::new(channels, channels);
        for c in 0..channels {
            m.entries[c * channels + c] = Some(ir.to_vec());
        }
        m
    }

    /// One impulse response per independent channel: input `i` through `irs[i]` to output `i`.
    pub fn per_channel(irs: Vec<Vec<f32>>) -> Result<Self, ConvError> {
        if irs.is_empty() {
            return Err(ConvError::InvalidIrSet(
                "per_channel needs at least one impulse response".into(),
            ));
        }
        let n = irs.len();
        let mut m = Self::new(n, n);
        for (c, ir) in irs.into_iter().enumerate() {
            m.set(c, c, ir)?;
        }
        Ok(m)
    }

    /// True stereo: four impulse responses, `ll` (left in to left out), `lr` (left in to right
    /// out), `rl` (right in to left out) and `rr`.
    pub fn true_stereo(
        ll: Vec<f32>,
        lr: Vec<f32>,
        rl: Vec<f32>,
        rr: Vec<f32>,
    ) -> Result<Self, ConvError> {
        let mut m = Self::new(2, 2);
        m.set(0, 0, ll)?;
        m.set(0, 1, lr)?;
        m.set(1, 0, rl)?;
        m.set(1, 1, rr)?;
        Ok(m)
    }

    /// Number of input channels.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// Number of output channels.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Length of the longest impulse response (0 for an empty matrix).
    pub fn max_len(&self) -> usize {
        self.entries
            .iter()
            .flatten()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
    }

    /// The impulse response from `input` to `output`, if any.
    pub fn get(&self, input: usize, output: usize) -> Option<&[f32]> {
        if input >= self.inputs || output >= self.outputs {
            return None;
        }
        self.entries[input * self.outputs + output].as_deref()
    }

    /// Number of non-empty entries.
    pub fn nonzero_entries(&self) -> usize {
        self.entries.iter().flatten().count()
    }

    /// Checks every entry; used by the convolver before it builds anything.
    pub(crate) fn validate(&self, max_len: usize) -> Result<(), ConvError> {
        if self.inputs == 0 || self.outputs == 0 {
            return Err(ConvError::NoChannels {
                inputs: self.inputs,
                outputs: self.outputs,
            });
        }
        let mut any = false;
        for i in 0..self.inputs {
            for o in 0..self.outputs {
                if let Some(ir) = self.get(i, o) {
                    validate_ir(i, o, ir)?;
                    if ir.len() > max_len {
                        return Err(ConvError::IrTooLong {
                            len: ir.len(),
                            max: max_len,
                        });
                    }
                    any = true;
                }
            }
        }
        if any {
            Ok(())
        } else {
            Err(ConvError::NoIrs)
        }
    }
}

fn validate_ir(input: usize, output: usize, ir: &[f32]) -> Result<(), ConvError> {
    if ir.is_empty() {
        return Err(ConvError::EmptyIr { input, output });
    }
    if let Some(index) = ir.iter().position(|x| !x.is_finite()) {
        return Err(ConvError::NonFiniteIr {
            input,
            output,
            index,
        });
    }
    if ir.iter().all(|&x| x == 0.0) {
        return Err(ConvError::SilentIr { input, output });
    }
    Ok(())
}
