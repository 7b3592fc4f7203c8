//! sluice-plot: PNG pictures in one place: spectra and waterfalls (the `spectrum_png` sink),
//! beam patterns (the `beam_pattern` sink), and the line plots of `sluice bench`. Drawn with
//! plotters.
//!
//! Text needs a TrueType font: the first of a few usual system paths (DejaVu, Liberation,
//! URW), or the one `SLUICE_PLOT_FONT` names, is loaded at run time. Without one the picture is
//! still drawn, axes and data without labels, and the drawing functions say so by returning
//! `false`.
//!
//! Architecture invariant: this crate knows no runtime, queue, graph or block; of sluice it
//! depends only on `sluice-kernels` (for the waterfall's colour map).
#![forbid(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

use std::path::PathBuf;

mod beam;
mod font;
mod lines;
mod spectrum;

pub use beam::beam_pattern_png;
pub use lines::{lines, Series};
pub use spectrum::{spectrum_png, waterfall_png, FrequencyAxis};

/// Why a picture could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Drawing failed.
    #[error("drawing {path}: {message}")]
    Draw {
        /// The file.
        path: PathBuf,
        /// What plotters said.
        message: String,
    },
    /// The PNG could not be written.
    #[error("writing {path}: {message}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// There was nothing to draw.
    #[error("nothing to plot for {path}")]
    Empty {
        /// The file.
        path: PathBuf,
    },
}
