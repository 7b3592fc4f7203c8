#!/usr/bin/env python3
"""The seed's 12 AMPS channels: GNU Radio 3.10 against sluice, same receiver, same band file.

Both read the band written by `sluice amps generate` (cf32_le, 20 M samples/s, 875 MHz) and run
shift -10 kHz -> rational resampler 96/125 -> polyphase channelizer (512 channels, 2x
oversampled, 18 taps per branch) -> FM demodulation (gain 60000/(2 pi 12000)) -> de-emphasis
(75 us) -> audio low-pass (127 taps, /5), for 12 channels (1, 29, 57, ..., 309):

  GNU Radio: blocks.rotator_cc, filter.rational_resampler_ccf, pfb.channelizer_ccf (its other
             500 outputs into null sinks), per channel analog.quadrature_demod_cf,
             analog.fm_deemph, filter.fir_filter_fff, null sink.
  sluice:    `sluice run examples/amps_receiver.toml` with --set for the 12 channels (its
             squelch too, and it writes 12 WAV files: a little more work than GNU Radio's
             null sinks).

Usage (GNU Radio lives in Debian's python3):
  sluice amps generate amps_band --seconds 2
  /usr/bin/python3 scripts/gr_amps.py --band amps_band --sluice target/release/sluice
Prints each wall time (median of --runs) and the ratio. Installs nothing: without GNU Radio it
names the Debian package and exits 2.
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHANNELS = [1 + 28 * k for k in range(12)]
M, D, TAPS_PER_BRANCH = 512, 256, 18
RESAMPLING = (96, 125)


def bin_of(n):
    return (n + M - 167) % M


def kaiser_lowpass(n, cutoff, beta, gain=1.0):
    """A Kaiser-windowed sinc of n taps, cutoff in cycles/sample, unit DC gain times gain."""
    def i0(x):
        s, t, k = 1.0, 1.0, 1
        while t > 1e-12 * s:
            t *= (x / (2 * k)) ** 2
            s += t
            k += 1
        return s
    h = []
    for k in range(n):
        t = k - (n - 1) / 2
        sinc = 2 * cutoff if t == 0 else math.sin(2 * math.pi * cutoff * t) / (math.pi * t)
        r = 2 * k / (n - 1) - 1
        h.append(sinc * i0(beta * math.sqrt(max(0.0, 1 - r * r))) / i0(beta))
    s = sum(h)
    return [v * gain / s for v in h]


def run_gnuradio(data_path, runs):
    try:
        from gnuradio import gr, blocks, filter as grfilter, analog
        from gnuradio.filter import pfb
    except ImportError:
        print("GNU Radio 3.10 is missing: apt-get install gnuradio (Debian's python3)", file=sys.stderr)
        sys.exit(2)
    i, d = RESAMPLING
    resampler_taps = kaiser_lowpass(i * 24, 0.4 / max(i, d), 8.0, i)
    proto = kaiser_lowpass(M * TAPS_PER_BRANCH, 0.5 / M, 9.0)
    audio = kaiser_lowpass(127, 0.06, 7.0)
    times = []
    for _ in range(runs):
        tb = gr.top_block()
        src = blocks.file_source(gr.sizeof_gr_complex, data_path, False)
        rot = blocks.rotator_cc(-2 * math.pi * 10e3 / 20e6)
        rs = grfilter.rational_resampler_ccf(i, d, resampler_taps)
        bank = pfb.channelizer_ccf(M, proto, 2.0)
        tb.connect(src, rot, rs, bank)
        wanted = {bin_of(n) for n in CHANNELS}
        for k in range(M):
            if k in wanted:
                demod = analog.quadrature_demod_cf(60000 / (2 * math.pi * 12000))
                de = analog.fm_deemph(60000, 75e-6)
                lp = grfilter.fir_filter_fff(5, audio)
                tb.connect((bank, k), demod, de, lp, blocks.null_sink(gr.sizeof_float))
            else:
                tb.connect((bank, k), blocks.null_sink(gr.sizeof_gr_complex))
        start = time.perf_counter()
        tb.run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), gr.version()


def run_sluice(sluice, band, runs):
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "amps_receiver.toml")
    bins = "[" + ", ".join(str(bin_of(n)) for n in CHANNELS) + "]"
    labels = "[" + ", ".join(str(n) for n in CHANNELS) + "]"
    times = []
    with tempfile.TemporaryDirectory() as out:
        args = [sluice, "run", "-q", example, "--set", f'capture.path="{os.path.abspath(band)}"',
                "--set", f"bank.outputs={bins}", "--set", f"save.labels={labels}",
                "--set", f'save.path="{out}/amps_ch{{}}.wav"']
        for node in ["squelch", "demod", "deemph", "audio", "save"]:
            args += ["--set", f"{node}.channels={len(CHANNELS)}"]
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(args, check=True)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--band", default="amps_band", help="the SigMF recording's name")
    ap.add_argument("--sluice", default="target/release/sluice")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    data = a.band + ".sigmf-data"
    seconds = os.path.getsize(data) / 8 / 20e6
    # Into the page cache.
    with open(data, "rb") as f:
        while f.read(1 << 22):
            pass
    gr_wall, version = run_gnuradio(data, a.runs)
    sl_wall = run_sluice(a.sluice, a.band, a.runs)
    print(f"# the seed's 12 AMPS channels, {seconds:.2f} s of band at 20 M samples/s, median of {a.runs}")
    print(f"GNU Radio {version}: {gr_wall:.3f} s ({seconds / gr_wall:.2f}x real time)")
    print(f"sluice run:         {sl_wall:.3f} s ({seconds / sl_wall:.2f}x real time)")
    print(f"ratio (GNU Radio time / sluice time): {gr_wall / sl_wall:.2f}")


if __name__ == "__main__":
    main()
