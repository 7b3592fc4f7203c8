//! Out of file descriptors: a listening `shm_source` passes over a failed `accept` (EMFILE)
//! and meets the `shm_sink` waiting in its backlog once descriptors are free again, instead of
//! ending the graph. The sink runs in a child process (this test binary again, running the
//! ignored `child_sender`), so that it needs no descriptor of this one. Alone in its test
//! binary: it lowers the process's descriptor limit.

mod common;

use common::{spawn, Checker, Counter, OutOfDescriptors};
use sluice_net::{ShmOptions, ShmSink, ShmSource};
use sluice_runtime::{Graph, RunOptions};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The environment variable that makes `child_sender` send, naming the endpoint.
const CHILD: &str = "SLUICE_SHM_EMFILE_CHILD";
const COUNT: u64 = 200_000;
/// What the child prints just before its graph starts (and its sink connects).
const STARTING: &str = "child graph starting";

fn make(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn opts() -> ShmOptions {
    ShmOptions {
        ring_bytes: 1 << 16,
        connect_timeout: Duration::from_secs(20),
    }
}

#[test]
fn a_listening_source_out_of_descriptors_meets_its_sink_once_they_are_free() {
    let name = format!("@sluice-test-emfile-{}", std::process::id());
    let mut rx = Graph::new();
    let (checker, seen) = Checker::new(make);
    let source = rx
        .add(
            "rx",
            ShmSource::<u64>::new(&format!("unix-listen:{name}"), opts()).unwrap(),
        )
        .unwrap();
    let check = rx.add("check", checker).unwrap();
    rx.connect(source, "out", check, "in").unwrap();
    let running = spawn(rx);
    // The listener is bound at the source's first turn.
    std::thread::sleep(Duration::from_millis(200));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_sender", "--ignored", "--nocapture"])
        .env(CHILD, &name)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = BufReader::new(child.stdout.take().unwrap());

    let out = OutOfDescriptors::take(0);
    // Once the child starts its graph it connects and waits in the backlog; the source looks
    // every few milliseconds and meets EMFILE each time.
    let mut line = String::new();
    while !line.contains(STARTING) {
        line.clear();
        assert!(
            said.read_line(&mut line).unwrap() > 0,
            "the child ended early"
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    drop(out);

    let report = running.join().unwrap();
    let status = child.wait().unwrap();
    report.expect("EMFILE on accept is transient");
    assert!(status.success(), "the sending child failed: {status}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.items, COUNT);
    assert_eq!(seen.first_bad, None);
}

/// The sender, run by the test above in a child process; does nothing when run otherwise.
#[test]
#[ignore = "run by a_listening_source_out_of_descriptors_meets_its_sink_once_they_are_free"]
fn child_sender() {
    let Ok(name) = std::env::var(CHILD) else {
        return;
    };
    let mut tx = Graph::new();
    let count = tx.add("count", Counter::new(COUNT, make, vec![])).unwrap();
    let sink = tx
        .add(
            "tx",
            ShmSink::<u64>::new(&format!("unix:{name}"), opts()).unwrap(),
        )
        .unwrap();
    tx.connect(count, "out", sink, "in").unwrap();
    println!("{STARTING}");
    tx.run(&RunOptions::default()).unwrap();
}
