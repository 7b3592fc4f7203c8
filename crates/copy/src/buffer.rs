//! Buffers the engine may read from or write to, and why they cannot be freed early.
//!
//! An operation takes its buffers **by value**: a `Vec`, a `Box<[T]>`, an `Arc<[T]>` (read
//! only), an [`AlignedBuf`], or anything else implementing [`SrcBuf`] / [`DstBuf`]. The engine
//! keeps them until the operation has finished and hands them back through the
//! [`Ticket`](crate::Ticket). Safe code therefore cannot free, reuse or read a destination
//! while a copy into it runs, and forgetting or dropping a ticket only means that the engine
//! drops the buffers itself once it is done with them (or leaks them, for `mem::forget`):
//! never a use after free.
//!
//! Memory the engine cannot own (a device mapping, a region inside a larger structure) goes
//! through [`RawRegion`], whose constructor is an `unsafe fn` with the contract written down.

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::Arc;

/// A buffer the engine may read.
///
/// # Safety
///
/// Implementors promise that, for as long as the value is alive and the engine holds it (it is
/// moved into the engine, possibly to another thread, and moving it must not move the bytes):
/// `src_ptr()` returns the same pointer every time, valid for reads of `src_len()` bytes, and
/// no one writes those bytes.
pub unsafe trait SrcBuf: Send + 'static {
    /// Start of the readable bytes.
    fn src_ptr(&self) -> *const u8;
    /// Number of readable bytes.
    fn src_len(&self) -> usize;
}

/// A buffer the engine may write (and read).
///
/// # Safety
///
/// Implementors promise that, for as long as the value is alive and the engine holds it (it is
/// moved into the engine, possibly to another thread, and moving it must not move the bytes):
/// `dst_ptr()` returns the same pointer every time, valid for reads and writes of `dst_len()`
/// bytes, any byte pattern written there is a valid value, and no one else reads or writes
/// those bytes.
pub unsafe trait DstBuf: Send + 'static {
    /// Start of the writable bytes.
    fn dst_ptr(&mut self) -> *mut u8;
    /// Number of writable bytes.
    fn dst_len(&self) -> usize;
}

// SAFETY: a Vec's elements live in a heap allocation that does not move when the Vec does and
// that only the owner (now the engine) can reach; Pod items have no interior mutability.
unsafe impl<T: bytemuck::Pod + Send> SrcBuf for Vec<T> {
    fn src_ptr(&self) -> *const u8 {
        self.as_ptr().cast()
    }
    fn src_len(&self) -> usize {
        std::mem::size_of_val(self.as_slice())
    }
}

// SAFETY: as for `SrcBuf`; Pod items accept any byte pattern.
unsafe impl<T: bytemuck::Pod + Send> DstBuf for Vec<T> {
    fn dst_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr().cast()
    }
    fn dst_len(&self) -> usize {
        std::mem::size_of_val(self.as_slice())
    }
}

// SAFETY: a boxed slice is a heap allocation owned by the box; see the `Vec` impls.
unsafe impl<T: bytemuck::Pod + Send> SrcBuf for Box<[T]> {
    fn src_ptr(&self) -> *const u8 {
        self.as_ptr().cast()
    }
    fn src_len(&self) -> usize {
        std::mem::size_of_val(&**self)
    }
}

// SAFETY: a boxed slice is a heap allocation owned by the box; see the `Vec` impls.
unsafe impl<T: bytemuck::Pod + Send> DstBuf for Box<[T]> {
    fn dst_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr().cast()
    }
    fn dst_len(&self) -> usize {
        std::mem::size_of_val(&**self)
    }
}

// SAFETY: the engine's clone keeps the allocation alive; other clones can only read (Arc gives
// no `&mut` while more than one clone exists, and Pod forbids interior mutability).
unsafe impl<T: bytemuck::Pod + Send + Sync> SrcBuf for Arc<[T]> {
    fn src_ptr(&self) -> *const u8 {
        self.as_ptr().cast()
    }
    fn src_len(&self) -> usize {
        std::mem::size_of_val(&**self)
    }
}

// SAFETY: as for `Arc<[T]>`.
unsafe impl<T: bytemuck::Pod + Send + Sync> SrcBuf for Arc<Vec<T>> {
    fn src_ptr(&self) -> *const u8 {
        self.as_ptr().cast()
    }
    fn src_len(&self) -> usize {
        std::mem::size_of_val(self.as_slice())
    }
}

/// A zeroed byte buffer aligned to 64 bytes (a cache line, an AVX-512 vector).
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer owns its allocation exclusively; moving it across threads is moving a Box.
unsafe impl Send for AlignedBuf {}
// SAFETY: `&AlignedBuf` only reads.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    const ALIGN: usize = 64;

    /// `len` zero bytes aligned to 64. Panics if the allocation fails (as `Vec` does).
    pub fn zeroed(len: usize) -> Self {
        if len == 0 {
            return AlignedBuf {
                ptr: NonNull::<[u8; 64]>::dangling().cast(),
                len: 0,
            };
        }
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout);
        };
        AlignedBuf { ptr, len }
    }

    fn layout(len: usize) -> Layout {
        match Layout::from_size_align(len, Self::ALIGN) {
            Ok(l) => l,
            Err(_) => panic!("AlignedBuf of {len} bytes exceeds the address space"),
        }
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `len` initialised (zeroed at allocation) bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: allocated in `zeroed` with this very layout and not freed since.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) };
        }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}

// SAFETY: the allocation is owned by the value and does not move with it.
unsafe impl SrcBuf for AlignedBuf {
    fn src_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
    fn src_len(&self) -> usize {
        self.len
    }
}

// SAFETY: the allocation is owned by the value and does not move with it; bytes accept any value.
unsafe impl DstBuf for AlignedBuf {
    fn dst_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn dst_len(&self) -> usize {
        self.len
    }
}

/// Memory the engine does not own: a pointer and a length, with the caller's promise.
#[derive(Debug)]
pub struct RawRegion {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the constructor's contract makes the region usable from the engine's threads.
unsafe impl Send for RawRegion {}

impl RawRegion {
    /// A region of `len` bytes at `ptr`.
    ///
    /// # Safety
    ///
    /// Until every operation given this region has completed (its ticket reports completion,
    /// or the engine has been dropped; a dropped or forgotten ticket does not end the duty):
    /// * `ptr` is valid for reads of `len` bytes and, if the region is used as a destination,
    ///   for writes; any byte pattern written is a valid value of what lives there;
    /// * no one else writes those bytes, nor reads them if the region is a destination;
    /// * the memory is not freed or unmapped.
    ///
    /// Overlap between a raw source and a raw destination is detected and rejected by address.
    pub unsafe fn new(ptr: *mut u8, len: usize) -> Self {
        RawRegion { ptr, len }
    }
}

// SAFETY: guaranteed by the contract of `RawRegion::new`.
unsafe impl SrcBuf for RawRegion {
    fn src_ptr(&self) -> *const u8 {
        self.ptr
    }
    fn src_len(&self) -> usize {
        self.len
    }
}

// SAFETY: guaranteed by the contract of `RawRegion::new`.
unsafe impl DstBuf for RawRegion {
    fn dst_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
    fn dst_len(&self) -> usize {
        self.len
    }
}
