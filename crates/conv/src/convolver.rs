//! The public facade: configuration, `process`, IR changes with crossfade, statistics.

use crate::engine::Engine;
use crate::partition::{self, Shape, StaticCost};
use crate::{ConvError, IrMatrix, Level, Partitioning, MAX_BLOCK_SIZE, MAX_IR_LEN_LIMIT};
use sluice_os::DenormalGuard;

/// Where the larger levels run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scheduling {
    /// Preemptive: level 0 in the callback, one worker thread per larger level size (shared
    /// by all channels), fixed priorities with shorter periods higher.
    Threaded {
        /// Pin the worker of level `l` (1-based) to `pin_cores[(l-1) % len]`.
        pin_cores: Option<Vec<usize>>,
        /// `Some(p)`: ask for SCHED_FIFO, priority `p` for level 1, `p-1` for level 2, ...
        /// (clamped to 1..=99). If the OS refuses (no CAP_SYS_NICE or RLIMIT_RTPRIO), the
        /// workers stay SCHED_OTHER with nice values increasing with level, the output stays
        /// exact, and [`ConvStats::realtime_granted`] is `false`. `None`: no real-time request
        /// (only the nice ordering).
        realtime_priority: Option<i32>,
    },
    /// Time-distributed: every level in the caller's thread; a level of size `S` spreads the
    /// tasks of a block (forward FFTs, MACs in chunks of 8 partitions, inverse FFTs) over the
    /// `S / n0` callbacks of its period, balanced by a static cost estimate. FFTs are not
    /// split, so a callback that carries the FFT of a large level is much longer than the
    /// mean. Measured on the (shared, noisy) development Xeon, block 64, IR 2^18, 1 channel,
    /// `cargo run --release -p sluice-conv --example throughput -- 262144 1 64 coop 10`:
    /// mean 4.9 us per callback, p99 88 us, p99.9 156 us (single-thread mode: p99 52 us,
    /// p99.9 481 us; the maxima of both, about 4 ms, were preemptions by other processes).
    /// For hosts that forbid threads.
    Cooperative,
    /// Every level computed in full in the callback whose input completes its block. Lowest
    /// total CPU, worst latency spikes: for offline processing and as the reference.
    SingleThread,
}

/// What the callback does when a threaded level has not finished a block that is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LatePolicy {
    /// Wait for it (spin, then sleep on a futex). Output stays exact; the period is counted
    /// in [`ConvStats::late_periods`].
    #[default]
    Wait,
    /// Output what is done, leaving that level's segment out of this callback, and count it.
    /// A worker may fall at most one extra period behind; beyond that the callback waits
    /// anyway (the input ring must not be overwritten under a running worker).
    PartialSum,
}

/// Configuration of a [`Convolver`].
#[derive(Clone, Debug, PartialEq)]
pub struct ConvolverConfig {
    /// Samples per `process` call, 1..=8192. Powers of two (and multiples of a power of two
    /// `>= 16`) give zero latency.
    pub block_size: usize,
    /// How the IR is cut into FDL levels.
    pub partitioning: Partitioning,
    /// Where the larger levels run.
    pub scheduling: Scheduling,
    /// Behaviour when a worker is late.
    pub late_policy: LatePolicy,
    /// Longest accepted impulse response (default 2^22, at most [`MAX_IR_LEN_LIMIT`]).
    pub max_ir_len: usize,
}

impl Default for ConvolverConfig {
    fn default() -> Self {
        Self {
            block_size: 64,
            partitioning: Partitioning::Auto,
            scheduling: Scheduling::Threaded {
                pin_cores: None,
                realtime_priority: None,
            },
            late_policy: LatePolicy::Wait,
            max_ir_len: 1 << 22,
        }
    }
}

