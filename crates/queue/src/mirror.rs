//! The mirrored mapping: one memory object mapped twice, back to back.
//!
//! We create a memfd of `bytes`, reserve `2 * bytes` of address space with a `PROT_NONE`
//! anonymous mapping, and then map the memfd over both halves of that reservation with
//! `MAP_FIXED`. Because the reservation is ours, `MAP_FIXED` replaces only our own placeholder
//! (no race with other threads' mappings, no unmap-and-hope retries). Any run of up to `bytes`
//! bytes starting anywhere in the first half is then contiguous in virtual memory.

use crate::QueueError;
use rustix::{fs, mm};

/// Size of a huge page on x86-64 Linux (the default hugetlbfs size).
const HUGE_PAGE: usize = 2 << 20;

/// Options that shape the mapping.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MapOptions {
    pub huge_pages: bool,
    pub dont_fork: bool,
    /// The alignment the first view must have (the item type's; at least the page size is
    /// always given, 2 MiB with huge pages).
    pub align: usize,
}

/// Two adjacent views of one memfd. Unmapped on drop. The descriptor itself is closed once both
/// views exist (the mappings keep the memory object alive), so a graph of a thousand queues
/// does not run into the default limit of 1,024 open files.
#[derive(Debug)]
pub(crate) struct MirrorMap {
    base: *mut u8,
    bytes: usize,
}

// SAFETY: the mapping is plain shared memory with no thread affinity; who may touch which bytes
// is governed by the ring protocol above it, not by the map itself.
unsafe impl Send for MirrorMap {}
// SAFETY: as above; `MirrorMap` itself exposes only a raw base pointer.
unsafe impl Sync for MirrorMap {}

