//! gr-zeromq's tag header (`gr-zeromq/lib/tag_headers.cc`), which starts a message's only
//! frame when `pass_tags` is on, before the items:
//!
//! | bytes | field |
//! |---|---|
//! | 2 | magic `0x5FF0`, host order (little-endian here) |
//! | 1 | version `0x01` |
//! | 8 | offset of the message's first item in the sender's stream, host order |
//! | 8 | tag count, host order |
//! | per tag | 8-byte absolute item offset (host order), then key, value and source id as PMTs ([`sluice_pmt`]) |
//!
//! The source id is a symbol, or `PMT_F` (`#f`) when the tag has none. GNU Radio writes host
//! order; sluice writes and reads little-endian, which is host order on every machine GNU
//! Radio's binary packages run on (x86-64, ARM64).

use sluice_pmt::{self as pmt, PmtError};
use sluice_queue::{Tag, TagValue};

/// The header's magic.
pub const MAGIC: u16 = 0x5FF0;
/// The header's version.
pub const VERSION: u8 = 0x01;
/// Bytes before the first tag.
pub const FIXED_LEN: usize = 19;

/// A parsed header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Offset of the message's first item in the sender's stream.
    pub offset: u64,
    /// The tags, with the sender's absolute offsets in [`Tag::index`].
    pub tags: Vec<Tag>,
}

/// Appends the header for a message whose first item is `offset`, carrying `tags` (with
/// absolute indices).
pub fn encode(offset: u64, tags: &[Tag], out: &mut Vec<u8>) -> Result<(), PmtError> {
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.push(VERSION);
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&(tags.len() as u64).to_le_bytes());
    for t in tags {
        out.extend_from_slice(&t.index.to_le_bytes());
        pmt::encode(&TagValue::Str(t.key.clone()), out)?;
        pmt::encode(&t.value, out)?;
        match &t.source {
            Some(s) => pmt::encode(&TagValue::Str(s.clone()), out)?,
            None => pmt::encode(&TagValue::Bool(false), out)?,
        }
    }
    Ok(())
}

/// Why a header does not parse.
#[derive(Debug, Clone, PartialEq)]
pub enum HeaderError {
    /// The bytes end inside the header: more are needed.
    Truncated,
    /// The bytes are not a valid header.
    Bad(String),
}

fn take<'a>(bytes: &'a [u8], at: &mut usize, n: usize) -> Result<&'a [u8], HeaderError> {
    let s = bytes.get(*at..*at + n).ok_or(HeaderError::Truncated)?;
    *at += n;
    Ok(s)
}

fn u64_at(bytes: &[u8], at: &mut usize) -> Result<u64, HeaderError> {
    Ok(u64::from_le_bytes(
        take(bytes, at, 8)?.try_into().expect("eight bytes"),
    ))
}

fn value(bytes: &[u8], at: &mut usize, what: &str) -> Result<TagValue, HeaderError> {
    match pmt::decode(&bytes[*at..]) {
        Ok((v, n)) => {
            *at += n;
            Ok(v)
        }
        // A length running past the end of a prefix is a cut, not (yet) an error.
        Err(PmtError::Truncated { .. } | PmtError::BadLength { .. }) => Err(HeaderError::Truncated),
        Err(e) => Err(HeaderError::Bad(format!(
            "{what} at header byte {}: {e}",
            *at
        ))),
    }
}

/// Parses a header at the start of `bytes`: the header and its length.
pub fn decode(bytes: &[u8]) -> Result<(Header, usize), HeaderError> {
    let mut at = 0;
    let magic = u16::from_le_bytes(take(bytes, &mut at, 2)?.try_into().expect("two bytes"));
    if magic != MAGIC {
        return Err(HeaderError::Bad(format!(
            "magic 0x{magic:04x}, expected 0x{MAGIC:04x} (is the sender's pass_tags on?)"
        )));
    }
    let version = take(bytes, &mut at, 1)?[0];
    if version != VERSION {
        return Err(HeaderError::Bad(format!(
            "version {version}, expected {VERSION}"
        )));
    }
    let offset = u64_at(bytes, &mut at)?;
    let count = u64_at(bytes, &mut at)?;
    // Each tag takes at least 8 + 3 bytes: a count beyond what could fit is an error even
    // before its bytes come (no large allocation from a bad count).
    if count > (crate::READ_AHEAD / 11) as u64 {
        return Err(HeaderError::Bad(format!("{count} tags in one message")));
    }
    let mut tags = Vec::with_capacity(count as usize);
    for k in 0..count {
        let index = u64_at(bytes, &mut at)?;
        let key = match value(bytes, &mut at, "tag key")? {
            TagValue::Str(s) => s,
            other => {
                return Err(HeaderError::Bad(format!(
                    "tag {k}'s key is {other:?}, not a symbol"
                )))
            }
        };
        let v = value(bytes, &mut at, "tag value")?;
        let source = match value(bytes, &mut at, "tag source id")? {
            TagValue::Str(s) => Some(s),
            _ => None,
        };
        tags.push(Tag {
            index,
            key,
            value: v,
            source,
        });
    }
    Ok((Header { offset, tags }, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_layout() {
        let tags = vec![
            Tag::with_source(12, "rx_freq", TagValue::F64(1e6), "src"),
            Tag::new(15, "n", TagValue::I64(3)),
        ];
        let mut b = Vec::new();
        encode(10, &tags, &mut b).unwrap();
        assert_eq!(&b[..3], &[0xf0, 0x5f, 0x01]);
        assert_eq!(&b[3..11], &10u64.to_le_bytes());
        assert_eq!(&b[11..19], &2u64.to_le_bytes());
        assert_eq!(&b[19..27], &12u64.to_le_bytes());
        b.extend_from_slice(b"payload");
        let (h, n) = decode(&b).unwrap();
        assert_eq!(&b[n..], b"payload");
        assert_eq!(h, Header { offset: 10, tags });
        for cut in 0..n {
            assert_eq!(
                decode(&b[..cut]).unwrap_err(),
                HeaderError::Truncated,
                "cut at {cut}"
            );
        }
        b[0] = 0;
        assert!(matches!(decode(&b), Err(HeaderError::Bad(m)) if m.contains("magic")));
    }
}
