//! The control socket's command lines (sluice-runtime) as one client's byte stream: one reply line
//! per command, no control character echoed, no line longer than the limit kept. The driver is
//! `sluice_runtime::fuzz::control_lines`, which `cargo test` replays the corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_runtime::fuzz::control_lines(data));
