//! Two `sluice run` processes joined by `shm_*` and by `tcp_*` blocks: the receiver's checksum
//! equals the one a single process computes over the same stream; and a receiver whose sender
//! is killed says so, naming it, after delivering what it had. (The 10^9-item soaks are
//! `scripts/soak_shm.sh` and `scripts/soak_net.sh`.)

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const ITEMS: u64 = 5_000_000;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-transport-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// noise → head → `sink` (a node description), as a graph file.
fn sender(sink_type: &str, url: &str, items: u64) -> String {
    format!(
        r#"
[[node]]
name = "noise"
type = "signal_source"
params = {{ item = "c32", waveform = "noise", amplitude = 1.0, seed = 11 }}
[[node]]
name = "head"
type = "head"
params = {{ item = "c32", items = {items} }}
[[node]]
name = "out"
type = "{sink_type}"
params = {{ item = "c32", url = "{url}" }}
[[edge]]
from = "noise.out"
to = "head.in"
[[edge]]
from = "head.out"
to = "out.in"
"#
    )
}

fn receiver(source_type: &str, url: &str) -> String {
    format!(
        r#"
[[node]]
name = "in"
type = "{source_type}"
params = {{ item = "c32", url = "{url}" }}
[[node]]
name = "sum"
type = "checksum"
params = {{ item = "c32", label = "received" }}
[[edge]]
from = "in.out"
to = "sum.in"
"#
    )
}

const REFERENCE: &str = r#"
[[node]]
name = "noise"
type = "signal_source"
params = { item = "c32", waveform = "noise", amplitude = 1.0, seed = 11 }
[[node]]
name = "head"
type = "head"
params = { item = "c32", items = 5000000 }
[[node]]
name = "sum"
type = "checksum"
params = { item = "c32", label = "received" }
[[edge]]
from = "noise.out"
to = "head.in"
[[edge]]
from = "head.out"
to = "sum.in"
"#;

fn run(graph: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("run")
        .arg(graph)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sluice run")
}

/// Waits for `child` at most `limit`, killing it past that (the test then fails).
fn finish(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "sluice run did not end within {limit:?}:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn checksum_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sluice run failed:\n{stderr}");
    stderr
        .lines()
        .find(|l| l.starts_with("checksum received:"))
        .unwrap_or_else(|| panic!("no checksum line in:\n{stderr}"))
        .to_string()
}

fn cross(kind: &str, sink_url: &str, source_url: &str) {
    let d = dir(kind);
    let reference = checksum_line(&finish(
        run(&write(&d, "reference.toml", REFERENCE)),
        Duration::from_secs(120),
    ));
    assert!(reference.contains(&format!("{ITEMS} items")), "{reference}");
    let rx = run(&write(
        &d,
        "rx.toml",
        &receiver(&format!("{kind}_source"), source_url),
    ));
    let tx = run(&write(
        &d,
        "tx.toml",
        &sender(&format!("{kind}_sink"), sink_url, ITEMS),
    ));
    let tx_out = finish(tx, Duration::from_secs(120));
    assert!(
        tx_out.status.success(),
        "{}",
        String::from_utf8_lossy(&tx_out.stderr)
    );
    let received = checksum_line(&finish(rx, Duration::from_secs(120)));
    assert_eq!(received, reference);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn two_processes_over_shared_memory_match_the_checksum_of_one() {
    let name = format!("@sluice-transport-{}", std::process::id());
    cross(
        "shm",
        &format!("unix-listen:{name}"),
        &format!("unix:{name}"),
    );
}

#[test]
fn two_processes_over_tcp_match_the_checksum_of_one() {
    // A port of our own: bind :0, note it, free it (the receiver listens on it next).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    cross(
        "tcp",
        &format!("tcp://127.0.0.1:{port}"),
        &format!("tcp-listen://127.0.0.1:{port}"),
    );
}

#[test]
fn a_receiver_whose_sender_is_killed_names_it_and_stops() {
    let d = dir("kill");
    let name = format!("@sluice-transport-kill-{}", std::process::id());
    let rx = run(&write(
        &d,
        "rx.toml",
        &receiver("shm_source", &format!("unix:{name}")),
    ));
    // An endless sender, killed once the stream is flowing.
    let mut tx = run(&write(
        &d,
        "tx.toml",
        &sender("shm_sink", &format!("unix-listen:{name}"), u64::MAX / 2),
    ));
    let pid = tx.id();
    std::thread::sleep(Duration::from_millis(1500));
    tx.kill().unwrap();
    tx.wait().unwrap();
    let start = Instant::now();
    let out = finish(rx, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the receiver must fail:\n{stderr}");
    assert!(
        stderr.contains(&format!("pid {pid}")) && stderr.contains("went away"),
        "the error names the dead sender:\n{stderr}"
    );
    assert!(start.elapsed() < Duration::from_secs(30));
    std::fs::remove_dir_all(&d).unwrap();
}
