//! The SigMF meta file reader (sluice-formats), and its ISO 8601 times, which must read back as the
//! same second once written. The driver is `sluice_formats::fuzz::sigmf_meta`, which `cargo test`
//! replays the corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_formats::fuzz::sigmf_meta(data));
