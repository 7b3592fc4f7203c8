//! The live convolver: a JACK client that runs the partitioned convolution engine of
//! sluice-conv in its process callback.
//!
//! * Level 0 of the engine runs in the JACK callback; larger levels run in the engine's worker
//!   threads at SCHED_FIFO priorities just below the client's JACK priority (when JACK runs in
//!   real-time mode), with the engine's nice-value fallback otherwise.
//! * The callback allocates nothing, takes no lock and makes no blocking call: it hands the
//!   port buffers to [`Convolver::process`] (one futex wake at most), applies wet/dry and gain in
//!   place, and exchanges impulse-response sets through wait-free single-item `rtrb` rings
//!   (the callback owns one end of each, so it takes no lock). A partition level
//!   that is not ready in time has its segment left out ([`LatePolicy::PartialSum`]) and the
//!   period counted late, rather than waited for (the engine still waits if a worker falls two
//!   periods behind, to protect its input ring); in JACK's freewheel mode the callback waits
//!   ([`LatePolicy::Wait`]) so renders are exact.
//! * Buffer-size changes rebuild the engine in JACK's buffer-size callback (which JACK allows
//!   to block); sample-rate changes are reported by [`LiveConvolver::sample_rate_changed`] so
//!   the owner can reload the IRs at the new rate with [`LiveConvolver::change_irs`].
//! * The engine's latency (zero at power-of-two periods) is reported through port latency
//!   ranges; flush-to-zero and denormals-are-zero are set in the callback thread.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use jack::{AudioIn, AudioOut, Client, Control, Frames, Port, ProcessScope};
use sluice_conv::{
    Convolver, ConvolverConfig, IrLoader, IrMatrix, LatePolicy, Partitioning, PreparedIrs,
    RetiredIrs, Scheduling,
};

use crate::latency::{self, LatencyPorts};
use crate::{open_client, AudioError};

/// Most input or output ports of one live convolver (jconvolver's limit is 64).
pub const MAX_PORTS: usize = 256;

/// What to run: the client, its ports and the convolution.
#[derive(Clone, Debug)]
pub struct LiveSpec {
    /// JACK client name (used exactly).
    pub client_name: String,
    /// JACK server name (`None`: the default server).
    pub server: Option<String>,
    /// The impulse responses, `inputs x outputs`, at `ir_rate`.
    pub irs: IrMatrix,
    /// Sample rate of `irs`; resampled to the server's rate when they differ. `None`: taken
    /// to be the server's rate.
    pub ir_rate: Option<u32>,
    /// Short names of the input ports (one per matrix input).
    pub input_names: Vec<String>,
    /// Short names of the output ports (one per matrix output).
    pub output_names: Vec<String>,
    /// Ports to connect to each input (full names, e.g. `system:capture_1`).
    pub connect_inputs: Vec<Vec<String>>,
    /// Ports to connect each output to.
    pub connect_outputs: Vec<Vec<String>>,
    /// Wet/dry mix, 0 (dry only) to 1 (convolved only).
    pub mix: f32,
    /// Linear output gain.
    pub gain: f32,
    /// For each output, the input whose dry signal is mixed in (`None`: no dry signal).
    pub dry_sources: Vec<Option<usize>>,
    /// Partitioning of the IRs.
    pub partitioning: Partitioning,
    /// Longest accepted IR, in frames.
    pub max_ir_len: usize,
}

impl LiveSpec {
    /// A spec with default names (`in_1`…, `out_1`…), no connections, mix 1, gain 1 and
    /// no dry signal.
    pub fn new(client_name: &str, irs: IrMatrix) -> Self {
        let (ni, no) = (irs.inputs(), irs.outputs());
        LiveSpec {
            client_name: client_name.to_string(),
            server: None,
            irs,
            ir_rate: None,
            input_names: (1..=ni).map(|i| format!("in_{i}")).collect(),
            output_names: (1..=no).map(|o| format!("out_{o}")).collect(),
            connect_inputs: vec![Vec::new(); ni],
            connect_outputs: vec![Vec::new(); no],
            mix: 1.0,
            gain: 1.0,
            dry_sources: vec![None; no],
            partitioning: Partitioning::Auto,
            max_ir_len: 1 << 22,
        }
    }

