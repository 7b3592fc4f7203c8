"""Rates follow the stream in graphs built in code as in graph files: a parameter that follows
the stream (a filter's `sample_rate`) takes the rate of its source through every rate change,
and a rate given against the stream's, or inputs at different rates, are refused in the graph
loader's words, naming both nodes and both rates."""

import numpy as np
import pytest

import sluice

SOURCE = dict(item="f32", waveform="noise", amplitude=1.0, seed=7, sample_rate=48000)


def file_output(text, port):
    """The output `port` of the graph file `text`, run to its end."""
    g = sluice.Graph.from_str(text)
    out = g.collect(port)
    g.run()
    return out.data


def test_a_filter_designed_in_hz_takes_its_sources_rate_as_in_a_file():
    g = sluice.Graph()
    src = g.add("signal_source", name="src", **SOURCE)
    head = g.add("head", name="head", item="f32", items=20000)
    lp = g.add("fir", name="lp", item="f32", design="lowpass", num_taps=63, cutoff_hz=3000.0)
    g.connect(src, head)
    g.connect(head, lp)
    out = g.collect(lp)
    g.run()
    text = """
connect = ["src -> head -> lp -> snk"]

[[node]]
name = "src"
type = "signal_source"
params = { item = "f32", waveform = "noise", amplitude = 1.0, seed = 7, sample_rate = 48000 }

[[node]]
name = "head"
type = "head"
params = { item = "f32", items = 20000 }

[[node]]
name = "lp"
type = "fir"
params = { item = "f32", design = "lowpass", num_taps = 63, cutoff_hz = 3000.0 }

[[node]]
name = "snk"
type = "null_sink"
params = { item = "f32" }
"""
    expected = file_output(text, "lp.out")
    assert len(out.data) == 20000
    assert out.data.tobytes() == expected.tobytes()
    # The design is the normalised one at the stream's rate: 3 kHz of 48 kHz.
    normalised = file_output(text.replace("cutoff_hz = 3000.0", "cutoff = 0.0625"), "lp.out")
    assert out.data.tobytes() == normalised.tobytes()


def test_a_node_that_needs_the_rate_is_built_when_a_connect_brings_it_through_a_rate_change():
    g = sluice.Graph()
    src = g.add("signal_source", name="src", item="c32", waveform="noise", amplitude=1.0, seed=3,
                sample_rate=480000)
    head = g.add("head", name="head", item="c32", items=48000)
    dec = g.add("fir", name="dec", item="c32", design="lowpass", num_taps=63, cutoff=0.05,
                decimation=10)
    # A rotator cannot be built without its stream's rate: it waits for the connect that
    # brings it, and its edges wait with it (this one is given before the rate is known).
    rot = g.add("rotator", name="rot", frequency=1000.0)
    snk = g.add("null_sink", name="snk", item="c32")
    g.connect(rot, snk)
    g.connect(src, head)
    g.connect(head, dec)
    g.connect(dec, rot)
    out = g.collect(rot)
    g.run()
    text = """
connect = ["src -> head -> dec -> rot -> snk"]

[[node]]
name = "src"
type = "signal_source"
params = { item = "c32", waveform = "noise", amplitude = 1.0, seed = 3, sample_rate = 480000 }

[[node]]
name = "head"
type = "head"
params = { item = "c32", items = 48000 }

[[node]]
name = "dec"
type = "fir"
params = { item = "c32", design = "lowpass", num_taps = 63, cutoff = 0.05, decimation = 10 }

[[node]]
name = "rot"
type = "rotator"
params = { frequency = 1000.0 }

[[node]]
name = "snk"
type = "null_sink"
params = { item = "c32" }
"""
    expected = file_output(text, "rot.out")
    assert len(out.data) == 4800
    assert out.data.tobytes() == expected.tobytes()
    # The rate after the decimation is 48 kHz: the rotator given it runs the same.
    given = file_output(text.replace("frequency = 1000.0", "frequency = 1000.0, sample_rate = 48000"),
                        "rot.out")
    assert out.data.tobytes() == given.tobytes()


