#!/usr/bin/env bash
# The transport soak of sluice-net's "Done when": two `sluice run` processes move 10^9 complex
# f32 items (8 GB) through shm_sink -> shm_source and through tcp_sink -> tcp_source, and the
# receiver's checksum (CRC32C of every byte) must equal the one a single process computes over
# the same stream. CI moves 5·10^6 items the same way (crates/cli/tests/transport.rs).
#
#   scripts/soak_transport.sh                 # both transports, 10^9 items each
#   scripts/soak_transport.sh --items 1e8 --only shm
#
# Options: --items N (default 1000000000; 1e9 notation accepted), --only shm|tcp,
#          --sluice PATH (default: $SLUICE, else target/release/sluice, built if missing).
# Every name carries this run's id; a trap removes the temporary directory and stops the
# processes this script started, also when a run fails or is interrupted.
set -euo pipefail
cd "$(dirname "$0")/.."

items=1000000000
only=""
sluice="${SLUICE:-target/release/sluice}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --items) items=$(python3 -c "print(int(float('$2')))"); shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --sluice) sluice="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "soak_transport.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$only" in ""|shm|tcp) ;; *) echo "--only takes shm or tcp, not '$only'" >&2; exit 2 ;; esac
if [[ ! -x "$sluice" ]]; then
  cargo build --release -p sluice
fi

id="soak-$$"
dir=$(mktemp -d "/tmp/sluice-$id-XXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

source_node() {  # name, items
  cat <<TOML
[[node]]
name = "noise"
type = "signal_source"
params = { item = "c32", waveform = "noise", amplitude = 1.0, seed = 5 }
[[node]]
name = "head"
type = "head"
params = { item = "c32", items = $1 }
[[edge]]
from = "noise.out"
to = "head.in"
TOML
}

sink_graph() {  # type, url
  source_node "$items"
  cat <<TOML
[[node]]
name = "out"
type = "$1"
params = { item = "c32", url = "$2" }
[[edge]]
from = "head.out"
to = "out.in"
TOML
}

receive_graph() {  # type, url
  cat <<TOML
[[node]]
name = "in"
type = "$1"
params = { item = "c32", url = "$2" }
[[node]]
name = "sum"
type = "checksum"
params = { item = "c32", label = "stream" }
[[edge]]
from = "in.out"
to = "sum.in"
TOML
}

{ source_node "$items"; cat <<TOML
[[node]]
name = "sum"
type = "checksum"
params = { item = "c32", label = "stream" }
[[edge]]
from = "head.out"
to = "sum.in"
TOML
} > "$dir/reference.toml"

echo "== reference: one process, $items items"
start=$SECONDS
"$sluice" run "$dir/reference.toml" 2> "$dir/reference.log"
want=$(grep '^checksum stream:' "$dir/reference.log")
echo "   $want ($((SECONDS - start)) s)"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
failed=0
for kind in shm tcp; do
  [[ -n "$only" && "$only" != "$kind" ]] && continue
  if [[ $kind == shm ]]; then
    listen="unix-listen:@sluice-$id"; connect="unix:@sluice-$id"
  else
    listen="tcp-listen://127.0.0.1:$port"; connect="tcp://127.0.0.1:$port"
  fi
  receive_graph "${kind}_source" "$listen" > "$dir/rx-$kind.toml"
  sink_graph "${kind}_sink" "$connect" > "$dir/tx-$kind.toml"
  echo "== $kind: two processes, $items items"
  start=$SECONDS
  "$sluice" run "$dir/rx-$kind.toml" 2> "$dir/rx-$kind.log" &
  rx=$!; pids+=("$rx")
  "$sluice" run "$dir/tx-$kind.toml" 2> "$dir/tx-$kind.log" || failed=1
  wait "$rx" || failed=1
  got=$(grep '^checksum stream:' "$dir/rx-$kind.log" || true)
  secs=$((SECONDS - start))
  if [[ "$got" == "$want" ]]; then
    echo "   match: $got ($secs s)"
  else
    echo "   MISMATCH: received '${got:-nothing}', expected '$want'" >&2
    cat "$dir/rx-$kind.log" >&2
    failed=1
  fi
done
exit $failed
