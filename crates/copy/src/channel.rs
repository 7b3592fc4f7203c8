//! Logical channels with priorities: each channel runs its operations one at a time in the
//! order they were enqueued (so they also complete in that order); different channels run in
//! parallel on the engine's workers, a free worker taking the oldest ready channel of the
//! highest priority. Operations not yet started can be cancelled.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::buffer::{DstBuf, SrcBuf};
use crate::engine::Inline;
use crate::error::{CopyError, Rejected};
use crate::job::Job;
use crate::op::{Extents, ItemSize, Op, Pattern, Plane, Segment, Transform};
use crate::ticket::{Completion, Slot, Ticket};

/// What enqueueing gives: a ticket, or the operation refused with its buffers handed back.
pub type Enqueued<B> = Result<Ticket<B>, Rejected<B>>;

/// Priority levels: 0 (lowest) to [`Priority::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Priority(u8);

impl Priority {
    /// The highest level.
    pub const MAX: u8 = 7;
    /// Level 0.
    pub const LOW: Priority = Priority(0);
    /// Level 3.
    pub const NORMAL: Priority = Priority(3);
    /// Level 7.
    pub const HIGH: Priority = Priority(7);

    /// Level `level`, clamped to `0..=MAX`.
    pub fn new(level: u8) -> Self {
        Priority(level.min(Self::MAX))
    }

    /// The level.
    pub fn level(self) -> u8 {
        self.0
    }
}

const LEVELS: usize = Priority::MAX as usize + 1;

struct ChanState {
    queue: VecDeque<Job>,
    busy: bool,
    priority: usize,
    completions: Option<VecDeque<Completion>>,
    /// The handle is gone: remove the state once idle and empty.
    closed: bool,
}

pub(crate) struct SchedState {
    channels: Vec<Option<ChanState>>,
    ready: [VecDeque<usize>; LEVELS],
    pub(crate) stopping: bool,
    /// Workers parked on `work` (only then does new work need a wake-up system call).
    parked: usize,
}

/// The scheduler shared by the engine's workers, its channels and their tickets.
pub(crate) struct Sched {
    state: Mutex<SchedState>,
    work: Condvar,
    /// Bumped whenever a channel becomes ready, so an idle worker can spin on it briefly
    /// before parking.
    generation: AtomicU64,
}

/// How long an idle worker watches for new work before it parks.
const SPIN: Duration = Duration::from_micros(50);

impl Sched {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Sched {
            state: Mutex::new(SchedState {
                channels: Vec::new(),
                ready: Default::default(),
                stopping: false,
                parked: 0,
            }),
            work: Condvar::new(),
            generation: AtomicU64::new(0),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, SchedState> {
        // Every critical section leaves the state consistent before anything can panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open(&self, priority: Priority, completions: bool) -> usize {
        let mut st = self.lock();
        let state = ChanState {
            queue: VecDeque::new(),
            busy: false,
            priority: usize::from(priority.level()),
            completions: completions.then(VecDeque::new),
            closed: false,
        };
        if let Some(i) = st.channels.iter().position(Option::is_none) {
            st.channels[i] = Some(state);
            i
        } else {
            st.channels.push(Some(state));
            st.channels.len() - 1
        }
    }

    /// The next job for a worker (marking its channel busy), waiting while there is none
    /// (watching briefly, then parked); `None` once the engine stops.
    pub(crate) fn next_job(&self) -> Option<(usize, Job)> {
        let mut st = self.lock();
        let mut spun = false;
        loop {
            if st.stopping {
                return None;
            }
            for level in (0..LEVELS).rev() {
                while let Some(c) = st.ready[level].pop_front() {
                    let Some(Some(ch)) = st.channels.get_mut(c) else {
                        continue;
                    };
                    if ch.busy {
                        continue;
                    }
                    if let Some(job) = ch.queue.pop_front() {
                        ch.busy = true;
                        return Some((c, job));
                    }
                }
            }
            if !spun {
                // Watch for new work a little while without the lock, so a steady stream of
                // submissions needs no wake-up system calls.
                spun = true;
                let seen = self.generation.load(Ordering::Acquire);
                drop(st);
                let start = Instant::now();
                while self.generation.load(Ordering::Acquire) == seen && start.elapsed() < SPIN {
                    std::hint::spin_loop();
                }
                st = self.lock();
                continue;
            }
            st.parked += 1;
            st = self.work.wait(st).unwrap_or_else(|e| e.into_inner());
            st.parked -= 1;
            spun = false;
        }
    }

