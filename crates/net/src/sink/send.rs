//! The turn of a connected `tcp_sink`: it hears the receiver, releases what the receiver has
//! (but the history it declared), and sends what credit allows: DATA frames (and MESSAGE
//! frames between them) in batches, each batch in one `sendmsg` whose payload slices point
//! into the input queue's window. Once everything is sent and the input ended, the END.

use super::retention::available;
use super::state::{Session, SinkState};
use super::{TcpSink, CONTROL_WAIT};
use crate::conn::io_err;
use crate::message::Outbox;
use crate::options::TcpOptions;
use crate::wire::{self, Kind, CRC_LEN, DATA_HEAD_LEN, HEADER_LEN};
use crate::NetError;
use sluice_runtime::{Input, Item, NodeError, Tag, Work};
use std::collections::VecDeque;
use std::io::IoSlice;

/// The most DATA frames one `sendmsg` carries (three iovecs each, below IOV_MAX = 1024).
const BATCH_FRAMES: usize = 128;

/// Frames are added to a batch while it holds fewer bytes than this: many small frames share
/// a system call, a large frame goes alone.
const BATCH_BYTES: usize = 1 << 20;

/// One DATA frame of a batch.
#[derive(Debug)]
pub(super) struct FrameRef {
    pub(super) offset: u64,
    pub(super) items: usize,
    /// Where its header, fixed part and tags end in [`Pending::heads`].
    head_end: usize,
    trailer: [u8; CRC_LEN],
    /// Bytes of `trailer` sent (0 without CRC, and for a MESSAGE, whose frame is all head).
    trailer_len: usize,
}

/// DATA frames built, and partly sent, in one batch: consecutive frames whose heads lie in
/// one buffer and whose payloads are the input window's items, sent by one `sendmsg`.
#[derive(Debug, Default)]
pub(super) struct Pending {
    pub(super) frames: Vec<FrameRef>,
    heads: Vec<u8>,
    written: usize,
    total: usize,
    /// The sequence number of the first message after this batch's.
    pub(super) messages_to: u64,
}

/// What a turn's send did.
enum Sending {
    /// A whole batch went out.
    Sent,
    /// The socket took part of a batch (`wrote`: some bytes) and no more.
    Blocked { wrote: bool },
    /// Nothing to send (or the sink sends nothing in its state).
    Nothing,
    /// The connection was lost.
    Lost,
}

impl<T: Item> TcpSink<T> {
    /// Greeting, standby, streaming or draining: turns (hear the receiver, release, send)
    /// while something moves; then the END or a wait for input (streaming), the end of the
    /// stream (draining, all acknowledged), or a wait on the receiver.
    pub(super) fn serve(&mut self, input: &mut Input<T>) -> Result<Work, NodeError> {
        let mut moved = false;
        let mut tag_buf = Vec::new();
        let blocked_write = loop {
            let avail = available(input)?;
            if let Some(work) = self.hear_receiver(input, avail)? {
                return Ok(work);
            }
            if self.release(input, avail) {
                moved = true;
                continue;
            }
            match self.send(input, avail, &mut tag_buf)? {
                Sending::Sent => moved = true,
                Sending::Blocked { wrote } => {
                    moved |= wrote;
                    break true;
                }
                Sending::Nothing => break false,
                Sending::Lost => return Ok(Work::Progress),
            }
        };
        if moved {
            self.backoff.reset();
            return Ok(Work::Progress);
        }
        match self.state {
            SinkState::Streaming { .. } => self.end_or_wait(input, blocked_write),
            SinkState::Draining { end, .. } if self.acked == end => Ok(self.delivered()),
            _ => self.wait_on_receiver(blocked_write),
        }
    }

