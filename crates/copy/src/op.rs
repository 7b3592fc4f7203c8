//! Operation descriptions and their validation: bounds, strides and overlap are checked here,
//! before anything is written.
//!
//! All offsets, lengths and strides are in **bytes**. An empty operation (zero length, zero
//! rows) is valid and does nothing.

use crate::error::{CopyError, Side};

/// A fill pattern of 1 to 16 bytes, repeated from the first destination byte on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pattern {
    bytes: [u8; 16],
    len: u8,
}

impl Pattern {
    /// A pattern from `bytes` (1 to 16 of them).
    pub fn new(bytes: &[u8]) -> Result<Self, CopyError> {
        if bytes.is_empty() || bytes.len() > 16 {
            return Err(CopyError::BadPattern(bytes.len()));
        }
        let mut b = [0u8; 16];
        b[..bytes.len()].copy_from_slice(bytes);
        Ok(Pattern {
            bytes: b,
            len: bytes.len() as u8,
        })
    }

    /// A one-byte pattern (memset).
    pub fn byte(b: u8) -> Self {
        Pattern {
            bytes: [b; 16],
            len: 1,
        }
    }

    /// The pattern's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Size of the items of rotations and keyed copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemSize {
    /// 1 byte (u8).
    B1,
    /// 2 bytes (u16, i16).
    B2,
    /// 4 bytes (u32, f32).
    B4,
    /// 8 bytes (u64, c32).
    B8,
    /// 16 bytes (c64).
    B16,
}

impl ItemSize {
    /// The item size for `bytes`, if it is 1, 2, 4, 8 or 16.
    pub fn from_bytes(bytes: usize) -> Result<Self, CopyError> {
        Ok(match bytes {
            1 => ItemSize::B1,
            2 => ItemSize::B2,
            4 => ItemSize::B4,
            8 => ItemSize::B8,
            16 => ItemSize::B16,
            other => return Err(CopyError::BadItemSize(other)),
        })
    }

    /// Bytes per item.
    pub fn bytes(self) -> usize {
        match self {
            ItemSize::B1 => 1,
            ItemSize::B2 => 2,
            ItemSize::B4 => 4,
            ItemSize::B8 => 8,
            ItemSize::B16 => 16,
        }
    }
}

/// Clockwise quarter turns of a rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// No turn.
    R0,
    /// 90° clockwise.
    R90,
    /// 180°.
    R180,
    /// 270° clockwise (90° counter-clockwise).
    R270,
}

/// A rotation, optionally after mirroring each source row (left-right).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transform {
    /// The turn.
    pub turn: Turn,
    /// Mirror each source row before turning.
    pub mirror: bool,
}

impl Transform {
    /// The matrix transpose: `out[x][y] = in[y][x]` (a mirror then 270°).
    pub const TRANSPOSE: Transform = Transform {
        turn: Turn::R270,
        mirror: true,
    };

    /// A turn without mirroring.
    pub const fn turn(turn: Turn) -> Self {
        Transform {
            turn,
            mirror: false,
        }
    }

    /// Whether the output swaps width and height.
    pub fn swaps_axes(self) -> bool {
        matches!(self.turn, Turn::R90 | Turn::R270)
    }
}

/// A 2-D block: `rows` rows of `row_bytes` bytes, `stride` bytes apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plane {
    /// Offset of the first row, in bytes.
    pub offset: usize,
    /// Distance between row starts, in bytes.
    pub stride: usize,
}

/// A contiguous piece of a scatter-gather list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Offset in bytes.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
}

/// One operation of the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Copies `len` bytes from `src` to `dst`.
    Copy {
        /// Source offset.
        src: usize,
        /// Destination offset.
        dst: usize,
        /// Bytes.
        len: usize,
    },
    /// Writes `pattern` repeatedly over `len` bytes at `dst` (the last copy may be cut short).
    Fill {
        /// Destination offset.
        dst: usize,
        /// Bytes.
        len: usize,
        /// The pattern.
        pattern: Pattern,
    },
    /// Copies `rows` rows of `row_bytes` bytes between strided planes.
    Copy2d {
        /// Source plane.
        src: Plane,
        /// Destination plane.
        dst: Plane,
        /// Bytes per row.
        row_bytes: usize,
        /// Rows.
        rows: usize,
    },
    /// Rotates (and optionally mirrors) an image of `width` × `height` items; the output is
    /// `height` × `width` for 90° and 270°.
    Rotate {
        /// Source plane.
        src: Plane,
        /// Destination plane.
        dst: Plane,
        /// Items per source row.
        width: usize,
        /// Source rows.
        height: usize,
        /// Item size.
        item: ItemSize,
        /// The rotation.
        transform: Transform,
    },
    /// Copies `len` bytes of items, except items equal to `key`, which are not written (the
    /// seed's transparent copy).
    KeyedCopy {
        /// Source offset.
        src: usize,
        /// Destination offset.
        dst: usize,
        /// Bytes (a whole number of items).
        len: usize,
        /// Item size.
        item: ItemSize,
        /// The key (its first `item` bytes are used).
        key: [u8; 16],
    },
    /// Gathers the source segments, in order, and scatters the bytes over the destination
    /// segments, in order.
    Sg {
        /// Source segments.
        src: Vec<Segment>,
        /// Destination segments.
        dst: Vec<Segment>,
    },
}

