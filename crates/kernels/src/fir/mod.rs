//! The FIR family over sliding windows: prepared taps ([`RealTaps`], [`ComplexTaps`]) and their
//! dot products, the direct-form filter ([`Fir`], optionally decimating), one filter per channel
//! over interleaved frames ([`ChannelFir`]), and the SIMD loops behind them: multi-output lanes
//! (`lanes.rs`), real taps on complex items (`rcf.rs`, AVX2+FMA in `rcf_x86.rs`), and dot
//! products of one tap vector with four windows (`multi_dot.rs`, used by the decimating and
//! polyphase filters: the frequency-translating FIR and the resamplers).

mod channels;
mod direct;
mod lanes;
pub(crate) mod multi_dot;
mod rcf;
#[cfg(target_arch = "x86_64")]
mod rcf_x86;
mod taps;

pub use channels::{ChannelFir, ChannelSample};
pub use direct::Fir;
pub use taps::{ComplexTaps, FirTaps, RealTaps};
