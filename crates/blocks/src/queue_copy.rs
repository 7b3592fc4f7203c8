//! Asynchronous copies into a queue: the seed's DMA into a ring buffer. The copy engine fills
//! a reservation of a [`Writer`] while the caller does something else, and the items are
//! committed when the copy completes.
//!
//! **Soundness.** A reservation is a `&mut [T]` borrowed from the writer, which the engine
//! cannot hold across threads. So the writer itself is *moved into the operation*: a
//! [`Reservation`] owns the writer and the address of its reserved space, and the engine owns
//! the reservation (as it owns every buffer) until the copy is over. Nobody can reserve,
//! commit or finish meanwhile, and dropping or forgetting the [`PendingCommit`] cannot free
//! the ring under the copy: the engine drops the writer only after the copy (a dropped
//! writer ends the stream without committing the copied items). [`PendingCommit::wait`]
//! commits and hands the writer back.
//!
//! This relies on a property `sluice-queue`'s contract states (`RingWriter::reserve_with`) and
//! tests (`tests/reservation_address.rs`): the space `reserve` returns lives in memory owned
//! *through* the writer (the mirrored mapping, or the copying ring's heap scratch buffer), not
//! inside the `Writer` value, so it stays put when the writer is moved, until the next call on
//! the writer.

use std::sync::OnceLock;

use sluice_copy::{
    Channel, CopyError, DstBuf, Engine, EngineOptions, Op, Priority, SrcBuf, Ticket,
};
use sluice_queue::{Item, QueueError, RingWriter, Writer};

/// A process-wide copy engine (one worker) for blocks and helpers that do not bring their own.
pub fn shared_engine() -> Result<&'static Engine, CopyError> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    match ENGINE.get_or_init(|| Engine::new(EngineOptions::default()).map_err(|e| e.to_string())) {
        Ok(e) => Ok(e),
        Err(reason) => Err(CopyError::Backend {
            backend: "cpu",
            reason: reason.clone(),
        }),
    }
}

/// A writer together with `len` items of space it reserved, owned by the copy engine.
pub struct Reservation<T: Item> {
    writer: Writer<T>,
    ptr: *mut T,
    len: usize,
}

// SAFETY: a `Writer<T>` may move between threads (it is `Send`), and `ptr` points into memory
// owned through the writer (see the module docs), reserved for it alone.
unsafe impl<T: Item> Send for Reservation<T> {}

