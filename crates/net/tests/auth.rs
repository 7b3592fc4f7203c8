//! Cluster keys: key files, the secure handshake with a key on bare sockets (right key, wrong
//! key, a peer without a key, an older sluice, garbage, silence, reflection), and
//! tcp_sink/tcp_source streams that authenticate every connection, keep out intruders, and
//! still resume.

mod common;

use common::*;
use num_complex::Complex32;
use sluice_net::auth::{self, ClusterKey};
use sluice_net::secure::{self, Credentials, Purpose};
use sluice_net::wire::{self, Hello};
use sluice_net::{NetError, TcpOptions};
use sluice_runtime::{Tag, TagValue};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// A fresh directory for this test's key files, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "sluice-net-auth-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn key(byte: u8) -> ClusterKey {
    ClusterKey::from_bytes([byte; 32])
}

/// A listener on a free loopback port and a connection to it: (connecting end, accepted end).
fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (a, _) = l.accept().unwrap();
    (c, a)
}

const T: Duration = Duration::from_secs(2);

#[test]
fn generate_writes_a_private_key_file_that_load_reads() {
    let dir = TempDir::new("generate");
    let path = dir.path("cluster.key");
    let made = ClusterKey::generate(&path).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.len(), 65, "{text:?}");
    assert!(text.ends_with('\n'));
    assert!(text[..64]
        .bytes()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_eq!(ClusterKey::load(&path).unwrap(), made);
    // Debug shows no byte of the key.
    let shown = format!("{made:?}");
    assert!(!shown.contains(&text[..8]), "{shown}");
    // Two keys differ.
    let other = ClusterKey::generate(&dir.path("other.key")).unwrap();
    assert_ne!(other, made);
}

#[test]
fn generate_never_overwrites() {
    let dir = TempDir::new("overwrite");
    let path = dir.path("cluster.key");
    ClusterKey::generate(&path).unwrap();
    let before = std::fs::read(&path).unwrap();
    let e = ClusterKey::generate(&path).unwrap_err().to_string();
    assert!(
        e.contains(&path.display().to_string()) && e.contains("exists"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the key file changed"
    );
    // Not even an empty file is replaced.
    let empty = dir.path("empty.key");
    std::fs::write(&empty, b"").unwrap();
    assert!(ClusterKey::generate(&empty).is_err());
    assert_eq!(std::fs::read(&empty).unwrap(), b"");
}

fn write_key_file(path: &std::path::Path, text: &[u8], mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn load_takes_64_hex_characters_and_an_optional_newline() {
    let dir = TempDir::new("load");
    let hex = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
    let mut bytes = [0u8; 32];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    let want = ClusterKey::from_bytes(bytes);
    let p = dir.path("nl.key");
    write_key_file(&p, format!("{hex}\n").as_bytes(), 0o600);
    assert_eq!(ClusterKey::load(&p).unwrap(), want);
    let p = dir.path("bare.key");
    write_key_file(&p, hex.as_bytes(), 0o400);
    assert_eq!(ClusterKey::load(&p).unwrap(), want);
}

#[test]
fn load_refuses_a_key_file_others_may_read() {
    let dir = TempDir::new("mode");
    let p = dir.path("open.key");
    write_key_file(&p, format!("{}\n", "ab".repeat(32)).as_bytes(), 0o644);
    let e = ClusterKey::load(&p).unwrap_err().to_string();
    assert!(
        e.contains(&p.display().to_string()) && e.contains("644") && e.contains("chmod 600"),
        "{e}"
    );
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    assert!(ClusterKey::load(&p).is_err(), "group-readable accepted");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o602)).unwrap();
    assert!(ClusterKey::load(&p).is_err(), "world-writable accepted");
}

