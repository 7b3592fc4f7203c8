//! Drives sluice-zmq's ZMTP receive state machine (sluice_zmq::Decoder, a PULL socket, a 1 MiB
//! frame limit) with arbitrary bytes in arbitrary chunks, and parses every data frame's body
//! as a gr-zeromq tag header (the PMT decoder). The driver is `sluice_zmq::fuzz::receive`,
//! which `cargo test` replays the corpus through too. No input may panic, hang or allocate
//! beyond the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_zmq::fuzz::receive(data));
