//! The test device module (`sluice_soapy::test_device`), built with g++ once into the target
//! directory and the only module libSoapySDR loads in the test process.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Builds the module if it is missing or was built from another source, points libSoapySDR
/// at it and returns its path. Call before any device call of the process.
pub fn module() -> &'static Path {
    static MODULE: OnceLock<PathBuf> = OnceLock::new();
    MODULE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("soapy-module");
        let module = sluice_soapy::test_device::build(&dir).unwrap();
        sluice_soapy::test_device::use_only(&module);
        module
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
