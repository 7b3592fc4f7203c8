#!/usr/bin/env bash
# Runs one fuzz target for a while: scripts/fuzz.sh TARGET [SECONDS] (default 60), with its
# dictionary (fuzz/dict/TARGET.dict) and seed corpus (fuzz/corpus/TARGET). Prints libFuzzer's
# summary: executions reached and the corpus it ended with. scripts/fuzz.sh --list names the
# targets. A crash leaves its input in fuzz/artifacts/TARGET/: copy it into
# fuzz/regressions/TARGET/ with the fix, where `cargo test` replays it.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
if [ "${1:-}" = "--list" ]; then
  sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^sluice-fuzz$'
  exit 0
fi
target=${1:?usage: scripts/fuzz.sh TARGET [SECONDS]}
seconds=${2:-60}
extra=()
# A dictionary where the target has one.
if [ -f "dict/$target.dict" ]; then extra+=(-dict="dict/$target.dict"); fi
# The socket target's peers are refused by the thousand, each refusal a line on standard
# error; libFuzzer's own report still comes out.
if [ "$target" = zmq_socket ]; then extra+=(-close_fd_mask=2); fi
# The receiver's listener runs each connection's handshake on a helper thread that is not
# joined (it ends within the handshake's budget), and each connection's heartbeat thread
# ends on its own: LeakSanitizer would take one caught mid-exit for a leak.
if [ "$target" = net_source ]; then extra+=(-detect_leaks=0); fi
mkdir -p "corpus/$target"
cargo +nightly fuzz run "$target" -- -max_total_time="$seconds" \
  -timeout=10 -print_final_stats=1 "${extra[@]}"
