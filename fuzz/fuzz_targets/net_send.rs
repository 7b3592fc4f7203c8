//! Drives the sender's side of the stream protocol (sluice_net::Decoder, sender role: what a
//! tcp_sink reads from its receiver: WELCOME, ACK, CREDIT, GAP, HEARTBEAT, ERROR) with
//! arbitrary bytes in arbitrary chunks: the first byte seeds the chunk sizes. No input may
//! panic, hang or allocate beyond the limits. The driver is `sluice_net::fuzz::send`, which
//! `cargo test` replays the corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice_net::fuzz::send(data);
});
