//! The receive state machine: fed arbitrary chunks of a connection's bytes, it says what it
//! needs next and reports frames, so that it runs (and is fuzzed) without a socket.
//!
//! It asks for two kinds of bytes ([`Need`]): *control* bytes (headers, tags, control frame
//! bodies), which the caller puts into the decoder's small buffer ([`Decoder::control_space`],
//! then [`Decoder::control_filled`]), and *payload* bytes, which the caller puts wherever the
//! items belong — the receiving queue's reservation — and then shows to the decoder
//! ([`Decoder::payload_filled`]) so that it can count them and check their CRC. The decoder
//! never holds more than [`MAX_CONTROL`] bytes and allocates nothing by a length it has not
//! checked against its limits.

use crate::wire::{
    self, Hello, Kind, Welcome, CRC_LEN, DATA_HEAD_LEN, FLAG_CRC, FLAG_FENCE, FLAG_MSG, FLAG_VLEN,
    HEADER_LEN, MAGIC, MAX_CONTROL, MAX_ITEM_NAME, MAX_VLEN, VERSION, WELCOME_LEN,
};
use crate::NetError;
use sluice_queue::{Tag, TagValue};

/// Which end of a stream reads with this decoder: which frames it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The receiving end (reads HELLO, DATA, GAP, HEARTBEAT, END, ERROR, and MESSAGE when it
    /// takes messages).
    Receiver,
    /// The sending end (reads WELCOME, ACK, CREDIT, HEARTBEAT, ERROR).
    Sender,
}

/// What the decoder needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// This many bytes into [`Decoder::control_space`].
    Control(usize),
    /// This many payload bytes of the current DATA frame, into the destination (the caller's
    /// reservation, at byte [`Decoder::payload_done`] of the frame's payload).
    Payload(usize),
}

/// A frame, or the part of one, that the decoder has read.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A HELLO, checked against the expected item type.
    Hello(Hello),
    /// A WELCOME.
    Welcome(Welcome),
    /// A DATA frame's header and tags: `items` items from `offset` follow as payload
    /// (`items · item size` bytes). Tags have absolute indices inside the frame.
    DataBegin {
        /// Absolute offset of the frame's first item.
        offset: u64,
        /// Items in the frame.
        items: u32,
        /// The tags on them.
        tags: Vec<Tag>,
    },
    /// The payload of the DATA frame begun last is complete (and its CRC matched).
    DataEnd {
        /// Absolute offset of the frame's first item.
        offset: u64,
        /// Items in the frame.
        items: u32,
    },
    /// An ACK: every item below this offset is received.
    Ack(u64),
    /// An ACK with the messages flag (only to a sender that carries messages): every item
    /// below `acked` and every message numbered below `messages` is received.
    AckMessages {
        /// Every item below this offset is received.
        acked: u64,
        /// Every message numbered below this is received.
        messages: u64,
    },
    /// A CREDIT: the sender may send items below this offset.
    Credit(u64),
    /// A HEARTBEAT.
    Heartbeat,
    /// An END at this final offset (equal to the data received).
    End(u64),
    /// A GAP: the items `from..to` were dropped by the sender; the stream goes on at `to`.
    Gap {
        /// The receiver's offset when the gap came (the first lost item).
        from: u64,
        /// The first item after the gap.
        to: u64,
    },
    /// A MESSAGE bound to stream offset `offset` (the receiver has exactly the items below it),
    /// the `seq`-th message of the stream.
    Message {
        /// The stream offset it is bound to.
        offset: u64,
        /// Its sequence number.
        seq: u64,
        /// The message.
        message: TagValue,
    },
}

#[derive(Debug, Clone, Copy)]
struct DataFrame {
    offset: u64,
    items: u32,
    crc: bool,
}

#[derive(Debug, Clone, Copy)]
enum Stage {
    Header,
    Body { kind: Kind, flags: u16 },
    DataHead { flags: u16, length: u32 },
    DataTags { frame: DataFrame },
    Payload { frame: DataFrame, remaining: usize },
    Trailer { frame: DataFrame },
}

