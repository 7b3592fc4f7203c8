//! Drives the secure channel's record layer (what every keyed connection reads after its
//! handshake: length prefixes, bodies received straight into a caller's buffer or read ahead,
//! tags) with arbitrary bytes; the first byte seeds the read sizes, the buffer size, whether
//! records go straight into it, and whether they are encrypted or authenticated only. No input
//! may panic, hang, allocate beyond one record, or yield more plaintext than it holds. The
//! driver is `sluice_net::fuzz::records`, which `cargo test` replays the corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice_net::fuzz::records(data);
});
