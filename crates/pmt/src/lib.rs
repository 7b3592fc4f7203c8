//! The byte encoding of tag values: GNU Radio's PMT serialization (`pmt::serialize` and
//! `pmt::deserialize` in `gnuradio-runtime/lib/pmt/pmt_serialize.cc`), byte for byte, so a value
//! from sluice and the same value from GNU Radio are the same bytes. The network transport and
//! the gr-zeromq endpoints carry tags in this form.
//!
//! Every value starts with one type byte; all numbers are big-endian; floats are their IEEE 754
//! bits.
//!
//! | type byte | PMT | layout after the type byte | [`TagValue`] |
//! |---|---|---|---|
//! | `0x00` | `PMT_T` | — | `Bool(true)` |
//! | `0x01` | `PMT_F` | — | `Bool(false)` |
//! | `0x02` | symbol | `u16` length, that many bytes of UTF-8 | `Str` |
//! | `0x03` | integer | `i32` | `I64` in `i32` range |
//! | `0x04` | real | `f64` | `F64` |
//! | `0x05` | complex | `f64` real, `f64` imaginary | `Complex` |
//! | `0x06` | `PMT_NIL` | — | `Null`, and the empty `Dict` |
//! | `0x07` | pair | first value, then second value | `Pair` |
//! | `0x08` | vector | `u32` count, then each value | `Vector` |
//! | `0x09` | dict cell | entry as a pair `0x07 key value`, then the rest of the dict | `Dict` |
//! | `0x0a` | uniform vector | `u8` element type, `u32` count, `u8` pad count `p`, `p` pad bytes, the elements | `Uniform` |
//! | `0x0b` | `uint64` | `u64` | `U64` |
//! | `0x0c` | tuple | `u32` count, then each value | `Tuple` |
//! | `0x0d` | integer | `i64` | `I64` outside `i32` range |
//!
//! Details that matter for matching GNU Radio:
//!
//! * An `I64` that fits in 32 bits is written as `0x03` (four bytes), a larger one as `0x0d`,
//!   as GNU Radio does for its `long` integers. Both decode to `I64`.
//! * A dict is a chain of dict cells: each entry is `0x09 0x07 <key> <value>` and the chain ends
//!   with `0x06`. `{a: 1, b: 2}` is `09 07 <a> <1> 09 07 <b> <2> 06`. The empty dict *is*
//!   `PMT_NIL` in GNU Radio, so `Dict(vec![])` is written as `0x06` and reads back as `Null`.
//!   (GNU Radio's `dict_add` puts a new key in front: the order on the wire is the order of
//!   [`TagValue::Dict`]'s entries.) A reader also accepts `0x07` between entries, as GNU Radio's
//!   does.
//! * A list `(a b)` is `07 <a> 07 <b> 06`: pairs whose second half is the rest of the list.
//! * Uniform vector element types: `0x00` u8, `0x01` s8, `0x02` u16, `0x03` s16, `0x04` u32,
//!   `0x05` s32, `0x06` u64, `0x07` s64, `0x08` f32, `0x09` f64, `0x0a` c32 (pairs of f32,
//!   real first), `0x0b` c64 (pairs of f64). GNU Radio always writes one pad byte (`01 00`)
//!   whatever the element type, so elements are not aligned; a reader skips as many pad bytes
//!   as the pad count says.
//! * Bytes `0x3b` (comment) and other type bytes are not values; GNU Radio refuses them too.
//! * GNU Radio 3.10 writes the empty tuple as `0c 00000000` but its own `deserialize` throws on
//!   it (`to_tuple` of an empty list); sluice reads it as `Tuple(vec![])`. Do not send empty
//!   tuples to GNU Radio.
//! * GNU Radio reads a uniform vector's pad count and pad bytes and data even past the end of
//!   its input; sluice requires every byte to be there.
//!
//! Limits, checked on both sides: a symbol has at most 65535 bytes (its length is a `u16`;
//! GNU Radio's own reader refuses symbols over 1024 bytes), a count fits in a `u32`, and values
//! nest at most [`MAX_DEPTH`] deep (each pair of a list counts as one level). A reader checks
//! every count against the bytes left before it allocates anything, so a malformed frame costs
//! an error, never a panic or a large allocation.
//!
//! *Architecture invariant*: the queue knows tag values, not their bytes; only the crates that
//! speak wire formats (`sluice-net`, `sluice-zmq`) depend on this one.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use num_complex::{Complex32, Complex64};
use sluice_queue::{TagValue, Uniform};
use std::sync::Arc;
use thiserror::Error;

