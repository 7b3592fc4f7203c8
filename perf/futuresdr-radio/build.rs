//! Records the resolved FutureSDR version (from Cargo.lock) so the binary can
//! report exactly which release it was built against.

use std::fs;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let lock = dir.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());

    let version = fs::read_to_string(&lock)
        .ok()
        .and_then(|text| {
            let mut lines = text.lines();
            while let Some(line) = lines.next() {
                if line.trim() == "name = \"futuresdr\"" {
                    let v = lines.next()?.trim();
                    let v = v.strip_prefix("version = \"")?.strip_suffix('"')?;
                    return Some(v.to_string());
                }
            }
            None
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=FUTURESDR_VERSION={version}");
}
