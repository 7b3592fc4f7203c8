//! `jack_source`: audio from JACK input ports into a graph.
//!
//! The JACK callback copies each period into one lock-free ring (rtrb) per channel, never
//! waiting: when the graph is behind and a ring is full, the period is dropped and counted (an
//! overflow), and the next item the node passes on carries a `gap` tag with the frames lost.
//! The first item carries the server's sample rate (`rx_rate`), so sinks downstream (a WAV file)
//! get it. The node ends after `frames` frames, or when the graph is asked to stop.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jack::{AudioIn, Client, Control, Port, ProcessScope};
use sluice_runtime::{metadata, Node, NodeError, Ports, TagValue, Work, WorkIo};

use crate::{open_client, JackPorts};

struct SourceShared {
    lost: AtomicU64,
    overflows: AtomicU64,
}

struct SourceCallback {
    ports: Vec<Port<AudioIn>>,
    rings: Vec<rtrb::Producer<f32>>,
    shared: Arc<SourceShared>,
}

impl jack::ProcessHandler for SourceCallback {
    fn process(&mut self, _: &Client, ps: &ProcessScope) -> Control {
        let n = ps.n_frames() as usize;
        let room = self.rings.iter().map(|r| r.slots()).min().unwrap_or(0);
        if room < n {
            // All channels drop the same period, so they stay aligned.
            self.shared.lost.fetch_add(n as u64, Ordering::Relaxed);
            self.shared.overflows.fetch_add(1, Ordering::Relaxed);
            return Control::Continue;
        }
        for (port, ring) in self.ports.iter().zip(self.rings.iter_mut()) {
            let x = port.as_slice(ps);
            if let Ok(mut chunk) = ring.write_chunk(n) {
                let (a, b) = chunk.as_mut_slices();
                let split = a.len();
                a.copy_from_slice(&x[..split]);
                b.copy_from_slice(&x[split..]);
                chunk.commit_all();
            }
        }
        Control::Continue
    }
}

/// Records JACK input ports `in_1`, … of client `client` into its f32 outputs `out0`, … (see
/// the module docs).
pub struct JackSource {
    cfg: JackPorts,
    limit: Option<u64>,
    rings: Vec<rtrb::Consumer<f32>>,
    client: Option<jack::AsyncClient<(), SourceCallback>>,
    shared: Arc<SourceShared>,
    rate: u32,
    period: u32,
    passed: u64,
    lost_seen: u64,
}

impl JackSource {
    /// A source for `cfg` that ends after `limit` frames (`None`: when the graph stops).
    /// Connects to the server only when the graph starts.
    pub fn new(cfg: JackPorts, limit: Option<u64>) -> Result<Self, NodeError> {
        if cfg.channels == 0 || cfg.channels > crate::MAX_PORTS {
            return Err(NodeError::msg(format!(
                "channels must be between 1 and {}, not {}",
                crate::MAX_PORTS,
                cfg.channels
            )));
        }
        if cfg.buffer < 64 {
            return Err(NodeError::msg(format!(
                "the buffer must be at least 64 frames, not {}",
                cfg.buffer
            )));
        }
        Ok(JackSource {
            cfg,
            limit,
            rings: Vec::new(),
            client: None,
            shared: Arc::new(SourceShared {
                lost: AtomicU64::new(0),
                overflows: AtomicU64::new(0),
            }),
            rate: 0,
            period: 0,
            passed: 0,
            lost_seen: 0,
        })
    }
}

impl Node for JackSource {
    fn ports(&self) -> Ports {
        (0..self.cfg.channels).fold(Ports::new(), |p, c| p.output::<f32>(&format!("out{c}")))
    }

    fn length(&self) -> Option<u64> {
        self.limit
    }

    fn init(&mut self) -> Result<(), NodeError> {
        let client = open_client(&self.cfg.client, self.cfg.server.as_deref())
            .map_err(NodeError::from_error)?;
        self.rate = client.sample_rate();
        self.period = client.buffer_size();
        if (self.period as usize) > self.cfg.buffer {
            return Err(NodeError::msg(format!(
                "the buffer ({} frames) is shorter than the server's period ({})",
                self.cfg.buffer, self.period
            )));
        }
        let mut ports = Vec::new();
        let mut producers = Vec::new();
        for c in 1..=self.cfg.channels {
            let p = client
                .register_port(&format!("in_{c}"), AudioIn::default())
                .map_err(|e| NodeError::caused(format!("registering JACK port in_{c}"), e))?;
            ports.push(p);
            let (tx, rx) = rtrb::RingBuffer::new(self.cfg.buffer);
            producers.push(tx);
            self.rings.push(rx);
        }
        let names: Vec<String> = ports.iter().map(|p| p.name().unwrap_or_default()).collect();
        let cb = SourceCallback {
            ports,
            rings: producers,
            shared: Arc::clone(&self.shared),
        };
        let active = client.activate_async((), cb).map_err(|e| {
            NodeError::caused(format!("activating JACK client {}", self.cfg.client), e)
        })?;
        for (ours, theirs) in names.iter().zip(&self.cfg.connect) {
            crate::connect_when_ready(active.as_client(), theirs, ours, Duration::from_secs(5))
                .map_err(NodeError::from_error)?;
        }
        self.client = Some(active);
        Ok(())
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let left = self.limit.map_or(u64::MAX, |l| l - self.passed.min(l));
        if left == 0 || io.stop_requested() {
            return Ok(Work::Done);
        }
        let have = self.rings.iter().map(|r| r.slots()).min().unwrap_or(0);
        if have == 0 {
            let half = f64::from(self.period.max(16)) / f64::from(self.rate.max(1)) / 2.0;
            std::thread::sleep(Duration::from_secs_f64(half));
            return Ok(Work::Progress);
        }
        let mut k = have.min(usize::try_from(left).unwrap_or(usize::MAX));
        for c in 0..self.cfg.channels {
            match io.outputs.get::<f32>(c)?.reserve(1)? {
                None => return Ok(Work::NeedOutput { port: c, items: 1 }),
                Some(y) => k = k.min(y.len()),
            }
        }
        let lost = self.shared.lost.load(Ordering::Relaxed);
        for c in 0..self.cfg.channels {
            let output = io.outputs.get::<f32>(c)?;
            let written = output.items_written();
            if written == 0 {
                output.add_tag(
                    0,
                    metadata::SAMPLE_RATE,
                    metadata::sample_rate(f64::from(self.rate)),
                );
            }
            if lost > self.lost_seen {
                output.add_tag(written, metadata::GAP, TagValue::U64(lost - self.lost_seen));
            }
            let y = output.reserve(k)?.unwrap_or_default();
            let chunk = self.rings[c]
                .read_chunk(k)
                .map_err(|e| NodeError::caused(format!("ring of channel {c}"), e))?;
            let (a, b) = chunk.as_slices();
            y[..a.len()].copy_from_slice(a);
            y[a.len()..k].copy_from_slice(b);
            chunk.commit_all();
            output.commit(k);
        }
        self.lost_seen = lost;
        self.passed += k as u64;
        Ok(Work::Progress)
    }

    fn stop(&mut self) {
        if let Some(active) = self.client.take() {
            drop(active.deactivate());
        }
    }

    fn warnings(&mut self) -> Vec<String> {
        let o = self.shared.overflows.load(Ordering::Relaxed);
        if o == 0 {
            return Vec::new();
        }
        vec![format!(
            "{o} overflows: {} frames dropped while the graph was behind",
            self.shared.lost.load(Ordering::Relaxed)
        )]
    }
}
