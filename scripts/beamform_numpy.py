#!/usr/bin/env python3
"""numpy/scipy peer of `sluice bench beamform`: the same beams on the same data.

Reads from --dir (written by the bench): x.c64 (antennas x samples, complex64, row per
antenna), w.c64 (beams x antennas), g.c64 (beams x antennas x 16 fractional-delay taps with the
weights folded in), s.i64 (beams x antennas window offsets). Phase steering is one matrix
product Y = W @ X (BLAS cgemm); true-time delay is, per beam and antenna, a 16-tap complex FIR
(scipy.signal.lfilter over the antenna's window) summed over the antennas. Prints JSON with
the seconds per run of each and the BLAS numpy ran (library, version, kernel architecture,
threads, as threadpoolctl reports them; a note instead where threadpoolctl is missing), and writes the first 4096 items of every beam (ygemm.c64,
yttd.c64) so the bench can check both sides agree.
"""
import argparse
import json
import time

import numpy as np
import scipy.signal

try:
    import threadpoolctl
except ImportError:
    threadpoolctl = None

ap = argparse.ArgumentParser()
ap.add_argument("--dir", required=True)
ap.add_argument("--antennas", type=int, required=True)
ap.add_argument("--beams", type=int, required=True)
ap.add_argument("--samples", type=int, required=True)
ap.add_argument("--ttd-samples", type=int, required=True)
ap.add_argument("--runs", type=int, default=5)
a = ap.parse_args()
d = a.dir
x = np.fromfile(f"{d}/x.c64", dtype=np.complex64).reshape(a.antennas, a.samples)
w = np.fromfile(f"{d}/w.c64", dtype=np.complex64).reshape(a.beams, a.antennas)
g = np.fromfile(f"{d}/g.c64", dtype=np.complex64).reshape(a.beams, a.antennas, 16)
s = np.fromfile(f"{d}/s.i64", dtype=np.int64).reshape(a.beams, a.antennas)

gemm = []
for _ in range(a.runs):
    t0 = time.perf_counter()
    y = w @ x
    gemm.append(time.perf_counter() - t0)
y[:, :4096].astype(np.complex64).tofile(f"{d}/ygemm.c64")
del y

m = a.ttd_samples
ttd = []
for _ in range(a.runs):
    t0 = time.perf_counter()
    yt = np.zeros((a.beams, m), dtype=np.complex64)
    for b in range(a.beams):
        for k in range(a.antennas):
            # out[j] = sum_q g[q] x[j + s + q]: a FIR with taps g reversed, 15 items of warm-up.
            seg = x[k, s[b, k]:s[b, k] + m + 15]
            yt[b] += scipy.signal.lfilter(g[b, k, ::-1], [1.0], seg)[15:]
    ttd.append(time.perf_counter() - t0)
yt[:, :4096].astype(np.complex64).tofile(f"{d}/yttd.c64")
# Asked after the product, so that the BLAS library is loaded and its threads started.
if threadpoolctl is None:
    blas, blas_note = None, "threadpoolctl not installed (apt-get install python3-threadpoolctl)"
else:
    blas = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
    blas_note = None if blas else "threadpoolctl found no BLAS library loaded"
print(json.dumps({"gemm_s": gemm, "ttd_s": ttd, "numpy": np.__version__, "scipy": scipy.__version__,
                  "blas": blas, "blas_note": blas_note}))