#[test]
fn load_refuses_malformed_key_files() {
    let dir = TempDir::new("malformed");
    let cases: [(&str, Vec<u8>); 7] = [
        ("short", "ab".repeat(31).into_bytes()),
        ("long", "ab".repeat(33).into_bytes()),
        ("crlf", format!("{}\r\n", "ab".repeat(32)).into_bytes()),
        (
            "two-newlines",
            format!("{}\n\n", "ab".repeat(32)).into_bytes(),
        ),
        ("not-hex", format!("{}zz\n", "ab".repeat(31)).into_bytes()),
        ("spaces", format!(" {}\n", "ab".repeat(32)).into_bytes()),
        ("empty", Vec::new()),
    ];
    for (name, text) in cases {
        let p = dir.path(name);
        write_key_file(&p, &text, 0o600);
        let e = ClusterKey::load(&p).unwrap_err().to_string();
        assert!(
            e.contains(&p.display().to_string()) && e.contains("64 hex characters"),
            "{name}: {e}"
        );
    }
    let e = ClusterKey::load(&dir.path("missing"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing"), "{e}");
}

fn creds(k: ClusterKey) -> Credentials {
    Credentials::from_key(k, Purpose::Stream).unwrap()
}

#[test]
fn the_same_key_authenticates_both_ends() {
    let (mut c, mut a) = pair();
    let listener = thread::spawn(move || {
        secure::accept(&mut a, &creds(key(7)), T).map(|s| secure::Link::secure(a, s))
    });
    let session = secure::connect(&mut c, &creds(key(7)), T).unwrap();
    let mut a = listener.join().unwrap().unwrap();
    // After the handshake the bytes go sealed: the peer reads them as they were written.
    let mut c = secure::Link::secure(c, session);
    c.write_all(b"after").unwrap();
    let mut buf = [0u8; 5];
    a.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"after");
}

#[test]
fn a_wrong_key_is_refused_by_both_ends() {
    let (mut c, mut a) = pair();
    let peer_of_a = c.local_addr().unwrap().to_string();
    let listener = thread::spawn(move || secure::accept(&mut a, &creds(key(1)), T));
    let ce = secure::connect(&mut c, &creds(key(2)), T).unwrap_err();
    let ae = listener.join().unwrap().unwrap_err();
    assert!(matches!(ce, NetError::Auth { .. }), "{ce:?}");
    assert!(ce.to_string().contains("another cluster key"), "{ce}");
    assert!(matches!(ae, NetError::Auth { .. }), "{ae:?}");
    assert!(
        ae.to_string()
            .contains("does not hold this end's cluster key"),
        "{ae}"
    );
    assert!(ae.to_string().contains(&peer_of_a), "{ae}");
}

/// Runs `attacker` on the connecting end of a connection whose accepting end runs the
/// handshake; the listener's error.
fn refused_by_listener(attacker: impl FnOnce(TcpStream) + Send + 'static) -> NetError {
    let (c, mut a) = pair();
    let peer = c.local_addr().unwrap().to_string();
    let t = thread::spawn(move || attacker(c));
    let e = secure::accept(&mut a, &creds(key(9)), Duration::from_millis(800)).unwrap_err();
    drop(a);
    t.join().unwrap();
    assert!(
        e.to_string().contains(&peer),
        "the error names no peer: {e}"
    );
    e
}

#[test]
fn garbage_is_refused() {
    let e = refused_by_listener(|mut c| {
        let _ = c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    });
    assert!(matches!(e, NetError::Auth { .. }), "{e:?}");
    assert!(e.to_string().contains("not a secure handshake"), "{e}");
}

#[test]
fn a_sluice_hello_without_authentication_is_refused() {
    let e = refused_by_listener(|mut c| {
        let hello = wire::hello(&Hello {
            item_name: "c32".into(),
            item_size: 8,
            vlen: 1,
            crc: false,
            heartbeat_ms: 1000,
            metadata: vec![],
            fence: None,
            messages: false,
        })
        .unwrap();
        let _ = c.write_all(&hello);
    });
    assert!(e.to_string().contains("it has no key"), "{e}");
}

#[test]
fn the_old_hmac_exchange_is_named() {
    let e = refused_by_listener(|mut c| {
        // An older sluice's CHALLENGE: magic, version 1, type 1, 32 bytes.
        let mut m = auth::MAGIC.to_vec();
        m.extend_from_slice(&[1, 1, 32, 0]);
        m.extend_from_slice(&[7; 32]);
        let _ = c.write_all(&m);
    });
    assert!(e.to_string().contains("old sluice-auth v1"), "{e}");
}

#[test]
fn silence_is_refused_after_the_timeout() {
    let started = Instant::now();
    let e = refused_by_listener(|c| {
        thread::sleep(Duration::from_millis(1500));
        drop(c);
    });
    let took = started.elapsed();
    assert!(matches!(e, NetError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("no handshake within 0.8 s"), "{e}");
    assert!(took >= Duration::from_millis(750), "refused after {took:?}");
}

#[test]
fn a_reflected_handshake_is_refused() {
    // Without the key, the attacker returns every byte the listener sends: the listener
    // never gets the initiator's first message it needs, only its own preface.
    let e = refused_by_listener(|mut c| {
        let mut buf = [0u8; 512];
        let _ = c.set_read_timeout(Some(Duration::from_millis(1200)));
        while let Ok(n) = c.read(&mut buf) {
            if n == 0 || c.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
    assert!(
        matches!(e, NetError::Auth { .. } | NetError::Io { .. }),
        "{e:?}"
    );
}

// --- Streams ---------------------------------------------------------------------------

fn iq(i: u64) -> Complex32 {
    Complex32::new(i as f32, -((i % 1000) as f32))
}

fn keyed(k: Option<ClusterKey>) -> TcpOptions {
    TcpOptions {
        key: k,
        auth_timeout: Duration::from_millis(800),
        connect_timeout: Duration::from_secs(3),
        resume_timeout: Duration::from_secs(10),
        ..TcpOptions::default()
    }
}

fn some_tags(count: u64) -> Vec<Tag> {
    let mut tags = vec![rate_tag(0, 2.4e6)];
    for i in (11..count).step_by(50_001) {
        tags.push(Tag::with_source(i, "seq", TagValue::U64(i), "counter"));
    }
    tags
}

fn expected_checksum(count: u64) -> u64 {
    let all: Vec<Complex32> = (0..count).map(iq).collect();
    fnv(0xcbf29ce484222325, bytemuck::cast_slice(&all))
}

#[test]
fn a_stream_with_the_right_key_arrives_bit_identical_with_tags() {
    let count = 300_000;
    let tags = some_tags(count);
    let (rx, addr, seen) = receiver(iq, keyed(Some(key(5))));
    let tx = sender(
        Counter::new(count, iq, tags.clone()),
        &format!("tcp://{addr}"),
        keyed(Some(key(5))),
    );
    let (rx, tx) = (spawn(rx), spawn(tx));
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.items, count);
    assert_eq!(seen.first_bad, None);
    assert_eq!(seen.checksum, expected_checksum(count));
    assert_eq!(seen.tags, tags);
}

#[test]
fn every_reconnect_authenticates_and_the_stream_resumes() {
    // A relay cuts the first three connections: each new one authenticates again.
    let count = 1_000_000; // 8 MB
    let tags = some_tags(count);
    let opts = TcpOptions {
        frame_bytes: 64 << 10,
        retention_bytes: 2 << 20,
        ..keyed(Some(key(6)))
    };
    let (rx, addr, seen) = receiver(iq, opts.clone());
    let (relay, cut) = cutting_relay(addr, vec![300_000, 1_000_000, 77_777], Flow::FromClient);
    let tx = sender(
        Counter::new(count, iq, tags.clone()),
        &format!("tcp://{relay}"),
        opts,
    );
    let (rx, tx) = (spawn(rx), spawn(tx));
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    assert_eq!(cut.load(Ordering::SeqCst), 3, "every planned cut happened");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.items, count);
    assert_eq!(seen.first_bad, None);
    assert_eq!(seen.checksum, expected_checksum(count));
    assert_eq!(seen.tags, tags);
}

/// Runs a receiver (listening) with `rx_key` and a sender (connecting) with `tx_key`, both
/// expected to fail: their errors.
fn both_fail(rx_key: Option<ClusterKey>, tx_key: Option<ClusterKey>) -> (String, String) {
    let (rx, addr, seen) = receiver(iq, keyed(rx_key));
    let tx = sender(
        Counter::new(1000, iq, vec![]),
        &format!("tcp://{addr}"),
        keyed(tx_key),
    );
    let (rx, tx) = (spawn(rx), spawn(tx));
    let tx_err = tx.join().unwrap().unwrap_err().to_string();
    let rx_err = rx.join().unwrap().unwrap_err().to_string();
    assert_eq!(seen.lock().unwrap().items, 0, "items got through");
    (rx_err, tx_err)
}

#[test]
fn a_listener_with_a_key_refuses_a_sender_without_one() {
    let (rx_err, tx_err) = both_fail(Some(key(3)), None);
    // The sender learns that the peer wants a key it does not have.
    assert!(tx_err.contains("this end has no key"), "sender: {tx_err}");
    // The listener refused it, kept waiting, and names the refusal when it gives up.
    assert!(
        rx_err.contains("no connection within") && rx_err.contains("it has no key"),
        "receiver: {rx_err}"
    );
}

#[test]
fn a_listener_without_a_key_refuses_a_sender_with_one() {
    let (rx_err, tx_err) = both_fail(None, Some(key(3)));
    assert!(rx_err.contains("this end has no key"), "receiver: {rx_err}");
    assert!(tx_err.contains("it has no key"), "sender: {tx_err}");
}

#[test]
fn a_wrong_key_stream_is_refused() {
    let (rx_err, tx_err) = both_fail(Some(key(3)), Some(key(4)));
    assert!(tx_err.contains("another cluster key"), "sender: {tx_err}");
    assert!(
        rx_err.contains("no connection within")
            && rx_err.contains("does not hold this end's cluster key"),
        "receiver: {rx_err}"
    );
}

#[test]
fn a_listener_keeps_waiting_for_the_right_peer_after_intruders() {
    let count = 200_000;
    let tags = some_tags(count);
    let (rx, addr, seen) = receiver(iq, keyed(Some(key(8))));
    let rx = spawn(rx);
    // Intruder 1: garbage.
    let mut g = TcpStream::connect(addr).unwrap();
    g.write_all(&[0xde; 64]).unwrap();
    // Intruder 2: the handshake with the wrong key.
    let mut w = TcpStream::connect(addr).unwrap();
    let creds = Credentials::from_key(key(1), Purpose::Stream).unwrap();
    let e = secure::connect(&mut w, &creds, T).unwrap_err();
    assert!(e.to_string().contains("another cluster key"), "{e}");
    // Intruder 3: a sluice-net sender without a key.
    let mut h = TcpStream::connect(addr).unwrap();
    h.write_all(
        &wire::hello(&Hello {
            item_name: "c32".into(),
            item_size: 8,
            vlen: 1,
            crc: false,
            heartbeat_ms: 1000,
            metadata: vec![],
            fence: None,
            messages: false,
        })
        .unwrap(),
    )
    .unwrap();
    // Intruder 4: silence (costs the listener its auth timeout, no more).
    let _silent = TcpStream::connect(addr).unwrap();
    // Then the real peer.
    let tx = sender(
        Counter::new(count, iq, tags.clone()),
        &format!("tcp://{addr}"),
        keyed(Some(key(8))),
    );
    let started = Instant::now();
    spawn(tx).join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.items, count);
    assert_eq!(seen.first_bad, None);
    assert_eq!(seen.checksum, expected_checksum(count));
    assert_eq!(seen.tags, tags);
    drop((g, w, h));
}

#[test]
fn the_key_file_param_authenticates_graph_blocks() {
    use sluice_graph::{GraphFileExt, Registry};
    let dir = TempDir::new("graph");
    let path = dir.path("cluster.key");
    ClusterKey::generate(&path).unwrap();
    let mut registry = Registry::new();
    sluice_net::graph_blocks::register(&mut registry);
    let text = |file: &std::path::Path| {
        format!(
            "[[node]]\nname = \"rx\"\ntype = \"tcp_source\"\nparams = {{ item = \"f32\", url = \"tcp-listen://127.0.0.1:0\", key_file = \"{}\", auth_timeout = 1.5 }}\n\n\
             [[node]]\nname = \"tx\"\ntype = \"tcp_sink\"\nparams = {{ item = \"f32\", url = \"tcp://127.0.0.1:9\", key_file = \"{}\" }}\n\n\
             [[edge]]\nfrom = \"rx.out\"\nto = \"tx.in\"\n",
            file.display(),
            file.display()
        )
    };
    sluice_runtime::Graph::from_str(&text(&path), "relay.toml", &registry).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = sluice_runtime::Graph::from_str(&text(&path), "relay.toml", &registry)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("key_file") && e.contains("chmod 600"), "{e}");
}
