//! The secure channel under attack: a relay between two ends (forwarding the handshake and
//! injecting its own bytes, or running its own handshake with each side), a byte changed
//! mid-stream, a peer whose identity is not listed, a stream key at a control door, key
//! files that are links, another user's or in a directory others may write, and a listener
//! beyond loopback without credentials.

mod common;

use common::*;
use num_complex::Complex32;
use sluice_net::auth::ClusterKey;
use sluice_net::secure::{self, Credentials, Identity, Peers, Protection, Purpose};
use sluice_net::{NetError, Security, TcpOptions, TcpSource};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

const T: Duration = Duration::from_secs(2);

fn key(byte: u8) -> ClusterKey {
    ClusterKey::from_bytes([byte; 32])
}

fn control(k: ClusterKey) -> Credentials {
    Credentials::from_key(k, Purpose::Control).unwrap()
}

/// Copies `from` to `to` until either closes.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}

/// A "worker": accepts one control connection on `listener`, then reads lines until the
/// connection fails; the lines it took and how its reading ended.
fn worker(listener: TcpListener, k: ClusterKey) -> thread::JoinHandle<(Vec<String>, String)> {
    thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let session = match secure::accept(&mut s, &control(k), T) {
            Ok(session) => session,
            Err(e) => return (vec![], format!("handshake: {e}")),
        };
        let (reader, _writer) = secure::split(secure::Link::secure(s, session)).unwrap();
        reader
            .stream()
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        let mut lines = vec![];
        let mut reader = BufReader::new(reader);
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) => return (lines, "closed".into()),
                Ok(_) => lines.push(line),
                Err(e) => return (lines, e.to_string()),
            }
        }
    })
}

#[test]
fn a_relay_that_forwards_the_handshake_cannot_inject_a_command() {
    // The attack that took a worker over: let the two real ends authenticate each other
    // through the relay, then speak to the worker as the controller.
    let worker_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let worker_addr = worker_listener.local_addr().unwrap();
    let worker = worker(worker_listener, key(7));
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay_addr = relay.local_addr().unwrap();
    let (inject, injected) = mpsc::channel::<()>();
    let relay = thread::spawn(move || {
        let (controller, _) = relay.accept().unwrap();
        let to_worker = TcpStream::connect(worker_addr).unwrap();
        let back = {
            let (w, c) = (
                to_worker.try_clone().unwrap(),
                controller.try_clone().unwrap(),
            );
            thread::spawn(move || pump(w, c))
        };
        // Forward the controller's handshake, then (told the handshake is over) inject.
        let (mut c, mut w) = (controller, to_worker);
        c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut buf = [0u8; 4096];
        loop {
            match c.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => w.write_all(&buf[..n]).unwrap(),
                Err(_) => {
                    if injected.try_recv().is_ok() {
                        // A record of the right form that the relay made up, then a
                        // command in the clear, as the old protocol took it.
                        let mut forged = vec![0x00, 0x00, 0x00, 0x20];
                        forged.extend_from_slice(&[0x5a; 0x20]);
                        forged.extend_from_slice(b"{\"Load\":{\"partition\":\"/etc/shadow\"}}\n");
                        w.write_all(&forged).unwrap();
                        break;
                    }
                }
            }
        }
        thread::sleep(Duration::from_millis(300));
        drop((c, w));
        let _ = back.join();
    });
    let mut c = TcpStream::connect(relay_addr).unwrap();
    let session = secure::connect(&mut c, &control(key(7)), T).unwrap();
    inject.send(()).unwrap();
    thread::sleep(Duration::from_millis(100));
    let (_reader, mut writer) = secure::split(secure::Link::secure(c, session)).unwrap();
    let _ = writer.write_all(b"{\"Status\":null}\n");
    relay.join().unwrap();
    let (lines, end) = worker.join().unwrap();
    assert!(
        lines.is_empty(),
        "the worker took lines the relay sent: {lines:?}"
    );
    assert!(end.contains("integrity check"), "{end}");
}

#[test]
fn a_relay_that_runs_its_own_handshake_with_each_side_gets_no_session() {
    let worker_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let worker_addr = worker_listener.local_addr().unwrap();
    let worker = worker(worker_listener, key(7));
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay_addr = relay.local_addr().unwrap();
    let relay = thread::spawn(move || {
        // Without the cluster key the relay can only bring keys of its own.
        let (mut from_controller, _) = relay.accept().unwrap();
        let mut to_worker = TcpStream::connect(worker_addr).unwrap();
        let own = control(key(0x66));
        let towards_worker = secure::connect(&mut to_worker, &own, T);
        let towards_controller = secure::accept(&mut from_controller, &own, T);
        (towards_worker.is_ok(), towards_controller.is_ok())
    });
    let mut c = TcpStream::connect(relay_addr).unwrap();
    let controller = secure::connect(&mut c, &control(key(7)), T);
    let (to_worker, to_controller) = relay.join().unwrap();
    assert!(!to_worker && !to_controller, "the relay got a session");
    let e = controller.unwrap_err();
    assert!(matches!(e, NetError::Auth { .. }), "{e:?}");
    let (lines, end) = worker.join().unwrap();
    assert!(lines.is_empty());
    assert!(
        end.contains("does not hold this end's cluster key"),
        "{end}"
    );
}

