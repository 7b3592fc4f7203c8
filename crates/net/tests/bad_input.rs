//! Every kind of bad input gives an error that names the peer and the stream offset and says
//! what was expected: first at the state machine, then through real sockets and graphs.

mod common;

use common::*;
use sluice_net::wire::{self, Hello, Kind};
use sluice_net::{Decoder, Event, Need, NetError, Role, TcpOptions};
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

const PEER: &str = "192.0.2.7:4000";

fn hello_c32(crc: bool) -> Vec<u8> {
    wire::hello(&Hello {
        item_name: "c32".into(),
        item_size: 8,
        vlen: 1,
        crc,
        heartbeat_ms: 1000,
        metadata: vec![rate_tag(0, 1e6)],
        fence: None,
        messages: false,
    })
    .unwrap()
}

/// A DATA frame of `items` c32 items (all bytes `fill`) from `offset`.
fn data(offset: u64, items: u32, crc: bool) -> Vec<u8> {
    let payload = vec![7u8; items as usize * 8];
    let head = wire::data_head(offset, items, 0, payload.len(), crc).unwrap();
    let mut f = head.to_vec();
    f.extend_from_slice(&payload);
    if crc {
        let c = crc32c::crc32c(&f);
        f.extend_from_slice(&c.to_le_bytes());
    }
    f
}

/// Feeds `bytes` to a receiver's decoder in one go; the first error, or the events.
fn feed(bytes: &[u8], max_frame: u32) -> Result<Vec<Event>, NetError> {
    let mut d = Decoder::new(Role::Receiver, PEER, max_frame, Some(("c32", 8)), 0);
    let mut events = Vec::new();
    let mut at = 0;
    let mut dest = Vec::new();
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
                dest.clear();
                dest.extend_from_slice(&bytes[at..at + k]);
                at += k;
                d.payload_filled(&dest)?
            }
        };
        events.extend(ev);
    }
    d.eof()?;
    Ok(events)
}

fn err(bytes: &[u8]) -> String {
    feed(bytes, wire::DEFAULT_MAX_FRAME)
        .unwrap_err()
        .to_string()
}

#[test]
fn a_good_stream_decodes() {
    let mut s = hello_c32(true);
    s.extend(data(0, 3, true));
    s.extend(data(3, 2, true));
    s.extend(wire::offset_frame(Kind::End, 5));
    let events = feed(&s, 1 << 20).unwrap();
    assert!(
        matches!(&events[0], Event::Hello(h) if h.item_name == "c32" && h.metadata == vec![rate_tag(0, 1e6)])
    );
    assert_eq!(events.last(), Some(&Event::End(5)));
}

#[test]
fn wrong_magic() {
    let mut s = hello_c32(false);
    s[0] = b'X';
    assert_eq!(
        err(&s),
        "peer 192.0.2.7:4000: bad magic [58, 4c, 43, 4e] at stream offset 0 (expected \"SLCN\" = [53, 4c, 43, 4e]): not a sluice-net stream, or the stream lost its framing"
    );
    let mut s = hello_c32(false);
    s.extend(data(0, 2, false));
    let mut bad = data(2, 1, false);
    bad[1] = 0;
    s.extend(bad);
    assert!(err(&s).contains("at stream offset 2"), "{}", err(&s));
}

#[test]
fn other_version() {
    let mut s = hello_c32(false);
    s[4] = 2;
    assert_eq!(
        err(&s),
        "peer 192.0.2.7:4000 speaks sluice-net wire version 2; this end speaks version 1 (at stream offset 0): upgrade one side"
    );
}

#[test]
fn wrong_item_type_or_size() {
    let s = wire::hello(&Hello {
        item_name: "f32".into(),
        item_size: 4,
        vlen: 1,
        crc: false,
        heartbeat_ms: 1000,
        metadata: vec![],
        fence: None,
        messages: false,
    })
    .unwrap();
    assert_eq!(
        err(&s),
        "peer 192.0.2.7:4000 sends items of type f32 (4 bytes); this end expects c32 (8 bytes) (at stream offset 0)"
    );
}