/// Counters and facts about a running [`Convolver`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ConvStats {
    /// `process` calls so far.
    pub periods: u64,
    /// Internal periods (of [`ConvStats::internal_block_size`]) in which at least one level
    /// was not ready when due.
    pub late_periods: u64,
    /// Late events per level (index = level; level 0 is never late).
    pub late_per_level: Vec<u64>,
    /// Times the callback had to wait for a worker.
    pub waits: u64,
    /// Wake-up system calls issued by the callback.
    pub wake_calls: u64,
    /// All worker threads got SCHED_FIFO (false when none was requested or there are none).
    pub realtime_granted: bool,
    /// Worker threads running.
    pub threads: usize,
    /// The FDL levels in use.
    pub levels: Vec<Level>,
    /// Host block size.
    pub block_size: usize,
    /// Internal (level 0) block size.
    pub internal_block_size: usize,
    /// Added latency in samples.
    pub latency: usize,
    /// Whether an IR crossfade is in progress.
    pub fading: bool,
}

/// Impulse responses turned into spectra and a ready engine by [`IrLoader::prepare`], to be
/// installed with [`Convolver::install`].
pub struct PreparedIrs {
    engine: Box<Engine>,
}

/// An engine that finished fading out; drop it outside the real-time thread.
#[must_use = "dropping this frees memory and joins threads: do it off the real-time thread"]
pub struct RetiredIrs {
    _engine: Box<Engine>,
}

/// Builds [`PreparedIrs`] for a running convolver on any thread (`Send + Sync + Clone`).
#[derive(Clone, Debug)]
pub struct IrLoader {
    config: ConvolverConfig,
    n0: usize,
    inputs: usize,
    outputs: usize,
}

impl IrLoader {
    /// Validates `irs`, plans its partitioning and computes all spectra; starts the workers.
    /// This is the heavy part of an IR change.
    pub fn prepare(&self, irs: &IrMatrix) -> Result<PreparedIrs, ConvError> {
        if irs.inputs() != self.inputs || irs.outputs() != self.outputs {
            return Err(ConvError::ShapeMismatch {
                inputs: self.inputs,
                outputs: self.outputs,
                got_in: irs.inputs(),
                got_out: irs.outputs(),
            });
        }
        let engine = build_engine(&self.config, self.n0, irs)?;
        Ok(PreparedIrs {
            engine: Box::new(engine),
        })
    }
}

struct Fade {
    old: Box<Engine>,
    pos: usize,
    len: usize,
}

/// FIFOs for block sizes that are not a multiple of the internal block.
struct Adapter {
    in_buf: Vec<Vec<f32>>,
    in_fill: usize,
    period_out: Vec<Vec<f32>>,
    /// Output ring per channel.
    out_ring: Vec<Vec<f32>>,
    out_read: usize,
    out_count: usize,
}

/// The convolution engine. See the crate docs.
pub struct Convolver {
    config: ConvolverConfig,
    block: usize,
    n0: usize,
    latency: usize,
    inputs: usize,
    outputs: usize,
    engine: Box<Engine>,
    fade: Option<Fade>,
    fade_buf: Vec<Vec<f32>>,
    retired: Option<Box<Engine>>,
    adapter: Option<Adapter>,
    periods: u64,
}

/// Internal block size and latency for a host block size.
fn internal_block(block: usize) -> (usize, usize) {
    let g = 1usize << block.trailing_zeros();
    if g == block || g >= 16 {
        (g, 0)
    } else {
        let p = 1usize << (usize::BITS - 1 - block.leading_zeros());
        (p, p - g.min(p))
    }
}

fn plan(config: &ConvolverConfig, n0: usize, irs: &IrMatrix) -> Result<Vec<Level>, ConvError> {
    let len = irs.max_len();
    let shape = Shape {
        inputs: irs.inputs(),
        outputs: irs.outputs(),
        paths: irs.nonzero_entries(),
    };
    Ok(match &config.partitioning {
        Partitioning::Auto => partition::search(n0, len, &StaticCost { shape }),
        Partitioning::Uniform => partition::uniform(n0, len),
        Partitioning::Explicit(levels) => {
            partition::validate(levels, n0, len)?;
            levels.clone()
        }
        Partitioning::Tuned { cache } => crate::tune::tuned(n0, len, shape, cache.as_deref()),
    })
}