    /// Reads the receiver's frames when due (the input holds `avail` items): `Some` ends the
    /// turn, when the connection failed (after the END was acknowledged: the stream is
    /// delivered).
    fn hear_receiver(&mut self, input: &Input<T>, avail: usize) -> Result<Option<Work>, NodeError> {
        let read = self.read_offset(input);
        let written = read + avail as u64;
        let unacked = written.saturating_sub(self.acked);
        if !self.rx_due(unacked, input.capacity()) {
            return Ok(None);
        }
        let Err(e) = self.pump_rx(read, written, input.capacity()) else {
            return Ok(None);
        };
        if matches!(self.state, SinkState::Draining { end, .. } if end == self.acked) {
            // The peer acknowledged the END and closed: the stream is delivered.
            return Ok(Some(self.delivered()));
        }
        self.lose(e)?;
        Ok(Some(Work::Progress))
    }

    /// Releases (consumes) what the peer has, but for the history it declared, and not the
    /// items of a batch still being written (its slices point into the window); true if any.
    /// (A standby's or a promoted one's receiver may have more than it has.)
    fn release(&mut self, input: &mut Input<T>, avail: usize) -> bool {
        // (A warm partition's first WELCOME sets the origin.)
        let read = self.read_offset(input);
        let mut release = self.acked.saturating_sub(self.history);
        if let Some(s) = self.state.session().filter(|s| s.pending.is_some()) {
            release = release.min(s.sent);
        }
        if release <= read || avail == 0 {
            return false;
        }
        let k = ((release - read) as usize).min(avail);
        input.consume(k);
        while self.tags.front().is_some_and(|t| t.index < release) {
            self.tags.pop_front();
        }
        true
    }

    /// Streaming: sends the batch begun, or the next one (what credit allows of the `avail`
    /// items the input holds, and the messages due).
    fn send(
        &mut self,
        input: &mut Input<T>,
        avail: usize,
        tag_buf: &mut Vec<Tag>,
    ) -> Result<Sending, NodeError> {
        if !matches!(self.state, SinkState::Streaming { .. }) {
            return Ok(Sending::Nothing);
        }
        let read = self.read_offset(input);
        let end = read + avail as u64;
        self.take_tags(input, end, tag_buf);
        let window = input.window(1)?.unwrap_or(&[]);
        let SinkState::Streaming { session: s } = &mut self.state else {
            return Ok(Sending::Nothing);
        };
        let mut p = match s.pending.take() {
            Some(p) => p,
            None => {
                let next = next_batch(s, &self.outbox, &self.tags, &self.opts, window, read, end)?;
                let Some(batch) = next else {
                    return Ok(Sending::Nothing);
                };
                batch
            }
        };
        let bytes: &[u8] = bytemuck::cast_slice(window);
        let iov = rest(&p, bytes, read, std::mem::size_of::<T>());
        let k = match s.conn.send_vectored(&iov) {
            Ok(k) => k,
            Err(e) => {
                let cause = io_err(&s.conn.peer, self.acked, "send", &e);
                self.lose(cause)?;
                return Ok(Sending::Lost);
            }
        };
        drop(iov);
        p.written += k;
        if p.written < p.total {
            s.pending = Some(p);
            return Ok(Sending::Blocked { wrote: k > 0 });
        }
        let last = p.frames.last().expect("a batch has a frame");
        s.sent = last.offset + last.items as u64;
        s.msg_sent = p.messages_to;
        Ok(Sending::Sent)
    }

