#!/usr/bin/env python3
"""Compare sluice's convolution engine with zita-convolver, side by side, in one run.

Runs `sluice bench convolve --json` and `scripts/zita/build/zita_bench` (same measurements,
same method: see crates/cli/src/bench/convolve.rs and scripts/zita/zita_bench.cpp) on the same
IR lengths, block size, rate and channel count, alternating which engine goes first per IR
length so slow drifts of the machine hit both alike, and prints a table of ratios:

  cpu/ch      offline process CPU time as % of one core per channel (lower is better),
              median of --repeat runs; speedup = zita / sluice
  max ch      most independent channels with no late callback over --seconds, median of
              --max-repeat searches per engine (alternating); ratio = sluice / zita
  p99         real-time callback time, 99th percentile, as % of the period (at --channels,
              and at --heavy-channels with both engines run back to back)

Installs nothing: if zita-convolver or FFTW's headers are missing it says which Debian packages
to install and exits with status 1. Uses only the Python standard library.

Example (the default run takes a few minutes per engine):
    scripts/compare_zita.py
    scripts/compare_zita.py --quick
    scripts/compare_zita.py --ir-lens 16384,524288 --seconds 5 --channels 8
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZITA_DIR = os.path.join(ROOT, "scripts", "zita")
ZITA_BIN = os.path.join(ZITA_DIR, "build", "zita_bench")


def fail(msg):
    print(f"compare_zita: {msg}", file=sys.stderr)
    sys.exit(1)


def check_packages():
    missing = []
    for pkg, header in (("libzita-convolver-dev", "/usr/include/zita-convolver.h"),
                        ("libfftw3-dev", "/usr/include/fftw3.h")):
        if not os.path.exists(header):
            missing.append(pkg)
    if shutil.which("g++") is None:
        missing.append("g++")
    if missing:
        fail(f"missing Debian package(s): {' '.join(missing)}\n"
             f"compare_zita: install them with: apt-get install libzita-convolver-dev libfftw3-dev g++")


def build(args):
    r = subprocess.run([os.path.join(ZITA_DIR, "build.sh")], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"building the zita harness failed:\n{r.stderr}")
    if args.sluice:
        return args.sluice
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    print("compare_zita: building sluice (cargo build --release -p sluice) ...", file=sys.stderr)
    r = subprocess.run(["cargo", "build", "--release", "-p", "sluice"], cwd=ROOT)
    if r.returncode != 0:
        fail("cargo build --release -p sluice failed")
    return os.path.join(target, "release", "sluice")


def run_json(cmd):
    """Runs cmd (progress goes to our stderr) and returns its JSON lines."""
    print("compare_zita: $ " + " ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        fail(f"{cmd[0]} exited with status {r.returncode}")
    rows = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    return rows


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def median(values):
    if not values:
        return None
    v = sorted(values)
    m = len(v) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ir-lens", default="16384,65536,262144,524288")
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--rate", type=int, default=48000)
    ap.add_argument("--channels", type=int, default=8, help="channels for offline and realtime")
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds per point / per trial")
    ap.add_argument("--modes", default="offline,realtime,max-channels")
    ap.add_argument("--max-channels-limit", type=int, default=1024)
    ap.add_argument("--quick", action="store_true", help="IR lengths 2^14, 2^16 and 1 s per point")
    ap.add_argument("--no-fifo", action="store_true", help="do not ask for SCHED_FIFO")
    ap.add_argument("--attempts", type=int, default=3,
                    help="a max-channels count passes if one of this many runs has no late callback")
    ap.add_argument("--strict", action="store_true",
                    help="count callbacks woken after their deadline (host stalls) as late too")
    ap.add_argument("--heavy-channels", type=int, default=256,
                    help="also run realtime at this many channels, both engines back to back "
                         "(callback p99 and late count under load; 0 = skip)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="offline CPU/channel: median of this many runs per engine (alternating)")
    ap.add_argument("--max-repeat", type=int, default=3,
                    help="max channels: median of this many searches per engine (alternating); "
                         "one search on this shared machine can be off by 2x")
    ap.add_argument("--sluice", help="path of an already built sluice binary")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "bench", "convolve"))
    args = ap.parse_args()
    if args.quick:
        if args.ir_lens == ap.get_default("ir_lens"):
            args.ir_lens = "16384,65536"
        if args.seconds == ap.get_default("seconds"):
            args.seconds = 1.0

    check_packages()
    sluice = build(args)
    common = ["--modes", args.modes, "--block", str(args.block), "--rate", str(args.rate),
              "--channels", str(args.channels), "--seconds", str(args.seconds),
              "--max-channels-limit", str(args.max_channels_limit), "--attempts", str(args.attempts)]
    if args.no_fifo:
        common.append("--no-fifo")
    if args.strict:
        common.append("--strict")

    results = {}  # (engine, mode, ir_len) -> row
    offline_cpu = {}  # (engine, ir_len) -> [cpu % per channel of each offline run]
    max_runs = {}  # (engine, ir_len) -> [max channels of each search]
    lens = [int(x) for x in args.ir_lens.split(",") if x]
    for i, n in enumerate(lens):
        runs = [("sluice", [sluice, "bench", "convolve", "--json", "--out", os.path.join(args.out, "sluice"),
                            "--ir-lens", str(n)] + common),
                ("zita", [ZITA_BIN, "--ir-lens", str(n)] + common)]
        if i % 2 == 1:
            runs.reverse()
        for engine, cmd in runs:
            for row in run_json(cmd):
                results[(engine, row["mode"], row["ir_len"])] = row
                if row["mode"] == "offline":
                    offline_cpu.setdefault((engine, n), []).append(row["cpu_pct_per_channel"])
                if row["mode"] == "max-channels":
                    max_runs.setdefault((engine, n), []).append(row["max_channels"])
        # Realtime under load, both engines back to back: the headroom figure that is least
        # sensitive to the machine's other tenants (p99, not a single late callback).
        if args.heavy_channels > 0:
            for engine, cmd in runs:
                cmd = list(cmd)
                cmd[cmd.index("--modes") + 1] = "realtime"
                cmd[cmd.index("--channels") + 1] = str(args.heavy_channels)
                for row in run_json(cmd):
                    results[(engine, "heavy", n)] = row
        # Extra offline rounds (cheap): the CPU figure is the median, the machine is shared.
        if "offline" in args.modes.split(","):
            for _ in range(max(0, args.repeat - 1)):
                for engine, cmd in runs:
                    cmd = list(cmd)
                    cmd[cmd.index("--modes") + 1] = "offline"
                    for row in run_json(cmd):
                        offline_cpu.setdefault((engine, n), []).append(row["cpu_pct_per_channel"])

        # Extra max-channels searches, the engine order flipped each round.
        if "max-channels" in args.modes.split(","):
            for r in range(max(0, args.max_repeat - 1)):
                for engine, cmd in (runs if r % 2 else runs[::-1]):
                    cmd = list(cmd)
                    cmd[cmd.index("--modes") + 1] = "max-channels"
                    for row in run_json(cmd):
                        max_runs.setdefault((engine, n), []).append(row["max_channels"])

    def get(engine, mode, n, key):
        return results.get((engine, mode, n), {}).get(key)

    cols = ["ir_len", "sluice_cpu%/ch", "zita_cpu%/ch", "cpu_speedup(zita/sluice)",
            "sluice_max_ch", "zita_max_ch", "max_ch_ratio(sluice/zita)",
            "sluice_max_runs", "zita_max_runs",
            "sluice_rt_p99%", "zita_rt_p99%", "sluice_rt_late", "zita_rt_late",
            "sluice_rt_cpu%/ch", "zita_rt_cpu%/ch",
            f"sluice_p99%@{args.heavy_channels}ch", f"zita_p99%@{args.heavy_channels}ch",
            f"sluice_late@{args.heavy_channels}ch", f"zita_late@{args.heavy_channels}ch",
            "sluice_fifo", "zita_fifo"]
    table = []
    for n in lens:
        s_cpu = median(offline_cpu.get(("sluice", n)))
        z_cpu = median(offline_cpu.get(("zita", n)))
        s_max = median(max_runs.get(("sluice", n)))
        z_max = median(max_runs.get(("zita", n)))

        def runs_text(engine):
            v = max_runs.get((engine, n))
            return " ".join(str(x) for x in v) if v else None

        def fifo(engine):
            granted = [get(engine, m, n, "realtime_granted") for m in ("offline", "realtime", "max-channels")]
            driver = [get(engine, m, n, "driver_fifo") for m in ("realtime", "max-channels")]
            granted = [g for g in granted if g is not None]
            driver = [d for d in driver if d is not None]
            w = "workers yes" if granted and all(granted) else ("workers NO" if granted else "workers -")
            d = "driver yes" if driver and all(driver) else ("driver NO" if driver else "driver -")
            return f"{w}/{d}"

        table.append([n, s_cpu, z_cpu, ratio(z_cpu, s_cpu), s_max, z_max, ratio(s_max, z_max),
                      runs_text("sluice"), runs_text("zita"),
                      get("sluice", "realtime", n, "p99_pct"), get("zita", "realtime", n, "p99_pct"),
                      get("sluice", "realtime", n, "late"), get("zita", "realtime", n, "late"),
                      get("sluice", "realtime", n, "cpu_pct_per_channel"),
                      get("zita", "realtime", n, "cpu_pct_per_channel"),
                      get("sluice", "heavy", n, "p99_pct"), get("zita", "heavy", n, "p99_pct"),
                      get("sluice", "heavy", n, "late"), get("zita", "heavy", n, "late"),
                      fifo("sluice"), fifo("zita")])

    def digits(j):
        return 0 if j in (4, 5) else 2 if j in (3, 6, 9, 10, 15, 16) else 3

    cells = [[fmt(v, digits(j)) for j, v in enumerate(row)] for row in table]
    widths = [max(len(c), *(len(r[j]) for r in cells)) for j, c in enumerate(cols)]
    print(f"\nsluice vs zita-convolver: block {args.block}, {args.rate} Hz, {args.channels} channels "
          f"(offline/realtime), {args.seconds} s per point")
    print("  ".join(c.rjust(w) for c, w in zip(cols, widths)))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "compare_zita.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        w.writerows(table)
    with open(os.path.join(args.out, "compare_zita.json"), "w") as f:
        json.dump({"args": vars(args), "rows": [dict(zip(cols, r)) for r in table],
                   "offline_cpu_runs": {f"{e} {n}": v for (e, n), v in offline_cpu.items()},
                   "raw": [dict(r, engine=k[0]) for k, r in results.items()]}, f, indent=1)
    print(f"\nresults written to {args.out}/compare_zita.{{csv,json}}")

    # The bar (issue 38): CPU per channel at most a third of zita's, max channels at least
    # twice zita's, at every IR length.
    missed, unmeasured = [], []
    for row in table:
        n, speed, mratio = row[0], row[3], row[6]
        if speed is None or mratio is None:
            unmeasured.append(str(n))
        if speed is not None and speed < 3.0:
            missed.append(f"ir {n}: CPU/channel {speed:.2f}x less than zita's (bar 3x)")
        if mratio is not None and mratio < 2.0:
            missed.append(f"ir {n}: max channels {mratio:.2f}x zita's (bar 2x)")
    if missed:
        print("bar missed: " + "; ".join(missed))
    elif unmeasured:
        print("bar not fully measured (need offline and max-channels) at ir " + ", ".join(unmeasured))
    else:
        print("bar met: CPU/channel <= 1/3 of zita's and max channels >= 2x zita's at every measured length")

if __name__ == "__main__":
    main()