    fn check(&self) -> Result<(), AudioError> {
        let (ni, no) = (self.irs.inputs(), self.irs.outputs());
        let bad = |m: String| Err(AudioError::Invalid(m));
        if ni == 0 || no == 0 || ni > MAX_PORTS || no > MAX_PORTS {
            return bad(format!(
                "{ni} inputs and {no} outputs: each must be between 1 and {MAX_PORTS}"
            ));
        }
        if self.input_names.len() != ni || self.connect_inputs.len() != ni {
            return bad(format!(
                "{ni} inputs need {ni} input names and connection lists"
            ));
        }
        if self.output_names.len() != no
            || self.connect_outputs.len() != no
            || self.dry_sources.len() != no
        {
            return bad(format!(
                "{no} outputs need {no} output names, connection lists and dry sources"
            ));
        }
        if !(0.0..=1.0).contains(&self.mix) {
            return bad(format!("the mix must be between 0 and 1, got {}", self.mix));
        }
        if !self.gain.is_finite() {
            return bad(format!("the gain must be finite, got {}", self.gain));
        }
        if let Some(s) = self.dry_sources.iter().flatten().find(|&&s| s >= ni) {
            return bad(format!("dry source input {s} does not exist ({ni} inputs)"));
        }
        Ok(())
    }
}

/// Counters shared by the callback and the owner (all lock-free).
#[derive(Default)]
struct Shared {
    periods: AtomicU64,
    late_periods: AtomicU64,
    busy_ns: AtomicU64,
    worst_ns: AtomicU64,
    block: AtomicU32,
    rate: AtomicU32,
    xruns: AtomicU64,
    rate_changed: AtomicBool,
    /// JACK's freewheel mode, as last notified.
    freewheel: AtomicBool,
    shut_down: AtomicBool,
    failed: Mutex<Option<String>>,
}

/// IRs prepared for periods of `block` frames, on their way to the callback.
type Incoming = (PreparedIrs, usize);

enum Trash {
    Retired(#[allow(dead_code)] RetiredIrs),
    Stale(#[allow(dead_code)] PreparedIrs),
}

/// A snapshot of the live convolver's counters.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveStats {
    /// JACK cycles processed.
    pub periods: u64,
    /// Periods in which a level of the engine was late (the callback had to wait for it).
    pub late_periods: u64,
    /// Longest callback so far as a share of the period (1.0 = the whole period).
    pub worst_share: f64,
    /// Mean callback time as a share of the period.
    pub mean_share: f64,
    /// Frames per period.
    pub block: u32,
    /// Sample rate.
    pub rate: u32,
    /// Processing latency in frames, as reported to JACK.
    pub latency: u32,
    /// Xruns JACK reported (of the whole server).
    pub xruns: u64,
}

impl std::fmt::Display for LiveStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let period_us = f64::from(self.block) * 1e6 / f64::from(self.rate.max(1));
        write!(
            f,
            "{} periods of {} frames at {} Hz, {} late, worst callback {:.1}% of the period \
             ({:.0} us of {:.0} us), mean {:.1}%, latency {} frames, {} xruns",
            self.periods,
            self.block,
            self.rate,
            self.late_periods,
            100.0 * self.worst_share,
            self.worst_share * period_us,
            period_us,
            100.0 * self.mean_share,
            self.latency,
            self.xruns
        )
    }
}

