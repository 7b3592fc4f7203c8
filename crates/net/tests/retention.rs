//! What the sender retains and for whom: the history a receiver declares, dropping the oldest
//! items (with a GAP) when retention is full while the peer is away, and acknowledgement by an
//! external party (the cluster's failover) instead of on receipt.

mod common;

use common::*;
use sluice_net::wire::{self, Kind, Welcome};
use sluice_net::{AckHandle, Acknowledge, RetentionFull, TcpOptions, TcpSink, TcpSource};
use sluice_runtime::{
    metadata, Graph, Node, NodeError, Ports, Tag, TagPolicy, TagValue, Work, WorkIo,
};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A sender graph whose tcp_sink listens; returns it and the address.
fn listening_sender(counter: Counter<u64>, opts: TcpOptions) -> (Graph, std::net::SocketAddr) {
    let sink = TcpSink::<u64>::new("tcp-listen://127.0.0.1:0", opts).unwrap();
    let addr = sink.local_addr().unwrap();
    let mut g = Graph::new();
    let a = g.add("count", counter).unwrap();
    let b = g.add("tx", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    (g, addr)
}

/// A receiver graph (tcp_source connecting to `addr` → `sink`).
fn connecting_receiver(
    addr: std::net::SocketAddr,
    opts: TcpOptions,
    sink: impl Node + 'static,
) -> Graph {
    let source = TcpSource::<u64>::new(&format!("tcp://{addr}"), opts).unwrap();
    let mut g = Graph::new();
    let a = g.add("rx", source).unwrap();
    let b = g.add("sink", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g
}

/// Reads one frame: its kind and body.
fn read_frame(s: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; wire::HEADER_LEN];
    s.read_exact(&mut head).unwrap();
    let len = u32::from_le_bytes(head[8..12].try_into().unwrap()) as usize;
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    (head[5], body)
}

/// A hand-written receiver: takes the first `count` items (credit stops the sender there),
/// acknowledges them, declares `history`, and goes away.
fn receive_part_and_leave(addr: std::net::SocketAddr, count: u64, history: u64) {
    let mut s = TcpStream::connect(addr).unwrap();
    let (kind, _) = read_frame(&mut s);
    assert_eq!(kind, Kind::Hello as u8);
    s.write_all(&wire::welcome(&Welcome {
        resume: 0,
        credit: count,
        max_items: 4096,
        heartbeat_ms: 1000,
        history,
        messages: None,
    }))
    .unwrap();
    let mut got = 0u64;
    while got < count {
        let (kind, body) = read_frame(&mut s);
        if kind == Kind::Data as u8 {
            got += u64::from(u32::from_le_bytes(body[8..12].try_into().unwrap()));
        }
    }
    assert_eq!(got, count, "the sender kept to the credit");
    s.write_all(&wire::offset_frame(Kind::Ack, count)).unwrap();
}

#[test]
fn a_receiver_taking_over_resumes_as_far_back_as_the_declared_history() {
    const FIRST: u64 = 50_000;
    const HISTORY: u64 = 1_000;
    let (total, first, history) = (200_000u64, FIRST, HISTORY);
    let (tx, addr) = listening_sender(
        Counter::new(total, |i| i, vec![rate_tag(0, 1e6)]),
        TcpOptions::default(),
    );
    let tx = spawn(tx);
    receive_part_and_leave(addr, first, history);
    // The new receiver starts `history` items before what the first one acknowledged, to
    // prime its filters, as a standby taking over would.
    let start = first - history;
    let opts = TcpOptions {
        start_offset: start,
        history,
        ..TcpOptions::default()
    };
    let (checker, seen) = Checker::new(|i| i + (FIRST - HISTORY));
    let rx = spawn(connecting_receiver(addr, opts, checker));
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.first_bad, None,
        "items out of place after the takeover"
    );
    assert_eq!(seen.items, total - start, "items lost or duplicated");
}

#[test]
fn a_receiver_asking_for_more_than_the_declared_history_is_refused() {
    let (first, history) = (50_000u64, 1_000u64);
    let (tx, addr) = listening_sender(Counter::new(200_000, |i| i, vec![]), TcpOptions::default());
    let tx = spawn(tx);
    receive_part_and_leave(addr, first, history);
    let opts = TcpOptions {
        start_offset: first - history - 1,
        resume_timeout: Duration::ZERO,
        ..TcpOptions::default()
    };
    let (checker, _) = Checker::new(|i| i);
    let rx = spawn(connecting_receiver(addr, opts, checker));
    let err = tx.join().unwrap().unwrap_err().to_string();
    assert!(
        err.contains("resumes at offset 48999")
            && err.contains("acknowledged 50000")
            && err.contains("1000 items of history"),
        "{err}"
    );
    let err = rx.join().unwrap().unwrap_err().to_string();
    assert!(err.contains("reported an error"), "{err}");
}

