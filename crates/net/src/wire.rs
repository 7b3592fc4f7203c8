//! The wire format (see `docs/net/wire.md`): constants, the frame header, and the encoders of
//! every frame kind. Everything is little-endian except the PMT bytes of tags, which are
//! GNU Radio's big-endian serialization ([`sluice_pmt`]).

use sluice_pmt as pmt;
use sluice_queue::{Tag, TagValue};
use std::sync::Arc;

/// The four bytes every frame starts with.
pub const MAGIC: [u8; 4] = *b"SLCN";

/// The wire version this crate speaks. Bytes 0..5 of a frame (magic and version) keep their
/// place in every version, so that any two versions can tell each other apart.
pub const VERSION: u8 = 1;

/// Bytes of the header every frame starts with: magic (4), version (1), kind (1), flags (2),
/// length (4) of what follows the header.
pub const HEADER_LEN: usize = 12;

/// Bytes of a DATA frame's fixed part after the header: offset (8), items (4), tag bytes (4).
pub const DATA_HEAD_LEN: usize = 16;

/// Bytes of the CRC32C trailer of a DATA frame sent with [`FLAG_CRC`].
pub const CRC_LEN: usize = 4;

/// HELLO flag: every DATA frame of the connection carries a CRC32C trailer. DATA flag: this
/// frame carries one.
pub const FLAG_CRC: u16 = 1;

/// HELLO flag: the stream carries vectors of more than one item, and a u32 `vlen` follows the
/// item type name in the HELLO's body. Without it the vector length is 1, so a stream of plain
/// items is byte for byte what version 1 always sent.
pub const FLAG_VLEN: u16 = 2;

/// HELLO flag: the sender is one replica of a partition with a hot standby, and a u64 lease
/// revision follows the vector length (or the item type name): 0 for a standby, which sends no
/// DATA and only learns what the receiver has, above 0 for a primary. A receiver that took a
/// primary of some revision refuses every later HELLO with an older one (see
/// [`fence`](crate::fence)).
pub const FLAG_FENCE: u16 = 4;

/// HELLO flag: the sender carries messages beside the stream in MESSAGE frames (see
/// [`crate::message`]). WELCOME and ACK flag: a u64 `messages` (the sequence number of the
/// first message the receiver does not have) follows the body; a WELCOME with it says the
/// receiver takes messages. A sender without messages sets no flag, so its bytes are what
/// version 1 always sent.
pub const FLAG_MSG: u16 = 8;

/// The most items per vector a HELLO may declare (as the graph blocks' `vlen` parameter).
pub const MAX_VLEN: u32 = 1 << 24;

/// The default limit on a frame's length field (bytes after the header).
pub const DEFAULT_MAX_FRAME: u32 = 64 << 20;

/// Bytes of a WELCOME's body: resume (8), credit (8), max_items (4), heartbeat_ms (4),
/// history (8).
pub const WELCOME_LEN: usize = 32;

/// The most bytes of a non-DATA frame's body, and of a DATA frame's tags: these pass through
/// the receiver's small control buffer, which never grows beyond this.
pub const MAX_CONTROL: usize = 64 << 10;

/// The longest item type name a HELLO may carry.
pub const MAX_ITEM_NAME: usize = 64;

/// Frame kinds (byte 5 of the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Sender → receiver, first frame: item type, size, flags, heartbeat period, metadata.
    Hello = 1,
    /// Receiver → sender, the reply to HELLO: resume offset, credit, largest frame.
    Welcome = 2,
    /// Sender → receiver: items from an absolute offset, with their tags.
    Data = 3,
    /// Receiver → sender: every item below this offset is received.
    Ack = 4,
    /// Receiver → sender: the sender may send items below this offset.
    Credit = 5,
    /// Either way: "still here" when nothing else was sent for a heartbeat period.
    Heartbeat = 6,
    /// Sender → receiver: the stream ends at this offset.
    End = 7,
    /// Either way: a fatal error, in words; the sender of it closes the connection.
    Error = 8,
    /// Sender → receiver: the items from the receiver's resume offset up to an offset were
    /// dropped while it was away (the sender's retention was full); the stream goes on there.
    Gap = 9,
    /// Sender → receiver: a message bound to a stream offset (only after a HELLO with
    /// [`FLAG_MSG`]).
    Message = 10,
}

