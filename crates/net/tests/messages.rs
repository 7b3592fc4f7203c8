//! Messages beside the stream (`TcpOptions::messages`, MESSAGE frames): in order and bound to
//! the right offsets, exactly once across reconnects, a hostile sender's bad MESSAGE costing
//! its connection only, and the negotiation with peers that have no messages.

mod common;

use common::*;
use sluice_net::message::{self, MAX_MESSAGE};
use sluice_net::wire::{self, Hello, Kind, Welcome};
use sluice_net::{Decoder, Event, Need, NetError, Role, TcpOptions, TcpSink, TcpSource};
use sluice_runtime::{
    Graph, Inbox, ItemType, Message, MessageIn, MessageKind, MessageOut, Node, NodeError, Ports,
    Recv, Sent, TagValue, Work, WorkIo,
};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn make(i: u64) -> u64 {
    i.wrapping_mul(0x9e3779b97f4a7c15)
}

/// Produces items `make(0..count)` in chunks of at most `chunk`, and after every `every`
/// items (and before the first) the message `U64(p)`, `p` the items committed before it.
struct MsgCounter {
    ports: Ports,
    msg: MessageOut,
    count: u64,
    every: u64,
    chunk: usize,
    next: u64,
    /// The next message's position; a message refused by a full inbox.
    due: Option<u64>,
    held: Option<Message>,
}

impl MsgCounter {
    fn new(count: u64, every: u64, chunk: usize) -> Self {
        let mut ports = Ports::new().output::<u64>("out");
        let msg = ports.add_message_output("msg", MessageKind::Any);
        MsgCounter {
            ports,
            msg,
            count,
            every,
            chunk,
            next: 0,
            due: Some(0),
            held: None,
        }
    }

    /// The messages it sends.
    fn expected(count: u64, every: u64) -> Vec<Message> {
        (0..=count)
            .step_by(every as usize)
            .map(TagValue::U64)
            .collect()
    }
}

impl Node for MsgCounter {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        loop {
            let msg = match (self.held.take(), self.due.take()) {
                (Some(m), _) => Some(m),
                (None, Some(p)) => Some(TagValue::U64(p)),
                (None, None) => None,
            };
            if let Some(m) = msg {
                if let Sent::Full(m) = io.outputs.message(self.msg.index())?.send(m)? {
                    self.held = Some(m);
                    return Ok(self.msg.need());
                }
            }
            if self.next == self.count {
                return Ok(Work::Done);
            }
            let out = io.outputs.get::<u64>(0)?;
            let Some(space) = out.reserve(1)? else {
                return Ok(Work::NeedOutput { port: 0, items: 1 });
            };
            let to_mark = self.every - self.next % self.every;
            let n = (space.len() as u64)
                .min(self.count - self.next)
                .min(self.chunk as u64)
                .min(to_mark) as usize;
            for (k, x) in space[..n].iter_mut().enumerate() {
                *x = make(self.next + k as u64);
            }
            out.commit(n);
            self.next += n as u64;
            if self.next.is_multiple_of(self.every) {
                self.due = Some(self.next);
            }
        }
    }
}

/// Collects the messages of its input.
struct Collector {
    ports: Ports,
    inp: MessageIn,
    got: Arc<Mutex<Vec<Message>>>,
}

impl Collector {
    fn new() -> (Self, Arc<Mutex<Vec<Message>>>) {
        let mut ports = Ports::new();
        let inp = ports.add_message_input("in", MessageKind::Any, Inbox::DEFAULT);
        let got = Arc::new(Mutex::new(Vec::new()));
        (
            Collector {
                ports,
                inp,
                got: got.clone(),
            },
            got,
        )
    }
}

impl Node for Collector {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        loop {
            match io.inputs.message(self.inp.index())?.recv()? {
                Recv::Message(m) => self.got.lock().unwrap().push(m),
                Recv::Empty => return Ok(self.inp.need()),
                Recv::Ended => return Ok(Work::Done),
            }
        }
    }
}

fn with_messages(opts: TcpOptions) -> TcpOptions {
    TcpOptions {
        messages: true,
        ..opts
    }
}