#[test]
fn a_peer_whose_identity_is_not_listed_is_refused_though_it_holds_the_key() {
    // An address record (etcd's) may point at any host: only a listed identity is trusted.
    let (listed, stranger) = (Identity::generate().unwrap(), Identity::generate().unwrap());
    let peers = Arc::new(Peers::new(vec![(listed.public(), "worker-a".into())]));
    let creds = |id: &Identity, peers: Option<Arc<Peers>>| Credentials {
        identity: Arc::new(id.clone()),
        psk: Some(key(3)),
        peers,
        purpose: Purpose::Control,
        protection: Protection::Encrypt,
    };
    for (id, accepted) in [(&stranger, false), (&listed, true)] {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = creds(id, None);
        let t = thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            secure::accept(&mut s, &server, T).map(|_| ())
        });
        let mut c = TcpStream::connect(addr).unwrap();
        let got = secure::connect(
            &mut c,
            &creds(&Identity::generate().unwrap(), Some(peers.clone())),
            T,
        );
        let _ = t.join().unwrap();
        match (got, accepted) {
            (Ok(s), true) => assert_eq!(s.peer_name, "worker-a"),
            (Err(e), false) => assert!(
                e.to_string().contains("not in this end's peers list"),
                "{e}"
            ),
            (got, _) => panic!("identity accepted: {}, expected {accepted}", got.is_ok()),
        }
    }
}

#[test]
fn a_stream_key_cannot_open_a_control_session() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let t = thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        secure::accept(&mut s, &control(key(4)), T).map(|_| ())
    });
    let mut c = TcpStream::connect(addr).unwrap();
    let stream_creds = Credentials::from_key(key(4), Purpose::Stream).unwrap();
    let e = secure::connect(&mut c, &stream_creds, T).unwrap_err();
    let we = t.join().unwrap().unwrap_err();
    assert!(we.to_string().contains("purpose"), "{we}");
    assert!(
        matches!(e, NetError::Auth { .. } | NetError::Io { .. }),
        "{e:?}"
    );
}

// --- A byte changed mid-stream ---------------------------------------------------------

fn iq(i: u64) -> Complex32 {
    Complex32::new(i as f32, -((i % 1000) as f32))
}

/// Relays connections to `target`; in the first one, flips one bit of the byte at `at` of
/// what the client sends. Returns its address, the count of connections relayed and the
/// first 4 MB the client sent through it (what an eavesdropper sees).
#[allow(clippy::type_complexity)]
fn flipping_relay(
    target: std::net::SocketAddr,
    at: usize,
) -> (std::net::SocketAddr, Arc<AtomicUsize>, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let saw = seen.clone();
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(target) else {
                return;
            };
            let first = counted.fetch_add(1, Ordering::SeqCst) == 0;
            let (s2, c2) = (server.try_clone().unwrap(), client.try_clone().unwrap());
            thread::spawn(move || pump(s2, c2));
            let saw = saw.clone();
            thread::spawn(move || {
                let (mut from, mut to) = (client, server);
                let mut buf = vec![0u8; 1 << 16];
                let mut total = 0usize;
                while let Ok(n) = from.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if first && (total..total + n).contains(&at) {
                        buf[at - total] ^= 0x10;
                    }
                    total += n;
                    if first {
                        let mut saw = saw.lock().unwrap();
                        let room = (4usize << 20).saturating_sub(saw.len()).min(n);
                        saw.extend_from_slice(&buf[..room]);
                    }
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = to.shutdown(Shutdown::Both);
            });
        }
    });
    (addr, count, seen)
}

#[test]
fn a_byte_changed_mid_stream_drops_the_connection_and_the_stream_resumes_whole() {
    changed_byte_mid_stream(Security::Encrypt);
}

#[test]
fn authenticated_streams_travel_readable_and_a_changed_byte_is_caught_as_well() {
    changed_byte_mid_stream(Security::Authenticate);
}

