//! One running set of impulse responses: the input ring, the levels and their schedule.
//!
//! Each internal period `k` (`n0` samples) the callback:
//! 1. writes the input into the ring (`[k*n0, (k+1)*n0)`),
//! 2. runs this period's slice of every cooperative level,
//! 3. for every level whose period ends now (`(k+1)*n0 % S == 0`, block `j = (k+1)*n0/S - 1`)
//!    computes it inline (level 0, single-thread mode), starts it (cooperative) or posts it to
//!    its worker (threaded),
//! 4. sums into each output the due segment of every level: level `l` block `j` covers output
//!    samples `[j*S + offset, j*S + offset + S)`; with `offset >= 2S - n0` the block is due no
//!    earlier than the period ending at `(j+2)*S`, one full period after it was posted.
//!
//! See [`crate::handshake`] for the protocol between callback and workers.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use rustfft::FftPlanner;

use crate::handshake::{worker_loop, Epoch, LevelSync, RaceBuf};
use crate::level::{LevelCore, LevelOut};
use crate::partition::offsets;
use crate::sync::{AtomicBool, Ordering};
use crate::{ConvError, IrMatrix, LatePolicy, Level, Scheduling};
use sluice_os::DenormalGuard;

/// State shared between the callback and the workers.
struct Shared {
    /// Time-domain input ring per input channel.
    ring: Vec<RaceBuf>,
    /// Output slots per level.
    outs: Vec<LevelOut>,
    sync: Vec<LevelSync>,
    /// The word the workers sleep on; bumped once per callback that posts work.
    epoch: Epoch,
    stop: AtomicBool,
}

enum Lane {
    Inline(Box<LevelCore>),
    Coop {
        core: Box<LevelCore>,
        block: u64,
        slice: usize,
        active: bool,
    },
    Threaded {
        /// Jobs posted so far (wrapping), mirrors `sync.posted`.
        seq: u32,
        /// `seq` at the last reset: block `j` is job `seq_base + j`.
        seq_base: u32,
    },
}

/// Counters kept by the engine.
#[derive(Clone, Debug, Default)]
pub(crate) struct EngineCounters {
    pub late_periods: u64,
    pub late_per_level: Vec<u64>,
    pub waits: u64,
    pub wake_calls: u64,
}

pub(crate) struct Engine {
    n0: usize,
    outputs: usize,
    levels: Vec<Level>,
    offsets: Vec<usize>,
    shared: Arc<Shared>,
    level0: Box<LevelCore>,
    /// Lanes of levels 1.. (index `l - 1`).
    lanes: Vec<Lane>,
    /// Whether each level's due segment is ready this period (scratch, no allocation).
    ready: Vec<bool>,
    k: u64,
    wake_mask: u32,
    late_policy: LatePolicy,
    pub counters: EngineCounters,
    pub realtime_granted: bool,
    pub threads: usize,
    workers: Vec<JoinHandle<()>>,
}

fn bit(l: usize) -> u32 {
    1u32 << (l % 32)
}

