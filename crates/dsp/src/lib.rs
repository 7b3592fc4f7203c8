//! sluice-dsp: signal-processing kernels (and, later, the blocks that adapt them to the runtime).
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod amps;
pub mod blocks;
pub mod graph_blocks;
pub mod kernels;
pub mod output_file;
pub mod plot;
pub mod plot_beam;
pub mod queue_copy;
pub mod sigmf;
pub mod wav;
