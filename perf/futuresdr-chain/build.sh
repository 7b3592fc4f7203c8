#!/usr/bin/env bash
# Build the FutureSDR peer harness for `sluice bench chain`.
#
# FutureSDR 0.8 uses nightly-only language features, so this crate lives outside
# the main (stable) workspace and is built with `cargo +nightly` here.
# Works from any directory; prints the binary path on success.
set -euo pipefail

cd "$(dirname "$0")/../.."   # repository root

if ! command -v cargo >/dev/null 2>&1; then
    echo "error: cargo not found; install Rust via https://rustup.rs" >&2
    exit 1
fi
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "error: a nightly Rust toolchain is required to build FutureSDR 0.8." >&2
    echo "       install it with:  rustup toolchain install nightly" >&2
    exit 1
fi

RUSTFLAGS="-Zcrate-attr=feature(float_algebraic)" \
    cargo +nightly build --release \
    --manifest-path perf/futuresdr-chain/Cargo.toml \
    --target-dir perf/futuresdr-chain/target

echo "perf/futuresdr-chain/target/release/futuresdr-chain"