impl Engine {
    pub(crate) fn new(
        n0: usize,
        levels: &[Level],
        irs: &IrMatrix,
        scheduling: &Scheduling,
        late_policy: LatePolicy,
    ) -> Result<Self, ConvError> {
        let offs = offsets(levels);
        let max_size = levels.iter().map(|l| l.size).max().unwrap_or(n0);
        let ring_len = (4 * max_size).max(2 * n0);
        let mut planner = FftPlanner::<f32>::new();
        let mut cores: Vec<LevelCore> = levels
            .iter()
            .zip(&offs)
            .map(|(l, &o)| LevelCore::new(&mut planner, l.size, l.count, o, irs))
            .collect();
        let outs = levels
            .iter()
            .zip(&offs)
            .zip(&cores)
            .map(|((l, &o), core)| {
                let nslots = o.div_ceil(l.size) + 1;
                LevelOut {
                    size: l.size,
                    nslots,
                    buf: RaceBuf::new(irs.outputs() * nslots * l.size),
                    active: (0..irs.outputs()).map(|o| core.output_active(o)).collect(),
                }
            })
            .collect();
        let shared = Arc::new(Shared {
            ring: (0..irs.inputs()).map(|_| RaceBuf::new(ring_len)).collect(),
            outs,
            sync: levels.iter().map(|_| LevelSync::new()).collect(),
            epoch: Epoch::new(),
            stop: AtomicBool::new(false),
        });
        let mut rest = cores.split_off(1);
        let level0 = Box::new(cores.pop().expect("at least one level"));
        let mut lanes = Vec::new();
        let mut workers = Vec::new();
        let mut realtime_granted = false;
        let mut engine_ok = Ok(());
        let (tx, rx) = mpsc::channel::<bool>();
        for (idx, core) in rest.drain(..).enumerate() {
            let l = idx + 1;
            match scheduling {
                Scheduling::SingleThread => lanes.push(Lane::Inline(Box::new(core))),
                Scheduling::Cooperative => lanes.push(Lane::Coop {
                    core: Box::new(core),
                    block: 0,
                    slice: 0,
                    active: false,
                }),
                Scheduling::Threaded {
                    pin_cores,
                    realtime_priority,
                } => {
                    let shared2 = Arc::clone(&shared);
                    let pin = pin_cores
                        .as_ref()
                        .filter(|c| !c.is_empty())
                        .map(|c| c[(l - 1) % c.len()]);
                    let prio = realtime_priority.map(|p| p - (l as i32 - 1));
                    let tx = tx.clone();
                    let spawned = std::thread::Builder::new()
                        .name(format!("sluice-conv-l{l}"))
                        .spawn(move || worker(core, l, shared2, pin, prio, tx));
                    match spawned {
                        Ok(h) => {
                            workers.push(h);
                            lanes.push(Lane::Threaded {
                                seq: 0,
                                seq_base: 0,
                            });
                        }
                        Err(e) => {
                            engine_ok = Err(ConvError::Spawn(e));
                            break;
                        }
                    }
                }
            }
        }
        drop(tx);
        let mut granted_all = !workers.is_empty();
        for _ in 0..workers.len() {
            granted_all &= rx.recv().unwrap_or(false);
        }
        if !workers.is_empty() {
            realtime_granted = granted_all;
        }
        let threads = workers.len();
        let engine = Self {
            n0,
            outputs: irs.outputs(),
            levels: levels.to_vec(),
            offsets: offs,
            shared,
            level0,
            lanes,
            ready: vec![false; levels.len()],
            k: 0,
            wake_mask: 0,
            late_policy,
            counters: EngineCounters {
                late_per_level: vec![0; levels.len()],
                ..Default::default()
            },
            realtime_granted,
            threads,
            workers,
        };
        // On a spawn failure, dropping `engine` stops the workers already started.
        engine_ok.map(|()| engine)
    }

    /// Changes what a late level does from the next period on (no allocation, no system call).
    pub(crate) fn set_late_policy(&mut self, policy: LatePolicy) {
        self.late_policy = policy;
    }

    pub(crate) fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// Issues the pending broadcast wake-up (at most one system call).
    pub(crate) fn flush_wake(&mut self) {
        flush_wake(&self.shared, &mut self.wake_mask, &mut self.counters);
    }

