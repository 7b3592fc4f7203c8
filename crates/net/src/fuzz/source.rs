//! The `net_source` target's driver: a whole `tcp_source` on loopback, played a script of
//! connections and frames (see [`source`]).

use crate::wire::{self, Hello, Kind};
use crate::{Decoder, Event, Need, NetError, Role, TcpOptions};
use sluice_runtime::{
    Graph, Inbox, MessageIn, MessageKind, Node, NodeError, Ports, Recv as MessageRecv, StopHandle,
    Tag, TagPolicy, TagValue, Work, WorkIo,
};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How long [`source`] waits for the receiver's WELCOME to a new connection.
const WELCOME_WAIT: Duration = Duration::from_millis(500);

/// How long [`source`] waits for the receiver's graph to end once the script is played.
const END_WAIT: Duration = Duration::from_secs(5);

/// The most connections one [`source`] script opens (each may wait [`WELCOME_WAIT`]).
const MAX_CONNECTIONS: usize = 8;

/// What the receiver of [`source`] delivered: its items, each of which is its stream offset
/// (the script's sender sends every item as its offset), their tags, and how its graph ended.
#[derive(Debug, Default)]
pub struct Delivered {
    /// The items, in order.
    pub items: Vec<u64>,
    /// Their tags (a DATA frame's tags carry the stream offset of their item as their value).
    pub tags: Vec<Tag>,
    /// The messages of the message output, in order.
    pub messages: Vec<TagValue>,
    /// The graph's error, if it ended with one.
    pub error: Option<String>,
}

/// The receiver's state machine above the decoder: a `tcp_source` of `u64` items, listening
/// on loopback in a graph of its own (run by the stepper), takes the connections and frames a
/// script plays to it, encoded by the wire's encoders. The first byte picks the receiver's
/// settings (bit 0: fenced; 1: CRC trailers; 2: a small output queue; 3: a small tag
/// budget; 4: messages, unfenced only; 5: start offset 1000); the rest is a script of ops,
/// a byte each (`op % 8`) and their argument bytes:
///
/// * 0, DATA: `a`, `t`, then `t % 4` bytes `p`: `1 + a % 128` items at the sender's offset
///   (one past it when `a` ≥ 128), with a tag on item `p % (items + 1)` of the frame for each
///   `p` (one past the frame for the last value);
/// * 1, GAP of `1 + g` items (`g` a byte);
/// * 2, HEARTBEAT;
/// * 3, END at the sender's offset (one past it when the argument byte is odd);
/// * 4, MESSAGE (a `U64` of its sequence number, at the sender's offset);
/// * 5, CONNECT (`r`): a new connection, whose HELLO carries fence revision `r % 4` to a fenced
///   receiver (none when `r` ≥ 128), none to another (revision 1 when `r` ≥ 128); the sender
///   then resumes where the WELCOME says. To an unfenced receiver it is a reconnect: the
///   connection before is closed first. At most [`MAX_CONNECTIONS`] per script;
/// * 6, ACKS: reads what the receiver sent on the connection (WELCOME, ACK, CREDIT);
/// * 7, CUT: closes the connection.
///
/// The script starts connected (revision 1 to a fenced receiver). At its end every connection
/// is closed and the graph is asked to stop. Panics if the receiver panics or hangs, if what
/// it acknowledges or credits is not what was sent (an ACK beyond the connection's items, or
/// going back; a CREDIT below the ACK), or if what it delivered is not the stream: every item
/// is its stream offset, each item follows the one before or the gap its GAP tag tells, and
/// each tag lies on the item it was sent with.
pub fn source(data: &[u8]) -> Delivered {
    let Some((&first, script)) = data.split_first() else {
        return Delivered::default();
    };
    let settings = Settings::of(first);
    let (graph, addr, seen) = receiver_graph(&settings);
    let stop = StopHandle::new();
    let (done_tx, done) = std::sync::mpsc::channel();
    let stopping = stop.clone();
    let graph_thread = std::thread::spawn(move || {
        let _ = done_tx.send(graph.run_stepped_with(&stopping));
    });
    let mut sender = ScriptSender {
        settings,
        addr,
        done,
        ended: None,
        current: None,
        others: Vec::new(),
        connections: 0,
    };
    sender.connect(1);
    let mut bytes = script.iter().copied();
    while let Some(op) = bytes.next() {
        sender.play(op, &mut bytes);
    }
    sender.settle();
    sender.current = None;
    sender.others.clear();
    stop.stop();
    let ended = match sender.ended.take() {
        Some(ended) => ended,
        None => sender
            .done
            .recv_timeout(END_WAIT)
            .expect("the receiver's graph ends once asked to stop"),
    };
    // (Its nodes are gone once it is: what outlives it are threads that end on their own,
    // the listener's handshake helpers and the connections' heartbeat threads.)
    if let Err(panic) = graph_thread.join() {
        std::panic::resume_unwind(panic);
    }
    let error = match ended {
        Ok(_) => None,
        Err(e @ sluice_runtime::RuntimeError::NodePanicked { .. }) => panic!("{e}"),
        Err(e) => Some(e.to_string()),
    };
    let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(PoisonError::into_inner));
    let delivered = Delivered {
        items: seen.items,
        tags: seen.tags,
        messages: seen.messages,
        error,
    };
    check_delivered(&delivered, settings.start);
    delivered
}

