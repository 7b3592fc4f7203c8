//! Streams of vectors (`vlen` > 1, e.g. one sample of each of 333 channels per vector) between a
//! tcp_sink and a tcp_source: bit-identical with tags, vector-aligned across reconnects, and a
//! sender and receiver whose vlens differ refused on both sides.

mod common;

use common::{cutting_relay, fnv, spawn, Flow};
use num_complex::Complex32;
use rand::{Rng, SeedableRng};
use sluice_net::wire::{self, Hello};
use sluice_net::{Decoder, Need, NetError, Role, TcpOptions, TcpSink, TcpSource};
use sluice_runtime::{Graph, Item, Node, NodeError, Ports, Tag, TagValue, Work, WorkIo};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Produces `vectors` vectors of `vlen` items, item `i` (counting items, not vectors) being
/// `make(i)`, committing whole vectors only, a few vectors per call.
struct VecCounter<T> {
    vlen: usize,
    total: u64,
    next: u64,
    make: fn(u64) -> T,
    tags: Vec<Tag>,
    /// The most vectors per call.
    chunk: usize,
}

impl<T: Item> Node for VecCounter<T> {
    fn ports(&self) -> Ports {
        let mut p = Ports::new();
        p.add_output_vectors::<T>("out", self.vlen, self.vlen * 7);
        p
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next == self.total {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<T>(0)?;
        let Some(space) = out.reserve(self.vlen)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: self.vlen,
            });
        };
        // Whole vectors, at most `chunk` per call (7: commits fall anywhere in frames).
        let n = (space.len() / self.vlen).min(self.chunk) * self.vlen;
        let n = n.min((self.total - self.next) as usize);
        for (k, x) in space[..n].iter_mut().enumerate() {
            *x = (self.make)(self.next + k as u64);
        }
        let end = self.next + n as u64;
        for t in self
            .tags
            .iter()
            .filter(|t| t.index >= self.next && t.index < end)
        {
            out.push_tag(t.clone());
        }
        out.commit(n);
        self.next = end;
        Ok(Work::Progress)
    }
}

#[derive(Debug, Default)]
struct Seen {
    items: u64,
    first_bad: Option<u64>,
    /// A window that began or ended inside a vector.
    misaligned: Option<(u64, usize)>,
    tags: Vec<Tag>,
    checksum: u64,
}

/// Checks item `i` bit for bit against `make(i)` and that every window holds whole vectors.
struct VecChecker<T> {
    vlen: usize,
    make: fn(u64) -> T,
    seen: Arc<Mutex<Seen>>,
}

impl<T: Item> Node for VecChecker<T> {
    fn ports(&self) -> Ports {
        let mut p = Ports::new();
        p.add_input_vectors::<T>("in", self.vlen, 0);
        p
    }
    fn tag_policy(&self) -> sluice_runtime::TagPolicy {
        sluice_runtime::TagPolicy::Drop
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        let start = input.items_read();
        let Some(w) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if w.is_empty() {
            return Ok(Work::Done);
        }
        let n = w.len();
        let mut seen = self.seen.lock().unwrap();
        if (start % self.vlen as u64 != 0 || n % self.vlen != 0) && seen.misaligned.is_none() {
            seen.misaligned = Some((start, n));
        }
        if seen.first_bad.is_none() {
            let bytes: &[u8] = bytemuck::cast_slice(w);
            let size = std::mem::size_of::<T>();
            if let Some(k) = (0..n).find(|&k| {
                let want = (self.make)(start + k as u64);
                bytes[k * size..(k + 1) * size] != *bytemuck::bytes_of(&want)
            }) {
                seen.first_bad = Some(start + k as u64);
            }
        }
        seen.checksum = fnv(seen.checksum, bytemuck::cast_slice(w));
        seen.items += n as u64;
        input.consume(n);
        let mut tags = Vec::new();
        input.take_tags(start + n as u64, &mut tags);
        seen.tags.extend(tags);
        Ok(Work::Progress)
    }
}

fn receiver<T: Item>(
    vlen: usize,
    make: fn(u64) -> T,
    opts: TcpOptions,
) -> (Graph, std::net::SocketAddr, Arc<Mutex<Seen>>) {
    let source = TcpSource::<T>::new("tcp-listen://127.0.0.1:0", opts).unwrap();
    let addr = source.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Seen {
        checksum: 0xcbf29ce484222325,
        ..Seen::default()
    }));
    let checker = VecChecker {
        vlen,
        make,
        seen: seen.clone(),
    };
    let mut g = Graph::new();
    let a = g.add("rx", source).unwrap();
    let b = g.add("check", checker).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    (g, addr, seen)
}

