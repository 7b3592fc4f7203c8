//! Drives the receiver's state machine above the decoder: a `tcp_source` (listening on
//! loopback, fenced or not) takes scripted connections and well-formed frame sequences made
//! by the wire's encoders (DATA with tags, GAP, END, MESSAGE, HEARTBEAT, reconnects, fenced
//! primaries and standbys of any revision, cuts), and what it acknowledges, credits and
//! delivers is checked against what was sent: every item at its offset, every gap tagged,
//! every tag rebased onto its item. No script may panic or hang it. The driver is
//! `sluice_net::fuzz::source`, which `cargo test` replays the corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice_net::fuzz::source(data);
});