    /// Marks channel `c` ready at `level`; whether a parked worker must be woken. Called with
    /// the lock held.
    fn make_ready(&self, st: &mut SchedState, level: usize, c: usize) -> bool {
        st.ready[level].push_back(c);
        self.generation.fetch_add(1, Ordering::Release);
        st.parked > 0
    }

    /// A worker finished `job` of channel `c`: record it, hand its buffers to the ticket (so
    /// a completed ticket's record is already in the completion queue), and make the channel
    /// ready again.
    pub(crate) fn job_done(&self, c: usize, job: Job, status: Result<(), CopyError>) {
        let mut st = self.lock();
        let mut wake = false;
        let mut remove = false;
        if let Some(Some(ch)) = st.channels.get_mut(c) {
            if let Some(q) = ch.completions.as_mut() {
                q.push_back(Completion {
                    seq: job.seq,
                    status: status.clone(),
                });
            }
            job.finish(status);
            ch.busy = false;
            let level = ch.priority;
            if !ch.queue.is_empty() {
                wake = self.make_ready(&mut st, level, c);
            } else if ch.closed {
                remove = true;
            }
        } else {
            job.finish(status);
        }
        if remove {
            st.channels[c] = None;
        }
        drop(st);
        if wake {
            self.work.notify_one();
        }
    }

    /// Removes job `seq` of channel `c` if it has not started, completing it as cancelled.
    pub(crate) fn cancel(&self, c: usize, seq: u64) -> bool {
        let mut st = self.lock();
        let Some(Some(ch)) = st.channels.get_mut(c) else {
            return false;
        };
        let Some(i) = ch.queue.iter().position(|j| j.seq == seq) else {
            return false;
        };
        let Some(job) = ch.queue.remove(i) else {
            return false;
        };
        if let Some(q) = ch.completions.as_mut() {
            q.push_back(Completion {
                seq,
                status: Err(CopyError::Cancelled),
            });
        }
        job.finish(Err(CopyError::Cancelled));
        true
    }

    /// Stops the workers; queued jobs are dropped, which completes them as stopped.
    pub(crate) fn stop(&self) {
        let mut st = self.lock();
        st.stopping = true;
        let jobs: Vec<Job> = st
            .channels
            .iter_mut()
            .flatten()
            .flat_map(|ch| ch.queue.drain(..))
            .collect();
        drop(st);
        drop(jobs);
        self.work.notify_all();
    }
}

/// Options of a channel.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChannelOptions {
    /// Its priority.
    pub priority: Priority,
    /// Keep a completion queue (drain it with [`Channel::completed`]).
    pub completion_queue: bool,
}

/// A logical channel: enqueue operations, [`submit`](Channel::submit) them as a batch, collect
/// their completions. Operations of one channel run and complete in enqueue order.
pub struct Channel {
    sched: Arc<Sched>,
    inline: Arc<Inline>,
    id: usize,
    next_seq: u64,
    staged: Vec<Job>,
    /// The slot of [`run_slices`](Channel::run_slices)' operations, reused: each is over
    /// before the call returns, so one slot serves them all without allocating.
    sync_slot: Arc<Slot>,
    /// The break-even size of copies, kept here for `copy_slice`'s fast path.
    copy_break_even: usize,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("id", &self.id)
            .field("staged", &self.staged.len())
            .finish()
    }
}

impl Channel {
    pub(crate) fn open(sched: Arc<Sched>, inline: Arc<Inline>, opts: ChannelOptions) -> Self {
        let id = sched.open(opts.priority, opts.completion_queue);
        let copy_break_even = inline.break_even.threshold(crate::op::OpKind::Copy);
        Channel {
            sched,
            inline,
            id,
            next_seq: 0,
            staged: Vec::new(),
            sync_slot: Slot::new(),
            copy_break_even,
        }
    }

