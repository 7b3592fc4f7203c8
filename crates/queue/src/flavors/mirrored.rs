//! The mirrored ring: every window and reservation is a slice straight into the double mapping.

use crate::mirror::MirrorMap;
use crate::shared::{ReaderCore, WriterCore};
use crate::sync::Arc;
use crate::{Item, QueueError, RingReader, RingWriter, Wait};
use std::marker::PhantomData;

/// Writer of a mirrored ring.
#[derive(Debug)]
pub(crate) struct MirroredWriter<T> {
    pub(crate) core: WriterCore,
    map: Arc<MirrorMap>,
    _items: PhantomData<T>,
}

/// Reader of a mirrored ring.
#[derive(Debug)]
pub(crate) struct MirroredReader<T> {
    pub(crate) core: ReaderCore,
    map: Arc<MirrorMap>,
    _items: PhantomData<T>,
}

/// Pointer to the item at absolute position `pos`, in the first view of the mapping.
fn item_ptr<T: Item>(map: &MirrorMap, pos: u64, capacity: usize) -> *mut T {
    let index = (pos % capacity as u64) as usize;
    // SAFETY (of the arithmetic): index < capacity, and the first view holds capacity items.
    map.base().cast::<T>().wrapping_add(index)
}

impl<T: Item> MirroredWriter<T> {
    pub(crate) fn new(core: WriterCore, map: Arc<MirrorMap>) -> Self {
        MirroredWriter {
            core,
            map,
            _items: PhantomData,
        }
    }

    /// Ends the last reservation keeping `k` items, visible to readers only after `publish`.
    pub(crate) fn commit_unpublished(&mut self, k: usize) {
        self.core.commit_unpublished(k);
    }

    /// The addresses of the double mapping: every reservation lies inside.
    pub(crate) fn memory_guard(&self) -> crate::queue::MemoryGuard {
        crate::queue::MemoryGuard::new(Arc::clone(&self.map))
    }

    pub(crate) fn memory(&self) -> std::ops::Range<usize> {
        self.map.address_range()
    }

    /// The first view's base and what keeps the mapping alive, for a tap.
    pub(crate) fn tap_memory(&self) -> (*const u8, Box<dyn std::any::Any + Send + Sync>) {
        (
            self.map.base().cast_const(),
            Box::new(Arc::clone(&self.map)),
        )
    }

    /// The mapping, for readers attached from other threads.
    pub(crate) fn map(&self) -> Arc<MirrorMap> {
        Arc::clone(&self.map)
    }

    pub(crate) fn attach_reader(&self) -> Result<MirroredReader<T>, QueueError> {
        Ok(MirroredReader::new(
            self.core.attach_reader()?,
            Arc::clone(&self.map),
        ))
    }
}

impl<T: Item> MirroredReader<T> {
    pub(crate) fn new(core: ReaderCore, map: Arc<MirrorMap>) -> Self {
        MirroredReader {
            core,
            map,
            _items: PhantomData,
        }
    }

    /// The mapping, for readers attached from other threads.
    pub(crate) fn map(&self) -> Arc<MirrorMap> {
        Arc::clone(&self.map)
    }

    pub(crate) fn duplicate(&self) -> Result<Self, QueueError> {
        Ok(MirroredReader::new(
            self.core.duplicate()?,
            Arc::clone(&self.map),
        ))
    }

    /// The addresses of the double mapping: every window lies inside.
    pub(crate) fn memory_guard(&self) -> crate::queue::MemoryGuard {
        crate::queue::MemoryGuard::new(Arc::clone(&self.map))
    }

    pub(crate) fn memory(&self) -> std::ops::Range<usize> {
        self.map.address_range()
    }
}

impl<T: Item> RingWriter<T> for MirroredWriter<T> {
    fn capacity(&self) -> usize {
        self.core.shared.capacity()
    }

    fn reserve_with(&mut self, n: usize, wait: Wait) -> Result<Option<&mut [T]>, QueueError> {
        let Some((pos, len)) = self.core.reserve(n, wait)? else {
            return Ok(None);
        };
        let ptr = item_ptr::<T>(&self.map, pos, self.capacity());
        // SAFETY: the run [pos, pos + len) is free: every reader has consumed the items that
        // share its memory (len ≤ slowest reader + capacity − pos, see WriterCore::reserve), and
        // no reader looks past the committed count, which is `pos`. It starts in the first view
        // and len ≤ capacity, so it ends inside the second view: one contiguous, initialised
        // (memfd pages start zeroed; T is Pod) range. The &mut borrow of self keeps the writer
        // from handing out a second slice while this one lives.
        Ok(Some(unsafe { std::slice::from_raw_parts_mut(ptr, len) }))
    }

    fn commit(&mut self, k: usize) {
        self.core.commit(k);
    }

    fn finish(&mut self) {
        self.core.finish();
    }
}

impl<T: Item> RingReader<T> for MirroredReader<T> {
    fn capacity(&self) -> usize {
        self.core.shared.capacity()
    }

    fn window_with(&mut self, n: usize, wait: Wait) -> Result<Option<&[T]>, QueueError> {
        let Some((pos, len)) = self.core.window(n, wait)? else {
            return Ok(None);
        };
        let ptr = item_ptr::<T>(&self.map, pos, self.capacity());
        // SAFETY: [pos, pos + len) is committed (len ≤ written − pos, read with Acquire after
        // the writer's Release store) and not yet consumed by this reader, so the writer will
        // not touch it until we consume. It is contiguous in the double mapping (len ≤
        // capacity) and initialised. Other readers only read it too.
        Ok(Some(unsafe { std::slice::from_raw_parts(ptr, len) }))
    }

    fn consume(&mut self, k: usize) {
        self.core.consume(k);
    }
}
