"""Shared helpers of the sluice package's tests."""

import numpy as np
import pytest

import sluice


def chain(*stages, source, dtype=None):
    """A graph `source -> stages... -> sink`; returns (graph, sink)."""
    g = sluice.Graph()
    prev = g.add(source if isinstance(source, sluice.ArraySource) else sluice.ArraySource(source, dtype=dtype))
    for stage in stages:
        node = g.add(stage) if not isinstance(stage, tuple) else g.add(stage[0], **stage[1])
        g.connect(prev, node)
        prev = node
    sink = g.collect(prev)
    return g, sink


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
