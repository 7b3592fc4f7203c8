"""No leak: building (and running) a graph a thousand times keeps the process's memory
bounded."""

import numpy as np

import sluice


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def build_and_run():
    g = sluice.Graph()
    src = g.add(sluice.ArraySource(np.ones(1000, np.float32)), name="src")
    m = g.add("multiply_const", name="m", item="f32", gain=2.0)
    g.connect(src, m)
    sink = g.collect(m)
    g.run(scheduler=1)
    assert len(sink) == 1000


def test_a_thousand_graph_builds_do_not_leak():
    for _ in range(100):  # warm up: allocator pools, the registry, numpy's caches
        build_and_run()
    before = rss_bytes()
    for _ in range(1000):
        build_and_run()
    grown = rss_bytes() - before
    # Each graph maps 2 × 256 KiB of queue and makes threads: a leak of either would grow
    # by hundreds of MiB over 1000 runs.
    assert grown < 32 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 1000 graphs"
