//! The public queue: options, `channel`, and the [`Writer`]/[`Reader`] handles that dispatch to
//! a flavor.

use crate::flavors::copying::{CopyingReader, CopyingWriter, Storage};
use crate::flavors::mirrored::{MirroredReader, MirroredWriter};
use crate::mirror::{round_capacity, MapOptions, MirrorMap};
use crate::shared::{ReadLimit, ReaderCore, Shared, WriterCore};
use crate::sync::Arc;
use crate::{Item, QueueError, RingReader, RingWriter, Tag, Wait};

/// Which ring implementation backs a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flavor {
    /// The double-mapped zero-copy ring (the default).
    #[default]
    Mirrored,
    /// A plain array that copies wrapped windows through a scratch buffer (the baseline).
    Copying,
}

/// How to build a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueOptions {
    /// The ring implementation.
    pub flavor: Flavor,
    /// Back the ring with 2 MiB huge pages (fewer TLB misses on big rings); creation fails with
    /// [`QueueError::NoHugePages`] if the system has none.
    pub huge_pages: bool,
    /// Start the ring's positions this many bytes in (rounded down to whole items), so that
    /// queues created alike do not put their windows in the same cache sets.
    pub stagger_bytes: usize,
    /// Keep the mapping out of child processes (`MADV_DONTFORK`).
    pub dont_fork: bool,
    /// The most readers that may be attached at once.
    pub max_readers: usize,
    /// A name for messages: a misuse of the queue (a commit larger than the reservation, a
    /// commit after finish) panics naming it. The runtime names each queue after its edge.
    pub name: Option<String>,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            flavor: Flavor::Mirrored,
            huge_pages: false,
            stagger_bytes: 0,
            dont_fork: false,
            max_readers: 16,
            name: None,
        }
    }
}

/// Creates a queue of at least `min_capacity` items (rounded up, see the crate docs) and returns
/// its writer and its first reader.
pub fn channel<T: Item>(
    min_capacity: usize,
    opts: &QueueOptions,
) -> Result<(Writer<T>, Reader<T>), QueueError> {
    let item = std::mem::size_of::<T>();
    if item == 0 {
        return Err(QueueError::ZeroSizedItem);
    }
    if min_capacity == 0 {
        return Err(QueueError::ZeroCapacity);
    }
    let too_large = || QueueError::Os {
        call: "capacity",
        message: format!("{min_capacity} items of {item} bytes do not fit in memory"),
    };
    let (bytes, capacity) =
        round_capacity(min_capacity, item, opts.huge_pages).ok_or_else(too_large)?;
    let origin = (opts.stagger_bytes / item % capacity) as u64;
    let name = opts.name.as_deref().unwrap_or("unnamed");
    let shared = Shared::new(name, capacity, origin, opts.max_readers);
    let writer_core = WriterCore::new(Arc::clone(&shared));
    let reader_core = ReaderCore::attach_first(shared)?;
    Ok(match opts.flavor {
        Flavor::Mirrored => {
            let map = Arc::new(MirrorMap::new(
                bytes,
                MapOptions {
                    huge_pages: opts.huge_pages,
                    dont_fork: opts.dont_fork,
                    align: std::mem::align_of::<T>(),
                },
            )?);
            (
                Writer(WriterFlavor::Mirrored(MirroredWriter::new(
                    writer_core,
                    Arc::clone(&map),
                ))),
                Reader(ReaderFlavor::Mirrored(MirroredReader::new(
                    reader_core,
                    map,
                ))),
            )
        }
        Flavor::Copying => {
            let storage = Storage::new(capacity);
            (
                Writer(WriterFlavor::Copying(CopyingWriter::new(
                    writer_core,
                    Arc::clone(&storage),
                ))),
                Reader(ReaderFlavor::Copying(CopyingReader::new(
                    reader_core,
                    storage,
                ))),
            )
        }
    })
}

#[derive(Debug)]
enum WriterFlavor<T> {
    Mirrored(MirroredWriter<T>),
    Copying(CopyingWriter<T>),
}

#[derive(Debug)]
enum ReaderFlavor<T> {
    Mirrored(MirroredReader<T>),
    Copying(CopyingReader<T>),
}

/// Keeps a queue's memory mapped while held (see [`Writer::memory_guard`]): a reference to
/// the mapping, opaque, granting no access.
pub struct MemoryGuard(#[allow(dead_code)] Box<dyn std::any::Any + Send + Sync>);

impl MemoryGuard {
    pub(crate) fn new(keep: impl std::any::Any + Send + Sync) -> Self {
        MemoryGuard(Box::new(keep))
    }
}

impl std::fmt::Debug for MemoryGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryGuard")
    }
}

