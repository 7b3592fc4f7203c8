#!/usr/bin/env bash
# Builds the FutureSDR peer harness for `sluice bench radio` (FutureSDR 0.8 needs nightly, so the
# crate lives outside the main, stable workspace). Works from any directory; prints the binary.
set -euo pipefail
cd "$(dirname "$0")/../.."   # repository root
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "error: a nightly Rust toolchain is required to build FutureSDR 0.8." >&2
    echo "       install it with:  rustup toolchain install nightly" >&2
    exit 1
fi
RUSTFLAGS="-Zcrate-attr=feature(float_algebraic)" \
    cargo +nightly build --release \
    --manifest-path perf/futuresdr-radio/Cargo.toml \
    --target-dir perf/futuresdr-radio/target
echo "perf/futuresdr-radio/target/release/futuresdr-radio"