fn engine_config(
    spec_part: &Partitioning,
    max_ir_len: usize,
    block: usize,
    prio: Option<i32>,
) -> ConvolverConfig {
    ConvolverConfig {
        block_size: block,
        partitioning: spec_part.clone(),
        scheduling: Scheduling::Threaded {
            pin_cores: None,
            realtime_priority: prio,
        },
        // Real time: a late level's segment is left out (and counted) rather than waited for;
        // the callback switches to waiting in freewheel mode, where exactness is what counts.
        late_policy: LatePolicy::PartialSum,
        max_ir_len,
    }
}

/// The real-time side.
struct Processor {
    inputs: Vec<Port<AudioIn>>,
    outputs: Vec<Port<AudioOut>>,
    conv: Option<Convolver>,
    wet: f32,
    dry: f32,
    dry_sources: Vec<Option<usize>>,
    shared: Arc<Shared>,
    latency: Arc<AtomicU32>,
    /// Late periods of engines replaced by a buffer-size change.
    late_base: u64,
    fading: bool,
    /// The late policy in force follows freewheel mode.
    freewheel: bool,
    crossfade: usize,
    hold: Option<Trash>,
    /// IRs prepared by the owner, taken when nothing is pending.
    incoming: rtrb::Consumer<Incoming>,
    /// Engines the callback is done with, dropped by the owner.
    outgoing: rtrb::Producer<Trash>,
    /// For rebuilding on a buffer-size change (not used in `process`).
    rebuild: Arc<Mutex<Rebuild>>,
    /// The dry signal is delayed by the engine's latency so that it stays aligned with the
    /// wet one: one ring of `latency` frames per input, and the delayed block.
    dry_rings: Vec<Vec<f32>>,
    dry_pos: usize,
    dry_buf: Vec<Vec<f32>>,
}

impl Processor {
    /// Sizes the dry delay lines for `latency` frames and periods of `block` (allocates: not
    /// for the process callback).
    fn size_dry(&mut self, latency: usize, block: usize) {
        let ni = self.inputs.len();
        let used = self.dry != 0.0 && latency > 0;
        self.dry_rings = vec![vec![0.0; if used { latency } else { 0 }]; ni];
        self.dry_buf = vec![vec![0.0; if used { block } else { 0 }]; ni];
        self.dry_pos = 0;
    }
}

struct Rebuild {
    irs: IrMatrix,
    partitioning: Partitioning,
    max_ir_len: usize,
    prio: Option<i32>,
    block: usize,
    /// Prepares IR sets for the engine of the current period.
    loader: IrLoader,
}