fn sender<T: Item>(
    vlen: usize,
    vectors: u64,
    make: fn(u64) -> T,
    tags: Vec<Tag>,
    url: &str,
    opts: TcpOptions,
) -> Graph {
    let counter = VecCounter {
        vlen,
        total: vectors * vlen as u64,
        next: 0,
        make,
        tags,
        chunk: 7,
    };
    let sink = TcpSink::<T>::new(url, opts).unwrap();
    let mut g = Graph::new();
    let a = g.add("count", counter).unwrap();
    let b = g.add("tx", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g
}

fn iq(i: u64) -> Complex32 {
    Complex32::new(i as f32 * 0.5 + 0.25, -((i % 977) as f32) - 0.125)
}

/// Every bit pattern matters: a float built from the index's bits (no NaN: exponent < 255).
fn bits(i: u64) -> f32 {
    let x = (i as u32).wrapping_mul(0x9e37_79b9);
    f32::from_bits(x & 0xbf7f_ffff)
}

/// The checksum of the whole stream in one pass: what the checker's window-by-window hash
/// gives for 8-byte items (it hashes 8-byte words). Other sizes are compared bit for bit
/// through `first_bad`.
fn expected_checksum<T: Item>(items: u64, make: fn(u64) -> T) -> u64 {
    let all: Vec<T> = (0..items).map(make).collect();
    fnv(0xcbf29ce484222325, bytemuck::cast_slice(&all))
}

/// A few tags per kind: on the first item of a vector, inside one, on the last item.
fn tags_for(items: u64, vlen: u64) -> Vec<Tag> {
    let mut tags = vec![
        Tag::new(0, "rx_rate", TagValue::F64(2.4e6)),
        Tag::new(0, "rx_freq", TagValue::F64(870.03e6)),
    ];
    for i in (vlen + 1..items).step_by((items / 9) as usize + 1) {
        tags.push(Tag::with_source(i, "seq", TagValue::U64(i), "counter"));
    }
    tags.push(Tag::new(5 * vlen, "burst", TagValue::Bool(true)));
    tags.push(Tag::new(items - 1, "last", TagValue::Bool(true)));
    tags.sort_by_key(|t| t.index);
    tags
}

fn run_pair<T: Item>(
    vlen: usize,
    vectors: u64,
    make: fn(u64) -> T,
    opts: TcpOptions,
    cuts: Option<Vec<usize>>,
) -> (Arc<Mutex<Seen>>, Vec<Tag>, Option<Arc<AtomicUsize>>) {
    let items = vectors * vlen as u64;
    let tags = tags_for(items, vlen as u64);
    let (rx, addr, seen) = receiver(vlen, make, opts.clone());
    let (url, cut) = match &cuts {
        Some(c) => {
            let (relay, cut) = cutting_relay(addr, c.clone(), Flow::FromClient);
            (format!("tcp://{relay}"), Some(cut))
        }
        None => (format!("tcp://{addr}"), None),
    };
    let tx = sender(vlen, vectors, make, tags.clone(), &url, opts);
    let rx = spawn(rx);
    let tx = spawn(tx);
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    (seen, tags, cut)
}

#[test]
fn c32_vectors_of_4_arrive_bit_identical_with_tags() {
    for crc in [false, true] {
        let opts = TcpOptions {
            vlen: 4,
            crc,
            // 1000 bytes: 31 vectors of 32 bytes per frame (992 bytes), never a partial one.
            frame_bytes: 1000,
            ..TcpOptions::default()
        };
        let vectors = 100_000;
        let (seen, tags, _) = run_pair(4, vectors, iq, opts, None);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.items, vectors * 4, "crc {crc}");
        assert_eq!(seen.first_bad, None, "crc {crc}");
        assert_eq!(seen.misaligned, None, "crc {crc}: a window inside a vector");
        assert_eq!(
            seen.checksum,
            expected_checksum(vectors * 4, iq),
            "crc {crc}"
        );
        assert_eq!(seen.tags, tags, "crc {crc}");
    }
}

#[test]
fn f32_vectors_of_333_arrive_bit_identical_with_tags() {
    let opts = TcpOptions {
        vlen: 333,
        frame_bytes: 64 << 10,
        ..TcpOptions::default()
    };
    let vectors = 3000; // 1 million items, 4 MB
    let (seen, tags, _) = run_pair(333, vectors, bits, opts, None);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.items, vectors * 333);
    assert_eq!(seen.first_bad, None, "an item differs bit for bit");
    assert_eq!(seen.misaligned, None, "a window inside a vector");
    assert_eq!(seen.tags, tags);
}

