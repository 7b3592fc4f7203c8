#!/usr/bin/env bash
# The hostile-peer soak: legitimate streams (a keyed and a fenced tcp stream, ZeroMQ
# PUSH->PULL and PUB->SUB, a cluster worker) run on loopback for a given time while attacker
# threads (silent connections, trickled handshakes, HTTP probes and garbage, a deaf PULL, a
# subscription storm, huge frames, a connection flood on the worker) do their worst. Prints a
# line a second (time, RSS, items delivered per stream) and a summary; fails if a stream lost
# or changed an item, RSS grew by more than 256 MiB, or the worker died.
#
# Usage: scripts/soak_hostile.sh [SECONDS]      (or SOAK_SECONDS=SECONDS; default 180)
#        scripts/soak_hostile.sh --help
set -euo pipefail

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi
seconds="${1:-${SOAK_SECONDS:-180}}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || (( seconds < 1 )); then
    echo "soak_hostile.sh: the time must be a whole number of seconds, not '$seconds'" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
export SOAK_SECONDS="$seconds"
exec cargo test --release -p sluice --test soak_hostile -- --ignored --nocapture
