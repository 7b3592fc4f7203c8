//! The driver the `jconvolver_config` fuzz target (`fuzz/fuzz_targets/`) and its replay test
//! (`tests/fuzz_corpus.rs`) share, so that what the fuzzer checks and what `cargo test`
//! replays cannot drift apart.

use crate::jconvolver::Config;
use sluice_formats::wav::{Encoding, WavWriter};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The impulse file beside the fuzzed configuration: two channels, 48 kHz, 32 frames.
pub const IR_FILE: &str = "ir.wav";

/// Parses `data` (as UTF-8, invalid sequences replaced) as a jconvolver configuration file in
/// a directory of its own that holds [`IR_FILE`], so that `/impulse/read` commands reach a
/// real WAV file; then builds the live convolver's description from it. The directory is
/// removed before returning. Panics if a parsed matrix is larger than the configuration
/// declared or the description disagrees with it.
pub fn jconvolver_config(data: &[u8]) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "sluice-fuzz-jconv-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
    let _cleanup = RemoveOnDrop(dir.clone());
    let mut w = WavWriter::create(&dir.join(IR_FILE), 2, Some(48_000), Encoding::Float(32))
        .expect("the impulse file can be written");
    let ir: Vec<f32> = (0..64).map(|k| 1.0 / (1.0 + k as f32)).collect();
    w.write(&ir).expect("the impulse file can be written");
    w.finish().expect("the impulse file can be written");
    let text = String::from_utf8_lossy(data);
    let Ok(config) = Config::parse(&dir.join("fuzz.conf"), &text) else {
        return;
    };
    assert!(
        config.irs.max_len() <= config.max_len,
        "an IR beyond MAXLEN"
    );
    assert_eq!(config.input_names.len(), config.inputs);
    assert_eq!(config.output_names.len(), config.outputs);
    let spec = config
        .to_spec()
        .expect("a parsed configuration describes a convolver");
    assert_eq!(spec.input_names, config.input_names);
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