fn build_engine(config: &ConvolverConfig, n0: usize, irs: &IrMatrix) -> Result<Engine, ConvError> {
    irs.validate(config.max_ir_len)?;
    let levels = plan(config, n0, irs)?;
    Engine::new(n0, &levels, irs, &config.scheduling, config.late_policy)
}

impl Convolver {
    /// Validates everything, plans the partitioning, computes the IR spectra, allocates all
    /// buffers and starts the workers. Nothing is allocated later in [`Convolver::process`].
    pub fn new(config: ConvolverConfig, irs: &IrMatrix) -> Result<Self, ConvError> {
        if config.block_size == 0 || config.block_size > MAX_BLOCK_SIZE {
            return Err(ConvError::BlockSize(config.block_size));
        }
        if config.max_ir_len == 0 || config.max_ir_len > MAX_IR_LEN_LIMIT {
            return Err(ConvError::MaxIrLen {
                len: config.max_ir_len,
                limit: MAX_IR_LEN_LIMIT,
            });
        }
        let (n0, latency) = internal_block(config.block_size);
        let engine = Box::new(build_engine(&config, n0, irs)?);
        let (inputs, outputs) = (irs.inputs(), irs.outputs());
        let block = config.block_size;
        let adapter = (!block.is_multiple_of(n0)).then(|| {
            let cap = latency + block + n0;
            Adapter {
                in_buf: vec![vec![0.0; n0]; inputs],
                in_fill: 0,
                period_out: vec![vec![0.0; n0]; outputs],
                out_ring: vec![vec![0.0; cap]; outputs],
                out_read: 0,
                out_count: latency,
            }
        });
        Ok(Self {
            config,
            block,
            n0,
            latency,
            inputs,
            outputs,
            engine,
            fade: None,
            fade_buf: vec![vec![0.0; n0]; outputs],
            retired: None,
            adapter,
            periods: 0,
        })
    }

    /// One callback: `inputs[i].len() == outputs[o].len() == block_size`.
    ///
    /// Real-time safe in steady state: no allocation, no lock, at most one wake-up system call
    /// (only in callbacks where a threaded level starts a new period; two during a crossfade),
    /// plus a futex wait only if a due level is late. Sets flush-to-zero for its duration.
    pub fn process(
        &mut self,
        inputs: &[&[f32]],
        outputs: &mut [&mut [f32]],
    ) -> Result<(), ConvError> {
        self.check_channels(inputs.len(), outputs.len())?;
        for (channel, x) in inputs.iter().enumerate() {
            if x.len() != self.block {
                return Err(ConvError::BufferLength {
                    what: "input",
                    channel,
                    expected: self.block,
                    got: x.len(),
                });
            }
        }
        for (channel, y) in outputs.iter().enumerate() {
            if y.len() != self.block {
                return Err(ConvError::BufferLength {
                    what: "output",
                    channel,
                    expected: self.block,
                    got: y.len(),
                });
            }
        }
        self.run_block(inputs, 0, outputs, 0);
        Ok(())
    }

    /// [`Convolver::process`] on the `block_size` frames from `ioff` of every input slice and
    /// from `ooff` of every output slice (each at least that long): for callers whose channels
    /// are slices of longer buffers, with no slices of slices to build (and so no allocation).
    pub fn process_at<I: AsRef<[f32]>, O: AsMut<[f32]>>(
        &mut self,
        inputs: &[I],
        ioff: usize,
        outputs: &mut [O],
        ooff: usize,
    ) -> Result<(), ConvError> {
        self.check_channels(inputs.len(), outputs.len())?;
        for (channel, x) in inputs.iter().enumerate() {
            if x.as_ref().len() < ioff + self.block {
                return Err(ConvError::BufferLength {
                    what: "input",
                    channel,
                    expected: ioff + self.block,
                    got: x.as_ref().len(),
                });
            }
        }
        for (channel, y) in outputs.iter_mut().enumerate() {
            if y.as_mut().len() < ooff + self.block {
                return Err(ConvError::BufferLength {
                    what: "output",
                    channel,
                    expected: ooff + self.block,
                    got: y.as_mut().len(),
                });
            }
        }
        self.run_block(inputs, ioff, outputs, ooff);
        Ok(())
    }

