//! The engine: worker threads that run the channels' operations on a [`Backend`], and the
//! break-even rule that keeps small operations on the caller's thread.

use std::sync::Arc;
use std::thread::JoinHandle;

use crate::breakeven::BreakEven;
use crate::channel::{Channel, ChannelOptions, Priority, Sched};
use crate::cpu::{CpuBackend, Kernels, Strategy};
use crate::error::CopyError;
use crate::op::Op;

/// What actually moves the bytes of an operation.
///
/// The engine validates every operation, owns its buffers, schedules it by channel and
/// priority, and calls [`execute`](Backend::execute) from one of its worker threads (one
/// operation at a time per worker). A hardware engine fits behind this trait: an Intel DSA
/// backend would turn `execute` into a descriptor written to its idxd work queue (`ENQCMD` /
/// `MOVDIR64B` on a mapped portal) and wait on the completion record (`UMWAIT`); a GPU backend
/// into a `cudaMemcpy2DAsync` on a stream and a wait on its event. Operations a backend does
/// not [`support`](Backend::supports) run on the CPU kernels instead.
pub trait Backend: Send + Sync + 'static {
    /// A short name, for errors and reports.
    fn name(&self) -> &'static str;

    /// Whether this backend runs `op` (the engine runs the others on the CPU).
    fn supports(&self, op: &Op) -> bool {
        let _ = op;
        true
    }

    /// Called once on each worker thread before it takes jobs (to open a portal, bind a
    /// context, and so on).
    fn attach_worker(&self, worker: usize) {
        let _ = worker;
    }

    /// Runs `op` to completion.
    ///
    /// # Safety
    ///
    /// `op` has passed [`Op::validate`] against regions starting at `src` (for operations with
    /// a source) and `dst`, whose lengths it checked; those regions are valid for reads
    /// (`src`) and reads and writes (`dst`), and nothing else accesses them until this returns.
    unsafe fn execute(&self, op: &Op, src: *const u8, dst: *mut u8) -> Result<(), CopyError>;
}

/// How to build an [`Engine`].
#[derive(Clone)]
pub struct EngineOptions {
    /// Worker threads (at least 1).
    pub workers: usize,
    /// CPUs to pin the workers to, round robin (none: unpinned). Pinning that the OS refuses
    /// is reported by [`Engine::pinned`], not an error.
    pub cpus: Vec<usize>,
    /// Sizes below which operations run on the caller ([`BreakEven::for_this_machine`] by
    /// default).
    pub break_even: BreakEven,
    /// The backend (the CPU backend when `None`).
    pub backend: Option<Arc<dyn Backend>>,
    /// The CPU kernels' strategy ([`Strategy::detect`] when `None`).
    pub strategy: Option<Strategy>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            workers: 1,
            cpus: Vec::new(),
            break_even: BreakEven::for_this_machine(),
            backend: None,
            strategy: None,
        }
    }
}

impl std::fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineOptions")
            .field("workers", &self.workers)
            .field("cpus", &self.cpus)
            .field("break_even", &self.break_even)
            .field("backend", &self.backend.as_ref().map(|b| b.name()))
            .finish()
    }
}

/// The caller-side runner: the CPU kernels and the break-even table.
pub(crate) struct Inline {
    kernels: Kernels,
    pub(crate) break_even: BreakEven,
}

impl Inline {
    pub(crate) fn prefers_inline(&self, op: &Op) -> bool {
        op.bytes() < self.break_even.threshold(op.kind())
    }

    /// # Safety
    ///
    /// As for [`Backend::execute`].
    pub(crate) unsafe fn run(
        &self,
        op: &Op,
        src: *const u8,
        dst: *mut u8,
    ) -> Result<(), CopyError> {
        // SAFETY: forwarded contract.
        unsafe { self.kernels.run(op, src, dst) };
        Ok(())
    }
}