    /// Streaming, nothing moved: once everything is sent and the input ended, the END; with
    /// everything sent and room in retention, a wait for input; else a wait on the receiver
    /// (`blocked_write`: for room in the socket).
    fn end_or_wait(
        &mut self,
        input: &mut Input<T>,
        blocked_write: bool,
    ) -> Result<Work, NodeError> {
        let read = self.read_offset(input);
        let avail = available(input)?;
        let vlen = self.opts.vlen() as u64;
        let whole = (read + avail as u64) / vlen * vlen;
        let all_sent = self.state.session().is_some_and(|s| {
            s.pending.is_none() && s.sent == whole && s.msg_sent == self.outbox.next_seq()
        });
        // Messages may still come: poll for them (the scheduler wakes a node for one input).
        let polling = self.opts.messages && !self.msg_ended;
        // End of stream: the window is shorter than asked for (and no message can follow).
        let ended = all_sent
            && !polling
            && avail < input.capacity()
            && input.window(avail + 1)?.is_some_and(|w| w.len() == avail);
        if ended {
            return self.send_end(read + avail as u64, whole);
        }
        if all_sent && avail == 0 && !polling {
            // Nothing to send and nothing to wait for: wait for input. The keeper thread sends
            // heartbeats meanwhile.
            return Ok(Work::NeedInput { port: 0, items: 1 });
        }
        if all_sent && avail < input.capacity() / 2 && !polling {
            // Everything is sent and only acknowledgements are outstanding, with room to spare
            // in the retention window: wait for new input (waiting on the socket instead would
            // hold new items back until an ACK came). The ACKs are read at the next call, as
            // they are when the input is all acknowledged and the peer is not watched.
            return Ok(Work::NeedInput {
                port: 0,
                items: avail + 1,
            });
        }
        self.wait_on_receiver(blocked_write)
    }

    /// The input ended at `end` and everything is sent: the END (the stream is `Draining`).
    /// An input that ended inside a vector (`whole`: the last whole one's end) fails.
    fn send_end(&mut self, end: u64, whole: u64) -> Result<Work, NodeError> {
        if end != whole {
            let vlen = self.opts.vlen() as u64;
            return Err(NodeError::msg(format!(
                "the input ended at item {end}, inside a vector of {vlen} items (vlen {vlen}): {} items of a last vector never came",
                end - whole
            )));
        }
        let SinkState::Streaming { session: s } = &self.state else {
            return Ok(Work::Progress);
        };
        if let Err(e) = s
            .conn
            .send_control(&wire::offset_frame(Kind::End, end), CONTROL_WAIT)
        {
            let cause = io_err(&s.conn.peer, self.acked, "send END", &e);
            self.lose(cause)?;
            return Ok(Work::Progress);
        }
        self.state.end_sent(end);
        Ok(Work::Progress)
    }

    /// Waiting on the peer: for a WELCOME, an ACK, credit, or room in the socket
    /// (`blocked_write`). A peer silent for `peer_timeout` is lost.
    fn wait_on_receiver(&mut self, blocked_write: bool) -> Result<Work, NodeError> {
        let Some(s) = self.state.session() else {
            return Ok(Work::Progress);
        };
        let silent = s.conn.last_rx.elapsed();
        if silent > self.opts.peer_timeout {
            let cause = NetError::Silent {
                peer: s.conn.peer.clone(),
                offset: self.acked,
                secs: silent.as_secs_f64(),
            };
            self.lose(cause)?;
            return Ok(Work::Progress);
        }
        let wait = self.backoff.next();
        if let Some(s) = self.state.session_mut() {
            s.conn.wait(blocked_write, wait);
            s.waited = true;
        }
        Ok(Work::Progress)
    }
}

/// The next batch for session `s`: as many frames as are ready, up to a batch, for one system
/// call. Items of `window` (whose first item is at offset `read`, and which ends at `end`) go
/// in whole vectors within the credit, a message between the items below its offset and the
/// items from it on; `None` when nothing is due.
fn next_batch<T: Item>(
    s: &Session,
    outbox: &Outbox,
    tags: &VecDeque<Tag>,
    opts: &TcpOptions,
    window: &[T],
    read: u64,
    end: u64,
) -> Result<Option<Pending>, NodeError> {
    let vlen = opts.vlen() as u64;
    let frame_items = opts.frame_items(std::mem::size_of::<T>());
    // Whole vectors only (a vector's items are committed together upstream; the credit counts
    // whole vectors from a receiver of the same vlen).
    let limit = end.min(s.credit) / vlen * vlen;
    let (mut at, max_items, mut seq) = (s.sent, s.max_items, s.msg_sent);
    let message_due = |seq: u64, at: u64| outbox.get(seq).filter(|m| m.offset <= at).is_some();
    if s.sent >= limit && !message_due(seq, at) {
        return Ok(None);
    }
    let mut batch = Pending::default();
    while batch.frames.len() < BATCH_FRAMES && batch.total < BATCH_BYTES {
        if let Some(m) = outbox.get(seq).filter(|m| m.offset <= at) {
            batch.heads.extend_from_slice(&m.frame);
            batch.total += m.frame.len();
            batch.frames.push(FrameRef {
                offset: at,
                items: 0,
                head_end: batch.heads.len(),
                trailer: [0; CRC_LEN],
                trailer_len: 0,
            });
            seq += 1;
            continue;
        }
        if at >= limit {
            break;
        }
        let mut items = ((limit - at) as usize).min(frame_items).min(max_items);
        if let Some(m) = outbox.get(seq) {
            // (Offsets are whole vectors: the frame stays whole vectors.)
            items = items.min((m.offset - at) as usize);
        }
        let from = (at - read) as usize;
        let payload: &[u8] = bytemuck::cast_slice(&window[from..from + items]);
        frame(&mut batch, tags, opts.crc, (at, items), payload)?;
        at += items as u64;
    }
    batch.messages_to = seq;
    Ok(Some(batch))
}