/// A sender graph: [`MsgCounter`] → `tcp_sink` (stream and messages) connecting to `url`.
fn msg_sender(counter: MsgCounter, url: &str, opts: TcpOptions) -> Graph {
    let sink = TcpSink::<u64>::new(url, with_messages(opts)).unwrap();
    let mut g = Graph::new();
    let a = g.add("count", counter).unwrap();
    let b = g.add("tx", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g.connect(a, "msg", b, "msg").unwrap();
    g
}

type Got = Arc<Mutex<Vec<Message>>>;

/// A receiver graph: `tcp_source` listening (stream and messages) → checker and collector.
fn msg_receiver(opts: TcpOptions) -> (Graph, std::net::SocketAddr, Arc<Mutex<Seen>>, Got) {
    let source = TcpSource::<u64>::new("tcp-listen://127.0.0.1:0", with_messages(opts)).unwrap();
    let addr = source.local_addr().unwrap();
    let (checker, seen) = Checker::new(make);
    let (collector, got) = Collector::new();
    let mut g = Graph::new();
    let a = g.add("rx", source).unwrap();
    let b = g.add("check", checker).unwrap();
    let c = g.add("collect", collector).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g.connect(a, "msg", c, "in").unwrap();
    (g, addr, seen, got)
}

/// A receiver written with the decoder alone, on a blocking socket: it accepts a connection,
/// welcomes the sender where it stands, acknowledges every frame, and drops connection `i`
/// once it has read `drops[i]` frames (between frames); it records every message with its
/// offset, until END.
fn raw_receiver(listener: TcpListener, drops: Vec<usize>) -> (Vec<(u64, Message)>, u64, usize) {
    let item = ItemType::of::<u64>();
    let (mut received, mut next_message) = (0u64, 0u64);
    let mut messages = Vec::new();
    for conn in 0.. {
        let (mut s, peer) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut d = Decoder::new(
            Role::Receiver,
            &peer.to_string(),
            wire::DEFAULT_MAX_FRAME,
            Some((item.name(), item.size() as u32)),
            received,
        )
        .with_messages(next_message);
        let mut frames = 0;
        let mut payload = Vec::new();
        loop {
            if d.between_frames() && drops.get(conn).is_some_and(|&n| frames >= n) {
                break;
            }
            let event = match d.need() {
                Need::Control(n) => {
                    s.read_exact(&mut d.control_space()[..n]).unwrap();
                    d.control_filled(n).unwrap()
                }
                Need::Payload(n) => {
                    payload.resize(n, 0);
                    s.read_exact(&mut payload).unwrap();
                    d.payload_filled(&payload).unwrap()
                }
            };
            let Some(event) = event else { continue };
            frames += 1;
            match event {
                Event::Hello(h) => {
                    assert!(h.messages, "the sink announces messages");
                    s.write_all(&wire::welcome(&Welcome {
                        resume: received,
                        credit: u64::MAX / 2,
                        max_items: 1 << 16,
                        heartbeat_ms: 1000,
                        history: 0,
                        messages: Some(next_message),
                    }))
                    .unwrap();
                }
                Event::DataEnd { offset, items } => {
                    received = offset + u64::from(items);
                    s.write_all(&wire::offset_frame(Kind::Ack, received))
                        .unwrap();
                }
                Event::Message {
                    offset,
                    seq,
                    message,
                } => {
                    assert_eq!(offset, received, "the decoder checks the binding");
                    next_message = seq + 1;
                    messages.push((offset, message));
                }
                Event::End(end) => {
                    s.write_all(&wire::offset_frame(Kind::Ack, end)).unwrap();
                    return (messages, end, conn + 1);
                }
                _ => {}
            }
        }
        // Dropped: the next connection resumes where this one stood.
        drop(s);
    }
    unreachable!()
}

/// Checks that the messages are `U64(p)` for p = 0, every, 2·every … count, in order, each
/// bound at or after the items committed before it, and the last one at the stream's end.
fn check_bound(messages: &[(u64, Message)], count: u64, every: u64, end: u64) {
    assert_eq!(end, count);
    let values: Vec<Message> = messages.iter().map(|(_, m)| m.clone()).collect();
    assert_eq!(
        values,
        MsgCounter::expected(count, every),
        "lost, duplicated or reordered"
    );
    let mut last = 0;
    for (offset, m) in messages {
        let TagValue::U64(p) = m else { unreachable!() };
        assert!(
            *offset >= *p,
            "message {p} bound to offset {offset}, before its items"
        );
        assert!(*offset >= last, "offsets went back");
        last = *offset;
    }
    assert_eq!(
        messages.last().unwrap().0,
        count,
        "the last message goes before END"
    );
}

#[test]
fn messages_arrive_in_order_bound_to_their_offsets() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let rx = std::thread::spawn(move || raw_receiver(listener, Vec::new()));
    let expect_connections = 1;
    let (count, every) = (100_000, 1_000);
    let opts = TcpOptions {
        frame_bytes: 4096,
        ..TcpOptions::default()
    };
    let tx = spawn(msg_sender(
        MsgCounter::new(count, every, 700),
        &format!("tcp://{addr}"),
        opts,
    ));
    tx.join().unwrap().unwrap();
    let (messages, end, connections) = rx.join().unwrap();
    check_bound(&messages, count, every, end);
    assert_eq!(connections, expect_connections);
}

