//! `sluice bench messages` at tiny counts: every PDU sent through sluice's chain is counted at
//! its end, with a latency measured for it; GNU Radio's side runs and reports as many.
//!
//! The GNU Radio test needs Debian's `gnuradio` package (installed by `scripts/setup.sh`);
//! without it that test fails and says so, as the repository's other GNU Radio tests do.

use sluice_bench::messages::{gnuradio_missing, run_gnuradio, run_sluice};
use sluice_runtime::Scheduler;
use std::path::Path;

#[test]
fn sluice_counts_every_pdu_it_sends() {
    for (size, pdus) in [(1, 37), (64, 500), (4096, 20)] {
        for scheduler in [Scheduler::Auto, Scheduler::ThreadPerNode] {
            let run = run_sluice(size, pdus, scheduler).unwrap();
            assert_eq!(run.pdus, pdus, "size {size}, {scheduler:?}");
            assert!(run.rate > 0.0, "{run:?}");
            assert!(
                run.p50_ms >= 0.0 && run.p50_ms <= run.p99_ms && run.p99_ms < 5000.0,
                "{run:?}"
            );
        }
    }
}

#[test]
fn gnuradio_counts_the_pdus_asked_for() {
    let python = Path::new("/usr/bin/python3");
    if let Some(why) = gnuradio_missing(python) {
        panic!("{why}: install the Debian package `gnuradio` (scripts/setup.sh installs it)");
    }
    // Tests run in the crate's directory; the script is at the repository root.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/gr_messages.py");
    let runs = run_gnuradio(python, &script, 64, 200, 1).unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.pdus, 200);
    assert!(
        run.rate > 0.0 && run.p50_ms >= 0.0 && run.p50_ms <= run.p99_ms,
        "{run:?}"
    );
}
