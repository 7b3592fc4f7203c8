//! Rings shared between processes: one writer in one process, one reader in another.
//!
//! The memory object is a memfd holding a control page followed by the ring's bytes. Each
//! process maps the control page and then the ring twice, back to back, exactly as an
//! in-process mirrored queue does, so every window is one contiguous slice. The creator (the
//! writer) seals the memfd's size (`F_SEAL_SHRINK | F_SEAL_GROW`) before handing it over, so
//! neither side can truncate it under the other's mappings (which would turn every access into a
//! `SIGBUS`); the reader refuses an object without those seals or of the wrong size.
//!
//! **The control block** lives in the shared page: the writer's counter, the reader's counter,
//! end-of-stream and gone flags, and two spin-then-park events on shared futexes (the same
//! protocol as in-process queues, see `park.rs`, without the futex's private flag).
//!
//! **Trust.** The other process can write anything into the shared page. Each side keeps its own
//! counter privately and validates every counter it reads from its peer: the reader accepts a
//! writer position `w` only if `read ≤ w ≤ read + capacity` and `w` never goes back; the writer
//! accepts a reader position `r` only if it never goes back and `r ≤ written`. A violation is a
//! [`QueueError::PeerProtocol`] naming the peer, never an out-of-bounds slice. The ring's
//! geometry is read once, when the reader attaches, and checked against the object's size.
//! Item values are the peer's to write: for `Pod` items every bit pattern is a value.
//!
//! **A dead peer.** A side that drops its end sets a flag in the control block and wakes the
//! other; a process that dies without dropping (killed) is found through a pidfd, when the
//! caller names the peer's pid ([`ShmWriter::watch_peer`], [`ShmReader::watch_peer`]; over a
//! Unix socket `SO_PEERCRED` gives it). A parked side wakes at least every 20 ms to look. The
//! reader gets everything committed before the writer went away, then
//! [`QueueError::PeerGone`]; a writer whose reader dropped its end gets
//! [`QueueError::NoReaders`], as with an in-process queue.

use crate::mirror::{page_size, reserve_aligned, round_capacity};
use crate::park::Event;
use crate::{Item, QueueError, RingReader, RingWriter, Wait};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::{event, fs, io, mm, process};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// "SLUICESQ": the first eight bytes of a shared ring's control page.
const MAGIC: u64 = u64::from_le_bytes(*b"SLUICESQ");
/// Layout version of the control page; a reader refuses any other.
const VERSION: u32 = 1;
/// How often a parked side wakes to check that its peer is alive.
const PEER_POLL: Duration = Duration::from_millis(20);

/// The writer ended the stream cleanly ([`RingWriter::finish`]).
const FINISHED: u32 = 1;
/// The writer dropped its end (after or without finishing).
const WRITER_GONE: u32 = 2;
/// The reader dropped its end.
const READER_GONE: u32 = 4;
/// A reader has attached (only one may).
const READER_ATTACHED: u32 = 8;

/// One cache line pair, so that the writer's and the reader's counters never share a line.
#[repr(C, align(128))]
struct Line<T>(T);

/// The ring's geometry, written once by the creator before the memfd is handed over.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Header {
    magic: u64,
    version: u32,
    item_size: u32,
    capacity: u64,
    ring_bytes: u64,
}

/// The control page's layout (`repr(C)`: both processes must agree on it).
#[repr(C)]
struct Control {
    header: Line<Header>,
    written: Line<AtomicU64>,
    read: Line<AtomicU64>,
    flags: Line<AtomicU32>,
    data: Line<Event<true>>,
    space: Line<Event<true>>,
}

const HEADER_BYTES: usize = std::mem::size_of::<Header>();

/// The control page plus the ring mapped twice, unmapped on drop.
struct Mapping {
    base: *mut u8,
    control_bytes: usize,
    ring_bytes: usize,
}

