//! Blocks: adapters that hand queue slices to kernels, plus sources, sinks and plumbing.

pub mod arith;
pub mod basic;
pub mod channels;
pub mod convolve;
pub mod corner_turn;
pub mod fd_io;
pub mod file;
pub mod interleave;
pub mod iq;
pub mod keep;
pub mod math;
pub mod multiply_const;
pub mod plumbing;
pub mod probe;
pub mod radio;
pub mod realtime;
pub mod sample;
pub mod sigmf_sink;
pub mod sigmf_source;
pub mod signal;
pub mod spectrum;
mod tag_map;
pub mod throttle;
pub mod vector;
pub mod wav;

pub use arith::{Add, Binary, Sum};
pub use basic::{Copy, Head, NullSink, NullSource};
pub use channels::{ChannelFirFilter, StreamToVector, VectorToStream};
pub use convolve::Convolve;
pub use corner_turn::CornerTurn;
pub use fd_io::{FdSink, FdSource, OVERFLOW};
pub use file::{FileSink, FileSource};
pub use interleave::{Deinterleave, Interleave};
pub use iq::{ComplexToIq, IqToComplex};
pub use keep::KeepOneInN;
pub use math::{AddConst, FloatToComplex, Map};
pub use multiply_const::MultiplyConst;
pub use plumbing::{Delay, SkipHead};
pub use probe::{Probe, ProbeStats};
pub use radio::{AgcBlock, AmDemodBlock, IirFilter};
pub use realtime::{RtMode, RtThrottle, UNDERFLOW};
pub use sample::Sample;
pub use sigmf_sink::SigmfSink;
pub use sigmf_source::SigmfSource;
pub use signal::{SignalSource, Waveform};
pub use spectrum::{Picture, PngSettings, Spectrum, SpectrumPng};
pub use throttle::Throttle;
pub use vector::{VectorSink, VectorSinkData, VectorSource};
pub use wav::{WavFormat, WavSink, WavSource};
pub mod fft_filter;
pub mod fir;
#[cfg(test)]
pub(crate) mod test_support;

pub use fft_filter::FftFilter;
pub use fir::FirFilter;
