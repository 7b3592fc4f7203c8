//! Message ports: values sent between nodes beside their streams.
//!
//! A node declares message inputs and outputs next to its stream ports
//! ([`Ports::add_message_input`], [`Ports::add_message_output`]). A message is a [`Message`]:
//! a value of the tag value type ([`TagValue`]: numbers, strings, symbols, tuples, dicts,
//! uniform vectors) — a PDU ([`Pdu`]) is one, GNU Radio's pair of a metadata dict and a
//! uniform vector.
//!
//! # Delivery
//!
//! Every connection has its own **inbox**, bounded in messages and in bytes ([`Inbox`]), and
//! delivers in the order the sender sent. The receiving port says what a full inbox does
//! ([`OnFull`]):
//!
//! - [`OnFull::Wait`]: [`MessageOutput::send`] gives the message back as [`Sent::Full`] and the
//!   node returns [`MessageOut::need`] (a [`Work::NeedOutput`]),
//!   exactly as for a full stream queue: the scheduler wakes it when the receiver has taken a
//!   message. Memory stays bounded and nothing is lost.
//! - [`OnFull::Drop`]: the message is dropped for that connection, counted, and reported in
//!   the run's statistics ([`NodeStats::messages_dropped`](crate::NodeStats::messages_dropped)
//!   and a warning naming the connection).
//!
//! A cycle made only of stream edges and waiting message edges is refused when the graph is
//! built (each node on it could wait for the next forever); a feedback loop (a decoder that
//! retunes its own receiver) needs one dropping edge, which breaks the cycle.
//!
//! # Scheduling
//!
//! Messages need no thread of their own: a connection is a ring of one-byte slots (one per
//! message, for the scheduler's wake-ups) beside a queue of the values, so a node that waits
//! for a message returns [`MessageIn::need`] and is woken as it would be for stream items; it
//! takes its messages in its `work` ([`MessageInput::recv`]). A node with stream and message
//! inputs sees the messages that arrived by the time of each `work` call.
//!
//! # End of stream and stop
//!
//! When a sender ends (its `work` returned `Done`, or the graph stopped gracefully and drained
//! it), its connections end after the messages already sent: the receiver still gets every one
//! of them, then [`Recv::Ended`]. When a receiver ends first (it finished, failed, or the run was
//! aborted), the messages still in its inbox are counted as dropped in its statistics, and what
//! senders send to it afterwards is counted as dropped in theirs: a message is delivered or
//! counted, never silently lost. A message output that is connected to nothing discards what it
//! is sent (nobody asked for it, as in GNU Radio); an unconnected message input ends at once.

mod ends;
mod pdu;
mod text;

pub use ends::{MessageInput, MessageOutput, Recv, Sent};
pub use pdu::{message_bytes, Pdu};
pub use text::message_text;

use crate::io::{ErasedInput, ErasedOutput};
use crate::port::{ItemType, PortSpec, Ports};
use crate::{RuntimeError, Work};
pub use sluice_queue::TagValue;
use std::sync::Arc;

/// A message: any value of the tag value type. A PDU is the pair (metadata dict, uniform
/// vector), see [`Pdu`].
pub type Message = TagValue;

/// What a message port carries, checked when ports are connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// Any message (an input of this kind takes PDUs too).
    Any,
    /// PDUs only: pairs of a metadata dict and a uniform vector.
    Pdu,
}

impl MessageKind {
    /// The name graph files and errors use: `message` or `pdu`.
    pub fn name(self) -> &'static str {
        match self {
            MessageKind::Any => "message",
            MessageKind::Pdu => "pdu",
        }
    }

    /// Whether an output of kind `self` may feed an input of kind `input`.
    pub fn feeds(self, input: MessageKind) -> bool {
        input == MessageKind::Any || self == input
    }
}

/// What a full inbox does to the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFull {
    /// The sender waits (its `work` returns a waiting outcome) until the receiver takes one.
    Wait,
    /// The message is dropped for this connection and counted.
    Drop,
}