impl jack::ProcessHandler for Processor {
    fn process(&mut self, _: &Client, ps: &ProcessScope) -> Control {
        let start = Instant::now();
        let n = ps.n_frames() as usize;
        let Some(conv) = self.conv.as_mut() else {
            for o in &mut self.outputs {
                o.as_mut_slice(ps).fill(0.0);
            }
            return Control::Continue;
        };
        let fw = self.shared.freewheel.load(Ordering::Acquire);
        if fw != self.freewheel {
            self.freewheel = fw;
            conv.set_late_policy(if fw {
                LatePolicy::Wait
            } else {
                LatePolicy::PartialSum
            });
        }
        // Hand back what the engine is done with; take new IRs when nothing is pending.
        if self.hold.is_none() {
            if let Some(r) = conv.take_retired() {
                self.hold = Some(Trash::Retired(r));
                self.fading = false;
            }
        }
        if let Some(t) = self.hold.take() {
            if let Err(rtrb::PushError::Full(t)) = self.outgoing.push(t) {
                self.hold = Some(t);
            }
        }
        if self.hold.is_none() && !self.fading {
            if let Ok((prepared, block)) = self.incoming.pop() {
                if block != n {
                    self.hold = Some(Trash::Stale(prepared));
                } else if let Ok(prev) = conv.install(prepared, self.crossfade) {
                    self.fading = true;
                    self.hold = prev.map(Trash::Retired);
                }
            }
        }
        let mut ins: [&[f32]; MAX_PORTS] = [&[]; MAX_PORTS];
        for (slot, port) in ins.iter_mut().zip(&self.inputs) {
            *slot = port.as_slice(ps);
        }
        let ni = self.inputs.len();
        let no = self.outputs.len();
        let mut outs: [&mut [f32]; MAX_PORTS] = std::array::from_fn(|_| &mut [][..]);
        for (slot, port) in outs.iter_mut().zip(self.outputs.iter_mut()) {
            *slot = port.as_mut_slice(ps);
        }
        if conv.process(&ins[..ni], &mut outs[..no]).is_err() {
            // Only a block size the engine was not built for gets here (between a buffer-size
            // change and its callback): output silence rather than garbage.
            for o in outs[..no].iter_mut() {
                o.fill(0.0);
            }
        }
        let (wet, dry) = (self.wet, self.dry);
        let delayed = self.dry_rings.first().is_some_and(|r| !r.is_empty());
        if delayed && self.dry_buf[0].len() == n {
            let len = self.dry_rings[0].len();
            for ((ring, buf), x) in self.dry_rings.iter_mut().zip(&mut self.dry_buf).zip(&ins) {
                let mut p = self.dry_pos;
                for (b, &x) in buf.iter_mut().zip(x.iter()) {
                    *b = ring[p];
                    ring[p] = x;
                    p = if p + 1 == len { 0 } else { p + 1 };
                }
            }
            self.dry_pos = (self.dry_pos + n) % len;
            for (slot, buf) in ins.iter_mut().zip(&self.dry_buf) {
                *slot = buf;
            }
        }
        for (o, y) in outs[..no].iter_mut().enumerate() {
            match self.dry_sources[o] {
                Some(src) if dry != 0.0 => {
                    for (y, x) in y.iter_mut().zip(ins[src]) {
                        *y = wet * *y + dry * x;
                    }
                }
                _ if wet != 1.0 => y.iter_mut().for_each(|y| *y *= wet),
                _ => {}
            }
        }
        let s = &self.shared;
        s.late_periods
            .store(self.late_base + conv.late_periods(), Ordering::Relaxed);
        let ns = start.elapsed().as_nanos() as u64;
        s.busy_ns.fetch_add(ns, Ordering::Relaxed);
        s.worst_ns.fetch_max(ns, Ordering::Relaxed);
        s.periods.fetch_add(1, Ordering::Release);
        Control::Continue
    }

    fn buffer_size(&mut self, _: &Client, size: Frames) -> Control {
        let size = size as usize;
        self.shared.block.store(size as u32, Ordering::Relaxed);
        if self
            .conv
            .as_ref()
            .is_some_and(|c| c.config().block_size == size)
        {
            return Control::Continue;
        }
        // JACK lets this callback block: the engine is rebuilt here for the new period.
        let rebuild = Arc::clone(&self.rebuild);
        let mut rb = rebuild.lock().unwrap_or_else(|e| e.into_inner());
        rb.block = size;
        let config = engine_config(&rb.partitioning, rb.max_ir_len, size, rb.prio);
        if let Some(old) = self.conv.take() {
            self.late_base += old.late_periods();
        }
        self.fading = false;
        match Convolver::new(config, &rb.irs) {
            Ok(mut c) => {
                if self.freewheel {
                    c.set_late_policy(LatePolicy::Wait);
                }
                rb.loader = c.loader();
                self.latency.store(c.latency() as u32, Ordering::Relaxed);
                self.size_dry(c.latency(), size);
                self.conv = Some(c);
            }
            Err(e) => {
                *self.shared.failed.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(format!("cannot run at a period of {size} frames: {e}"));
            }
        }
        Control::Continue
    }
}

/// The non-real-time notifications.
struct Notifier {
    shared: Arc<Shared>,
}

impl jack::NotificationHandler for Notifier {
    fn thread_init(&self, _: &Client) {
        sluice_os::set_flush_to_zero();
    }

    unsafe fn shutdown(&mut self, _: jack::ClientStatus, _: &str) {
        self.shared.shut_down.store(true, Ordering::Relaxed);
    }