    /// One internal period: `n0` samples of every input at `ioff`, into every output at `ooff`.
    pub(crate) fn period<I: AsRef<[f32]>, O: AsMut<[f32]>>(
        &mut self,
        inputs: &[I],
        ioff: usize,
        outputs: &mut [O],
        ooff: usize,
    ) {
        let n0 = self.n0;
        let shared = &*self.shared;
        // 1. Input into the ring.
        let r = shared.ring.first().map_or(1, RaceBuf::len);
        let pos = ((self.k * n0 as u64) % r as u64) as usize;
        for (ring, x) in shared.ring.iter().zip(inputs) {
            // SAFETY: by the posting rule (block j-2 done before block j is posted) no
            // outstanding block reads the samples this period overwrites; see crate::handshake.
            unsafe {
                ring.write(pos, n0, |dst| {
                    dst.copy_from_slice(&x.as_ref()[ioff..ioff + n0])
                })
            };
        }
        let end = (self.k + 1) * n0 as u64;
        // 2. Cooperative slices.
        for (idx, lane) in self.lanes.iter_mut().enumerate() {
            if let Lane::Coop {
                core,
                block,
                slice,
                active,
            } = lane
            {
                if *active {
                    let of = core.size / n0;
                    let from = if *slice == 0 {
                        0
                    } else {
                        core.slice_end(*slice - 1, of)
                    };
                    let to = core.slice_end(*slice, of);
                    // SAFETY: single-threaded lane: the callback is the only thread touching
                    // this level's ring window and output slot.
                    unsafe {
                        core.run_tasks(*block, from, to, &shared.ring, &shared.outs[idx + 1])
                    };
                    *slice += 1;
                    if *slice == of {
                        *active = false;
                    }
                }
            }
        }
        // 3. Level periods ending now.
        // SAFETY: level 0 runs only here, in the callback thread.
        unsafe { self.level0.run_block(self.k, &shared.ring, &shared.outs[0]) };
        for (idx, lane) in self.lanes.iter_mut().enumerate() {
            let l = idx + 1;
            let s = self.levels[l].size as u64;
            if !end.is_multiple_of(s) {
                continue;
            }
            let j = end / s - 1;
            match lane {
                Lane::Inline(core) => {
                    // SAFETY: inline lane, callback thread only.
                    unsafe { core.run_block(j, &shared.ring, &shared.outs[l]) }
                }
                Lane::Coop {
                    block,
                    slice,
                    active,
                    ..
                } => {
                    *block = j;
                    *slice = 0;
                    *active = true;
                }
                Lane::Threaded { seq, .. } => {
                    let sync = &shared.sync[l];
                    // At most two outstanding blocks: job seq-2 must be done.
                    let need = seq.wrapping_sub(1);
                    if !sync.is_done(need) {
                        // Wake first: the job waited for may be one not yet announced.
                        flush_wake(shared, &mut self.wake_mask, &mut self.counters);
                        self.counters.late_per_level[l] += 1;
                        self.counters.waits += 1;
                        sync.wait(need);
                    }
                    sync.post(seq, j);
                    self.wake_mask |= bit(l);
                }
            }
        }
        // 4. Readiness of each level's due segment.
        let t0 = self.k * n0 as u64;
        let mut late = false;
        for l in 1..self.levels.len() {
            let off = self.offsets[l] as u64;
            let s = self.levels[l].size as u64;
            self.ready[l] = false;
            if t0 < off {
                continue;
            }
            let j = (t0 - off) / s;
            self.ready[l] = match &self.lanes[l - 1] {
                Lane::Threaded { seq_base, .. } => {
                    let sync = &shared.sync[l];
                    let target = seq_base.wrapping_add(j as u32).wrapping_add(1);
                    if sync.is_done(target) {
                        true
                    } else {
                        late = true;
                        self.counters.late_per_level[l] += 1;
                        match self.late_policy {
                            LatePolicy::Wait => {
                                flush_wake(shared, &mut self.wake_mask, &mut self.counters);
                                self.counters.waits += 1;
                                sync.wait(target);
                                true
                            }
                            LatePolicy::PartialSum => false,
                        }
                    }
                }
                _ => true,
            };
        }
        if late {
            self.counters.late_periods += 1;
        }
        // 5. Sum the due segments.
        for (o, out) in outputs.iter_mut().enumerate().take(self.outputs) {
            let dst = &mut out.as_mut()[ooff..ooff + n0];
            let o0 = &shared.outs[0];
            if o0.active[o] {
                let idx = o0.index(o, self.k);
                // SAFETY: level 0's slot is only written above, in this thread.
                unsafe { o0.buf.read(idx, n0, |src| dst.copy_from_slice(src)) };
            } else {
                dst.fill(0.0);
            }
            for l in 1..self.levels.len() {
                let lo = &shared.outs[l];
                if !self.ready[l] || !lo.active[o] {
                    continue;
                }
                let t = t0 - self.offsets[l] as u64;
                let s = lo.size as u64;
                let idx = lo.index(o, t / s) + (t % s) as usize;
                // SAFETY: block t/s is done (checked above, acquire) and its slot is not
                // rewritten before block t/s + nslots is posted, after these reads.
                unsafe {
                    lo.buf.read(idx, n0, |src| {
                        for (d, s) in dst.iter_mut().zip(src) {
                            *d += *s;
                        }
                    })
                };
            }
        }
        self.k += 1;
    }