    fn check_channels(&self, inputs: usize, outputs: usize) -> Result<(), ConvError> {
        if inputs != self.inputs {
            return Err(ConvError::ChannelCount {
                what: "input",
                expected: self.inputs,
                got: inputs,
            });
        }
        if outputs != self.outputs {
            return Err(ConvError::ChannelCount {
                what: "output",
                expected: self.outputs,
                got: outputs,
            });
        }
        Ok(())
    }

    /// One block, checked by the caller.
    fn run_block<I: AsRef<[f32]>, O: AsMut<[f32]>>(
        &mut self,
        inputs: &[I],
        ioff: usize,
        outputs: &mut [O],
        ooff: usize,
    ) {
        let _ftz = DenormalGuard::new();
        let n0 = self.n0;
        if let Some(mut ad) = self.adapter.take() {
            let cap = ad.out_ring.first().map_or(1, Vec::len);
            let mut done = 0;
            while done < self.block {
                let take = (n0 - ad.in_fill).min(self.block - done);
                for (b, x) in ad.in_buf.iter_mut().zip(inputs) {
                    let x = &x.as_ref()[ioff + done..ioff + done + take];
                    b[ad.in_fill..ad.in_fill + take].copy_from_slice(x);
                }
                ad.in_fill += take;
                done += take;
                if ad.in_fill == n0 {
                    ad.in_fill = 0;
                    self.run_period(&ad.in_buf, 0, &mut ad.period_out, 0);
                    let w = (ad.out_read + ad.out_count) % cap;
                    for (ring, p) in ad.out_ring.iter_mut().zip(&ad.period_out) {
                        let first = (cap - w).min(n0);
                        ring[w..w + first].copy_from_slice(&p[..first]);
                        ring[..n0 - first].copy_from_slice(&p[first..]);
                    }
                    ad.out_count += n0;
                }
            }
            debug_assert!(ad.out_count >= self.block);
            for (ring, y) in ad.out_ring.iter().zip(outputs.iter_mut()) {
                let y = &mut y.as_mut()[ooff..ooff + self.block];
                let first = (cap - ad.out_read).min(self.block);
                y[..first].copy_from_slice(&ring[ad.out_read..ad.out_read + first]);
                y[first..].copy_from_slice(&ring[..self.block - first]);
            }
            ad.out_read = (ad.out_read + self.block) % cap;
            ad.out_count -= self.block;
            self.adapter = Some(ad);
        } else {
            for p in 0..self.block / n0 {
                self.run_period(inputs, ioff + p * n0, outputs, ooff + p * n0);
            }
        }
        self.engine.flush_wake();
        if let Some(f) = &mut self.fade {
            f.old.flush_wake();
        }
        if self.fade.as_ref().is_some_and(|f| f.pos >= f.len) && self.retired.is_none() {
            let f = self.fade.take().expect("checked above");
            self.retired = Some(f.old);
        }
        self.periods += 1;
    }

    fn run_period<I: AsRef<[f32]>, O: AsMut<[f32]>>(
        &mut self,
        inputs: &[I],
        ioff: usize,
        outputs: &mut [O],
        ooff: usize,
    ) {
        self.engine.period(inputs, ioff, outputs, ooff);
        if let Some(f) = &mut self.fade {
            if f.pos < f.len {
                f.old.period(inputs, ioff, &mut self.fade_buf, 0);
                let n0 = self.n0;
                for (y, old) in outputs.iter_mut().zip(&self.fade_buf) {
                    let y = &mut y.as_mut()[ooff..ooff + n0];
                    for (i, (y, o)) in y.iter_mut().zip(old).enumerate() {
                        let g = ((f.pos + i + 1) as f32 / f.len as f32).min(1.0);
                        *y = *y * g + *o * (1.0 - g);
                    }
                }
                f.pos += n0;
            }
        }
    }