/// The receiver drops the connection after various numbers of frames (right after the HELLO,
/// between a DATA frame and the MESSAGE after it, …); each new connection's WELCOME resumes
/// at the items and messages it has: every message arrives once, bound where it belongs.
#[test]
fn resume_by_offset_neither_loses_nor_duplicates_messages() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let drops = vec![1, 2, 3, 5, 8, 13, 40, 41, 97, 300];
    let expect_connections = drops.len() + 1;
    let rx = std::thread::spawn(move || raw_receiver(listener, drops));
    let (count, every) = (60_000, 500);
    let opts = TcpOptions {
        frame_bytes: 2048,
        resume_timeout: Duration::from_secs(20),
        ..TcpOptions::default()
    };
    let tx = spawn(msg_sender(
        MsgCounter::new(count, every, 300),
        &format!("tcp://{addr}"),
        opts,
    ));
    tx.join().unwrap().unwrap();
    let (messages, end, connections) = rx.join().unwrap();
    check_bound(&messages, count, every, end);
    assert_eq!(connections, expect_connections);
}

#[test]
fn messages_cross_loopback_with_the_stream() {
    let (count, every) = (200_000, 2_000);
    let (rx, addr, seen, got) = msg_receiver(TcpOptions::default());
    let rx = spawn(rx);
    let tx = spawn(msg_sender(
        MsgCounter::new(count, every, 4096),
        &format!("tcp://{addr}"),
        TcpOptions::default(),
    ));
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!((seen.items, seen.first_bad), (count, None));
    assert_eq!(*got.lock().unwrap(), MsgCounter::expected(count, every));
}

#[test]
fn messages_survive_cut_connections() {
    let (count, every) = (300_000, 997);
    let opts = TcpOptions {
        frame_bytes: 1000,
        resume_timeout: Duration::from_secs(20),
        ..TcpOptions::default()
    };
    let (rx, addr, seen, got) = msg_receiver(opts.clone());
    let cuts = vec![100, 5_000, 77_777, 300_001, 1_000_003];
    let (relay, cut) = cutting_relay(addr, cuts.clone(), Flow::FromClient);
    let rx = spawn(rx);
    let tx = spawn(msg_sender(
        MsgCounter::new(count, every, 512),
        &format!("tcp://{relay}"),
        opts,
    ));
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    assert_eq!(cut.load(std::sync::atomic::Ordering::SeqCst), cuts.len());
    let seen = seen.lock().unwrap();
    assert_eq!((seen.items, seen.first_bad), (count, None));
    assert_eq!(*got.lock().unwrap(), MsgCounter::expected(count, every));
}

fn hello_u64(messages: bool) -> Vec<u8> {
    wire::hello(&Hello {
        item_name: "u64".into(),
        item_size: 8,
        vlen: 1,
        crc: false,
        heartbeat_ms: 1000,
        metadata: Vec::new(),
        fence: None,
        messages,
    })
    .unwrap()
}