/// A handle to a running queue that attaches lossless readers from any thread: a new branch of
/// a running graph reads through one. Unlike a [`TapPoint`](crate::TapPoint)'s lossy readers,
/// the writer waits for these as for any reader. Cheap to clone.
pub struct ReaderPoint<T>(PointFlavor<T>);

enum PointFlavor<T> {
    Mirrored(Arc<Shared>, Arc<MirrorMap>),
    Copying(Arc<Shared>, Arc<Storage<T>>),
}

impl<T> Clone for ReaderPoint<T> {
    fn clone(&self) -> Self {
        ReaderPoint(match &self.0 {
            PointFlavor::Mirrored(s, m) => PointFlavor::Mirrored(Arc::clone(s), Arc::clone(m)),
            PointFlavor::Copying(s, m) => PointFlavor::Copying(Arc::clone(s), Arc::clone(m)),
        })
    }
}

impl<T> std::fmt::Debug for ReaderPoint<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReaderPoint({})", self.shared().name())
    }
}

impl<T> ReaderPoint<T> {
    fn shared(&self) -> &Arc<Shared> {
        match &self.0 {
            PointFlavor::Mirrored(s, _) | PointFlavor::Copying(s, _) => s,
        }
    }
}

impl<T: Item> ReaderPoint<T> {
    /// Attaches a reader at the items published from now on (`at` = `None`) or at absolute
    /// item index `at`. An index is refused with [`QueueError::NotInRing`] unless another
    /// reader still holds it in the ring (not yet consumed) and the writer has published it.
    /// The reader receives the tags of its items that are still pending at the slowest reader.
    pub fn attach(&self, at: Option<u64>) -> Result<Reader<T>, QueueError> {
        let core = ReaderCore::attach_at(Arc::clone(self.shared()), at)?;
        Ok(Reader(match &self.0 {
            PointFlavor::Mirrored(_, map) => {
                ReaderFlavor::Mirrored(MirroredReader::new(core, Arc::clone(map)))
            }
            PointFlavor::Copying(_, storage) => {
                ReaderFlavor::Copying(CopyingReader::new(core, Arc::clone(storage)))
            }
        }))
    }

    /// Absolute index of the next item the writer will publish.
    pub fn items_written(&self) -> u64 {
        self.shared().written_items()
    }

    /// Readers attached now (lossless ones; taps are not counted).
    pub fn reader_count(&self) -> usize {
        self.shared().reader_count()
    }

    /// Whether the writer has ended the stream.
    pub fn is_finished(&self) -> bool {
        self.shared().is_finished()
    }
}

/// The writing end of a queue. Dropping it ends the stream.
#[derive(Debug)]
pub struct Writer<T>(WriterFlavor<T>);

/// A reading end of a queue. Dropping it detaches the reader; the writer no longer waits for it.
#[derive(Debug)]
pub struct Reader<T>(ReaderFlavor<T>);

impl<T: Item> Writer<T> {
    fn core(&self) -> &WriterCore {
        match &self.0 {
            WriterFlavor::Mirrored(w) => &w.core,
            WriterFlavor::Copying(w) => &w.core,
        }
    }

    /// Ends the last reservation keeping its first `k` items, like [`RingWriter::commit`], but
    /// leaves them invisible to readers until [`Writer::publish`]. A runtime that attaches tags
    /// to a node's output after the node's `work` uses this, so that tags always reach readers
    /// before their items. Panics if `k` exceeds the reservation or the stream has finished.
    pub fn commit_unpublished(&mut self, k: usize) {
        match &mut self.0 {
            WriterFlavor::Mirrored(w) => w.commit_unpublished(k),
            WriterFlavor::Copying(w) => w.commit_unpublished(k),
        }
    }

    /// Makes every committed item visible to readers (a no-op when none is pending).
    pub fn publish(&mut self) {
        self.core_mut().publish();
    }

    /// The queue's name (see [`QueueOptions::name`]).
    pub fn name(&self) -> &str {
        self.core().shared.name()
    }

    /// Which ring implementation backs the queue.
    pub fn flavor(&self) -> Flavor {
        match &self.0 {
            WriterFlavor::Mirrored(_) => Flavor::Mirrored,
            WriterFlavor::Copying(_) => Flavor::Copying,
        }
    }

