//! `shm_sink` → `shm_source` between two graphs: items and tags cross exactly, an item type
//! mismatch is refused by name, a stale socket file is replaced but any other file is not, and a
//! source whose sink went away reports it after delivering what it had. (Two real processes:
//! `crates/cli/tests/shm.rs`.)

mod common;

use common::{rate_tag, spawn, Checker, Counter};
use sluice_net::{ShmOptions, ShmSink, ShmSource};
use sluice_runtime::{Graph, Tag, TagValue};
use std::time::Duration;

fn unique(name: &str) -> String {
    format!("@sluice-test-{name}-{}", std::process::id())
}

fn opts() -> ShmOptions {
    ShmOptions {
        ring_bytes: 1 << 16,
        connect_timeout: Duration::from_secs(20),
    }
}

fn make(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn pair(
    count: u64,
    tags: Vec<Tag>,
    sink_url: &str,
    source_url: &str,
) -> (Graph, Graph, std::sync::Arc<std::sync::Mutex<common::Seen>>) {
    let mut tx = Graph::new();
    let a = tx.add("count", Counter::new(count, make, tags)).unwrap();
    let b = tx
        .add("tx", ShmSink::<u64>::new(sink_url, opts()).unwrap())
        .unwrap();
    tx.connect(a, "out", b, "in").unwrap();
    let mut rx = Graph::new();
    let (checker, seen) = Checker::new(make);
    let c = rx
        .add("rx", ShmSource::<u64>::new(source_url, opts()).unwrap())
        .unwrap();
    let d = rx.add("check", checker).unwrap();
    rx.connect(c, "out", d, "in").unwrap();
    (tx, rx, seen)
}

#[test]
fn items_and_tags_cross_in_order_either_side_listening() {
    for sink_listens in [true, false] {
        let name = unique(if sink_listens { "sl" } else { "cl" });
        let (sink_url, source_url) = if sink_listens {
            (format!("unix-listen:{name}"), format!("unix:{name}"))
        } else {
            (format!("unix:{name}"), format!("unix-listen:{name}"))
        };
        let count = 2_000_000;
        let tags = vec![
            rate_tag(0, 48_000.0),
            Tag::new(12_345, "burst", TagValue::U64(7)),
            Tag::new(1_999_999, "last", TagValue::Str("end".into())),
        ];
        let (tx, rx, seen) = pair(count, tags.clone(), &sink_url, &source_url);
        let r = spawn(rx);
        let t = spawn(tx);
        t.join().unwrap().unwrap();
        r.join().unwrap().unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.items, count);
        assert_eq!(seen.first_bad, None);
        let got: Vec<(u64, &str)> = seen.tags.iter().map(|t| (t.index, &*t.key)).collect();
        assert_eq!(
            got,
            vec![(0, "rx_rate"), (12_345, "burst"), (1_999_999, "last")]
        );
        assert_eq!(seen.tags[2].value, TagValue::Str("end".into()));
    }
}

#[test]
fn a_source_of_another_item_type_is_refused_by_name() {
    let name = unique("mismatch");
    let mut tx = Graph::new();
    let a = tx.add("count", Counter::new(1000, make, vec![])).unwrap();
    let b = tx
        .add(
            "tx",
            ShmSink::<u64>::new(&format!("unix-listen:{name}"), opts()).unwrap(),
        )
        .unwrap();
    tx.connect(a, "out", b, "in").unwrap();
    let mut rx = Graph::new();
    let (checker, _) = Checker::new(|i| i as f32);
    let c = rx
        .add(
            "rx",
            ShmSource::<f32>::new(&format!("unix:{name}"), opts()).unwrap(),
        )
        .unwrap();
    let d = rx.add("check", checker).unwrap();
    rx.connect(c, "out", d, "in").unwrap();
    let r = spawn(rx);
    let t = spawn(tx);
    let rx_err = r.join().unwrap().unwrap_err().to_string();
    let tx_err = t.join().unwrap().unwrap_err().to_string();
    assert!(rx_err.contains("u64") && rx_err.contains("f32"), "{rx_err}");
    assert!(tx_err.contains("u64") && tx_err.contains("f32"), "{tx_err}");
}

#[test]
fn a_stale_socket_file_is_replaced_and_other_files_are_left_alone() {
    let dir = std::env::temp_dir().join(format!("sluice-shm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A regular file where the socket should go: refused, untouched.
    let file = dir.join("precious");
    std::fs::write(&file, b"keep me").unwrap();
    let err = ShmSink::<u64>::new(&format!("unix-listen:{}", file.display()), opts())
        .map(|s| {
            let mut g = Graph::new();
            let a = g.add("count", Counter::new(10, make, vec![])).unwrap();
            let b = g.add("tx", s).unwrap();
            g.connect(a, "out", b, "in").unwrap();
            g.run(&Default::default())
        })
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a socket"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
    // A socket file nobody listens on (a crashed run's): replaced.
    let sock = dir.join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let url = format!("unix-listen:{}", sock.display());
    let (tx, rx, seen) = pair(10_000, vec![], &url, &format!("unix:{}", sock.display()));
    let r = spawn(rx);
    let t = spawn(tx);
    t.join().unwrap().unwrap();
    r.join().unwrap().unwrap();
    assert_eq!(seen.lock().unwrap().items, 10_000);
    assert!(
        !sock.exists(),
        "the listener removes its socket file when done"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_urls_say_what_is_expected() {
    let err = ShmSink::<u64>::new("tcp://127.0.0.1:5", opts())
        .err()
        .unwrap();
    assert!(err.to_string().contains("unix:PATH"), "{err}");
    let err = ShmSource::<u64>::new("unix:", opts()).err().unwrap();
    assert!(err.to_string().contains("names no socket path"), "{err}");
}

#[test]
fn a_peer_of_another_user_is_not_met() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: connecting as another user needs root");
        return;
    }
    let name = unique("uid");
    let mut rx = Graph::new();
    let (checker, seen) = Checker::new(make);
    let quick = ShmOptions {
        connect_timeout: Duration::from_millis(1500),
        ..opts()
    };
    let c = rx
        .add(
            "rx",
            ShmSource::<u64>::new(&format!("unix-listen:{name}"), quick).unwrap(),
        )
        .unwrap();
    let d = rx.add("check", checker).unwrap();
    rx.connect(c, "out", d, "in").unwrap();
    let r = spawn(rx);
    // User nobody connects to the abstract name (which has no file mode to stop it) and
    // waits for what the source sends.
    use std::os::unix::process::CommandExt;
    let script = format!(
        "import socket, time\ns = socket.socket(socket.AF_UNIX)\nfor _ in range(100):\n    try:\n        s.connect('\\0' + {:?})\n        break\n    except OSError:\n        time.sleep(0.01)\ns.settimeout(1.0)\ntry:\n    print('got', len(s.recv(100)))\nexcept OSError as e:\n    print('nothing', e)\n",
        &name[1..]
    );
    let out = std::process::Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let err = r.join().unwrap().unwrap_err().to_string();
    assert!(
        err.contains("no shared-memory peer met"),
        "{err} (nobody: {said})"
    );
    assert_eq!(seen.lock().unwrap().items, 0);
    assert!(!said.contains("got") || said.contains("got 0"), "{said}");
}
