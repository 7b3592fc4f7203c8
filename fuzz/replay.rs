//! Replays a fuzz target's corpus as an ordinary test. Each crate's `tests/fuzz_corpus.rs`
//! includes this file (`#[path]`), so that every target is replayed the same way: every
//! input of `fuzz/corpus/TARGET/` and `fuzz/regressions/TARGET/` goes through the driver the
//! target calls, and the seeds the encoders make must be in the corpus as committed.
//!
//! `SLUICE_WRITE_SEEDS=1 cargo test -p CRATE --test fuzz_corpus` writes the seeds again.

use std::panic::{catch_unwind, RefUnwindSafe};
use std::path::{Path, PathBuf};

/// `fuzz/` at the repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Feeds every file of `fuzz/corpus/TARGET` and `fuzz/regressions/TARGET` to `run`; panics
/// naming the first input that panics it. Returns how many corpus inputs there were.
pub fn replay(target: &str, run: impl Fn(&[u8]) + RefUnwindSafe) -> usize {
    let mut corpus = 0;
    for kind in ["corpus", "regressions"] {
        let dir = root().join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths {
            let bytes = std::fs::read(&path).unwrap();
            if catch_unwind(|| run(&bytes)).is_err() {
                panic!("{} panics the {target} driver", path.display());
            }
            if kind == "corpus" {
                corpus += 1;
            }
        }
    }
    corpus
}

/// Checks that each `(name, bytes)` seed is `fuzz/corpus/TARGET/seed-NAME`, byte for byte,
/// or writes them all when `SLUICE_WRITE_SEEDS` is set.
pub fn check_seeds(target: &str, seeds: &[(&str, Vec<u8>)]) {
    let dir = root().join("corpus").join(target);
    if std::env::var_os("SLUICE_WRITE_SEEDS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in seeds {
            std::fs::write(dir.join(format!("seed-{name}")), bytes).unwrap();
        }
        return;
    }
    for (name, bytes) in seeds {
        let path = dir.join(format!("seed-{name}"));
        let committed = std::fs::read(&path).unwrap_or_default();
        assert!(
            &committed == bytes,
            "{} is missing or stale: write the seeds again with SLUICE_WRITE_SEEDS=1 cargo test --test fuzz_corpus",
            path.display()
        );
    }
}