    /// Changes what the callback does when a threaded level is late, from the next period on
    /// (for this engine, one fading out and IR sets prepared later). Real-time safe: no
    /// allocation, no system call. A host switches to [`LatePolicy::Wait`] when it runs faster
    /// than real time (JACK's freewheel mode, offline rendering) and back to
    /// [`LatePolicy::PartialSum`] when a deadline matters more than exactness.
    pub fn set_late_policy(&mut self, policy: LatePolicy) {
        self.config.late_policy = policy;
        self.engine.set_late_policy(policy);
        if let Some(f) = &mut self.fade {
            f.old.set_late_policy(policy);
        }
    }

    /// Statistics so far.
    pub fn stats(&self) -> ConvStats {
        let c = &self.engine.counters;
        ConvStats {
            periods: self.periods,
            late_periods: c.late_periods,
            late_per_level: c.late_per_level.clone(),
            waits: c.waits,
            wake_calls: c.wake_calls,
            realtime_granted: self.engine.realtime_granted,
            threads: self.engine.threads,
            levels: self.engine.levels().to_vec(),
            block_size: self.block,
            internal_block_size: self.n0,
            latency: self.latency,
            fading: self.fade.is_some(),
        }
    }

    /// Periods in which a level was late so far (the callback waited, or output a partial sum).
    /// Unlike [`Convolver::stats`] this allocates nothing, so a real-time host may read it after
    /// every callback.
    pub fn late_periods(&self) -> u64 {
        self.engine.counters.late_periods
    }

    /// The FDL levels in use (of the current IR set).
    pub fn levels(&self) -> &[Level] {
        self.engine.levels()
    }

    /// Added latency in samples: 0 when the block size is a multiple of its internal block
    /// (powers of two, and multiples of a power of two >= 16), else `n0 - gcd(block, n0)`.
    pub fn latency(&self) -> usize {
        self.latency
    }

    /// Internal (level 0) block size `n0`.
    pub fn internal_block_size(&self) -> usize {
        self.n0
    }

    /// The configuration this convolver was built with.
    pub fn config(&self) -> &ConvolverConfig {
        &self.config
    }

    /// A loader that prepares new IR sets for this convolver on another thread.
    pub fn loader(&self) -> IrLoader {
        IrLoader {
            config: self.config.clone(),
            n0: self.n0,
            inputs: self.inputs,
            outputs: self.outputs,
        }
    }

    /// Changes the impulse responses without a click: the new set is prepared here (FFTs of
    /// the IR, new workers; heavy: call from a non-real-time thread or between callbacks where
    /// a dropout is acceptable) and then crossfaded linearly over `crossfade_samples`.
    ///
    /// The new engine starts from silence: during the fade the old engine's output (with its
    /// reverb tail) fades out while the new one fades in, so the old tail is shortened to the
    /// fade length; both run during the fade (double CPU). With `crossfade_samples == 0` the
    /// switch is immediate. For a strictly real-time-safe change use [`IrLoader::prepare`] on
    /// another thread and [`Convolver::install`] in the callback thread.
    pub fn set_irs(&mut self, irs: &IrMatrix, crossfade_samples: usize) -> Result<(), ConvError> {
        if self.fade.is_some() {
            return Err(ConvError::FadeInProgress);
        }
        drop(self.retired.take());
        let prepared = self.loader().prepare(irs)?;
        let retired = self.install(prepared, crossfade_samples)?;
        drop(retired);
        Ok(())
    }

    /// Installs prepared IRs (no allocation, no system call): starts a crossfade of
    /// `crossfade_samples` (0 = switch at once). Returns an engine that was retired earlier,
    /// if any, for the caller to drop off the real-time thread. Errors if a fade is running.
    pub fn install(
        &mut self,
        prepared: PreparedIrs,
        crossfade_samples: usize,
    ) -> Result<Option<RetiredIrs>, ConvError> {
        if self.fade.is_some() {
            return Err(ConvError::FadeInProgress);
        }
        let old = std::mem::replace(&mut self.engine, prepared.engine);
        let prev = self.retired.take();
        if crossfade_samples == 0 {
            self.retired = Some(old);
        } else {
            self.fade = Some(Fade {
                old,
                pos: 0,
                len: crossfade_samples,
            });
        }
        Ok(prev.map(|e| RetiredIrs { _engine: e }))
    }

