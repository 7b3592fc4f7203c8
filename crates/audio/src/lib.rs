//! # sluice-audio: JACK clients for sluice
//!
//! * [`LiveConvolver`]: the partitioned convolution engine of sluice-conv as a JACK client
//!   (`sluice live convolve`), a replacement for jconvolver that reads its configuration files
//!   ([`jconvolver`]).
//! * [`JackSource`] and [`JackSink`] (`jack_source`, `jack_sink` in graph files, see
//!   [`graph_blocks`]): audio in and out of any graph.
//! * [`open_client`] opens a client on a named server; [`DummyServer`] runs a JACK 2 server
//!   with the dummy backend for tests and benchmarks.
//!
//! libjack is loaded at run time (the `jack` crate's `dynamic_loading`), so building needs
//! only the Rust toolchain; running needs the `jackd2` package, and a missing library is an
//! error that names it.
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod client;
mod error;
pub mod fuzz;
pub mod graph_blocks;
mod ir_file;
mod jack_sink;
mod jack_source;
pub mod jconvolver;
mod latency;
mod live;
pub mod offline;

pub use client::{connect_when_ready, open_client, set_freewheel, DummyServer};
pub use error::AudioError;
pub use ir_file::live_spec_from_wav;
/// The `jack` crate sluice-audio is built on, for clients of one's own (tests, tools).
pub use jack;
pub use jack_sink::{JackPorts, JackSink};
pub use jack_source::JackSource;
pub use live::{resample_matrix, LiveConvolver, LiveSpec, LiveStats, MAX_PORTS};
