//! # sluice-copy: an asynchronous memory-to-memory copy engine
//!
//! The modern, user-space equivalent of a system DMA engine (Wicki, *OS Support for
//! Memory-to-Memory Transfers Using a DMA Engine*, ETH Zürich 2014), with an API in the style
//! of DPDK's `dmadev`:
//!
//! * **Operations** ([`Op`]): `copy`, `fill` (a pattern of 1-16 bytes), `copy_2d` (rows and
//!   source/destination strides in bytes), `rotate` (0/90/180/270° and mirror, for items of
//!   1, 2, 4, 8 or 16 bytes; [`Transform::TRANSPOSE`] is the corner turn), `keyed_copy`
//!   (items equal to a key are not written: the seed's transparent copy) and `copy_sg`
//!   (scatter-gather lists). Bounds, strides and overlap are checked when an operation is
//!   enqueued, before anything is written ([`CopyError`]).
//! * **Channels** ([`Channel`]) with [`Priority`]: operations are enqueued, then
//!   [`submit`](Channel::submit)ted as a batch; one channel runs its operations in order,
//!   channels run in parallel, higher priority first. What has not started can be cancelled.
//! * **Tickets** ([`Ticket`]): poll, wait (parked, no spinning), or drain the channel's
//!   completion queue ([`Channel::completed`]).
//! * **Ownership**: buffers are moved into the engine (`Vec`, `Box<[T]>`, `Arc<[T]>`,
//!   [`AlignedBuf`]) and come back through the ticket, so safe code cannot touch or free a
//!   buffer while a copy runs, and a dropped or forgotten ticket cannot cause a use after
//!   free. Memory the engine cannot own is a [`RawRegion`], made by an `unsafe fn` with its
//!   contract.
//! * **Backends** ([`Backend`]): the [`CpuBackend`] (worker threads, optionally pinned;
//!   `memcpy` for small pieces, `rep movsb` in the middle, AVX-512 non-temporal stores above
//!   the cache size, cache-blocked tiles for rotations). The trait is shaped for Intel DSA
//!   work queues or a GPU copy engine; none is included, since neither can be tested here.
//! * **Break-even** ([`BreakEven`]): operations smaller than the measured break-even size for
//!   their kind run on the caller's thread at `submit`.
//!
//! ```
//! use sluice_copy::{Engine, Pattern, Priority};
//!
//! let engine = Engine::with_defaults().unwrap();
//! let mut ch = engine.channel(Priority::NORMAL);
//! let src: Vec<u32> = (0..1 << 20).collect();
//! let copy = ch.copy(src, vec![0u32; 1 << 20]).unwrap();
//! let fill = ch.fill(vec![0u8; 100], Pattern::new(b"abc").unwrap()).unwrap();
//! ch.submit();
//! // … the caller does other work here …
//! let (src, dst) = copy.wait().into_result().unwrap();
//! assert_eq!(src, dst);
//! let filled = fill.wait().into_result().unwrap();
//! assert_eq!(&filled[..7], b"abcabca");
//! ```
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod breakeven;
mod buffer;
mod channel;
pub mod cpu;
mod engine;
mod error;
mod job;
mod op;
mod ticket;

pub use breakeven::{BreakEven, BreakEvenError};
pub use buffer::{AlignedBuf, DstBuf, RawRegion, SrcBuf};
pub use channel::{Channel, ChannelOptions, Enqueued, Priority};
pub use cpu::{CpuBackend, Kernels, Strategy};
pub use engine::{Backend, Engine, EngineOptions};
pub use error::{CopyError, Rejected, Side};
pub use op::{Extents, ItemSize, Op, OpKind, Pattern, Plane, Segment, Transform, Turn};
pub use ticket::{Completed, Completion, Ticket};