def test_a_given_rate_that_disagrees_names_both_nodes_and_both_rates():
    g = sluice.Graph()
    src = g.add("signal_source", name="src", item="c32", sample_rate=480000)
    dec = g.add("fir", name="dec", item="c32", design="lowpass", num_taps=63, cutoff=0.05,
                decimation=10)
    rot = g.add("rotator", name="rot", frequency=1000.0, sample_rate=44100)
    g.connect(src, dec)
    with pytest.raises(sluice.ParameterError) as e:
        g.connect(dec, rot)
    assert str(e.value) == (
        "node 'rot': parameter 'sample_rate' = 44.1 kHz disagrees with the stream's rate, "
        "48 kHz (set by 'dec'): leave it out to follow the stream"
    )
    assert e.value.node == "rot"
    assert e.value.param == "sample_rate"
    # The file says the same, with its lines.
    with pytest.raises(sluice.GraphFileError) as f:
        sluice.Graph.from_str("""
connect = ["src -> dec -> rot"]

[[node]]
name = "src"
type = "signal_source"
params = { item = "c32", sample_rate = 480000 }

[[node]]
name = "dec"
type = "fir"
params = { item = "c32", design = "lowpass", num_taps = 63, cutoff = 0.05, decimation = 10 }

[[node]]
name = "rot"
type = "rotator"
params = { frequency = 1000.0, sample_rate = 44100 }
""")
    assert f.value.errors[0]["message"] == str(e.value).replace("'dec'", "'dec', line 10")


def test_inputs_at_two_rates_are_refused():
    g = sluice.Graph()
    a = g.add("signal_source", name="a", item="f32", sample_rate=48000)
    b = g.add("signal_source", name="b", item="f32", sample_rate=44100)
    g.add("add", name="sum", item="f32")
    g.connect(a, "sum.a")
    with pytest.raises(sluice.GraphError) as e:
        g.connect(b, "sum.b")
    assert str(e.value) == (
        "node 'sum': its inputs run at different rates: 48 kHz (from 'a') and 44.1 kHz (from 'b')"
    )
    assert e.value.node == "sum"


def test_rates_stop_at_python_nodes_and_a_rate_nothing_gives_must_be_given():
    x = np.ones(1000, dtype=np.complex64)
    g = sluice.Graph()
    src = g.add(sluice.ArraySource(x))
    rot = g.add("rotator", name="rot", frequency=10.0)
    g.connect(src, rot)
    with pytest.raises(sluice.ParameterError) as e:
        g.collect(rot)
    assert str(e.value) == (
        "node 'rot': parameter 'sample_rate' is required here: the stream's rate is not known "
        "before the graph runs (no node upstream declares it), so give it"
    )
    g.add("null_sink", name="snk", item="c32")
    g.connect(rot, "snk")
    with pytest.raises(sluice.ParameterError, match="node 'rot': parameter 'sample_rate' is required here"):
        g.run()
    # Given, the rate is the stream's from that node on.
    g = sluice.Graph()
    src = g.add(sluice.ArraySource(x))
    rot = g.add("rotator", name="rot", frequency=0.0, sample_rate=1000.0)
    g.connect(src, rot)
    out = g.collect(rot)
    g.run()
    assert np.allclose(out.data, x)


def test_bad_parameters_are_still_refused_at_add():
    g = sluice.Graph()
    with pytest.raises(sluice.ParameterError) as e:
        g.add("fir", name="lp", item="f32", design="lowpass", num_taps=63, cutof_hz=3000.0)
    assert "node 'lp': unknown parameter 'cutof_hz'" in str(e.value)
    with pytest.raises(sluice.UnknownBlockError):
        g.add("rotatr", name="rot", frequency=1.0)
