//! The two ends of message connections: a sender's [`MessageOutput`] with one link per
//! connection, and a receiver's [`MessageInput`]. Each connection is a queue of values (the
//! inbox) beside a ring of one-byte slots, one per message, that gives the scheduler its
//! wake-ups, end of stream and detach for free. Both ends change the inbox and the ring under
//! the inbox's lock, so the ring's fill always equals the inbox's length between calls.

use super::{message_bytes, Inbox, Message, OnFull};
use crate::io::{AnyPort, ErasedInput, ErasedOutput};
use crate::NodeError;
use sluice_queue::{
    channel, QueueError, QueueOptions, Reader, RingReader, RingWriter, Tag, Wait, Writer,
};
use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// One connection's inbox, shared by its two ends.
#[derive(Debug, Default)]
struct Mailbox {
    state: Mutex<MailState>,
}

#[derive(Debug, Default)]
struct MailState {
    /// The messages not yet taken, with what each costs in bytes.
    queue: VecDeque<(Message, usize)>,
    /// The bytes of `queue`.
    bytes: usize,
    /// The receiver has ended: what is sent from now on is dropped (and counted by the sender).
    closed: bool,
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, MailState> {
        // A panic while holding the lock leaves the queue consistent (every change is one push
        // or pop), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl MailState {
    /// Whether a message of `bytes` fits in an inbox bounded by `inbox`, and `more` besides.
    fn fits(&self, inbox: &Inbox, more: usize, bytes: usize) -> bool {
        self.queue.len() + more <= inbox.messages
            && (self.queue.is_empty() || self.bytes + bytes <= inbox.bytes)
    }
}

/// The sender's side of one connection.
#[derive(Debug)]
struct Link {
    writer: Writer<u8>,
    mailbox: Arc<Mailbox>,
    inbox: Inbox,
    /// `node.port` of the receiver, for reports.
    to: Arc<str>,
    /// The receiver has gone.
    closed: bool,
    dropped: u64,
}

/// Builds the connections of one message output: one link per receiving input, with that
/// input's inbox. `label` names the output (`node.port`), `inputs` the receivers.
pub(crate) fn wire(
    label: Arc<str>,
    inputs: &[(Inbox, Arc<str>)],
) -> Result<(MessageOutput, Vec<MessageInput>), QueueError> {
    let mut links = Vec::with_capacity(inputs.len());
    let mut ends = Vec::with_capacity(inputs.len());
    for (inbox, to) in inputs {
        let name: Arc<str> = format!("{label} -> {to}").into();
        let opts = QueueOptions {
            name: Some(name.to_string()),
            ..QueueOptions::default()
        };
        // The ring holds at least the inbox's messages, so a message that fits the inbox
        // always has a slot.
        let (writer, reader) = channel::<u8>(inbox.messages.max(1), &opts)?;
        let mailbox = Arc::new(Mailbox::default());
        links.push(Link {
            writer,
            mailbox: Arc::clone(&mailbox),
            inbox: *inbox,
            to: Arc::clone(to),
            closed: false,
            dropped: 0,
        });
        ends.push(MessageInput {
            reader,
            mailbox,
            inbox: *inbox,
            queue: name,
            taken: 0,
            dropped: 0,
        });
    }
    Ok((
        MessageOutput {
            links,
            queue: label,
            sent: 0,
            sent_bytes: 0,
            blocked_bytes: 0,
        },
        ends,
    ))
}

/// What [`MessageOutput::send`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Sent {
    /// Every connection took the message (or dropped it by its policy, counted).
    Delivered,
    /// A waiting connection's inbox is full: nothing was sent. Keep the message, return
    /// [`MessageOut::need`](super::MessageOut::need), and send it again on the next call.
    Full(Message),
}

/// What [`MessageInput::recv`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Recv {
    /// The next message, in the order it was sent.
    Message(Message),
    /// None now: return [`MessageIn::need`](super::MessageIn::need) to wait for one.
    Empty,
    /// The sender has ended and every message it sent was taken.
    Ended,
}

/// A message output during `work`: sends to every connection.
#[derive(Debug)]
pub struct MessageOutput {
    links: Vec<Link>,
    queue: Arc<str>,
    sent: u64,
    /// What the messages sent weigh (each once, as [`message_bytes`] counts it).
    sent_bytes: u64,
    /// Bytes of the last message refused as [`Sent::Full`]: what the scheduler waits room for.
    blocked_bytes: usize,
}

