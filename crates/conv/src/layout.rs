//! How the channels of a multi-channel impulse response apply to an input's channels: the
//! layouts `sluice convolve` and the `convolve` graph block share.
//!
//! - a 1-channel IR is applied to every input channel;
//! - an IR with as many channels as the input: IR channel `c` on input channel `c`;
//! - a 2-channel input with a 4-channel IR is true stereo: IR channels are LL, LR, RL, RR
//!   (left in → left out, left in → right out, right in → left out, right in → right out);
//! - a 1-channel input with an N-channel IR gives N outputs (mono in, e.g. stereo reverb out).

use crate::{ConvError, IrMatrix};

/// How the impulse response's channels are applied to the input's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One IR channel on every input channel.
    MonoIr,
    /// IR channel `c` on input channel `c`.
    PerChannel,
    /// Stereo input, 4-channel IR: LL, LR, RL, RR.
    TrueStereo,
    /// Mono input, one output per IR channel.
    MonoToMany,
}

impl Layout {
    /// Chooses the layout for `inputs` input channels and `ir_channels` IR channels, or says
    /// which IR layouts that input accepts.
    pub fn choose(inputs: usize, ir_channels: usize) -> Result<Self, String> {
        match (inputs, ir_channels) {
            (_, 1) => Ok(Layout::MonoIr),
            (i, r) if i == r => Ok(Layout::PerChannel),
            (2, 4) => Ok(Layout::TrueStereo),
            (1, _) => Ok(Layout::MonoToMany),
            (i, r) => {
                let extra = if i == 2 {
                    ", or 4 (true stereo: LL, LR, RL, RR)"
                } else {
                    ""
                };
                Err(format!(
                    "the impulse response has {r} channels but the input has {i}; a {i}-channel \
                     input accepts an impulse response of 1 channel (used on every channel), \
                     {i} (one per channel){extra}"
                ))
            }
        }
    }

    /// Number of output channels for `inputs` input and `ir_channels` IR channels.
    pub fn outputs(self, inputs: usize, ir_channels: usize) -> usize {
        match self {
            Layout::MonoToMany => ir_channels,
            _ => inputs,
        }
    }

    /// The input channel whose dry signal is mixed into output `o`.
    pub fn dry_source(self, o: usize) -> usize {
        match self {
            Layout::MonoToMany => 0,
            _ => o,
        }
    }

    /// The `(input, output, IR channel)` entries of the matrix.
    pub fn entries(self, inputs: usize, ir_channels: usize) -> Vec<(usize, usize, usize)> {
        match self {
            Layout::MonoIr => (0..inputs).map(|c| (c, c, 0)).collect(),
            Layout::PerChannel => (0..inputs).map(|c| (c, c, c)).collect(),
            Layout::TrueStereo => vec![(0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3)],
            Layout::MonoToMany => (0..ir_channels).map(|c| (0, c, c)).collect(),
        }
    }

    /// The engine's impulse-response matrix. Silent IR channels are left out (a missing entry
    /// is a zero path); `ir` must not be entirely silent.
    pub fn matrix(self, inputs: usize, ir: &[Vec<f32>]) -> Result<IrMatrix, ConvError> {
        let mut m = IrMatrix::new(inputs, self.outputs(inputs, ir.len()));
        for (i, o, r) in self.entries(inputs, ir.len()) {
            if ir[r].iter().any(|&x| x != 0.0) {
                m.set(i, o, ir[r].clone())?;
            }
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_ir_channels_are_left_out_of_the_matrix() {
        let ir = vec![
            vec![1.0, 0.5],
            vec![0.0, 0.0],
            vec![0.0, 0.25],
            vec![0.0; 2],
        ];
        let m = Layout::TrueStereo.matrix(2, &ir).unwrap();
        assert_eq!((m.inputs(), m.outputs(), m.nonzero_entries()), (2, 2, 2));
        assert_eq!(m.get(0, 0), Some(&[1.0, 0.5][..]));
        assert_eq!(m.get(1, 0), Some(&[0.0, 0.25][..]));
        assert_eq!(m.get(0, 1), None);
    }
}
