//! Drives the secure channel's handshake (the preface, the Noise XXpsk3 messages with their
//! length prefixes, the responder's acceptance record) with arbitrary bytes from the peer,
//! over a real loopback connection; the first byte picks this end's role and the records'
//! protection. No input may panic, hang, allocate beyond one handshake message, or complete
//! a handshake. The driver is `sluice_net::fuzz::secure_handshake`, which `cargo test`
//! replays the corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice_net::fuzz::secure_handshake(data);
});
