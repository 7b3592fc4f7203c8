//! sluice-net: zero-copy streams between processes and machines.
//!
//! A [`TcpSink`] sends its input stream to a [`TcpSource`] over TCP; either end may listen
//! (`tcp-listen://host:port`) or connect (`tcp://host:port`). The wire format is specified in
//! `docs/net/wire.md`: little-endian frames with a magic and a version, a HELLO naming the item
//! type and size and carrying stream metadata, DATA frames with the absolute offset of their
//! first item, their tags ([`sluice_pmt`] encoding) and an optional CRC32C, credits and
//! acknowledgements from the receiver, heartbeats both ways, a clean END, and ERROR frames.
//!
//! **Zero copy.** The receiver reads each DATA frame's payload from the socket straight into
//! its output queue's reservation; the sender sends header and payload in one `sendmsg` from
//! its input queue's window. The kernel's copies are the only ones.
//!
//! **Resume by offset.** The sender consumes its input only as the receiver acknowledges it,
//! so the input queue is the retention window. A receiver that reconnects says in its WELCOME
//! which offset it has; the sender resends from there: nothing is lost or duplicated.
//!
//! **Messages.** With [`TcpOptions::messages`] a sink also carries the messages of a message
//! input, each bound to a stream offset and resumed by offset like the items ([`message`]).
//!
//! **Bad input.** [`Decoder`] is the receive state machine, fed any chunking of the bytes
//! (the fuzz target `net_receive` drives it); every error is a [`NetError`] naming the peer and
//! the stream offset.
//!
//! **Secure channel.** With a cluster key ([`auth::ClusterKey`], graph parameter `key_file`)
//! or a peers list (`peers_file`), every connection of a stream, the first and each reconnect,
//! first runs the [`secure`] handshake (Noise XXpsk3), and every byte after it goes in
//! authenticated, encrypted records; a record's payload is decrypted in the output queue's
//! reservation. Only a peer holding the same key (or a listed identity) gets to the HELLO; a
//! listening end refuses (and logs) any other peer and keeps waiting for the right one.
//!
//! **Accepting.** Every listening end takes its connections through an [`accept::Acceptor`]:
//! handshakes and HELLOs run off the node's thread within a budget, pending connections are
//! capped overall and per address, and `accept` errors (out of descriptors) pause accepting
//! instead of ending it; a bad peer costs its own connection, never the stream.
//!
//! **Probe.** [`probe`] is the seed's latency and jitter experiment over these streams (`sluice
//! probe`): an origin and reflectors in a loop, per-packet latency, mean, jitter, percentiles.
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![forbid(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod accept;
pub mod auth;
mod conn;
pub mod decoder;
mod error;
pub mod escape;
pub mod fence;
pub mod fuzz;
pub mod graph_blocks;
pub mod message;
mod options;
pub mod probe;
pub mod secure;
mod shm;
mod sink;
mod source;
pub mod tag_budget;
pub mod takeovers;
pub mod wire;

pub use conn::{detect_dead_peer, Endpoint};
pub use decoder::{Decoder, Event, Need, Role};
pub use error::NetError;
pub use fence::{Fence, WarmMap};
pub use options::{AckHandle, Acknowledge, RetentionFull, Security, TcpOptions};
pub use shm::{hand_over, take_over, ShmEndpoint, ShmOptions, ShmSink, ShmSource};
pub use sink::TcpSink;
pub use source::TcpSource;
