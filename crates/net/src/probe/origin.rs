//! The probe's origin: sends packets into the loop at a set rate and takes them back, timing
//! each, speaking the sluice-net wire on both connections (a sender's on the way out, a
//! receiver's on the way back). Two threads: the caller's sends, one more receives.

use super::packet::{self, Assembler};
use super::ProbeError;
use crate::conn::{wait_fd, Endpoint};
use crate::decoder::{Decoder, Event, Need, Role};
use crate::wire::{self, Hello, Kind, Welcome, CRC_LEN, HEADER_LEN};
use crate::NetError;
use rustix::event::PollFlags;
use std::io::{ErrorKind, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How often a side that sent nothing says it is still there.
const HEARTBEAT: Duration = Duration::from_secs(1);

/// What the origin does.
#[derive(Debug, Clone)]
pub struct OriginConfig {
    /// Where the packets go: the first reflector (`tcp://…` or `tcp-listen://…`).
    pub to: String,
    /// Where they come back from: the last reflector.
    pub from: String,
    /// Bytes per packet (a multiple of 8, at least 16).
    pub size: usize,
    /// Packets to time.
    pub count: u64,
    /// Packets sent (at the same rate, checked the same way) before the timed ones and left
    /// out of the statistics: the loop's first packets meet cold caches, page faults in fresh
    /// queues and TCP's initial window.
    pub warmup: u64,
    /// Bits per second of packet bytes (framing not counted); `None`: as fast as the loop
    /// takes them.
    pub rate: Option<f64>,
    /// Send a CRC32C with every frame.
    pub crc: bool,
    /// After a receive, busy-poll the socket this long before sleeping in `poll`.
    pub spin: Duration,
    /// Bytes the last reflector may send ahead of what the origin acknowledged.
    pub window: usize,
    /// How long to wait for a connection, or for the peer to say anything.
    pub timeout: Duration,
    /// How long to wait, once the whole loop is connected, before the first packet.
    pub settle: Duration,
}

impl Default for OriginConfig {
    fn default() -> Self {
        OriginConfig {
            to: String::new(),
            from: String::new(),
            size: 1024,
            count: 50_000,
            warmup: 100,
            rate: Some(70e6),
            crc: false,
            spin: Duration::ZERO,
            window: 4 << 20,
            timeout: Duration::from_secs(30),
            settle: Duration::from_millis(200),
        }
    }
}

/// One packet's times on the origin's clock (nanoseconds since the origin started).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Sequence number.
    pub seq: u64,
    /// Just before the `sendmsg` that handed it to the kernel.
    pub sent_ns: u64,
    /// Just after the `recv` that completed it.
    pub received_ns: u64,
}