/// The receiver's settings a script's first byte picks (see [`source`]).
#[derive(Debug, Clone, Copy)]
struct Settings {
    fenced: bool,
    crc: bool,
    small_queue: bool,
    small_budget: bool,
    messages: bool,
    start: u64,
}

impl Settings {
    fn of(byte: u8) -> Settings {
        let fenced = byte & 1 != 0;
        Settings {
            fenced,
            crc: byte & 2 != 0,
            small_queue: byte & 4 != 0,
            small_budget: byte & 8 != 0,
            messages: byte & 16 != 0 && !fenced,
            start: if byte & 32 != 0 { 1000 } else { 0 },
        }
    }

    fn options(&self) -> TcpOptions {
        let mut opts = TcpOptions {
            fenced: self.fenced,
            messages: self.messages,
            start_offset: self.start,
            // Nothing times out within a script: its end stops the graph.
            connect_timeout: Duration::from_secs(30),
            resume_timeout: Duration::from_secs(30),
            peer_timeout: Duration::from_secs(30),
            ..TcpOptions::default()
        };
        if self.small_queue {
            opts.frame_bytes = 512;
        }
        if self.small_budget {
            (opts.tag_budget, opts.tag_budget_bytes) = (8, 1024);
        }
        opts
    }
}

/// What the receiver's graph delivered.
#[derive(Debug, Default)]
struct Seen {
    items: Vec<u64>,
    tags: Vec<Tag>,
    messages: Vec<TagValue>,
}

/// The receiver's graph (`tcp_source` → a collector, and its message output to another), its
/// address, and what it delivers.
fn receiver_graph(settings: &Settings) -> (Graph, SocketAddr, Arc<Mutex<Seen>>) {
    let source = crate::TcpSource::<u64>::new("tcp-listen://127.0.0.1:0", settings.options())
        .expect("a receiver on loopback");
    let addr = source.local_addr().expect("a listening receiver");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut graph = Graph::new();
    let rx = graph.add("rx", source).expect("a graph of two nodes");
    let items = graph
        .add("items", Collect(seen.clone()))
        .expect("a graph of two nodes");
    graph
        .connect(rx, "out", items, "in")
        .expect("u64 items into u64 items");
    if settings.messages {
        let mut ports = Ports::new();
        let input = ports.add_message_input("in", MessageKind::Any, Inbox::DEFAULT);
        let messages = CollectMessages {
            ports,
            input,
            seen: seen.clone(),
        };
        let messages = graph.add("messages", messages).expect("a third node");
        graph
            .connect(rx, "msg", messages, "in")
            .expect("messages into messages");
    }
    (graph, addr, seen)
}

/// Collects the receiver's items and their tags.
struct Collect(Arc<Mutex<Seen>>);

