//! Drives the cluster's control protocol (JSON lines between a controller and its workers,
//! `sluice_cluster::protocol`) with arbitrary bytes, read as a controller's messages to a
//! worker and as a worker's messages to its controller. No input may panic, hang or allocate
//! beyond a line's bound. The driver is `sluice_cluster::protocol::fuzz_lines`, which `cargo
//! test` replays the corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice_cluster::protocol::fuzz_lines(data);
});