pub mod fuzz;

/// The deepest nesting [`encode`] writes and [`decode`] reads (a list of `n` elements nests
/// `n` deep). It bounds the stack both use.
pub const MAX_DEPTH: usize = 256;

/// The most elements a reader reserves room for before it has read them.
const PREALLOCATE: usize = 64;

/// Type bytes (GNU Radio's `PST_*`).
mod pst {
    pub const TRUE: u8 = 0x00;
    pub const FALSE: u8 = 0x01;
    pub const SYMBOL: u8 = 0x02;
    pub const INT32: u8 = 0x03;
    pub const DOUBLE: u8 = 0x04;
    pub const COMPLEX: u8 = 0x05;
    pub const NULL: u8 = 0x06;
    pub const PAIR: u8 = 0x07;
    pub const VECTOR: u8 = 0x08;
    pub const DICT: u8 = 0x09;
    pub const UNIFORM_VECTOR: u8 = 0x0a;
    pub const UINT64: u8 = 0x0b;
    pub const TUPLE: u8 = 0x0c;
    pub const INT64: u8 = 0x0d;
    pub const COMMENT: u8 = 0x3b;
}

/// Uniform vector element types (GNU Radio's `UVI_*`).
mod uvi {
    pub const U8: u8 = 0x00;
    pub const S8: u8 = 0x01;
    pub const U16: u8 = 0x02;
    pub const S16: u8 = 0x03;
    pub const U32: u8 = 0x04;
    pub const S32: u8 = 0x05;
    pub const U64: u8 = 0x06;
    pub const S64: u8 = 0x07;
    pub const F32: u8 = 0x08;
    pub const F64: u8 = 0x09;
    pub const C32: u8 = 0x0a;
    pub const C64: u8 = 0x0b;
}

/// What is wrong with a value to encode or with bytes to decode. Offsets count from the start
/// of the slice given to [`decode`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PmtError {
    /// The input ends inside a value.
    #[error("PMT truncated at byte {offset}: {what} needs {needed} bytes, {available} left")]
    Truncated {
        /// Where the missing field starts.
        offset: usize,
        /// The field being read.
        what: &'static str,
        /// Bytes it needs.
        needed: usize,
        /// Bytes left in the input.
        available: usize,
    },
    /// A type byte that starts no PMT value.
    #[error("unknown PMT type byte 0x{byte:02x} at byte {offset}")]
    UnknownType {
        /// Where the byte is.
        offset: usize,
        /// The byte.
        byte: u8,
    },
    /// A uniform vector's element type byte is not one of `0x00..=0x0b`.
    #[error("unknown PMT uniform vector element type 0x{byte:02x} at byte {offset}")]
    UnknownUniformType {
        /// Where the byte is.
        offset: usize,
        /// The byte.
        byte: u8,
    },
    /// A length or count promises more than the input holds.
    #[error(
        "bad PMT length at byte {offset}: {what} of {len} needs {needed} bytes, {available} left"
    )]
    BadLength {
        /// Where the length field is.
        offset: usize,
        /// What the length counts.
        what: &'static str,
        /// The length read.
        len: u64,
        /// The bytes the length needs at least.
        needed: u64,
        /// Bytes left after the length field.
        available: usize,
    },
    /// A symbol's bytes are not UTF-8 (sluice's `Str` is text).
    #[error("PMT symbol at byte {offset} is not UTF-8")]
    NotUtf8 {
        /// Where the symbol's bytes start.
        offset: usize,
    },
    /// Values nest deeper than [`MAX_DEPTH`].
    #[error("PMT value nests deeper than {max} levels (at byte {offset})")]
    TooDeep {
        /// Where the value that is too deep starts (0 when encoding).
        offset: usize,
        /// [`MAX_DEPTH`].
        max: usize,
    },
    /// Valid PMT bytes that have no [`TagValue`]: a dict entry that is not a pair, a dict
    /// chain that does not end in `PMT_NIL`, a comment.
    #[error("PMT at byte {offset}: {what}")]
    Unsupported {
        /// Where the value starts.
        offset: usize,
        /// What it is.
        what: &'static str,
    },
    /// A value too long for its length field (a symbol over 65535 bytes, more than
    /// `u32::MAX` elements).
    #[error("cannot encode {what} of length {len} as a PMT: at most {max}")]
    TooLong {
        /// What is too long.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The most the encoding can say.
        max: usize,
    },
}

