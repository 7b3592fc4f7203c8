//! What a `tcp_source` has received and what it has told its sender: the WELCOME that answers
//! a HELLO (where to resume, the credit, the largest frame), the ACKs (what the sender may
//! release) and CREDITs (the room it may fill), and the END's last acknowledgements.

use super::state::SourceState;
use super::{TcpSource, CONTROL_WAIT};
use crate::conn::io_err;
use crate::options::{AckHandle, Acknowledge, TcpOptions};
use crate::tag_budget::TagWindow;
use crate::wire::{self, Hello, Kind, Welcome, CRC_LEN, DATA_HEAD_LEN, HEADER_LEN};
use crate::NetError;
use sluice_runtime::{Item, NodeError, Output, Tag, TagValue, Work};
use std::time::{Duration, Instant};

/// With nothing to read, the receiver acknowledges what it received once this long passed
/// since its last ACK (and after every quarter queue, and at END, at once): one ACK for many
/// small frames instead of one each.
const ACK_DELAY: Duration = Duration::from_millis(1);

/// The stream as this end has it and as its sender was told.
#[derive(Debug)]
pub(super) struct Ledger {
    /// The stream offset last acknowledged, and the credit last given.
    pub(super) acked: u64,
    pub(super) credited: u64,
    /// Stream offsets passed without items in the output queue: the start offset, then every
    /// gap. Stream offset = items written + skipped.
    pub(super) skipped: u64,
    pub(super) gaps: u64,
    pub(super) gap_items: u64,
    /// A new connection was welcomed: acknowledge (again) what may be released.
    pub(super) ack_due: bool,
    /// When the last ACK went out.
    pub(super) last_ack: Instant,
    /// The sequence number of the next message expected (= messages received), and the one
    /// the last ACK said.
    pub(super) next_message: u64,
    pub(super) msg_acked: u64,
    /// A message received and not yet taken by the message output's inbox.
    pub(super) held: Option<TagValue>,
    /// Messages received after every receiver of the message output had ended.
    pub(super) msg_unread: u64,
    /// The tags of the frames within the last queue's worth of items (the tag budget).
    pub(super) tag_window: TagWindow,
    /// The stream metadata the sender's last HELLO carried.
    pub(super) metadata: Vec<Tag>,
}

impl Ledger {
    /// A ledger that starts (has acknowledged, credited and skipped everything) at `start`.
    pub(super) fn new(start: u64) -> Ledger {
        Ledger {
            acked: start,
            credited: start,
            skipped: start,
            gaps: 0,
            gap_items: 0,
            ack_due: false,
            last_ack: Instant::now(),
            next_message: 0,
            msg_acked: 0,
            held: None,
            msg_unread: 0,
            tag_window: TagWindow::default(),
            metadata: Vec::new(),
        }
    }

    /// The stream offset received up to (the first not received), with `written` items in the
    /// output queue.
    pub(super) fn received(&self, written: u64) -> u64 {
        written.saturating_add(self.skipped)
    }

    /// What may be acknowledged of the `received` items (see [`Acknowledge`]).
    fn ackable(&self, opts: &TcpOptions, received: u64) -> u64 {
        match &opts.ack {
            Acknowledge::Received => received,
            Acknowledge::External(handle) => {
                let vlen = opts.vlen() as u64;
                (received.min(handle.get()) / vlen * vlen).max(self.acked)
            }
        }
    }

    /// Whether an ACK is due after a turn of the receive loop, at `received`, with an output
    /// queue of `capacity` items: one is owed to a new connection, or the sender's view lags
    /// (by a quarter queue, or at all once `idle` and [`ACK_DELAY`] passed).
    fn ack_wanted(&self, opts: &TcpOptions, received: u64, capacity: usize, idle: bool) -> bool {
        let ack_every = (capacity / 4).max(1) as u64;
        // How far the sender's view lags: what it may release, and the room it may fill.
        // (Messages received since the last ACK count too: the sender keeps them till then.)
        let behind = (self.ackable(opts, received) - self.acked)
            .max(
                received
                    .saturating_add(capacity as u64)
                    .saturating_sub(self.credited),
            )
            .max(self.next_message - self.msg_acked);
        let delayed = idle && self.last_ack.elapsed() >= ACK_DELAY;
        self.ack_due || (behind > 0 && (delayed || behind >= ack_every))
    }
}