/// What kind of operation, for the break-even table and statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// [`Op::Copy`].
    Copy,
    /// [`Op::Fill`].
    Fill,
    /// [`Op::Copy2d`].
    Copy2d,
    /// [`Op::Rotate`].
    Rotate,
    /// [`Op::KeyedCopy`].
    KeyedCopy,
    /// [`Op::Sg`].
    Sg,
}

impl OpKind {
    /// Every kind, in a fixed order.
    pub const ALL: [OpKind; 6] = [
        OpKind::Copy,
        OpKind::Fill,
        OpKind::Copy2d,
        OpKind::Rotate,
        OpKind::KeyedCopy,
        OpKind::Sg,
    ];

    /// Lower-case name (`copy`, `fill`, `copy_2d`, `rotate`, `keyed_copy`, `sg`).
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Copy => "copy",
            OpKind::Fill => "fill",
            OpKind::Copy2d => "copy_2d",
            OpKind::Rotate => "rotate",
            OpKind::KeyedCopy => "keyed_copy",
            OpKind::Sg => "sg",
        }
    }
}

/// A byte range `[start, end)` relative to a buffer.
type Span = (usize, usize);

fn span(side: Side, offset: usize, len: usize) -> Result<Span, CopyError> {
    let end = offset
        .checked_add(len)
        .ok_or(CopyError::Overflow { side })?;
    Ok((offset, end))
}

/// The bounding span of a strided plane of `rows` rows of `row` bytes.
fn plane_span(side: Side, p: Plane, row: usize, rows: usize) -> Result<Span, CopyError> {
    if row == 0 || rows == 0 {
        return Ok((p.offset, p.offset));
    }
    let last = (rows - 1)
        .checked_mul(p.stride)
        .and_then(|v| v.checked_add(row))
        .ok_or(CopyError::Overflow { side })?;
    span(side, p.offset, last)
}

fn check_bounds(side: Side, s: Span, len: usize) -> Result<(), CopyError> {
    if s.1 > len {
        return Err(CopyError::OutOfBounds {
            side,
            end: s.1,
            len,
        });
    }
    Ok(())
}

/// Whether two non-empty absolute address ranges intersect.
fn intersects(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < a.1 && b.0 < b.1 && a.0 < b.1 && b.0 < a.1
}

fn abs(base: usize, s: Span) -> (usize, usize) {
    (base.wrapping_add(s.0), base.wrapping_add(s.1))
}

/// Checks spans read and written against their buffers: every byte inside its buffer, no
/// written range overlapping another or any range read. Allocates only for several writes.
fn check_spans(reads: &[Span], writes: &[Span], ext: Extents) -> Result<(), CopyError> {
    let src_len = ext.src.map_or(0, |s| s.1);
    let src_base = ext.src.map_or(0, |s| s.0);
    let (dst_base, dst_len) = ext.dst;
    for r in reads {
        check_bounds(Side::Source, *r, src_len)?;
    }
    for w in writes {
        check_bounds(Side::Destination, *w, dst_len)?;
    }
    // Written ranges must not overlap each other (scatter lists), nor any range read.
    let one: [(usize, usize); 1];
    let many: Vec<(usize, usize)>;
    let w_abs: &[(usize, usize)] = if let [w] = writes {
        one = [abs(dst_base, *w)];
        if one[0].0 < one[0].1 {
            &one
        } else {
            &[]
        }
    } else {
        let mut all: Vec<(usize, usize)> = writes
            .iter()
            .map(|w| abs(dst_base, *w))
            .filter(|w| w.0 < w.1)
            .collect();
        all.sort_unstable();
        if all.windows(2).any(|p| intersects(p[0], p[1])) {
            return Err(CopyError::Overlap);
        }
        many = all;
        &many
    };
    for r in reads {
        let r = abs(src_base, *r);
        // The first written range that ends after r starts; it is the only candidate
        // (sorted, disjoint ranges).
        let i = w_abs.partition_point(|w| w.1 <= r.0);
        if w_abs.get(i).is_some_and(|w| intersects(*w, r)) {
            return Err(CopyError::Overlap);
        }
    }
    Ok(())
}

/// Where an operation's bytes live, for validation: the source and destination base addresses
/// and lengths (no source for a fill).
#[derive(Debug, Clone, Copy)]
pub struct Extents {
    /// Source address and length, if the operation has a source.
    pub src: Option<(usize, usize)>,
    /// Destination address and length.
    pub dst: (usize, usize),
}

