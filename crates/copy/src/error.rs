//! Errors of the copy engine: rejected operations (checked before anything is written) and
//! outcomes of operations that did not run.

use std::fmt;

/// Which buffer of an operation an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The buffer read from.
    Source,
    /// The buffer written to.
    Destination,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Source => "source",
            Side::Destination => "destination",
        })
    }
}

/// Why an operation was rejected or did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopyError {
    /// The operation reaches past the end of a buffer (nothing was written).
    #[error("{side} region ends at byte {end} but the buffer holds {len} bytes")]
    OutOfBounds {
        /// The buffer concerned.
        side: Side,
        /// One past the last byte the operation would touch.
        end: usize,
        /// The buffer's length in bytes.
        len: usize,
    },
    /// An offset, stride or count overflows the address space (nothing was written).
    #[error("{side} region size overflows")]
    Overflow {
        /// The buffer concerned.
        side: Side,
    },
    /// The bytes read and the bytes written overlap, or two written regions overlap (nothing
    /// was written).
    #[error("source and destination regions overlap")]
    Overlap,
    /// A fill pattern must be 1 to 16 bytes long.
    #[error("fill pattern of {0} bytes (must be 1 to 16)")]
    BadPattern(usize),
    /// Items of rotations and keyed copies are 1, 2, 4, 8 or 16 bytes.
    #[error("item size {0} (must be 1, 2, 4, 8 or 16 bytes)")]
    BadItemSize(usize),
    /// A length is not a whole number of items.
    #[error("length {len} is not a multiple of the item size {item}")]
    NotWholeItems {
        /// The length in bytes.
        len: usize,
        /// The item size in bytes.
        item: usize,
    },
    /// A destination stride shorter than a row would make rows overlap.
    #[error("destination stride {stride} is shorter than a row of {row} bytes")]
    StrideTooSmall {
        /// The stride in bytes.
        stride: usize,
        /// The row length in bytes.
        row: usize,
    },
    /// Scatter-gather lists must move as many bytes out as in.
    #[error("scatter-gather lists differ in length: {src} bytes read, {dst} bytes written")]
    LengthMismatch {
        /// Bytes in the source list.
        src: usize,
        /// Bytes in the destination list.
        dst: usize,
    },
    /// The operation was cancelled before it started (its buffers were not touched).
    #[error("cancelled before it started")]
    Cancelled,
    /// The engine shut down before the operation started.
    #[error("the engine stopped before the operation started")]
    Stopped,
    /// A backend failed while running the operation (the destination may be partly written).
    #[error("backend {backend} failed: {reason}")]
    Backend {
        /// The backend's name.
        backend: &'static str,
        /// What went wrong.
        reason: String,
    },
}

/// An operation refused at submission, with its buffers handed back untouched.
pub struct Rejected<B> {
    /// Why it was refused.
    pub error: CopyError,
    /// The buffers, as they were given.
    pub buffers: B,
}

impl<B> fmt::Debug for Rejected<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<B> fmt::Display for Rejected<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "operation rejected: {}", self.error)
    }
}

impl<B> std::error::Error for Rejected<B> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<B> From<Rejected<B>> for CopyError {
    fn from(r: Rejected<B>) -> Self {
        r.error
    }
}
