//! Loopback transfers between a tcp_sink and a tcp_source in two graphs.

mod common;

use common::*;
use num_complex::Complex32;
use sluice_net::TcpOptions;
use sluice_runtime::{Tag, TagValue};

fn iq(i: u64) -> Complex32 {
    Complex32::new(i as f32, -((i % 1000) as f32))
}

fn expected_checksum(count: u64) -> u64 {
    let mut h = 0xcbf29ce484222325;
    let mut buf = Vec::with_capacity(1 << 16);
    let mut i = 0;
    while i < count {
        buf.clear();
        let n = (count - i).min(1 << 16);
        buf.extend((i..i + n).map(iq));
        h = fnv(h, bytemuck::cast_slice(&buf));
        i += n;
    }
    h
}

#[test]
fn ten_million_complex_items_arrive_with_a_matching_checksum() {
    let count = 10_000_000u64;
    for crc in [false, true] {
        let opts = TcpOptions {
            crc,
            ..TcpOptions::default()
        };
        let (rx, addr, seen) = receiver(iq, opts.clone());
        let tx = sender(
            Counter::new(count, iq, vec![]),
            &format!("tcp://{addr}"),
            opts,
        );
        let rx = spawn(rx);
        let tx = spawn(tx);
        tx.join().unwrap().unwrap();
        rx.join().unwrap().unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.items, count, "crc {crc}");
        assert_eq!(seen.first_bad, None, "crc {crc}");
        if !crc {
            // The checksum is the same whichever way the bytes were chunked.
            assert_eq!(seen.checksum, expected_checksum(count));
        }
    }
}

#[test]
fn tags_and_stream_metadata_arrive_at_their_offsets() {
    let count = 2_000_000u64;
    let mut tags = vec![
        rate_tag(0, 2.5e6),
        Tag::new(0, "rx_freq", TagValue::F64(433.92e6)),
        Tag::new(0, "rx_time", TagValue::rx_time(1_700_000_000, 0.25)),
        rate_tag(1_500_000, 1e6),
    ];
    // A tag every 100 001 items, some on frame boundaries and some not, with a source name.
    for i in (7..count).step_by(100_001) {
        tags.push(Tag::with_source(i, "seq", TagValue::U64(i), "counter"));
    }
    tags.push(Tag::new(count - 1, "last", TagValue::Bool(true)));
    // Small frames so that tags fall in many frames.
    let opts = TcpOptions {
        frame_bytes: 64 << 10,
        ..TcpOptions::default()
    };
    let (rx, addr, seen) = receiver(iq, opts.clone());
    let tx = sender(
        Counter::new(count, iq, tags.clone()),
        &format!("tcp://{addr}"),
        opts,
    );
    let rx = spawn(rx);
    let tx = spawn(tx);
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.items, count);
    assert_eq!(seen.first_bad, None);
    let mut want = tags.clone();
    want.sort_by_key(|t| t.index);
    let mut got = seen.tags.clone();
    got.sort_by(|a, b| a.index.cmp(&b.index).then(a.key.cmp(&b.key)));
    want.sort_by(|a, b| a.index.cmp(&b.index).then(a.key.cmp(&b.key)));
    assert_eq!(got, want);
}

#[test]
fn the_listening_end_may_be_the_sender() {
    // tcp_sink listens, tcp_source connects.
    let count = 300_000u64;
    let sink =
        sluice_net::TcpSink::<u32>::new("tcp-listen://127.0.0.1:0", TcpOptions::default()).unwrap();
    let addr = sink.local_addr().unwrap();
    let mut g = sluice_runtime::Graph::new();
    let a = g
        .add(
            "count",
            Counter::new(count, |i| i as u32, vec![rate_tag(0, 8e3)]),
        )
        .unwrap();
    let b = g.add("tx", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    let source =
        sluice_net::TcpSource::<u32>::new(&format!("tcp://{addr}"), TcpOptions::default()).unwrap();
    let (checker, seen) = Checker::new(|i| i as u32);
    let mut h = sluice_runtime::Graph::new();
    let c = h.add("rx", source).unwrap();
    let d = h.add("check", checker).unwrap();
    h.connect(c, "out", d, "in").unwrap();
    let tx = spawn(g);
    let rx = spawn(h);
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!((seen.items, seen.first_bad), (count, None));
    assert_eq!(seen.tags, vec![rate_tag(0, 8e3)]);
}
