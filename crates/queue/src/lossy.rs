//! Lossy readers: readers the writer never waits for, for watching a running stream (a tap).
//!
//! A [`TapPoint`] is a handle to a running queue, taken from its writer and sent to any thread;
//! [`TapPoint::attach`] makes a [`LossyReader`] there while the writer runs, and dropping the
//! reader detaches it. The reader holds no slot in the writer's scan, so the writer never waits
//! for it: when it falls behind, it is moved forward and the items it skipped are counted. It
//! *copies* items out (never borrows ring memory the writer may reuse) and hands out only items
//! it has proved intact; why that is sound is argued in `contract.rs` ("Lossy readers").

use crate::shared::Shared;
use crate::sync::Arc;
use crate::Item;
use std::marker::PhantomData;

/// The ring memory a tap copies from, kept mapped while the tap lives.
struct RingMemory {
    base: *const u8,
    /// Whether the ring is mapped twice back to back (a run never needs to be split).
    mirrored: bool,
    _keep: Box<dyn std::any::Any + Send + Sync>,
}

// SAFETY: `base` points into memory kept alive by `_keep`; the tap only ever copies from it
// with `racy_copy`, whose soundness does not depend on the thread (see contract.rs).
unsafe impl Send for RingMemory {}
// SAFETY: as above; nothing is written through `base`.
unsafe impl Sync for RingMemory {}

/// A handle to a running queue that attaches lossy readers from any thread. Cheap to clone.
pub struct TapPoint<T> {
    shared: Arc<Shared>,
    memory: Arc<RingMemory>,
    _items: PhantomData<fn() -> T>,
}

impl<T> Clone for TapPoint<T> {
    fn clone(&self) -> Self {
        TapPoint {
            shared: Arc::clone(&self.shared),
            memory: Arc::clone(&self.memory),
            _items: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for TapPoint<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TapPoint")
            .field("queue", &self.shared.name())
            .finish()
    }
}

/// What one [`LossyReader::read`] delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TapRead {
    /// Absolute index of the first item delivered (items are contiguous from there).
    pub first: u64,
    /// Items delivered at the start of the output slice.
    pub items: usize,
    /// Items skipped by this call (overwritten before they could be copied, or jumped over).
    pub skipped: u64,
    /// The writer has finished and this reader has read everything it could.
    pub ended: bool,
}

/// A reader the writer never waits for; see the module docs. Dropping it detaches it.
pub struct LossyReader<T> {
    point: TapPoint<T>,
    /// Next position to read (absolute counter, origin included).
    pos: u64,
    skipped: u64,
}

impl<T> std::fmt::Debug for LossyReader<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LossyReader")
            .field("queue", &self.point.shared.name())
            .field("position", &self.pos)
            .field("skipped", &self.skipped)
            .finish()
    }
}

impl<T: Item> TapPoint<T> {
    pub(crate) fn new(
        shared: Arc<Shared>,
        base: *const u8,
        mirrored: bool,
        keep: Box<dyn std::any::Any + Send + Sync>,
    ) -> Self {
        TapPoint {
            shared,
            memory: Arc::new(RingMemory {
                base,
                mirrored,
                _keep: keep,
            }),
            _items: PhantomData,
        }
    }

    /// Attaches a lossy reader at the writer's committed count: it sees items committed from
    /// now on (as many as it keeps up with).
    pub fn attach(&self) -> LossyReader<T> {
        self.shared.count_lossy(true);
        LossyReader {
            point: self.clone(),
            pos: self.shared.written_position(),
            skipped: 0,
        }
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        self.shared.name()
    }

    /// The ring's capacity in items.
    pub fn capacity(&self) -> usize {
        self.shared.capacity()
    }

    /// Items committed so far (an absolute index).
    pub fn items_written(&self) -> u64 {
        self.shared.written_items()
    }

    /// Items readable by the slowest lossless reader, i.e. the queue's fill now (0 when none
    /// is attached).
    pub fn fill(&self) -> usize {
        self.shared.fill()
    }

    /// Lossy readers attached now.
    pub fn lossy_readers(&self) -> usize {
        self.shared.lossy_count()
    }

    /// Whether the writer has ended the stream.
    pub fn is_finished(&self) -> bool {
        self.shared.is_finished()
    }
}

