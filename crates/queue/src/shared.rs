//! The index protocol shared by every ring flavor: counters, reader slots, waiting, tags.
//!
//! Positions are monotonic `u64` item counters, so the full capacity is usable (no slot is kept
//! empty to tell full from empty): the writer may run ahead of the slowest reader by exactly
//! `capacity` items. Position `p` lives at ring index `p % capacity`. A queue created with a
//! stagger starts its counters at `origin` instead of 0 so that its index 0 falls elsewhere in
//! the cache; absolute item indices (for tags) are `position - origin`.

use crate::park::Event;
use crate::tag::{Tag, TagInbox};
use crate::QueueError;
use crate::Wait;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

const SLOT_FREE: u8 = 0;
const SLOT_CLAIMED: u8 = 1;
const SLOT_ACTIVE: u8 = 2;

/// One reader's published position.
#[derive(Debug, Default)]
struct ReaderSlot {
    state: AtomicU8,
    pos: AtomicU64,
    tags: TagInbox,
}

/// State shared by the writer and all readers of one queue.
#[derive(Debug)]
pub(crate) struct Shared {
    capacity: usize,
    origin: u64,
    /// Items committed by the writer (absolute counter).
    written: CachePadded<AtomicU64>,
    finished: AtomicBool,
    slots: Box<[CachePadded<ReaderSlot>]>,
    readers: AtomicUsize,
    /// Readers park here waiting for data.
    data: Event,
    /// The writer parks here waiting for space.
    space: Event,
}

impl Shared {
    pub(crate) fn new(capacity: usize, origin: u64, max_readers: usize) -> Arc<Self> {
        Arc::new(Shared {
            capacity,
            origin,
            written: CachePadded::new(AtomicU64::new(origin)),
            finished: AtomicBool::new(false),
            slots: (0..max_readers.max(1))
                .map(|_| Default::default())
                .collect(),
            readers: AtomicUsize::new(0),
            data: Event::default(),
            space: Event::default(),
        })
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The slowest active reader's position, or None when no reader is left.
    fn min_reader(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter(|s| s.state.load(Ordering::Acquire) == SLOT_ACTIVE)
            .map(|s| s.pos.load(Ordering::Acquire))
            .min()
    }

    /// Registers a reader starting at `pos` with `tags` pending; returns its slot.
    pub(crate) fn attach_reader(&self, pos: u64, tags: Vec<Tag>) -> Result<usize, QueueError> {
        for (i, slot) in self.slots.iter().enumerate() {
            if slot
                .state
                .compare_exchange(SLOT_FREE, SLOT_CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                slot.pos.store(pos, Ordering::Relaxed);
                slot.tags.clear();
                for tag in tags {
                    slot.tags.push(tag);
                }
                slot.state.store(SLOT_ACTIVE, Ordering::Release);
                self.readers.fetch_add(1, Ordering::AcqRel);
                return Ok(i);
            }
        }
        Err(QueueError::TooManyReaders {
            max: self.slots.len(),
        })
    }

    fn detach_reader(&self, slot: usize) {
        self.slots[slot].state.store(SLOT_FREE, Ordering::Release);
        self.readers.fetch_sub(1, Ordering::AcqRel);
        self.space.notify();
    }

    /// Number of attached readers.
    pub(crate) fn reader_count(&self) -> usize {
        self.readers.load(Ordering::Acquire)
    }

    /// Items committed so far, as an absolute item index.
    pub(crate) fn written_items(&self) -> u64 {
        self.written.load(Ordering::Acquire) - self.origin
    }

    pub(crate) fn origin(&self) -> u64 {
        self.origin
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}

/// The writer's side of the protocol: hands out (position, length) runs of free space.
#[derive(Debug)]
pub(crate) struct WriterCore {
    pub(crate) shared: Arc<Shared>,
    /// Next position to write (== committed count; only the writer changes it).
    write: u64,
    /// Cached `min_reader + capacity`: we may write up to here without looking again.
    limit: u64,
    /// Length of the run handed out by the last reserve.
    reserved: usize,
}

impl WriterCore {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        let write = shared.written.load(Ordering::Relaxed);
        WriterCore {
            limit: write + shared.capacity as u64,
            write,
            shared,
            reserved: 0,
        }
    }

    pub(crate) fn position(&self) -> u64 {
        self.write
    }

    /// Shrinks the last reservation to the `len` items a flavor actually handed out.
    pub(crate) fn shrink_reservation(&mut self, len: usize) {
        self.reserved = self.reserved.min(len);
    }

    fn refresh_limit(&mut self) -> Result<(), QueueError> {
        match self.shared.min_reader() {
            Some(min) => {
                self.limit = min + self.shared.capacity as u64;
                Ok(())
            }
            None => Err(QueueError::NoReaders),
        }
    }

    /// Free space of at least `n` items: returns (position, length of the free run).
    pub(crate) fn reserve(
        &mut self,
        n: usize,
        wait: Wait,
    ) -> Result<Option<(u64, usize)>, QueueError> {
        let cap = self.shared.capacity;
        if n > cap {
            return Err(QueueError::TooLarge {
                requested: n,
                capacity: cap,
            });
        }
        // A request for 0 means "any": we still hand out at least one item of space.
        let need = n.max(1) as u64;
        if self.limit - self.write < need {
            self.refresh_limit()?;
            if self.limit - self.write < need {
                let deadline = match wait {
                    Wait::Never => return Ok(None),
                    Wait::Until(d) => Some(d),
                    Wait::Forever => None,
                };
                let shared = &self.shared;
                let write = self.write;
                let ready = shared.space.wait_until(
                    || match shared.min_reader() {
                        Some(min) => min + cap as u64 - write >= need,
                        None => true,
                    },
                    deadline,
                );
                self.refresh_limit()?;
                if !ready || self.limit - self.write < need {
                    return Ok(None);
                }
            }
        }
        self.reserved = (self.limit - self.write) as usize;
        Ok(Some((self.write, self.reserved)))
    }

    /// Publishes `k` items of the last reservation.
    pub(crate) fn commit(&mut self, k: usize) {
        assert!(
            k <= self.reserved,
            "commit({k}) exceeds the {} items reserved",
            self.reserved
        );
        if k == 0 {
            return;
        }
        self.reserved -= k;
        self.write += k as u64;
        self.shared.written.store(self.write, Ordering::Release);
        self.shared.data.notify();
    }

    /// Marks end of stream: readers see the remaining items, then an empty window.
    pub(crate) fn finish(&mut self) {
        self.shared.finished.store(true, Ordering::Release);
        self.shared.data.notify();
    }

    /// Attaches a new reader at the current write position (it sees only items written later).
    pub(crate) fn attach_reader(&self) -> Result<ReaderCore, QueueError> {
        ReaderCore::attach(Arc::clone(&self.shared), self.write, Vec::new())
    }

    /// Delivers `tag` to every attached reader.
    pub(crate) fn add_tag(&self, tag: Tag) {
        for slot in self.shared.slots.iter() {
            if slot.state.load(Ordering::Acquire) == SLOT_ACTIVE {
                slot.tags.push(tag.clone());
            }
        }
    }
}

impl Drop for WriterCore {
    fn drop(&mut self) {
        self.finish();
    }
}

/// One reader's side of the protocol: hands out (position, length) runs of readable items.
#[derive(Debug)]
pub(crate) struct ReaderCore {
    pub(crate) shared: Arc<Shared>,
    slot: usize,
    /// Next position to read (only this reader changes it).
    pos: u64,
    /// Cached committed count of the writer.
    end: u64,
    /// Length of the run handed out by the last window.
    window: usize,
}

impl ReaderCore {
    pub(crate) fn attach(
        shared: Arc<Shared>,
        pos: u64,
        tags: Vec<Tag>,
    ) -> Result<Self, QueueError> {
        let slot = shared.attach_reader(pos, tags)?;
        Ok(ReaderCore {
            end: pos,
            shared,
            slot,
            pos,
            window: 0,
        })
    }

