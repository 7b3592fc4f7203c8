//! The Python package's tests: builds the wheel with maturin (release, into the workspace's
//! target directory), installs it into the virtual environment `scripts/setup.sh` makes
//! (`target/python-venv`, over Debian's Python so that numpy, scipy and GNU Radio import), and
//! runs pytest on `tests/python`. Anything missing fails here, naming what to run; pytest's
//! "no tests ran" (exit 5) fails like any other error.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(what: &str, cmd: &mut Command) {
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    assert!(status.success(), "{what} failed ({status}): {cmd:?}");
}

#[test]
fn the_python_package_passes_its_pytest_suite() {
    let ws = workspace();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| ws.join("target"));
    let venv = std::env::var_os("SLUICE_PYTHON_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| ws.join("target/python-venv"));
    let python = venv.join("bin/python");
    let maturin = venv.join("bin/maturin");
    assert!(
        python.exists() && maturin.exists(),
        "no Python environment at {} with maturin: run scripts/setup.sh (it makes one over \
         Debian's /usr/bin/python3 with maturin and pytest)",
        venv.display()
    );
    // A wheel directory of this run's own, so that the wheel installed is the one just built.
    let wheels = target.join(format!("wheels/test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&wheels);
    run(
        "maturin build",
        Command::new(&maturin)
            .args(["build", "--release", "--quiet", "-m"])
            .arg(ws.join("crates/python/Cargo.toml"))
            .arg("-o")
            .arg(&wheels)
            .arg("-i")
            .arg(&python)
            .env("CARGO_TARGET_DIR", &target),
    );
    let wheel = std::fs::read_dir(&wheels)
        .expect("maturin wrote its wheel directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("maturin built a wheel");
    assert!(
        wheel.to_string_lossy().contains("abi3"),
        "the wheel is not abi3: {}",
        wheel.display()
    );
    run(
        "pip install",
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--force-reinstall",
                "--no-index",
            ])
            .arg(&wheel),
    );
    let _ = std::fs::remove_dir_all(&wheels);
    run(
        "pytest",
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"])
            .arg(ws.join("crates/python/tests/python"))
            // The tests import the installed package, never the source tree's.
            .current_dir(&target),
    );
}