impl MessageOutput {
    /// Sends `msg` to every connection, in order after what was sent before. When a waiting
    /// connection's inbox is full nothing is sent and the message comes back as
    /// [`Sent::Full`]; a dropping connection drops it and counts. When every connection's
    /// receiver has ended this is [`NodeError::OutputClosed`], which ends the node normally, as
    /// for a stream output without readers.
    pub fn send(&mut self, msg: Message) -> Result<Sent, NodeError> {
        let bytes = message_bytes(&msg);
        // One open connection (the usual case): check for room and push under one lock.
        if let [link] = &mut self.links[..] {
            if !link.closed {
                let Link {
                    writer,
                    mailbox,
                    inbox,
                    closed,
                    dropped,
                    ..
                } = link;
                let mut state = mailbox.lock();
                if inbox.on_full == OnFull::Wait && !state.closed && !state.fits(inbox, 1, bytes) {
                    self.blocked_bytes = bytes;
                    return Ok(Sent::Full(msg));
                }
                self.blocked_bytes = 0;
                push_locked(&mut state, writer, inbox, closed, dropped, msg, bytes);
                self.sent += 1;
                self.sent_bytes += bytes as u64;
                return Ok(Sent::Delivered);
            }
        }
        for link in self.links.iter().filter(|l| !l.closed) {
            if link.inbox.on_full == OnFull::Wait {
                let state = link.mailbox.lock();
                if !state.closed && !state.fits(&link.inbox, 1, bytes) {
                    self.blocked_bytes = bytes;
                    return Ok(Sent::Full(msg));
                }
            }
        }
        self.blocked_bytes = 0;
        if !self.links.is_empty() && self.links.iter().all(|l| l.closed) {
            return Err(NodeError::OutputClosed {
                port: self.queue.to_string(),
            });
        }
        let last = self.links.len().saturating_sub(1);
        let mut msg = Some(msg);
        for (i, link) in self.links.iter_mut().enumerate() {
            // The last link takes the message itself; the others a clone (uniform vectors are
            // shared, not copied).
            let value = if i == last { msg.take() } else { msg.clone() };
            let Some(value) = value else { break };
            link.push(value, bytes);
        }
        self.sent += 1;
        self.sent_bytes += bytes as u64;
        Ok(Sent::Delivered)
    }

    /// Messages sent so far (each once, whatever the number of connections).
    pub fn messages_sent(&self) -> u64 {
        self.sent
    }

    /// The number of connections.
    pub fn connections(&self) -> usize {
        self.links.len()
    }

    /// Whether every waiting connection has room for `n` more messages (and the bytes of the
    /// last refused one).
    fn has_room(&self, n: usize) -> bool {
        self.links
            .iter()
            .filter(|l| !l.closed && l.inbox.on_full == OnFull::Wait)
            .all(|l| {
                let state = l.mailbox.lock();
                state.closed || state.fits(&l.inbox, n, self.blocked_bytes)
            })
    }
}

impl Link {
    fn push(&mut self, value: Message, bytes: usize) {
        if self.closed {
            self.dropped += 1;
            return;
        }
        let Link {
            writer,
            mailbox,
            inbox,
            closed,
            dropped,
            ..
        } = self;
        let mut state = mailbox.lock();
        push_locked(&mut state, writer, inbox, closed, dropped, value, bytes);
    }
}

/// Puts `value` in a connection's inbox (and a slot in its ring) with the inbox locked, or
/// drops and counts it when the receiver has ended or (a dropping connection) the inbox is
/// full; `closed` and `dropped` are the link's.
fn push_locked(
    state: &mut MailState,
    writer: &mut Writer<u8>,
    inbox: &Inbox,
    closed: &mut bool,
    dropped: &mut u64,
    value: Message,
    bytes: usize,
) {
    if state.closed {
        *closed = true;
        *dropped += 1;
        return;
    }
    if !state.fits(inbox, 1, bytes) {
        // Only dropping links get here: `send` checked the waiting ones.
        *dropped += 1;
        return;
    }
    match writer.try_reserve(1) {
        Ok(Some(slot)) => {
            slot[0] = 0;
            writer.commit_unpublished(1);
            state.queue.push_back((value, bytes));
            state.bytes += bytes;
        }
        // The ring holds the inbox, so it cannot be full here; a receiver that detached is
        // counted like a closed inbox.
        Ok(None) | Err(_) => {
            *closed = true;
            *dropped += 1;
        }
    }
}