impl Node for Collect {
    fn ports(&self) -> Ports {
        Ports::new().input::<u64>("in")
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u64>(0)?;
        let start = input.items_read();
        let Some(window) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if window.is_empty() {
            return Ok(Work::Done);
        }
        let n = window.len();
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        seen.items.extend_from_slice(window);
        input.consume(n);
        let mut tags = Vec::new();
        input.take_tags(start + n as u64, &mut tags);
        seen.tags.extend(tags);
        Ok(Work::Progress)
    }
}

/// Collects the receiver's messages.
struct CollectMessages {
    ports: Ports,
    input: MessageIn,
    seen: Arc<Mutex<Seen>>,
}

impl Node for CollectMessages {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        loop {
            match io.inputs.message(self.input.index())?.recv()? {
                MessageRecv::Message(m) => self
                    .seen
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .messages
                    .push(m),
                MessageRecv::Empty => return Ok(self.input.need()),
                MessageRecv::Ended => return Ok(Work::Done),
            }
        }
    }
}

/// One connection of a script's sender.
struct Peer {
    stream: TcpStream,
    /// The receiver's frames (a sender's decoder), and bytes read and not decoded yet.
    decoder: Decoder,
    unread: Vec<u8>,
    /// The stream offset of the next item, and the number of the next message.
    offset: u64,
    seq: u64,
    /// A standby's connection (revision 0): what it is told is what the primary sent.
    standby: bool,
    /// The last ACK and CREDIT.
    acked: u64,
    credit: u64,
    /// The receiver refused or dropped it (or a write failed): nothing more goes out.
    dead: bool,
}

/// Plays a script to the receiver (see [`source`]).
struct ScriptSender {
    settings: Settings,
    addr: SocketAddr,
    done:
        std::sync::mpsc::Receiver<Result<sluice_runtime::RunReport, sluice_runtime::RuntimeError>>,
    /// How the receiver's graph ended, once it did.
    ended: Option<Result<sluice_runtime::RunReport, sluice_runtime::RuntimeError>>,
    /// The connection the script's frames go to, and the others still open (a fenced
    /// receiver's standbys and displaced primaries).
    current: Option<Peer>,
    others: Vec<Peer>,
    connections: usize,
}

impl ScriptSender {
    /// Plays op `op`, taking its arguments from `args`.
    fn play(&mut self, op: u8, args: &mut impl Iterator<Item = u8>) {
        match op % 8 {
            0 => {
                let (a, t) = (args.next().unwrap_or(0), args.next().unwrap_or(0));
                let spots: Vec<u8> = args.take(usize::from(t % 4)).collect();
                self.data(a, &spots);
            }
            1 => {
                let lost = 1 + u64::from(args.next().unwrap_or(0));
                self.send_with(|p| {
                    let frame = wire::gap(p.offset, p.offset + lost).to_vec();
                    p.offset += lost;
                    frame
                });
            }
            2 => self.send_with(|_| wire::header(Kind::Heartbeat, 0, 0).to_vec()),
            3 => {
                let past = u64::from(args.next().unwrap_or(0) & 1);
                self.send_with(|p| wire::offset_frame(Kind::End, p.offset + past).to_vec());
            }
            4 => self.send_with(|p| {
                let frame = crate::message::frame(p.offset, p.seq, &TagValue::U64(p.seq))
                    .expect("a U64 message has a frame");
                p.seq += 1;
                frame
            }),
            5 => {
                let r = args.next().unwrap_or(0);
                self.connect(r);
            }
            6 => {
                if let Some(p) = self.current.as_mut() {
                    read_replies(p, None);
                }
            }
            _ => self.current = None,
        }
    }

