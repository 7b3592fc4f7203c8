//! The jconvolver configuration parser (sluice-audio), beside a real impulse file: no input may
//! panic, allocate past its declared sizes or make a matrix the file did not declare. The driver is
//! `sluice_audio::fuzz::jconvolver_config`, which `cargo test` replays the corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_audio::fuzz::jconvolver_config(data));