    fn stage<B: Send + 'static>(
        &mut self,
        op: Op,
        mut buffers: Box<B>,
        slot: Arc<Slot>,
        ptrs: impl FnOnce(&mut B) -> (Extents, *const u8, *mut u8),
    ) -> Result<Ticket<B>, Rejected<B>> {
        // The pointers are taken after the buffers reached their box: they point into the
        // buffers' own heap memory, which stays put however the box moves.
        let (ext, src, dst) = ptrs(&mut buffers);
        if let Err(error) = op.validate(ext) {
            return Err(Rejected {
                error,
                buffers: *buffers,
            });
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.staged
            .push(Job::new(op, src, dst, buffers, slot.clone(), seq));
        Ok(Ticket::new(slot, self.sched.clone(), self.id, seq))
    }

    /// Enqueues `op` reading `src` and writing `dst` (not started until [`submit`](Self::submit)).
    /// A fill ignores `src`. The operation is checked now: on error nothing is enqueued and
    /// the buffers come back in the [`Rejected`].
    pub fn enqueue<S: SrcBuf, D: DstBuf>(&mut self, op: Op, src: S, dst: D) -> Enqueued<(S, D)> {
        self.stage(op, Box::new((src, dst)), Slot::new(), |(s, d)| {
            let (dp, dl) = (d.dst_ptr(), d.dst_len());
            let (sp, sl) = (s.src_ptr(), s.src_len());
            (
                Extents {
                    src: Some((sp as usize, sl)),
                    dst: (dp as usize, dl),
                },
                sp,
                dp,
            )
        })
    }

    /// Enqueues `op` with one buffer as both source and destination (a copy within a buffer,
    /// or a fill). Regions that overlap are rejected.
    pub fn enqueue_within<D: DstBuf>(&mut self, op: Op, buf: D) -> Enqueued<D> {
        self.stage(op, Box::new(buf), Slot::new(), |d| {
            let (dp, dl) = (d.dst_ptr(), d.dst_len());
            (
                Extents {
                    src: Some((dp as usize, dl)),
                    dst: (dp as usize, dl),
                },
                dp.cast_const(),
                dp,
            )
        })
    }

    /// Enqueues a copy of all of `src` to the start of `dst`.
    pub fn copy<S: SrcBuf, D: DstBuf>(&mut self, src: S, dst: D) -> Enqueued<(S, D)> {
        let len = src.src_len();
        self.enqueue(
            Op::Copy {
                src: 0,
                dst: 0,
                len,
            },
            src,
            dst,
        )
    }

    /// Enqueues a fill of all of `dst` with `pattern`.
    pub fn fill<D: DstBuf>(&mut self, dst: D, pattern: Pattern) -> Enqueued<D> {
        let len = dst.dst_len();
        self.enqueue_within(
            Op::Fill {
                dst: 0,
                len,
                pattern,
            },
            dst,
        )
    }

    /// Enqueues a 2-D copy of `rows` rows of `row_bytes` bytes, `src_stride`/`dst_stride`
    /// bytes apart, from the start of each buffer.
    pub fn copy_2d<S: SrcBuf, D: DstBuf>(
        &mut self,
        src: S,
        dst: D,
        row_bytes: usize,
        rows: usize,
        src_stride: usize,
        dst_stride: usize,
    ) -> Enqueued<(S, D)> {
        let op = Op::Copy2d {
            src: Plane {
                offset: 0,
                stride: src_stride,
            },
            dst: Plane {
                offset: 0,
                stride: dst_stride,
            },
            row_bytes,
            rows,
        };
        self.enqueue(op, src, dst)
    }

    /// Enqueues a rotation of a dense `width` × `height` image of `item`-sized items (rows
    /// packed, from the start of each buffer).
    pub fn rotate<S: SrcBuf, D: DstBuf>(
        &mut self,
        src: S,
        dst: D,
        width: usize,
        height: usize,
        item: ItemSize,
        transform: Transform,
    ) -> Enqueued<(S, D)> {
        let b = item.bytes();
        let out_w = if transform.swaps_axes() {
            height
        } else {
            width
        };
        let op = Op::Rotate {
            src: Plane {
                offset: 0,
                stride: width.saturating_mul(b),
            },
            dst: Plane {
                offset: 0,
                stride: out_w.saturating_mul(b),
            },
            width,
            height,
            item,
            transform,
        };
        self.enqueue(op, src, dst)
    }

    /// Enqueues a keyed (transparent) copy of all of `src` to the start of `dst`: items equal
    /// to `key` (whose length is the item size) are not written.
    pub fn keyed_copy<S: SrcBuf, D: DstBuf>(
        &mut self,
        src: S,
        dst: D,
        key: &[u8],
    ) -> Enqueued<(S, D)> {
        let item = match ItemSize::from_bytes(key.len()) {
            Ok(i) => i,
            Err(error) => {
                return Err(Rejected {
                    error,
                    buffers: (src, dst),
                })
            }
        };
        let mut k = [0u8; 16];
        k[..key.len()].copy_from_slice(key);
        let len = src.src_len();
        self.enqueue(
            Op::KeyedCopy {
                src: 0,
                dst: 0,
                len,
                item,
                key: k,
            },
            src,
            dst,
        )
    }

    /// Enqueues a scatter-gather copy.
    pub fn copy_sg<S: SrcBuf, D: DstBuf>(
        &mut self,
        src: S,
        src_list: Vec<Segment>,
        dst: D,
        dst_list: Vec<Segment>,
    ) -> Enqueued<(S, D)> {
        self.enqueue(
            Op::Sg {
                src: src_list,
                dst: dst_list,
            },
            src,
            dst,
        )
    }

    /// Copies `src` into `dst` (of equal length) and returns when the copy is done: the
    /// synchronous form for borrowed memory. Below the break-even size it is a plain `memcpy`
    /// on the caller; above, see [`run_slices`](Self::run_slices).
    #[inline]
    pub fn copy_slice(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CopyError> {
        if src.len() == dst.len() && src.len() < self.copy_break_even {
            dst.copy_from_slice(src);
            return Ok(());
        }
        self.copy_slice_slow(src, dst)
    }

    #[cold]
    #[inline(never)]
    fn copy_slice_slow(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CopyError> {
        if src.len() != dst.len() {
            return Err(CopyError::LengthMismatch {
                src: src.len(),
                dst: dst.len(),
            });
        }
        self.run_slices(
            Op::Copy {
                src: 0,
                dst: 0,
                len: src.len(),
            },
            src,
            dst,
        )
    }

    /// Runs `op` from `src` into `dst` and returns when it is done: the synchronous form for
    /// borrowed memory (a queue window and a queue reservation, say). Checked like any
    /// operation; below the break-even size it runs on the caller, above it runs on the
    /// engine (after everything this channel has in flight, which it submits) while the
    /// caller's thread parks.
    pub fn run_slices(&mut self, op: Op, src: &[u8], dst: &mut [u8]) -> Result<(), CopyError> {
        op.validate(Extents {
            src: Some((src.as_ptr() as usize, src.len())),
            dst: (dst.as_ptr() as usize, dst.len()),
        })?;
        if self.inline.prefers_inline(&op) {
            // SAFETY: validated just above against these slices; `&[u8]` and `&mut [u8]`
            // are valid for the call and cannot alias.
            return unsafe { self.inline.run(&op, src.as_ptr(), dst.as_mut_ptr()) };
        }
        // On the engine, allocating nothing (a real-time caller may be here): the job owns no
        // buffers (`()`, whose box does not allocate), since it works on the caller's slices,
        // which stay borrowed until this function returns, and it returns only after the
        // operation is over (`wait` returns once the job ran, was cancelled, or was dropped
        // unstarted); `&[u8]` and `&mut [u8]` cannot overlap, and nothing else may touch
        // `dst` while it is mutably borrowed here. The job reuses the channel's synchronous
        // slot: the previous synchronous operation was over before its call returned.
        let ext = Extents {
            src: Some((src.as_ptr() as usize, src.len())),
            dst: (dst.as_ptr() as usize, dst.len()),
        };
        let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
        self.sync_slot.reset();
        let slot = self.sync_slot.clone();
        let ticket = self
            .stage(op, Box::new(()), slot, |_| (ext, sp, dp))
            .map_err(|r| r.error)?;
        self.submit();
        ticket.wait().status
    }

    /// Starts everything enqueued since the last submit, in order; returns how many.
    ///
    /// While the channel has nothing in flight, leading operations smaller than the engine's
    /// break-even size for their kind run right here on the caller's thread (they are
    /// complete when `submit` returns); the rest go to the workers.
    pub fn submit(&mut self) -> usize {
        let n = self.staged.len();
        if n == 0 {
            return 0;
        }
        // Taken out and put back empty, so that its capacity is kept: staging and submitting
        // allocate nothing once it has grown.
        let mut staged = std::mem::take(&mut self.staged);
        let n = self.submit_staged(&mut staged);
        staged.clear();
        self.staged = staged;
        n
    }

    /// Submits `staged` (see [`submit`](Self::submit)), leaving it empty; returns how many.
    fn submit_staged(&self, staged: &mut Vec<Job>) -> usize {
        let n = staged.len();
        // Inline prefix: only while nothing of this channel is queued or running, so order holds.
        let idle = {
            let st = self.sched.lock();
            !st.stopping
                && st.channels[self.id]
                    .as_ref()
                    .is_some_and(|c| !c.busy && c.queue.is_empty())
        };
        let inline = if idle {
            staged
                .iter()
                .take_while(|j| self.inline.prefers_inline(&j.op))
                .count()
        } else {
            0
        };
        for job in staged.drain(..inline) {
            job.slot().set_submitted();
            // SAFETY: the job was validated against its buffers at enqueue and owns them (or,
            // from `run_slices`, works on slices borrowed until it is over); this channel has
            // nothing in flight, so nothing else touches them.
            let status = unsafe { self.inline.run(&job.op, job.src, job.dst) };
            self.record(job, status);
        }
        if staged.is_empty() {
            return n;
        }
        let mut st = self.sched.lock();
        if st.stopping {
            drop(st);
            staged.clear(); // completes them as stopped
            return n;
        }
        let Some(ch) = st.channels[self.id].as_mut() else {
            drop(st);
            staged.clear(); // completes them as stopped
            return n;
        };
        for job in staged.drain(..) {
            job.slot().set_submitted();
            ch.queue.push_back(job);
        }
        let level = ch.priority;
        let wake = !ch.busy && self.sched.make_ready(&mut st, level, self.id);
        drop(st);
        if wake {
            self.sched.work.notify_one();
        }
        n
    }

    /// Records an inline job's completion, then completes its ticket.
    fn record(&self, job: Job, status: Result<(), CopyError>) {
        let mut st = self.sched.lock();
        if let Some(Some(ch)) = st.channels.get_mut(self.id) {
            if let Some(q) = ch.completions.as_mut() {
                q.push_back(Completion {
                    seq: job.seq,
                    status: status.clone(),
                });
            }
        }
        job.finish(status);
    }

    /// Moves the completion records gathered so far (in completion order, which is enqueue
    /// order) into `out`; returns how many. Needs [`ChannelOptions::completion_queue`].
    pub fn completed(&mut self, out: &mut Vec<Completion>) -> usize {
        let mut st = self.sched.lock();
        match st.channels.get_mut(self.id) {
            Some(Some(ChanState {
                completions: Some(q),
                ..
            })) => {
                let n = q.len();
                out.extend(q.drain(..));
                n
            }
            _ => 0,
        }
    }

    /// Operations submitted and not yet finished, plus those enqueued and not submitted.
    pub fn pending(&self) -> usize {
        let st = self.sched.lock();
        let queued = st.channels[self.id]
            .as_ref()
            .map_or(0, |c| c.queue.len() + usize::from(c.busy));
        queued + self.staged.len()
    }

    /// Cancels everything submitted that has not started and everything enqueued and not
    /// submitted; returns how many.
    pub fn cancel_pending(&mut self) -> usize {
        let staged = std::mem::take(&mut self.staged);
        let mut n = staged.len();
        for job in staged {
            job.finish(Err(CopyError::Cancelled));
        }
        let mut st = self.sched.lock();
        let jobs: Vec<Job> = st.channels[self.id]
            .as_mut()
            .map(|c| c.queue.drain(..).collect())
            .unwrap_or_default();
        if let Some(Some(ch)) = st.channels.get_mut(self.id) {
            if let Some(q) = ch.completions.as_mut() {
                q.extend(jobs.iter().map(|j| Completion {
                    seq: j.seq,
                    status: Err(CopyError::Cancelled),
                }));
            }
        }
        n += jobs.len();
        for job in jobs {
            job.finish(Err(CopyError::Cancelled));
        }
        n
    }
}

impl Drop for Channel {
    /// Operations enqueued and never submitted are cancelled; submitted ones still run.
    fn drop(&mut self) {
        for job in self.staged.drain(..) {
            job.finish(Err(CopyError::Cancelled));
        }
        let mut st = self.sched.lock();
        if let Some(Some(ch)) = st.channels.get_mut(self.id) {
            if ch.busy || !ch.queue.is_empty() {
                ch.closed = true;
            } else {
                st.channels[self.id] = None;
            }
        }
    }
}
