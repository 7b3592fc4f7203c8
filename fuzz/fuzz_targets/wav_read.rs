//! The WAV reader (sluice-formats): header (RIFF, RF64, extensible, unknown sizes) and every frame;
//! never more frames than announced, a partial frame or a sample past full scale. The driver is
//! `sluice_formats::fuzz::wav_file`, which `cargo test` replays the corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_formats::fuzz::wav_file(data));