    fn core_mut(&mut self) -> &mut WriterCore {
        match &mut self.0 {
            WriterFlavor::Mirrored(w) => &mut w.core,
            WriterFlavor::Copying(w) => &mut w.core,
        }
    }

    /// Attaches a new reader that sees every item published from now on.
    pub fn add_reader(&self) -> Result<Reader<T>, QueueError> {
        Ok(Reader(match &self.0 {
            WriterFlavor::Mirrored(w) => ReaderFlavor::Mirrored(w.attach_reader()?),
            WriterFlavor::Copying(w) => ReaderFlavor::Copying(w.attach_reader()?),
        }))
    }

    /// Absolute index of the next item to be committed (items committed so far).
    pub fn items_written(&self) -> u64 {
        self.core().position() - self.core().shared.origin()
    }

    /// A handle that attaches lossless readers to this queue from any thread while the writer
    /// runs (see [`ReaderPoint`]).
    pub fn reader_point(&self) -> ReaderPoint<T> {
        let shared = Arc::clone(&self.core().shared);
        match &self.0 {
            WriterFlavor::Mirrored(w) => ReaderPoint(PointFlavor::Mirrored(shared, w.map())),
            WriterFlavor::Copying(w) => ReaderPoint(PointFlavor::Copying(shared, w.storage())),
        }
    }

    /// Number of readers attached now.
    pub fn reader_count(&self) -> usize {
        self.core().shared.reader_count()
    }

    /// The address range of the ring's memory; see [`Reader::ring_memory`] (with
    /// [`Flavor::Mirrored`] every reservation lies inside it).
    pub fn ring_memory(&self) -> std::ops::Range<usize> {
        match &self.0 {
            WriterFlavor::Mirrored(w) => w.memory(),
            WriterFlavor::Copying(w) => w.memory(),
        }
    }

    /// A handle that keeps the ring's memory mapped for as long as it is held, even after
    /// the writer and every reader are gone: for a foreign view of a window (a Python array)
    /// that may outlive the queue's ends. It grants no access; what the memory holds after
    /// the window was consumed is whatever the writer put there since.
    pub fn memory_guard(&self) -> MemoryGuard {
        match &self.0 {
            WriterFlavor::Mirrored(w) => w.memory_guard(),
            WriterFlavor::Copying(w) => w.memory_guard(),
        }
    }

    /// A handle to this queue that attaches [`LossyReader`](crate::LossyReader)s from any
    /// thread while the writer runs (the writer never waits for them).
    pub fn tap_point(&self) -> crate::TapPoint<T> {
        let shared = Arc::clone(&self.core().shared);
        match &self.0 {
            WriterFlavor::Mirrored(w) => {
                let (base, keep) = w.tap_memory();
                crate::TapPoint::new(shared, base, true, keep)
            }
            WriterFlavor::Copying(w) => {
                let (base, keep) = w.tap_memory();
                crate::TapPoint::new(shared, base, false, keep)
            }
        }
    }

    /// Attaches `tag` to the stream: every reader attached now receives it (see
    /// [`Reader::take_tags`]). Tag an item before publishing it, so that a reader which sees the
    /// item can always take its tags.
    pub fn add_tag(&self, tag: Tag) {
        self.core().add_tag(tag);
    }
}

impl<T: Item> RingWriter<T> for Writer<T> {
    fn capacity(&self) -> usize {
        self.core().shared.capacity()
    }

    #[inline]
    fn reserve_with(&mut self, n: usize, wait: Wait) -> Result<Option<&mut [T]>, QueueError> {
        match &mut self.0 {
            WriterFlavor::Mirrored(w) => w.reserve_with(n, wait),
            WriterFlavor::Copying(w) => w.reserve_with(n, wait),
        }
    }

    #[inline]
    fn commit(&mut self, k: usize) {
        match &mut self.0 {
            WriterFlavor::Mirrored(w) => w.commit(k),
            WriterFlavor::Copying(w) => w.commit(k),
        }
    }

    fn finish(&mut self) {
        match &mut self.0 {
            WriterFlavor::Mirrored(w) => w.finish(),
            WriterFlavor::Copying(w) => w.finish(),
        }
    }
}

impl<T: Item> Reader<T> {
    fn core(&self) -> &ReaderCore {
        match &self.0 {
            ReaderFlavor::Mirrored(r) => &r.core,
            ReaderFlavor::Copying(r) => &r.core,
        }
    }