    pub(crate) fn position(&self) -> u64 {
        self.pos
    }

    /// Shrinks the last window to the `len` items a flavor actually handed out.
    pub(crate) fn shrink_window(&mut self, len: usize) {
        self.window = self.window.min(len);
    }

    /// A reader at this reader's position.
    pub(crate) fn duplicate(&self) -> Result<ReaderCore, QueueError> {
        let tags = self.shared.slots[self.slot].tags.snapshot();
        ReaderCore::attach(Arc::clone(&self.shared), self.pos, tags)
    }

    /// At least `n` readable items (fewer only at end of stream): (position, length).
    pub(crate) fn window(
        &mut self,
        n: usize,
        wait: Wait,
    ) -> Result<Option<(u64, usize)>, QueueError> {
        let cap = self.shared.capacity;
        if n > cap {
            return Err(QueueError::TooLarge {
                requested: n,
                capacity: cap,
            });
        }
        // A request for 0 means "any": an empty window must only ever mean end of stream.
        let need = n.max(1) as u64;
        if self.end - self.pos < need {
            self.end = self.shared.written.load(Ordering::Acquire);
            if self.end - self.pos < need && !self.shared.is_finished() {
                let deadline = match wait {
                    Wait::Never => return Ok(None),
                    Wait::Until(d) => Some(d),
                    Wait::Forever => None,
                };
                let shared = &self.shared;
                let pos = self.pos;
                let ready = shared.data.wait_until(
                    || shared.is_finished() || shared.written.load(Ordering::Acquire) - pos >= need,
                    deadline,
                );
                if !ready {
                    return Ok(None);
                }
            }
            // Read `finished` before `written`: the writer sets it after its last commit.
            let finished = self.shared.is_finished();
            self.end = self.shared.written.load(Ordering::Acquire);
            if self.end - self.pos < need && !finished {
                return Ok(None);
            }
        }
        self.window = (self.end - self.pos) as usize;
        Ok(Some((self.pos, self.window)))
    }

    /// Releases `k` items of the last window to the writer.
    pub(crate) fn consume(&mut self, k: usize) {
        assert!(
            k <= self.window,
            "consume({k}) exceeds the {}-item window",
            self.window
        );
        if k == 0 {
            return;
        }
        self.window -= k;
        self.pos += k as u64;
        self.shared.slots[self.slot]
            .pos
            .store(self.pos, Ordering::Release);
        self.shared.space.notify();
    }

    /// Moves this reader's pending tags with absolute index below `end` to `out`.
    pub(crate) fn take_tags(&self, end: u64, out: &mut Vec<Tag>) {
        self.shared.slots[self.slot].tags.take_before(end, out);
    }
}

impl Drop for ReaderCore {
    fn drop(&mut self) {
        self.shared.detach_reader(self.slot);
    }
}