impl Sample {
    /// Its latency through the loop in microseconds.
    pub fn latency_us(&self) -> f64 {
        self.received_ns.saturating_sub(self.sent_ns) as f64 / 1e3
    }
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct OriginRun {
    /// Every timed packet, in order (the warm-up left out).
    pub samples: Vec<Sample>,
    /// Seconds from the first timed send to the last receive.
    pub secs: f64,
    /// DATA frames that came back (reflectors may merge or split packets).
    pub frames_back: u64,
    /// `recv` calls that returned bytes on the way back.
    pub reads: u64,
    /// The peers: first reflector, last reflector.
    pub peers: (String, String),
}

/// The origin: both endpoints are open (listeners bound) from [`Origin::new`] on.
#[derive(Debug)]
pub struct Origin {
    cfg: OriginConfig,
    to: Endpoint,
    from: Endpoint,
}

impl Origin {
    /// Checks `cfg` and opens its endpoints.
    pub fn new(cfg: OriginConfig) -> Result<Origin, ProbeError> {
        packet::check_size(cfg.size).map_err(ProbeError::Config)?;
        if cfg.count == 0 {
            return Err(ProbeError::Config("send at least one packet".into()));
        }
        if cfg.window < cfg.size {
            return Err(ProbeError::Config(format!(
                "the window ({} bytes) must hold a packet ({} bytes)",
                cfg.window, cfg.size
            )));
        }
        if let Some(r) = cfg.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err(ProbeError::Config(format!(
                    "the rate must be a positive number of bits per second, not {r}"
                )));
            }
        }
        Ok(Origin {
            to: Endpoint::parse(&cfg.to)?,
            from: Endpoint::parse(&cfg.from)?,
            cfg,
        })
    }

    /// The address the returning stream is listened for on, if `from` listens.
    pub fn from_addr(&self) -> Option<SocketAddr> {
        self.from.local_addr()
    }

    /// The address the outgoing stream is listened for on, if `to` listens.
    pub fn to_addr(&self) -> Option<SocketAddr> {
        self.to.local_addr()
    }

    /// Runs the loop: connects both ways, sends every packet, receives them back.
    pub fn run(self) -> Result<OriginRun, ProbeError> {
        let clock = Instant::now();
        let abort = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        let Origin { cfg, to, from } = self;
        let rx = {
            let (cfg, abort) = (cfg.clone(), abort.clone());
            std::thread::Builder::new()
                .name("probe-rx".into())
                .spawn(move || {
                    let r = receive(&cfg, &from, clock, &abort, ready_tx);
                    if r.is_err() {
                        abort.store(true, Ordering::Release);
                    }
                    r
                })
                .map_err(|e| ProbeError::Config(format!("cannot start a thread: {e}")))?
        };
        let sent = send(&cfg, &to, clock, &abort, &ready_rx);
        if sent.is_err() {
            abort.store(true, Ordering::Release);
        }
        let back = rx
            .join()
            .map_err(|_| ProbeError::Config("the receiving thread panicked".into()))?;
        // The first real error wins over the other side's "aborted".
        let (first_peer, sent_ns) = match sent {
            Ok(v) => v,
            Err(ProbeError::Aborted) => return Err(back.err().unwrap_or(ProbeError::Aborted)),
            Err(e) => return Err(e),
        };
        let mut run = back?;
        // The time stamp each packet carried back is the one it left with.
        if let Some((s, t)) = run
            .samples
            .iter()
            .zip(&sent_ns)
            .find(|(s, t)| s.sent_ns != **t)
        {
            return Err(ProbeError::Stream {
                peer: run.peers.1.clone(),
                what: format!(
                    "packet {} came back with time stamp {} ns, it left at {t} ns (the stream was altered)",
                    s.seq, s.sent_ns
                ),
            });
        }
        run.samples
            .drain(..(cfg.warmup as usize).min(run.samples.len()));
        let first = run.samples.first().map_or(0, |s| s.sent_ns);
        let last = run.samples.last().map_or(0, |s| s.received_ns);
        run.secs = last.saturating_sub(first) as f64 / 1e9;
        run.peers.0 = first_peer;
        Ok(run)
    }
}

fn now_ns(clock: Instant) -> u64 {
    clock.elapsed().as_nanos() as u64
}

/// Connects or accepts on `ep` within the timeout.
fn establish(
    ep: &Endpoint,
    what: &'static str,
    url: &str,
    timeout: Duration,
    abort: &AtomicBool,
) -> Result<(TcpStream, String), ProbeError> {
    let start = Instant::now();
    loop {
        if abort.load(Ordering::Acquire) {
            return Err(ProbeError::Aborted);
        }
        if let Some(s) = ep.establish(Duration::from_millis(50), 0)? {
            let peer = s
                .peer_addr()
                .map_or_else(|_| "(unknown peer)".to_string(), |a| a.to_string());
            s.set_nodelay(true)
                .and_then(|()| s.set_nonblocking(true))
                .map_err(|e| crate::conn::io_err(&peer, 0, "socket setup", &e))?;
            return Ok((s, peer));
        }
        if start.elapsed() > timeout {
            return Err(ProbeError::Connect {
                what,
                url: url.to_string(),
                secs: start.elapsed().as_secs_f64(),
            });
        }
    }
}

/// One side's socket with its decoder and its clocks.
struct Link {
    stream: TcpStream,
    peer: String,
    decoder: Decoder,
    last_rx: Instant,
    last_tx: Instant,
    timeout: Duration,
}

