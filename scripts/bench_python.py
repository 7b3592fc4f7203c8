#!/usr/bin/env python3
"""The Python package against its peers, in one run on one machine (medians of --repeat runs):

1. A chain  source -> Python block (out[:] = in * 2) -> sink  in sluice (all nodes on one
   thread, and a thread per node) and in GNU Radio (a Python gr.sync_block, a thread per
   block), at the same items per call on both sides (4,096 and 65,536: sluice's set by the
   block's items_per_call, GNU Radio's by set_output_multiple and set_max_noutput_items).
2. The same chains with the native multiply_const instead of the Python block, in each
   framework. Two measures of a Python block's overhead per call, the same on both sides:
   "over native" = (Python chain − native chain) / calls, what the Python block costs beyond
   the native block doing the same (a difference of two timings: noisy where the calls are
   long); and "around work" = Python chain / calls − numpy's own `out[:] = in * 2` on the same
   arrays, everything the framework spends per call around the user's work (source, sink,
   scheduling, the call into Python, the views).
3. sluice.convolve against scipy.signal.oaconvolve and fftconvolve: 10 s of stereo at 48 kHz
   with a 2^18-tap IR per channel, all float32.

    target/python-venv/bin/python scripts/bench_python.py [--items 20000000] [--repeat 3] [--out DIR]

Needs the sluice package installed in that Python (cargo test -p sluice-python does it, or
`pip install ./crates/python`), and GNU Radio, numpy and scipy (scripts/setup.sh).
"""

import argparse
import csv
import json
import os
import platform
import statistics
import time

import numpy as np