impl AnyPort for MessageOutput {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl ErasedOutput for MessageOutput {
    fn wait(&mut self, n: usize, deadline: Instant) -> Result<bool, QueueError> {
        loop {
            if self.has_room(n) {
                return Ok(true);
            }
            let blocked_bytes = self.blocked_bytes;
            let Some(link) = self.links.iter_mut().find(|l| {
                let state = l.mailbox.lock();
                !l.closed
                    && l.inbox.on_full == OnFull::Wait
                    && !state.closed
                    && !state.fits(&l.inbox, n, blocked_bytes)
            }) else {
                continue;
            };
            // The ring's fill equals the inbox's length: waiting for one slot more than is
            // free now waits for the receiver to take one message.
            let fill = link.mailbox.lock().queue.len();
            let want = (link.writer.capacity() - fill + 1).min(link.writer.capacity());
            match link.writer.reserve_with(want, Wait::Until(deadline)) {
                Ok(Some(_)) => {}
                Ok(None) => return Ok(self.has_room(n)),
                Err(QueueError::NoReaders) => link.closed = true,
                Err(e) => return Err(e),
            }
        }
    }
    fn ready(&mut self, n: usize) -> Result<bool, QueueError> {
        Ok(self.has_room(n))
    }
    fn items_written(&self) -> u64 {
        self.sent
    }
    fn add_tag(&self, _tag: Tag) {
        // Stream tags (propagated ones, `set:` marks of run-time changes) do not travel on
        // message connections: a message carries its own metadata.
    }
    fn publish(&mut self) {
        for link in &mut self.links {
            link.writer.publish();
        }
    }
    fn add_reader(&self) -> Result<Box<dyn ErasedInput>, QueueError> {
        Err(QueueError::Os {
            call: "add_reader",
            message: format!(
                "message output {} gets its connections when the graph is built",
                self.queue
            ),
        })
    }
    fn queue(&self) -> &str {
        &self.queue
    }
    fn capacity(&self) -> usize {
        self.links
            .iter()
            .map(|l| l.inbox.messages)
            .min()
            .unwrap_or(1)
    }
    fn message_bytes_sent(&self) -> u64 {
        self.sent_bytes
    }
    fn messages_dropped(&self) -> Vec<(String, u64)> {
        self.links
            .iter()
            .filter(|l| l.dropped > 0)
            .map(|l| (format!("{} -> {}", self.queue, l.to), l.dropped))
            .collect()
    }
}

/// A message input during `work`: the messages of its connection, in order.
#[derive(Debug)]
pub struct MessageInput {
    reader: Reader<u8>,
    mailbox: Arc<Mailbox>,
    inbox: Inbox,
    queue: Arc<str>,
    taken: u64,
    dropped: u64,
}

impl MessageInput {
    /// An input that no connection feeds: it has ended from the start.
    pub(crate) fn unconnected(name: Arc<str>) -> Result<MessageInput, QueueError> {
        let (_, mut ends) = wire(name, &[(Inbox::DEFAULT, "nothing".into())])?;
        Ok(ends.remove(0)) // the output (and so the stream) is dropped here: ended
    }

    /// The next message, without waiting.
    pub fn recv(&mut self) -> Result<Recv, NodeError> {
        match self.reader.try_window(1)? {
            None => Ok(Recv::Empty),
            Some([]) => Ok(Recv::Ended),
            Some(_) => {
                let mut state = self.mailbox.lock();
                let Some((msg, bytes)) = state.queue.pop_front() else {
                    // A slot is only published after its message was queued.
                    return Err(NodeError::msg(format!(
                        "message connection {}: a slot without its message",
                        self.queue
                    )));
                };
                state.bytes -= bytes;
                self.reader.consume(1);
                self.taken += 1;
                Ok(Recv::Message(msg))
            }
        }
    }

    /// Messages taken so far.
    pub fn messages_taken(&self) -> u64 {
        self.taken
    }

    /// The inbox bound of this connection.
    pub fn inbox(&self) -> Inbox {
        self.inbox
    }
}

impl AnyPort for MessageInput {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl ErasedInput for MessageInput {
    fn wait(&mut self, n: usize, deadline: Instant) -> Result<bool, QueueError> {
        Ok(self.reader.window_with(n, Wait::Until(deadline))?.is_some())
    }
    fn ready(&mut self, n: usize) -> Result<bool, QueueError> {
        Ok(self.reader.window_with(n, Wait::Never)?.is_some())
    }
    fn items_read(&self) -> u64 {
        self.taken
    }
    fn items_written(&self) -> u64 {
        self.reader.items_written()
    }
    fn take_tags(&self, _before: u64, _out: &mut Vec<Tag>) {
        // Messages are not stream items: nothing here is propagated to the node's outputs.
    }
    fn queue(&self) -> &str {
        &self.queue
    }
    fn capacity(&self) -> usize {
        self.inbox.messages.max(1)
    }
    fn skip_available(&mut self) -> Result<u64, QueueError> {
        let mut skipped = 0;
        while let Ok(Recv::Message(_)) = self.recv() {
            skipped += 1;
        }
        Ok(skipped)
    }
    fn end_messages(&mut self) -> Vec<(String, u64)> {
        let mut state = self.mailbox.lock();
        state.closed = true;
        let pending = state.queue.len() as u64;
        state.queue.clear();
        state.bytes = 0;
        self.dropped += pending;
        if self.dropped == 0 {
            Vec::new()
        } else {
            vec![(self.queue.to_string(), self.dropped)]
        }
    }
}