#[test]
fn oversized_length_is_refused_before_anything_is_allocated() {
    let mut s = hello_c32(false);
    let mut f = wire::header(Kind::Data, 0, u32::MAX).to_vec();
    f.extend([0u8; 16]);
    s.extend(f);
    assert_eq!(
        err(&s),
        "peer 192.0.2.7:4000: DATA frame at stream offset 0 is 4294967295 bytes long, above the limit of 67108864 bytes"
    );
    // A configured limit.
    let mut s = hello_c32(false);
    s.extend(data(0, 1000, false));
    let e = feed(&s, 4096).unwrap_err().to_string();
    assert!(
        e.ends_with(
            "DATA frame at stream offset 0 is 8016 bytes long, above the limit of 4096 bytes"
        ),
        "{e}"
    );
    // An ERROR frame longer than the control limit.
    let mut s = hello_c32(false);
    s.extend(wire::header(Kind::Error, 0, 1 << 20));
    assert!(err(&s).contains(
        "ERROR frame at stream offset 0 is 1048576 bytes long, above the limit of 65536 bytes"
    ));
}

#[test]
fn truncated_frame() {
    let mut s = hello_c32(false);
    s.extend(data(0, 4, false));
    let cut = s.len() - 5;
    assert_eq!(
        err(&s[..cut]),
        "peer 192.0.2.7:4000 stopped mid-frame: DATA frame at stream offset 0 ended after 55 of 60 bytes"
    );
    assert_eq!(
        err(&s[..6]),
        "peer 192.0.2.7:4000 stopped mid-frame: frame header frame at stream offset 0 ended after 6 of 12 bytes"
    );
}

#[test]
fn crc_mismatch() {
    let mut s = hello_c32(true);
    let mut f = data(0, 4, true);
    f[40] ^= 1; // a payload bit
    s.extend(f);
    let e = err(&s);
    assert!(
        e.starts_with("peer 192.0.2.7:4000: CRC32C mismatch in DATA frame at stream offset 0 (4 items): computed "),
        "{e}"
    );
}

#[test]
fn offset_discontinuity() {
    let mut s = hello_c32(false);
    s.extend(data(0, 4, false));
    s.extend(data(5, 4, false));
    assert_eq!(
        err(&s),
        "peer 192.0.2.7:4000: DATA frame starts at offset 5, expected offset 4"
    );
}

#[test]
fn protocol_violations_are_named() {
    // DATA before HELLO.
    assert!(err(&data(0, 1, false))
        .ends_with("bad DATA frame at stream offset 0: the connection must start with HELLO"));
    // A receiver's frame sent by the sender.
    let mut s = hello_c32(false);
    s.extend(wire::offset_frame(Kind::Ack, 0));
    assert!(err(&s).ends_with(
        "bad ACK frame at stream offset 0: unexpected here: the receiver sends it, not the sender"
    ));
    // A length that disagrees with the items.
    let mut s = hello_c32(false);
    let mut f = data(0, 4, false);
    f[20..24].copy_from_slice(&5u32.to_le_bytes());
    s.extend(f);
    assert!(err(&s).contains("length field 48, but 5 items of 8 bytes and 0 bytes of tags make 56"));
    // END where the data does not end.
    let mut s = hello_c32(false);
    s.extend(data(0, 4, false));
    s.extend(wire::offset_frame(Kind::End, 9));
    assert!(err(&s).ends_with("bad END frame at stream offset 4: the stream ends at offset 9 but the data received ends at 4"));
    // The peer's ERROR.
    let mut s = hello_c32(false);
    s.extend(wire::error("disk full"));
    assert_eq!(
        err(&s),
        "peer 192.0.2.7:4000 reported an error at stream offset 0: disk full"
    );
}

