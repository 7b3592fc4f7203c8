//! `jack_sink`: a graph's streams played out through JACK output ports.
//!
//! The node moves items from its input queues into one lock-free ring (rtrb) per channel; the
//! JACK callback takes what is there, never waiting: when a ring holds less than a period it
//! plays what it has followed by silence and counts an underrun. Playback starts once the rings
//! hold `prefill` frames (or the stream ended), and the underruns are reported when the node
//! ends. The stream's sample rate (its `rx_rate` metadata) must be the server's.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jack::{AudioOut, Client, Control, Port, ProcessScope};
use sluice_runtime::{metadata, Node, NodeError, Ports, Tag, TagPolicy, TagValue, Work, WorkIo};

use crate::open_client;

/// Settings of a [`JackSink`] or [`crate::JackSource`].
#[derive(Clone, Debug)]
pub struct JackPorts {
    /// JACK client name.
    pub client: String,
    /// JACK server (`None`: the default).
    pub server: Option<String>,
    /// Number of channels (ports).
    pub channels: usize,
    /// Ports to connect, one per channel in order (fewer: the rest stay unconnected).
    pub connect: Vec<String>,
    /// Frames each channel's ring holds between the graph and the callback.
    pub buffer: usize,
}

struct SinkShared {
    ended: AtomicBool,
    underruns: AtomicU64,
    silent_frames: AtomicU64,
    played: AtomicU64,
}

struct SinkCallback {
    ports: Vec<Port<AudioOut>>,
    rings: Vec<rtrb::Consumer<f32>>,
    prefill: usize,
    playing: bool,
    shared: Arc<SinkShared>,
}

impl jack::ProcessHandler for SinkCallback {
    fn process(&mut self, _: &Client, ps: &ProcessScope) -> Control {
        let n = ps.n_frames() as usize;
        let have = self.rings.iter().map(|r| r.slots()).min().unwrap_or(0);
        let ended = self.shared.ended.load(Ordering::Acquire);
        if !self.playing && (have >= self.prefill || (ended && have > 0)) {
            self.playing = true;
        }
        let take = if self.playing { have.min(n) } else { 0 };
        for (port, ring) in self.ports.iter_mut().zip(self.rings.iter_mut()) {
            let out = port.as_mut_slice(ps);
            if let Ok(chunk) = ring.read_chunk(take) {
                let (a, b) = chunk.as_slices();
                out[..a.len()].copy_from_slice(a);
                out[a.len()..take].copy_from_slice(b);
                chunk.commit_all();
            }
            out[take..].fill(0.0);
        }
        if self.playing && take < n && !ended {
            self.shared.underruns.fetch_add(1, Ordering::Relaxed);
            self.shared
                .silent_frames
                .fetch_add((n - take) as u64, Ordering::Relaxed);
        }
        self.shared.played.fetch_add(take as u64, Ordering::Release);
        Control::Continue
    }
}

/// Plays its `channels` f32 inputs (`in0`, `in1`, …) on JACK output ports `out_1`, … of client
/// `client` (see the module docs).
pub struct JackSink {
    cfg: JackPorts,
    prefill: usize,
    rings: Vec<rtrb::Producer<f32>>,
    client: Option<jack::AsyncClient<(), SinkCallback>>,
    shared: Arc<SinkShared>,
    rate: u32,
    period: u32,
    checked_rate: bool,
    tags: Vec<Tag>,
}

impl JackSink {
    /// A sink for `cfg`, starting playback when `prefill` frames are buffered. Connects to the
    /// server only when the graph starts.
    pub fn new(cfg: JackPorts, prefill: usize) -> Result<Self, NodeError> {
        if cfg.channels == 0 || cfg.channels > crate::MAX_PORTS {
            return Err(NodeError::msg(format!(
                "channels must be between 1 and {}, not {}",
                crate::MAX_PORTS,
                cfg.channels
            )));
        }
        if cfg.buffer < 64 || prefill > cfg.buffer {
            return Err(NodeError::msg(format!(
                "the buffer ({} frames) must be at least 64 frames and hold the prefill ({prefill})",
                cfg.buffer
            )));
        }
        Ok(JackSink {
            cfg,
            prefill,
            rings: Vec::new(),
            client: None,
            shared: Arc::new(SinkShared {
                ended: AtomicBool::new(false),
                underruns: AtomicU64::new(0),
                silent_frames: AtomicU64::new(0),
                played: AtomicU64::new(0),
            }),
            rate: 0,
            period: 0,
            checked_rate: false,
            tags: Vec::new(),
        })
    }

    /// Underruns so far: periods in which the callback found less than a period and played
    /// silence for the rest.
    pub fn underruns(&self) -> u64 {
        self.shared.underruns.load(Ordering::Relaxed)
    }

