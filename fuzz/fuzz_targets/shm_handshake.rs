//! Drives what each end of a shared-memory stream parses on the Unix socket (the source: the
//! sink's HELLO, over a real socket pair, and the tag messages after it; the sink: the
//! source's answer) with arbitrary bytes; the first byte picks which. No input may panic, hang, attach a ring without its descriptor, or take more bytes
//! than came. The driver is `sluice_net::fuzz::shm_handshake`, which `cargo test` replays the
//! corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice_net::fuzz::shm_handshake(data);
});