impl Kind {
    /// The kind for byte `b`, if it names one.
    pub fn from_byte(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Hello,
            2 => Kind::Welcome,
            3 => Kind::Data,
            4 => Kind::Ack,
            5 => Kind::Credit,
            6 => Kind::Heartbeat,
            7 => Kind::End,
            8 => Kind::Error,
            9 => Kind::Gap,
            10 => Kind::Message,
            _ => return None,
        })
    }

    /// Its name in the specification and in error messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Hello => "HELLO",
            Kind::Welcome => "WELCOME",
            Kind::Data => "DATA",
            Kind::Ack => "ACK",
            Kind::Credit => "CREDIT",
            Kind::Heartbeat => "HEARTBEAT",
            Kind::End => "END",
            Kind::Error => "ERROR",
            Kind::Gap => "GAP",
            Kind::Message => "MESSAGE",
        }
    }

    /// The exact body length of the kinds whose body is fixed.
    pub fn fixed_body(self) -> Option<usize> {
        match self {
            Kind::Welcome => Some(WELCOME_LEN),
            Kind::Gap => Some(16),
            Kind::Ack | Kind::Credit | Kind::End => Some(8),
            Kind::Heartbeat => Some(0),
            Kind::Hello | Kind::Data | Kind::Error | Kind::Message => None,
        }
    }
}

/// What a HELLO says.
#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    /// The item type's name as graph files spell it (`c32`, `f32`, `i16`, `u8`, `u32` …).
    pub item_name: String,
    /// Bytes per item.
    pub item_size: u32,
    /// Items per vector (1: a plain stream). DATA frames, offsets, credits and
    /// acknowledgements then count whole vectors' worth of items.
    pub vlen: u32,
    /// Whether every DATA frame carries a CRC32C trailer.
    pub crc: bool,
    /// The sender's heartbeat period in milliseconds.
    pub heartbeat_ms: u32,
    /// Stream metadata the sender knows (the latest tag of each metadata key it has seen, at
    /// its own offset). Informational: the tags themselves travel in DATA frames.
    pub metadata: Vec<Tag>,
    /// A fenced sender's lease revision ([`FLAG_FENCE`]): `Some(0)` a standby, `Some(r)` a
    /// primary of revision `r`; `None` an ordinary sender.
    pub fence: Option<u64>,
    /// Whether the sender carries messages in MESSAGE frames ([`FLAG_MSG`]).
    pub messages: bool,
}

/// What a WELCOME says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Welcome {
    /// The offset of the first item the receiver does not have: the sender resends from here.
    pub resume: u64,
    /// The sender may send items below this absolute offset (more comes in CREDIT frames).
    pub credit: u64,
    /// The most items one DATA frame may carry.
    pub max_items: u32,
    /// The receiver's heartbeat period in milliseconds.
    pub heartbeat_ms: u32,
    /// Items before `resume` that the receiver's consumer needs to prime its state after a
    /// takeover (an FIR's taps − 1): the sender keeps that many acknowledged items, and a
    /// later WELCOME may resume up to this far behind what was acknowledged.
    pub history: u64,
    /// The answer to a HELLO with [`FLAG_MSG`]: the sequence number of the first message the
    /// receiver does not have (the sender resends from there). `None`: no messages.
    pub messages: Option<u64>,
}

/// The 12-byte header of a frame of `kind` whose body (and trailer) is `length` bytes.
pub fn header(kind: Kind, flags: u16, length: u32) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..4].copy_from_slice(&MAGIC);
    h[4] = VERSION;
    h[5] = kind as u8;
    h[6..8].copy_from_slice(&flags.to_le_bytes());
    h[8..12].copy_from_slice(&length.to_le_bytes());
    h
}

/// The header and fixed part of a DATA frame: `items` items from `offset`, `tag_bytes` bytes
/// of tags, `payload` bytes of items, and a CRC trailer if `crc`. `None` if the frame's length
/// does not fit its 32-bit field.
pub fn data_head(
    offset: u64,
    items: u32,
    tag_bytes: u32,
    payload: usize,
    crc: bool,
) -> Option<[u8; HEADER_LEN + DATA_HEAD_LEN]> {
    let length = DATA_HEAD_LEN + tag_bytes as usize + payload + if crc { CRC_LEN } else { 0 };
    let length = u32::try_from(length).ok()?;
    let mut h = [0u8; HEADER_LEN + DATA_HEAD_LEN];
    h[..HEADER_LEN].copy_from_slice(&header(Kind::Data, if crc { FLAG_CRC } else { 0 }, length));
    h[12..20].copy_from_slice(&offset.to_le_bytes());
    h[20..24].copy_from_slice(&items.to_le_bytes());
    h[24..28].copy_from_slice(&tag_bytes.to_le_bytes());
    Some(h)
}