    fn sample_rate(&mut self, _: &Client, rate: Frames) -> Control {
        let old = self.shared.rate.swap(rate, Ordering::Relaxed);
        if old != 0 && old != rate {
            self.shared.rate_changed.store(true, Ordering::Relaxed);
        }
        Control::Continue
    }

    fn freewheel(&mut self, _: &Client, on: bool) {
        self.shared.freewheel.store(on, Ordering::Release);
    }

    fn xrun(&mut self, _: &Client) -> Control {
        self.shared.xruns.fetch_add(1, Ordering::Relaxed);
        Control::Continue
    }
}

/// Resamples every entry of `irs` from `from` Hz to `to` Hz.
pub fn resample_matrix(irs: &IrMatrix, from: u32, to: u32) -> Result<IrMatrix, AudioError> {
    let mut out = IrMatrix::new(irs.inputs(), irs.outputs());
    for i in 0..irs.inputs() {
        for o in 0..irs.outputs() {
            if let Some(h) = irs.get(i, o) {
                out.set(i, o, sluice_kernels::resample_ir(h, from, to))?;
            }
        }
    }
    Ok(out)
}

/// A running live convolver; stops (deactivates and closes its client) when dropped.
pub struct LiveConvolver {
    client: Option<jack::AsyncClient<Notifier, Processor>>,
    _latency_ports: Box<LatencyPorts>,
    shared: Arc<Shared>,
    latency: Arc<AtomicU32>,
    rebuild: Arc<Mutex<Rebuild>>,
    /// The owner's end of the callback's `incoming` ring (one set at a time).
    incoming: Mutex<rtrb::Producer<Incoming>>,
    /// The owner's end of the callback's `outgoing` ring.
    outgoing: Mutex<rtrb::Consumer<Trash>>,
    name: String,
    ir_rate: Option<u32>,
    input_ports: Vec<String>,
    output_ports: Vec<String>,
    realtime_priority: Option<i32>,
}

