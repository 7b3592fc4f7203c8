//! Ring flavors: the mirrored zero-copy ring and the copying baseline.

pub(crate) mod copying;
pub(crate) mod mirrored;