/// The room of an output queue of `capacity` items, in whole vectors' worth of items.
fn room(opts: &TcpOptions, capacity: usize) -> u64 {
    let vlen = opts.vlen();
    (capacity / vlen * vlen) as u64
}

/// The WELCOME for a sender at `received`: a primary gets credit for the queue's room (of
/// `capacity` items of `size` bytes), a standby (`primary` false) none.
pub(super) fn welcome_for(
    opts: &TcpOptions,
    received: u64,
    capacity: usize,
    size: usize,
    primary: bool,
) -> Result<Welcome, NetError> {
    let vlen = opts.vlen();
    let max_items = capacity
        .min(opts.max_frame as usize / size)
        .min(u32::MAX as usize)
        / vlen
        * vlen;
    if max_items == 0 {
        return Err(NetError::Config(format!(
            "max_frame {} bytes holds no whole vector of {vlen} items of {size} bytes: raise max_frame to at least {}",
            opts.max_frame,
            vlen * size + DATA_HEAD_LEN + CRC_LEN
        )));
    }
    let room = if primary { room(opts, capacity) } else { 0 };
    Ok(Welcome {
        resume: received,
        credit: received.saturating_add(room),
        max_items: max_items as u32,
        heartbeat_ms: opts.heartbeat.as_millis().min(u32::MAX as u128) as u32,
        history: opts.history.div_ceil(vlen as u64) * vlen as u64,
        messages: None,
    })
}

impl<T: Item> TcpSource<T> {
    /// Answers the greeting sender's HELLO with a WELCOME: where to resume, the credit, the
    /// largest frame (and the first message it lacks, when it sends messages). The sender is
    /// then streaming.
    pub(super) fn welcome(&mut self, hello: Hello, out: &Output<T>) -> Result<(), NetError> {
        let received = self.received(out);
        let (size, capacity) = (std::mem::size_of::<T>(), out.capacity());
        // (The decoder takes one HELLO, first.)
        let SourceState::Greeting { session: s, .. } = &mut self.state else {
            return Ok(());
        };
        if hello.fence.is_some() && !self.opts.fenced {
            return Err(NetError::Protocol {
                peer: s.conn.peer.clone(),
                offset: received,
                kind: "HELLO",
                what: "a fenced sender (one replica of a partition with a standby) needs a receiver with fenced = true".into(),
            });
        }
        let mut welcome = welcome_for(&self.opts, received, capacity, size, true)?;
        welcome.messages = hello.messages.then_some(self.ledger.next_message);
        s.conn
            .send_control(&wire::welcome(&welcome), CONTROL_WAIT)
            .map_err(|e| io_err(&s.conn.peer, received, "send WELCOME", &e))?;
        (s.crc, s.messages) = (hello.crc, hello.messages);
        self.ledger.metadata = hello.metadata;
        self.state.welcomed();
        // A WELCOME says where to resume, not what the sender may release: an ACK follows
        // once this turn of the receive loop is over.
        self.ledger.ack_due = true;
        Ok(())
    }

    /// After a turn of the receive loop (`idle`: it found nothing more to read), acknowledges
    /// what was received when an ACK is due (see [`Ledger::ack_wanted`]).
    pub(super) fn acknowledge_due(
        &mut self,
        received: u64,
        capacity: usize,
        idle: bool,
    ) -> Result<(), NetError> {
        let streaming = matches!(self.state, SourceState::Streaming { .. });
        if streaming && self.ledger.ack_wanted(&self.opts, received, capacity, idle) {
            self.acknowledge(received, capacity)?;
        }
        Ok(())
    }