    /// A DATA frame (see [`source`]: `a` picks the items and the offset, `spots` the tags).
    fn data(&mut self, a: u8, spots: &[u8]) {
        let crc = self.settings.crc;
        self.send_with(|p| {
            let items = 1 + u64::from(a % 128);
            let offset = p.offset + u64::from(a / 128);
            let tags: Vec<Tag> = spots
                .iter()
                .map(|&s| {
                    let at = offset + u64::from(s) % (items + 1);
                    Tag::new(at, "k", TagValue::U64(at))
                })
                .collect();
            let mut tag_bytes = Vec::new();
            if !tags.is_empty() {
                wire::encode_tags(&tags, &mut tag_bytes).expect("U64 tags encode");
            }
            let payload: Vec<u8> = (offset..offset + items)
                .flat_map(u64::to_le_bytes)
                .collect();
            let head = wire::data_head(
                offset,
                items as u32,
                tag_bytes.len() as u32,
                payload.len(),
                crc,
            )
            .expect("a small frame");
            let mut frame = head.to_vec();
            frame.extend_from_slice(&tag_bytes);
            frame.extend_from_slice(&payload);
            if crc {
                // (Over the whole frame: header, fixed part, tags and payload.)
                let c = crc32c::crc32c(&frame);
                frame.extend_from_slice(&c.to_le_bytes());
            }
            p.offset = offset + items;
            frame
        });
    }

    /// Sends the frame `make` builds on the current connection (if it lives; a standby sends
    /// nothing).
    fn send_with(&mut self, make: impl FnOnce(&mut Peer) -> Vec<u8>) {
        let Some(p) = self.current.as_mut().filter(|p| !p.dead && !p.standby) else {
            return;
        };
        let frame = make(p);
        if p.stream.write_all(&frame).is_err() {
            p.dead = true;
        }
    }