/// The bound of one connection's inbox, declared by the receiving port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inbox {
    /// Messages the inbox holds at most.
    pub messages: usize,
    /// Bytes (as [`message_bytes`] counts them) the inbox holds at most. One message larger
    /// than this is still accepted into an empty inbox, so that it cannot block forever.
    pub bytes: usize,
    /// What a full inbox does.
    pub on_full: OnFull,
}

impl Inbox {
    /// 64 messages or 4 MiB, whichever comes first; the sender waits when it is full. Enough
    /// for the scheduler to hand over messages in batches, small enough that a fast source
    /// cannot run far ahead of a slow handler.
    pub const DEFAULT: Inbox = Inbox {
        messages: 64,
        bytes: 4 << 20,
        on_full: OnFull::Wait,
    };

    /// The default bounds with a full inbox dropping.
    pub const DROPPING: Inbox = Inbox {
        on_full: OnFull::Drop,
        ..Inbox::DEFAULT
    };
}

impl Default for Inbox {
    fn default() -> Self {
        Inbox::DEFAULT
    }
}

/// What makes a port a message port: the kind it carries and, on an input, its inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageSpec {
    /// What the port carries.
    pub kind: MessageKind,
    /// The inbox of each connection into this port (inputs; outputs keep the default).
    pub inbox: Inbox,
}

/// The marker type that names message ports among item types.
pub(crate) struct MessageMarker;

/// A typed handle on one of a node's message inputs (see [`Ports::add_message_input`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageIn {
    index: usize,
}

/// A typed handle on one of a node's message outputs (see [`Ports::add_message_output`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageOut {
    index: usize,
}

impl MessageIn {
    /// The port's index among the node's inputs.
    pub const fn index(self) -> usize {
        self.index
    }
    /// The outcome that waits for the next message on this input.
    pub const fn need(self) -> Work {
        Work::NeedInput {
            port: self.index,
            items: 1,
        }
    }
}

impl MessageOut {
    /// The port's index among the node's outputs.
    pub const fn index(self) -> usize {
        self.index
    }
    /// The outcome that waits until every waiting connection of this output has room.
    pub const fn need(self) -> Work {
        Work::NeedOutput {
            port: self.index,
            items: 1,
        }
    }
}

impl Ports {
    /// Adds a message input named `name` taking messages of `kind`, each connection with an
    /// inbox bounded by `inbox`, and returns its handle.
    pub fn add_message_input(&mut self, name: &str, kind: MessageKind, inbox: Inbox) -> MessageIn {
        let index = self.inputs.len();
        self.inputs.push(message_port(name, kind, inbox));
        MessageIn { index }
    }

    /// Adds a message output named `name` sending messages of `kind`, and returns its handle.
    pub fn add_message_output(&mut self, name: &str, kind: MessageKind) -> MessageOut {
        let index = self.outputs.len();
        self.outputs.push(message_port(name, kind, Inbox::DEFAULT));
        MessageOut { index }
    }

    /// Adds a message input like [`Ports::add_message_input`].
    pub fn message_input(mut self, name: &str, kind: MessageKind, inbox: Inbox) -> Self {
        self.add_message_input(name, kind, inbox);
        self
    }

    /// Adds a message output like [`Ports::add_message_output`].
    pub fn message_output(mut self, name: &str, kind: MessageKind) -> Self {
        self.add_message_output(name, kind);
        self
    }
}

fn message_port(name: &str, kind: MessageKind, inbox: Inbox) -> PortSpec {
    PortSpec {
        name: name.to_string(),
        item: ItemType::message(kind),
        min_queue: 0,
        preferred_queue: None,
        vlen: 1,
        message: Some(MessageSpec { kind, inbox }),
    }
}