#[test]
fn resume_after_cuts_stays_vector_aligned() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    for crc in [false, true] {
        // Six cuts anywhere in the first 1.5 MB of each connection: mid-header, mid-payload
        // (inside a vector), mid-tags. The stream (13 MB) outlasts them all.
        let cuts: Vec<usize> = (0..6).map(|_| rng.gen_range(1..1_500_000)).collect();
        let opts = TcpOptions {
            vlen: 333,
            crc,
            frame_bytes: 100_000, // 75 vectors of 1332 bytes per frame
            retention_bytes: 2 << 20,
            resume_timeout: Duration::from_secs(20),
            ..TcpOptions::default()
        };
        let vectors = 10_000;
        let (seen, tags, cut) = run_pair(333, vectors, bits, opts, Some(cuts.clone()));
        let cut = cut.expect("a relay");
        assert_eq!(
            cut.load(Ordering::SeqCst),
            cuts.len(),
            "every planned cut happened"
        );
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.items,
            vectors * 333,
            "items lost or duplicated (cuts {cuts:?})"
        );
        assert_eq!(seen.first_bad, None, "an item out of place (cuts {cuts:?})");
        assert_eq!(
            seen.misaligned, None,
            "a window inside a vector (cuts {cuts:?})"
        );
        assert_eq!(seen.tags, tags, "tags lost or duplicated (cuts {cuts:?})");
    }
}

#[test]
fn differing_vlens_are_refused_on_both_sides() {
    // The listening receiver refuses that connection only and names it when its wait ends.
    let rx_opts = TcpOptions {
        vlen: 4,
        connect_timeout: Duration::from_secs(1),
        ..TcpOptions::default()
    };
    let (rx, addr, seen) = receiver(4, iq, rx_opts);
    let tx_opts = TcpOptions {
        vlen: 8,
        connect_timeout: Duration::from_secs(10),
        ..TcpOptions::default()
    };
    let tx = sender(8, 100, iq, vec![], &format!("tcp://{addr}"), tx_opts);
    let rx = spawn(rx);
    let tx = spawn(tx);
    let rx_err = rx.join().unwrap().unwrap_err().to_string();
    let tx_err = tx.join().unwrap().unwrap_err().to_string();
    for (side, e) in [("receiver", &rx_err), ("sender", &tx_err)] {
        assert!(
            e.contains("vlen 8") && e.contains("vlen 4") && e.contains("same vlen"),
            "{side}: {e}"
        );
        assert!(e.contains("127.0.0.1:"), "{side} names no peer: {e}");
    }
    eprintln!("receiver: {rx_err}\nsender: {tx_err}");
    assert_eq!(seen.lock().unwrap().items, 0);
}

#[test]
fn a_plain_sender_to_a_vector_receiver_is_refused() {
    // A HELLO without the vlen flag says vlen 1 (what every version-1 sender sends).
    let hello = wire::hello(&Hello {
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
    let mut d = Decoder::new(
        Role::Receiver,
        "198.51.100.3:7000",
        1 << 20,
        Some(("f32", 4)),
        0,
    )
    .with_vlen(333);
    let Need::Control(n) = d.need() else { panic!() };
    let mut at = 0;
    let mut need = n;
    let err = loop {
        d.control_space().copy_from_slice(&hello[at..at + need]);
        at += need;
        match d.control_filled(need) {
            Ok(None) => {
                let Need::Control(n) = d.need() else { panic!() };
                need = n;
            }
            Ok(Some(ev)) => panic!("accepted: {ev:?}"),
            Err(e) => break e,
        }
    };
    assert!(matches!(
        err,
        NetError::VlenMismatch {
            theirs: 1,
            ours: 333,
            ..
        }
    ));
    let text = err.to_string();
    assert!(
        text.contains("198.51.100.3:7000") && text.contains("vlen 1"),
        "{text}"
    );
}

#[test]
fn a_frame_of_part_of_a_vector_is_refused() {
    let mut bytes = wire::hello(&Hello {
        item_name: "f32".into(),
        item_size: 4,
        vlen: 3,
        crc: false,
        heartbeat_ms: 1000,
        metadata: vec![],
        fence: None,
        messages: false,
    })
    .unwrap();
    let payload = [0u8; 4 * 4];
    bytes.extend_from_slice(&wire::data_head(0, 4, 0, payload.len(), false).unwrap());
    bytes.extend_from_slice(&payload);
    let mut d = Decoder::new(Role::Receiver, "peer", 1 << 20, Some(("f32", 4)), 0).with_vlen(3);
    let mut at = 0;
    let err = loop {
        let Need::Control(n) = d.need() else {
            panic!("the frame's payload was accepted")
        };
        d.control_space().copy_from_slice(&bytes[at..at + n]);
        at += n;
        if let Err(e) = d.control_filled(n) {
            break e.to_string();
        }
    };
    assert!(err.contains("not a whole number of vectors of 3"), "{err}");
}

/// The graph blocks take `vlen` and declare their ports with it: a tcp_source of vectors of 3
/// feeds a tcp_sink of vectors of 3, and not one of plain items.
#[test]
fn graph_param_vlen_declares_vector_ports() {
    use sluice_graph::{GraphFileExt, Registry};
    let mut registry = Registry::new();
    sluice_net::graph_blocks::register(&mut registry);
    let text = |sink_vlen: &str| {
        format!(
            "[[node]]\nname = \"rx\"\ntype = \"tcp_source\"\nparams = {{ item = \"f32\", vlen = 3, url = \"tcp-listen://127.0.0.1:0\" }}\n\n\
             [[node]]\nname = \"tx\"\ntype = \"tcp_sink\"\nparams = {{ item = \"f32\", {sink_vlen} url = \"tcp://127.0.0.1:9\" }}\n\n\
             [[edge]]\nfrom = \"rx.out\"\nto = \"tx.in\"\n"
        )
    };
    Graph::from_str(&text("vlen = 3,"), "relay.toml", &registry).unwrap();
    let err = Graph::from_str(&text(""), "relay.toml", &registry)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("vlen"), "{err}");
    let err = Graph::from_str(&text("vlen = 0,"), "relay.toml", &registry)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("vlen") && err.contains("between 1 and"),
        "{err}"
    );
}