    /// Once the script is played: lets the receiver take what was sent (every live primary's
    /// frames acknowledged, or its connection gone). What it acknowledged is committed, so a
    /// stop loses none of it.
    fn settle(&mut self) {
        let peers = self.current.iter_mut().chain(self.others.iter_mut());
        for p in peers.filter(|p| !p.standby) {
            let deadline = std::time::Instant::now() + WELCOME_WAIT;
            while !p.dead && p.acked < p.offset && std::time::Instant::now() < deadline {
                read_replies(p, None);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Whether the receiver's graph has ended (keeping how).
    fn has_ended(&mut self) -> bool {
        if self.ended.is_none() {
            self.ended = self.done.try_recv().ok();
        }
        self.ended.is_some()
    }

    /// A new connection with fence byte `r` (see [`source`]), greeted and welcomed.
    fn connect(&mut self, r: u8) {
        if self.connections == MAX_CONNECTIONS || self.has_ended() {
            return;
        }
        self.connections += 1;
        match self.current.take() {
            Some(old) if self.settings.fenced => self.others.push(old),
            // A reconnect: the connection before is gone.
            _ => {}
        }
        let fence = match (self.settings.fenced, r >= 128) {
            (true, false) => Some(u64::from(r % 4)),
            (false, true) => Some(1),
            _ => None,
        };
        let Ok(mut stream) = TcpStream::connect(self.addr) else {
            return;
        };
        // (A receiver that stopped reading must not hold the script up for long.)
        let _ = stream.set_write_timeout(Some(WELCOME_WAIT));
        let hello = wire::hello(&Hello {
            item_name: "u64".into(),
            item_size: 8,
            vlen: 1,
            crc: self.settings.crc,
            heartbeat_ms: 1000,
            metadata: Vec::new(),
            fence,
            messages: self.settings.messages,
        })
        .expect("a HELLO without metadata");
        let dead = stream.write_all(&hello).is_err();
        let mut decoder = Decoder::new(Role::Sender, "fuzz receiver", 1 << 16, None, 0);
        if self.settings.messages {
            decoder = decoder.with_messages(0);
        }
        let mut p = Peer {
            stream,
            decoder,
            unread: Vec::new(),
            offset: 0,
            seq: 0,
            standby: fence == Some(0),
            acked: 0,
            credit: 0,
            dead,
        };
        if !p.dead {
            read_replies(&mut p, Some(WELCOME_WAIT));
        }
        self.current = Some(p);
    }
}

/// Reads what the receiver sent on `p`: until its WELCOME within `welcome` (a new
/// connection), else what came so far. Checks each frame against what was sent.
fn read_replies(p: &mut Peer, welcome: Option<Duration>) {
    if p.dead {
        return;
    }
    let set = match welcome {
        Some(wait) => p.stream.set_read_timeout(Some(wait)),
        None => p.stream.set_nonblocking(true),
    };
    if set.is_err() {
        p.dead = true;
        return;
    }
    let mut welcomed = welcome.is_none();
    let mut buf = [0u8; 4096];
    loop {
        while let Some(event) = next_reply(p) {
            if let Event::Welcome(_) = event {
                welcomed = true;
            }
            check_reply(p, &event);
        }
        if p.dead || welcomed && welcome.is_some() {
            break;
        }
        match p.stream.read(&mut buf) {
            Ok(n) if n > 0 => p.unread.extend_from_slice(&buf[..n]),
            // Nothing more has come (not waiting for a WELCOME).
            Err(e) if welcome.is_none() && e.kind() == std::io::ErrorKind::WouldBlock => break,
            // Closed, refused, or too slow to welcome: this connection is done.
            _ => {
                p.dead = true;
                break;
            }
        }
    }
    let _ = p.stream.set_nonblocking(false);
    if !welcomed {
        p.dead = true;
    }
}

/// The next frame the receiver sent on `p`, from what was read of it.
fn next_reply(p: &mut Peer) -> Option<Event> {
    loop {
        let Need::Control(n) = p.decoder.need() else {
            unreachable!("a sender's decoder reads no payload");
        };
        if p.unread.is_empty() {
            return None;
        }
        let k = n.min(p.unread.len());
        p.decoder.control_space()[..k].copy_from_slice(&p.unread[..k]);
        p.unread.drain(..k);
        match p.decoder.control_filled(k) {
            Ok(Some(event)) => return Some(event),
            Ok(None) => {}
            Err(NetError::Remote { .. }) => {
                // The receiver refused the connection or failed: an ERROR frame.
                p.dead = true;
                return None;
            }
            Err(e) => panic!("the receiver sent what its sender cannot take: {e}"),
        }
    }
}

/// Checks a frame from the receiver against what was sent on `p`.
fn check_reply(p: &mut Peer, event: &Event) {
    match *event {
        Event::Welcome(ref w) => {
            assert!(
                w.credit >= w.resume,
                "a WELCOME's credit below its resume offset: {w:?}"
            );
            if p.standby {
                assert_eq!(w.credit, w.resume, "credit to a standby: {w:?}");
            }
            (p.offset, p.acked, p.credit) = (w.resume, w.resume, w.credit);
            p.seq = w.messages.unwrap_or(0);
        }
        Event::Ack(a) | Event::AckMessages { acked: a, .. } => {
            // A standby is told what the primary sent.
            if !p.standby {
                assert!(a <= p.offset, "ACK of {a}, beyond the {} sent", p.offset);
            }
            assert!(a >= p.acked, "ACK of {a} after one of {}", p.acked);
            p.acked = a;
            if let Event::AckMessages { messages, .. } = *event {
                assert!(
                    messages <= p.seq,
                    "ACK of message {messages}, beyond the {} sent",
                    p.seq
                );
            }
        }
        Event::Credit(c) => {
            assert!(c >= p.acked, "CREDIT of {c} below the ACK of {}", p.acked);
            p.credit = c;
        }
        _ => {}
    }
}

/// Checks that what the receiver delivered is the stream (see [`source`]): from `start` on,
/// each item is the stream offset after the one before, or after the gap its GAP tag tells;
/// each DATA tag lies on the item it was sent with.
fn check_delivered(d: &Delivered, start: u64) {
    let mut expected = start;
    for (k, &item) in d.items.iter().enumerate() {
        let lost: u64 = d
            .tags
            .iter()
            .filter(|t| t.index == k as u64 && &*t.key == sluice_runtime::metadata::GAP)
            .map(|t| match t.value {
                TagValue::U64(n) => n,
                _ => panic!("a GAP tag of {:?}", t.value),
            })
            .sum();
        expected += lost;
        assert_eq!(
            item, expected,
            "item {k} is offset {item}, expected {expected}"
        );
        expected += 1;
    }
    for t in d.tags.iter().filter(|t| &*t.key == "k") {
        let at = usize::try_from(t.index).expect("a tag index");
        assert!(at < d.items.len(), "a DATA tag beyond the items: {t:?}");
        assert_eq!(
            t.value,
            TagValue::U64(d.items[at]),
            "a tag on item {at} (offset {}) that was sent on another",
            d.items[at]
        );
    }
}