/// A whole frame with a body of `body` bytes.
fn frame(kind: Kind, flags: u16, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&header(kind, flags, body.len() as u32));
    out.extend_from_slice(body);
    out
}

/// A HELLO frame. Fails if the metadata does not encode or makes the frame too long.
pub fn hello(h: &Hello) -> Result<Vec<u8>, pmt::PmtError> {
    let mut body = Vec::with_capacity(64);
    body.extend_from_slice(&h.item_size.to_le_bytes());
    body.extend_from_slice(&h.heartbeat_ms.to_le_bytes());
    let name = &h.item_name.as_bytes()[..h.item_name.len().min(MAX_ITEM_NAME)];
    body.extend_from_slice(&(name.len() as u16).to_le_bytes());
    body.extend_from_slice(name);
    let mut flags = if h.crc { FLAG_CRC } else { 0 };
    if h.vlen > 1 {
        body.extend_from_slice(&h.vlen.to_le_bytes());
        flags |= FLAG_VLEN;
    }
    if let Some(revision) = h.fence {
        body.extend_from_slice(&revision.to_le_bytes());
        flags |= FLAG_FENCE;
    }
    if h.messages {
        flags |= FLAG_MSG;
    }
    let mut meta = Vec::new();
    encode_tags(&h.metadata, &mut meta)?;
    if meta.len() + body.len() + 4 > MAX_CONTROL {
        // Metadata is informational: a sender with too much of it sends none.
        meta.clear();
        encode_tags(&[], &mut meta)?;
    }
    body.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    body.extend_from_slice(&meta);
    Ok(frame(Kind::Hello, flags, &body))
}

/// A WELCOME frame (with [`FLAG_MSG`] and its u64 when `w.messages` is set).
pub fn welcome(w: &Welcome) -> Vec<u8> {
    let mut body = [0u8; WELCOME_LEN + 8];
    body[..8].copy_from_slice(&w.resume.to_le_bytes());
    body[8..16].copy_from_slice(&w.credit.to_le_bytes());
    body[16..20].copy_from_slice(&w.max_items.to_le_bytes());
    body[20..24].copy_from_slice(&w.heartbeat_ms.to_le_bytes());
    body[24..32].copy_from_slice(&w.history.to_le_bytes());
    match w.messages {
        Some(next) => {
            body[32..].copy_from_slice(&next.to_le_bytes());
            frame(Kind::Welcome, FLAG_MSG, &body)
        }
        None => frame(Kind::Welcome, 0, &body[..WELCOME_LEN]),
    }
}

/// A GAP frame: the items `from..to` are lost; the stream goes on at `to`.
pub fn gap(from: u64, to: u64) -> [u8; HEADER_LEN + 16] {
    let mut f = [0u8; HEADER_LEN + 16];
    f[..HEADER_LEN].copy_from_slice(&header(Kind::Gap, 0, 16));
    f[HEADER_LEN..HEADER_LEN + 8].copy_from_slice(&from.to_le_bytes());
    f[HEADER_LEN + 8..].copy_from_slice(&to.to_le_bytes());
    f
}

/// A frame whose body is one u64: ACK, CREDIT or END.
pub fn offset_frame(kind: Kind, offset: u64) -> [u8; HEADER_LEN + 8] {
    let mut f = [0u8; HEADER_LEN + 8];
    f[..HEADER_LEN].copy_from_slice(&header(kind, 0, 8));
    f[HEADER_LEN..].copy_from_slice(&offset.to_le_bytes());
    f
}

/// An ACK that also acknowledges messages ([`FLAG_MSG`]): every item below `acked` and every
/// message numbered below `messages` is received.
pub fn ack_messages(acked: u64, messages: u64) -> [u8; HEADER_LEN + 16] {
    let mut f = [0u8; HEADER_LEN + 16];
    f[..HEADER_LEN].copy_from_slice(&header(Kind::Ack, FLAG_MSG, 16));
    f[HEADER_LEN..HEADER_LEN + 8].copy_from_slice(&acked.to_le_bytes());
    f[HEADER_LEN + 8..].copy_from_slice(&messages.to_le_bytes());
    f
}

/// A HEARTBEAT frame.
pub fn heartbeat() -> [u8; HEADER_LEN] {
    header(Kind::Heartbeat, 0, 0)
}

