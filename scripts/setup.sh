#!/usr/bin/env bash
# Installs everything sluice's tests and benchmarks need beyond the Rust toolchain, on Debian
# (as CI's and the development machines are). Idempotent: what is already there is skipped.
#
#   scripts/setup.sh && cargo test --workspace     # the README's test command
#
# - Debian packages: the peers the benchmarks compare with (GNU Radio, zita-convolver, libzmq,
#   liquid-dsp) and the tools the scripts use (C/C++ compilers for the harnesses, perf,
#   valgrind, iproute2 for the network-namespace probe).
# - The `sigmf` Python package (PyPI), the SigMF reference the recordings are checked with.
# - The nightly toolchain's Miri and rust-src, for `cargo +nightly miri test` (CI runs it).
# - cargo-fuzz, for the fuzz targets in fuzz/ (CI runs net_receive).
# - cargo-machete, which CI runs to find dependencies that no code uses any more.
# Never called from inside `cargo test`: parallel tests would fight over apt's lock.
set -euo pipefail

APT_PACKAGES=(
  gnuradio python3-numpy           # bench chain / overlap-save peers (GNU Radio 3.10)
  python3-scipy                    # sluice bench beamform: the numpy/scipy peer
  python3-threadpoolctl            # sluice bench beamform: which BLAS library and kernel numpy ran
  python3-pip python3-jsonschema python3-defusedxml  # the sigmf package (below) and its dependencies
  libzita-convolver-dev g++ pkg-config  # scripts/compare_zita.sh harness
  linux-perf valgrind              # profiling the chain, checking the stress tests
  libzmq3-dev gcc                  # bench net: the libzmq C harness, compiled at run time
  iproute2                         # scripts/netns_probe.sh (ip netns, veth, bridge, tc tbf)
  etcd-server                      # crates/cluster: the control plane (etcd tests, local clusters)
  libliquid-dev                    # sluice bench radio: liquid-dsp peer (C harness built by the bench)
  jackd2 libjack-jackd2-dev jconvolver  # sluice-audio's JACK tests (dummy-backend servers) and the jconvolver peer
  python3-zmq                      # crates/zmq tests: libzmq peers through pyzmq (gnuradio above: gr-zeromq interop)
  libsoapysdr-dev soapysdr-tools   # crates/soapy tests: libSoapySDR, its headers for the test device module (g++ above), SoapySDRUtil (gnuradio above brings gnuradio.soapy)
  python3-venv python3-dev         # crates/python: the package's virtual environment, libpython to link
  espeak-ng python3-matplotlib     # examples/python/fm_receiver.py: speech to modulate, the spectrum plot
  sox python3-soundfile            # crates/formats tests: RF64 and float WAVs read by sox and libsndfile
  chromium chromium-driver         # crates/web browser tests: headless Chromium through WebDriver (same Debian version)
)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: Debian packages already installed"
fi

# The SigMF reference implementation for crates/blocks/tests/sigmf_python.rs. It has no Debian
# package; its dependencies (numpy, jsonschema, defusedxml) come from Debian above, so only it
# is added.
if ! /usr/bin/python3 -c 'import sigmf' 2>/dev/null; then
  as_root /usr/bin/python3 -m pip install --quiet --break-system-packages --no-deps 'sigmf==1.14.0'
fi

# The Python package (crates/python): its tests run in a virtual environment over Debian's
# Python, so that numpy, scipy and GNU Radio (Debian packages) import there too; maturin (which
# builds the wheel) and pytest come from PyPI into it. Git-ignored, under target/.
PY_VENV="$(cd "$(dirname "$0")/.." && pwd)/target/python-venv"
if [ ! -x "$PY_VENV/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$PY_VENV"
fi
if [ ! -x "$PY_VENV/bin/maturin" ] || ! "$PY_VENV/bin/python" -c 'import pytest' 2>/dev/null; then
  "$PY_VENV/bin/python" -m pip install --quiet 'maturin>=1.9.4,<2' 'pytest>=7'
fi

if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
if ! rustup component list --toolchain nightly --installed | grep -q '^miri'; then
  rustup component add miri rust-src --toolchain nightly
fi
cargo +nightly miri setup >/dev/null 2>&1 || cargo +nightly miri setup
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz            # fuzz/: the sluice-net receive state machine
fi
if ! command -v cargo-machete >/dev/null 2>&1; then
  cargo install cargo-machete --locked  # CI: dependencies no crate uses any more
fi
echo "setup: done"
