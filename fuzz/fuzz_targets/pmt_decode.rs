//! GNU Radio's PMT decoder (sluice-pmt), the decoder every tag a peer sends goes through: no input
//! may panic, claim bytes it was not given, or read back as a value whose encoding drifts on a
//! round trip. The driver is `sluice_pmt::fuzz::decode_value`, which `cargo test` replays the
//! corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_pmt::fuzz::decode_value(data));