impl<T: Item> LossyReader<T> {
    /// Copies the oldest items this reader has not read (at most `out.len()`) to the start of
    /// `out`. Items overwritten before they could be copied are skipped and counted, never
    /// delivered; so is everything older than one ring behind the writer. Never blocks.
    pub fn read(&mut self, out: &mut [T]) -> TapRead {
        let shared = &self.point.shared;
        let cap = shared.capacity() as u64;
        // `finished` before `written`: the writer sets it after its last commit.
        let finished = shared.is_finished();
        let written = shared.written_position();
        let mut skipped = 0;
        if written - self.pos > cap {
            skipped += written - cap - self.pos;
            self.pos = written - cap;
        }
        let n = ((written - self.pos) as usize).min(out.len());
        let first = self.pos;
        self.copy_out(first, &mut out[..n]);
        // Every item the writer may have touched during the copy lies below `bound`, so
        // positions at or above `bound - cap` still hold what was committed there.
        let intact_from = shared.write_bound_after_copy().saturating_sub(cap);
        let lost = intact_from.saturating_sub(first).min(n as u64) as usize;
        if lost > 0 {
            out.copy_within(lost..n, 0);
        }
        skipped += lost as u64;
        self.pos = first + n as u64;
        self.skipped += skipped;
        TapRead {
            first: first + lost as u64 - shared.origin(),
            items: n - lost,
            skipped,
            ended: finished && self.pos == written,
        }
    }

    /// Jumps to the newest `out.len()` items (counting what it jumps over as skipped) and reads
    /// them: what a live view wants.
    pub fn read_latest(&mut self, out: &mut [T]) -> TapRead {
        let written = self.point.shared.written_position();
        let newest = written.saturating_sub(out.len() as u64);
        let mut jumped = 0;
        if newest > self.pos {
            jumped = newest - self.pos;
            self.pos = newest;
            self.skipped += jumped;
        }
        let mut read = self.read(out);
        read.skipped += jumped;
        read
    }

    /// Items skipped since attaching.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Absolute index of the next item this reader would read.
    pub fn position(&self) -> u64 {
        self.pos - self.point.shared.origin()
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        self.point.name()
    }

    /// Copies the run of `out.len()` items starting at `pos` from ring memory.
    fn copy_out(&self, pos: u64, out: &mut [T]) {
        let size = std::mem::size_of::<T>();
        let cap = self.point.shared.capacity();
        let start = (pos % cap as u64) as usize;
        let mem = &self.point.memory;
        let dst = out.as_mut_ptr().cast::<u8>();
        let first = if mem.mirrored {
            out.len()
        } else {
            out.len().min(cap - start)
        };
        // SAFETY: `out.len() ≤ capacity` items (the caller clamps to `written − pos ≤ cap`);
        // the first run starts inside the ring and ends inside the second view (mirrored) or
        // at the array's end (copying), the second (copying only) is the array's head; `dst`
        // holds `out.len()` items. `racy_copy` tolerates concurrent writes (contract.rs).
        unsafe {
            racy_copy(mem.base.add(start * size), dst, first * size);
            racy_copy(mem.base, dst.add(first * size), (out.len() - first) * size);
        }
    }
}

impl<T> Drop for LossyReader<T> {
    fn drop(&mut self) {
        self.point.shared.count_lossy(false);
    }
}

/// Copies `len` bytes from `src` (ring memory the writer may be writing now) to `dst`.
///
/// The copy is made by the kernel (`process_vm_readv` on our own process): reads by the kernel
/// are outside the Rust abstract machine, like a device's DMA, so a concurrent plain write by
/// the writer is no data race in our program; it can only make the copy a mix of old and new
/// bytes, which the caller's bound check then discards. Under Miri and loom (which cannot make
/// system calls, and whose tests never overlap a copy with a write of the same bytes) it is a
/// plain copy. Should the kernel refuse the call (a seccomp filter), the copy falls back to
/// relaxed byte-wise atomic loads; see contract.rs for what that fallback relies on.
///
/// # Safety
///
/// `src..src + len` must be mapped, readable memory and `dst..dst + len` writable memory that
/// nothing else accesses during the call.
unsafe fn racy_copy(src: *const u8, dst: *mut u8, len: usize) {
    if len == 0 {
        return;
    }
    #[cfg(any(miri, loom))]
    {
        // SAFETY: the caller's contract; the tests that run here never overlap this copy with
        // a write of the same bytes.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
    }
    #[cfg(not(any(miri, loom)))]
    {
        let mut done = 0;
        while done < len {
            let local = libc::iovec {
                iov_base: dst.wrapping_add(done).cast(),
                iov_len: len - done,
            };
            let remote = libc::iovec {
                iov_base: src.wrapping_add(done).cast_mut().cast(),
                iov_len: len - done,
            };
            // SAFETY: both iovecs describe memory the caller vouches for; the kernel checks
            // the remote range itself and fails with EFAULT rather than faulting.
            let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
            if n <= 0 {
                break;
            }
            done += n as usize;
        }
        for i in done..len {
            // SAFETY: `src + i` is inside the caller's readable range; an AtomicU8 has the size
            // and alignment of a byte. See contract.rs for this fallback's argument.
            let byte = unsafe {
                (*src.add(i).cast::<std::sync::atomic::AtomicU8>())
                    .load(std::sync::atomic::Ordering::Relaxed)
            };
            // SAFETY: `dst + i` is inside the caller's writable range.
            unsafe { dst.add(i).write(byte) };
        }
    }
}