/// The system page size.
pub(crate) fn page_size() -> usize {
    rustix::param::page_size()
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The smallest byte size that is a multiple of both the mapping granule and `item_size`, and
/// holds at least `min_items` items. Returns (bytes, items).
pub(crate) fn round_capacity(
    min_items: usize,
    item_size: usize,
    huge_pages: bool,
) -> Option<(usize, usize)> {
    let granule = if huge_pages { HUGE_PAGE } else { page_size() };
    let unit = granule / gcd(granule, item_size) * item_size;
    let wanted = min_items.checked_mul(item_size)?;
    let units = wanted.div_ceil(unit).max(1);
    let bytes = units.checked_mul(unit)?;
    Some((bytes, bytes / item_size))
}

/// Reserves `total` bytes of address space (PROT_NONE) starting at a multiple of `align`, a
/// power of two no smaller than the page size: over-reserves by `align`, then returns the
/// unaligned head and the tail to the system, so only `[base, base + total)` stays ours.
pub(crate) fn reserve_aligned(total: usize, align: usize) -> Result<*mut u8, QueueError> {
    let padded = total.checked_add(align).ok_or(QueueError::Os {
        call: "mmap",
        message: "ring too large for the address space".into(),
    })?;
    // SAFETY: an anonymous PROT_NONE reservation at an address of the kernel's choosing.
    let raw = unsafe {
        mm::mmap_anonymous(
            std::ptr::null_mut(),
            padded,
            mm::ProtFlags::empty(),
            mm::MapFlags::PRIVATE | mm::MapFlags::NORESERVE,
        )
    }
    .map_err(|e| QueueError::os("mmap (reserve)", e))?;
    let raw = raw.cast::<u8>();
    let head = raw.align_offset(align);
    let tail = padded - head - total;
    // SAFETY: head ≤ align and head + total + tail = padded, so both trimmed ranges lie inside
    // the reservation just made, which nothing else uses; both start on page boundaries (the
    // reservation, `align` and `total` are page multiples).
    // Trimming only returns address space: a failure would leave it reserved, not unsound.
    unsafe {
        if head > 0 {
            let _ = mm::munmap(raw.cast(), head);
        }
        if tail > 0 {
            let _ = mm::munmap(raw.add(head + total).cast(), tail);
        }
        Ok(raw.add(head))
    }
}

fn configured_huge_pages() -> u64 {
    std::fs::read_to_string("/proc/sys/vm/nr_hugepages")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

impl MirrorMap {
    /// Maps `bytes` (a multiple of the page size, or of 2 MiB with huge pages) twice.
    pub(crate) fn new(bytes: usize, opts: MapOptions) -> Result<Self, QueueError> {
        if cfg!(miri) {
            return Err(QueueError::Os {
                call: "memfd_create",
                message: "the mirrored flavor maps one memory object twice (memfd_create, \
                          MAP_FIXED), which Miri cannot run; use Flavor::Copying under Miri"
                    .into(),
            });
        }
        if opts.huge_pages && configured_huge_pages() == 0 {
            return Err(QueueError::NoHugePages { configured: 0 });
        }
        let mut flags = fs::MemfdFlags::CLOEXEC;
        if opts.huge_pages {
            flags |= fs::MemfdFlags::HUGETLB;
        }
        let fd = fs::memfd_create(c"sluice-queue", flags)
            .map_err(|e| QueueError::os("memfd_create", e))?;
        fs::ftruncate(&fd, bytes as u64).map_err(|e| QueueError::os("ftruncate", e))?;
        let granule = if opts.huge_pages {
            HUGE_PAGE
        } else {
            page_size()
        };
        let align = opts.align.max(granule);
        let too_large = || QueueError::Os {
            call: "mmap",
            message: "ring too large for the address space".into(),
        };
        let total = bytes.checked_mul(2).ok_or_else(too_large)?;
        let base = reserve_aligned(total, align)?;
        let map = MirrorMap { base, bytes };
        for half in 0..2 {
            // SAFETY: `base + half * bytes .. + bytes` lies inside the reservation we own, so
            // MAP_FIXED replaces only our placeholder. The fd is at least `bytes` long.
            let view = unsafe {
                mm::mmap(
                    map.base.add(half * bytes).cast(),
                    bytes,
                    mm::ProtFlags::READ | mm::ProtFlags::WRITE,
                    mm::MapFlags::SHARED | mm::MapFlags::FIXED,
                    &fd,
                    0,
                )
            };
            if let Err(err) = view {
                if opts.huge_pages && err == rustix::io::Errno::NOMEM {
                    return Err(QueueError::NoHugePages {
                        configured: configured_huge_pages(),
                    });
                }
                return Err(QueueError::os("mmap (mirror view)", err));
            }
        }
        if opts.dont_fork {
            // SAFETY: madvise on a range we mapped; it only changes fork behaviour.
            unsafe { mm::madvise(map.base.cast(), total, mm::Advice::LinuxDontFork) }
                .map_err(|e| QueueError::os("madvise(MADV_DONTFORK)", e))?;
        }
        map.verify()?;
        drop(fd);
        Ok(map)
    }

    /// Writes through the first view and reads through the second, at both ends.
    fn verify(&self) -> Result<(), QueueError> {
        for offset in [0, self.bytes - 1] {
            // SAFETY: both offsets are inside the 2 * bytes mapping, which is readable and
            // writable; the ring is not shared with anyone yet. Volatile keeps the compiler from
            // assuming the two addresses are distinct.
            unsafe {
                let a = self.base.add(offset);
                let b = self.base.add(offset + self.bytes);
                a.write_volatile(0xA5);
                if b.read_volatile() != 0xA5 {
                    return Err(QueueError::MirrorBroken);
                }
                b.write_volatile(0);
                if a.read_volatile() != 0 {
                    return Err(QueueError::MirrorBroken);
                }
            }
        }
        Ok(())
    }

    /// Start of the first view.
    pub(crate) fn base(&self) -> *mut u8 {
        self.base
    }

    /// The addresses of both views, `[base, base + 2 · bytes)`.
    pub(crate) fn address_range(&self) -> std::ops::Range<usize> {
        let start = self.base as usize;
        start..start + 2 * self.bytes
    }
}

impl Drop for MirrorMap {
    fn drop(&mut self) {
        // SAFETY: we own the whole 2 * bytes range, and no slice into it outlives the map
        // (writers and readers hold an Arc to it).
        unsafe {
            let _ = mm::munmap(self.base.cast(), 2 * self.bytes);
        }
    }
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    #[test]
    fn capacity_rounds_to_pages_and_items() {
        let page = page_size();
        assert_eq!(round_capacity(1, 1, false), Some((page, page)));
        // 3-byte items: lcm(page, 3) = 3 pages.
        let (bytes, items) = round_capacity(1, 3, false).unwrap();
        assert_eq!(bytes, 3 * page);
        assert_eq!(items, page);
        let (bytes, items) = round_capacity(1000, 24, false).unwrap();
        assert_eq!(bytes % page, 0);
        assert_eq!(bytes % 24, 0);
        assert!(items >= 1000);
        assert_eq!(round_capacity(usize::MAX, 8, false), None);
    }

    #[test]
    fn views_alias() {
        let map = MirrorMap::new(page_size(), MapOptions::default()).unwrap();
        assert_eq!(map.base() as usize % page_size(), 0);
        // SAFETY: offsets inside the mapping; nobody else uses it.
        unsafe {
            map.base().add(10).write(7);
            assert_eq!(map.base().add(page_size() + 10).read(), 7);
        }
    }
}
