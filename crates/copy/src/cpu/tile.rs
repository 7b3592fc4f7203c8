//! 2-D copies and rotations. A 2-D copy moves row by row with the contiguous strategy chosen
//! for the whole operation; a rotation walks the output in cache-blocked tiles, reading each
//! source column run of a tile while its cache lines are still resident.

use std::ptr;

use super::copy::copy_with;
use super::Strategy;
use crate::op::{Transform, Turn};

/// Copies `rows` rows of `row` bytes.
///
/// # Safety
///
/// The source rows (`src + r * ss`, `row` bytes) are valid for reads, the destination rows
/// for writes, and no destination row overlaps any source row or another destination row.
pub(crate) unsafe fn copy_2d(
    s: &Strategy,
    dst: *mut u8,
    ds: usize,
    src: *const u8,
    ss: usize,
    row: usize,
    rows: usize,
) {
    if row == 0 || rows == 0 {
        return;
    }
    if ss == row && ds == row {
        // SAFETY: dense planes are one contiguous range each.
        return unsafe { super::copy::copy(s, dst, src, row * rows) };
    }
    let method = s.method(row, row.saturating_mul(rows));
    for r in 0..rows {
        // SAFETY: row r of each plane, valid by the caller's contract.
        unsafe { copy_with(s, method, dst.add(r * ds), src.add(r * ss), row) };
    }
    if method == super::copy::Method::NonTemporal {
        // The per-row copies fenced already; nothing more to order.
    }
}

/// Shape of a rotation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rotation {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) src_stride: usize,
    pub(crate) dst_stride: usize,
    pub(crate) transform: Transform,
}

