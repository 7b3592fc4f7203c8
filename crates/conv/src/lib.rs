//! # sluice-conv: real-time non-uniform partitioned convolution
//!
//! A standalone convolution engine for long impulse responses (up to 2^22 samples by default)
//! at low, usually zero, latency on any number of channels.
//!
//! * **Algorithm.** The impulse response is cut into frequency-domain delay lines (FDLs) of
//!   growing power-of-two block size (Gardner / Garcia non-uniform partitioning). Level 0 has
//!   the host block size and runs in the caller's callback; a level of size `S` starts at IR
//!   offset `>= 2S - n0`, so it has a whole period `S` to compute a block before its first
//!   output sample is due. Each level does one real FFT per input, one MAC per partition and
//!   matrix path, and one inverse FFT per output, per period. See [`Partitioning`].
//! * **Channels.** A sparse [`IrMatrix`] of `inputs x outputs` impulse responses; forward
//!   FFTs are shared per input and inverse FFTs per output within a level.
//! * **Scheduling.** [`Scheduling::Threaded`] (the seed's preemptive design: one worker per
//!   level size for all channels, shorter periods at higher fixed priority, one broadcast
//!   wake-up per callback), [`Scheduling::Cooperative`] (time-distributed, all in the caller's
//!   thread) and [`Scheduling::SingleThread`] (every level computed when its block arrives;
//!   offline and reference use). All three produce bit-identical output.
//! * **Latency.** Zero when the block size is a power of two, or a multiple of a power of two
//!   `>= 16` (e.g. 48, 96, 480). Otherwise the engine runs internally at
//!   `n0 = largest power of two <= block size` and buffers, costing
//!   `n0 - gcd(block, n0)` samples of latency; [`Convolver::latency`] reports it.
//!
//! ```
//! use sluice_conv::{Convolver, ConvolverConfig, IrMatrix, Scheduling};
//! let ir: Vec<f32> = (0..4096).map(|i| (-(i as f32) / 500.0).exp()).collect();
//! let cfg = ConvolverConfig { block_size: 64, scheduling: Scheduling::SingleThread, ..Default::default() };
//! let mut conv = Convolver::new(cfg, &IrMatrix::mono_per_channel(2, &ir)).unwrap();
//! let (l, r) = (vec![0.5f32; 64], vec![0.0f32; 64]);
//! let (mut ol, mut or) = (vec![0.0f32; 64], vec![0.0f32; 64]);
//! conv.process(&[&l, &r], &mut [&mut ol, &mut or]).unwrap();
//! assert!((ol[0] - 0.5).abs() < 1e-6 && or[0] == 0.0);
//! ```
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod convolver;
mod engine;
mod error;
#[cfg(not(loom))]
mod handshake;
/// The callback/worker handshake, public only for the loom model in `tests/loom.rs`.
#[cfg(loom)]
#[doc(hidden)]
pub mod handshake;
mod ir;
mod kernel;
mod layout;
mod level;
mod partition;
mod rfft;
mod stream;
mod sync;
mod tune;

pub use convolver::{
    convolve_offline, convolve_offline_until, convolve_offline_with_progress, ConvStats, Convolver,
    ConvolverConfig, IrLoader, LatePolicy, PreparedIrs, RetiredIrs, Scheduling,
};
pub use error::ConvError;
pub use ir::IrMatrix;
pub use layout::Layout;
pub use partition::{parse_partitioning, Level, Partitioning, MAX_LEVEL_SIZE};
pub use rfft::SplitRealFft;
pub use stream::StreamConvolver;
pub use tune::{measure_level_costs, LevelTiming};

/// Largest supported host block size.
pub const MAX_BLOCK_SIZE: usize = 8192;
/// Hard upper limit for [`ConvolverConfig::max_ir_len`] (2^24 samples, 5.8 min at 48 kHz).
pub const MAX_IR_LEN_LIMIT: usize = 1 << 24;
