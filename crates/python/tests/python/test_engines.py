"""The engines alone: convolve and Convolver against scipy (and numpy), firwin against scipy's
firwin. Tolerances are stated with each comparison (the engine computes in float32)."""

import numpy as np
import pytest
from scipy import signal

import sluice


def rel_err(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def test_convolve_matches_scipy_on_several_channels(rng):
    x = rng.standard_normal((2, 48_000)).astype(np.float32)
    ir = (rng.standard_normal(20_000) * np.exp(-np.arange(20_000) / 4000)).astype(np.float32)
    y = sluice.convolve(x, ir)
    ref = signal.fftconvolve(x.astype(np.float64), ir[None, :].astype(np.float64), axes=1)
    assert y.dtype == np.float32 and y.shape == ref.shape == (2, 48_000 + 20_000 - 1)
    assert rel_err(y, ref) < 1e-5  # float32 FFTs: a few ulps of the peak


def test_convolve_takes_one_ir_per_channel(rng):
    x = rng.standard_normal((2, 5000)).astype(np.float32)
    irs = rng.standard_normal((2, 700)).astype(np.float32)
    y = sluice.convolve(x, irs)
    for c in range(2):
        assert rel_err(y[c], np.convolve(x[c], irs[c])) < 1e-5


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", [(1000, 31), (31, 1000), (64, 64)])
def test_convolve_modes_match_scipy(rng, mode, n, m):
    x = rng.standard_normal(n).astype(np.float32)
    h = rng.standard_normal(m).astype(np.float32)
    y = sluice.convolve(x, h, mode=mode)
    ref = signal.convolve(x.astype(np.float64), h.astype(np.float64), mode=mode, method="direct")
    assert y.shape == ref.shape
    assert rel_err(y, ref) < 1e-5


def test_streaming_convolver_equals_the_whole_convolution(rng):
    x = rng.standard_normal(30_000).astype(np.float32)
    ir = rng.standard_normal(5000).astype(np.float32)
    conv = sluice.Convolver(ir, block=256)
    out, at = [], 0
    for size in rng.integers(1, 3000, size=100):
        if at >= len(x):
            break
        chunk = x[at : at + size]
        y = conv.process(chunk)
        assert at + len(chunk) - 256 <= sum(map(len, out)) + len(y) <= at + len(chunk)  # a block behind at most
        out.append(y)
        at += len(chunk)
    out.append(conv.finish())
    y = np.concatenate(out)
    ref = np.convolve(x[:at].astype(np.float64), ir.astype(np.float64))
    assert y.shape == ref.shape
    assert rel_err(y, ref) < 1e-5


@pytest.mark.parametrize(
    "args,kwargs",
    [
        ((63, 0.2), {}),
        ((101, 4000.0), {"fs": 48000.0}),
        ((64, 0.3), {"window": "blackman"}),
        ((127, 0.1), {"window": ("kaiser", 8.6)}),
        ((129, [0.1, 0.3]), {"pass_zero": False}),
        ((80, [3000.0, 9000.0]), {"pass_zero": False, "fs": 44100.0, "window": "blackman"}),
    ],
)
def test_firwin_matches_scipy(args, kwargs):
    taps = sluice.firwin(*args, **kwargs)
    ref = signal.firwin(*args, **kwargs)
    assert taps.dtype == np.float32 and taps.shape == ref.shape
    assert np.max(np.abs(taps - ref)) < 1e-6  # float32 rounding of the same design


def test_firwin_refuses_what_it_does_not_design():
    with pytest.raises(ValueError):
        sluice.firwin(63, 0.2, pass_zero=False)  # a high-pass
    with pytest.raises(ValueError):
        sluice.firwin(63, 0.2, window="hann")