/// Keeps every item (as its index: items are `i as f32`) and tag of a vector stream.
struct KeepVec {
    vlen: usize,
    kept: Arc<Mutex<(Vec<u64>, Vec<Tag>)>>,
}

impl Node for KeepVec {
    fn ports(&self) -> Ports {
        let mut p = Ports::new();
        p.add_input_vectors::<f32>("in", self.vlen, 0);
        p
    }
    fn tag_policy(&self) -> sluice_runtime::TagPolicy {
        sluice_runtime::TagPolicy::Drop
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<f32>(0)?;
        let Some(w) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if w.is_empty() {
            return Ok(Work::Done);
        }
        let n = w.len();
        let mut kept = self.kept.lock().unwrap();
        kept.0.extend(w.iter().map(|&x| x as u64));
        let end = input.items_read() + n as u64;
        input.consume(n);
        input.take_tags(end, &mut kept.1);
        Ok(Work::Progress)
    }
}

#[test]
fn dropped_items_are_whole_vectors_and_the_gap_is_vector_aligned() {
    let vlen = 333usize;
    let vectors = 2000u64;
    let total = vectors * vlen as u64;
    let opts = TcpOptions {
        vlen,
        retention_bytes: 256 << 10,
        frame_bytes: 16 << 10,
        retention_full: sluice_net::RetentionFull::DropOldest,
        ..TcpOptions::default()
    };
    let sink = TcpSink::<f32>::new("tcp-listen://127.0.0.1:0", opts.clone()).unwrap();
    let addr = sink.local_addr().unwrap();
    let mut g = Graph::new();
    let counter = VecCounter {
        vlen,
        total,
        next: 0,
        make: |i| i as f32,
        tags: vec![],
        chunk: usize::MAX,
    };
    let a = g.add("count", counter).unwrap();
    let b = g.add("tx", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    let tx = spawn(g);
    // Nobody listens for a while: the sink drops the oldest vectors so that upstream runs on.
    std::thread::sleep(Duration::from_millis(300));
    let kept = Arc::new(Mutex::new((Vec::new(), Vec::new())));
    let source = TcpSource::<f32>::new(&format!("tcp://{addr}"), opts).unwrap();
    let mut g = Graph::new();
    let a = g.add("rx", source).unwrap();
    let b = g
        .add(
            "keep",
            KeepVec {
                vlen,
                kept: kept.clone(),
            },
        )
        .unwrap();
    g.connect(a, "out", b, "in").unwrap();
    let rx = spawn(g);
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    let (items, tags) = &*kept.lock().unwrap();
    let gaps: Vec<&Tag> = tags
        .iter()
        .filter(|t| &*t.key == sluice_runtime::metadata::GAP)
        .collect();
    assert!(
        !gaps.is_empty(),
        "nothing was dropped: the test proves nothing"
    );
    let mut lost = 0u64;
    for (i, &item) in items.iter().enumerate() {
        let expected = i as u64 + lost;
        if item != expected {
            let gap = gaps
                .iter()
                .find(|t| t.index == i as u64)
                .unwrap_or_else(|| panic!("item {i} is {item}, expected {expected}: unmarked"));
            let TagValue::U64(n) = gap.value else {
                panic!("gap value {:?}", gap.value)
            };
            assert_eq!(n % vlen as u64, 0, "a gap of {n} items: part of a vector");
            assert_eq!(i % vlen, 0, "a gap inside a vector at item {i}");
            assert_eq!(item, expected + n);
            lost += n;
        }
    }
    assert_eq!(items.len() as u64 + lost, total);
    assert_eq!(items.len() % vlen, 0);
}
