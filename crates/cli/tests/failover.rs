//! Failover on a real local cluster (five network-namespace hosts, etcd, a worker in each;
//! needs root, iproute2 and etcd, as CI has): `examples/failover.toml`'s middle partition (FIR,
//! channelizer, FM demodulator, IIR) runs on h2 with a hot standby on h3. `sluice bench
//! failover` runs it once without a fault, then kills h2's worker, takes its link down for 3 s,
//! stops it (a zombie that wakes up after its standby took over), cuts its link for good (the
//! controller must not wait for it) and kills the standby's worker instead (nothing may
//! change), each at a random moment; every output must be bit-identical to the same file run
//! on one machine (the bench fails otherwise), and h4's receiver must report each takeover.
//! The same with a warm standby (`--warm`, `examples/failover_warm.toml`). The full runs (20
//! faults) are `sluice bench failover [--warm]`.

mod common;

use std::process::Command;

/// Runs `sluice bench failover` with `extra` arguments, one fault of each of `kinds` (their
/// `--kinds` words and how the bench's lines name them) at random moments, and checks that
/// every output, and the one without a fault, is bit-identical to the one-machine run.
fn every_fault_is_bit_identical(extra: &[&str], kinds: &[(&str, &str)]) {
    common::require_root_iproute2_and_etcd("failover");
    // One cluster at a time: two would share the two cores, and a starved process looks like
    // a silent one (a spurious takeover would fail the `standby` kind).
    static ONE_CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _alone = ONE_CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let seed = std::process::id() % 1000;
    let words: Vec<&str> = kinds.iter().map(|(word, _)| *word).collect();
    let faults = kinds.len().to_string();
    let run = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["bench", "failover"])
        .args(extra)
        .args(["--faults", &faults, "--seconds", "2"])
        .args(["--kinds", &words.join(",")])
        .args(["--seed", &seed.to_string()])
        .arg("--out")
        .arg(&out)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "seed {seed}:\n{text}");
    assert!(
        text.contains("no fault: 250000 items, bit-identical"),
        "{text}"
    );
    for (_, named) in kinds {
        let line = text
            .lines()
            .find(|l| l.starts_with("fault ") && l.contains(named))
            .unwrap_or_else(|| panic!("no {named} fault in:\n{text}"));
        assert!(line.contains("250000 items, bit-identical"), "{line}");
    }
    assert!(
        text.contains(&format!(
            "bit-identical to the one-machine run: {faults} of {faults}"
        )),
        "{text}"
    );
}

#[test]
fn a_killed_cut_off_or_stopped_primary_fails_over_and_the_output_is_bit_identical() {
    every_fault_is_bit_identical(
        &[],
        &[
            ("kill", "kill -9  "),
            ("link", "link down"),
            ("stop", "SIGSTOP"),
            ("cut", "link cut"),
            ("standby", "kill -9 standby"),
        ],
    );
}

/// The same with a warm standby (`examples/failover_warm.toml`): h3 runs nothing until it wins
/// h2's lease, then starts the partition afresh, re-primed from the input h1 kept.
#[test]
fn a_warm_standby_takes_over_re_primed_and_the_output_is_bit_identical() {
    every_fault_is_bit_identical(
        &["--warm"],
        &[
            ("kill", "kill -9  "),
            ("link", "link down"),
            ("stop", "SIGSTOP"),
            ("standby", "kill -9 standby"),
        ],
    );
}