/// The asynchronous copy engine: open [`Channel`]s on it, enqueue operations, submit them.
///
/// Dropping the engine lets running operations finish, completes the queued ones with
/// [`CopyError::Stopped`] (their buffers untouched, back through their tickets), and joins the
/// workers.
pub struct Engine {
    sched: Arc<Sched>,
    inline: Arc<Inline>,
    workers: Vec<JoinHandle<()>>,
    pinned: Vec<bool>,
    backend_name: &'static str,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("workers", &self.workers.len())
            .field("backend", &self.backend_name)
            .finish()
    }
}

/// Pins the calling thread to `cpu`; whether the OS agreed.
fn pin_to(cpu: usize) -> bool {
    sluice_os::pin_current_thread(cpu).is_ok()
}

impl Engine {
    /// An engine with `opts`. Fails only if a worker thread cannot be spawned.
    pub fn new(opts: EngineOptions) -> std::io::Result<Self> {
        let kernels = opts
            .strategy
            .clone()
            .map_or_else(Kernels::detect, Kernels::with_strategy);
        let backend: Arc<dyn Backend> = opts
            .backend
            .clone()
            .unwrap_or_else(|| Arc::new(CpuBackend::new(kernels.clone())));
        let sched = Sched::new();
        let inline = Arc::new(Inline {
            kernels: kernels.clone(),
            break_even: opts.break_even.clone(),
        });
        let mut workers = Vec::new();
        let (tx, rx) = std::sync::mpsc::channel();
        for w in 0..opts.workers.max(1) {
            let worker_sched = sched.clone();
            let backend = backend.clone();
            let kernels = kernels.clone();
            let cpu = (!opts.cpus.is_empty()).then(|| opts.cpus[w % opts.cpus.len()]);
            let tx = tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("sluice-copy-{w}"))
                .spawn(move || {
                    let pinned = cpu.is_some_and(pin_to);
                    let _ = tx.send((w, pinned));
                    drop(tx);
                    backend.attach_worker(w);
                    worker(&worker_sched, &*backend, &kernels);
                });
            match spawned {
                Ok(h) => workers.push(h),
                Err(e) => {
                    sched.stop();
                    for h in workers {
                        let _ = h.join();
                    }
                    return Err(e);
                }
            }
        }
        drop(tx);
        let mut pinned = vec![false; workers.len()];
        for (w, p) in rx.iter() {
            pinned[w] = p;
        }
        Ok(Engine {
            sched,
            inline,
            workers,
            pinned,
            backend_name: backend.name(),
        })
    }

    /// An engine with one worker and the defaults.
    pub fn with_defaults() -> std::io::Result<Self> {
        Self::new(EngineOptions::default())
    }

    /// Opens a channel with `opts`.
    pub fn channel_with(&self, opts: ChannelOptions) -> Channel {
        Channel::open(self.sched.clone(), self.inline.clone(), opts)
    }

    /// Opens a channel of this priority without a completion queue.
    pub fn channel(&self, priority: Priority) -> Channel {
        self.channel_with(ChannelOptions {
            priority,
            completion_queue: false,
        })
    }

    /// Per worker, whether it was pinned to its CPU.
    pub fn pinned(&self) -> &[bool] {
        &self.pinned
    }

    /// The backend's name.
    pub fn backend_name(&self) -> &'static str {
        self.backend_name
    }

    /// The break-even table in use.
    pub fn break_even(&self) -> &BreakEven {
        &self.inline.break_even
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.sched.stop();
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

fn worker(sched: &Sched, backend: &dyn Backend, kernels: &Kernels) {
    while let Some((channel, job)) = sched.next_job() {
        let run = || {
            if backend.supports(&job.op) {
                // SAFETY: the job was validated against its buffers at enqueue and owns them;
                // its channel is marked busy, so no other worker or inline run touches them.
                unsafe { backend.execute(&job.op, job.src, job.dst) }
            } else {
                // SAFETY: as above.
                unsafe { kernels.run(&job.op, job.src, job.dst) };
                Ok(())
            }
        };
        // A panicking backend fails this operation, not the worker and its channel.
        let status =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|_| {
                Err(CopyError::Backend {
                    backend: backend.name(),
                    reason: "panicked".to_string(),
                })
            });
        sched.job_done(channel, job, status);
    }
}
