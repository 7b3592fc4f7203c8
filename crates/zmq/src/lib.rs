//! sluice-zmq: ZeroMQ endpoints that talk to GNU Radio's gr-zeromq blocks and to any libzmq
//! peer, written natively over std TCP (no libzmq needed at run time).
//!
//! * [`zmtp`]: the ZMTP 3.1 wire format (greeting, frames, commands), and
//!   [`Decoder`], the receive state machine, fed any chunking of the bytes (the fuzz target
//!   `zmq_receive` drives it).
//! * [`Socket`]: PUB, SUB, PUSH, PULL, REQ and REP sockets that bind or connect, receive frame
//!   bodies straight into a caller's slice and send messages with vectored writes.
//! * [`ZmqSink`] and [`ZmqSource`]: gr-zeromq's six blocks (`zmq_push_sink`,
//!   `zmq_pull_source`, `zmq_pub_sink`, `zmq_sub_source`, `zmq_rep_sink`, `zmq_req_source`)
//!   with its options ([`ZmqOptions`]) and its tag header ([`tag_header`]), registered for
//!   graph files by [`graph_blocks::register`].
//! * [`ZmqMsgSink`] and [`ZmqMsgSource`]: gr-zeromq's message blocks (`zmq_pub_msg_sink`,
//!   `zmq_push_msg_sink`, `zmq_rep_msg_sink`, `zmq_sub_msg_source`, `zmq_pull_msg_source`,
//!   `zmq_req_msg_source`): each message is one frame of its PMT serialization
//!   ([`sluice_pmt`]), taken from or sent on a message port; a frame over `max_frame` closes
//!   its peer's connection, one that is not a PMT value is dropped and reported with its peer.
//!
//! Not implemented: the CURVE and PLAIN mechanisms and ZAP (sluice links run on trusted
//! networks, as gr-zeromq's do by default), ipc:// and inproc:// transports, ROUTER/DEALER/XPUB/
//! XSUB as our own socket types (they are accepted as peers where the spec allows).
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![forbid(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod decoder;
mod error;
pub mod fuzz;
pub mod graph_blocks;
mod msg;
mod options;
mod sink;
mod socket;
mod source;
pub mod tag_header;
pub mod zmtp;

pub use decoder::{Decoder, Event};
pub use error::ZmqError;
pub use msg::{ZmqMsgSink, ZmqMsgSource};
pub use options::ZmqOptions;
pub use sink::ZmqSink;
pub use socket::{Frame, Sent, Socket, SocketOptions, READ_AHEAD, SMALL_FRAME, SMALL_MESSAGE};
pub use source::ZmqSource;
pub use zmtp::SocketType;
