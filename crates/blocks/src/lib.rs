//! sluice-blocks: the adapters from kernels (`sluice-kernels`) and file formats
//! (`sluice-formats`) to the runtime: sources, sinks, filters, radio and plumbing blocks
//! ([`blocks`]), their graph-file registry ([`graph_blocks`]), and copies into queues through
//! the copy engine ([`queue_copy`]).
//!
//! Architecture invariant: blocks depend on kernels, formats, plots, the runtime and the graph,
//! never the other way round; a block's `work` hands queue slices to a kernel. This crate never
//! depends on `sluice-cli`, `sluice-bench`, the cluster or the network transport.
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod blocks;
pub mod fuzz;
pub mod graph_blocks;
pub mod queue_copy;
