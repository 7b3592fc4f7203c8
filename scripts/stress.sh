#!/usr/bin/env bash
# Reruns the runtime's and the DSP blocks' tests (tags, schedulers, panics, deadlocks) many
# times under load, to shake out races that show only under preemption: two loops run at once
# on this machine's cores, so every test's threads are preempted by the other loop's.
#
#   scripts/stress.sh [RUNS]        # RUNS per test binary, default 500 (split over two loops)
#
# Prints, per test binary, how many runs passed; failing runs' output is kept in the printed
# directory. Not part of CI (it takes ~10 minutes for 500 runs).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-500}
out=$(mktemp -d /tmp/sluice-stress.XXXXXX)

# Build the test binaries once and find their paths.
cargo test -p sluice-runtime -p sluice-blocks --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        t = m["target"]
        if t["name"] in ("graph", "soundness") or (t["name"] == "sluice_blocks" and "lib" in t["kind"]):
            print(m["target"]["name"] + "-" + m["package_id"].split("#")[0].split("/")[-1], m["executable"])
' > "$out/binaries"
cat "$out/binaries"

loop() {
  local worker=$1 count=$2
  for ((i = 0; i < count; i++)); do
    while read -r name exe; do
      if "$exe" -q >"$out/run.$worker.log" 2>&1; then
        echo "$name pass" >>"$out/results.$worker"
      else
        echo "$name FAIL" >>"$out/results.$worker"
        cp "$out/run.$worker.log" "$out/fail.$name.$worker.$i.log"
      fi
    done <"$out/binaries"
  done
}

start=$(date +%s)
loop 1 $((runs / 2)) &
loop 2 $((runs - runs / 2)) &
wait
echo "stress: $runs runs per binary in $(($(date +%s) - start)) s, two loops at once on $(nproc) cores"
cat "$out"/results.* | sort | uniq -c | awk '{printf "  %-28s %-5s %d\n", $2, $3, $1}'
if grep -q FAIL "$out"/results.*; then
  echo "failing runs' output: $out/fail.*"
  exit 1
fi
