"""numpy in and out: bit-for-bit round trips for every dtype, vectors as a second axis,
iterators, tags, and streaming reads that are views of queue memory (no copy)."""

import gc

import numpy as np
import pytest

import sluice
from conftest import chain


def special_values(dtype, rng, n=5000):
    if dtype == np.complex64:
        x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
        raw = x.view(np.uint32)
        raw[:4] = [0x7FC00001, 0x80000000, 0x7F800000, 0x00000001]  # NaN payload, -0, inf, subnormal
        return x
    if dtype == np.float32:
        x = rng.standard_normal(n).astype(np.float32)
        x.view(np.uint32)[:4] = [0x7FC00001, 0x80000000, 0xFF800000, 0x00000001]
        return x
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=n, endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.float32, np.int16, np.uint8])
def test_every_dtype_round_trips_bit_for_bit(dtype, rng):
    x = special_values(dtype, rng)
    g, sink = chain(source=x)
    g.run()
    y = sink.data
    assert y.dtype == dtype and y.shape == x.shape
    assert y.tobytes() == x.tobytes()


@pytest.mark.parametrize("dtype", [np.complex64, np.float32])
def test_round_trip_through_a_native_block(dtype, rng):
    x = special_values(dtype, rng)
    item = "c32" if dtype == np.complex64 else "f32"
    g, sink = chain(("copy", {"item": item}), source=x)
    g.run()
    assert sink.data.tobytes() == x.tobytes()


def test_vectors_are_a_second_axis(rng):
    x = rng.standard_normal((300, 4)).astype(np.float32)
    g, sink = chain(source=sluice.ArraySource(x, vlen=4))
    g.run()
    assert sink.data.shape == (300, 4)
    assert np.array_equal(sink.data, x)


def test_an_iterator_of_arrays_is_one_stream(rng):
    chunks = [rng.standard_normal(n).astype(np.float32) for n in (1, 0, 4097, 70000, 3)]
    g, sink = chain(source=sluice.ArraySource(iter(chunks), dtype="float32"))
    g.run()
    assert sink.data.tobytes() == np.concatenate(chunks).tobytes()


def test_tags_travel_with_the_items(rng):
    x = rng.standard_normal(10000).astype(np.float32)
    tags = [(0, "start", "here"), (4321, "rx_freq", 1.5e6), (9999, "n", 7)]
    g, sink = chain(("copy", {"item": "f32"}), source=sluice.ArraySource(x, tags=tags))
    g.run()
    assert sorted(sink.tags) == sorted(tags)


def test_an_unsupported_dtype_is_refused():
    with pytest.raises(sluice.ItemTypeError) as e:
        sluice.ArraySource(np.zeros(4, dtype=np.float64))
    assert "float64" in str(e.value)


def test_reads_are_views_of_queue_memory(rng):
    x = rng.standard_normal(100_000).astype(np.float32)
    g = sluice.Graph()
    src = g.add(sluice.ArraySource(x, tags=[(5000, "mark", 1)]), name="src")
    c = g.add("copy", name="c", item="f32")
    g.connect(src, c)
    h = g.start(read=["c.out"])
    got, seen_tags, kept = [], [], None
    for chunk, tags in h.read("c.out", items=4096):
        base = chunk.base
        assert isinstance(base, sluice.QueueMemory)
        address = chunk.__array_interface__["data"][0]
        start, end = base.queue
        # A view: the window lies inside the queue's mapping, not in a copy.
        assert address == base.address and start <= address and address + chunk.nbytes <= end
        assert not chunk.flags.writeable and not chunk.flags.owndata
        assert len(chunk) <= 4096
        got.append(chunk.copy())
        seen_tags += tags
        kept = chunk  # kept past its iteration: still mapped (the base holds the mapping)
    h.wait(timeout=10)
    assert np.concatenate(got).tobytes() == x.tobytes()
    assert seen_tags == [(5000, "mark", 1)]
    del h, g
    gc.collect()
    # The graph has ended and its queues are gone; the view's base keeps the memory mapped.
    float(kept.sum())  # reading it must not fault
    assert kept.base.address == kept.__array_interface__["data"][0]


def test_reading_an_untapped_output_says_how_to_tap_it():
    g = sluice.Graph()
    src = g.add(sluice.ArraySource(np.zeros(10, np.float32)), name="src")
    g.collect(src)
    h = g.start()
    with pytest.raises(sluice.PortError) as e:
        h.read("src.out")
    assert 'start(read=["src.out"])' in str(e.value)
    h.wait(timeout=10)
