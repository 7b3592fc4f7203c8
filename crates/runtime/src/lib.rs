//! The sluice process-network runtime.
//!
//! A [`Graph`] holds named [`Node`]s whose typed ports are connected by zero-copy queues
//! (`sluice-queue`). Each node declares its ports and, in [`Node::work`], reads windows and
//! reserves output space straight in queue memory; when it cannot fire it says what it needs
//! ([`Work::NeedInput`], [`Work::NeedOutput`]) and the scheduler waits for exactly that. This is
//! the Computational Process Network model: Kahn process networks plus firing thresholds.
//!
//! ```
//! use sluice_runtime::{Graph, Node, NodeError, Ports, RunOptions, Work, WorkIo};
//!
//! /// Multiplies every sample by two.
//! struct Double;
//!
//! impl Node for Double {
//!     fn ports(&self) -> Ports {
//!         Ports::new().input::<f32>("in").output::<f32>("out")
//!     }
//!     fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
//!         let input = io.inputs.get::<f32>(0)?;
//!         let output = io.outputs.get::<f32>(0)?;
//!         let Some(x) = input.window(1)? else { return Ok(Work::NeedInput { port: 0, items: 1 }) };
//!         if x.is_empty() {
//!             return Ok(Work::Done);
//!         }
//!         let Some(y) = output.reserve(1)? else { return Ok(Work::NeedOutput { port: 0, items: 1 }) };
//!         let n = x.len().min(y.len());
//!         for (o, i) in y[..n].iter_mut().zip(&x[..n]) {
//!             *o = 2.0 * i;
//!         }
//!         input.consume(n);
//!         output.commit(n);
//!         Ok(Work::Progress)
//!     }
//! }
//! # let _ = Double;
//! ```
//!
//! A node can also keep typed handles on its ports, handed out when it declares them, and hold
//! windows of several inputs and a reservation together (no copy to combine streams):
//!
//! ```
//! use sluice_runtime::{InPort, Node, NodeError, OutPort, Ports, Work, WorkIo};
//!
//! /// out = a · b, elementwise.
//! struct Multiply {
//!     ports: Ports,
//!     a: InPort<f32>,
//!     b: InPort<f32>,
//!     out: OutPort<f32>,
//! }
//!
//! impl Multiply {
//!     fn new() -> Self {
//!         let mut ports = Ports::new();
//!         let (a, b) = (ports.add_input("a"), ports.add_input("b"));
//!         let out = ports.add_output("out");
//!         Multiply { ports, a, b, out }
//!     }
//! }
//!
//! impl Node for Multiply {
//!     fn ports(&self) -> Ports {
//!         self.ports.clone() // the declaration the handles came from
//!     }
//!     fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
//!         let [a, b] = io.inputs.ports([self.a, self.b])?; // both at once
//!         let out = io.outputs.port(self.out);
//!         let (x, y) = match (a.window(1)?, b.window(1)?) {
//!             (Some([]), _) | (_, Some([])) => return Ok(Work::Done),
//!             (None, _) => return Ok(self.a.need(1)),
//!             (_, None) => return Ok(self.b.need(1)),
//!             (Some(x), Some(y)) => (x, y),
//!         };
//!         let Some(z) = out.reserve(1)? else { return Ok(self.out.need(1)) };
//!         let n = x.len().min(y.len()).min(z.len());
//!         for ((z, x), y) in z[..n].iter_mut().zip(x).zip(y) {
//!             *z = x * y;
//!         }
//!         a.consume(n);
//!         b.consume(n);
//!         out.commit(n);
//!         Ok(Work::Progress)
//!     }
//! }
//! # let _ = Multiply::new();
//! ```
//!
//! [`Inputs::get_many`] and [`Inputs::all`] do the same by index and for a number of inputs
//! chosen at run time; [`Outputs`] has the same methods.
//!
//! A block that fires at fixed rates (read a window of `w`, consume `c` per input; produce `p`
//! per output) can instead declare them and let the runtime do the waiting and bookkeeping:
//! implement [`FixedRate`] and add it as [`Rated`]. A port may carry vectors of a length chosen
//! at run time ([`PortSpec::vlen`], [`Ports::add_input_vectors`]); connected ports must agree
//! on it.
//!
//! Two schedulers run a graph: [`Graph::run`] (threads: by default it measures the nodes and
//! decides how many, or one per node, or a fixed pool, see [`Scheduler`]; optionally pinned and
//! with SCHED_FIFO priority) and [`Graph::run_stepped`] (deterministic, on the calling thread).
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![forbid(unsafe_code)]

pub mod control;
pub mod control_socket;
mod error;
pub mod fuzz;
mod graph;
mod io;
pub mod live;
pub mod message;
pub mod metadata;
mod node;
pub mod os;
mod port;
mod progress;
mod rule;
mod run;
mod stats;
mod tap;

pub use control::{ControlError, ControlHandle, ControlSpec, PendingChange};
pub use control_socket::{ControlSocket, ControlSocketError};
pub use error::{NodeError, RuntimeError};
pub use graph::{Graph, NodeId, DEFAULT_QUEUE_BYTES};
pub use io::{Input, Inputs, Output, Outputs, WorkIo};
pub use live::{Branch, Detach, LiveError, LiveGraph, Replacement};
pub use message::{
    Inbox, Message, MessageIn, MessageInput, MessageKind, MessageOut, MessageOutput, OnFull, Pdu,
    Recv, Sent,
};
pub use node::{Node, TagPolicy, Work};
pub use port::{InPort, ItemType, OutPort, PortSpec, Ports};
pub use progress::{NodeCounts, Progress};
pub use rule::{FixedRate, InputRate, Rated};
pub use run::{RunOptions, Scheduler, StopHandle};
pub use sluice_queue::TapRead;
pub use sluice_queue::{Flavor, Item, MemoryGuard, QueueOptions, Tag, TagValue, Uniform};
pub use stats::{
    count, count_bytes, sleep, Direction, NodeStats, RunReport, StreamBytes, Trouble, Troubles,
};
pub use tap::{Monitor, Tap, TapPoint, TapTypeError};

/// The README's examples, compiled and run as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
