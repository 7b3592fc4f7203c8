//! Graph files for sluice: TOML that names nodes (a block type and its parameters) and the edges
//! between their ports, loaded into a [`sluice_runtime::Graph`] ready to run.
//!
//! The block types come from a [`Registry`] that any crate can extend. Each is declared once, as
//! a [`BlockType`] (ports, parameters with kinds, defaults, ranges and units, help, which
//! parameters can change while running, which name files): the loader validates a node's
//! parameters against it before the block sees them, and `sluice blocks` documents it. A user's
//! own block:
//!
//! ```
//! use sluice_graph::{Block, BlockType, Family, GraphFileExt, ItemDecl, Param, Registry};
//! use sluice_runtime::{Graph, Node, NodeError, Ports, Work, WorkIo};
//!
//! /// Produces `count` zeros.
//! struct Zeros { left: u64 }
//! impl Node for Zeros {
//!     fn ports(&self) -> Ports { Ports::new().output::<f32>("out") }
//!     fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
//!         if self.left == 0 { return Ok(Work::Done); }
//!         let out = io.outputs.get::<f32>(0)?;
//!         let Some(space) = out.reserve(1)? else {
//!             return Ok(Work::NeedOutput { port: 0, items: 1 });
//!         };
//!         let n = space.len().min(self.left as usize);
//!         space[..n].fill(0.0);
//!         out.commit(n);
//!         self.left -= n as u64;
//!         Ok(Work::Progress)
//!     }
//! }
//!
//! /// Consumes everything.
//! struct Drain;
//! impl Node for Drain {
//!     fn ports(&self) -> Ports { Ports::new().input::<f32>("in") }
//!     fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
//!         let input = io.inputs.get::<f32>(0)?;
//!         let Some(w) = input.window(1)? else {
//!             return Ok(Work::NeedInput { port: 0, items: 1 });
//!         };
//!         if w.is_empty() { return Ok(Work::Done); }
//!         let n = w.len();
//!         input.consume(n);
//!         Ok(Work::Progress)
//!     }
//! }
//!
//! impl Block for Zeros {
//!     fn block_type() -> BlockType {
//!         BlockType::new("zeros", Family::Sources, "Produces `count` zeros.")
//!             .output("out", ItemDecl::fixed("f32"))
//!             .param(Param::integer("count", "how many"))
//!             .example("count = 10")
//!             .build(|p| Ok(Box::new(Zeros { left: p.u64("count")? })))
//!     }
//! }
//! impl Block for Drain {
//!     fn block_type() -> BlockType {
//!         BlockType::new("drain", Family::Sinks, "Consumes everything.")
//!             .input("in", ItemDecl::fixed("f32"))
//!             .build(|_| Ok(Box::new(Drain)))
//!     }
//! }
//!
//! let mut registry = Registry::new();
//! registry.register::<Zeros>().unwrap();
//! registry.register::<Drain>().unwrap();
//! let text = r#"
//! [[node]]
//! name = "z"
//! type = "zeros"
//! params = { count = 1000 }
//!
//! [[node]]
//! name = "d"
//! type = "drain"
//!
//! [[edge]]
//! from = "z.out"
//! to = "d.in"
//! "#;
//! let report = Graph::from_str(text, "example.toml", &registry).unwrap().run_stepped().unwrap();
//! assert_eq!(report.node("d").unwrap().items_in, 1000);
//!
//! // Errors name the file, line and column, and what was expected: every mistake in the file.
//! let bad = text.replace("count = 1000", "cout = 1000");
//! let err = Graph::from_str(&bad, "example.toml", &registry).err().unwrap();
//! assert_eq!(
//!     err.to_string(),
//!     "example.toml:5:19: node 'z': unknown parameter 'cout' for zeros (did you mean 'count'?)\n\
//!      example.toml:2:1: node 'z': parameter 'count' is required (the node gives 'cout': a misspelling?)"
//! );
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![forbid(unsafe_code)]

pub mod decl;
pub mod doc;
mod load;
pub mod memory;
mod params;
pub mod partition;
mod registry;

pub use decl::memory::{chain_memory, Memory};
pub use decl::param::{
    pattern_file, pattern_label, Default, FileAccess, Param, ParamDecl, ParamKind, PatternLabels,
};
pub use decl::port::{Count, Direction, ItemDecl, PortDecl, ResolvedPort, Vlen};
pub use decl::rate::Rate;
pub use decl::{Block, BlockType, BuildFn, Family, MemoryFn, Text};
pub use doc::{EdgeEntry, GraphDoc, GraphOptions, NodeEntry};
pub use load::{
    build_node, follow_rates, load_branch, load_doc, load_file, load_str, load_with, read,
    same_file, BranchFile, CodeEdge, CodeNode, Feed, GraphFileError, GraphSource, HostDecl,
    KnownRate, LoadedGraph, MistakeKind, NodeMistake, Override, StandbyMode,
};
pub use params::{ParamError, Params};
pub use partition::{
    Consumer, PartitionDoc, PortRef, ReceiveEnd, SecurityMode, SendEnd, StreamDirection,
    StreamEndpoint, StreamSecurity, StreamTiming, WarmInput, WarmMap,
};
pub use registry::{DuplicateBlock, Registry};

use sluice_runtime::Graph;
use std::path::Path;

/// Graph files as constructors of [`Graph`]: `Graph::from_file(path, &registry)`.
pub trait GraphFileExt: Sized {
    /// Reads and loads the graph file at `path`.
    fn from_file(path: &Path, registry: &Registry) -> Result<Self, GraphFileError>;
    /// Loads a graph file's `text`; `origin` names it in errors.
    fn from_str(text: &str, origin: &str, registry: &Registry) -> Result<Self, GraphFileError>;
}

impl GraphFileExt for Graph {
    fn from_file(path: &Path, registry: &Registry) -> Result<Self, GraphFileError> {
        load_file(path, registry)
    }

    fn from_str(text: &str, origin: &str, registry: &Registry) -> Result<Self, GraphFileError> {
        load_str(text, origin, registry)
    }
}
