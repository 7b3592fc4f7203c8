"""Graphs from files, text and code: running, statistics, run-time changes, and one
exception type per kind of mistake, worded as the graph loader words it."""

import threading
import time

import numpy as np
import pytest

import sluice

GOOD = """
[[node]]
name = "src"
type = "signal_source"
params = { item = "f32", waveform = "noise", amplitude = 1.0, seed = 1 }

[[node]]
name = "head"
type = "head"
params = { item = "f32", items = 10000 }

[[node]]
name = "sink"
type = "null_sink"
params = { item = "f32" }

[[edge]]
from = "src.out"
to = "head.in"

[[edge]]
from = "head.out"
to = "sink.in"
"""


def stats_of(stats, name):
    return next(s for s in stats if s["name"] == name)


def test_blocks_describes_every_block_type_from_its_declaration():
    blocks = sluice.blocks()
    names = [b["name"] for b in blocks]
    assert len(names) == len(set(names)) > 40
    fir = next(b for b in blocks if b["name"] == "fir")
    params = {p["name"] for p in fir["params"]}
    assert {"item", "design", "num_taps", "cutoff"} <= params
    assert fir["help"]
    assert "cutoff" in sluice.describe("fir")
    with pytest.raises(sluice.UnknownBlockError):
        sluice.describe("fri")


def test_a_graph_from_text_runs_and_reports_statistics():
    stats = sluice.Graph.from_str(GOOD).run()
    assert stats_of(stats, "sink")["items_in"] == 10000
    assert stats_of(stats, "head")["work_calls"] > 0


def test_set_overrides_parameters_as_the_command_line_does(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text(GOOD)
    stats = sluice.Graph.from_file(path, set={"head.items": 500}).run()
    assert stats_of(stats, "sink")["items_in"] == 500
    with pytest.raises(sluice.GraphFileError) as e:
        sluice.Graph.from_file(path, set={"nope.items": 5})
    assert "the graph has no node named 'nope'" in str(e.value)


def test_a_bad_file_lists_every_mistake_with_line_and_column(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text(GOOD.replace("items = 10000", "itmes = 10000").replace('"null_sink"', '"nul_sink"'))
    with pytest.raises(sluice.GraphFileError) as e:
        sluice.Graph.from_file(path)
    lines = str(e.value).splitlines()
    assert lines[0] == f"{path}:14:8: node 'sink': unknown block type 'nul_sink' (did you mean null_sink?)"
    assert any("node 'head': unknown parameter 'itmes'" in line for line in lines)
    assert [m["line"] for m in e.value.errors][:1] == [14]
    assert e.value.errors[0]["node"] == "sink"
    with pytest.raises(sluice.GraphFileError) as e:
        sluice.Graph.from_file(tmp_path / "missing.toml")
    assert "cannot read the graph file" in str(e.value)


def in_code_and_in_file(node_params):
    """The in-code error and the file error for one node of type multiply_const."""
    with pytest.raises(sluice.SluiceError) as in_code:
        sluice.Graph().add("multiply_const", name="m", **node_params)
    inline = ", ".join(f"{k} = {v!r}".replace("'", '"') for k, v in node_params.items())
    text = f'[[node]]\nname = "m"\ntype = "multiply_const"\nparams = {{ {inline} }}\n'
    with pytest.raises(sluice.GraphFileError) as in_file:
        sluice.Graph.from_str(text, origin="g.toml")
    return in_code.value, str(in_file.value).splitlines()[0]


def test_building_in_code_says_what_a_graph_file_says():
    cases = [
        ({"item": "f32", "gian": 2.0}, "gian"),        # unknown parameter
        ({"item": "f64"}, "item"),                     # not one of the choices
        ({"item": "f32", "gain": "loud"}, "gain"),     # wrong kind
    ]
    for params, param in cases:
        err, file_line = in_code_and_in_file(params)
        assert isinstance(err, sluice.ParameterError)
        assert err.param == param and err.node == "m"
        # The file's line is "g.toml:LINE:COL: " and then the very same words.
        assert file_line.endswith(": " + str(err)), (file_line, str(err))


def test_each_kind_of_mistake_has_its_exception():
    g = sluice.Graph()
    with pytest.raises(sluice.UnknownBlockError) as e:
        g.add("fri", name="lp")
    assert str(e.value) == "node 'lp': unknown block type 'fri' (did you mean fir?)"
    src = g.add("signal_source", name="src", item="f32")
    c = g.add("copy", name="c", item="c32")
    m = g.add("multiply_const", name="m", item="f32")
    with pytest.raises(sluice.ItemTypeError) as e:
        g.connect(src, c)
    assert str(e.value) == "edge src.out -> c.in: cannot connect src.out (f32) to c.in (c32): the item types differ"
    with pytest.raises(sluice.PortError) as e:
        g.connect("src.out", "m.input")
    assert str(e.value) == "edge src.out -> m.input: node 'm' has no input port 'input' (it has: in)"
    assert e.value.node == "m" and e.value.port == "input"
    with pytest.raises(sluice.EdgeError):
        g.connect(src, m, capacity=0)
    g.connect(src, m)
    with pytest.raises(sluice.EdgeError) as e:
        g.connect("src.out", "m.in")
    assert e.value.node == "m"
    with pytest.raises(sluice.GraphError):
        g.add("copy", name="c", item="f32")  # a name used twice
    with pytest.raises(sluice.GraphError) as e:
        g.connect("nowhere.out", "m.in")
    assert "no node named 'nowhere'" in str(e.value)
    with pytest.raises(sluice.GraphError) as e:
        g.run()  # c and m are not connected onwards
    assert "is not connected" in str(e.value)
    with pytest.raises(sluice.GraphError) as e:
        g.run()
    assert "already been run" in str(e.value)


def test_a_running_graph_is_stopped_changed_and_watched():
    def ones():
        while True:
            yield np.ones(1024, dtype=np.float32)

    g = sluice.Graph()
    src = g.add(sluice.ArraySource(ones(), dtype="f32"), name="src")
    m = g.add("multiply_const", name="m", item="f32", gain=1.0)
    g.connect(src, m)
    sink = g.collect(m)
    h = g.start()
    assert h.running
    deadline = time.time() + 10
    while len(sink) < 10000 and time.time() < deadline:
        time.sleep(0.01)
    offset = h.set("m.gain", 3.0)
    with pytest.raises(sluice.ControlError) as e:
        h.set("m.gian", 2.0)
    assert "node 'm' has no run-time parameter 'gian' (it has: gain)" in str(e.value)
    while len(sink) < offset + 1000 and time.time() < deadline:
        time.sleep(0.01)
    assert stats_of(h.stats(), "m")["items_out"] > 0
    assert h.progress is None  # an endless source: no bounded node
    h.stop()
    stats = h.wait(timeout=10)
    assert stats is not None and not h.running
    y = sink.data
    assert offset > 0 and len(y) > offset
    assert np.all(y[:offset] == 1.0) and np.all(y[offset:] == 3.0)
    assert (offset, "set:gain", 3.0) in sink.tags


def test_wait_with_a_timeout_returns_none_while_running_and_progress_counts_up():
    g = sluice.Graph.from_str(GOOD.replace("items = 10000", "items = 200_000_000"))
    h = g.start()
    assert h.wait(timeout=0.05) is None
    deadline = time.time() + 10
    while (h.progress or 0) <= 0 and time.time() < deadline:
        time.sleep(0.01)
    assert 0 < h.progress <= 1
    h.stop()
    h.wait(timeout=10)