/// The receive state machine of one connection.
#[derive(Debug)]
pub struct Decoder {
    role: Role,
    peer: String,
    max_frame: u32,
    expect: Option<(String, u32)>,
    /// The vector length a receiver expects (1 unless [`Decoder::with_vlen`] said otherwise).
    expect_vlen: u32,
    /// The vector length of the connection (from its HELLO; 1 before).
    vlen: u32,
    stage: Stage,
    buf: Vec<u8>,
    filled: usize,
    want: usize,
    crc: u32,
    crc_on: bool,
    item_size: Option<u32>,
    greeted: bool,
    /// A receiver's GAP is taken only as the first frame after HELLO (the sender's answer to
    /// our WELCOME when it no longer holds the items from `resume` on); false after it or
    /// after the first DATA.
    gap_allowed: bool,
    offset: u64,
    /// Receiver: the sequence number of the next MESSAGE it takes (`None`: it takes none).
    /// Sender: `Some` when its HELLO asked to send messages (its WELCOME must say yes).
    messages: Option<u64>,
    /// Receiver: the peer's HELLO said it sends messages.
    peer_messages: bool,
    frame_kind: &'static str,
    frame_got: u64,
    frame_len: u64,
    payload_total: usize,
    /// Receiver: the most tags one DATA frame may carry.
    max_tags: u32,
    /// The last DATA frame's tag list, in bytes as they came.
    tag_bytes: usize,
    /// Tag keys seen, shared by every tag that has them (one allocation per key, not per
    /// tag): at most [`INTERNED_KEYS`].
    keys: Vec<std::sync::Arc<str>>,
}

/// The most distinct tag keys a decoder shares; later ones are kept per tag.
const INTERNED_KEYS: usize = 64;

/// The default of [`Decoder::with_max_tags`].
pub const DEFAULT_MAX_TAGS: u32 = 1024;

impl Decoder {
    /// A decoder for `role` reading from `peer` (its address, for messages), refusing frames
    /// whose length field exceeds `max_frame`. A receiver passes the item type it carries
    /// (`expect`: name and size) and the offset of the first item it does not have.
    pub fn new(
        role: Role,
        peer: &str,
        max_frame: u32,
        expect: Option<(&str, u32)>,
        offset: u64,
    ) -> Self {
        Decoder {
            role,
            peer: peer.to_string(),
            max_frame,
            expect: expect.map(|(n, s)| (n.to_string(), s)),
            expect_vlen: 1,
            vlen: 1,
            stage: Stage::Header,
            buf: vec![0; HEADER_LEN],
            filled: 0,
            want: HEADER_LEN,
            crc: 0,
            crc_on: false,
            item_size: None,
            greeted: false,
            gap_allowed: false,
            offset,
            messages: None,
            peer_messages: false,
            frame_kind: "frame header",
            frame_got: 0,
            frame_len: HEADER_LEN as u64,
            payload_total: 0,
            max_tags: DEFAULT_MAX_TAGS,
            tag_bytes: 0,
            keys: Vec::new(),
        }
    }

    /// A receiver's decoder that refuses a DATA frame with more than `max` tags
    /// ([`NetError::TagBudget`]: it costs that connection; the default is
    /// [`DEFAULT_MAX_TAGS`]).
    pub fn with_max_tags(mut self, max: u32) -> Self {
        self.max_tags = max;
        self
    }

    /// The bytes of the last DATA frame's tag list, as they came (0 without tags): what the
    /// receiver counts against its tag budget.
    pub fn last_tag_bytes(&self) -> usize {
        self.tag_bytes
    }

    /// A receiver's decoder for a stream of vectors of `vlen` items (see
    /// [`PortSpec::vlen`](sluice_runtime::PortSpec::vlen)): a HELLO declaring another vector
    /// length is refused ([`NetError::VlenMismatch`]), and so are DATA and GAP frames that do
    /// not carry or skip whole vectors. `vlen` 0 is taken as 1.
    pub fn with_vlen(mut self, vlen: u32) -> Self {
        self.expect_vlen = vlen.max(1);
        self
    }

