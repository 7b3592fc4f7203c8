//! Errors of the queue layer.

use thiserror::Error;

/// Everything that can go wrong creating or using a queue.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum QueueError {
    /// A window or reservation larger than the ring can ever hold was requested.
    #[error("requested {requested} items but the queue holds at most {capacity}")]
    TooLarge {
        /// Items asked for.
        requested: usize,
        /// The queue's capacity in items.
        capacity: usize,
    },
    /// Every reader has gone: nobody will ever consume what the writer produces.
    #[error("every reader of the queue has been dropped")]
    NoReaders,
    /// The queue was configured with a capacity of zero items.
    #[error("queue capacity must be at least one item")]
    ZeroCapacity,
    /// The item type has size zero, which a ring cannot store.
    #[error("zero-sized item types cannot be queued")]
    ZeroSizedItem,
    /// All reader slots are taken (see `QueueOptions::max_readers`).
    #[error("the queue already has its maximum of {max} readers")]
    TooManyReaders {
        /// The configured maximum.
        max: usize,
    },
    /// Huge pages were requested but the system has none available.
    #[error("huge pages requested but none are available (vm.nr_hugepages is {configured}); set it with `sysctl vm.nr_hugepages=N` or drop the huge-page option")]
    NoHugePages {
        /// The value of /proc/sys/vm/nr_hugepages (0 when unreadable).
        configured: u64,
    },
    /// An operating-system call failed while building the mapping.
    #[error("{call} failed: {message}")]
    Os {
        /// The call that failed.
        call: &'static str,
        /// The OS error text.
        message: String,
    },
    /// The two views of the mirrored mapping do not alias (checked at creation).
    #[error("the mirrored mapping does not alias: a write through one view was not visible in the other")]
    MirrorBroken,
    /// The process at the other end of a shared-memory ring broke its protocol (a counter out
    /// of range, a memory object of the wrong shape); nothing was read out of bounds.
    #[error("shared-memory peer {peer} broke the ring protocol: {message}")]
    PeerProtocol {
        /// Who: "the writer (pid 1234)".
        peer: String,
        /// What was wrong.
        message: String,
    },
    /// A reader was asked to start at an item the ring no longer holds (every reader has
    /// consumed it, so the writer may have overwritten it) or does not hold yet.
    #[error(
        "item {asked} is not in the queue: it holds items {oldest} to {newest} (exclusive) now"
    )]
    NotInRing {
        /// The absolute item index asked for.
        asked: u64,
        /// The oldest item still held (the slowest reader's position).
        oldest: u64,
        /// The next item the writer will publish.
        newest: u64,
    },
    /// The process at the other end of a shared-memory ring went away (dropped its end without
    /// ending the stream, or exited).
    #[error("shared-memory peer {peer} went away at item {offset} without ending the stream")]
    PeerGone {
        /// Who: "the reader (pid 1234)".
        peer: String,
        /// The stream position when it was found gone.
        offset: u64,
    },
}

impl QueueError {
    /// A failed system call as [`QueueError::Os`], naming the call.
    pub(crate) fn os(call: &'static str, err: rustix::io::Errno) -> Self {
        QueueError::Os {
            call,
            message: std::io::Error::from(err).to_string(),
        }
    }
}