    /// Sends ACK (what may be released) and CREDIT (received + queue capacity), and tells the
    /// standbys the ACK.
    fn acknowledge(&mut self, received: u64, capacity: usize) -> Result<(), NetError> {
        let SourceState::Streaming { session: s } = &mut self.state else {
            return Ok(());
        };
        let ledger = &mut self.ledger;
        let ack = ledger.ackable(&self.opts, received);
        let credit = received.saturating_add(room(&self.opts, capacity));
        let mut both = [0u8; 2 * (HEADER_LEN + 8)];
        both[..HEADER_LEN + 8].copy_from_slice(&wire::offset_frame(Kind::Ack, ack));
        both[HEADER_LEN + 8..].copy_from_slice(&wire::offset_frame(Kind::Credit, credit));
        let sent = if s.messages {
            // The ACK that acknowledges messages too (the sender asked for them).
            let mut frames = wire::ack_messages(ack, ledger.next_message).to_vec();
            frames.extend_from_slice(&both[HEADER_LEN + 8..]);
            s.conn.send_control(&frames, CONTROL_WAIT)
        } else {
            s.conn.send_control(&both, CONTROL_WAIT)
        };
        sent.map_err(|e| io_err(&s.conn.peer, received, "send ACK", &e))?;
        if s.messages {
            ledger.msg_acked = ledger.next_message;
        }
        if !self.fenced.standbys.is_empty() {
            self.fenced.tell_standbys(&both[..HEADER_LEN + 8]);
        }
        ledger.acked = ack;
        ledger.credited = credit;
        ledger.ack_due = false;
        ledger.last_ack = Instant::now();
        Ok(())
    }

    /// The sender's END at `end`: acknowledges what is left to acknowledge and closes (the
    /// listener and the standbys too). With [`Acknowledge::External`] the connection lives on
    /// in [`ack_until_end`] until downstream acknowledged the last items.
    pub(super) fn end(&mut self, end: u64, capacity: usize) -> Result<Work, NodeError> {
        // The loop's acknowledgement covered everything received; the END's offset is the
        // data's end.
        if self.ledger.acked < self.ledger.ackable(&self.opts, end) {
            if let Err(e) = self.acknowledge(end, capacity) {
                self.lose(e)?;
                return Ok(Work::Progress);
            }
        }
        // The standbys have their last ACK: they end with their input. A sender that comes
        // now (a standby promoted after the stream ended) is refused at once.
        self.fenced.standbys.clear();
        self.endpoint.close();
        // (What it counted stays for the warnings.)
        self.accept_warning = self.acceptor.take().and_then(|a| a.warning());
        let session = match std::mem::replace(&mut self.state, SourceState::Closed) {
            SourceState::Greeting { session, .. } | SourceState::Streaming { session } => {
                Some(session)
            }
            _ => None,
        };
        if let (Acknowledge::External(handle), Some(s)) = (&self.opts.ack, session) {
            let acked = self.ledger.acked;
            if acked < end {
                // The stream ends here, but the sender may release the last items only as
                // they are acknowledged downstream.
                ack_until_end(
                    s.conn,
                    handle.clone(),
                    (acked, end, self.opts.vlen() as u64),
                    self.opts.resume_timeout,
                );
            }
        }
        Ok(Work::Done)
    }
}

/// After the stream's END, with [`Acknowledge::External`]: a thread of its own keeps the
/// connection and acknowledges the last items as `handle` reaches them, so that the sender
/// releases them only then (it stays done when `handle` reaches `end`), until the peer closes
/// or `limit` passes.
/// `(acked, end, vlen)`: what was acknowledged, the stream's end, and its vector length
/// (ACKs cover whole vectors).
fn ack_until_end(
    conn: crate::conn::Conn,
    handle: AckHandle,
    (mut acked, end, vlen): (u64, u64, u64),
    limit: Duration,
) {
    let spawned = std::thread::Builder::new()
        .name("tcp_source ack".into())
        .spawn(move || {
            let started = Instant::now();
            while acked < end && started.elapsed() < limit {
                let now = handle.get().min(end) / vlen * vlen;
                if now > acked {
                    if conn
                        .send_control(&wire::offset_frame(Kind::Ack, now), CONTROL_WAIT)
                        .is_err()
                    {
                        return;
                    }
                    acked = now;
                } else {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        });
    // Without a thread the sender learns nothing more and fails after its resume timeout,
    // which is what a lost connection would give: nothing is released that should not be.
    drop(spawned);
}
