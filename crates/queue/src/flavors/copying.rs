//! The copying ring: a plain array in which a window or reservation that wraps is staged in a
//! scratch buffer (copied out, or copied in on commit). It has the mirrored ring's API and serves
//! as the "manual copy" baseline and as a fallback where the mirror trick is unavailable.

use crate::shared::{ReaderCore, WriterCore};
use crate::sync::Arc;
use crate::{Item, QueueError, RingReader, RingWriter, Wait};

/// The ring's storage, shared by the writer and every reader.
#[derive(Debug)]
pub(crate) struct Storage<T> {
    ptr: *mut T,
    capacity: usize,
}

// SAFETY: the storage is plain memory of Pod items; who may touch which items is governed by
// the index protocol in `shared`, exactly as for the mirrored map.
unsafe impl<T: Send> Send for Storage<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Storage<T> {}

impl<T: Item> Storage<T> {
    pub(crate) fn new(capacity: usize) -> Arc<Self> {
        let boxed: Box<[T]> = bytemuck::zeroed_slice_box(capacity);
        Arc::new(Storage {
            ptr: Box::into_raw(boxed).cast(),
            capacity,
        })
    }

    /// The addresses of the array.
    fn memory(&self) -> std::ops::Range<usize> {
        let start = self.ptr as usize;
        start..start + self.capacity * std::mem::size_of::<T>()
    }

    /// The two pieces (up to the array end, then from its start) of the run [pos, pos + len).
    fn pieces(&self, pos: u64, len: usize) -> (usize, usize, usize) {
        let start = (pos % self.capacity as u64) as usize;
        let first = len.min(self.capacity - start);
        (start, first, len - first)
    }
}

impl<T> Drop for Storage<T> {
    fn drop(&mut self) {
        // SAFETY: ptr/capacity came from Box::into_raw of a boxed slice of this length, and
        // this is the last owner.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.capacity)) });
    }
}

/// Writer of a copying ring.
#[derive(Debug)]
pub(crate) struct CopyingWriter<T> {
    pub(crate) core: WriterCore,
    storage: Arc<Storage<T>>,
    scratch: Vec<T>,
    /// Position of a reservation handed out in `scratch`, to copy in on commit.
    staged: Option<u64>,
}

/// Reader of a copying ring.
#[derive(Debug)]
pub(crate) struct CopyingReader<T> {
    pub(crate) core: ReaderCore,
    storage: Arc<Storage<T>>,
    scratch: Vec<T>,
}

impl<T: Item> CopyingWriter<T> {
    pub(crate) fn new(core: WriterCore, storage: Arc<Storage<T>>) -> Self {
        let scratch = vec![T::zeroed(); storage.capacity];
        CopyingWriter {
            core,
            storage,
            scratch,
            staged: None,
        }
    }

    /// Ends the last reservation keeping `k` items (copied in from the scratch buffer if the
    /// reservation was staged there), visible to readers only after the core publishes.
    pub(crate) fn commit_unpublished(&mut self, k: usize) {
        let staged = self.staged.take();
        // Checks `k` against the reservation (and ends it) before anything is copied.
        self.core.commit_unpublished(k);
        if let Some(pos) = staged {
            let (start, first, second) = self.storage.pieces(pos, k);
            // SAFETY: k ≤ the staged reservation (checked just above), which lies in free space
            // at `pos`, so both pieces are inside the array (first + second = k ≤ capacity) and
            // no reader looks at them until they are published. The scratch buffer holds at
            // least k items.
            unsafe {
                let dst = self.storage.ptr;
                std::ptr::copy_nonoverlapping(self.scratch.as_ptr(), dst.add(start), first);
                std::ptr::copy_nonoverlapping(self.scratch.as_ptr().add(first), dst, second);
            }
        }
    }

    /// The addresses of the ring's array (a reservation that wraps is staged in `scratch`).
    pub(crate) fn memory_guard(&self) -> crate::queue::MemoryGuard {
        crate::queue::MemoryGuard::new(Arc::clone(&self.storage))
    }

    pub(crate) fn memory(&self) -> std::ops::Range<usize> {
        self.storage.memory()
    }