impl LiveConvolver {
    /// Opens the client, builds the engine for the server's period and rate, registers the
    /// ports, activates and makes the connections. `crossfade` is the length of the fade
    /// used by [`LiveConvolver::change_irs`].
    pub fn start(spec: LiveSpec, crossfade: std::time::Duration) -> Result<Self, AudioError> {
        spec.check()?;
        let name = spec.client_name.clone();
        let client = open_client(&name, spec.server.as_deref())?;
        let rate = client.sample_rate();
        let block = client.buffer_size() as usize;
        let irs = match spec.ir_rate {
            Some(r) if r != rate => resample_matrix(&spec.irs, r, rate)?,
            _ => spec.irs.clone(),
        };
        // Level workers just below the client's own real-time priority.
        // SAFETY: `client` is open; both calls only read its state.
        let prio = unsafe {
            (jack_sys::jack_is_realtime(client.raw()) != 0)
                .then(|| jack_sys::jack_client_real_time_priority(client.raw()))
                .filter(|&p| p > 1)
                .map(|p| p - 1)
        };
        let config = engine_config(&spec.partitioning, spec.max_ir_len, block, prio);
        let conv = Convolver::new(config, &irs)?;
        let latency = Arc::new(AtomicU32::new(conv.latency() as u32));
        let mut inputs = Vec::new();
        for n in &spec.input_names {
            let p = client.register_port(n, AudioIn::default()).map_err(|e| {
                AudioError::jack(&name, &format!("registering input port '{n}'"), e)
            })?;
            inputs.push(p);
        }
        let mut outputs = Vec::new();
        for n in &spec.output_names {
            let p = client.register_port(n, AudioOut::default()).map_err(|e| {
                AudioError::jack(&name, &format!("registering output port '{n}'"), e)
            })?;
            outputs.push(p);
        }
        let input_ports: Vec<String> = inputs
            .iter()
            .map(|p| p.name().unwrap_or_default())
            .collect();
        let output_ports: Vec<String> = outputs
            .iter()
            .map(|p| p.name().unwrap_or_default())
            .collect();
        let latency_ports = Box::new(LatencyPorts {
            inputs: inputs.iter().map(|p| p.raw()).collect(),
            outputs: outputs.iter().map(|p| p.raw()).collect(),
            latency: Arc::clone(&latency),
        });
        latency::register(&client, &latency_ports)
            .map_err(|e| AudioError::jack(&name, "registering the latency callback", e))?;
        let shared = Arc::new(Shared::default());
        shared.rate.store(rate, Ordering::Relaxed);
        shared.block.store(block as u32, Ordering::Relaxed);
        let rebuild = Arc::new(Mutex::new(Rebuild {
            irs,
            partitioning: spec.partitioning.clone(),
            max_ir_len: spec.max_ir_len,
            prio,
            block,
            loader: conv.loader(),
        }));
        // One item each way: a set waits until the callback took the previous one.
        let (incoming_tx, incoming_rx) = rtrb::RingBuffer::new(1);
        let (outgoing_tx, outgoing_rx) = rtrb::RingBuffer::new(1);
        let mut processor = Processor {
            inputs,
            outputs,
            conv: Some(conv),
            wet: spec.gain * spec.mix,
            dry: spec.gain * (1.0 - spec.mix),
            dry_sources: spec.dry_sources.clone(),
            shared: Arc::clone(&shared),
            latency: Arc::clone(&latency),
            late_base: 0,
            fading: false,
            freewheel: false,
            crossfade: (crossfade.as_secs_f64() * f64::from(rate)).round() as usize,
            hold: None,
            incoming: incoming_rx,
            outgoing: outgoing_tx,
            rebuild: Arc::clone(&rebuild),
            dry_rings: Vec::new(),
            dry_pos: 0,
            dry_buf: Vec::new(),
        };
        processor.size_dry(latency.load(Ordering::Relaxed) as usize, block);
        let notifier = Notifier {
            shared: Arc::clone(&shared),
        };
        let active = client
            .activate_async(notifier, processor)
            .map_err(|e| AudioError::jack(&name, "activating", e))?;
        let live = LiveConvolver {
            client: Some(active),
            _latency_ports: latency_ports,
            shared,
            latency,
            rebuild,
            incoming: Mutex::new(incoming_tx),
            outgoing: Mutex::new(outgoing_rx),
            name: name.clone(),
            ir_rate: spec.ir_rate,
            input_ports,
            output_ports,
            realtime_priority: prio,
        };
        for (ours, theirs) in live.input_ports.iter().zip(&spec.connect_inputs) {
            for t in theirs {
                live.connect(t, ours)?;
            }
        }
        for (ours, theirs) in live.output_ports.iter().zip(&spec.connect_outputs) {
            for t in theirs {
                live.connect(ours, t)?;
            }
        }
        Ok(live)
    }

    fn client(&self) -> &Client {
        self.client
            .as_ref()
            .expect("the client lives until drop")
            .as_client()
    }

    /// Connects two ports by full name.
    pub fn connect(&self, from: &str, to: &str) -> Result<(), AudioError> {
        self.client()
            .connect_ports_by_name(from, to)
            .map_err(|e| AudioError::jack(&self.name, &format!("connecting {from} to {to}"), e))
    }

    /// Full names of the input ports (`client:in_1`, …).
    pub fn input_ports(&self) -> &[String] {
        &self.input_ports
    }

    /// Full names of the output ports.
    pub fn output_ports(&self) -> &[String] {
        &self.output_ports
    }

    /// The SCHED_FIFO priority asked for the first level worker (`None` when JACK is not in
    /// real-time mode).
    pub fn worker_priority(&self) -> Option<i32> {
        self.realtime_priority
    }