// SAFETY: plain shared memory with no thread affinity; who touches which bytes is governed by
// the ring protocol, and the control block holds only atomics (and the header, read once).
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `fd` (control page, then `ring_bytes` mapped twice). The caller has checked that
    /// the object is sealed and `control_bytes + ring_bytes` long.
    fn new(
        fd: BorrowedFd<'_>,
        control_bytes: usize,
        ring_bytes: usize,
    ) -> Result<Self, QueueError> {
        let too_large = || QueueError::Os {
            call: "mmap",
            message: "shared ring too large for the address space".into(),
        };
        let total = ring_bytes
            .checked_mul(2)
            .and_then(|b| b.checked_add(control_bytes))
            .ok_or_else(too_large)?;
        let base = reserve_aligned(total, page_size())?;
        let map = Mapping {
            base,
            control_bytes,
            ring_bytes,
        };
        let views = [
            (0, control_bytes, 0),
            (control_bytes, ring_bytes, control_bytes),
            (control_bytes + ring_bytes, ring_bytes, control_bytes),
        ];
        for (at, len, offset) in views {
            // SAFETY: `base + at .. + len` lies inside the reservation we own, so MAP_FIXED
            // replaces only our placeholder; the object is sealed at `control_bytes +
            // ring_bytes`, so every mapped page is backed.
            unsafe {
                mm::mmap(
                    map.base.add(at).cast(),
                    len,
                    mm::ProtFlags::READ | mm::ProtFlags::WRITE,
                    mm::MapFlags::SHARED | mm::MapFlags::FIXED,
                    fd,
                    offset as u64,
                )
            }
            .map_err(|e| QueueError::os("mmap (shared ring view)", e))?;
        }
        Ok(map)
    }

    fn control(&self) -> &Control {
        // SAFETY: the first page is mapped for as long as `self` lives, is page-aligned (so
        // aligned for `Control`, which fits in it: see the assertion below), and holds only
        // atomics besides the header, which we never write after creation.
        unsafe { &*self.base.cast::<Control>() }
    }

    fn ring(&self) -> *mut u8 {
        // SAFETY: the ring's first view starts right after the control page, inside the map.
        unsafe { self.base.add(self.control_bytes) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: we own the whole range, and no slice into it outlives the map (slices borrow
        // the writer or reader that owns it).
        unsafe {
            let _ = mm::munmap(self.base.cast(), self.control_bytes + 2 * self.ring_bytes);
        }
    }
}

const _: () = assert!(std::mem::size_of::<Control>() <= 4096);

/// The bytes before the ring: one page (the control block fits in the smallest page).
fn control_bytes() -> usize {
    page_size()
}

/// The peer process's liveness: the flag it sets when it drops its end, and a pidfd when the
/// caller named its pid.
#[derive(Default)]
struct Peer {
    pid: Option<i32>,
    pidfd: Option<OwnedFd>,
}

impl Peer {
    fn watch(&mut self, pid: i32) -> Result<(), QueueError> {
        let p = process::Pid::from_raw(pid).ok_or_else(|| QueueError::Os {
            call: "pidfd_open",
            message: format!("{pid} is not a process id"),
        })?;
        let fd = process::pidfd_open(p, process::PidfdFlags::empty())
            .map_err(|e| QueueError::os("pidfd_open", e))?;
        self.pid = Some(pid);
        self.pidfd = Some(fd);
        Ok(())
    }

    fn name(&self, role: &str) -> String {
        match self.pid {
            Some(pid) => format!("the {role} (pid {pid})"),
            None => format!("the {role}"),
        }
    }

    /// Whether the watched process has exited (a pidfd polls readable then).
    fn died(&self) -> bool {
        let Some(fd) = &self.pidfd else {
            return false;
        };
        let mut fds = [event::PollFd::new(fd, event::PollFlags::IN)];
        let zero = event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        matches!(event::poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
    }
}

fn deadline_of(wait: Wait) -> Option<Option<Instant>> {
    match wait {
        Wait::Never => None,
        Wait::Until(d) => Some(Some(d)),
        Wait::Forever => Some(None),
    }
}

/// The next instant a parked side wakes: the caller's deadline or the peer poll, whichever is
/// first.
fn next_wake(deadline: Option<Instant>) -> Instant {
    let poll = Instant::now() + PEER_POLL;
    deadline.map_or(poll, |d| d.min(poll))
}

/// The writing end of a ring shared with another process. Create it, hand [`ShmWriter::fd`] to
/// the reading process (over a Unix socket with `SCM_RIGHTS`), and write as into any ring.
pub struct ShmWriter<T: Item> {
    map: Mapping,
    fd: OwnedFd,
    capacity: usize,
    /// Items committed: the writer's own count, never read back from the shared page.
    written: u64,
    /// The last reader position accepted (reader positions never go back).
    read_seen: u64,
    reserved: usize,
    ended: bool,
    peer: Peer,
    _items: PhantomData<T>,
}

impl<T: Item> std::fmt::Debug for ShmWriter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmWriter")
            .field("capacity", &self.capacity)
            .field("written", &self.written)
            .field("peer", &self.peer.pid)
            .finish()
    }
}