/// A stream under `security` through a relay that flips one byte of its first connection:
/// the connection ends, the stream resumes and every item arrives unchanged; what the relay
/// saw holds the items' bytes as they are exactly when the records are not encrypted.
fn changed_byte_mid_stream(security: Security) {
    let count = 1_000_000; // 8 MB
    let opts = TcpOptions {
        security,
        key: Some(key(6)),
        crc: false, // the channel's tags alone must catch it
        frame_bytes: 64 << 10,
        retention_bytes: 2 << 20,
        auth_timeout: Duration::from_secs(1),
        resume_timeout: Duration::from_secs(10),
        ..TcpOptions::default()
    };
    let (rx, addr, seen) = receiver(iq, opts.clone());
    let (relay, connections, eavesdropped) = flipping_relay(addr, 3_000_000);
    let tags = vec![rate_tag(0, 1e6)];
    let tx = sender(
        Counter::new(count, iq, tags.clone()),
        &format!("tcp://{relay}"),
        opts,
    );
    let (rx, tx) = (spawn(rx), spawn(tx));
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    assert!(
        connections.load(Ordering::SeqCst) >= 2,
        "the changed byte did not end the connection"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.items, count);
    assert_eq!(seen.first_bad, None, "a changed item got through");
    let all: Vec<Complex32> = (0..count).map(iq).collect();
    assert_eq!(
        seen.checksum,
        fnv(0xcbf29ce484222325, bytemuck::cast_slice(&all))
    );
    assert_eq!(seen.tags, tags);
    // Items 1000..1016 as they are in memory: 128 bytes no ciphertext holds by chance.
    let needle: Vec<Complex32> = (1000..1016).map(iq).collect();
    let needle: &[u8] = bytemuck::cast_slice(&needle);
    let readable = eavesdropped
        .lock()
        .unwrap()
        .windows(needle.len())
        .any(|w| w == needle);
    assert_eq!(
        readable,
        security == Security::Authenticate,
        "{security:?}: the items were {}readable on the way",
        if readable { "" } else { "not " }
    );
}

#[test]
fn ends_that_ask_for_different_security_are_refused_with_the_reason() {
    let ask = |protection| Credentials {
        protection,
        ..Credentials::from_key(key(4), Purpose::Stream).unwrap()
    };
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let server = ask(Protection::Encrypt);
    let t = thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        secure::accept(&mut s, &server, T).map(|_| ())
    });
    let mut c = TcpStream::connect(addr).unwrap();
    let e = secure::connect(&mut c, &ask(Protection::Authenticate), T)
        .unwrap_err()
        .to_string();
    let _ = t.join().unwrap();
    assert!(
        e.contains("security = \"encrypt\" where this end asks for security = \"authenticate\""),
        "{e}"
    );
    // Control connections are always encrypted.
    let control = Credentials {
        protection: Protection::Authenticate,
        ..Credentials::from_key(key(4), Purpose::Control).unwrap()
    };
    let mut c = TcpStream::connect(
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap(),
    )
    .unwrap();
    let e = secure::connect(&mut c, &control, T)
        .unwrap_err()
        .to_string();
    assert!(e.contains("always encrypted"), "{e}");
}

// --- Listeners and key files -------------------------------------------------------------

#[test]
fn a_listener_beyond_loopback_without_credentials_needs_security_none() {
    let Err(e) = TcpSource::<f32>::new("tcp-listen://0.0.0.0:0", TcpOptions::default()) else {
        panic!("a listener beyond loopback without credentials started");
    };
    assert!(e.to_string().contains("security = \"none\""), "{e}");
    let with_key = TcpOptions {
        key: Some(key(1)),
        ..TcpOptions::default()
    };
    assert!(TcpSource::<f32>::new("tcp-listen://0.0.0.0:0", with_key).is_ok());
    let open = TcpOptions {
        security: Security::None,
        ..TcpOptions::default()
    };
    assert!(TcpSource::<f32>::new("tcp-listen://0.0.0.0:0", open).is_ok());
    assert!(TcpSource::<f32>::new("tcp-listen://127.0.0.1:0", TcpOptions::default()).is_ok());
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "sluice-net-secure-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn an_identity_file_round_trips_and_never_overwrites() {
    let dir = TempDir::new("identity");
    let path = dir.0.join("host.id");
    let made = Identity::create(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(Identity::load(&path).unwrap(), made);
    assert!(Identity::create(&path).is_err());
    assert!(!format!("{made:?}").contains("private"));
}

#[test]
fn key_files_that_are_links_or_in_a_writable_directory_are_refused() {
    let dir = TempDir::new("keyfiles");
    let real = dir.0.join("cluster.key");
    ClusterKey::generate(&real).unwrap();
    let link = dir.0.join("link.key");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let e = ClusterKey::load(&link).unwrap_err().to_string();
    assert!(e.contains("symbolic link"), "{e}");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = ClusterKey::load(&real).unwrap_err().to_string();
    assert!(e.contains("others may write it"), "{e}");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(ClusterKey::load(&real).is_ok());
}

#[test]
fn a_key_file_of_another_user_is_refused() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: changing a file's owner needs root");
        return;
    }
    let dir = TempDir::new("owner");
    let path = dir.0.join("cluster.key");
    ClusterKey::generate(&path).unwrap();
    // nobody's uid: the file stays mode 600, only its owner changes.
    std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
    let e = ClusterKey::load(&path).unwrap_err().to_string();
    assert!(e.contains("belongs to uid 65534"), "{e}");
}