// SAFETY: `ptr` is the start of `len` items the writer reserved; the memory does not move with
// the writer (module docs), no reader sees it before a commit, and no call on the writer can
// happen while the reservation owns it; `T: Pod` accepts any bytes.
unsafe impl<T: Item> DstBuf for Reservation<T> {
    fn dst_ptr(&mut self) -> *mut u8 {
        self.ptr.cast()
    }
    fn dst_len(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
}

/// Why a copy into a queue could not start; the writer and source come back.
#[derive(Debug, thiserror::Error)]
pub enum QueueCopyError {
    /// The queue refused the reservation (too large, or no readers left).
    #[error("queue: {0}")]
    Queue(#[from] QueueError),
    /// The engine refused the copy (the source is shorter than `items`, …).
    #[error("copy engine: {0}")]
    Copy(#[from] CopyError),
}

/// A copy into a queue that did not start or did not run, with the writer and the source
/// handed back (nothing was committed).
pub struct Refused<T: Item, S> {
    /// Why.
    pub error: QueueCopyError,
    /// The writer.
    pub writer: Writer<T>,
    /// The source.
    pub src: S,
}

impl<T: Item, S> std::fmt::Debug for Refused<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refused")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

/// What [`PendingCommit::wait`] gives: the writer (items committed) and the source, or why not.
pub type Committed<T, S> = Result<(Writer<T>, S), Box<Refused<T, S>>>;

/// A copy into a queue in flight: wait for it to commit the items.
pub struct PendingCommit<T: Item, S: SrcBuf> {
    ticket: Ticket<(S, Reservation<T>)>,
    items: usize,
}

impl<T: Item, S: SrcBuf> PendingCommit<T, S> {
    /// Whether the copy is over.
    pub fn is_done(&self) -> bool {
        self.ticket.is_done()
    }

    /// Items that will be committed.
    pub fn items(&self) -> usize {
        self.items
    }

    /// Waits for the copy (parked), commits the items and returns the writer and the source.
    /// If the copy did not run (cancelled, engine stopped), nothing is committed and the
    /// error comes with the writer and source.
    pub fn wait(self) -> Committed<T, S> {
        let done = self.ticket.wait();
        let (src, res) = done.buffers;
        let mut writer = res.writer;
        match done.status {
            Ok(()) => {
                writer.commit(self.items);
                Ok((writer, src))
            }
            Err(e) => Err(Box::new(Refused {
                error: e.into(),
                writer,
                src,
            })),
        }
    }
}

/// Reserves `items` items in `writer`'s queue (blocking until there is room) and starts
/// copying the first `items` items' bytes of `src` into them on `channel`; the returned
/// [`PendingCommit`] commits them when the copy is done. The channel's other staged work is
/// submitted too.
pub fn copy_into_queue<T: Item, S: SrcBuf>(
    channel: &mut Channel,
    mut writer: Writer<T>,
    src: S,
    items: usize,
) -> Result<PendingCommit<T, S>, Box<Refused<T, S>>> {
    let ptr = match writer.reserve(items.max(1)) {
        Ok(space) => space.as_mut_ptr(),
        Err(e) => {
            return Err(Box::new(Refused {
                error: e.into(),
                writer,
                src,
            }))
        }
    };
    let res = Reservation {
        writer,
        ptr,
        len: items,
    };
    let len = items * std::mem::size_of::<T>();
    match channel.enqueue(
        Op::Copy {
            src: 0,
            dst: 0,
            len,
        },
        src,
        res,
    ) {
        Ok(ticket) => {
            channel.submit();
            Ok(PendingCommit { ticket, items })
        }
        Err(rej) => {
            let (src, res) = rej.buffers;
            Err(Box::new(Refused {
                error: rej.error.into(),
                writer: res.writer,
                src,
            }))
        }
    }
}

/// A channel on the [`shared_engine`].
pub fn shared_channel() -> Result<Channel, CopyError> {
    Ok(shared_engine()?.channel(Priority::NORMAL))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_copy::{BreakEven, Engine, EngineOptions};
    use sluice_queue::{channel, Flavor, QueueOptions, RingReader};

    fn engine() -> Engine {
        Engine::new(EngineOptions {
            break_even: BreakEven::never_inline(),
            ..EngineOptions::default()
        })
        .unwrap()
    }

    #[test]
    fn copies_commit_in_order_on_both_flavors_across_the_wrap() {
        for flavor in [Flavor::Mirrored, Flavor::Copying] {
            let opts = QueueOptions {
                flavor,
                ..QueueOptions::default()
            };
            let (mut w, mut r) = channel::<u32>(1024, &opts).unwrap();
            let engine = engine();
            let mut ch = engine.channel(Priority::NORMAL);
            let reader = std::thread::spawn(move || {
                let mut got = Vec::new();
                loop {
                    let win = r.window(1).unwrap();
                    if win.is_empty() {
                        break got;
                    }
                    let n = win.len();
                    got.extend_from_slice(win);
                    r.consume(n);
                }
            });
            let mut next = 0u32;
            for round in 0..40 {
                // 300 items a round: the reservations wrap around the 1024-item ring.
                let src: Vec<u32> = (next..next + 300).collect();
                next += 300;
                let pending = copy_into_queue(&mut ch, w, src, 300).unwrap();
                assert_eq!(pending.items(), 300, "round {round}");
                let (back, _) = pending.wait().unwrap();
                w = back;
            }
            w.finish();
            drop(w);
            let got = reader.join().unwrap();
            assert_eq!(got, (0..next).collect::<Vec<u32>>(), "{flavor:?}");
        }
    }

    #[test]
    fn a_dropped_pending_commit_ends_the_stream_without_committing() {
        let (w, mut r) = channel::<u64>(4096, &QueueOptions::default()).unwrap();
        let engine = engine();
        let mut ch = engine.channel(Priority::NORMAL);
        let pending = copy_into_queue(&mut ch, w, vec![7u64; 1000], 1000).unwrap();
        drop(pending);
        // The engine drops the writer after the copy: end of stream, nothing committed.
        assert!(r.window(1).unwrap().is_empty());
    }

    #[test]
    fn a_short_source_is_refused_and_everything_comes_back() {
        let (w, _r) = channel::<u32>(1024, &QueueOptions::default()).unwrap();
        let engine = engine();
        let mut ch = engine.channel(Priority::NORMAL);
        match copy_into_queue(&mut ch, w, vec![1u32; 10], 20) {
            Err(r) => {
                assert!(matches!(
                    r.error,
                    QueueCopyError::Copy(CopyError::OutOfBounds { .. })
                ));
                assert_eq!(r.src.len(), 10);
                assert_eq!(r.writer.items_written(), 0);
            }
            Ok(_) => panic!("a short source must be refused"),
        }
    }
}