    /// Takes the engine retired after the last IR change, to drop it off the real-time thread.
    pub fn take_retired(&mut self) -> Option<RetiredIrs> {
        self.retired.take().map(|e| RetiredIrs { _engine: e })
    }

    /// Back to the initial state (silence in, all delay lines cleared): the next outputs are
    /// exactly those of a fresh convolver. Waits for running worker blocks; ends any fade.
    pub fn reset(&mut self) {
        if let Some(f) = self.fade.take() {
            if self.retired.is_none() {
                self.retired = Some(f.old);
            }
            // else: dropped here (reset is not a real-time call).
        }
        self.engine.reset();
        if let Some(ad) = &mut self.adapter {
            ad.in_fill = 0;
            ad.out_read = 0;
            ad.out_count = self.latency;
            for r in &mut ad.out_ring {
                r.fill(0.0);
            }
        }
    }
}

/// Convolves whole signals offline: returns `outputs` signals of length
/// `input_len + max_ir_len - 1` (the full tail), latency compensated. Every input must have
/// the same length. Uses `config` as given (prefer [`Scheduling::SingleThread`] for offline
/// work; a larger `block_size`, e.g. 1024, is faster).
pub fn convolve_offline(
    irs: &IrMatrix,
    inputs: &[&[f32]],
    config: &ConvolverConfig,
) -> Result<Vec<Vec<f32>>, ConvError> {
    convolve_offline_with_progress(irs, inputs, config, |_| {})
}

/// [`convolve_offline`], calling `progress` after each block with the number of output frames
/// done so far (for a progress bar over long files).
pub fn convolve_offline_with_progress(
    irs: &IrMatrix,
    inputs: &[&[f32]],
    config: &ConvolverConfig,
    mut progress: impl FnMut(u64),
) -> Result<Vec<Vec<f32>>, ConvError> {
    convolve_offline_until(irs, inputs, config, |done| {
        progress(done);
        true
    })
}

/// [`convolve_offline_with_progress`] that can be stopped: when `progress` returns `false`, the
/// input ends where it was read to, and the outputs are that part convolved with the full tail
/// (a shorter but complete result, as a stopped stream would give).
pub fn convolve_offline_until(
    irs: &IrMatrix,
    inputs: &[&[f32]],
    config: &ConvolverConfig,
    mut progress: impl FnMut(u64) -> bool,
) -> Result<Vec<Vec<f32>>, ConvError> {
    let mut stream = crate::StreamConvolver::new(config.clone(), irs)?;
    if inputs.len() != irs.inputs() {
        return Err(ConvError::ChannelCount {
            what: "input",
            expected: irs.inputs(),
            got: inputs.len(),
        });
    }
    let len = inputs.first().map_or(0, |x| x.len());
    if let Some((channel, x)) = inputs.iter().enumerate().find(|(_, x)| x.len() != len) {
        return Err(ConvError::BufferLength {
            what: "input",
            channel,
            expected: len,
            got: x.len(),
        });
    }
    let mut len = len;
    let mut total = len + irs.max_len() - 1;
    let b = config.block_size;
    let mut out = vec![vec![0.0f32; total]; irs.outputs()];
    let (mut read, mut written) = (0, 0);
    while written < total {
        if read == len {
            stream.finish();
        }
        let end = (read + b).min(len);
        let ins: Vec<&[f32]> = inputs.iter().map(|x| &x[read..end]).collect();
        let out_end = (written + b).min(total);
        let mut outs: Vec<&mut [f32]> = out.iter_mut().map(|o| &mut o[written..out_end]).collect();
        let (c, p) = stream.process(&ins, &mut outs)?;
        (read, written) = (read + c, written + p);
        if !progress(written as u64) && len > read {
            // Stopped: the input ends here; its tail still comes out.
            len = read;
            total = len + irs.max_len() - 1;
        }
    }
    for o in &mut out {
        o.truncate(total);
    }
    Ok(out)
}
