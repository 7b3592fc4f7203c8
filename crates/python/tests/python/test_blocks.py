"""Python blocks: every rate kind with tags, several blocks in one graph, views of queue
memory, settable parameters, and the errors (an exception in work, a kept output view)."""

import numpy as np
import pytest

import sluice
from conftest import chain


class Double(sluice.Block):
    inputs = [("in", "f32")]
    outputs = [("out", "f32")]

    def work(self, inputs, outputs):
        outputs[0][:] = inputs[0] * 2


class MeanOf4(sluice.Block):
    inputs = [("in", "f32")]
    outputs = [("out", "f32")]
    rate = ("decimate", 4)

    def work(self, inputs, outputs):
        outputs[0][:] = inputs[0].reshape(-1, 4).mean(axis=1)


class Repeat3(sluice.Block):
    inputs = [("in", "c32")]
    outputs = [("out", "c32")]
    rate = ("interpolate", 3)

    def work(self, inputs, outputs):
        outputs[0][:] = np.repeat(inputs[0], 3)


class KeepEven(sluice.Block):
    """General: keeps the items whose value is even, tagging each kept run's start."""

    inputs = [("in", "i16")]
    outputs = [("out", "i16")]
    rate = "general"

    def work(self, inputs, outputs):
        x, y = inputs[0], outputs[0]
        n = min(len(x), len(y))
        kept = x[:n][x[:n] % 2 == 0]
        y[: len(kept)] = kept
        if len(kept):
            self.add_tag(0, 0, "kept", len(kept))
        return n, len(kept)


class Ramp(sluice.Block):
    """General, no inputs: 0, 1, 2, ... up to `total`, then DONE."""

    inputs = []
    outputs = [("out", "f32")]
    rate = "general"

    def __init__(self, total):
        self.total, self.next = total, 0

    def work(self, inputs, outputs):
        if self.next >= self.total:
            return sluice.DONE
        y = outputs[0]
        n = min(len(y), self.total - self.next)
        y[:n] = np.arange(self.next, self.next + n)
        self.next += n
        return [], [n]


def test_sync_block_with_tags(rng):
    x = rng.standard_normal(100_000).astype(np.float32)
    tags = [(5, "a", 1), (77777, "b", "x")]
    g, sink = chain(Double(), source=sluice.ArraySource(x, tags=tags))
    g.run()
    assert np.array_equal(sink.data, x * 2)
    assert sorted(sink.tags) == sorted(tags)


def test_decimating_block_with_tags(rng):
    x = rng.standard_normal(40_003).astype(np.float32)
    g, sink = chain(MeanOf4(), source=sluice.ArraySource(x, tags=[(9, "t", 1.0)]))
    g.run()
    ref = x[:40_000].reshape(-1, 4).mean(axis=1)
    assert np.allclose(sink.data, ref, rtol=0, atol=1e-6)
    assert sink.tags == [(2, "t", 1.0)]  # input 9 -> output 9 / 4


def test_interpolating_block_with_tags(rng):
    x = (rng.standard_normal(5000) + 1j * rng.standard_normal(5000)).astype(np.complex64)
    g, sink = chain(Repeat3(), source=sluice.ArraySource(x, tags=[(5, "t", 2)]))
    g.run()
    assert np.array_equal(sink.data, np.repeat(x, 3))
    assert sink.tags == [(15, "t", 2)]


def test_general_block_says_what_it_consumed_and_produced(rng):
    x = rng.integers(-1000, 1000, size=50_000).astype(np.int16)
    g, sink = chain(KeepEven(), source=x)
    g.run()
    assert np.array_equal(sink.data, x[x % 2 == 0])
    # Each call tags the first item it produced with how many it kept: they add up.
    assert sum(v for _, k, v in sink.tags if k == "kept") == len(sink.data)


def test_a_python_source_ends_with_done_and_several_python_blocks_run_together():
    g = sluice.Graph()
    ramp = g.add(Ramp(100_000), name="ramp")
    d1 = g.add(Double(), name="d1")
    d2 = g.add(Double(), name="d2")
    g.connect(ramp, d1)
    g.connect(d1, d2)
    sink = g.collect(d2)
    g.run()
    assert np.array_equal(sink.data, np.arange(100_000, dtype=np.float32) * 4)