    /// Messages beside the stream (see [`message`](crate::message)). A receiver takes MESSAGE
    /// frames from a sender whose HELLO has [`FLAG_MSG`], numbered from `next` on (a HELLO with
    /// the flag is refused by a receiver built without this); a sender (whose HELLO set the
    /// flag) needs a WELCOME that says how many messages the receiver has.
    pub fn with_messages(mut self, next: u64) -> Self {
        self.messages = Some(next);
        self
    }

    /// Receiver: the sequence number of the next message it expects (`None`: no messages).
    pub fn next_message(&self) -> Option<u64> {
        self.messages
    }

    /// The stream offset errors name: for a receiver, the first item it does not have (the
    /// decoder advances it frame by frame); a sender sets it to what the peer acknowledged.
    pub fn set_offset(&mut self, offset: u64) {
        self.offset = offset;
    }

    /// The stream offset (see [`Decoder::set_offset`]).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// What the decoder needs next.
    pub fn need(&self) -> Need {
        match self.stage {
            Stage::Payload { remaining, .. } => Need::Payload(remaining),
            _ => Need::Control(self.want - self.filled),
        }
    }

    /// Bytes of the current DATA frame's payload received so far (where the next payload
    /// bytes go in the destination).
    pub fn payload_done(&self) -> usize {
        match self.stage {
            Stage::Payload { remaining, .. } => self.payload_total - remaining,
            _ => 0,
        }
    }

    /// Whether the decoder is between frames (a connection may end here cleanly).
    pub fn between_frames(&self) -> bool {
        matches!(self.stage, Stage::Header) && self.filled == 0
    }

    /// Where the control bytes [`Need::Control`] asks for go (exactly that many).
    pub fn control_space(&mut self) -> &mut [u8] {
        &mut self.buf[self.filled..self.want]
    }

    /// Says that `n` bytes were written at the start of [`Decoder::control_space`].
    pub fn control_filled(&mut self, n: usize) -> Result<Option<Event>, NetError> {
        assert!(
            self.filled + n <= self.want && !matches!(self.stage, Stage::Payload { .. }),
            "control_filled({n}) beyond what the decoder asked for"
        );
        self.filled += n;
        self.frame_got += n as u64;
        if self.filled < self.want {
            return Ok(None);
        }
        match self.stage {
            Stage::Header => self.on_header(),
            Stage::Body { kind, flags } => self.on_body(kind, flags),
            Stage::DataHead { flags, length } => self.on_data_head(flags, length),
            Stage::DataTags { frame } => self.on_data_tags(frame),
            Stage::Trailer { frame } => self.on_trailer(frame),
            Stage::Payload { .. } => unreachable!("checked above"),
        }
    }

    /// Says that `bytes` (the next payload bytes of the current DATA frame) were written to
    /// the destination; the decoder counts them and adds them to the frame's CRC.
    pub fn payload_filled(&mut self, bytes: &[u8]) -> Result<Option<Event>, NetError> {
        let Stage::Payload { frame, remaining } = self.stage else {
            panic!("payload_filled while the decoder needs control bytes");
        };
        assert!(
            bytes.len() <= remaining,
            "payload_filled with more bytes than the frame has left"
        );
        if frame.crc {
            self.crc = crc32c::crc32c_append(self.crc, bytes);
        }
        self.frame_got += bytes.len() as u64;
        let remaining = remaining - bytes.len();
        if remaining > 0 {
            self.stage = Stage::Payload { frame, remaining };
            return Ok(None);
        }
        if frame.crc {
            self.expect_control(Stage::Trailer { frame }, CRC_LEN);
            return Ok(None);
        }
        Ok(Some(self.data_end(frame)))
    }

