//! Tickets: the caller's handle on one submitted operation. Poll it, wait on it (the thread
//! parks on a condition variable, no spinning), or collect completions from the channel's
//! completion queue; the buffers come back through the ticket.
//!
//! The engine owns the buffers until the operation is over. Dropping a ticket is always fine:
//! the engine finishes (or cancels) the operation and then drops the buffers itself.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::channel::Sched;
use crate::error::CopyError;

/// Where an operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Enqueued on its channel, not yet submitted.
    Staged,
    /// Submitted; it may be running.
    Submitted,
    /// Finished, cancelled or failed.
    Done,
}

pub(crate) struct SlotState {
    pub(crate) phase: Phase,
    status: Option<Result<(), CopyError>>,
    owner: Option<Box<dyn Any + Send>>,
    /// A ticket is parked on `done` (so completion must wake it).
    waiting: bool,
}

/// The meeting point of a job and its ticket.
pub(crate) struct Slot {
    state: Mutex<SlotState>,
    done: Condvar,
}

impl Slot {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Slot {
            state: Mutex::new(SlotState {
                phase: Phase::Staged,
                status: None,
                owner: None,
                waiting: false,
            }),
            done: Condvar::new(),
        })
    }

    /// Makes a slot whose operation is over new again, for the next operation.
    pub(crate) fn reset(&self) {
        *self.lock() = SlotState {
            phase: Phase::Staged,
            status: None,
            owner: None,
            waiting: false,
        };
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, SlotState> {
        // A panic while holding this lock cannot leave it inconsistent (plain assignments).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set_submitted(&self) {
        let mut s = self.lock();
        if s.phase == Phase::Staged {
            s.phase = Phase::Submitted;
        }
    }

    /// Records the outcome and hands the buffers over; wakes a waiting ticket.
    pub(crate) fn complete(&self, status: Result<(), CopyError>, owner: Box<dyn Any + Send>) {
        let mut s = self.lock();
        s.phase = Phase::Done;
        s.status = Some(status);
        s.owner = Some(owner);
        let wake = s.waiting;
        drop(s);
        // Only a parked ticket needs the (system-call) wake-up.
        if wake {
            self.done.notify_all();
        }
    }
}

/// A finished operation: its buffers and whether it ran.
#[derive(Debug)]
pub struct Completed<B> {
    /// The buffers, handed back.
    pub buffers: B,
    /// `Ok` if the operation ran to the end; otherwise why not (cancelled, engine stopped,
    /// backend failure).
    pub status: Result<(), CopyError>,
}

impl<B> Completed<B> {
    /// The buffers if the operation ran, else the error (dropping the buffers).
    pub fn into_result(self) -> Result<B, CopyError> {
        self.status.map(|()| self.buffers)
    }
}

/// One record of a channel's completion queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The operation's sequence number on its channel (see [`Ticket::seq`]).
    pub seq: u64,
    /// Its outcome.
    pub status: Result<(), CopyError>,
}

/// The caller's handle on a submitted operation whose buffers are `B`.
pub struct Ticket<B: Send + 'static> {
    slot: Arc<Slot>,
    sched: Arc<Sched>,
    channel: usize,
    seq: u64,
    _buffers: PhantomData<fn() -> B>,
}

impl<B: Send + 'static> std::fmt::Debug for Ticket<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("channel", &self.channel)
            .field("seq", &self.seq)
            .field("done", &self.is_done())
            .finish()
    }
}

impl<B: Send + 'static> Ticket<B> {
    pub(crate) fn new(slot: Arc<Slot>, sched: Arc<Sched>, channel: usize, seq: u64) -> Self {
        Ticket {
            slot,
            sched,
            channel,
            seq,
            _buffers: PhantomData,
        }
    }

    /// The operation's sequence number on its channel (0, 1, 2, … in enqueue order).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Whether the operation is over (finished, cancelled or failed).
    pub fn is_done(&self) -> bool {
        self.slot.lock().phase == Phase::Done
    }

    fn take(mut s: MutexGuard<'_, SlotState>) -> Completed<B> {
        let owner = s.owner.take();
        let status = s.status.take().unwrap_or(Err(CopyError::Stopped));
        drop(s);
        match owner.map(|o| o.downcast::<B>()) {
            Some(Ok(buffers)) => Completed {
                buffers: *buffers,
                status,
            },
            // The job was built from exactly these buffers; anything else is a bug here.
            _ => panic!("sluice-copy: ticket's buffers missing or of another type"),
        }
    }

    /// The outcome if the operation is over, else the ticket back.
    pub fn try_take(self) -> Result<Completed<B>, Self> {
        let s = self.slot.lock();
        if s.phase == Phase::Done {
            return Ok(Self::take(s));
        }
        drop(s);
        Err(self)
    }

    /// Blocks (parked, no spinning) until the operation is over.
    ///
    /// Panics if the operation was enqueued but its channel never submitted it: waiting would
    /// never end (call [`Channel::submit`](crate::Channel::submit) first).
    pub fn wait(self) -> Completed<B> {
        let mut s = self.slot.lock();
        loop {
            match s.phase {
                Phase::Done => return Self::take(s),
                Phase::Staged => panic!(
                    "sluice-copy: waiting on operation {} of channel {} before its channel submitted it",
                    self.seq, self.channel
                ),
                Phase::Submitted => {
                    s.waiting = true;
                    s = self.slot.done.wait(s).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
    }

    /// Like [`wait`](Self::wait), but gives the ticket back if `timeout` passes first.
    pub fn wait_timeout(self, timeout: Duration) -> Result<Completed<B>, Self> {
        let deadline = Instant::now() + timeout;
        let mut s = self.slot.lock();
        loop {
            if s.phase == Phase::Done {
                return Ok(Self::take(s));
            }
            let now = Instant::now();
            if now >= deadline || s.phase == Phase::Staged {
                drop(s);
                return Err(self);
            }
            s.waiting = true;
            s = self
                .slot
                .done
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Cancels the operation if it has been submitted but has not started; returns whether it
    /// did. A cancelled operation completes with [`CopyError::Cancelled`] and its buffers
    /// untouched.
    pub fn cancel(&self) -> bool {
        self.sched.cancel(self.channel, self.seq)
    }
}