#[test]
fn history_beyond_the_retention_is_refused_naming_the_parameter() {
    let (tx, addr) = listening_sender(
        Counter::new(1_000, |i| i, vec![]),
        TcpOptions {
            retention_bytes: 64 << 10,
            ..TcpOptions::default()
        },
    );
    let tx = spawn(tx);
    let mut s = TcpStream::connect(addr).unwrap();
    read_frame(&mut s);
    s.write_all(&wire::welcome(&Welcome {
        resume: 0,
        credit: 1 << 20,
        max_items: 4096,
        heartbeat_ms: 1000,
        history: 1 << 20,
        messages: None,
    }))
    .unwrap();
    let err = tx.join().unwrap().unwrap_err().to_string();
    assert!(
        err.contains("declares 1048576 items of history") && err.contains("raise retention_bytes"),
        "{err}"
    );
}

/// Produces `0..count` (each item its own offset) as fast as it can, tags given items, and
/// says when it is done.
struct FastSource {
    inner: Counter<u64>,
    done: Arc<AtomicBool>,
}

impl Node for FastSource {
    fn ports(&self) -> Ports {
        self.inner.ports()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let w = self.inner.work(io)?;
        if w == Work::Done {
            self.done.store(true, Ordering::SeqCst);
        }
        Ok(w)
    }
}

/// Keeps every item and tag.
#[derive(Default)]
struct Kept {
    items: Vec<u64>,
    tags: Vec<Tag>,
}

struct Keep(Arc<Mutex<Kept>>);

impl Node for Keep {
    fn ports(&self) -> Ports {
        Ports::new().input::<u64>("in")
    }
    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u64>(0)?;
        let Some(w) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if w.is_empty() {
            return Ok(Work::Done);
        }
        let n = w.len();
        let mut kept = self.0.lock().unwrap();
        kept.items.extend_from_slice(w);
        let end = input.items_read() + n as u64;
        input.consume(n);
        input.take_tags(end, &mut kept.tags);
        Ok(Work::Progress)
    }
}

#[test]
fn a_full_retention_drops_the_oldest_items_and_the_receiver_marks_the_gap() {
    let total = 2_000_000u64;
    let done = Arc::new(AtomicBool::new(false));
    let source = FastSource {
        inner: Counter::new(
            total,
            |i| i,
            vec![
                rate_tag(0, 1e6),
                rate_tag(500_000, 2e6),
                Tag::new(600_000, "seq", TagValue::U64(1)),
                Tag::new(total - 10, "seq", TagValue::U64(2)),
            ],
        ),
        done: done.clone(),
    };
    let sink = TcpSink::<u64>::new(
        "tcp-listen://127.0.0.1:0",
        TcpOptions {
            retention_bytes: 256 << 10,
            retention_full: RetentionFull::DropOldest,
            ..TcpOptions::default()
        },
    )
    .unwrap();
    let addr = sink.local_addr().unwrap();
    let mut g = Graph::new();
    let a = g.add("count", source).unwrap();
    let b = g.add("tx", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    let tx = spawn(g);
    // The source cannot wait for a receiver: it runs to its end while nobody listens.
    let started = Instant::now();
    while !done.load(Ordering::SeqCst) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the source was held up"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let kept = Arc::new(Mutex::new(Kept::default()));
    let rx = spawn(connecting_receiver(
        addr,
        TcpOptions::default(),
        Keep(kept.clone()),
    ));
    let report = tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    let kept = kept.lock().unwrap();
    // Every item that came is in order; each jump is announced by a gap tag of its size.
    let gaps: Vec<&Tag> = kept
        .tags
        .iter()
        .filter(|t| &*t.key == metadata::GAP)
        .collect();
    assert!(!gaps.is_empty(), "no gap was marked");
    let mut lost = 0u64;
    for (i, &item) in kept.items.iter().enumerate() {
        let expected = i as u64 + lost;
        if item != expected {
            let gap = gaps
                .iter()
                .find(|t| t.index == i as u64)
                .unwrap_or_else(|| {
                    panic!("item {i} is {item}, expected {expected}: an unmarked gap")
                });
            let TagValue::U64(n) = gap.value else {
                panic!("gap tag value {:?}", gap.value)
            };
            assert_eq!(item, expected + n, "the gap tag at {i} says {n}");
            lost += n;
        }
    }
    assert_eq!(
        kept.items.len() as u64 + lost,
        total,
        "every item came or was counted lost"
    );
    assert_eq!(*kept.items.last().unwrap(), total - 1);
    // The metadata that changed inside the gap comes again on the first item after it.
    let first_gap = gaps[0].index;
    assert!(
        kept.tags.iter().any(|t| &*t.key == metadata::SAMPLE_RATE
            && t.index == first_gap
            && t.value == TagValue::F64(2e6)),
        "rx_rate of the dropped part not carried over: {:?}",
        kept.tags
    );
    // Tags of kept items arrive where they belong (the last one is in the kept tail).
    let last_seq = kept
        .tags
        .iter()
        .find(|t| t.value == TagValue::U64(2))
        .unwrap();
    assert_eq!(kept.items[last_seq.index as usize], total - 10);
    // The sender says what it dropped.
    let warnings: Vec<&String> = report.nodes.iter().flat_map(|n| &n.warnings).collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(&format!("dropped {lost} items"))),
        "{warnings:?}"
    );
}