impl Op {
    /// The kind of operation.
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Copy { .. } => OpKind::Copy,
            Op::Fill { .. } => OpKind::Fill,
            Op::Copy2d { .. } => OpKind::Copy2d,
            Op::Rotate { .. } => OpKind::Rotate,
            Op::KeyedCopy { .. } => OpKind::KeyedCopy,
            Op::Sg { .. } => OpKind::Sg,
        }
    }

    /// Whether the operation reads a source buffer.
    pub fn has_source(&self) -> bool {
        !matches!(self, Op::Fill { .. })
    }

    /// Bytes written (the size used by the break-even table).
    pub fn bytes(&self) -> usize {
        match self {
            Op::Copy { len, .. } | Op::Fill { len, .. } | Op::KeyedCopy { len, .. } => *len,
            Op::Copy2d {
                row_bytes, rows, ..
            } => row_bytes.saturating_mul(*rows),
            Op::Rotate {
                width,
                height,
                item,
                ..
            } => width.saturating_mul(*height).saturating_mul(item.bytes()),
            Op::Sg { dst, .. } => dst.iter().map(|s| s.len).fold(0, usize::saturating_add),
        }
    }

    /// Checks the operation against its buffers: every byte inside its buffer, no destination
    /// rows overlapping each other, and nothing written that is read (compared by address, so
    /// raw regions and operations within one buffer are covered). 2-D footprints are compared
    /// by their bounding ranges, which is conservative.
    pub fn validate(&self, ext: Extents) -> Result<(), CopyError> {
        // Every operation but a scatter-gather list reads at most one span and writes one:
        // those are checked without allocating (a copy on a real-time path validates too).
        let (read, write): (Option<Span>, Span) = match self {
            Op::Copy { src, dst, len } => (
                Some(span(Side::Source, *src, *len)?),
                span(Side::Destination, *dst, *len)?,
            ),
            Op::Fill { dst, len, pattern } => {
                if pattern.as_bytes().is_empty() {
                    return Err(CopyError::BadPattern(0));
                }
                (None, span(Side::Destination, *dst, *len)?)
            }
            Op::Copy2d {
                src,
                dst,
                row_bytes,
                rows,
            } => {
                if *rows > 1 && *row_bytes > 0 && dst.stride < *row_bytes {
                    return Err(CopyError::StrideTooSmall {
                        stride: dst.stride,
                        row: *row_bytes,
                    });
                }
                (
                    Some(plane_span(Side::Source, *src, *row_bytes, *rows)?),
                    plane_span(Side::Destination, *dst, *row_bytes, *rows)?,
                )
            }
            Op::Rotate {
                src,
                dst,
                width,
                height,
                item,
                transform,
            } => {
                let b = item.bytes();
                let src_row = width
                    .checked_mul(b)
                    .ok_or(CopyError::Overflow { side: Side::Source })?;
                let (ow, oh) = if transform.swaps_axes() {
                    (*height, *width)
                } else {
                    (*width, *height)
                };
                let dst_row = ow.checked_mul(b).ok_or(CopyError::Overflow {
                    side: Side::Destination,
                })?;
                if oh > 1 && dst_row > 0 && dst.stride < dst_row {
                    return Err(CopyError::StrideTooSmall {
                        stride: dst.stride,
                        row: dst_row,
                    });
                }
                (
                    Some(plane_span(Side::Source, *src, src_row, *height)?),
                    plane_span(Side::Destination, *dst, dst_row, oh)?,
                )
            }
            Op::KeyedCopy {
                src,
                dst,
                len,
                item,
                ..
            } => {
                if len % item.bytes() != 0 {
                    return Err(CopyError::NotWholeItems {
                        len: *len,
                        item: item.bytes(),
                    });
                }
                (
                    Some(span(Side::Source, *src, *len)?),
                    span(Side::Destination, *dst, *len)?,
                )
            }
            Op::Sg { src, dst } => {
                let total = |segs: &[Segment], side| {
                    segs.iter().try_fold(0usize, |a, s| {
                        a.checked_add(s.len).ok_or(CopyError::Overflow { side })
                    })
                };
                let (ts, td) = (total(src, Side::Source)?, total(dst, Side::Destination)?);
                if ts != td {
                    return Err(CopyError::LengthMismatch { src: ts, dst: td });
                }
                let r = src
                    .iter()
                    .map(|s| span(Side::Source, s.offset, s.len))
                    .collect::<Result<Vec<_>, _>>()?;
                let w = dst
                    .iter()
                    .map(|s| span(Side::Destination, s.offset, s.len))
                    .collect::<Result<Vec<_>, _>>()?;
                return check_spans(&r, &w, ext);
            }
        };
        check_spans(read.as_slice(), std::slice::from_ref(&write), ext)
    }
}