/// Rotates items of type `T` (read and written unaligned).
///
/// # Safety
///
/// The source plane (`height` rows of `width` items, `src_stride` apart) is valid for reads,
/// the output plane (rows of the output width, `dst_stride` apart) for writes, and they do
/// not overlap.
pub(crate) unsafe fn rotate<T: Copy>(s: &Strategy, src: *const u8, dst: *mut u8, r: &Rotation) {
    let (w, h) = (r.width as isize, r.height as isize);
    if w == 0 || h == 0 {
        return;
    }
    let b = std::mem::size_of::<T>() as isize;
    let ss = r.src_stride as isize;
    // Source coordinates as affine functions of the output coordinates (ox, oy):
    // x = x0 + xdx·ox + xdy·oy, y = y0 + ydx·ox + ydy·oy.
    let (mut x0, mut xdx, mut xdy, y0, ydx, ydy) = match r.transform.turn {
        Turn::R0 => (0, 1, 0, 0, 0, 1),
        Turn::R90 => (0, 0, 1, h - 1, -1, 0),
        Turn::R180 => (w - 1, -1, 0, h - 1, 0, -1),
        Turn::R270 => (w - 1, 0, -1, 0, 1, 0),
    };
    if r.transform.mirror {
        x0 = w - 1 - x0;
        xdx = -xdx;
        xdy = -xdy;
    }
    let (ow, oh) = if r.transform.swaps_axes() {
        (r.height, r.width)
    } else {
        (r.width, r.height)
    };
    let base = x0 * b + y0 * ss;
    let step_x = xdx * b + ydx * ss;
    let step_y = xdy * b + ydy * ss;
    let ds = r.dst_stride;
    if step_x == b {
        // Rows stay rows, in order: a 2-D copy.
        // SAFETY: output row oy reads source row `base + oy·step_y`, all inside the plane.
        unsafe {
            let first = src.offset(base);
            if step_y >= 0 {
                copy_2d(s, dst, ds, first, step_y as usize, ow * b as usize, oh);
            } else {
                for oy in 0..oh {
                    let from = first.offset(oy as isize * step_y);
                    ptr::copy_nonoverlapping(from, dst.add(oy * ds), ow * b as usize);
                }
            }
        }
        return;
    }
    let geo = Geometry {
        src,
        dst,
        base,
        step_x,
        step_y,
        ds,
    };
    if !r.transform.swaps_axes() {
        // Rows reversed (180°, or a mirror): row by row, items in reverse.
        // SAFETY: the caller's contract covers the whole output.
        unsafe { geo.scalar::<T>(0..ow, 0..oh) };
        return;
    }
    // Axis-swapping turns: blocks of B × B items, B items being one cache line, staged
    // through a dense buffer so that every source and destination line is read or written
    // whole while it is in L1, whatever the strides (power-of-two strides would otherwise make
    // a column walk thrash one cache set).
    let bsz = (64 / b as usize).max(4);
    let (fw, fh) = (ow / bsz * bsz, oh / bsz * bsz);
    // In a swapping turn the source column follows oy (x = x0 + xdy·oy) and the source row
    // follows ox (y = y0 + ydx·ox).
    let mut buf = [0u8; 64 * 64];
    for oy0 in (0..fh).step_by(bsz) {
        let xs = if xdy > 0 {
            x0 + xdy * oy0 as isize
        } else {
            x0 + xdy * (oy0 + bsz - 1) as isize
        };
        for ox0 in (0..fw).step_by(bsz) {
            let ys = if ydx > 0 {
                y0 + ydx * ox0 as isize
            } else {
                y0 + ydx * (ox0 + bsz - 1) as isize
            };
            // SAFETY: the block's source rows ys..ys+B, columns xs..xs+B, and output rows
            // oy0..oy0+B, items ox0..ox0+B, lie inside the planes (they are images of
            // in-range output coordinates); `buf` holds B·B items of at most 64·64 bytes.
            unsafe {
                let bp = buf.as_mut_ptr();
                for rr in 0..bsz {
                    let from = src.offset((ys + rr as isize) * ss + xs * b);
                    ptr::copy_nonoverlapping(from, bp.add(rr * bsz * b as usize), bsz * b as usize);
                }
                let bt = bp.cast::<T>().cast_const();
                for j in 0..bsz {
                    let c = if xdy > 0 { j } else { bsz - 1 - j };
                    let to = dst.add((oy0 + j) * ds + ox0 * b as usize).cast::<T>();
                    for i in 0..bsz {
                        let rr = if ydx > 0 { i } else { bsz - 1 - i };
                        to.add(i)
                            .write_unaligned(bt.add(rr * bsz + c).read_unaligned());
                    }
                }
            }
        }
    }
    // SAFETY: the right and bottom strips left by whole blocks, inside the output.
    unsafe {
        geo.scalar::<T>(fw..ow, 0..oh);
        geo.scalar::<T>(0..fw, fh..oh);
    }
}

/// Where a rotation reads and writes, for the item-by-item path.
struct Geometry {
    src: *const u8,
    dst: *mut u8,
    base: isize,
    step_x: isize,
    step_y: isize,
    ds: usize,
}

impl Geometry {
    /// Output items `xr` of output rows `yr`, one at a time.
    ///
    /// # Safety
    ///
    /// The ranges lie inside the output image of a rotation validated against the planes.
    unsafe fn scalar<T: Copy>(&self, xr: std::ops::Range<usize>, yr: std::ops::Range<usize>) {
        let b = std::mem::size_of::<T>();
        for oy in yr {
            // SAFETY: every (ox, oy) in range maps to a source item inside the source plane
            // and an output item inside the destination plane.
            unsafe {
                let mut from = self.src.offset(
                    self.base + oy as isize * self.step_y + xr.start as isize * self.step_x,
                );
                let mut to = self.dst.add(oy * self.ds + xr.start * b).cast::<T>();
                for _ in xr.clone() {
                    to.write_unaligned(from.cast::<T>().read_unaligned());
                    from = from.offset(self.step_x);
                    to = to.add(1);
                }
            }
        }
    }
}
