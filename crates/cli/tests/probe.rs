//! `sluice probe` end to end on loopback: the origin and reflector processes of a loop, every
//! packet verified, the statistics printed, the files written; the per-hop table; and the
//! errors a user sees. No timing is asserted (this machine is shared and noisy).

use std::path::Path;
use std::process::Command;

fn sluice(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .expect("run sluice");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn loop_run(dir: &Path, name: &str, reflectors: &str, rate: &str, threads: &str) -> String {
    let (ok, stdout, stderr) = sluice(&[
        "probe",
        "loop",
        "--reflectors",
        reflectors,
        "--count",
        "2000",
        "--warmup",
        "20",
        "--rate",
        rate,
        "--threads",
        threads,
        "--timeout",
        "20",
        "--out",
        dir.to_str().unwrap(),
        "--name",
        name,
    ]);
    assert!(ok, "probe loop failed:\n{stdout}\n{stderr}");
    stdout
}

#[test]
fn a_loop_of_processes_verifies_every_packet_and_reports_latency() {
    let dir = tempfile::tempdir().unwrap();
    let two = loop_run(dir.path(), "two", "1", "200M", "1");
    assert!(
        two.contains("2000 packets (after 20 warm-up packets) of 1024 bytes at 200 Mbit/s through 1 reflector"),
        "{two}"
    );
    assert!(
        two.contains("every packet came back, in order and unaltered"),
        "{two}"
    );
    for stat in ["mean ", "jitter (σ) ", "p50 ", "p99 ", "p99.9 ", "max "] {
        assert!(two.contains(stat), "no {stat} in {two}");
    }
    assert!(two.contains("reflect: passed"), "{two}");
    // Every packet in the CSV, in order; the summary as JSON; the plot.
    let csv = std::fs::read_to_string(dir.path().join("two.csv")).unwrap();
    let seqs: Vec<u64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(seqs, (20..2020).collect::<Vec<u64>>());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("two.json")).unwrap())
            .unwrap();
    assert_eq!(json["summary_us"]["packets"], 2000);
    assert_eq!(json["hops"], 1);
    assert!(std::fs::metadata(dir.path().join("two.png")).unwrap().len() > 1000);

    // Three machines (two reflectors, one of them on two threads), at full speed.
    let three = loop_run(dir.path(), "three", "2", "full", "2");
    assert!(three.contains("through 2 reflectors"), "{three}");
    assert!(three.contains("in order and unaltered"), "{three}");
    let two_full = loop_run(dir.path(), "two-full", "1", "full", "1");
    let (ok, table, stderr) = sluice(&[
        "probe",
        "table",
        dir.path().join("two.json").to_str().unwrap(),
        dir.path().join("two-full.json").to_str().unwrap(),
        dir.path().join("three.json").to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(table.contains("added per hop"), "{table}\n{two_full}");
    assert!(table.contains("1 -> 2 reflectors"), "{table}");
}

#[test]
fn a_loop_of_byte_relays_passes_the_stream_through() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stdout, stderr) = sluice(&[
        "probe",
        "loop",
        "--via",
        "relay",
        "--reflectors",
        "2",
        "--count",
        "1000",
        "--warmup",
        "10",
        "--rate",
        "full",
        "--timeout",
        "20",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("through 2 relays"), "{stdout}");
    assert!(stdout.contains("in order and unaltered"), "{stdout}");
    assert_eq!(stdout.matches("relay: passed").count(), 2, "{stdout}");
}

#[test]
fn an_origin_with_nobody_to_talk_to_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = sluice(&[
        "probe",
        "origin",
        "--to",
        "tcp://127.0.0.1:1",
        "--from",
        "tcp-listen://127.0.0.1:0",
        "--timeout",
        "0.5",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("no connection to tcp://127.0.0.1:1"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn bad_probe_settings_are_refused() {
    let (ok, _, stderr) = sluice(&["probe", "loop", "--rate", "fast"]);
    assert!(!ok);
    assert!(stderr.contains("'fast' is not a bit rate"), "{stderr}");
    let (ok, _, stderr) = sluice(&["probe", "loop", "--size", "1020"]);
    assert!(!ok);
    assert!(
        stderr.contains("a packet is a multiple of 8 bytes"),
        "{stderr}"
    );
    let (ok, _, stderr) = sluice(&["probe", "table", "/nonexistent/x.json"]);
    assert!(!ok);
    assert!(
        stderr.contains("cannot read /nonexistent/x.json"),
        "{stderr}"
    );
}

/// The README's namespace command, small: three namespaces on a bridge, the loop through two
/// reflectors, and nothing left behind. Needs root (CI runs as root) and iproute2.
#[test]
fn the_loop_runs_across_network_namespaces_and_cleans_up() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(root.join("scripts/netns_probe.sh"))
        .args(["--reflectors", "2", "--count", "2000", "--rate", "200M"])
        .args(["--out", dir.path().to_str().unwrap()])
        .env("SLUICE", env!("CARGO_BIN_EXE_sluice"))
        .output()
        .expect("run scripts/netns_probe.sh");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "scripts/netns_probe.sh failed (it needs root and iproute2):\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("3 hosts"), "{stdout}");
    assert!(
        stdout.contains("every packet came back, in order and unaltered"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("reflector ").count(), 2, "{stdout}");
    // The namespaces it named are gone.
    let names: Vec<&str> = stdout
        .lines()
        .find_map(|l| l.split_once("hosts (").map(|(_, r)| r))
        .and_then(|r| r.split(')').next())
        .expect("the hosts line")
        .split(' ')
        .collect();
    let listed = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    for n in names {
        assert!(!listed.contains(n), "namespace {n} left behind:\n{listed}");
    }
}
