//! Keyed (transparent) copy: items equal to the key are skipped, leaving the destination's
//! item in place, as the seed's DMA engine does for sprites and overlays.

/// Copies `n` items of type `T`, except those equal to `key`.
///
/// # Safety
///
/// `src` is valid for reads and `dst` for writes of `n` items of `T` (any alignment); the
/// ranges do not overlap; any bit pattern is a valid `T`.
pub(crate) unsafe fn keyed_copy<T: Copy + PartialEq>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    key: T,
) {
    let (src, dst) = (src.cast::<T>(), dst.cast::<T>());
    for i in 0..n {
        // SAFETY: item i of each range, by the caller's contract.
        unsafe {
            let v = src.add(i).read_unaligned();
            if v != key {
                dst.add(i).write_unaligned(v);
            }
        }
    }
}
