//! A job: one validated operation, the raw addresses it works on, and the owner of the buffers
//! those addresses point into.

use std::any::Any;
use std::sync::Arc;

use crate::error::CopyError;
use crate::op::Op;
use crate::ticket::Slot;

/// One operation on its way through the engine.
pub(crate) struct Job {
    pub(crate) op: Op,
    /// Source start (the destination's for a fill, unused).
    pub(crate) src: *const u8,
    /// Destination start.
    pub(crate) dst: *mut u8,
    /// The buffers `src` and `dst` point into (`()` for `run_slices`, whose caller keeps them
    /// borrowed); `None` once handed to the slot.
    owner: Option<Box<dyn Any + Send>>,
    slot: Arc<Slot>,
    pub(crate) seq: u64,
}

// SAFETY: `src` and `dst` point into the heap memory of `owner` (a `SrcBuf`/`DstBuf`, both
// `Send`, whose bytes do not move with the value), which travels with the job; or, for a job
// of `Channel::run_slices` (whose owner is `()`), into slices that call keeps borrowed until
// the job is over. Either way the job is the only user of those bytes until it completes.
unsafe impl Send for Job {}

impl Job {
    /// A job over `owner`'s buffers at `src`/`dst` (already validated against `op`).
    pub(crate) fn new(
        op: Op,
        src: *const u8,
        dst: *mut u8,
        owner: Box<dyn Any + Send>,
        slot: Arc<Slot>,
        seq: u64,
    ) -> Self {
        Job {
            op,
            src,
            dst,
            owner: Some(owner),
            slot,
            seq,
        }
    }

    pub(crate) fn slot(&self) -> &Arc<Slot> {
        &self.slot
    }

    /// Reports the outcome and hands the buffers to the ticket.
    pub(crate) fn finish(mut self, status: Result<(), CopyError>) {
        if let Some(owner) = self.owner.take() {
            self.slot.complete(status, owner);
        }
    }
}

impl Drop for Job {
    /// A job dropped unfinished (engine stopped, channel dropped before `submit`) never
    /// touched its buffers: they go back to the ticket.
    fn drop(&mut self) {
        if let Some(owner) = self.owner.take() {
            self.slot.complete(Err(CopyError::Stopped), owner);
        }
    }
}
