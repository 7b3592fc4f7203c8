//! The error type of the DSP kernels: every invalid configuration names the offending value.

use std::path::PathBuf;

/// Why a kernel could not be configured, or a taps file not loaded.
#[derive(Debug, thiserror::Error)]
pub enum DspError {
    /// A filter needs at least one tap.
    #[error("the filter has no taps (at least 1 is needed)")]
    EmptyTaps,
    /// FFT sizes must be powers of two (and at least 2).
    #[error("FFT size {0} is not a power of two (at least 2)")]
    FftSizeNotPowerOfTwo(usize),
    /// Overlap-save needs `taps <= fft_size`.
    #[error("{taps} taps do not fit an FFT of size {fft_size} (at most {fft_size} taps)")]
    TapsTooLong {
        /// Number of taps given.
        taps: usize,
        /// FFT size given.
        fft_size: usize,
    },
    /// A decimating filter needs a factor of at least 1.
    #[error("decimation factor {0} is invalid (at least 1)")]
    InvalidDecimation(usize),
    /// A sum needs at least one input.
    #[error("a sum of {0} inputs is invalid (at least 1)")]
    NoInputs(usize),
    /// A block-processing call got a window of the wrong length.
    #[error("window holds {got} items, the kernel needs {needed}")]
    WindowTooShort {
        /// Items needed.
        needed: usize,
        /// Items given.
        got: usize,
    },
    /// A block-processing call got an output slice that is too short.
    #[error("output slice holds {got} items, the kernel writes {needed}")]
    OutputTooShort {
        /// Items needed.
        needed: usize,
        /// Items given.
        got: usize,
    },
    /// A filter design parameter is out of range.
    #[error("invalid filter design: {name} = {value} ({expected})")]
    InvalidDesign {
        /// The parameter.
        name: &'static str,
        /// Its value, as text.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A parameter of a kernel is out of range.
    #[error("invalid {name} = {value} ({expected})")]
    InvalidParameter {
        /// The parameter.
        name: &'static str,
        /// Its value, as text.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A SIMD level was requested that this CPU does not support.
    #[error("SIMD level {0} is not supported by this CPU")]
    SimdUnavailable(&'static str),
    /// A taps file could not be read.
    #[error("cannot read taps file {path}: {source}")]
    TapsIo {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A taps file has a bad line (1-based) or a bad length (line 0).
    #[error("taps file {path}, line {line}: {message}")]
    TapsParse {
        /// The file.
        path: PathBuf,
        /// The 1-based line number, or 0 for a problem with the whole file.
        line: usize,
        /// What is wrong.
        message: String,
    },
}