    /// The array's base and what keeps it alive, for a tap.
    pub(crate) fn tap_memory(&self) -> (*const u8, Box<dyn std::any::Any + Send + Sync>) {
        (
            self.storage.ptr.cast_const().cast(),
            Box::new(Arc::clone(&self.storage)),
        )
    }

    /// The array, for readers attached from other threads.
    pub(crate) fn storage(&self) -> Arc<Storage<T>> {
        Arc::clone(&self.storage)
    }

    pub(crate) fn attach_reader(&self) -> Result<CopyingReader<T>, QueueError> {
        Ok(CopyingReader::new(
            self.core.attach_reader()?,
            Arc::clone(&self.storage),
        ))
    }
}

impl<T: Item> CopyingReader<T> {
    pub(crate) fn new(core: ReaderCore, storage: Arc<Storage<T>>) -> Self {
        let scratch = vec![T::zeroed(); storage.capacity];
        CopyingReader {
            core,
            storage,
            scratch,
        }
    }

    /// The array, for readers attached from other threads.
    pub(crate) fn storage(&self) -> Arc<Storage<T>> {
        Arc::clone(&self.storage)
    }

    pub(crate) fn duplicate(&self) -> Result<Self, QueueError> {
        Ok(CopyingReader::new(
            self.core.duplicate()?,
            Arc::clone(&self.storage),
        ))
    }

    /// The addresses of the ring's array (a window that wraps is staged in `scratch` instead).
    pub(crate) fn memory_guard(&self) -> crate::queue::MemoryGuard {
        crate::queue::MemoryGuard::new(Arc::clone(&self.storage))
    }

    pub(crate) fn memory(&self) -> std::ops::Range<usize> {
        self.storage.memory()
    }
}

impl<T: Item> RingWriter<T> for CopyingWriter<T> {
    fn capacity(&self) -> usize {
        self.storage.capacity
    }

    fn reserve_with(&mut self, n: usize, wait: Wait) -> Result<Option<&mut [T]>, QueueError> {
        self.staged = None;
        let Some((pos, len)) = self.core.reserve(n, wait)? else {
            return Ok(None);
        };
        let (start, first, _) = self.storage.pieces(pos, len);
        if first >= n {
            self.core.shrink_reservation(first);
            // SAFETY: [start, start + first) lies inside the array and is free space (see
            // MirroredWriter::reserve_with for why no reader touches it); &mut self prevents a
            // second live slice.
            return Ok(Some(unsafe {
                std::slice::from_raw_parts_mut(self.storage.ptr.add(start), first)
            }));
        }
        self.staged = Some(pos);
        Ok(Some(&mut self.scratch[..len]))
    }

    fn commit(&mut self, k: usize) {
        self.commit_unpublished(k);
        self.core.publish();
    }

    fn finish(&mut self) {
        self.core.finish();
    }
}

impl<T: Item> RingReader<T> for CopyingReader<T> {
    fn capacity(&self) -> usize {
        self.storage.capacity
    }

    fn window_with(&mut self, n: usize, wait: Wait) -> Result<Option<&[T]>, QueueError> {
        let Some((pos, len)) = self.core.window(n, wait)? else {
            return Ok(None);
        };
        let (start, first, second) = self.storage.pieces(pos, len);
        if second == 0 || first >= n {
            self.core.shrink_window(first);
            // SAFETY: [start, start + first) is inside the array, committed and not consumed
            // by this reader, so the writer leaves it alone while the slice lives.
            return Ok(Some(unsafe {
                std::slice::from_raw_parts(self.storage.ptr.add(start), first)
            }));
        }
        // SAFETY: both pieces are inside the array and committed (see above); the scratch
        // buffer holds capacity ≥ len items and is ours alone.
        unsafe {
            let src = self.storage.ptr;
            let dst = self.scratch.as_mut_ptr();
            std::ptr::copy_nonoverlapping(src.add(start), dst, first);
            std::ptr::copy_nonoverlapping(src, dst.add(first), second);
        }
        Ok(Some(&self.scratch[..len]))
    }

    fn consume(&mut self, k: usize) {
        self.core.consume(k);
    }
}
