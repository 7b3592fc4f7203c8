//! A binding ZeroMQ socket of each type (sluice-zmq) with several peers on loopback, each writing
//! what the input says: a peer's bytes cost at most its own connection, never a fatal error, a
//! frame past the limit or a peer past the cap. The driver is `sluice_zmq::fuzz::socket`, which
//! `cargo test` replays the corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_zmq::fuzz::socket(data));