/// Adds the DATA frame of `items` items from `offset` over `payload` to `batch`: its head
/// (and the `tags` on its items) go straight into the batch's buffer, its CRC (`crc`) into
/// its trailer.
fn frame(
    batch: &mut Pending,
    tags: &VecDeque<Tag>,
    crc: bool,
    (offset, items): (u64, usize),
    payload: &[u8],
) -> Result<(), NodeError> {
    let end = offset + items as u64;
    let start = batch.heads.len();
    batch.heads.resize(start + HEADER_LEN + DATA_HEAD_LEN, 0);
    let in_frame = |t: &&Tag| t.index >= offset && t.index < end;
    if tags.iter().any(|t| in_frame(&t)) {
        let tags: Vec<Tag> = tags.iter().filter(in_frame).cloned().collect();
        wire::encode_tags(&tags, &mut batch.heads)
            .map_err(|e| NodeError::caused(format!("encoding tags at offset {offset}"), e))?;
    }
    let tag_bytes = batch.heads.len() - start - HEADER_LEN - DATA_HEAD_LEN;
    if tag_bytes > wire::MAX_CONTROL {
        return Err(NodeError::msg(format!(
            "the tags on items {offset}..{end} take {tag_bytes} bytes, more than a frame carries ({})",
            wire::MAX_CONTROL
        )));
    }
    let fixed = wire::data_head(offset, items as u32, tag_bytes as u32, payload.len(), crc)
        .ok_or_else(|| NodeError::msg("DATA frame too long for its length field"))?;
    let head = &mut batch.heads[start..];
    head[..HEADER_LEN + DATA_HEAD_LEN].copy_from_slice(&fixed);
    let (trailer, trailer_len) = if crc {
        let crc = crc32c::crc32c_append(crc32c::crc32c(head), payload);
        (crc.to_le_bytes(), CRC_LEN)
    } else {
        ([0; CRC_LEN], 0)
    };
    batch.total += head.len() + payload.len() + trailer_len;
    batch.frames.push(FrameRef {
        offset,
        items,
        head_end: batch.heads.len(),
        trailer,
        trailer_len,
    });
    Ok(())
}

/// The slices of a batch still to send, after `written` bytes of it went out: each frame's
/// head, payload (from `window`, whose first item is at offset `read`) and trailer.
fn rest<'a>(p: &'a Pending, window: &'a [u8], read: u64, size: usize) -> Vec<IoSlice<'a>> {
    let mut out = Vec::with_capacity(3 * p.frames.len());
    let mut written = p.written;
    let mut head_start = 0;
    for f in &p.frames {
        let from = (f.offset - read) as usize * size;
        let parts = [
            &p.heads[head_start..f.head_end],
            &window[from..from + f.items * size],
            &f.trailer[..f.trailer_len],
        ];
        head_start = f.head_end;
        for part in parts {
            if written >= part.len() {
                written -= part.len();
                continue;
            }
            out.push(IoSlice::new(&part[written..]));
            written = 0;
        }
    }
    out
}