/// Connects to `addr` as a sender, is welcomed, sends `bad`, and returns whether the receiver
/// closed the connection (within 10 s).
fn hostile(addr: std::net::SocketAddr, bad: &[u8]) -> bool {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&hello_u64(true)).unwrap();
    let mut welcome = [0u8; wire::HEADER_LEN + wire::WELCOME_LEN + 8];
    s.read_exact(&mut welcome).unwrap();
    assert_eq!(welcome[5], Kind::Welcome as u8);
    assert_eq!(&welcome[6..8], &wire::FLAG_MSG.to_le_bytes());
    let _ = s.write_all(bad);
    let mut rest = Vec::new();
    match s.read_to_end(&mut rest) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn a_hostile_sender_s_bad_message_costs_its_own_connection_only() {
    let opts = TcpOptions {
        resume_timeout: Duration::from_secs(20),
        ..TcpOptions::default()
    };
    let (rx, addr, seen, got) = msg_receiver(opts.clone());
    let rx = spawn(rx);
    let mut header = wire::header(Kind::Message, 0, 1 << 20).to_vec(); // 1 MiB: above the limit
    header.extend_from_slice(&[0; 16]);
    let good = message::frame(0, 0, &TagValue::U64(1)).unwrap();
    let mut not_pmt = good.clone();
    let last = not_pmt.len() - 9;
    not_pmt[last] = 0xee; // an unknown PMT type byte
    let mut trailing = good.clone();
    trailing.push(0);
    let len = (trailing.len() - wire::HEADER_LEN) as u32;
    trailing[8..12].copy_from_slice(&len.to_le_bytes());
    let wrong_seq = message::frame(0, 5, &TagValue::U64(1)).unwrap();
    let wrong_offset = message::frame(9, 0, &TagValue::U64(1)).unwrap();
    for bad in [header, not_pmt, trailing, wrong_seq, wrong_offset] {
        assert!(
            hostile(addr, &bad),
            "the receiver closes the hostile connection"
        );
    }
    // The stream goes on: an honest sender delivers it all.
    let (count, every) = (20_000, 1_000);
    let tx = spawn(msg_sender(
        MsgCounter::new(count, every, 1000),
        &format!("tcp://{addr}"),
        opts,
    ));
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!((seen.items, seen.first_bad), (count, None));
    assert_eq!(*got.lock().unwrap(), MsgCounter::expected(count, every));
}

/// Feeds `bytes` to a receiver's decoder (u64 items; taking messages or not).
fn decode(bytes: &[u8], messages: bool) -> Result<Vec<Event>, NetError> {
    let mut d = Decoder::new(Role::Receiver, "192.0.2.1:9", 1 << 20, Some(("u64", 8)), 0);
    if messages {
        d = d.with_messages(0);
    }
    let (mut at, mut events, mut payload) = (0, Vec::new(), Vec::new());
    while at < bytes.len() {
        let ev = match d.need() {
            Need::Control(n) => {
                let k = n.min(bytes.len() - at);
                d.control_space()[..k].copy_from_slice(&bytes[at..at + k]);
                at += k;
                d.control_filled(k)?
            }
            Need::Payload(n) => {
                let k = n.min(bytes.len() - at);
                payload.clear();
                payload.extend_from_slice(&bytes[at..at + k]);
                at += k;
                d.payload_filled(&payload)?
            }
        };
        events.extend(ev);
    }
    Ok(events)
}

fn data_u64(offset: u64, items: u32) -> Vec<u8> {
    let mut f = wire::data_head(offset, items, 0, items as usize * 8, false)
        .unwrap()
        .to_vec();
    f.extend(std::iter::repeat_n(1u8, items as usize * 8));
    f
}