    /// The counters so far.
    pub fn stats(&self) -> LiveStats {
        let s = &self.shared;
        let periods = s.periods.load(Ordering::Acquire);
        let block = s.block.load(Ordering::Relaxed);
        let rate = s.rate.load(Ordering::Relaxed);
        let period_ns = f64::from(block) * 1e9 / f64::from(rate.max(1));
        LiveStats {
            periods,
            late_periods: s.late_periods.load(Ordering::Relaxed),
            worst_share: s.worst_ns.load(Ordering::Relaxed) as f64 / period_ns,
            mean_share: if periods == 0 {
                0.0
            } else {
                s.busy_ns.load(Ordering::Relaxed) as f64 / periods as f64 / period_ns
            },
            block,
            rate,
            latency: self.latency.load(Ordering::Relaxed),
            xruns: s.xruns.load(Ordering::Relaxed),
        }
    }

    /// Whether JACK runs in freewheel mode (then the engine waits for late levels, so the
    /// output is exact; in real time it leaves their segment out and counts the period late).
    pub fn freewheel(&self) -> bool {
        self.shared.freewheel.load(Ordering::Acquire)
    }

    /// Whether the server's sample rate changed since the last call (reload the IRs then).
    pub fn sample_rate_changed(&self) -> bool {
        self.shared.rate_changed.swap(false, Ordering::Relaxed)
    }

    /// Why the client cannot run, if something went wrong after it started: the server shut
    /// it down, or the engine could not be rebuilt for a new period.
    pub fn failure(&self) -> Option<String> {
        if self.shared.shut_down.load(Ordering::Relaxed) {
            return Some(format!("the JACK server shut client '{}' down", self.name));
        }
        self.shared
            .failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Frees engines the callback has finished with (call now and then from the owner's thread).
    pub fn collect_garbage(&self) {
        let mut outgoing = self.outgoing.lock().unwrap_or_else(|e| e.into_inner());
        drop(outgoing.pop());
    }

    /// Replaces the impulse responses without a click: prepares `irs` (at the IR rate given at
    /// start, resampled as then) here, hands them to the callback and waits (at most 5 s) until
    /// it took them; the callback crossfades over the length given to [`LiveConvolver::start`].
    pub fn change_irs(&self, irs: &IrMatrix) -> Result<(), AudioError> {
        let rate = self.shared.rate.load(Ordering::Relaxed);
        let irs = match self.ir_rate {
            Some(r) if r != rate => resample_matrix(irs, r, rate)?,
            _ => irs.clone(),
        };
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        let mut rb = self.rebuild.lock().unwrap_or_else(|e| e.into_inner());
        let prepared = rb.loader.prepare(&irs)?;
        let mut item = (prepared, rb.block);
        let mut incoming = self.incoming.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            self.collect_garbage();
            match incoming.push(item) {
                Ok(()) => break,
                Err(rtrb::PushError::Full(back)) => item = back,
            }
            if Instant::now() > deadline {
                return Err(AudioError::jack(
                    &self.name,
                    "changing the IRs",
                    "the callback did not take the previous set in 5 s",
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        rb.irs = irs;
        while incoming.is_full() {
            if Instant::now() > deadline {
                return Err(AudioError::jack(
                    &self.name,
                    "changing the IRs",
                    "the callback did not take the new set in 5 s (is the server running?)",
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Ok(())
    }

    /// Stops: deactivates and closes the client, then frees the engine (off the real-time
    /// thread). Returns the final counters.
    pub fn stop(mut self) -> LiveStats {
        let stats = self.stats();
        self.close();
        stats
    }

    fn close(&mut self) {
        if let Some(active) = self.client.take() {
            // Deactivating stops the callbacks; the client is closed when dropped.
            drop(active.deactivate());
        }
        self.collect_garbage();
    }

    /// Asks JACK to recompute latencies (after [`LiveConvolver::stats`]' latency changed).
    pub fn recompute_latency(&self) {
        latency::recompute(self.client());
    }
}

impl Drop for LiveConvolver {
    fn drop(&mut self) {
        self.close();
    }
}
