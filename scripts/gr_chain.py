#!/usr/bin/env python3
"""GNU Radio 3.10's copy chain, the peer of `sluice bench chain`.

Flowgraph: null_source(gr_complex) -> head(N) -> k x copy -> null_sink, GNU Radio's default
thread-per-block scheduler and buffer sizes. Runs it `--runs` times and prints one JSON
document: {"items": N, "stages": k, "items_per_s": [one figure per run], "version": "..."}.
Only tb.run() is timed (not Python start-up or flowgraph construction).

Installs nothing: without GNU Radio it says which Debian package to install and exits 2.
GNU Radio's Python modules live in Debian's python3 (/usr/bin/python3), not in other
interpreters.
"""

import argparse
import json
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=50_000_000, help="items per run")
    parser.add_argument("--stages", type=int, default=1, help="copy blocks in the chain")
    parser.add_argument("--runs", type=int, default=5, help="runs to time")
    args = parser.parse_args()
    try:
        from gnuradio import blocks, gr
    except ImportError as e:
        print(
            f"GNU Radio is not importable ({e}); install it with `apt-get install gnuradio` "
            "and run this script with /usr/bin/python3",
            file=sys.stderr,
        )
        sys.exit(2)

    rates = []
    for _ in range(args.runs):
        tb = gr.top_block()
        src = blocks.null_source(gr.sizeof_gr_complex)
        head = blocks.head(gr.sizeof_gr_complex, args.items)
        chain = [blocks.copy(gr.sizeof_gr_complex) for _ in range(args.stages)]
        sink = blocks.null_sink(gr.sizeof_gr_complex)
        tb.connect(src, head, *chain, sink)
        start = time.perf_counter()
        tb.run()
        rates.append(args.items / (time.perf_counter() - start))
    print(json.dumps({
        "items": args.items,
        "stages": args.stages,
        "items_per_s": rates,
        "version": gr.version(),
    }))


if __name__ == "__main__":
    main()