/// An ERROR frame carrying `message` (cut to [`MAX_CONTROL`] bytes at a character boundary).
pub fn error(message: &str) -> Vec<u8> {
    let mut end = message.len().min(MAX_CONTROL);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    frame(Kind::Error, 0, &message.as_bytes()[..end])
}

/// Appends the tag list encoding of `tags` to `out`: a u32 count, then for each tag its
/// absolute index (u64), then its key, value and source as PMT values (key a symbol, source a
/// symbol or `#f`).
pub fn encode_tags(tags: &[Tag], out: &mut Vec<u8>) -> Result<(), pmt::PmtError> {
    out.extend_from_slice(&(tags.len() as u32).to_le_bytes());
    for tag in tags {
        out.extend_from_slice(&tag.index.to_le_bytes());
        pmt::encode(&TagValue::Str(tag.key.clone()), out)?;
        pmt::encode(&tag.value, out)?;
        match &tag.source {
            Some(s) => pmt::encode(&TagValue::Str(s.clone()), out)?,
            None => pmt::encode(&TagValue::Bool(false), out)?,
        }
    }
    Ok(())
}

/// Why a tag list does not decode.
#[derive(Debug, Clone, PartialEq)]
pub enum TagListError {
    /// The bytes end early or a count promises more than they hold.
    Truncated,
    /// A key or source is not a symbol.
    NotSymbol(&'static str),
    /// A PMT value is malformed.
    Pmt(pmt::PmtError),
    /// Bytes are left after the last tag.
    Trailing(usize),
}

impl std::fmt::Display for TagListError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TagListError::Truncated => f.write_str("the tag list ends early"),
            TagListError::NotSymbol(what) => write!(f, "a tag's {what} is not a PMT symbol"),
            TagListError::Pmt(e) => write!(f, "{e}"),
            TagListError::Trailing(n) => write!(f, "{n} bytes left after the last tag"),
        }
    }
}

/// Reads a tag list written by [`encode_tags`]; every byte of `bytes` must belong to it.
pub fn decode_tags(bytes: &[u8]) -> Result<Vec<Tag>, TagListError> {
    let count = u32::from_le_bytes(
        bytes
            .get(..4)
            .ok_or(TagListError::Truncated)?
            .try_into()
            .map_err(|_| TagListError::Truncated)?,
    ) as usize;
    let mut at = 4;
    // Each tag takes at least 8 + 3 bytes: never reserve more than the bytes can hold.
    let mut tags = Vec::with_capacity(count.min((bytes.len() - at) / 11));
    for _ in 0..count {
        let index = u64::from_le_bytes(
            bytes
                .get(at..at + 8)
                .ok_or(TagListError::Truncated)?
                .try_into()
                .map_err(|_| TagListError::Truncated)?,
        );
        at += 8;
        let mut next = || -> Result<TagValue, TagListError> {
            let (v, used) = pmt::decode(&bytes[at..]).map_err(TagListError::Pmt)?;
            at += used;
            Ok(v)
        };
        let key = match next()? {
            TagValue::Str(s) => s,
            _ => return Err(TagListError::NotSymbol("key")),
        };
        let value = next()?;
        let source: Option<Arc<str>> = match next()? {
            TagValue::Str(s) => Some(s),
            TagValue::Bool(false) => None,
            _ => return Err(TagListError::NotSymbol("source")),
        };
        tags.push(Tag {
            index,
            key,
            value,
            source,
        });
    }
    if at != bytes.len() {
        return Err(TagListError::Trailing(bytes.len() - at));
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip() {
        let tags = vec![
            Tag::new(5, "rx_rate", TagValue::F64(1e6)),
            Tag::with_source(9, "rx_time", TagValue::rx_time(3, 0.5), "usrp"),
        ];
        let mut out = Vec::new();
        encode_tags(&tags, &mut out).unwrap();
        assert_eq!(decode_tags(&out).unwrap(), tags);
        assert!(decode_tags(&out[..out.len() - 1]).is_err());
        out.push(0);
        assert_eq!(decode_tags(&out), Err(TagListError::Trailing(1)));
    }

    #[test]
    fn header_layout_is_little_endian() {
        let h = header(Kind::Ack, 0, 8);
        assert_eq!(&h, b"SLCN\x01\x04\x00\x00\x08\x00\x00\x00");
        let d = data_head(0x0102, 3, 4, 24, true).unwrap();
        assert_eq!(d[5], 3);
        assert_eq!(&d[8..12], &(16u32 + 4 + 24 + 4).to_le_bytes());
        assert_eq!(&d[12..20], &0x0102u64.to_le_bytes());
    }
}