/// Appends the PMT serialization of `value` to `out` (on error, `out` may hold part of it).
pub fn encode(value: &TagValue, out: &mut Vec<u8>) -> Result<(), PmtError> {
    encode_at(value, out, 0)
}

/// The PMT serialization of `value` as a new vector.
pub fn to_bytes(value: &TagValue) -> Result<Vec<u8>, PmtError> {
    let mut out = Vec::new();
    encode(value, &mut out)?;
    Ok(out)
}

fn count(what: &'static str, len: usize) -> Result<u32, PmtError> {
    u32::try_from(len).map_err(|_| PmtError::TooLong {
        what,
        len,
        max: u32::MAX as usize,
    })
}

fn encode_at(value: &TagValue, out: &mut Vec<u8>, depth: usize) -> Result<(), PmtError> {
    if depth >= MAX_DEPTH {
        return Err(PmtError::TooDeep {
            offset: 0,
            max: MAX_DEPTH,
        });
    }
    match value {
        TagValue::Null => out.push(pst::NULL),
        TagValue::Bool(true) => out.push(pst::TRUE),
        TagValue::Bool(false) => out.push(pst::FALSE),
        TagValue::I64(v) => match i32::try_from(*v) {
            Ok(small) => {
                out.push(pst::INT32);
                out.extend_from_slice(&small.to_be_bytes());
            }
            Err(_) => {
                out.push(pst::INT64);
                out.extend_from_slice(&v.to_be_bytes());
            }
        },
        TagValue::U64(v) => {
            out.push(pst::UINT64);
            out.extend_from_slice(&v.to_be_bytes());
        }
        TagValue::F64(v) => {
            out.push(pst::DOUBLE);
            out.extend_from_slice(&v.to_be_bytes());
        }
        TagValue::Complex(c) => {
            out.push(pst::COMPLEX);
            out.extend_from_slice(&c.re.to_be_bytes());
            out.extend_from_slice(&c.im.to_be_bytes());
        }
        TagValue::Str(s) => {
            let len = u16::try_from(s.len()).map_err(|_| PmtError::TooLong {
                what: "symbol",
                len: s.len(),
                max: u16::MAX as usize,
            })?;
            out.push(pst::SYMBOL);
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        TagValue::Pair(pair) => {
            out.push(pst::PAIR);
            encode_at(&pair.0, out, depth + 1)?;
            encode_at(&pair.1, out, depth + 1)?;
        }
        TagValue::Tuple(items) | TagValue::Vector(items) => {
            let (tag, what) = match value {
                TagValue::Tuple(_) => (pst::TUPLE, "tuple"),
                _ => (pst::VECTOR, "vector"),
            };
            out.push(tag);
            out.extend_from_slice(&count(what, items.len())?.to_be_bytes());
            for item in items {
                encode_at(item, out, depth + 1)?;
            }
        }
        TagValue::Dict(entries) => {
            for (key, value) in entries {
                out.push(pst::DICT);
                out.push(pst::PAIR);
                // Nested as a reader sees it: dict, then the entry's pair, then key and value.
                encode_at(key, out, depth + 2)?;
                encode_at(value, out, depth + 2)?;
            }
            out.push(pst::NULL);
        }
        TagValue::Uniform(u) => encode_uniform(u, out)?,
    }
    Ok(())
}

fn encode_uniform(u: &Uniform, out: &mut Vec<u8>) -> Result<(), PmtError> {
    let (kind, len) = match u {
        Uniform::U8(v) => (uvi::U8, v.len()),
        Uniform::I8(v) => (uvi::S8, v.len()),
        Uniform::U16(v) => (uvi::U16, v.len()),
        Uniform::I16(v) => (uvi::S16, v.len()),
        Uniform::U32(v) => (uvi::U32, v.len()),
        Uniform::I32(v) => (uvi::S32, v.len()),
        Uniform::U64(v) => (uvi::U64, v.len()),
        Uniform::I64(v) => (uvi::S64, v.len()),
        Uniform::F32(v) => (uvi::F32, v.len()),
        Uniform::F64(v) => (uvi::F64, v.len()),
        Uniform::C32(v) => (uvi::C32, v.len()),
        Uniform::C64(v) => (uvi::C64, v.len()),
    };
    let n = count("uniform vector", len)?;
    out.push(pst::UNIFORM_VECTOR);
    out.push(kind);
    out.extend_from_slice(&n.to_be_bytes());
    // GNU Radio always writes a pad count of one and one zero byte.
    out.extend_from_slice(&[1, 0]);
    out.reserve(len * u.element_size());
    match u {
        Uniform::U8(v) => out.extend_from_slice(v),
        Uniform::I8(v) => out.extend(v.iter().map(|x| x.to_be_bytes()[0])),
        Uniform::U16(v) => v.iter().for_each(|x| out.extend(x.to_be_bytes())),
        Uniform::I16(v) => v.iter().for_each(|x| out.extend(x.to_be_bytes())),
        Uniform::U32(v) => v.iter().for_each(|x| out.extend(x.to_be_bytes())),
        Uniform::I32(v) => v.iter().for_each(|x| out.extend(x.to_be_bytes())),
        Uniform::U64(v) => v.iter().for_each(|x| out.extend(x.to_be_bytes())),
        Uniform::I64(v) => v.iter().for_each(|x| out.extend(x.to_be_bytes())),
        Uniform::F32(v) => v.iter().for_each(|x| out.extend(x.to_be_bytes())),
        Uniform::F64(v) => v.iter().for_each(|x| out.extend(x.to_be_bytes())),
        Uniform::C32(v) => v.iter().for_each(|c| {
            out.extend(c.re.to_be_bytes());
            out.extend(c.im.to_be_bytes());
        }),
        Uniform::C64(v) => v.iter().for_each(|c| {
            out.extend(c.re.to_be_bytes());
            out.extend(c.im.to_be_bytes());
        }),
    }
    Ok(())
}

/// Reads one PMT value from the start of `bytes`: the value and the number of bytes it used
/// (the rest of `bytes` is left alone, so values can be read one after another).
pub fn decode(bytes: &[u8]) -> Result<(TagValue, usize), PmtError> {
    let mut reader = Reader { bytes, pos: 0 };
    let value = reader.value(0)?;
    Ok((value, reader.pos))
}

/// Reads `bytes` as exactly one PMT value: bytes left over are an error.
pub fn from_bytes(bytes: &[u8]) -> Result<TagValue, PmtError> {
    let (value, used) = decode(bytes)?;
    if used != bytes.len() {
        return Err(PmtError::Unsupported {
            offset: used,
            what: "bytes left over after the value",
        });
    }
    Ok(value)
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], PmtError> {
        if n > self.left() {
            return Err(PmtError::Truncated {
                offset: self.pos,
                what,
                needed: n,
                available: self.left(),
            });
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], PmtError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, PmtError> {
        Ok(self.array::<1>(what)?[0])
    }

    fn f64(&mut self, what: &'static str) -> Result<f64, PmtError> {
        Ok(f64::from_be_bytes(self.array(what)?))
    }

    /// Reads a `u32` count of items of at least `min_size` bytes each, checked against the
    /// bytes left.
    fn count(&mut self, what: &'static str, min_size: usize) -> Result<usize, PmtError> {
        let offset = self.pos;
        let n = u32::from_be_bytes(self.array(what)?);
        let needed = u64::from(n) * min_size as u64;
        if needed > self.left() as u64 {
            return Err(PmtError::BadLength {
                offset,
                what,
                len: u64::from(n),
                needed,
                available: self.left(),
            });
        }
        Ok(n as usize)
    }

    fn value(&mut self, depth: usize) -> Result<TagValue, PmtError> {
        let start = self.pos;
        if depth >= MAX_DEPTH {
            return Err(PmtError::TooDeep {
                offset: start,
                max: MAX_DEPTH,
            });
        }
        let tag = self.u8("type byte")?;
        Ok(match tag {
            pst::TRUE => TagValue::Bool(true),
            pst::FALSE => TagValue::Bool(false),
            pst::NULL => TagValue::Null,
            pst::SYMBOL => {
                let at = self.pos;
                let len = u16::from_be_bytes(self.array("symbol length")?);
                if usize::from(len) > self.left() {
                    return Err(PmtError::BadLength {
                        offset: at,
                        what: "symbol",
                        len: u64::from(len),
                        needed: u64::from(len),
                        available: self.left(),
                    });
                }
                let text_at = self.pos;
                let text = self.take(usize::from(len), "symbol")?;
                let text =
                    std::str::from_utf8(text).map_err(|_| PmtError::NotUtf8 { offset: text_at })?;
                TagValue::Str(text.into())
            }
            pst::INT32 => TagValue::I64(i64::from(i32::from_be_bytes(self.array("int32")?))),
            pst::INT64 => TagValue::I64(i64::from_be_bytes(self.array("int64")?)),
            pst::UINT64 => TagValue::U64(u64::from_be_bytes(self.array("uint64")?)),
            pst::DOUBLE => TagValue::F64(self.f64("double")?),
            pst::COMPLEX => {
                let re = self.f64("complex real part")?;
                let im = self.f64("complex imaginary part")?;
                TagValue::Complex(Complex64::new(re, im))
            }
            pst::PAIR => {
                let first = self.value(depth + 1)?;
                let second = self.value(depth + 1)?;
                TagValue::Pair(Box::new((first, second)))
            }
            pst::VECTOR | pst::TUPLE => {
                let what = if tag == pst::VECTOR {
                    "vector"
                } else {
                    "tuple"
                };
                // Every element takes at least its type byte.
                let n = self.count(what, 1)?;
                // Grow with what is actually read: nested counts each checked only against
                // the bytes left would otherwise reserve that much at every level.
                let mut items = Vec::with_capacity(n.min(PREALLOCATE));
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                if tag == pst::VECTOR {
                    TagValue::Vector(items)
                } else {
                    TagValue::Tuple(items)
                }
            }
            pst::DICT => self.dict(depth)?,
            pst::UNIFORM_VECTOR => TagValue::Uniform(self.uniform()?),
            pst::COMMENT => {
                return Err(PmtError::Unsupported {
                    offset: start,
                    what: "a comment (0x3b) is not a value",
                })
            }
            byte => {
                return Err(PmtError::UnknownType {
                    offset: start,
                    byte,
                })
            }
        })
    }

    /// The dict whose first `0x09` has been read: entries until `0x06`.
    fn dict(&mut self, depth: usize) -> Result<TagValue, PmtError> {
        let mut entries = Vec::new();
        loop {
            let entry_at = self.pos;
            match self.value(depth + 1)? {
                TagValue::Pair(pair) => entries.push(*pair),
                _ => {
                    return Err(PmtError::Unsupported {
                        offset: entry_at,
                        what: "a dict entry that is not a (key . value) pair",
                    })
                }
            }
            let at = self.pos;
            match self.u8("dict continuation")? {
                pst::DICT | pst::PAIR => continue,
                pst::NULL => return Ok(TagValue::Dict(entries)),
                _ => {
                    return Err(PmtError::Unsupported {
                        offset: at,
                        what: "a dict that does not end in PMT_NIL (0x06)",
                    })
                }
            }
        }
    }

    fn uniform(&mut self) -> Result<Uniform, PmtError> {
        let kind_at = self.pos;
        let kind = self.u8("uniform vector element type")?;
        let size = match kind {
            uvi::U8 | uvi::S8 => 1,
            uvi::U16 | uvi::S16 => 2,
            uvi::U32 | uvi::S32 | uvi::F32 => 4,
            uvi::U64 | uvi::S64 | uvi::F64 | uvi::C32 => 8,
            uvi::C64 => 16,
            byte => {
                return Err(PmtError::UnknownUniformType {
                    offset: kind_at,
                    byte,
                })
            }
        };
        let count_at = self.pos;
        let n = u32::from_be_bytes(self.array("uniform vector count")?);
        let npad = usize::from(self.u8("uniform vector pad count")?);
        self.take(npad, "uniform vector padding")?;
        let needed = u64::from(n) * size as u64;
        if needed > self.left() as u64 {
            return Err(PmtError::BadLength {
                offset: count_at,
                what: "uniform vector",
                len: u64::from(n),
                needed,
                available: self.left(),
            });
        }
        let data = self.take(n as usize * size, "uniform vector elements")?;
        Ok(match kind {
            uvi::U8 => Uniform::U8(data.into()),
            uvi::S8 => Uniform::I8(data.iter().map(|b| i8::from_be_bytes([*b])).collect()),
            uvi::U16 => Uniform::U16(chunks(data).map(u16::from_be_bytes).collect()),
            uvi::S16 => Uniform::I16(chunks(data).map(i16::from_be_bytes).collect()),
            uvi::U32 => Uniform::U32(chunks(data).map(u32::from_be_bytes).collect()),
            uvi::S32 => Uniform::I32(chunks(data).map(i32::from_be_bytes).collect()),
            uvi::U64 => Uniform::U64(chunks(data).map(u64::from_be_bytes).collect()),
            uvi::S64 => Uniform::I64(chunks(data).map(i64::from_be_bytes).collect()),
            uvi::F32 => Uniform::F32(chunks(data).map(f32::from_be_bytes).collect()),
            uvi::F64 => Uniform::F64(chunks(data).map(f64::from_be_bytes).collect()),
            uvi::C32 => Uniform::C32(
                chunks::<8>(data)
                    .map(|b| {
                        let (re, im) = split::<4>(&b);
                        Complex32::new(f32::from_be_bytes(re), f32::from_be_bytes(im))
                    })
                    .collect::<Arc<[_]>>(),
            ),
            _ => Uniform::C64(
                chunks::<16>(data)
                    .map(|b| {
                        let (re, im) = split::<8>(&b);
                        Complex64::new(f64::from_be_bytes(re), f64::from_be_bytes(im))
                    })
                    .collect::<Arc<[_]>>(),
            ),
        })
    }
}

/// `data` as arrays of `N` bytes (its length is a multiple of `N`).
fn chunks<const N: usize>(data: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    data.chunks_exact(N).map(|c| {
        let mut a = [0; N];
        a.copy_from_slice(c);
        a
    })
}

/// The two halves of `bytes`, each `N` bytes long.
fn split<const N: usize>(bytes: &[u8]) -> ([u8; N], [u8; N]) {
    let mut a = [0; N];
    let mut b = [0; N];
    a.copy_from_slice(&bytes[..N]);
    b.copy_from_slice(&bytes[N..2 * N]);
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(value: &TagValue) -> String {
        to_bytes(value)
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Bytes printed by GNU Radio 3.10's `pmt.serialize_str` (kept here so these checks run
    /// without GNU Radio; `tests/pmt_peer.rs` asks the real peer).
    #[test]
    fn golden_bytes_from_gnu_radio() {
        let cases: Vec<(TagValue, &str)> = vec![
            (TagValue::Bool(true), "00"),
            (TagValue::Bool(false), "01"),
            (TagValue::Null, "06"),
            ("ab".into(), "0200026162"),
            (5i64.into(), "0300000005"),
            ((-1i64).into(), "03ffffffff"),
            ((1i64 << 40).into(), "0d0000010000000000"),
            ((-(1i64 << 31)).into(), "0380000000"),
            ((-(1i64 << 31) - 1).into(), "0dffffffff7fffffff"),
            (7u64.into(), "0b0000000000000007"),
            (1.5f64.into(), "043ff8000000000000"),
            (
                Complex64::new(1.0, 2.0).into(),
                "053ff00000000000004000000000000000",
            ),
            (TagValue::pair(1i64, 2i64), "0703000000010300000002"),
            (
                TagValue::list([1i64.into(), 2i64.into()]),
                "07030000000107030000000206",
            ),
            (
                TagValue::dict([("b", 2i64), ("a", 1i64)]),
                "0907020001620300000002090702000161030000000106",
            ),
            (TagValue::Dict(vec![]), "06"),
            (
                TagValue::Vector(vec![3i64.into(), 3i64.into()]),
                "080000000203000000030300000003",
            ),
            (
                TagValue::rx_time(5, 0.25),
                "0c000000020b0000000000000005043fd0000000000000",
            ),
            (TagValue::Tuple(vec![]), "0c00000000"),
            (vec![1u8, 2].into(), "0a000000000201000102"),
            (vec![1i8, -2].into(), "0a0100000002010001fe"),
            (vec![1u16, 2].into(), "0a0200000002010000010002"),
            (vec![1i16, -2].into(), "0a030000000201000001fffe"),
            (vec![1u32, 2].into(), "0a040000000201000000000100000002"),
            (vec![1i32, -2].into(), "0a0500000002010000000001fffffffe"),
            (
                vec![1u64, 2].into(),
                "0a0600000002010000000000000000010000000000000002",
            ),
            (
                vec![1i64, -2].into(),
                "0a070000000201000000000000000001fffffffffffffffe",
            ),
            (vec![1.5f32, 2.5].into(), "0a080000000201003fc0000040200000"),
            (
                vec![1.5f64, 2.5].into(),
                "0a090000000201003ff80000000000004004000000000000",
            ),
            (
                vec![Complex32::new(1.0, 2.0), Complex32::new(3.0, -4.0)].into(),
                "0a0a0000000201003f8000004000000040400000c0800000",
            ),
            (
                vec![Complex64::new(1.0, 2.0), Complex64::new(3.0, -4.0)].into(),
                "0a0b0000000201003ff000000000000040000000000000004008000000000000c010000000000000",
            ),
            (Vec::<u8>::new().into(), "0a00000000000100"),
            (Vec::<Complex64>::new().into(), "0a0b000000000100"),
        ];
        for (value, want) in cases {
            assert_eq!(hex(&value), want, "{value:?}");
            let bytes = unhex(want);
            let back = if value == TagValue::Dict(vec![]) {
                TagValue::Null
            } else {
                value.clone()
            };
            assert_eq!(decode(&bytes).unwrap(), (back, bytes.len()), "{want}");
        }
    }

    #[test]
    fn every_variant_round_trips() {
        let values = vec![
            TagValue::Null,
            TagValue::Bool(true),
            TagValue::I64(i64::MIN),
            TagValue::I64(i64::from(i32::MAX)),
            TagValue::U64(u64::MAX),
            TagValue::F64(-0.0),
            TagValue::F64(f64::INFINITY),
            TagValue::Complex(Complex64::new(-1.25, 1e300)),
            TagValue::from(""),
            TagValue::from("grüße ✓"),
            TagValue::pair("k", TagValue::rx_time(1, 0.5)),
            TagValue::list((0..100i64).map(TagValue::from).collect::<Vec<_>>()),
            TagValue::Tuple(vec![TagValue::Null, TagValue::bytes(b"xyz")]),
            TagValue::Vector(vec![TagValue::Vector(vec![]), TagValue::Tuple(vec![])]),
            TagValue::Dict(vec![
                (TagValue::from("a"), TagValue::pair(1u64, 2u64)),
                (TagValue::I64(3), TagValue::dict([("inner", 1.5)])),
            ]),
            TagValue::from(vec![0u8, 255]),
            TagValue::from(vec![i8::MIN, i8::MAX]),
            TagValue::from(vec![u16::MAX]),
            TagValue::from(vec![i16::MIN]),
            TagValue::from(vec![u32::MAX]),
            TagValue::from(vec![i32::MIN]),
            TagValue::from(vec![u64::MAX]),
            TagValue::from(vec![i64::MIN]),
            TagValue::from(vec![f32::MIN_POSITIVE, -0.0]),
            TagValue::from(vec![f64::MAX]),
            TagValue::from(vec![Complex32::new(0.5, -0.5)]),
            TagValue::from(vec![Complex64::new(0.5, -0.5)]),
        ];
        for value in values {
            let bytes = to_bytes(&value).unwrap();
            let (back, used) = decode(&bytes).unwrap();
            assert_eq!(back, value);
            assert_eq!(used, bytes.len());
            // Bit for bit, not just ==: -0.0 stays -0.0.
            assert_eq!(to_bytes(&back).unwrap(), bytes);
        }
        let nan = to_bytes(&TagValue::F64(f64::NAN)).unwrap();
        assert!(matches!(decode(&nan).unwrap().0, TagValue::F64(x) if x.is_nan()));
    }

    #[test]
    fn values_read_one_after_another() {
        let mut bytes = Vec::new();
        encode(&TagValue::from("rx_freq"), &mut bytes).unwrap();
        encode(&TagValue::F64(100e6), &mut bytes).unwrap();
        let (key, used) = decode(&bytes).unwrap();
        assert_eq!(key, TagValue::from("rx_freq"));
        assert_eq!(from_bytes(&bytes[used..]).unwrap(), TagValue::F64(100e6));
        assert!(from_bytes(&bytes).is_err());
    }

    #[test]
    fn int64_bytes_of_a_small_value_read_back() {
        // GNU Radio reads a 0x0d integer of any value; so do we.
        let bytes = unhex("0d0000000000000005");
        assert_eq!(decode(&bytes).unwrap(), (TagValue::I64(5), 9));
    }

    #[test]
    fn padding_of_any_length_is_skipped() {
        let bytes = unhex("0a000000000203aaaaaa0102");
        assert_eq!(from_bytes(&bytes).unwrap(), TagValue::from(vec![1u8, 2]));
        let no_pad = unhex("0a0000000002000102");
        assert_eq!(from_bytes(&no_pad).unwrap(), TagValue::from(vec![1u8, 2]));
    }

    #[test]
    fn a_dict_chained_with_pair_cells_reads_as_gnu_radio_reads_it() {
        let bytes = unhex("0907020001620300000002070702000161030000000106");
        assert_eq!(
            from_bytes(&bytes).unwrap(),
            TagValue::dict([("b", 2i64), ("a", 1i64)])
        );
    }

    #[test]
    fn malformed_input_names_the_byte() {
        let err = |s: &str| decode(&unhex(s)).unwrap_err();
        assert_eq!(
            err(""),
            PmtError::Truncated {
                offset: 0,
                what: "type byte",
                needed: 1,
                available: 0
            }
        );
        assert_eq!(
            err("043ff8"),
            PmtError::Truncated {
                offset: 1,
                what: "double",
                needed: 8,
                available: 2
            }
        );
        assert_eq!(
            err("0c000000020300000001043ff8"),
            PmtError::Truncated {
                offset: 11,
                what: "double",
                needed: 8,
                available: 2
            }
        );
        assert_eq!(
            err("0c000000020300000001043ff8").to_string(),
            "PMT truncated at byte 11: double needs 8 bytes, 2 left"
        );
        assert_eq!(
            err("0700ee"),
            PmtError::UnknownType {
                offset: 2,
                byte: 0xee
            }
        );
        assert_eq!(
            err("0a0c00000000010000"),
            PmtError::UnknownUniformType {
                offset: 1,
                byte: 0x0c
            }
        );
        assert_eq!(
            err("08ffffffff"),
            PmtError::BadLength {
                offset: 1,
                what: "vector",
                len: u64::from(u32::MAX),
                needed: u64::from(u32::MAX),
                available: 0
            }
        );
        assert_eq!(
            err("0a0bffffffff0100"),
            PmtError::BadLength {
                offset: 2,
                what: "uniform vector",
                len: u64::from(u32::MAX),
                needed: u64::from(u32::MAX) * 16,
                available: 0
            }
        );
        assert!(matches!(
            err("0200056162"),
            PmtError::BadLength {
                offset: 1,
                what: "symbol",
                ..
            }
        ));
        assert_eq!(err("020001ff"), PmtError::NotUtf8 { offset: 3 });
        assert!(matches!(err("3b"), PmtError::Unsupported { offset: 0, .. }));
        assert!(matches!(
            err("0906"),
            PmtError::Unsupported { offset: 1, .. }
        ));
        assert!(matches!(
            err("09070600000000"),
            PmtError::Unsupported { offset: 4, .. }
        ));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "100,000-deep and megabyte inputs take minutes under Miri; plain code, no unsafe"
    )]
    fn nesting_is_bounded_both_ways() {
        let deep = (0..MAX_DEPTH).fold(TagValue::Null, |v, _| TagValue::Vector(vec![v]));
        assert!(matches!(
            encode(&deep, &mut Vec::new()),
            Err(PmtError::TooDeep { .. })
        ));
        let mut bytes = Vec::new();
        for _ in 0..100_000 {
            bytes.extend_from_slice(&[0x08, 0, 0, 0, 1]);
        }
        bytes.push(0x06);
        assert_eq!(
            decode(&bytes).unwrap_err(),
            PmtError::TooDeep {
                offset: 5 * MAX_DEPTH,
                max: MAX_DEPTH
            }
        );
        let ok = (1..MAX_DEPTH).fold(TagValue::Null, |v, _| TagValue::Vector(vec![v]));
        assert_eq!(from_bytes(&to_bytes(&ok).unwrap()).unwrap(), ok);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "100,000-deep and megabyte inputs take minutes under Miri; plain code, no unsafe"
    )]
    fn nested_counts_do_not_reserve_memory_they_have_no_bytes_for() {
        // 200 nested vectors, each claiming every byte left as elements, then 1 MiB of Nulls:
        // the innermost vector is whole, its parent runs out. Reserving each claimed count up
        // front would ask for 200 × 1 MiB × size_of::<TagValue>() bytes.
        let nulls = 1 << 20;
        let mut bytes = Vec::new();
        for level in (0..200u32).rev() {
            bytes.push(0x08);
            bytes.extend_from_slice(&(5 * level + nulls).to_be_bytes());
        }
        bytes.resize(bytes.len() + nulls as usize, 0x06);
        assert!(matches!(
            decode(&bytes),
            Err(PmtError::Truncated {
                what: "type byte",
                ..
            })
        ));
    }

    #[test]
    fn too_long_values_are_refused_when_encoding() {
        let long = TagValue::from("x".repeat(70_000));
        assert_eq!(
            to_bytes(&long).unwrap_err(),
            PmtError::TooLong {
                what: "symbol",
                len: 70_000,
                max: 65_535
            }
        );
    }
}
