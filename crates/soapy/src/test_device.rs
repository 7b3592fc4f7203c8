//! The SoapySDR device module that stands in for a radio where there is none: sluice's tests
//! and `sluice bench soapy` drive Debian's real libSoapySDR with it (`driver=sluice_test`).
//!
//! Its C++ source (`tests/device/sluice_test.cpp`, which documents every argument: signal,
//! hardware time, injected overflows, pacing, channels, TX capture) is built with g++ against
//! `libsoapysdr-dev` when first asked for, into a directory of the caller's choosing, and
//! handed to libSoapySDR through `SOAPY_SDR_PLUGIN_PATH`, with `SOAPY_SDR_ROOT` pointed at an
//! empty directory so that no installed module (UHD, SoapyRemote, which probe the network)
//! loads.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The module's C++ source.
pub const SOURCE: &str = include_str!("../tests/device/sluice_test.cpp");

/// Builds the module into `dir` unless the one there was built from this [`SOURCE`], and
/// returns its path. Several processes may build at once: each builds its own file and
/// renames it into place, so none loads a half-written module.
pub fn build(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let out = dir.join("libsluice_test.so");
    let built_from = dir.join("sluice_test.cpp");
    if out.exists() && std::fs::read_to_string(&built_from).ok().as_deref() == Some(SOURCE) {
        return Ok(out);
    }
    let id = std::process::id();
    let (cpp, tmp) = (
        dir.join(format!("sluice_test.{id}.cpp")),
        dir.join(format!("libsluice_test.so.{id}")),
    );
    std::fs::write(&cpp, SOURCE).map_err(|e| format!("cannot write {}: {e}", cpp.display()))?;
    let status = Command::new("g++")
        .args(["-std=c++14", "-O2", "-shared", "-fPIC", "-o"])
        .arg(&tmp)
        .arg(&cpp)
        .arg("-lSoapySDR")
        .status()
        .map_err(|e| format!("cannot run g++ ({e}); scripts/setup.sh installs it"))?;
    if !status.success() {
        return Err("building the test device module failed (needs g++ and libsoapysdr-dev: scripts/setup.sh installs them)".into());
    }
    std::fs::rename(&tmp, &out).map_err(|e| format!("cannot move the module into place: {e}"))?;
    std::fs::rename(&cpp, &built_from).map_err(|e| format!("cannot keep the source: {e}"))?;
    Ok(out)
}

/// Makes libSoapySDR load `module` and nothing else (see the module docs). Call before the
/// process's first device call and before other threads start: it sets environment variables.
pub fn use_only(module: &Path) {
    let root = module.with_file_name("empty-root");
    let _ = std::fs::create_dir_all(&root);
    std::env::set_var("SOAPY_SDR_ROOT", &root);
    std::env::set_var("SOAPY_SDR_PLUGIN_PATH", module);
}