    /// The connection ended here: fine between frames, [`NetError::Truncated`] inside one.
    pub fn eof(&self) -> Result<(), NetError> {
        if self.between_frames() {
            return Ok(());
        }
        Err(NetError::Truncated {
            peer: self.peer.clone(),
            offset: self.offset,
            kind: self.frame_kind,
            got: self.frame_got,
            expected: self.frame_len,
        })
    }

    fn expect_control(&mut self, stage: Stage, n: usize) {
        self.stage = stage;
        self.filled = 0;
        self.want = n;
        if self.buf.len() < n {
            // n was checked against MAX_CONTROL (or is a fixed size) before we get here.
            self.buf.resize(n, 0);
        }
    }

    fn next_frame(&mut self) {
        self.expect_control(Stage::Header, HEADER_LEN);
        self.frame_kind = "frame header";
        self.frame_got = 0;
        self.frame_len = HEADER_LEN as u64;
    }

    fn protocol(&self, kind: &'static str, what: impl Into<String>) -> NetError {
        NetError::Protocol {
            peer: self.peer.clone(),
            offset: self.offset,
            kind,
            what: what.into(),
        }
    }

    fn on_header(&mut self) -> Result<Option<Event>, NetError> {
        let h = &self.buf[..HEADER_LEN];
        let found: [u8; 4] = [h[0], h[1], h[2], h[3]];
        if found == crate::secure::MAGIC || found == crate::auth::MAGIC {
            return Err(NetError::Auth {
                peer: self.peer.clone(),
                what: "the peer wants a secure channel (it sent a secure handshake), but this end has no key: give both ends the same key file (key_file)".to_string(),
            });
        }
        if found != MAGIC {
            return Err(NetError::BadMagic {
                peer: self.peer.clone(),
                offset: self.offset,
                found,
            });
        }
        if h[4] != VERSION {
            return Err(NetError::Version {
                peer: self.peer.clone(),
                offset: self.offset,
                theirs: h[4],
                ours: VERSION,
            });
        }
        let kind_byte = h[5];
        let flags = u16::from_le_bytes([h[6], h[7]]);
        let length = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
        let Some(kind) = Kind::from_byte(kind_byte) else {
            return Err(self.protocol(
                "frame",
                format!("unknown frame kind {kind_byte} (expected 1..=10)"),
            ));
        };
        self.frame_kind = kind.name();
        self.frame_len = HEADER_LEN as u64 + u64::from(length);
        let accepted = match self.role {
            Role::Receiver => matches!(
                kind,
                Kind::Hello
                    | Kind::Data
                    | Kind::Gap
                    | Kind::Heartbeat
                    | Kind::End
                    | Kind::Error
                    | Kind::Message
            ),
            Role::Sender => matches!(
                kind,
                Kind::Welcome | Kind::Ack | Kind::Credit | Kind::Heartbeat | Kind::Error
            ),
        };
        if !accepted {
            let direction = match self.role {
                Role::Receiver => "the receiver sends it, not the sender",
                Role::Sender => "the sender sends it, not the receiver",
            };
            return Err(self.protocol(kind.name(), format!("unexpected here: {direction}")));
        }
        let first = match self.role {
            Role::Receiver => Kind::Hello,
            Role::Sender => Kind::Welcome,
        };
        if !self.greeted && kind != first && kind != Kind::Error {
            return Err(self.protocol(
                kind.name(),
                format!("the connection must start with {}", first.name()),
            ));
        }
        if self.greeted && kind == first {
            return Err(self.protocol(kind.name(), "sent twice on one connection"));
        }
        if kind == Kind::Message {
            // A MESSAGE's faults cost the connection only (NetError::Message), not the stream.
            if !self.peer_messages {
                return Err(self.bad_message(
                    "the sender's HELLO did not announce messages (flag 0x0008)".to_string(),
                ));
            }
            if flags != 0 {
                return Err(
                    self.bad_message(format!("unknown flags {flags:#06x} (allowed: 0x0000)"))
                );
            }
            if length as usize > MAX_CONTROL {
                return Err(self.bad_message(format!(
                    "{length} bytes long, above the limit of {MAX_CONTROL} bytes"
                )));
            }
        }
        if length > self.max_frame {
            return Err(NetError::Oversized {
                peer: self.peer.clone(),
                offset: self.offset,
                kind: kind.name(),
                length: u64::from(length),
                limit: u64::from(self.max_frame),
            });
        }
        let allowed_flags = match kind {
            Kind::Hello => FLAG_CRC | FLAG_VLEN | FLAG_FENCE | FLAG_MSG,
            Kind::Welcome | Kind::Ack => FLAG_MSG,
            Kind::Data => FLAG_CRC,
            _ => 0,
        };
        if flags & !allowed_flags != 0 {
            return Err(self.protocol(
                kind.name(),
                format!("unknown flags {flags:#06x} (allowed: {allowed_flags:#06x})"),
            ));
        }
        let length = length as usize;
        if kind == Kind::Data {
            let crc = flags & FLAG_CRC != 0;
            if crc != self.crc_on {
                let said = if self.crc_on { "on" } else { "off" };
                return Err(self.protocol(
                    "DATA",
                    format!("CRC flag differs from the HELLO's (CRC {said})"),
                ));
            }
            if crc {
                self.crc = crc32c::crc32c(&self.buf[..HEADER_LEN]);
            }
            self.expect_control(
                Stage::DataHead {
                    flags,
                    length: length as u32,
                },
                DATA_HEAD_LEN,
            );
            return Ok(None);
        }
        let fixed = match kind {
            Kind::Welcome if self.messages.is_some() != (flags & FLAG_MSG != 0) => {
                let (asked, said) = if self.messages.is_some() {
                    ("asked to send messages", "does not take them")
                } else {
                    ("sends no messages", "answers with the messages flag")
                };
                return Err(self.protocol(
                    "WELCOME",
                    format!("this sender {asked}, but the receiver {said}"),
                ));
            }
            Kind::Welcome if flags & FLAG_MSG != 0 => Some(WELCOME_LEN + 8),
            Kind::Ack if flags & FLAG_MSG != 0 => {
                if self.messages.is_none() {
                    return Err(
                        self.protocol("ACK", "acknowledges messages, but this sender sends none")
                    );
                }
                Some(16)
            }
            _ => kind.fixed_body(),
        };
        match fixed {
            Some(fixed) if fixed != length => {
                return Err(self.protocol(kind.name(), format!("length {length}, expected {fixed}")))
            }
            Some(_) => {}
            None if length > MAX_CONTROL => {
                return Err(NetError::Oversized {
                    peer: self.peer.clone(),
                    offset: self.offset,
                    kind: kind.name(),
                    length: length as u64,
                    limit: MAX_CONTROL as u64,
                })
            }
            None => {}
        }
        self.expect_control(Stage::Body { kind, flags }, length);
        if length == 0 {
            return self.on_body(kind, flags);
        }
        Ok(None)
    }

