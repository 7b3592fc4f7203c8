//! Zero-copy circular queues with firing thresholds.
//!
//! A queue is a ring of `capacity` items of one plain-old-data type, mapped twice back to back in
//! virtual memory (Allen, Zucknick and Evans, "Zero-copy circular queues"), so that any window of
//! up to `capacity` items is one contiguous slice wherever it wraps. One [`Writer`] and any
//! number of [`Reader`]s, each with its own position:
//!
//! * the writer asks for space with [`RingWriter::reserve`], fills it in place, and publishes it
//!   with [`RingWriter::commit`];
//! * a reader asks for a window with [`RingReader::window`] and releases a prefix with
//!   [`RingReader::consume`]. Reading more than you consume is the *firing threshold* of
//!   Computational Process Networks: FIR history and overlap-save run with no copies.
//!
//! ```
//! use sluice_queue::{channel, QueueOptions, RingReader, RingWriter};
//!
//! let (mut w, mut r) = channel::<f32>(1024, &QueueOptions::default()).unwrap();
//! let space = w.reserve(3).unwrap();
//! space[..3].copy_from_slice(&[1.0, 2.0, 3.0]);
//! w.commit(3);
//! w.finish();
//! let window = r.window(2).unwrap();
//! assert_eq!(&window[..3], &[1.0, 2.0, 3.0]);
//! r.consume(1); // keep two items of history
//! assert_eq!(r.window(2).unwrap(), &[2.0, 3.0]);
//! ```
//!
//! Waiting spins briefly, then parks on a futex; a side wakes its peer only if the peer announced
//! that it parked (see `park.rs` for the protocol and why no wake-up is lost), so the steady
//! state makes no system call.
//!
//! **Tags** ([`Tag`]: absolute item index, key, [`TagValue`], source) travel beside the items;
//! Their byte encoding for networks (GNU Radio's PMT serialization) is `sluice-pmt`'s.
//!
//! **Capacity** is rounded up so that the ring is a whole number of pages (or 2 MiB huge pages)
//! *and* of items: for an item of `s` bytes and pages of `P` bytes, the byte size is a multiple
//! of `lcm(P, s)`. With 4 KiB pages that is 4096 items for 1- or 3-byte items, 1024 for 4-byte
//! (`f32`) items, 512 for 8-byte (`Complex32`) items, 1024 for 12-byte and 512 for 24-byte items.
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod contract;
mod error;
mod flavors;
mod lossy;
mod mirror;
mod park;
mod queue;
mod shared;
#[cfg(not(loom))]
mod shm;
mod sync;
mod tag;

pub use contract::{RingReader, RingWriter, Wait};
pub use error::QueueError;
pub use lossy::{LossyReader, TapPoint, TapRead};
pub use queue::{channel, Flavor, MemoryGuard, QueueOptions, Reader, ReaderPoint, Writer};
pub use shared::ReadLimit;
#[cfg(not(loom))]
pub use shm::{ShmReader, ShmWriter};
pub use tag::{Tag, TagValue, Uniform};

/// Items a queue can carry: plain old data that may cross threads.
pub trait Item: bytemuck::Pod + Send + Sync + 'static {}

impl<T: bytemuck::Pod + Send + Sync + 'static> Item for T {}
