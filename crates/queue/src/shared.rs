//! The index protocol shared by every ring flavor: counters, reader slots, waiting, tags.
//!
//! Positions are monotonic `u64` item counters, so the full capacity is usable (no slot is kept
//! empty to tell full from empty): the writer may run ahead of the slowest reader by exactly
//! `capacity` items. Position `p` lives at ring index `p % capacity`. A queue created with a
//! stagger starts its counters at `origin` instead of 0 so that its index 0 falls elsewhere in
//! the cache; absolute item indices (for tags) are `position - origin`.
//!
//! Three rules keep it sound and lossless:
//!
//! * **Registration is visible to the writer's scan.** A reader can be cloned at a position
//!   behind the other readers. The writer's scan for the slowest reader reads the slots one by
//!   one, so it could miss a clone that registered mid-scan and then read its origin reader's
//!   *later* position, overrunning the clone. Every registration therefore bumps `attaches`
//!   after activating its slot, and the scan repeats until `attaches` is unchanged across it:
//!   a scan that saw the origin's later position (a Release store made after the clone
//!   registered) sees the bumped counter too.
//! * **A reader attached from another thread** (`ReaderPoint`) at an index behind the writer
//!   checks after registering that some reader is still at or before that index; a SeqCst
//!   fence after its registration and one in the writer's scan make that check and the scan
//!   agree (the store-buffering pattern: loom's model
//!   `a_reader_attached_at_an_index_is_never_overrun`).
//! * **Tags before items.** A writer that tags items it commits puts the tags in every reader's
//!   inbox before the Release store that publishes the items, so a reader that sees an item can
//!   always take its tags. (The runtime defers publication to the end of a node's `work` with
//!   [`WriterCore::commit_unpublished`] for this reason.)
//! * **Tags and registration are serialised** by one lock, so a reader cloned while a tag is
//!   published gets the tag exactly once, either from the snapshot or from the writer.
//! * **The writer announces how far it may write** (`write_bound`) before it writes there, so
//!   that a lossy reader (`lossy.rs`), which the writer never waits for, can tell after copying
//!   items out whether they were intact (see `contract.rs`, "Lossy readers").

use crate::park::Event;
use crate::sync::{
    fence, lock, Arc, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Mutex, Ordering,
};
use crate::tag::{Tag, TagInbox};
use crate::QueueError;
use crate::Wait;
use crossbeam_utils::CachePadded;

const SLOT_FREE: u8 = 0;
const SLOT_ACTIVE: u8 = 2;

/// One reader's published position.
#[derive(Debug)]
struct ReaderSlot {
    state: AtomicU8,
    pos: AtomicU64,
    tags: TagInbox,
}

impl ReaderSlot {
    fn new() -> Self {
        ReaderSlot {
            state: AtomicU8::new(SLOT_FREE),
            pos: AtomicU64::new(0),
            tags: TagInbox::default(),
        }
    }
}

/// State shared by the writer and all readers of one queue.
#[derive(Debug)]
pub(crate) struct Shared {
    name: Box<str>,
    capacity: usize,
    origin: u64,
    /// Items committed by the writer (absolute counter).
    written: CachePadded<AtomicU64>,
    /// The writer writes no position at or above this before it has raised it (stored before
    /// a Release fence that precedes the writes; see `contract.rs`, "Lossy readers").
    write_bound: CachePadded<AtomicU64>,
    /// Lossy readers attached now (they hold no slot: the writer never waits for them).
    lossy_readers: AtomicUsize,
    finished: AtomicBool,
    slots: Box<[CachePadded<ReaderSlot>]>,
    readers: AtomicUsize,
    /// Bumped after every reader registration (see the module docs).
    attaches: AtomicU64,
    /// Serialises reader registration with tag publication.
    registry: Mutex<()>,
    /// Readers park here waiting for data.
    data: Event,
    /// The writer parks here waiting for space.
    space: Event,
}