def test_python_block_between_native_blocks(rng):
    x = rng.standard_normal(20_000).astype(np.float32)
    g, sink = chain(("multiply_const", {"item": "f32", "gain": 0.5}), Double(), ("copy", {"item": "f32"}), source=x)
    g.run()
    assert np.array_equal(sink.data, x)


def queue_memory(array):
    """The QueueMemory at the root of a view's bases."""
    base = array.base
    while not isinstance(base, sluice.QueueMemory):
        base = base.base
    return base


def test_work_gets_views_of_queue_memory():
    seen = []

    class Check(sluice.Block):
        items_per_call = 1000

        def work(self, inputs, outputs):
            for a in (inputs[0], outputs[0]):
                start, end = queue_memory(a).queue
                address = a.__array_interface__["data"][0]
                seen.append(start <= address and address + a.nbytes <= end and not a.flags.owndata)
            seen.append(not inputs[0].flags.writeable and outputs[0].flags.writeable)
            seen.append(len(inputs[0]) <= 1000)
            outputs[0][:] = inputs[0]

    g, sink = chain(Check(), source=np.arange(10_000, dtype=np.float32))
    g.run()
    assert seen and all(seen)
    assert np.array_equal(sink.data, np.arange(10_000, dtype=np.float32))


def test_vector_ports_are_two_dimensional(rng):
    class RowSum(sluice.Block):
        inputs = [("in", "f32", 8)]
        outputs = [("out", "f32")]

        def work(self, inputs, outputs):
            assert inputs[0].shape[1] == 8
            outputs[0][:] = inputs[0].sum(axis=1)

    x = rng.standard_normal((500, 8)).astype(np.float32)
    g, sink = chain(RowSum(), source=sluice.ArraySource(x, vlen=8))
    g.run()
    assert np.allclose(sink.data, x.sum(axis=1), atol=1e-5)


def test_an_exception_in_work_comes_back_with_its_traceback_and_node():
    class Bad(sluice.Block):
        def work(self, inputs, outputs):
            if len(inputs[0]) > 0:
                return 1 / 0

    g, _ = chain((Bad()), source=np.ones(1000, np.float32))
    with pytest.raises(sluice.NodeError) as e:
        g.run()
    text = str(e.value)
    assert e.value.node == "bad"
    assert "node 'bad'" in text and "ZeroDivisionError" in text and "in work" in text
    assert isinstance(e.value.__cause__, ZeroDivisionError)


@pytest.mark.parametrize("keep", [lambda out: out, lambda out: out[:10], lambda out: [out[::2]]])
def test_keeping_an_output_view_is_an_error_naming_the_node(keep):
    class Keeper(sluice.Block):
        def work(self, inputs, outputs):
            outputs[0][:] = inputs[0]
            self.kept = keep(outputs[0])  # the view, a slice of it, a list holding one

    g = sluice.Graph()
    src = g.add(sluice.ArraySource(np.ones(1000, np.float32)))
    k = g.add(Keeper(), name="keeper")
    g.connect(src, k)
    g.collect(k)
    with pytest.raises(sluice.NodeError) as e:
        g.run()
    assert e.value.node == "keeper"
    assert "a view of output 'out' is still referenced" in str(e.value)


def test_settable_parameters_change_while_running():
    class Gain(sluice.Block):
        settable = {"gain": "the factor"}
        items_per_call = 256
        gain = 1.0

        def work(self, inputs, outputs):
            outputs[0][:] = inputs[0] * self.gain

    def ones():
        while True:
            yield np.ones(256, np.float32)

    g = sluice.Graph()
    src = g.add(sluice.ArraySource(ones(), dtype="f32"))
    gain = g.add(Gain(), name="gain")
    g.connect(src, gain)
    sink = g.collect(gain)
    h = g.start()
    offset = h.set("gain.gain", 4.0)
    import time

    deadline = time.time() + 10
    while len(sink) < offset + 1000 and time.time() < deadline:
        time.sleep(0.01)
    h.stop()
    h.wait(timeout=10)
    y = sink.data
    assert np.all(y[:offset] == 1.0) and np.all(y[offset:] == 4.0) and len(y) > offset
