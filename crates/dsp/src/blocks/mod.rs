//! Blocks: adapters that hand queue slices to kernels, plus sources, sinks and plumbing.

pub mod arith;
pub mod basic;
pub mod channelizer;
pub mod channels;
pub mod corner_turn;
pub mod file;
pub mod fm_demod;
pub mod keep;
pub mod multiply_const;
pub mod probe;
pub mod resamplers;
pub mod rotator;
pub mod sample;
pub mod signal;
pub mod throttle;
pub mod vector;
pub mod wav;

pub use arith::{Add, Sum};
pub use basic::{Copy, Head, NullSink, NullSource};
pub use channelizer::{ChannelOutputs, ChannelizerBlock};
pub use channels::{ChannelFirFilter, StreamToVector, VectorToStream};
pub use corner_turn::CornerTurn;
pub use file::{FileSink, FileSource};
pub use fm_demod::FmDemodulator;
pub use keep::KeepOneInN;
pub use multiply_const::MultiplyConst;
pub use probe::{Probe, ProbeStats};
pub use resamplers::{ArbResamplerBlock, FreqXlatingFir, RationalResamplerBlock};
pub use rotator::FrequencyShift;
pub use sample::Sample;
pub use signal::{SignalSource, Waveform};
pub use throttle::Throttle;
pub use vector::{VectorSink, VectorSinkData, VectorSource};
pub use wav::{WavFormat, WavSink, WavSource};
pub mod fft_filter;
pub mod fir;
#[cfg(test)]
pub(crate) mod test_support;

pub use fft_filter::FftFilter;
pub use fir::FirFilter;