#[test]
fn with_external_acknowledgement_the_sender_keeps_everything_until_it_is_acknowledged() {
    let total = 300_000u64;
    let handle = AckHandle::new();
    let (tx, addr) = listening_sender(Counter::new(total, |i| i, vec![]), TcpOptions::default());
    let tx = spawn(tx);
    let (checker, seen) = Checker::new(|i| i);
    let opts = TcpOptions {
        ack: Acknowledge::External(handle.clone()),
        ..TcpOptions::default()
    };
    let rx = spawn(connecting_receiver(addr, opts, checker));
    rx.join().unwrap().unwrap();
    assert_eq!(seen.lock().unwrap().items, total);
    // The receiver has everything and ended its stream, but nothing was acknowledged: the
    // sender may not finish.
    handle.advance(total / 2);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !tx.is_finished(),
        "the sender finished before its items were acknowledged"
    );
    handle.advance(total);
    let started = Instant::now();
    while !tx.is_finished() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the sender did not finish"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    tx.join().unwrap().unwrap();
}

/// A checker that acknowledges what it has consumed through an [`AckHandle`], as a downstream
/// that reflects its input in acknowledged outputs would.
struct AckingChecker {
    inner: Checker<u64>,
    handle: AckHandle,
}

impl Node for AckingChecker {
    fn ports(&self) -> Ports {
        self.inner.ports()
    }
    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let w = self.inner.work(io)?;
        self.handle.advance(io.inputs.get::<u64>(0)?.items_read());
        Ok(w)
    }
}

#[test]
fn external_acknowledgement_survives_reconnects_without_loss_or_duplicates() {
    // A connection cut mid-stream: the receiver resumes at what it received (ahead of what it
    // acknowledged), so nothing comes twice; what was not acknowledged stays at the sender.
    let total = 3_000_000u64;
    let handle = AckHandle::new();
    let opts = TcpOptions {
        frame_bytes: 64 << 10,
        retention_bytes: 4 << 20,
        resume_timeout: Duration::from_secs(20),
        ..TcpOptions::default()
    };
    let (tx, addr) = listening_sender(Counter::new(total, |i| i, vec![]), opts.clone());
    let (relay, cuts) = cutting_relay(addr, vec![1_000_000, 3_000_000], Flow::FromServer);
    let (inner, seen) = Checker::new(|i| i);
    let rx = connecting_receiver(
        relay,
        TcpOptions {
            ack: Acknowledge::External(handle.clone()),
            ..opts
        },
        AckingChecker {
            inner,
            handle: handle.clone(),
        },
    );
    let tx = spawn(tx);
    let rx = spawn(rx);
    rx.join().unwrap().unwrap();
    tx.join().unwrap().unwrap();
    assert_eq!(cuts.load(Ordering::SeqCst), 2, "both cuts happened");
    let seen = seen.lock().unwrap();
    assert_eq!((seen.items, seen.first_bad), (total, None));
    assert_eq!(handle.get(), total);
}