    /// Back to the state after construction. Waits for outstanding worker blocks.
    pub(crate) fn reset(&mut self) {
        self.flush_wake();
        let shared = &*self.shared;
        for (idx, lane) in self.lanes.iter_mut().enumerate() {
            let l = idx + 1;
            match lane {
                Lane::Inline(core) => core.clear(),
                Lane::Coop { core, active, .. } => {
                    core.clear();
                    *active = false;
                }
                Lane::Threaded { seq, seq_base } => {
                    let sync = &shared.sync[l];
                    sync.wait(*seq);
                    sync.generation.fetch_add(1, Ordering::Release);
                    *seq_base = *seq;
                }
            }
        }
        self.level0.clear();
        for buf in shared.ring.iter().chain(shared.outs.iter().map(|o| &o.buf)) {
            // SAFETY: every worker is idle (all posted jobs done, checked above) and stays idle
            // until we post again, so the callback thread has exclusive access.
            unsafe { buf.write(0, buf.len(), |all| all.fill(0.0)) };
        }
        self.k = 0;
    }
}

/// Wakes the workers of the levels in `wake_mask` (one broadcast system call) if any were
/// posted; a free function so `period` can call it while it borrows `shared`.
fn flush_wake(shared: &Shared, wake_mask: &mut u32, counters: &mut EngineCounters) {
    if *wake_mask != 0 {
        shared.epoch.wake(*wake_mask);
        *wake_mask = 0;
        counters.wake_calls += 1;
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.epoch.wake(u32::MAX);
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

fn worker(
    mut core: LevelCore,
    l: usize,
    shared: Arc<Shared>,
    pin: Option<usize>,
    prio: Option<i32>,
    started: mpsc::Sender<bool>,
) {
    let _ftz = DenormalGuard::new();
    if let Some(c) = pin {
        let _ = sluice_os::pin_current_thread(c);
    }
    let granted = match prio {
        Some(p) => set_realtime(p, l as i32),
        None => {
            sluice_os::raise_nice(l as i32);
            false
        }
    };
    let _ = started.send(granted);
    drop(started);
    let sync = &shared.sync[l];
    let mut generation: u32 = 0;
    worker_loop(&shared.epoch, &shared.stop, sync, bit(l), |j| {
        let g = sync.generation.load(Ordering::Acquire);
        if g != generation {
            generation = g;
            core.clear();
        }
        // SAFETY: job `j` was posted (acquire in `worker_loop`); the callback does not
        // overwrite its ring window nor read its output slot until it is published done
        // (crate::handshake).
        unsafe { core.run_block(j, &shared.ring, &shared.outs[l]) };
    });
}

/// Asks for SCHED_FIFO at `priority` for the calling thread. Returns whether it was granted.
///
/// Fallback when refused (no CAP_SYS_NICE / RLIMIT_RTPRIO): the thread stays SCHED_OTHER and
/// we raise its nice value by `fallback_nice` steps relative to the process (larger levels get
/// larger nice values, so shorter periods still win under contention). That is always
/// permitted and keeps results correct; only deadline guarantees are lost.
fn set_realtime(priority: i32, fallback_nice: i32) -> bool {
    if sluice_os::set_fifo_priority(priority.clamp(1, 99)).is_ok() {
        return true;
    }
    sluice_os::raise_nice(fallback_nice);
    false
}