/// A fake sender on a raw socket talking to a tcp_source graph: the graph's error.
fn source_error_for(bytes: Vec<u8>, close_after: bool, opts: TcpOptions) -> String {
    let (rx, addr, seen) =
        receiver::<num_complex::Complex32>(|_| num_complex::Complex32::new(0.0, 0.0), opts);
    let rx = spawn(rx);
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&bytes).unwrap();
    if close_after {
        drop(s);
        let e = rx.join().unwrap().unwrap_err().to_string();
        let _ = seen;
        return e;
    }
    let e = rx.join().unwrap().unwrap_err().to_string();
    drop(s);
    e
}

#[test]
fn a_peer_that_stops_mid_frame_stops_the_graph_keeping_what_arrived() {
    let mut s = hello_c32(false);
    for k in 0..3 {
        s.extend(data(k * 4, 4, false));
    }
    let mut last = data(12, 4, false);
    last.truncate(30);
    s.extend(last);
    let opts = TcpOptions {
        resume_timeout: Duration::ZERO,
        ..TcpOptions::default()
    };
    let (rx, addr, seen) =
        receiver::<num_complex::Complex32>(|_| num_complex::Complex32::new(0.0, 0.0), opts);
    let rx = spawn(rx);
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.write_all(&s).unwrap();
    drop(sock);
    let e = rx.join().unwrap().unwrap_err().to_string();
    assert!(e.starts_with("node 'rx' failed: peer 127.0.0.1:"), "{e}");
    assert!(
        e.ends_with("stopped mid-frame: DATA frame at stream offset 12 ended after 30 of 60 bytes"),
        "{e}"
    );
    // The three whole frames reached the checker before the graph stopped.
    assert_eq!(seen.lock().unwrap().items, 12);
    let _ = source_error_for;
}

#[test]
fn a_peer_of_another_version_gets_a_clear_error_on_both_sides() {
    let mut s = hello_c32(false);
    s[4] = 9;
    // The listener refuses that connection only, waits on for a sender it can take, and
    // names the refusal when it gives up.
    let (rx, addr, _seen) = receiver::<num_complex::Complex32>(
        |_| num_complex::Complex32::new(0.0, 0.0),
        TcpOptions {
            connect_timeout: Duration::from_secs(1),
            ..TcpOptions::default()
        },
    );
    let rx = spawn(rx);
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.write_all(&s).unwrap();
    let e = rx.join().unwrap().unwrap_err().to_string();
    assert!(
        e.contains("speaks sluice-net wire version 9; this end speaks version 1"),
        "{e}"
    );
    // The peer is told why, in an ERROR frame.
    let mut reply = Vec::new();
    use std::io::Read;
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = sock.read_to_end(&mut reply);
    assert_eq!(&reply[..4], b"SLCN");
    assert_eq!(reply[5], Kind::Error as u8);
    assert!(String::from_utf8_lossy(&reply[12..]).contains("wire version 9"));
}

#[test]
fn a_sink_told_of_a_wrong_item_type_fails_naming_it() {
    // tcp_source carries c32; tcp_sink sends f32. (The listener refuses that connection and
    // names it when its wait for a sender it can take ends.)
    let (rx, addr, _seen) = receiver::<num_complex::Complex32>(
        |_| num_complex::Complex32::new(0.0, 0.0),
        TcpOptions {
            connect_timeout: Duration::from_secs(1),
            ..TcpOptions::default()
        },
    );
    let tx = sender(
        Counter::new(1000, |i| i as f32, vec![]),
        &format!("tcp://{addr}"),
        TcpOptions::default(),
    );
    let rx = spawn(rx);
    let tx = spawn(tx);
    let rx_err = rx.join().unwrap().unwrap_err().to_string();
    let tx_err = tx.join().unwrap().unwrap_err().to_string();
    assert!(
        rx_err.contains("sends items of type f32 (4 bytes); this end expects c32 (8 bytes)"),
        "{rx_err}"
    );
    assert!(
        tx_err.contains("reported an error at stream offset 0: peer 127.0.0.1:"),
        "{tx_err}"
    );
    assert!(tx_err.contains("expects c32"), "{tx_err}");
}