impl<T: Item> ShmWriter<T> {
    /// A new shared ring of at least `min_items` items (rounded up to whole pages and items,
    /// as for in-process queues), with no reader yet.
    pub fn create(min_items: usize) -> Result<Self, QueueError> {
        let item_size = std::mem::size_of::<T>();
        if item_size == 0 {
            return Err(QueueError::ZeroSizedItem);
        }
        if min_items == 0 {
            return Err(QueueError::ZeroCapacity);
        }
        let (ring_bytes, capacity) =
            round_capacity(min_items, item_size, false).ok_or(QueueError::TooLarge {
                requested: min_items,
                capacity: usize::MAX / item_size,
            })?;
        let item_size = u32::try_from(item_size).map_err(|_| QueueError::TooLarge {
            requested: item_size,
            capacity: u32::MAX as usize,
        })?;
        let fd = fs::memfd_create(
            c"sluice-shm-queue",
            fs::MemfdFlags::CLOEXEC | fs::MemfdFlags::ALLOW_SEALING,
        )
        .map_err(|e| QueueError::os("memfd_create", e))?;
        let control = control_bytes();
        fs::ftruncate(&fd, (control + ring_bytes) as u64)
            .map_err(|e| QueueError::os("ftruncate", e))?;
        fs::fcntl_add_seals(
            &fd,
            fs::SealFlags::SHRINK | fs::SealFlags::GROW | fs::SealFlags::SEAL,
        )
        .map_err(|e| QueueError::os("fcntl(F_ADD_SEALS)", e))?;
        let header = Header {
            magic: MAGIC,
            version: VERSION,
            item_size,
            capacity: capacity as u64,
            ring_bytes: ring_bytes as u64,
        };
        // The header goes in with pwrite (no reference to the page while nobody maps it); the
        // rest of the page is zero, which is every counter's and flag's initial value.
        let bytes: [u8; HEADER_BYTES] =
            // SAFETY: `Header` is `repr(C)` of integers with no padding (8+4+4+8+8 bytes).
            unsafe { std::mem::transmute(header) };
        let n = io::pwrite(&fd, &bytes, 0).map_err(|e| QueueError::os("pwrite (header)", e))?;
        if n != HEADER_BYTES {
            return Err(QueueError::Os {
                call: "pwrite (header)",
                message: format!("wrote {n} of {HEADER_BYTES} bytes"),
            });
        }
        let map = Mapping::new(fd.as_fd(), control, ring_bytes)?;
        // A zeroed event would work too (it only wakes more often); start from the real state.
        map.control().data.0.reset();
        map.control().space.0.reset();
        Ok(ShmWriter {
            map,
            fd,
            capacity,
            written: 0,
            read_seen: 0,
            reserved: 0,
            ended: false,
            peer: Peer::default(),
            _items: PhantomData,
        })
    }

    /// The memfd to hand to the reading process.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Watches the reading process: once it has exited, waiting calls fail with
    /// [`QueueError::PeerGone`] instead of waiting for it.
    pub fn watch_peer(&mut self, pid: i32) -> Result<(), QueueError> {
        self.peer.watch(pid)
    }

    /// Items committed so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The reader's position, validated (see the module docs).
    fn reader_position(&mut self) -> Result<u64, QueueError> {
        let r = self.map.control().read.0.load(Ordering::Acquire);
        if r < self.read_seen || r > self.written {
            return Err(QueueError::PeerProtocol {
                peer: self.peer.name("reader"),
                message: format!(
                    "its position {r} lies outside [{}, {}] (positions never go back, and it \
                     cannot pass what was written)",
                    self.read_seen, self.written
                ),
            });
        }
        self.read_seen = r;
        Ok(r)
    }
}

impl<T: Item> RingWriter<T> for ShmWriter<T> {
    fn capacity(&self) -> usize {
        self.capacity
    }

    fn reserve_with(&mut self, n: usize, wait: Wait) -> Result<Option<&mut [T]>, QueueError> {
        if n > self.capacity {
            return Err(QueueError::TooLarge {
                requested: n,
                capacity: self.capacity,
            });
        }
        let need = n.max(1) as u64;
        let cap = self.capacity as u64;
        loop {
            let read = self.reader_position()?;
            let free = cap - (self.written - read);
            if free >= need {
                self.reserved = free as usize;
                let at = (self.written % cap) as usize;
                // SAFETY: [written, written + free) is not readable by the reader (it has not
                // been committed) and no longer holds items it may read (they are before
                // `read`), so only this writer touches it until it commits. It is contiguous in
                // the double mapping (free ≤ capacity) and `Pod` memory, so any bytes are a
                // valid `T`. The slice borrows `self`, which owns the mapping.
                let slice = unsafe {
                    std::slice::from_raw_parts_mut(
                        self.map.ring().cast::<T>().add(at),
                        free as usize,
                    )
                };
                return Ok(Some(slice));
            }
            let control = self.map.control();
            if control.flags.0.load(Ordering::Acquire) & READER_GONE != 0 {
                return Err(QueueError::NoReaders);
            }
            if self.peer.died() {
                return Err(QueueError::PeerGone {
                    peer: self.peer.name("reader"),
                    offset: read,
                });
            }
            let Some(deadline) = deadline_of(wait) else {
                return Ok(None);
            };
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
            let level = self.written + need - cap;
            control.space.0.wait_until(
                || {
                    control.read.0.load(Ordering::Acquire) >= level
                        || control.flags.0.load(Ordering::Acquire) & READER_GONE != 0
                },
                Some(next_wake(deadline)),
                level,
            );
        }
    }