#[test]
fn the_decoder_checks_every_message_and_the_negotiation() {
    let mut good = hello_u64(true);
    good.extend(message::frame(0, 0, &TagValue::U64(7)).unwrap());
    good.extend(data_u64(0, 3));
    good.extend(message::frame(3, 1, &TagValue::Str("x".into())).unwrap());
    good.extend(message::frame(3, 2, &TagValue::Null).unwrap());
    good.extend(wire::offset_frame(Kind::End, 3));
    let events = decode(&good, true).unwrap();
    let bound: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Message { offset, seq, .. } => Some((*offset, *seq)),
            _ => None,
        })
        .collect();
    assert_eq!(bound, [(0, 0), (3, 1), (3, 2)]);

    // A receiver without messages refuses a sender with them, in words.
    let e = decode(&hello_u64(true), false).unwrap_err().to_string();
    assert!(
        e.contains("no message output") && e.contains("192.0.2.1:9"),
        "{e}"
    );
    // A receiver with messages takes an old sender (no flag: the HELLO is version 1's bytes).
    let mut old = hello_u64(false);
    assert_eq!(u16::from_le_bytes([old[6], old[7]]), 0);
    old.extend(data_u64(0, 2));
    assert!(decode(&old, true).is_ok());
    // ... but no MESSAGE from it.
    old.extend(message::frame(2, 0, &TagValue::U64(1)).unwrap());
    let e = decode(&old, true).unwrap_err();
    assert!(
        matches!(e, NetError::Message { .. }) && !e.is_fatal(),
        "{e}"
    );

    // Each bad MESSAGE is a NetError::Message, which costs the connection, not the stream.
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            wire::header(Kind::Message, 0, (wire::MAX_CONTROL + 1) as u32).to_vec(),
            "above the limit of 65536 bytes",
        ),
        (
            wire::header(Kind::Message, 0, 16).to_vec(),
            "body of 16 bytes",
        ),
        (
            message::frame(1, 0, &TagValue::U64(1)).unwrap(),
            "expected message 0 at offset 0",
        ),
        (
            message::frame(0, 1, &TagValue::U64(1)).unwrap(),
            "expected message 0 at offset 0",
        ),
    ];
    for (bad, words) in cases {
        let mut s = hello_u64(true);
        s.extend(&bad);
        s.extend([0u8; 16]);
        let e = decode(&s, true).unwrap_err();
        assert!(matches!(e, NetError::Message { .. }), "{e}");
        assert!(e.to_string().contains(words), "{e} lacks {words:?}");
        assert!(e.to_string().contains("192.0.2.1:9"), "{e}");
        assert!(!e.is_fatal());
    }

    // A sender whose HELLO asked for messages needs a WELCOME that takes them, and the other
    // way round.
    let welcome = |messages| {
        wire::welcome(&Welcome {
            resume: 0,
            credit: 10,
            max_items: 10,
            heartbeat_ms: 1000,
            history: 0,
            messages,
        })
    };
    for (asked, w, ok) in [
        (true, welcome(Some(4)), true),
        (false, welcome(None), true),
        (true, welcome(None), false),
        (false, welcome(Some(0)), false),
    ] {
        let mut d = Decoder::new(Role::Sender, "192.0.2.1:9", 1 << 16, None, 0);
        if asked {
            d = d.with_messages(0);
        }
        d.control_space().copy_from_slice(&w[..wire::HEADER_LEN]);
        let r = d.control_filled(wire::HEADER_LEN).and_then(|_| {
            let n = w.len() - wire::HEADER_LEN;
            d.control_space().copy_from_slice(&w[wire::HEADER_LEN..]);
            d.control_filled(n)
        });
        assert_eq!(r.is_ok(), ok, "asked {asked}: {r:?}");
        if let Ok(Some(Event::Welcome(w))) = r {
            assert_eq!(w.messages, asked.then_some(4));
        }
    }
}

#[test]
fn a_message_too_long_for_a_frame_is_counted_not_sent() {
    let big = TagValue::Str("x".repeat(MAX_MESSAGE).into());
    assert!(matches!(
        message::frame(0, 0, &big),
        Err(message::Unsendable::TooLong(_))
    ));
    assert!(message::frame(0, 0, &TagValue::Str("x".repeat(1000).into())).is_ok());
}

/// Sends `n` messages before any item, then `items` items.
struct Chatter {
    ports: Ports,
    msg: MessageOut,
    n: u64,
    sent: u64,
    items: u64,
}

impl Node for Chatter {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        while self.sent < self.n {
            let out = io.outputs.message(self.msg.index())?;
            if let Sent::Full(_) = out.send(TagValue::U64(self.sent))? {
                return Ok(self.msg.need());
            }
            self.sent += 1;
        }
        let out = io.outputs.get::<u64>(0)?;
        let written = out.items_written();
        if written == self.items {
            return Ok(Work::Done);
        }
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = (space.len() as u64).min(self.items - written) as usize;
        for (k, x) in space[..n].iter_mut().enumerate() {
            *x = make(written + k as u64);
        }
        out.commit(n);
        Ok(Work::Progress)
    }
}

/// More messages than a sink keeps unacknowledged, while the stream stands still: the
/// receiver's ACKs acknowledge messages too, so the sink's outbox empties and nothing waits
/// for an item that never comes.
#[test]
fn many_messages_on_an_idle_stream_do_not_wait_for_items() {
    let n = 3 * message::MAX_RETAINED as u64;
    let (rx, addr, seen, got) = msg_receiver(TcpOptions::default());
    let rx = spawn(rx);
    let mut ports = Ports::new().output::<u64>("out");
    let msg = ports.add_message_output("msg", MessageKind::Any);
    let chatter = Chatter {
        ports,
        msg,
        n,
        sent: 0,
        items: 100,
    };
    let sink = TcpSink::<u64>::new(
        &format!("tcp://{addr}"),
        with_messages(TcpOptions::default()),
    )
    .unwrap();
    let mut g = Graph::new();
    let a = g.add("chatter", chatter).unwrap();
    let b = g.add("tx", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g.connect(a, "msg", b, "msg").unwrap();
    let tx = spawn(g);
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    assert_eq!(seen.lock().unwrap().items, 100);
    let expected: Vec<Message> = (0..n).map(TagValue::U64).collect();
    assert_eq!(*got.lock().unwrap(), expected);
}
