//! The crate's error type.

use thiserror::Error;

/// Everything that can go wrong when configuring or driving a [`crate::Convolver`].
///
/// Configuration errors come back from [`crate::Convolver::new`], [`crate::Convolver::set_irs`]
/// and [`crate::IrMatrix::set`]; [`crate::Convolver::process`] only returns the shape errors
/// ([`ConvError::ChannelCount`], [`ConvError::BufferLength`]), before it touches any state.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ConvError {
    /// An impulse response has no samples.
    #[error("impulse response is empty (input {input} -> output {output})")]
    EmptyIr {
        /// Input channel of the offending matrix entry.
        input: usize,
        /// Output channel of the offending matrix entry.
        output: usize,
    },
    /// An impulse response contains only zeros.
    #[error("impulse response is silent (all zeros) (input {input} -> output {output})")]
    SilentIr {
        /// Input channel of the offending matrix entry.
        input: usize,
        /// Output channel of the offending matrix entry.
        output: usize,
    },
    /// An impulse response contains NaN or infinity.
    #[error("impulse response contains a non-finite sample at index {index} (input {input} -> output {output})")]
    NonFiniteIr {
        /// Input channel of the offending matrix entry.
        input: usize,
        /// Output channel of the offending matrix entry.
        output: usize,
        /// Index of the first non-finite sample.
        index: usize,
    },
    /// An impulse response is longer than [`crate::ConvolverConfig::max_ir_len`].
    #[error("impulse response of {len} samples is longer than the supported {max}")]
    IrTooLong {
        /// Length of the impulse response.
        len: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The matrix holds no impulse response at all.
    #[error("impulse response matrix has no impulse responses")]
    NoIrs,
    /// A matrix has zero inputs or zero outputs.
    #[error("impulse response matrix of {inputs} inputs x {outputs} outputs has no channels")]
    NoChannels {
        /// Number of inputs.
        inputs: usize,
        /// Number of outputs.
        outputs: usize,
    },
    /// A matrix entry was addressed outside the matrix.
    #[error(
        "matrix entry input {input} -> output {output} is outside a {inputs} x {outputs} matrix"
    )]
    EntryOutOfRange {
        /// Requested input.
        input: usize,
        /// Requested output.
        output: usize,
        /// Number of inputs of the matrix.
        inputs: usize,
        /// Number of outputs of the matrix.
        outputs: usize,
    },
    /// `true_stereo` / `per_channel` got inconsistent arguments.
    #[error("impulse response set is invalid: {0}")]
    InvalidIrSet(String),
    /// The block size is outside `1..=8192`.
    #[error("block size {0} is out of range: it must be between 1 and 8192 samples")]
    BlockSize(usize),
    /// `max_ir_len` is zero or above the hard limit.
    #[error("max_ir_len {len} is out of range: it must be between 1 and {limit}")]
    MaxIrLen {
        /// Requested maximum.
        len: usize,
        /// Hard limit of this crate.
        limit: usize,
    },
    /// An explicit partitioning is not usable.
    #[error("invalid partitioning: {0}")]
    Partitioning(String),
    /// Whole signals were given a number of impulse responses other than one or one each.
    #[error(
        "{irs} impulse responses for {inputs} inputs: give one for all of them, or one per input"
    )]
    IrCount {
        /// Impulse responses given.
        irs: usize,
        /// Inputs given.
        inputs: usize,
    },
    /// `process` got a different number of channels than the IR matrix has.
    #[error("process() got {got} {what} channels, expected {expected}")]
    ChannelCount {
        /// `"input"` or `"output"`.
        what: &'static str,
        /// Channels the convolver was built for.
        expected: usize,
        /// Channels passed in.
        got: usize,
    },
    /// A buffer passed to `process` has the wrong length.
    #[error("{what} channel {channel} has {got} samples, expected the block size {expected}")]
    BufferLength {
        /// `"input"` or `"output"`.
        what: &'static str,
        /// Channel index.
        channel: usize,
        /// The configured block size.
        expected: usize,
        /// Length passed in.
        got: usize,
    },
    /// `set_irs` got a matrix of a different shape than the running one.
    #[error(
        "new impulse responses are {got_in} x {got_out}, the convolver runs {inputs} x {outputs}"
    )]
    ShapeMismatch {
        /// Running inputs.
        inputs: usize,
        /// Running outputs.
        outputs: usize,
        /// New inputs.
        got_in: usize,
        /// New outputs.
        got_out: usize,
    },
    /// An IR change was requested while the previous crossfade is still running.
    #[error("an impulse response crossfade is still in progress")]
    FadeInProgress,
    /// A worker thread could not be started.
    #[error("could not start a convolution worker thread: {0}")]
    Spawn(#[source] std::io::Error),
}