impl Link {
    /// Writes all of `bufs`, waiting for room (at most the timeout) when the socket is full.
    fn send_all(&mut self, bufs: &[&[u8]], offset: u64) -> Result<(), ProbeError> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let mut done = 0;
        let deadline = Instant::now() + self.timeout;
        while done < total {
            let mut skip = done;
            let iov: Vec<IoSlice<'_>> = bufs
                .iter()
                .filter_map(|b| {
                    if skip >= b.len() {
                        skip -= b.len();
                        None
                    } else {
                        let s = IoSlice::new(&b[skip..]);
                        skip = 0;
                        Some(s)
                    }
                })
                .collect();
            match (&self.stream).write_vectored(&iov) {
                Ok(n) => done += n,
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted =>
                {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(ProbeError::Stream {
                            peer: self.peer.clone(),
                            what: format!(
                                "takes no bytes for {:.1} s (at stream byte {offset})",
                                self.timeout.as_secs_f64()
                            ),
                        });
                    }
                    wait_fd(&self.stream, PollFlags::OUT, deadline - now);
                }
                Err(e) => return Err(crate::conn::io_err(&self.peer, offset, "send", &e).into()),
            }
        }
        self.last_tx = Instant::now();
        Ok(())
    }

    /// Sends a HEARTBEAT if nothing went out for a heartbeat period.
    fn keep_alive(&mut self, offset: u64) -> Result<(), ProbeError> {
        if self.last_tx.elapsed() >= HEARTBEAT {
            self.send_all(&[&wire::heartbeat()], offset)?;
        }
        Ok(())
    }

    /// Fails if the peer said nothing for the timeout.
    fn check_silence(&self, offset: u64) -> Result<(), ProbeError> {
        let silent = self.last_rx.elapsed();
        if silent > self.timeout {
            return Err(NetError::Silent {
                peer: self.peer.clone(),
                offset,
                secs: silent.as_secs_f64(),
            }
            .into());
        }
        Ok(())
    }

    /// Reads the control frames the peer sent so far (a sender's decoder), without blocking.
    fn control_events(&mut self, mut on: impl FnMut(Event)) -> Result<(), ProbeError> {
        loop {
            let Need::Control(n) = self.decoder.need() else {
                unreachable!("a sender's decoder reads no payload");
            };
            let got = match (&self.stream).read(&mut self.decoder.control_space()[..n]) {
                Ok(0) => {
                    self.decoder.eof()?;
                    return Err(NetError::Closed {
                        peer: self.peer.clone(),
                        offset: self.decoder.offset(),
                    }
                    .into());
                }
                Ok(k) => k,
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted =>
                {
                    return Ok(())
                }
                Err(e) => {
                    let offset = self.decoder.offset();
                    return Err(crate::conn::io_err(&self.peer, offset, "recv", &e).into());
                }
            };
            self.last_rx = Instant::now();
            if let Some(event) = self.decoder.control_filled(got)? {
                on(event);
            }
        }
    }
}

/// What the sender heard from the first reflector.
#[derive(Default)]
struct TxState {
    welcome: Option<Welcome>,
    acked: u64,
    credit: u64,
    /// Something wrong in what it said.
    wrong: Option<String>,
}

impl TxState {
    fn on(&mut self, e: Event) {
        match e {
            Event::Welcome(w) => {
                if w.resume != 0 {
                    self.wrong = Some(format!(
                        "resumes at offset {} of a new stream (a reflector left over from another run?)",
                        w.resume
                    ));
                }
                self.credit = w.credit;
                self.welcome = Some(w);
            }
            Event::Ack(a) => self.acked = self.acked.max(a),
            Event::Credit(c) => self.credit = self.credit.max(c),
            _ => {}
        }
    }
}

