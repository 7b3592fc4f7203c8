//! sluice-formats: the files sluice reads and writes, as plain readers and writers over paths
//! and slices: WAV ([`wav`], including RF64, unknown sizes and 64-bit float), SigMF recordings'
//! meta files ([`sigmf`]), filter taps files ([`taps`]), output files that replace their
//! destination only when finished ([`output_file`]) and recordings written at the disk's pace
//! ([`streaming_file`]).
//!
//! Architecture invariant: this crate knows no runtime, queue, graph or block; of sluice it
//! depends only on `sluice-kernels` (for the sample formats and the DSP error type) and
//! `sluice-os` (for the system calls). The blocks that stream these files live in
//! `sluice-blocks`.
#![forbid(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod fuzz;
pub mod output_file;
pub mod sigmf;
pub mod streaming_file;
pub mod taps;
pub mod wav;

pub use taps::{load_taps, load_taps_as, parse_taps_text, Taps, TapsFormat};
