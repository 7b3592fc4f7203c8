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
    let tile = (256 / b as usize).clamp(16, 64);
    for ty in (0..oh).step_by(tile) {
        let y_end = (ty + tile).min(oh);
        for tx in (0..ow).step_by(tile) {
            let x_end = (tx + tile).min(ow);
            for oy in ty..y_end {
                // SAFETY: for every (ox, oy) of the output, (x, y) above lies inside the
                // source image, so the read is inside the source plane; the write is item ox
                // of output row oy.
                unsafe {
                    let mut from = src.offset(base + oy as isize * step_y + tx as isize * step_x);
                    let mut to = dst.add(oy * ds + tx * b as usize).cast::<T>();
                    for _ in tx..x_end {
                        to.write_unaligned(from.cast::<T>().read_unaligned());
                        from = from.offset(step_x);
                        to = to.add(1);
                    }
                }
            }
        }
    }
}