    fn check_rate(&mut self, io: &mut WorkIo<'_>, frames: usize) -> Result<(), NodeError> {
        let input = io.inputs.get::<f32>(0)?;
        self.tags.clear();
        input.take_tags(input.items_read() + frames as u64, &mut self.tags);
        for tag in &self.tags {
            if &*tag.key == metadata::SAMPLE_RATE {
                if let TagValue::F64(hz) = tag.value {
                    if (hz - f64::from(self.rate)).abs() > 0.5 {
                        return Err(NodeError::msg(format!(
                            "the stream is {hz} Hz but JACK server {} runs at {} Hz; resample \
                             the stream before jack_sink",
                            self.cfg.server.as_deref().unwrap_or("default"),
                            self.rate
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Waits (at most the buffer's duration plus 2 s) until the callback played everything.
    fn drain(&self, io: &WorkIo<'_>) {
        let total = self.buffer_secs() + 2.0;
        let deadline = Instant::now() + Duration::from_secs_f64(total);
        while self.rings.iter().any(|r| r.slots() < r.buffer().capacity())
            && Instant::now() < deadline
            && !io.stop_requested()
        {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn buffer_secs(&self) -> f64 {
        self.cfg.buffer as f64 / f64::from(self.rate.max(1))
    }
}

impl Node for JackSink {
    fn ports(&self) -> Ports {
        (0..self.cfg.channels).fold(Ports::new(), |p, c| p.input::<f32>(&format!("in{c}")))
    }

    fn init(&mut self) -> Result<(), NodeError> {
        let client = open_client(&self.cfg.client, self.cfg.server.as_deref())
            .map_err(NodeError::from_error)?;
        self.rate = client.sample_rate();
        self.period = client.buffer_size();
        let mut ports = Vec::new();
        let mut consumers = Vec::new();
        for c in 1..=self.cfg.channels {
            let p = client
                .register_port(&format!("out_{c}"), AudioOut::default())
                .map_err(|e| NodeError::caused(format!("registering JACK port out_{c}"), e))?;
            ports.push(p);
            let (tx, rx) = rtrb::RingBuffer::new(self.cfg.buffer);
            self.rings.push(tx);
            consumers.push(rx);
        }
        let names: Vec<String> = ports.iter().map(|p| p.name().unwrap_or_default()).collect();
        let cb = SinkCallback {
            ports,
            rings: consumers,
            prefill: self.prefill,
            playing: false,
            shared: Arc::clone(&self.shared),
        };
        let active = client.activate_async((), cb).map_err(|e| {
            NodeError::caused(format!("activating JACK client {}", self.cfg.client), e)
        })?;
        for (ours, theirs) in names.iter().zip(&self.cfg.connect) {
            crate::connect_when_ready(active.as_client(), ours, theirs, Duration::from_secs(5))
                .map_err(NodeError::from_error)?;
        }
        self.client = Some(active);
        Ok(())
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let mut frames = usize::MAX;
        for c in 0..self.cfg.channels {
            match io.inputs.get::<f32>(c)?.window(1)? {
                None => return Ok(Work::NeedInput { port: c, items: 1 }),
                Some(w) => frames = frames.min(w.len()),
            }
        }
        if !self.checked_rate || frames > 0 {
            self.check_rate(io, frames.max(1))?;
            self.checked_rate = true;
        }
        if frames == 0 {
            self.shared.ended.store(true, Ordering::Release);
            self.drain(io);
            return Ok(Work::Done);
        }
        let room = self.rings.iter().map(|r| r.slots()).min().unwrap_or(0);
        if room == 0 {
            if io.stop_requested() {
                return Ok(Work::Done);
            }
            // The callback frees a period per cycle: look again in half a period.
            let half = f64::from(self.period.max(16)) / f64::from(self.rate.max(1)) / 2.0;
            std::thread::sleep(Duration::from_secs_f64(half));
            return Ok(Work::Progress);
        }
        let k = frames.min(room);
        for c in 0..self.cfg.channels {
            let input = io.inputs.get::<f32>(c)?;
            let x = input.window(k)?.unwrap_or_default();
            let mut chunk = self.rings[c]
                .write_chunk(k)
                .map_err(|e| NodeError::caused(format!("ring of channel {c}"), e))?;
            let (a, b) = chunk.as_mut_slices();
            let split = a.len();
            a.copy_from_slice(&x[..split]);
            b.copy_from_slice(&x[split..k]);
            chunk.commit_all();
            input.consume(k);
        }
        Ok(Work::Progress)
    }

    fn stop(&mut self) {
        if let Some(active) = self.client.take() {
            drop(active.deactivate());
        }
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn warnings(&mut self) -> Vec<String> {
        let u = self.underruns();
        if u == 0 {
            return Vec::new();
        }
        vec![format!(
            "{u} underruns: {} frames of silence played where the graph had no samples ready",
            self.shared.silent_frames.load(Ordering::Relaxed)
        )]
    }
}
