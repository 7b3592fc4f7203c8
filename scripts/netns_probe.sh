#!/usr/bin/env bash
# `sluice probe` across network namespaces on one machine: the seed's latency/jitter loop with
# each "machine" a namespace of its own, all plugged into one bridge (the seed's switch).
#
#   scripts/netns_probe.sh                          # the seed's table: 2 and 3 machines,
#                                                   # 70 Mbit/s and full speed, then the table;
#                                                   # and the same loops through byte relays
#                                                   # at 70 Mbit/s: the machine's floor
#   scripts/netns_probe.sh --reflectors 2 --rate 70M --count 50000   # one loop
#   scripts/netns_probe.sh --shape 100mbit          # every host's link shaped with tc tbf
#
# Options (all optional):
#   --reflectors N   one loop through N reflectors (default: the six runs of the table)
#   --via relay      the hops are `sluice probe relay` (bytes passed on unread) instead
#   --delay-us D     relays hold every chunk back D µs (with --via relay)
#   --rate R         packet bit rate: 70M, 1G, full (default 70M; the table runs 70M and full)
#   --count C        packets timed per run (default 50000, as the seed)
#   --size B         bytes per packet (default 1024)
#   --shape RATE     shape every host's egress with `tc qdisc … tbf rate RATE` (e.g. 100mbit);
#                    this kernel has no netem: there is no delay or loss emulation
#   --threads T      reflector threads, 1 or 2 (default 1)
#   --spin-us U      reflector tcp_source spin_us (default 0: no busy-polling)
#   --flush-us F     reflector tcp_sink flush_us (default 50)
#   --chrt P         run origin and reflectors with SCHED_FIFO priority P (chrt -f P)
#   --out DIR        results (default target/probe/netns)
#   --sluice PATH    the sluice binary (default: $SLUICE, else target/release/sluice)
#
# Needs root (ip netns), iproute2 (ip, tc). Every name carries this run's id, so runs can
# coexist; a trap removes the namespaces (and with them the veths and the bridge) and stops the
# processes this script started, also when a run fails or is interrupted.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
reflectors="" rate="" count=50000 size=1024 shape="" threads=1 spin=0 flush=50 chrt="" via=reflector delay=0
out="target/probe/netns" sluice="${SLUICE:-$here/target/release/sluice}"
while [ $# -gt 0 ]; do
  case "$1" in
    --reflectors) reflectors=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --spin-us) spin=$2; shift 2 ;;
    --flush-us) flush=$2; shift 2 ;;
    --chrt) chrt=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sluice) sluice=$2; shift 2 ;;
    --via) via=$2; shift 2 ;;
    --delay-us) delay=$2; shift 2 ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "netns_probe.sh: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done

fail() { echo "netns_probe.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root for ip netns (run it with sudo)"
command -v ip >/dev/null || fail "needs ip (apt-get install iproute2)"
[ -z "$shape" ] || command -v tc >/dev/null || fail "needs tc for --shape (apt-get install iproute2)"
[ -x "$sluice" ] || fail "no sluice binary at $sluice (cargo build --release -p sluice, or --sluice PATH)"
case "$threads" in 1|2) ;; *) fail "--threads takes 1 or 2, not '$threads'" ;; esac
case "$via" in reflector|relay) ;; *) fail "--via takes reflector or relay, not '$via'" ;; esac
[ -z "$reflectors" ] || [ "$reflectors" -ge 1 ] 2>/dev/null || fail "--reflectors takes a number ≥ 1"
mkdir -p "$out"

# Names: 'slp' + a run id (pid and a random number), short enough for interface names.
id="$(printf '%x%03x' $$ $((RANDOM % 4096)))"
switch="slp${id}sw"
max=${reflectors:-2}
hosts=()
for i in $(seq 0 "$max"); do hosts+=("slp${id}h$i"); done
pids=()

cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for h in "${hosts[@]}"; do ip netns del "$h" 2>/dev/null || true; done
  ip netns del "$switch" 2>/dev/null || true
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The switch: a namespace holding a bridge; each host: a namespace with eth0 (10.77.0.i+1/24)
# whose peer is a port of the bridge.
ip netns add "$switch"
ip -n "$switch" link add br0 type bridge
ip -n "$switch" link set br0 up
for i in $(seq 0 "$max"); do
  h=${hosts[$i]}
  ip netns add "$h"
  ip link add "slp${id}e$i" type veth peer name "slp${id}p$i"
  ip link set "slp${id}e$i" netns "$h"
  ip link set "slp${id}p$i" netns "$switch"
  ip -n "$switch" link set "slp${id}p$i" master br0 up
  ip -n "$h" link set "slp${id}e$i" name eth0
  ip -n "$h" addr add "10.77.0.$((i + 1))/24" dev eth0
  ip -n "$h" link set eth0 up
  ip -n "$h" link set lo up
  if [ -n "$shape" ]; then
    # tbf: a token bucket at RATE; a burst of a few full frames; queued bytes beyond 50 ms wait
    # are dropped (TCP resends them), as an over-full switch port would.
    ip netns exec "$h" tc qdisc add dev eth0 root tbf rate "$shape" burst 32kbit latency 50ms
  fi
done
echo "netns_probe: $((max + 1)) hosts (${hosts[*]}) on bridge br0 in $switch${shape:+, links shaped to $shape (tbf)}"

prio=()
[ -z "$chrt" ] || prio=(chrt -f "$chrt")

# One loop: origin in host 0, reflectors in hosts 1..n, each listening on port 7000 for the
# stream and connecting to the next host; the origin listens on 7001 for its return.
one_loop() {
  local n=$1 r=$2 name=$3 label=$4 v=$5
  local i next hop
  pids=()
  for i in $(seq 1 "$n"); do
    if [ "$i" -eq "$n" ]; then next="10.77.0.1:7001"; else next="10.77.0.$((i + 2)):7000"; fi
    if [ "$v" = relay ]; then
      hop=(probe relay --delay-us "$delay")
    else
      hop=(probe reflect --threads "$threads" --spin-us "$spin" --flush-us "$flush")
    fi
    ip netns exec "${hosts[$i]}" "${prio[@]}" "$sluice" "${hop[@]}" \
      --from tcp-listen://0.0.0.0:7000 --to "tcp://$next" --timeout 30 \
      > "$out/$name.reflector$i.log" 2>&1 &
    pids+=($!)
  done
  # In the background and waited for, so that a signal reaches the trap at once.
  ip netns exec "${hosts[0]}" "${prio[@]}" "$sluice" probe origin \
    --to tcp://10.77.0.2:7000 --from tcp-listen://0.0.0.0:7001 --timeout 10 \
    --rate "$r" --count "$count" --size "$size" --hops "$n" --via "$v" \
    --label "$label" --out "$out" --name "$name" &
  pids+=($!)
  if ! wait "${pids[-1]}"; then
    for i in $(seq 1 "$n"); do sed "s/^/  reflector $i: /" "$out/$name.reflector$i.log" >&2; done
    fail "the loop through $n reflector(s) at $r failed"
  fi
  for i in $(seq 1 "$n"); do
    wait "${pids[$((i - 1))]}" || fail "reflector $i failed: $(cat "$out/$name.reflector$i.log")"
    sed -n 's/^\(reflect\|relay\): passed/  '"$v $i"': passed/p' "$out/$name.reflector$i.log"
  done
  pids=()
}

words() { if [ "$1" = full ]; then echo "full speed"; else echo "$1""bit/s"; fi; }
if [ -n "$reflectors" ]; then
  r=${rate:-70M}
  one_loop "$reflectors" "$r" "$via$reflectors-$r" "$((reflectors + 1)) namespaces, $reflectors $via(s), $(words "$r")${shape:+, tbf $shape}" "$via"
else
  files=()
  for r in ${rate:-70M full}; do
    for n in 1 2; do
      one_loop "$n" "$r" "reflector$n-$r" "$((n + 1)) namespaces, $(words "$r")${shape:+, tbf $shape}" reflector
      files+=("$out/reflector$n-$r.json")
    done
  done
  # The floor: the same loops through byte relays (a blocking read/write loop, no framing).
  for n in 1 2; do
    one_loop "$n" 70M "relay$n-70M" "$((n + 1)) namespaces, byte relays, 70Mbit/s${shape:+, tbf $shape}" relay
    files+=("$out/relay$n-70M.json")
  done
  "$sluice" probe table "${files[@]}" --csv "$out/table.csv"
fi
