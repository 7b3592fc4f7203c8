#!/usr/bin/env python3
"""GNU Radio 3.10's radio blocks, the peers of `sluice bench radio`.

One flowgraph per case, `null_source -> head(N) -> block -> null_sink` (the channelizer feeds
one null_sink per channel), GNU Radio's default thread-per-block scheduler and buffer sizes:

  fir            filter.fir_filter_ccf(1, taps)                      (--taps real taps)
  xlating        filter.freq_xlating_fir_filter_ccf(D, taps, fc, fs) (--taps, --decimation)
  rational       filter.rational_resampler_ccf(I, D, taps)           (--taps = I x taps/phase)
  arb            pfb.arb_resampler_ccf(rate)                          (--rate)
  rotator        blocks.rotator_cc(phase_increment)
  fm             analog.quadrature_demod_cf(gain)
  channelizer    pfb.channelizer_ccf(M, taps, oversample_rate)        (--channels, --taps-file)

Taps are read from --taps-file (raw little-endian f32, as `sluice bench radio` writes them) or,
without one, made up (a windowed sinc of --taps taps): only their number matters for speed.
Runs each case `--runs` times and prints one JSON document:
{"case": ..., "items": N, "items_per_s": [input items/s, one per run], "version": "..."}.
Only tb.run() is timed (not Python start-up or flowgraph construction).

Installs nothing: without GNU Radio it says which Debian package to install and exits 2.
GNU Radio's Python modules live in Debian's python3 (/usr/bin/python3).
"""

import argparse
import json
import math
import struct
import sys
import time


def made_up_taps(n):
    """A Hann-windowed sinc low-pass of n taps (cutoff 0.1 cycles/sample)."""
    taps = []
    for k in range(n):
        t = k - (n - 1) / 2
        sinc = 0.2 if t == 0 else math.sin(2 * math.pi * 0.1 * t) / (math.pi * t)
        w = 0.5 - 0.5 * math.cos(2 * math.pi * (k + 1) / (n + 1))
        taps.append(sinc * w)
    return taps


def read_taps(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) % 4:
        raise SystemExit(f"{path}: {len(data)} bytes is not a whole number of f32 taps")
    return list(struct.unpack(f"<{len(data) // 4}f", data))


def build(args, gr, blocks, filt, analog):
    """The block under test and how many outputs it has."""
    taps = read_taps(args.taps_file) if args.taps_file else made_up_taps(args.taps)
    c = args.case
    if c == "fir":
        return filt.fir_filter_ccf(1, taps), 1
    if c == "xlating":
        return filt.freq_xlating_fir_filter_ccf(args.decimation, taps, 0.1 * 1e6, 1e6), 1
    if c == "rational":
        return filt.rational_resampler_ccf(args.interpolation, args.decimation, taps), 1
    if c == "arb":
        from gnuradio.filter import pfb
        return pfb.arb_resampler_ccf(args.rate), 1
    if c == "rotator":
        return blocks.rotator_cc(2 * math.pi * 0.0123), 1
    if c == "fm":
        return analog.quadrature_demod_cf(1.0), 1
    if c == "channelizer":
        from gnuradio.filter import pfb
        return pfb.channelizer_ccf(args.channels, taps, args.oversample), args.channels
    raise SystemExit(f"unknown case {c}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", required=True,
                        choices=["fir", "xlating", "rational", "arb", "rotator", "fm", "channelizer"])
    parser.add_argument("--items", type=int, default=20_000_000, help="input items per run")
    parser.add_argument("--runs", type=int, default=3, help="runs to time")
    parser.add_argument("--taps", type=int, default=64, help="taps when no --taps-file is given")
    parser.add_argument("--taps-file", help="raw f32 taps")
    parser.add_argument("--decimation", type=int, default=1)
    parser.add_argument("--interpolation", type=int, default=1)
    parser.add_argument("--rate", type=float, default=1.0, help="arb resampler rate")
    parser.add_argument("--channels", type=int, default=512)
    parser.add_argument("--oversample", type=float, default=1.0)
    args = parser.parse_args()
    try:
        from gnuradio import analog, blocks, gr
        from gnuradio import filter as filt
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
        block, outputs = build(args, gr, blocks, filt, analog)
        out_size = gr.sizeof_float if args.case == "fm" else gr.sizeof_gr_complex
        tb.connect(src, head, block)
        sinks = [blocks.null_sink(out_size) for _ in range(outputs)]
        for i, s in enumerate(sinks):
            tb.connect((block, i), s)
        start = time.perf_counter()
        tb.run()
        rates.append(args.items / (time.perf_counter() - start))
    print(json.dumps({
        "case": args.case,
        "items": args.items,
        "items_per_s": rates,
        "version": gr.version(),
    }))


if __name__ == "__main__":
    main()