import sluice


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def numpy_cost(k, repeat=2000):
    """Seconds numpy takes for out[:] = in * 2 on k float32 items (the work both sides do)."""
    x = np.ones(k, np.float32)
    y = np.empty_like(x)
    n = max(20, repeat * 4096 // k)
    t = time.perf_counter()
    for _ in range(n):
        y[:] = x * 2
    return (time.perf_counter() - t) / n


def sluice_chain(total, k, python_block, scheduler):
    class Double(sluice.Block):
        inputs = [("in", "f32")]
        outputs = [("out", "f32")]
        items_per_call = k

        def work(self, inputs, outputs):
            outputs[0][:] = inputs[0] * 2

    g = sluice.Graph()
    src = g.add("null_source", name="src", item="f32")
    head = g.add("head", name="head", item="f32", items=total)
    mid = g.add(Double(), name="double") if python_block else g.add("multiply_const", name="double", item="f32", gain=2.0)
    sink = g.add("null_sink", name="sink", item="f32")
    # Queues of 4 calls' worth: every call can get its k items.
    g.connect(src, head, capacity=4 * k)
    g.connect(head, mid, capacity=4 * k)
    g.connect(mid, sink, capacity=4 * k)
    stats = g.run(scheduler=scheduler)
    return next(s for s in stats if s["name"] == "double")["work_calls"]


def gnuradio_chain(total, k, python_block=True):
    from gnuradio import blocks, gr

    class Double(gr.sync_block):
        def __init__(self):
            gr.sync_block.__init__(self, name="double", in_sig=[np.float32], out_sig=[np.float32])
            self.set_output_multiple(k)
            self.set_max_noutput_items(k)
            self.calls = 0

        def work(self, input_items, output_items):
            output_items[0][:] = input_items[0] * 2
            self.calls += 1
            return len(output_items[0])

    tb = gr.top_block()
    src = blocks.null_source(gr.sizeof_float)
    head = blocks.head(gr.sizeof_float, total)
    mid = Double() if python_block else blocks.multiply_const_ff(2.0)
    if not python_block:
        mid.set_output_multiple(k)
        mid.set_max_noutput_items(k)
    sink = blocks.null_sink(gr.sizeof_float)
    for b in (src, head, mid):
        b.set_min_output_buffer(4 * k * 4)
    tb.connect(src, head, mid, sink)
    tb.run()
    # The native block counts no calls: at exactly k items per call, total / k.
    return mid.calls if python_block else total // k


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=20_000_000, help="items through each chain")
    p.add_argument("--repeat", type=int, default=3, help="runs of each measurement (median)")
    p.add_argument("--out", default="target/bench-python", help="directory for CSV and JSON")
    p.add_argument("--skip-convolve", action="store_true")
    p.add_argument("--skip-chains", action="store_true", help="only the convolution")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    print(f"{args.items} float32 items per chain, median of {args.repeat}\n")
    print(f"{'chain':<44} {'k/call':>7} {'Mitems/s':>9} {'calls':>6} {'µs/call':>8} "
          f"{'over native µs':>15} {'around work µs':>15}")
    for k in (() if args.skip_chains else (4096, 65536)):
        np_cost = numpy_cost(k)
        runs = [
            ("sluice, 1 thread", "Python block", lambda: sluice_chain(args.items, k, True, 1)),
            ("sluice, 1 thread", "native multiply_const", lambda: sluice_chain(args.items, k, False, 1)),
            ("sluice, thread per node", "Python block", lambda: sluice_chain(args.items, k, True, "thread_per_node")),
            ("sluice, thread per node", "native multiply_const",
             lambda: sluice_chain(args.items, k, False, "thread_per_node")),
            ("GNU Radio", "Python gr.sync_block", lambda: gnuradio_chain(args.items, k, True)),
            ("GNU Radio", "native multiply_const_ff", lambda: gnuradio_chain(args.items, k, False)),
        ]
        measured = {}
        for side, block, run in runs:
            calls = [0]

            def once():
                calls[0] = run()

            wall = median_time(once, args.repeat)
            measured[(side, block)] = (wall, calls[0])
        overheads, around = {}, {}
        for side, block, _ in runs:
            wall, calls = measured[(side, block)]
            overhead = around_work = float("nan")
            if "Python" in block:
                native = next(w for (s2, b2), (w, _) in measured.items() if s2 == side and "native" in b2)
                # What the Python block costs per call beyond the native block doing the same.
                overhead = (wall - native) / calls
                overheads[side] = overhead
                # What the framework spends per call around the user's numpy work.
                around_work = wall / calls - np_cost
                around[side] = around_work
            label = f"{side}: {block}"
            rows.append({"chain": label, "items_per_call": k, "items": args.items, "seconds": wall,
                         "items_per_s": args.items / wall, "calls": calls,
                         "us_per_call": wall / calls * 1e6, "overhead_us_per_call": overhead * 1e6,
                         "around_work_us_per_call": around_work * 1e6, "numpy_us_per_call": np_cost * 1e6})
            print(f"{label:<44} {k:>7} {args.items / wall / 1e6:>9.1f} {calls:>6} "
                  f"{wall / calls * 1e6:>8.1f} {overhead * 1e6:>15.1f} {around_work * 1e6:>15.1f}")
        for side in ("sluice, 1 thread", "sluice, thread per node"):
            ratio = overheads["GNU Radio"] / overheads[side]
            ratio_around = around["GNU Radio"] / around[side]
            print(f"  Python-block overhead per call, GNU Radio / {side:<24} {k:>6}: "
                  f"over native {ratio:6.1f}×, around work {ratio_around:5.1f}×")
        print(f"  (target ≥ 5×; numpy's own `out[:] = in * 2` is {np_cost * 1e6:.1f} µs of each call)\n")
    if not args.skip_convolve:
        from scipy import signal

        rate, seconds, taps = 48_000, 10, 1 << 18
        rng = np.random.default_rng(3)
        x = rng.standard_normal((2, rate * seconds)).astype(np.float32)
        ir = (rng.standard_normal((2, taps)) * np.exp(-np.arange(taps) / (taps / 8))).astype(np.float32)
        print(f"convolution: 2 × {rate * seconds} samples, 2^18-tap IR per channel, float32")
        ref = None
        timings = {}
        for label, fn in [
            ("sluice.convolve", lambda: sluice.convolve(x, ir)),
            ("sluice.convolve, 1 thread", lambda: sluice.convolve(x, ir, threads=1)),
            ("scipy.signal.oaconvolve", lambda: signal.oaconvolve(x, ir, axes=1)),
            ("scipy.signal.fftconvolve", lambda: signal.fftconvolve(x, ir, axes=1)),
        ]:
            out = [None]

            def once():
                out[0] = fn()

            timings[label] = median_time(once, args.repeat)
            if ref is None:
                ref = out[0]
            else:
                err = np.max(np.abs(out[0] - ref)) / np.max(np.abs(out[0]))
                assert err < 1e-4, f"{label} disagrees with sluice.convolve: relative error {err:.2e}"
            rows.append({"chain": label, "items_per_call": 0, "items": x.size, "seconds": timings[label],
                         "items_per_s": x.size / timings[label], "calls": 1, "us_per_call": 0,
                         "overhead_us_per_call": 0, "around_work_us_per_call": 0, "numpy_us_per_call": 0})
        for label, t in timings.items():
            ratio = t / timings["sluice.convolve"]
            print(f"  {label:<28} {t * 1e3:9.0f} ms   {ratio:5.2f}× sluice's time")
        print("  (target: scipy ≥ 3× sluice's time)")
    with open(os.path.join(args.out, "bench_python.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(args.out, "bench_python.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(f"\nwrote {args.out}/bench_python.csv and .json")


if __name__ == "__main__":
    main()