/// The sending side: HELLO, the packets at the set rate within the credit, END, the final ACK.
/// Returns the first reflector's address and the time each packet was handed to the kernel.
fn send(
    cfg: &OriginConfig,
    ep: &Endpoint,
    clock: Instant,
    abort: &AtomicBool,
    ready: &mpsc::Receiver<()>,
) -> Result<(String, Vec<u64>), ProbeError> {
    let (stream, peer) = establish(ep, "to", &cfg.to, cfg.timeout, abort)?;
    let mut link = Link {
        decoder: Decoder::new(Role::Sender, &peer, 1 << 16, None, 0),
        stream,
        peer,
        last_rx: Instant::now(),
        last_tx: Instant::now(),
        timeout: cfg.timeout,
    };
    let hello = wire::hello(&Hello {
        item_name: "u8".into(),
        item_size: 1,
        vlen: 1,
        crc: cfg.crc,
        heartbeat_ms: HEARTBEAT.as_millis() as u32,
        metadata: Vec::new(),
        fence: None,
        messages: false,
    })
    .map_err(|e| ProbeError::Config(format!("encoding HELLO: {e}")))?;
    link.send_all(&[&hello], 0)?;
    let mut st = TxState::default();
    while st.welcome.is_none() {
        link.control_events(|e| st.on(e))?;
        if st.welcome.is_none() {
            link.check_silence(0)?;
            wait_fd(&link.stream, PollFlags::IN, Duration::from_millis(100));
        }
    }
    if let Some(what) = st.wrong.take() {
        return Err(ProbeError::Stream {
            peer: link.peer.clone(),
            what,
        });
    }
    let max_items = st.welcome.map_or(0, |w| w.max_items as usize);
    if max_items < cfg.size {
        return Err(ProbeError::Stream {
            peer: link.peer.clone(),
            what: format!(
                "takes frames of at most {max_items} bytes, less than one packet ({} bytes)",
                cfg.size
            ),
        });
    }
    // Start once the whole loop is connected (the last reflector said HELLO to us).
    let start = Instant::now();
    loop {
        if abort.load(Ordering::Acquire) {
            return Err(ProbeError::Aborted);
        }
        match ready.recv_timeout(Duration::from_millis(100)) {
            Ok(()) => break,
            Err(mpsc::RecvTimeoutError::Timeout) if start.elapsed() < cfg.timeout => {
                link.keep_alive(0)?;
                link.control_events(|e| st.on(e))?;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(ProbeError::Connect {
                    what: "back from",
                    url: cfg.from.clone(),
                    secs: start.elapsed().as_secs_f64(),
                })
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(ProbeError::Aborted),
        }
    }
    std::thread::sleep(cfg.settle);

    let size = cfg.size as u64;
    let interval_ns = cfg.rate.map(|r| size as f64 * 8.0 / r * 1e9);
    let mut packet = vec![0u8; cfg.size];
    let total = cfg.warmup + cfg.count;
    let mut times = Vec::with_capacity(total as usize);
    let first_ns = now_ns(clock);
    let mut offset = 0u64;
    for seq in 0..total {
        if abort.load(Ordering::Acquire) {
            return Err(ProbeError::Aborted);
        }
        packet::fill(&mut packet, seq);
        if let Some(iv) = interval_ns {
            let due = first_ns + (seq as f64 * iv) as u64;
            loop {
                let now = now_ns(clock);
                if now >= due {
                    break;
                }
                link.keep_alive(offset)?;
                std::thread::sleep(Duration::from_nanos(due - now).min(HEARTBEAT / 4));
            }
        }
        while offset + size > st.credit {
            link.control_events(|e| st.on(e))?;
            if offset + size > st.credit {
                link.check_silence(st.acked)?;
                link.keep_alive(offset)?;
                wait_fd(&link.stream, PollFlags::IN, Duration::from_millis(100));
            }
        }
        let head = wire::data_head(offset, cfg.size as u32, 0, cfg.size, cfg.crc)
            .ok_or_else(|| ProbeError::Config("packet too large for a frame".into()))?;
        let sent = now_ns(clock);
        packet::stamp(&mut packet, sent);
        let trailer = if cfg.crc {
            crc32c::crc32c_append(crc32c::crc32c(&head), &packet).to_le_bytes()
        } else {
            [0; CRC_LEN]
        };
        let trailer = &trailer[..if cfg.crc { CRC_LEN } else { 0 }];
        link.send_all(&[&head, &packet, trailer], offset)?;
        times.push(sent);
        offset += size;
        link.control_events(|e| st.on(e))?;
    }
    // END goes out once every packet is back: the loop's teardown (connections closing,
    // processes ending) must not fall on the packets still in flight.
    loop {
        if abort.load(Ordering::Acquire) {
            return Err(ProbeError::Aborted);
        }
        match ready.recv_timeout(Duration::from_millis(100)) {
            Ok(()) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                link.keep_alive(offset)?;
                link.control_events(|e| st.on(e))?;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(ProbeError::Aborted),
        }
    }
    link.send_all(&[&wire::offset_frame(Kind::End, offset)], offset)?;
    // Done when the first reflector acknowledged everything (it closes after that).
    while st.acked < offset {
        match link.control_events(|e| st.on(e)) {
            // It may close right after its last ACK.
            Err(ProbeError::Net(NetError::Closed { .. })) if st.acked >= offset => break,
            r => r?,
        }
        if st.acked < offset {
            link.check_silence(st.acked)?;
            link.keep_alive(offset)?;
            wait_fd(&link.stream, PollFlags::IN, Duration::from_millis(100));
        }
    }
    Ok((link.peer, times))
}

/// The receiving side: WELCOME, the packets back (checked and timed), ACK and CREDIT after
/// every read, END.
fn receive(
    cfg: &OriginConfig,
    ep: &Endpoint,
    clock: Instant,
    abort: &AtomicBool,
    ready: mpsc::Sender<()>,
) -> Result<OriginRun, ProbeError> {
    let (stream, peer) = establish(ep, "from", &cfg.from, cfg.timeout, abort)?;
    let mut link = Link {
        decoder: Decoder::new(
            Role::Receiver,
            &peer,
            wire::DEFAULT_MAX_FRAME,
            Some(("u8", 1)),
            0,
        ),
        stream,
        peer,
        last_rx: Instant::now(),
        last_tx: Instant::now(),
        timeout: cfg.timeout,
    };
    let mut buf = vec![0u8; 256 << 10];
    let mut asm = Assembler::new(cfg.size);
    let total = cfg.warmup + cfg.count;
    let mut samples: Vec<Sample> = Vec::with_capacity(total as usize);
    let mut all_back = false;
    let (mut received, mut acked) = (0u64, 0u64);
    let (mut frames, mut reads) = (0u64, 0u64);
    let mut ended: Option<u64> = None;
    let window = cfg.window as u64;
    loop {
        if abort.load(Ordering::Acquire) {
            return Err(ProbeError::Aborted);
        }
        let n = match (&link.stream).read(&mut buf) {
            Ok(0) => {
                link.decoder.eof()?;
                return Err(NetError::Closed {
                    peer: link.peer.clone(),
                    offset: received,
                }
                .into());
            }
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                link.check_silence(received)?;
                link.keep_alive(received)?;
                if !cfg.spin.is_zero() {
                    let spin_start = Instant::now();
                    while spin_start.elapsed() < cfg.spin {
                        let mut peek = [0u8; 1];
                        match link.stream.peek(&mut peek) {
                            Err(e) if e.kind() == ErrorKind::WouldBlock => std::hint::spin_loop(),
                            _ => break,
                        }
                    }
                }
                wait_fd(&link.stream, PollFlags::IN, Duration::from_millis(100));
                continue;
            }
            Err(e) => {
                return Err(crate::conn::io_err(&link.peer, received, "recv", &e).into());
            }
        };
        let t = now_ns(clock);
        link.last_rx = Instant::now();
        reads += 1;
        let mut at = 0;
        while at < n {
            let event = match link.decoder.need() {
                Need::Control(k) => {
                    let m = k.min(n - at);
                    link.decoder.control_space()[..m].copy_from_slice(&buf[at..at + m]);
                    at += m;
                    link.decoder.control_filled(m)?
                }
                Need::Payload(k) => {
                    let m = k.min(n - at);
                    let chunk = &buf[at..at + m];
                    let start = asm.packets() * cfg.size as u64;
                    asm.push(chunk, |seq, sent_ns| {
                        samples.push(Sample {
                            seq,
                            sent_ns,
                            received_ns: t,
                        })
                    })
                    .map_err(|source| ProbeError::Packet {
                        peer: link.peer.clone(),
                        offset: start,
                        source,
                    })?;
                    at += m;
                    link.decoder.payload_filled(chunk)?
                }
            };
            match event {
                Some(Event::Hello(_)) => {
                    let welcome = wire::welcome(&Welcome {
                        resume: 0,
                        credit: window,
                        max_items: cfg.window.min(u32::MAX as usize) as u32,
                        history: 0,
                        heartbeat_ms: HEARTBEAT.as_millis() as u32,
                        messages: None,
                    });
                    link.send_all(&[&welcome], 0)?;
                    let _ = ready.send(());
                }
                Some(Event::DataBegin { .. }) => frames += 1,
                Some(Event::DataEnd { offset, items }) => received = offset + u64::from(items),
                Some(Event::End(end)) => ended = Some(end),
                _ => {}
            }
        }
        if !all_back && asm.packets() == total {
            // Tell the sender it may end the stream.
            all_back = true;
            let _ = ready.send(());
        }
        if received > acked || ended.is_some() {
            let fin = ended.unwrap_or(received);
            let mut both = [0u8; 2 * (HEADER_LEN + 8)];
            both[..HEADER_LEN + 8].copy_from_slice(&wire::offset_frame(Kind::Ack, fin));
            both[HEADER_LEN + 8..].copy_from_slice(&wire::offset_frame(Kind::Credit, fin + window));
            link.send_all(&[&both], fin)?;
            acked = fin;
        }
        if let Some(end) = ended {
            if asm.packets() != total || asm.mid_packet() {
                return Err(ProbeError::Stream {
                    peer: link.peer.clone(),
                    what: format!(
                        "the stream ended at byte {end} after {} whole packets of the {} sent",
                        asm.packets(),
                        total
                    ),
                });
            }
            return Ok(OriginRun {
                samples,
                secs: 0.0,
                frames_back: frames,
                reads,
                peers: (String::new(), link.peer.clone()),
            });
        }
    }
}