    fn commit(&mut self, k: usize) {
        assert!(
            k <= self.reserved,
            "commit of {k} items exceeds the reservation of {}",
            self.reserved
        );
        self.reserved = 0;
        if k == 0 {
            return;
        }
        self.written += k as u64;
        let control = self.map.control();
        control.written.0.store(self.written, Ordering::Release);
        control.data.0.notify_level(self.written);
    }

    fn finish(&mut self) {
        if !self.ended {
            self.ended = true;
            let control = self.map.control();
            control.flags.0.fetch_or(FINISHED, Ordering::Release);
            control.data.0.notify();
        }
    }
}

impl<T: Item> Drop for ShmWriter<T> {
    fn drop(&mut self) {
        let control = self.map.control();
        control.flags.0.fetch_or(WRITER_GONE, Ordering::Release);
        control.data.0.notify();
    }
}

/// The reading end of a ring another process writes: attach to the memfd it handed over.
pub struct ShmReader<T: Item> {
    map: Mapping,
    capacity: usize,
    /// Items consumed: the reader's own count, never read back from the shared page.
    read: u64,
    /// The last writer position accepted (writer positions never go back).
    written_seen: u64,
    windowed: usize,
    peer: Peer,
    _items: PhantomData<T>,
}

impl<T: Item> std::fmt::Debug for ShmReader<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmReader")
            .field("capacity", &self.capacity)
            .field("read", &self.read)
            .field("peer", &self.peer.pid)
            .finish()
    }
}

impl<T: Item> ShmReader<T> {
    /// Attaches to a shared ring created by [`ShmWriter::create`] for the same item size. The
    /// memory object must be sealed against resizing and exactly as long as its header says;
    /// anything else is refused with an error saying what was wrong.
    pub fn attach(fd: OwnedFd) -> Result<Self, QueueError> {
        let bad = |message: String| QueueError::PeerProtocol {
            peer: "the writer".into(),
            message,
        };
        let seals =
            fs::fcntl_get_seals(&fd).map_err(|e| QueueError::os("fcntl(F_GET_SEALS)", e))?;
        if !seals.contains(fs::SealFlags::SHRINK | fs::SealFlags::GROW) {
            return Err(bad(
                "its memory object is not sealed against resizing (F_SEAL_SHRINK | \
                 F_SEAL_GROW); it could be truncated under our mapping"
                    .into(),
            ));
        }
        let size = fs::fstat(&fd)
            .map_err(|e| QueueError::os("fstat", e))?
            .st_size as u64;
        let mut bytes = [0u8; HEADER_BYTES];
        let got = io::pread(&fd, &mut bytes, 0).map_err(|e| QueueError::os("pread (header)", e))?;
        if got != HEADER_BYTES {
            return Err(bad(format!(
                "its memory object holds {size} bytes, too few for a ring header"
            )));
        }
        // SAFETY: `Header` is `repr(C)` of integers with no padding; every bit pattern is one.
        let header: Header = unsafe { std::mem::transmute(bytes) };
        if header.magic != MAGIC {
            return Err(bad(format!(
                "its memory object does not start with the ring magic (found {:#018x})",
                header.magic
            )));
        }
        if header.version != VERSION {
            return Err(bad(format!(
                "its ring layout is version {}, this build speaks version {VERSION}",
                header.version
            )));
        }
        let item_size = std::mem::size_of::<T>();
        if header.item_size as usize != item_size {
            return Err(bad(format!(
                "its items are {} bytes, this reader's are {item_size}",
                header.item_size
            )));
        }
        let control = control_bytes();
        let geometry_ok = header.capacity > 0
            && header.capacity.checked_mul(item_size as u64) == Some(header.ring_bytes)
            && header.ring_bytes.is_multiple_of(page_size() as u64)
            && size.checked_sub(control as u64) == Some(header.ring_bytes);
        if !geometry_ok {
            return Err(bad(format!(
                "its header says {} items of {item_size} bytes in {} ring bytes, but the object \
                 holds {size} bytes (expected a {control}-byte control page plus whole pages)",
                header.capacity, header.ring_bytes
            )));
        }
        let ring_bytes = usize::try_from(header.ring_bytes)
            .map_err(|_| bad(format!("ring of {} bytes", header.ring_bytes)))?;
        let map = Mapping::new(fd.as_fd(), control, ring_bytes)?;
        let before = map
            .control()
            .flags
            .0
            .fetch_or(READER_ATTACHED, Ordering::AcqRel);
        if before & READER_ATTACHED != 0 {
            return Err(bad("a reader is already attached to this ring".into()));
        }
        Ok(ShmReader {
            map,
            capacity: header.capacity as usize,
            read: 0,
            written_seen: 0,
            windowed: 0,
            peer: Peer::default(),
            _items: PhantomData,
        })
    }