impl Shared {
    pub(crate) fn new(name: &str, capacity: usize, origin: u64, max_readers: usize) -> Arc<Self> {
        Arc::new(Shared {
            name: name.into(),
            capacity,
            origin,
            written: CachePadded::new(AtomicU64::new(origin)),
            write_bound: CachePadded::new(AtomicU64::new(origin + capacity as u64)),
            lossy_readers: AtomicUsize::new(0),
            finished: AtomicBool::new(false),
            slots: (0..max_readers.max(1))
                .map(|_| CachePadded::new(ReaderSlot::new()))
                .collect(),
            readers: AtomicUsize::new(0),
            attaches: AtomicU64::new(0),
            registry: Mutex::new(()),
            data: Event::default(),
            space: Event::default(),
        })
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The queue's name, for messages.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The slowest active reader's position, or None when no reader is left. Repeats the scan
    /// if a reader registered during it (see the module docs).
    fn min_reader(&self) -> Option<u64> {
        loop {
            let before = self.attaches.load(Ordering::Acquire);
            let min = self
                .slots
                .iter()
                .filter(|s| s.state.load(Ordering::Acquire) == SLOT_ACTIVE)
                .map(|s| s.pos.load(Ordering::Acquire))
                .min();
            // Pairs with the fence of a reader attached from another thread (`attach_once`):
            // if that reader saw another reader still at or before its position, this scan
            // either saw that position too or sees the registration's bump below.
            fence(Ordering::SeqCst);
            if self.attaches.load(Ordering::Acquire) == before {
                return min;
            }
        }
    }

    /// Registers a reader starting at `pos` with `tags` pending; returns its slot. The caller
    /// holds the registry lock.
    fn attach_reader_locked(&self, pos: u64, tags: Vec<Tag>) -> Result<usize, QueueError> {
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.state.load(Ordering::Acquire) != SLOT_FREE {
                continue;
            }
            // Only registration (under the lock we hold) turns a free slot active, so this
            // slot stays ours; its reader is gone, so nothing else touches its fields.
            slot.pos.store(pos, Ordering::Relaxed);
            slot.tags.replace(tags);
            slot.state.store(SLOT_ACTIVE, Ordering::Release);
            self.attaches.fetch_add(1, Ordering::Release);
            self.readers.fetch_add(1, Ordering::AcqRel);
            return Ok(i);
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

    /// The writer's committed count (absolute counter, Acquire).
    pub(crate) fn written_position(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// The writer's announced bound, read after a lossy reader copied items out. A
    /// read-don't-modify-write (Boehm, "Can seqlocks get along with programming language
    /// memory models?", 2012): its Release half keeps the copy before it, and an RMW reads the
    /// latest bound in modification order, not merely one the fences allow (loom found a stale
    /// bound through a plain fence-and-load).
    pub(crate) fn write_bound_after_copy(&self) -> u64 {
        self.write_bound.fetch_add(0, Ordering::AcqRel)
    }

    /// Counts a lossy reader in (`+1`) or out (`-1`).
    pub(crate) fn count_lossy(&self, attach: bool) {
        if attach {
            self.lossy_readers.fetch_add(1, Ordering::AcqRel);
        } else {
            self.lossy_readers.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Items committed but not yet consumed by the slowest lossless reader (0 without one).
    pub(crate) fn fill(&self) -> usize {
        let written = self.written.load(Ordering::Acquire);
        self.min_reader()
            .map_or(0, |min| written.saturating_sub(min) as usize)
    }

    /// Lossy readers attached now.
    pub(crate) fn lossy_count(&self) -> usize {
        self.lossy_readers.load(Ordering::Acquire)
    }
}

/// The writer's side of the protocol: hands out (position, length) runs of free space.
///
/// States: *open* (reserve, commit, tag) until [`WriterCore::finish`], then *finished*: any
/// further reserve or commit is a programming error and panics with the queue's name.
#[derive(Debug)]
pub(crate) struct WriterCore {
    pub(crate) shared: Arc<Shared>,
    /// Next position to write (committed count, published or not; only the writer changes it).
    write: u64,
    /// The position last made visible to readers (`shared.written`).
    published: u64,
    /// Cached `min_reader + capacity`: we may write up to here without looking again.
    limit: u64,
    /// The largest `limit` announced in `shared.write_bound` so far.
    announced: u64,
    /// Length of the reservation handed out by the last reserve (0 once committed).
    reserved: usize,
    finished: bool,
}

impl WriterCore {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        let write = shared.written.load(Ordering::Relaxed);
        WriterCore {
            limit: write + shared.capacity as u64,
            announced: write + shared.capacity as u64,
            write,
            published: write,
            shared,
            reserved: 0,
            finished: false,
        }
    }

    pub(crate) fn position(&self) -> u64 {
        self.write
    }

    fn assert_open(&self, what: &str) {
        assert!(
            !self.finished,
            "queue '{}': {what} after finish (the writer ended the stream)",
            self.shared.name()
        );
    }

    /// Shrinks the last reservation to the `len` items a flavor actually handed out.
    pub(crate) fn shrink_reservation(&mut self, len: usize) {
        self.reserved = self.reserved.min(len);
    }

    fn refresh_limit(&mut self) -> Result<(), QueueError> {
        match self.shared.min_reader() {
            Some(min) => {
                self.limit = min + self.shared.capacity as u64;
                // A clone registered behind may lower the limit; the bound only ever rises.
                if self.limit > self.announced {
                    self.announced = self.limit;
                    self.shared
                        .write_bound
                        .store(self.announced, Ordering::Relaxed);
                    // Orders the store before every later write of ring memory (the writer
                    // half of the seqlock pairing; a compiler barrier only on x86-64).
                    fence(Ordering::Release);
                }
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
        self.assert_open("reserve");
        self.reserved = 0;
        let cap = self.shared.capacity;
        if n > cap {
            return Err(QueueError::TooLarge {
                requested: n,
                capacity: cap,
            });
        }
        // Once every reader has gone, no write can matter: say so now rather than after the
        // space cached in `limit` (up to a whole queue) has been filled for nobody. The count
        // changes only on attach and detach, so this load stays a cache hit.
        if self.shared.readers.load(Ordering::Relaxed) == 0 {
            return Err(QueueError::NoReaders);
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
                // Readers cannot see staged items: publish them before waiting on readers.
                self.publish();
                let shared = &self.shared;
                let write = self.write;
                // Woken by the consume that takes a reader to this position (or by a detach).
                let level = (write + need).saturating_sub(cap as u64);
                let ready = shared.space.wait_until(
                    || match shared.min_reader() {
                        Some(min) => min + cap as u64 - write >= need,
                        None => true,
                    },
                    deadline,
                    level,
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

    /// Ends the last reservation, keeping its first `k` items, without showing them to readers
    /// yet: [`WriterCore::publish`] does that.
    pub(crate) fn commit_unpublished(&mut self, k: usize) {
        self.assert_open("commit");
        assert!(
            k <= self.reserved,
            "queue '{}': commit({k}) exceeds the {} items reserved (a reservation is committed once)",
            self.shared.name(),
            self.reserved
        );
        self.reserved = 0;
        self.write += k as u64;
    }

    /// Ends the last reservation and publishes its first `k` items.
    pub(crate) fn commit(&mut self, k: usize) {
        self.commit_unpublished(k);
        self.publish();
    }

    /// Makes every committed item visible to readers and wakes any that wait.
    pub(crate) fn publish(&mut self) {
        if self.published == self.write {
            return;
        }
        self.published = self.write;
        self.shared.written.store(self.write, Ordering::Release);
        self.shared.data.notify_level(self.write);
    }

    /// Marks end of stream: readers see the remaining items, then an empty window. Idempotent.
    pub(crate) fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.publish();
        self.reserved = 0;
        self.finished = true;
        self.shared.finished.store(true, Ordering::Release);
        self.shared.data.notify();
    }

    /// Attaches a new reader at the published position (it sees every item published later).
    pub(crate) fn attach_reader(&self) -> Result<ReaderCore, QueueError> {
        let _registry = lock(&self.shared.registry);
        ReaderCore::attach_locked(Arc::clone(&self.shared), self.published, Vec::new())
    }

    /// Delivers `tag` to every attached reader. Call before publishing the tagged item.
    pub(crate) fn add_tag(&self, tag: Tag) {
        let _registry = lock(&self.shared.registry);
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
///
/// States: *attached* until [`ReaderCore::detach`] (or drop), then *detached*: the writer no
/// longer waits for it, and any further window or consume panics with the queue's name.
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
    attached: bool,
    /// Where this reader's stream stops short of the writer's, when someone set one.
    limit: Option<Arc<ReadLimit>>,
}

/// A position, set from any thread, beyond which one reader sees nothing: a *hold* (the items
/// there are "not yet" readable) or an *end* (the stream ends there for this reader). The
/// runtime uses it to detach a branch after what it has read so far (an end) and to stop a node
/// at the item where its replacement takes over (a hold). See [`crate::Reader::limit`].
#[derive(Debug)]
pub struct ReadLimit {
    shared: Arc<Shared>,
    /// Absolute counter (origin included); `u64::MAX` when there is no limit.
    at: AtomicU64,
    ends: AtomicBool,
}

impl ReadLimit {
    /// The reader sees no item at or after absolute index `index`, and waits there as for a
    /// writer that has not written yet (until [`ReadLimit::lift`]).
    pub fn hold_at(&self, index: u64) {
        self.set(index, false);
    }

    /// The reader's stream ends at absolute index `index`: it reads the items before it, then
    /// an empty window, as at the end of a stream. An index the reader has already passed ends
    /// it where it is.
    pub fn end_at(&self, index: u64) {
        self.set(index, true);
    }

    /// Removes the limit: the reader sees everything the writer has published.
    pub fn lift(&self) {
        self.at.store(u64::MAX, Ordering::Release);
        self.shared.data.notify();
    }

    /// Absolute index of the next item the writer will publish (the "now" of the stream).
    pub fn items_written(&self) -> u64 {
        self.shared.written_items()
    }

    fn set(&self, index: u64, ends: bool) {
        self.ends.store(ends, Ordering::Release);
        let at = index.saturating_add(self.shared.origin);
        self.at.store(at, Ordering::Release);
        self.shared.data.notify();
    }

    /// The limit (absolute counter) and whether it is an end; `None` when there is none.
    fn get(&self) -> Option<(u64, bool)> {
        let at = self.at.load(Ordering::Acquire);
        (at != u64::MAX).then(|| (at, self.ends.load(Ordering::Acquire)))
    }
}

impl ReaderCore {
    /// The first reader of a new queue.
    pub(crate) fn attach_first(shared: Arc<Shared>) -> Result<Self, QueueError> {
        let origin = shared.origin;
        let _registry = lock(&shared.registry);
        ReaderCore::attach_locked(Arc::clone(&shared), origin, Vec::new())
    }

    fn attach_locked(shared: Arc<Shared>, pos: u64, tags: Vec<Tag>) -> Result<Self, QueueError> {
        let slot = shared.attach_reader_locked(pos, tags)?;
        Ok(ReaderCore {
            end: pos,
            shared,
            slot,
            pos,
            window: 0,
            attached: true,
            limit: None,
        })
    }

    /// A reader attached from any thread while the writer runs: at the published position
    /// (`at` = `None`, it sees every item published later) or at absolute item index `at`,
    /// which must still be held by the ring for another reader (no item there may have been
    /// overwritten). It receives the tags pending for its items at the slowest reader.
    pub(crate) fn attach_at(shared: Arc<Shared>, at: Option<u64>) -> Result<Self, QueueError> {
        // "Now" moves while we register: if the readers overtook the position we took, take
        // the new one. Each retry means the stream moved on, so a few always suffice.
        const RETRIES_FOR_NOW: usize = 1000;
        let mut tries = 0;
        loop {
            match ReaderCore::attach_once(Arc::clone(&shared), at) {
                Err(QueueError::NotInRing { .. }) if at.is_none() && tries < RETRIES_FOR_NOW => {
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    fn attach_once(shared: Arc<Shared>, at: Option<u64>) -> Result<Self, QueueError> {
        let _registry = lock(&shared.registry);
        let origin = shared.origin;
        let written = shared.written.load(Ordering::Acquire);
        let pos = at.map_or(written, |i| i.saturating_add(origin));
        // What the ring holds by the time we answer (readers and writer move meanwhile).
        let not_in_ring = |oldest: u64| {
            let newest = shared.written.load(Ordering::Acquire).max(oldest);
            QueueError::NotInRing {
                asked: pos - origin,
                oldest: oldest - origin,
                newest: newest - origin,
            }
        };
        if pos > written {
            return Err(not_in_ring(shared.min_reader().unwrap_or(written)));
        }
        // Tags go into inboxes before their items are published and leave them only when read,
        // so the slowest reader still holds every tag at or after a position it has not passed.
        let slowest = shared
            .slots
            .iter()
            .filter(|s| s.state.load(Ordering::Acquire) == SLOT_ACTIVE)
            .min_by_key(|s| s.pos.load(Ordering::Acquire));
        let tags: Vec<Tag> = slowest.map_or_else(Vec::new, |s| {
            let first = pos - origin;
            s.tags
                .snapshot()
                .into_iter()
                .filter(|t| t.index >= first)
                .collect()
        });
        let core = ReaderCore::attach_locked(Arc::clone(&shared), pos, tags)?;
        // Now registered, the writer waits for us. Were the items from `pos` on intact until
        // then? They were if another reader is still at or before `pos`: positions only rise,
        // so it was there before we registered, and the writer never passes a reader by more
        // than the ring (the argument of the module docs for clones). With no reader left,
        // nothing is written any more.
        //
        // Unlike a clone, which its origin's own thread registers before moving on, the other
        // reader here runs on another thread: registration (a store) then a look at its
        // position (a load) against its consume (a store) and the writer's scan (loads) is
        // the store-buffering pattern, which acquire/release alone allows to go wrong (loom
        // found the writer overrunning the new reader). A SeqCst fence here and one in the
        // writer's scan (`min_reader`) order the two: if we see the other reader at or before
        // `pos`, the writer's scan sees our registration or that position.
        fence(Ordering::SeqCst);
        let oldest = shared
            .slots
            .iter()
            .enumerate()
            .filter(|&(i, s)| i != core.slot && s.state.load(Ordering::Acquire) == SLOT_ACTIVE)
            .map(|(_, s)| s.pos.load(Ordering::Acquire))
            .min();
        match oldest {
            Some(o) if o <= pos => Ok(core),
            None if pos == written => Ok(core),
            other => Err(not_in_ring(other.unwrap_or(written))),
        }
    }

    /// This reader's limit handle (created on first use): see [`ReadLimit`].
    pub(crate) fn limit(&mut self) -> Arc<ReadLimit> {
        let shared = &self.shared;
        Arc::clone(self.limit.get_or_insert_with(|| {
            Arc::new(ReadLimit {
                shared: Arc::clone(shared),
                at: AtomicU64::new(u64::MAX),
                ends: AtomicBool::new(false),
            })
        }))
    }

    /// What this reader may see now: the end of its readable items (absolute counter, never
    /// below its position) and whether its stream has ended there.
    fn visible(&self) -> (u64, bool) {
        // Read `finished` before `written`: the writer sets it after its last commit.
        let finished = self.shared.is_finished();
        let written = self.shared.written.load(Ordering::Acquire);
        match self.limit.as_ref().and_then(|l| l.get()) {
            None => (written, finished),
            Some((at, ends)) => {
                let end = written.min(at).max(self.pos);
                let ended = if at <= written { ends } else { finished };
                (end, ended)
            }
        }
    }

    pub(crate) fn position(&self) -> u64 {
        self.pos
    }

    fn assert_attached(&self, what: &str) {
        assert!(
            self.attached,
            "queue '{}': {what} on a detached reader",
            self.shared.name()
        );
    }

    /// Shrinks the last window to the `len` items a flavor actually handed out.
    pub(crate) fn shrink_window(&mut self, len: usize) {
        self.window = self.window.min(len);
    }

    /// A reader at this reader's position with this reader's pending tags.
    pub(crate) fn duplicate(&self) -> Result<ReaderCore, QueueError> {
        self.assert_attached("try_clone");
        let _registry = lock(&self.shared.registry);
        let tags = self.shared.slots[self.slot].tags.snapshot();
        ReaderCore::attach_locked(Arc::clone(&self.shared), self.pos, tags)
    }

    /// At least `n` readable items (fewer only at end of stream): (position, length).
    pub(crate) fn window(
        &mut self,
        n: usize,
        wait: Wait,
    ) -> Result<Option<(u64, usize)>, QueueError> {
        self.assert_attached("window");
        self.window = 0;
        let cap = self.shared.capacity;
        if n > cap {
            return Err(QueueError::TooLarge {
                requested: n,
                capacity: cap,
            });
        }
        // A request for 0 means "any": an empty window must only ever mean end of stream.
        let need = n.max(1) as u64;
        // A limited reader looks again every time: its limit may have moved below `end`.
        if self.end - self.pos < need || self.limit.is_some() {
            let (end, ended) = self.visible();
            self.end = end;
            if self.end - self.pos < need && !ended {
                let deadline = match wait {
                    Wait::Never => return Ok(None),
                    Wait::Until(d) => Some(d),
                    Wait::Forever => None,
                };
                let pos = self.pos;
                // Woken by the publish that reaches this count, by finish, or by a new limit.
                let ready = self.shared.data.wait_until(
                    || {
                        let (end, ended) = self.visible();
                        ended || end - pos >= need
                    },
                    deadline,
                    pos + need,
                );
                if !ready {
                    return Ok(None);
                }
            }
            let (end, ended) = self.visible();
            self.end = end;
            if self.end - self.pos < need && !ended {
                return Ok(None);
            }
        }
        let available = self.end - self.pos;
        assert!(
            available <= cap as u64,
            "queue '{}': {available} items readable in a ring of {cap} (index protocol broken)",
            self.shared.name()
        );
        self.window = available as usize;
        Ok(Some((self.pos, self.window)))
    }

    /// Releases `k` items of the last window to the writer.
    pub(crate) fn consume(&mut self, k: usize) {
        self.assert_attached("consume");
        assert!(
            k <= self.window,
            "queue '{}': consume({k}) exceeds the {}-item window",
            self.shared.name(),
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
        self.shared.space.notify_level(self.pos);
    }

    /// Moves this reader's pending tags with absolute index below `end` to `out`.
    pub(crate) fn take_tags(&self, end: u64, out: &mut Vec<Tag>) {
        if self.attached {
            self.shared.slots[self.slot].tags.take_before(end, out);
        }
    }

    /// Leaves the queue: the writer stops waiting for this reader. Idempotent.
    pub(crate) fn detach(&mut self) {
        if self.attached {
            self.attached = false;
            self.window = 0;
            self.shared.detach_reader(self.slot);
        }
    }
}

impl Drop for ReaderCore {
    fn drop(&mut self) {
        self.detach();
    }
}
