#!/usr/bin/env python3
"""Throughput of GNU Radio 3.10's filter.fft_filter_ccc, for comparison with sluice.

Flowgraph per filter length: vector_source_c (repeating, 64 Ki random samples) -> head(N)
-> fft_filter_ccc(decimation 1, taps, nthreads=1) -> null_sink. The wall time of tb.run()
gives samples/s. GNU Radio's thread-per-block scheduler runs the four blocks in their own
threads; the filter itself uses one thread (nthreads=1), like the sluice side. With --cpu K
all of them are pinned to CPU K, so the flowgraph gets one core, as the single-threaded sluice
pipeline does.

Taps (same formula as `sluice bench overlap-save --compare-gnuradio`, or --taps-file):
    h[k] = (0.5 - 0.5*cos(2*pi*(k+1)/(L+1))) * exp(2j*pi*0.05*k) / L,  k = 0..L-1

Prints one JSON document on stdout. Installs nothing: without GNU Radio it says how to get it
and exits 2.
"""

import argparse
import json
import math
import sys
import time


def taps_for(length):
    return [
        (0.5 - 0.5 * math.cos(2 * math.pi * (k + 1) / (length + 1)))
        * complex(math.cos(2 * math.pi * 0.05 * k), math.sin(2 * math.pi * 0.05 * k))
        / length
        for k in range(length)
    ]


def load_taps(path):
    taps = []
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.replace(",", " ").split()
            try:
                values = [float(x) for x in fields]
            except ValueError:
                sys.exit(f"{path}:{line_no}: not a number: {line!r}")
            if len(values) == 1:
                taps.append(complex(values[0], 0.0))
            elif len(values) == 2:
                taps.append(complex(values[0], values[1]))
            else:
                sys.exit(f"{path}:{line_no}: expected 1 or 2 values")
    return taps


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--taps", type=int, nargs="+", default=[1024, 64], help="filter lengths")
    p.add_argument("--taps-file", action="append", default=[], help="taps file(s) instead of --taps")
    p.add_argument("--samples", type=int, default=50_000_000, help="complex samples per run")
    p.add_argument("--trials", type=int, default=3, help="runs per filter; the median is reported")
    p.add_argument(
        "--cpu",
        type=int,
        default=None,
        help="pin the whole flowgraph (all its threads) to this one CPU, for a single-core comparison",
    )
    args = p.parse_args()
    if args.cpu is not None:
        import os

        # Threads created later (GNU Radio's block threads) inherit the affinity.
        os.sched_setaffinity(0, {args.cpu})

    try:
        from gnuradio import blocks, filter as grfilter, gr
    except ImportError as e:
        # Debian's gnuradio lives in the system interpreter's dist-packages; a pyenv/venv
        # python3 first on PATH cannot see it. Re-run once under /usr/bin/python3.
        import os

        system_python = "/usr/bin/python3"
        if os.path.exists(system_python) and os.path.realpath(sys.executable) != os.path.realpath(system_python) and not os.environ.get("GR_FFT_FILTER_REEXEC"):
            print(f"gr_fft_filter.py: gnuradio not importable from {sys.executable}; retrying with {system_python}", file=sys.stderr)
            os.environ["GR_FFT_FILTER_REEXEC"] = "1"
            os.execv(system_python, [system_python] + sys.argv)
        print(f"gr_fft_filter.py: GNU Radio is not importable ({e}).", file=sys.stderr)
        print("Install it with: apt-get install gnuradio", file=sys.stderr)
        sys.exit(2)

    import random

    rng = random.Random(1)
    source_data = [complex(rng.uniform(-1, 1), rng.uniform(-1, 1)) for _ in range(65536)]

    filters = [(f"file:{path}", load_taps(path)) for path in args.taps_file]
    if not filters:
        filters = [(f"formula:{n}", taps_for(n)) for n in args.taps]

    results = []
    for name, taps in filters:
        times = []
        for _ in range(args.trials):
            tb = gr.top_block()
            src = blocks.vector_source_c(source_data, True)
            head = blocks.head(gr.sizeof_gr_complex, args.samples)
            filt = grfilter.fft_filter_ccc(1, taps, 1)
            sink = blocks.null_sink(gr.sizeof_gr_complex)
            tb.connect(src, head, filt, sink)
            t0 = time.perf_counter()
            tb.run()
            times.append(time.perf_counter() - t0)
        times.sort()
        median = times[len(times) // 2]
        results.append(
            {
                "filter": name,
                "taps": len(taps),
                "samples": args.samples,
                "seconds_median": median,
                "seconds_all": times,
                "samples_per_sec": args.samples / median,
            }
        )
    doc = {
        "peer": "gnuradio filter.fft_filter_ccc",
        "gnuradio_version": gr.version(),
        "nthreads": 1,
        "cpu_affinity": sorted(__import__("os").sched_getaffinity(0)),
        "results": results,
    }
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