    fn on_body(&mut self, kind: Kind, flags: u16) -> Result<Option<Event>, NetError> {
        let body = &self.buf[..self.want];
        let u64_at = |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().unwrap_or([0; 8]));
        let event = match kind {
            Kind::Hello => Event::Hello(self.parse_hello(flags)?),
            Kind::Welcome => {
                let w = Welcome {
                    resume: u64_at(0),
                    credit: u64_at(8),
                    max_items: u32::from_le_bytes([body[16], body[17], body[18], body[19]]),
                    heartbeat_ms: u32::from_le_bytes([body[20], body[21], body[22], body[23]]),
                    history: u64_at(24),
                    messages: (flags & FLAG_MSG != 0).then(|| u64_at(32)),
                };
                if w.max_items == 0 {
                    return Err(self.protocol("WELCOME", "largest frame of 0 items"));
                }
                self.greeted = true;
                Event::Welcome(w)
            }
            Kind::Ack if flags & FLAG_MSG != 0 => Event::AckMessages {
                acked: u64_at(0),
                messages: u64_at(8),
            },
            Kind::Ack => Event::Ack(u64_at(0)),
            Kind::Credit => Event::Credit(u64_at(0)),
            Kind::End => {
                let end = u64_at(0);
                if end != self.offset {
                    return Err(self.protocol(
                        "END",
                        format!(
                            "the stream ends at offset {end} but the data received ends at {}",
                            self.offset
                        ),
                    ));
                }
                Event::End(end)
            }
            Kind::Gap => {
                let (from, to) = (u64_at(0), u64_at(8));
                if !std::mem::take(&mut self.gap_allowed) {
                    return Err(self.protocol(
                        "GAP",
                        format!(
                            "items {from}..{to} lost, but a GAP may only follow the WELCOME (the sender's answer to a resume it can no longer serve)"
                        ),
                    ));
                }
                if to % u64::from(self.vlen) != 0 {
                    return Err(self.protocol(
                        "GAP",
                        format!(
                            "items {from}..{to} lost: the stream goes on at offset {to}, inside a vector of {} items (a gap skips whole vectors)",
                            self.vlen
                        ),
                    ));
                }
                if from != self.offset || to <= from {
                    return Err(self.protocol(
                        "GAP",
                        format!(
                            "items {from}..{to} lost, expected a gap starting at offset {} and ending after it",
                            self.offset
                        ),
                    ));
                }
                self.offset = to;
                Event::Gap { from, to }
            }
            Kind::Heartbeat => Event::Heartbeat,
            Kind::Message => self.on_message()?,
            Kind::Error => {
                return Err(NetError::Remote {
                    peer: self.peer.clone(),
                    offset: self.offset,
                    message: String::from_utf8_lossy(body).into_owned(),
                })
            }
            Kind::Data => unreachable!("DATA has its own stages"),
        };
        self.next_frame();
        Ok(Some(event))
    }

    /// A [`NetError::Message`] at this offset: `what` is the decoder's words.
    fn bad_message(&self, what: String) -> NetError {
        NetError::Message {
            peer: self.peer.clone(),
            offset: self.offset,
            what: crate::escape::text(&what),
        }
    }

    fn on_message(&mut self) -> Result<Event, NetError> {
        let (offset, seq, message) =
            crate::message::parse(&self.buf[..self.want]).map_err(|e| self.bad_message(e))?;
        let next = self.messages.unwrap_or(0);
        if offset != self.offset || seq != next {
            return Err(self.bad_message(format!(
                "message {seq} bound to offset {offset}, expected message {next} at offset {} (the items received)",
                self.offset
            )));
        }
        self.messages = Some(next + 1);
        self.gap_allowed = false;
        Ok(Event::Message {
            offset,
            seq,
            message,
        })
    }

    fn parse_hello(&mut self, flags: u16) -> Result<Hello, NetError> {
        let body = &self.buf[..self.want];
        let short = || {
            self.protocol(
                "HELLO",
                format!("body of {} bytes is cut short", body.len()),
            )
        };
        let item_size = u32::from_le_bytes(
            body.get(0..4)
                .ok_or_else(short)?
                .try_into()
                .unwrap_or([0; 4]),
        );
        let heartbeat_ms = u32::from_le_bytes(
            body.get(4..8)
                .ok_or_else(short)?
                .try_into()
                .unwrap_or([0; 4]),
        );
        let name_len = u16::from_le_bytes(
            body.get(8..10)
                .ok_or_else(short)?
                .try_into()
                .unwrap_or([0; 2]),
        ) as usize;
        if name_len > MAX_ITEM_NAME {
            return Err(self.protocol(
                "HELLO",
                format!("item type name of {name_len} bytes (at most {MAX_ITEM_NAME})"),
            ));
        }
        let name = body.get(10..10 + name_len).ok_or_else(short)?;
        let Ok(item_name) = std::str::from_utf8(name) else {
            return Err(self.protocol("HELLO", "item type name is not UTF-8"));
        };
        let mut at = 10 + name_len;
        let vlen = if flags & FLAG_VLEN != 0 {
            let v = u32::from_le_bytes(
                body.get(at..at + 4)
                    .ok_or_else(short)?
                    .try_into()
                    .unwrap_or([0; 4]),
            );
            at += 4;
            if !(2..=MAX_VLEN).contains(&v) {
                return Err(self.protocol(
                    "HELLO",
                    format!("vlen {v} with the vlen flag set (expected 2..={MAX_VLEN}; a plain stream sends no vlen)"),
                ));
            }
            v
        } else {
            1
        };
        let fence = if flags & FLAG_FENCE != 0 {
            let r = u64::from_le_bytes(
                body.get(at..at + 8)
                    .ok_or_else(short)?
                    .try_into()
                    .unwrap_or([0; 8]),
            );
            at += 8;
            Some(r)
        } else {
            None
        };
        let meta_len = u32::from_le_bytes(
            body.get(at..at + 4)
                .ok_or_else(short)?
                .try_into()
                .unwrap_or([0; 4]),
        ) as usize;
        let meta = body.get(at + 4..).ok_or_else(short)?;
        if meta.len() != meta_len {
            return Err(self.protocol(
                "HELLO",
                format!(
                    "metadata length {meta_len}, but {} bytes follow",
                    meta.len()
                ),
            ));
        }
        let metadata = wire::decode_tags(meta)
            .map_err(|e| self.protocol("HELLO", format!("metadata: {e}")))?;
        if item_size == 0 {
            return Err(self.protocol("HELLO", "item size 0"));
        }
        if let Some((our_name, our_size)) = &self.expect {
            if item_name != our_name || item_size != *our_size {
                return Err(NetError::ItemMismatch {
                    peer: self.peer.clone(),
                    offset: self.offset,
                    their_name: item_name.to_string(),
                    their_size: item_size,
                    our_name: our_name.clone(),
                    our_size: *our_size,
                });
            }
            if vlen != self.expect_vlen {
                return Err(NetError::VlenMismatch {
                    peer: self.peer.clone(),
                    offset: self.offset,
                    theirs: vlen,
                    ours: self.expect_vlen,
                });
            }
        }
        let hello = Hello {
            item_name: item_name.to_string(),
            item_size,
            vlen,
            crc: flags & FLAG_CRC != 0,
            heartbeat_ms,
            metadata,
            fence,
            messages: flags & FLAG_MSG != 0,
        };
        if hello.messages && self.messages.is_none() && self.expect.is_some() {
            return Err(self.protocol(
                "HELLO",
                "the sender carries messages (MESSAGE frames), but this receiver has no message output: give tcp_source messages = \"on\"",
            ));
        }
        self.peer_messages = hello.messages;
        self.crc_on = hello.crc;
        self.item_size = Some(item_size);
        self.vlen = vlen;
        self.greeted = true;
        self.gap_allowed = true;
        Ok(hello)
    }

    fn on_data_head(&mut self, flags: u16, length: u32) -> Result<Option<Event>, NetError> {
        let b = &self.buf[..DATA_HEAD_LEN];
        let offset = u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
        let items = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        let tag_bytes = u32::from_le_bytes([b[12], b[13], b[14], b[15]]) as usize;
        let crc = flags & FLAG_CRC != 0;
        if crc {
            self.crc = crc32c::crc32c_append(self.crc, b);
        }
        let item_size = self.item_size.unwrap_or(1);
        let payload = u64::from(items) * u64::from(item_size);
        let expected = DATA_HEAD_LEN as u64
            + tag_bytes as u64
            + payload
            + if crc { CRC_LEN as u64 } else { 0 };
        if expected != u64::from(length) {
            return Err(self.protocol(
                "DATA",
                format!(
                    "length field {length}, but {items} items of {item_size} bytes and {tag_bytes} bytes of tags make {expected}"
                ),
            ));
        }
        if items == 0 {
            return Err(self.protocol("DATA", "no items (a DATA frame carries at least one)"));
        }
        if !items.is_multiple_of(self.vlen) {
            return Err(self.protocol(
                "DATA",
                format!(
                    "{items} items, not a whole number of vectors of {} items (the HELLO's vlen)",
                    self.vlen
                ),
            ));
        }
        if tag_bytes > MAX_CONTROL {
            return Err(NetError::Oversized {
                peer: self.peer.clone(),
                offset: self.offset,
                kind: "DATA tags of a",
                length: tag_bytes as u64,
                limit: MAX_CONTROL as u64,
            });
        }
        if offset != self.offset {
            return Err(NetError::Discontinuity {
                peer: self.peer.clone(),
                expected: self.offset,
                got: offset,
            });
        }
        // Offsets are the peer's: a frame that would end past the largest offset is its
        // protocol error (and every later `offset + items` of this frame fits a u64).
        if offset.checked_add(u64::from(items)).is_none() {
            return Err(self.protocol(
                "DATA",
                format!("{items} items at offset {offset} pass the largest stream offset"),
            ));
        }
        self.gap_allowed = false;
        // payload ≤ length ≤ max_frame, a u32: it fits a usize.
        self.payload_total = payload as usize;
        let frame = DataFrame { offset, items, crc };
        self.expect_control(Stage::DataTags { frame }, tag_bytes);
        if tag_bytes == 0 {
            return self.on_data_tags(frame);
        }
        Ok(None)
    }

    fn on_data_tags(&mut self, frame: DataFrame) -> Result<Option<Event>, NetError> {
        let bytes = &self.buf[..self.want];
        self.tag_bytes = bytes.len();
        let mut tags = if bytes.is_empty() {
            Vec::new()
        } else {
            if frame.crc {
                self.crc = crc32c::crc32c_append(self.crc, bytes);
            }
            // The count comes first: too many tags are refused before any is decoded.
            let count = bytes
                .get(..4)
                .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            if count > self.max_tags {
                return Err(NetError::TagBudget {
                    peer: self.peer.clone(),
                    offset: frame.offset,
                    what: format!(
                        "{count} tags in one frame, more than the {} this end takes (max_tags_per_frame)",
                        self.max_tags
                    ),
                });
            }
            wire::decode_tags(bytes).map_err(|e| self.protocol("DATA", format!("tags: {e}")))?
        };
        for tag in &mut tags {
            self.intern(&mut tag.key);
        }
        // Checked at the DATA header (on_data_head): it fits.
        let end = frame.offset.saturating_add(u64::from(frame.items));
        if let Some(t) = tags
            .iter()
            .find(|t| t.index < frame.offset || t.index >= end)
        {
            return Err(self.protocol(
                "DATA",
                format!(
                    "tag '{}' at index {} lies outside the frame's items {}..{end}",
                    t.key, t.index, frame.offset
                ),
            ));
        }
        self.stage = Stage::Payload {
            frame,
            remaining: self.payload_total,
        };
        Ok(Some(Event::DataBegin {
            offset: frame.offset,
            items: frame.items,
            tags,
        }))
    }

    /// Replaces `key` by the shared copy of an equal key seen before (keeping it as the
    /// shared copy when there is room for one more).
    fn intern(&mut self, key: &mut std::sync::Arc<str>) {
        if let Some(k) = self.keys.iter().find(|k| ***k == **key) {
            *key = k.clone();
        } else if self.keys.len() < INTERNED_KEYS {
            self.keys.push(key.clone());
        }
    }

    fn on_trailer(&mut self, frame: DataFrame) -> Result<Option<Event>, NetError> {
        let sent = u32::from_le_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
        if sent != self.crc {
            return Err(NetError::Crc {
                peer: self.peer.clone(),
                offset: frame.offset,
                items: frame.items,
                computed: self.crc,
                sent,
            });
        }
        Ok(Some(self.data_end(frame)))
    }

    fn data_end(&mut self, frame: DataFrame) -> Event {
        self.offset = frame.offset.saturating_add(u64::from(frame.items));
        self.next_frame();
        Event::DataEnd {
            offset: frame.offset,
            items: frame.items,
        }
    }
}
