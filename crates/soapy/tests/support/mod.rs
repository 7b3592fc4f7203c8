//! The test device module (`device/sluice_test.cpp`), built with g++ once per test run into
//! the target directory and handed to libSoapySDR through `SOAPY_SDR_PLUGIN_PATH`, with
//! `SOAPY_SDR_ROOT` pointed at an empty directory so that no installed module (UHD,
//! SoapyRemote, which probe the network) loads.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The module's source, beside this file (which other crates' tests include too: `file!()`
/// is relative to the workspace root, two levels above every crate).
pub fn source() -> PathBuf {
    let this = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file!());
    this.parent().unwrap().join("../device/sluice_test.cpp")
}

/// Builds the module if it is missing or older than its source, points libSoapySDR at it and
/// returns its path. Call before any device call of the process.
pub fn module() -> &'static Path {
    static MODULE: OnceLock<PathBuf> = OnceLock::new();
    MODULE.get_or_init(|| {
        // Tests build into the target directory; the benchmark example (which has no
        // CARGO_TARGET_TMPDIR) into the system's temporary directory.
        let tmp = option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
        let dir = tmp.join("soapy-module");
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("libsluice_test.so");
        let fresh = |p: &Path| -> Option<bool> {
            let built = std::fs::metadata(p).ok()?.modified().ok()?;
            Some(built >= std::fs::metadata(source()).ok()?.modified().ok()?)
        };
        if fresh(&out) != Some(true) {
            // Several test binaries may build at once: each builds its own file and renames
            // it into place (atomic), so none loads a half-written module.
            let tmp = dir.join(format!("libsluice_test.so.{}", std::process::id()));
            let status = Command::new("g++")
                .args(["-std=c++14", "-O2", "-shared", "-fPIC", "-o"])
                .arg(&tmp)
                .arg(source())
                .arg("-lSoapySDR")
                .status()
                .expect("g++ runs (scripts/setup.sh installs g++ and libsoapysdr-dev)");
            assert!(
                status.success(),
                "building the test device module failed (needs g++ and libsoapysdr-dev)"
            );
            std::fs::rename(&tmp, &out).unwrap();
        }
        let root = dir.join("empty-root");
        std::fs::create_dir_all(&root).unwrap();
        std::env::set_var("SOAPY_SDR_ROOT", &root);
        std::env::set_var("SOAPY_SDR_PLUGIN_PATH", &out);
        out
    })
}

/// Waits (at most 10 s) until `data` holds `n` items.
pub fn wait_for<T: Clone>(data: &sluice_blocks::blocks::VectorSinkData<T>, n: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while (data.items().len() as u64) < n {
        assert!(
            std::time::Instant::now() < deadline,
            "{} items after 10 s, wanted {n}",
            data.items().len()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// `args` made unique to this call: SoapySDR hands out one shared device per distinct
/// argument string, and tests running at once must not share one.
pub fn unique(args: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{args},test_id={}", NEXT.fetch_add(1, Ordering::Relaxed))
}