#[test]
fn bad_urls_are_refused() {
    let e = sluice_net::TcpSink::<u8>::new("udp://x:1", TcpOptions::default()).unwrap_err();
    assert_eq!(e.to_string(), "bad URL 'udp://x:1': unknown scheme (use tcp://host:port to connect or tcp-listen://host:port to listen)");
    let e = sluice_net::TcpSource::<u8>::new("tcp://nohost", TcpOptions::default()).unwrap_err();
    assert!(e.to_string().contains("no port"));
}

// --- Tags beyond the budget cost the connection, not the stream ---------------------------

/// A DATA frame of `items` zero c32 items from `offset` carrying `tags` tags (all on its first
/// item, key `burst`).
fn tagged(offset: u64, items: u32, tags: usize) -> Vec<u8> {
    let list: Vec<sluice_queue::Tag> = (0..tags)
        .map(|_| sluice_queue::Tag::new(offset, "burst", sluice_queue::TagValue::Bool(true)))
        .collect();
    let mut t = Vec::new();
    wire::encode_tags(&list, &mut t).unwrap();
    let payload = vec![0u8; items as usize * 8];
    let mut f = wire::data_head(offset, items, t.len() as u32, payload.len(), false)
        .unwrap()
        .to_vec();
    f.extend_from_slice(&t);
    f.extend_from_slice(&payload);
    f
}

/// Sends `bytes` on a new connection to `addr` and reads until the receiver closes it (a
/// dropped connection) or 3 s pass: whether it was dropped.
fn dropped_after(addr: std::net::SocketAddr, bytes: &[u8]) -> bool {
    use std::io::Read;
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let _ = s.write_all(bytes);
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

#[test]
fn tags_beyond_the_budget_drop_that_connection_and_the_stream_goes_on() {
    let opts = TcpOptions {
        max_tags_per_frame: 100,
        tag_budget: 250,
        resume_timeout: Duration::from_secs(5),
        heartbeat: Duration::from_millis(200),
        ..TcpOptions::default()
    };
    let (rx, addr, seen) =
        receiver::<num_complex::Complex32>(|_| num_complex::Complex32::new(0.0, 0.0), opts);
    let rx = spawn(rx);
    // Too many tags in one frame: dropped before its items are taken.
    let mut bad = hello_c32(false);
    bad.extend(tagged(0, 1, 101));
    assert!(dropped_after(addr, &bad), "a frame of 101 tags was taken");
    // Within a frame's limit, but three frames of 100 tags within a queue's worth of items:
    // the third is refused; the first two are kept.
    let mut bad = hello_c32(false);
    for k in 0..3 {
        bad.extend(tagged(k, 1, 100));
    }
    assert!(
        dropped_after(addr, &bad),
        "300 tags within the window were taken"
    );
    // A well-behaved sender resumes where the stream stands (item 2) and ends it.
    let mut good = hello_c32(false);
    good.extend(data(2, 14, false));
    good.extend(wire::offset_frame(Kind::End, 16));
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&good).unwrap();
    rx.join().unwrap().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.items, 16);
    // The two frames taken carried 100 tags each; the refused ones none.
    assert_eq!(seen.tags.iter().filter(|t| &*t.key == "burst").count(), 200);
    drop(s);
}

#[test]
fn the_tags_of_a_stream_share_their_keys() {
    let mut bytes = hello_c32(false);
    bytes.extend(tagged(0, 1, 3));
    bytes.extend(tagged(1, 1, 2));
    let keys: Vec<std::sync::Arc<str>> = feed(&bytes, wire::DEFAULT_MAX_FRAME)
        .unwrap()
        .into_iter()
        .flat_map(|e| match e {
            Event::DataBegin { tags, .. } => tags.into_iter().map(|t| t.key).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(keys.len(), 5);
    // One allocation for the key, shared by every tag of both frames.
    assert!(keys.iter().all(|k| std::sync::Arc::ptr_eq(k, &keys[0])));
}