    /// Watches the writing process: once it has exited, waiting calls that cannot be met from
    /// what it committed fail with [`QueueError::PeerGone`].
    pub fn watch_peer(&mut self, pid: i32) -> Result<(), QueueError> {
        self.peer.watch(pid)
    }

    /// Items consumed so far.
    pub fn position(&self) -> u64 {
        self.read
    }

    /// The writer's position, validated (see the module docs).
    fn writer_position(&mut self) -> Result<u64, QueueError> {
        let w = self.map.control().written.0.load(Ordering::Acquire);
        if w < self.written_seen || w < self.read || w - self.read > self.capacity as u64 {
            return Err(QueueError::PeerProtocol {
                peer: self.peer.name("writer"),
                message: format!(
                    "its position {w} lies outside [{}, {}] (positions never go back, and it \
                     cannot run more than the capacity ahead of the reader)",
                    self.written_seen.max(self.read),
                    self.read + self.capacity as u64
                ),
            });
        }
        self.written_seen = w;
        Ok(w)
    }

    fn slice(&mut self, len: u64) -> &[T] {
        self.windowed = len as usize;
        let at = (self.read % self.capacity as u64) as usize;
        // SAFETY: [read, read + len) was committed (len ≤ written − read, validated, with the
        // Acquire load that pairs with the writer's Release store) and not consumed, so the
        // writer will not reuse it until we consume; it is contiguous in the double mapping
        // (len ≤ capacity) and `Pod` memory. The slice borrows `self`, which owns the mapping.
        unsafe { std::slice::from_raw_parts(self.map.ring().cast::<T>().add(at), len as usize) }
    }
}

impl<T: Item> RingReader<T> for ShmReader<T> {
    fn capacity(&self) -> usize {
        self.capacity
    }

    fn window_with(&mut self, n: usize, wait: Wait) -> Result<Option<&[T]>, QueueError> {
        if n > self.capacity {
            return Err(QueueError::TooLarge {
                requested: n,
                capacity: self.capacity,
            });
        }
        let need = n.max(1) as u64;
        loop {
            let written = self.writer_position()?;
            if written - self.read >= need {
                return Ok(Some(self.slice(written - self.read)));
            }
            let control = self.map.control();
            let flags = control.flags.0.load(Ordering::Acquire);
            if flags & FINISHED != 0 {
                // Everything committed before the finish is visible after the Acquire above.
                let written = self.writer_position()?;
                return Ok(Some(self.slice(written - self.read)));
            }
            if flags & WRITER_GONE != 0 || self.peer.died() {
                return Err(QueueError::PeerGone {
                    peer: self.peer.name("writer"),
                    offset: written,
                });
            }
            let Some(deadline) = deadline_of(wait) else {
                return Ok(None);
            };
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
            let level = self.read + need;
            control.data.0.wait_until(
                || {
                    control.written.0.load(Ordering::Acquire) >= level
                        || control.flags.0.load(Ordering::Acquire) & (FINISHED | WRITER_GONE) != 0
                },
                Some(next_wake(deadline)),
                level,
            );
        }
    }

    fn consume(&mut self, k: usize) {
        assert!(
            k <= self.windowed,
            "consume of {k} items exceeds the window of {}",
            self.windowed
        );
        self.windowed -= k;
        if k == 0 {
            return;
        }
        self.read += k as u64;
        let control = self.map.control();
        control.read.0.store(self.read, Ordering::Release);
        control.space.0.notify_level(self.read);
    }
}

impl<T: Item> Drop for ShmReader<T> {
    fn drop(&mut self) {
        let control = self.map.control();
        control.flags.0.fetch_or(READER_GONE, Ordering::Release);
        control.space.0.notify();
    }
}
