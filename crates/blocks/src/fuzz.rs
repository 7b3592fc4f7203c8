//! The driver the `graph_load` fuzz target (`fuzz/fuzz_targets/`) and its replay test
//! (`tests/fuzz_corpus.rs`) share, so that what the fuzzer checks and what `cargo test`
//! replays cannot drift apart.

use crate::graph_blocks::standard_registry;
use sluice_graph::{load_str, Family, Registry};
use std::sync::OnceLock;

/// The standard blocks that touch nothing outside the process when built: no parameter names
/// a file, and no block opens a device or a socket. A fuzzed graph file must not write files
/// or listen on ports.
pub fn contained_registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut contained = Registry::new();
        for t in standard_registry().types() {
            let outside = matches!(t.family, Family::Files | Family::Audio | Family::Network);
            if !outside && t.files().next().is_none() {
                contained
                    .add(t.clone())
                    .expect("the standard blocks have distinct names");
            }
        }
        contained
    })
}

/// Loads `data` (as UTF-8, invalid sequences replaced) as a graph file with
/// [`contained_registry`]: parse, validation, rates and node construction, as `sluice run`
/// and `sluice check` do before a graph runs. Panics if a refusal has no message, or its
/// message has more lines than it names mistakes.
pub fn load_graph(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Err(e) = load_str(&text, "fuzz.toml", contained_registry()) {
        let shown = e.to_string();
        assert!(!shown.trim().is_empty(), "a refusal without a message");
        assert!(shown.lines().count() <= 1 + e.more.len(), "{shown}");
    }
}
