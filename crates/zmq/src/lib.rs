//! sluice-zmq: ZeroMQ endpoints that talk to GNU Radio's gr-zeromq blocks and to any libzmq
//! peer, written natively over std TCP (no libzmq needed at run time).
//!
//! * [`zmtp`]: the ZMTP 3.1 wire format (greeting, frames, commands), and
//!   [`Decoder`], the receive state machine, fed any chunking of the bytes (the fuzz target
//!   `zmq_receive` drives it).
//! * [`Socket`]: PUB, SUB, PUSH, PULL, REQ and REP sockets that bind or connect, receive frame
//!   bodies straight into a caller's slice and send messages with vectored writes.
//!
//! Not implemented: the CURVE and PLAIN mechanisms and ZAP (sluice links run on trusted
//! networks, as gr-zeromq's do by default), ipc:// and inproc:// transports, ROUTER/DEALER/XPUB/
//! XSUB as our own socket types (they are accepted as peers where the spec allows).
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![forbid(unsafe_code)]

pub mod decoder;
mod error;
mod socket;
pub mod zmtp;

pub use decoder::{Decoder, Event};
pub use error::ZmqError;
pub use socket::{Frame, Sent, Socket, SocketOptions, READ_AHEAD, SMALL_FRAME};
pub use zmtp::SocketType;