/// Whether output `from` may feed input `to` as far as messages go: both stream ports, or both
/// message ports of kinds that fit. `from_name` and `to_name` are `node.port`.
pub(crate) fn check_connection(
    from: &PortSpec,
    from_name: String,
    to: &PortSpec,
    to_name: String,
) -> Result<(), RuntimeError> {
    let describe = |spec: &PortSpec| match spec.message {
        Some(m) => format!("a message port carrying {}", m.kind.name()),
        None => format!("a stream port of {}", spec.item.name()),
    };
    let reason = match (from.message, to.message) {
        (None, None) => return Ok(()),
        (Some(a), Some(b)) if a.kind.feeds(b.kind) => return Ok(()),
        (Some(a), Some(b)) => format!(
            "{from_name} sends {} but {to_name} takes only {}",
            a.kind.name(),
            b.kind.name()
        ),
        _ => format!(
            "{from_name} is {} and {to_name} is {}: a message port connects only to a message port",
            describe(from),
            describe(to)
        ),
    };
    Err(RuntimeError::MessageConnection {
        from: from_name,
        to: to_name,
        reason,
    })
}

/// Whether an edge into input `to` breaks cycles: a message edge whose full inbox drops, so its
/// sender never waits for its receiver.
pub fn breaks_cycles(to: &PortSpec) -> bool {
    to.message.is_some_and(|m| m.inbox.on_full == OnFull::Drop)
}

/// A message output's end and the ends of its connections' inputs, in edge order.
pub(crate) type BuiltOutput = (Box<dyn ErasedOutput>, Vec<Box<dyn ErasedInput>>);

/// Builds the connections of message output `pi` of node `ni`, one per edge, each with the
/// inbox its receiving input declares.
pub(crate) fn build_output(
    graph: &crate::Graph,
    ni: usize,
    pi: usize,
    edges: &[&crate::graph::Edge],
) -> Result<BuiltOutput, RuntimeError> {
    let node = &graph.nodes[ni];
    let label: Arc<str> = format!("{}.{}", node.name, node.ports.outputs[pi].name).into();
    let inputs: Vec<(Inbox, Arc<str>)> = edges
        .iter()
        .map(|e| {
            let to = &graph.nodes[e.to.0];
            let spec = &to.ports.inputs[e.to.1];
            let inbox = spec.message.map_or(Inbox::DEFAULT, |m| m.inbox);
            (inbox, format!("{}.{}", to.name, spec.name).into())
        })
        .collect();
    let (out, ins) =
        ends::wire(Arc::clone(&label), &inputs).map_err(|source| RuntimeError::Queue {
            edge: label.to_string(),
            source,
        })?;
    Ok((
        Box::new(out),
        ins.into_iter()
            .map(|i| Box::new(i) as Box<dyn ErasedInput>)
            .collect(),
    ))
}

/// The end of a message input that nothing feeds: ended from the start.
pub(crate) fn unconnected_input(
    node: &str,
    spec: &PortSpec,
) -> Result<Box<dyn ErasedInput>, RuntimeError> {
    let label: Arc<str> = format!("{node}.{}", spec.name).into();
    MessageInput::unconnected(Arc::clone(&label))
        .map(|i| Box::new(i) as Box<dyn ErasedInput>)
        .map_err(|source| RuntimeError::Queue {
            edge: label.to_string(),
            source,
        })
}

/// The queue constructor of [`ItemType::message`]: one connection with the default inbox
/// (graphs build message connections with [`build_output`], which knows the inboxes).
pub(crate) fn make_queue(
    _capacity: usize,
    _opts: &sluice_queue::QueueOptions,
    label: Arc<str>,
) -> Result<crate::port::QueueEnds, sluice_queue::QueueError> {
    let (out, mut ins) = ends::wire(Arc::clone(&label), &[(Inbox::DEFAULT, label)])?;
    Ok((Box::new(out), Box::new(ins.remove(0))))
}

#[cfg(test)]
mod tests;