    /// Leaves the queue early: the writer stops waiting for this reader, as if it were dropped.
    /// Any later `window` or `consume` panics naming the queue. Idempotent.
    pub fn detach(&mut self) {
        match &mut self.0 {
            ReaderFlavor::Mirrored(r) => r.core.detach(),
            ReaderFlavor::Copying(r) => r.core.detach(),
        }
    }

    /// The queue's name (see [`QueueOptions::name`]).
    pub fn name(&self) -> &str {
        self.core().shared.name()
    }

    /// A handle that attaches more readers to this reader's queue from any thread (see
    /// [`ReaderPoint`]).
    pub fn reader_point(&self) -> ReaderPoint<T> {
        ReaderPoint(match &self.0 {
            ReaderFlavor::Mirrored(r) => PointFlavor::Mirrored(Arc::clone(&r.core.shared), r.map()),
            ReaderFlavor::Copying(r) => {
                PointFlavor::Copying(Arc::clone(&r.core.shared), r.storage())
            }
        })
    }

    /// A handle that limits how far this reader sees, from any thread (see [`ReadLimit`]).
    /// Indices are absolute item indices, as [`Reader::items_read`] counts.
    pub fn limit(&mut self) -> Arc<ReadLimit> {
        match &mut self.0 {
            ReaderFlavor::Mirrored(r) => r.core.limit(),
            ReaderFlavor::Copying(r) => r.core.limit(),
        }
    }

    /// A second reader at this reader's position (it sees everything this one has not consumed,
    /// and the tags it has not taken).
    pub fn try_clone(&self) -> Result<Reader<T>, QueueError> {
        Ok(Reader(match &self.0 {
            ReaderFlavor::Mirrored(r) => ReaderFlavor::Mirrored(r.duplicate()?),
            ReaderFlavor::Copying(r) => ReaderFlavor::Copying(r.duplicate()?),
        }))
    }

    /// Absolute index of the first item of the next window (items consumed so far).
    pub fn items_read(&self) -> u64 {
        self.core().position() - self.core().shared.origin()
    }

    /// Items committed so far by the writer (an absolute index), as seen now.
    pub fn items_written(&self) -> u64 {
        self.core().shared.written_items()
    }

    /// Whether the writer has ended the stream (items may remain to be read).
    pub fn is_finished(&self) -> bool {
        self.core().shared.is_finished()
    }

    /// The address range of the ring's memory, for checking where windows come from (a
    /// zero-copy test asserts that every window lies inside it). For [`Flavor::Mirrored`] it
    /// is both views of the double mapping, `[base, base + 2 · capacity · size_of::<T>())`, and
    /// every window lies inside. For [`Flavor::Copying`] it is the ring's array, and a window
    /// that wraps lies outside it (in the reader's staging buffer: that is the copy). Read-only
    /// information: nothing can be accessed through it.
    pub fn ring_memory(&self) -> std::ops::Range<usize> {
        match &self.0 {
            ReaderFlavor::Mirrored(r) => r.memory(),
            ReaderFlavor::Copying(r) => r.memory(),
        }
    }

    /// A handle that keeps the ring's memory mapped while held; see [`Writer::memory_guard`].
    /// With [`Flavor::Copying`] a window that wraps lies in the reader's staging buffer, which
    /// the guard does not cover.
    pub fn memory_guard(&self) -> MemoryGuard {
        match &self.0 {
            ReaderFlavor::Mirrored(r) => r.memory_guard(),
            ReaderFlavor::Copying(r) => r.memory_guard(),
        }
    }

    /// Moves to `out` the tags this reader has not taken yet whose absolute index is below
    /// `end`, in index order. A tag added after the reader consumed its item still arrives here
    /// (late, with its exact index): tags are never lost to a race with a fast reader.
    pub fn take_tags(&self, end: u64, out: &mut Vec<Tag>) {
        self.core().take_tags(end, out);
    }
}

impl<T: Item> RingReader<T> for Reader<T> {
    fn capacity(&self) -> usize {
        self.core().shared.capacity()
    }

    #[inline]
    fn window_with(&mut self, n: usize, wait: Wait) -> Result<Option<&[T]>, QueueError> {
        match &mut self.0 {
            ReaderFlavor::Mirrored(r) => r.window_with(n, wait),
            ReaderFlavor::Copying(r) => r.window_with(n, wait),
        }
    }

    #[inline]
    fn consume(&mut self, k: usize) {
        match &mut self.0 {
            ReaderFlavor::Mirrored(r) => r.consume(k),
            ReaderFlavor::Copying(r) => r.consume(k),
        }
    }
}
