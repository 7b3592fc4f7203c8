//! Drives the whole receive state machine (sluice_net::Decoder, receiver role, c32 items, a
//! 1 MiB frame limit, taking MESSAGE frames) with arbitrary bytes in arbitrary chunks: the
//! first byte seeds the chunk sizes. Payload goes into a destination buffer of exactly the
//! frame's payload size, as the tcp_source reserves it. No input may panic, hang or allocate
//! beyond the limits. The driver is `sluice_net::fuzz::receive`, which `cargo test` replays the
//! corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice_net::fuzz::receive(data);
});
