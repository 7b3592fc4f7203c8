"""The web console from Python: `Graph.start(http="127.0.0.1:0")` serves it beside the run,
prints its address and gives it as `Handle.console_url`; only loopback is accepted."""

import json
import re
import time
import urllib.request
from urllib.parse import urlsplit

import pytest

import sluice

ENDLESS = """
[[node]]
name = "src"
type = "signal_source"
params = { item = "c32", frequency = 1000.0, sample_rate = 48000 }

[[node]]
name = "pace"
type = "throttle"
params = { item = "c32", rate = 48000.0 }

[[node]]
name = "sink"
type = "null_sink"
params = { item = "c32" }

[[edge]]
from = "src.out"
to = "pace.in"

[[edge]]
from = "pace.out"
to = "sink.in"
"""


def get(base, path):
    with urllib.request.urlopen(base + path, timeout=5) as r:
        return r.status, r.read().decode()


def test_start_with_http_serves_the_console_and_prints_its_address(capfd):
    h = sluice.Graph.from_str(ENDLESS).start(http="127.0.0.1:0")
    try:
        url = h.console_url
        m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/#token=([0-9a-f]{32})", url)
        assert m and int(m.group(1)) > 0, url
        assert "sluice: console at " + url in capfd.readouterr().err
        parts = urlsplit(url)
        base = parts.scheme + "://" + parts.netloc
        deadline = time.time() + 10
        while True:
            status, body = get(base, "/api/graph")
            assert status == 200
            if json.loads(body)["edges"]:
                break
            assert time.time() < deadline, body
            time.sleep(0.02)
        assert [n["name"] for n in json.loads(body)["nodes"]] == ["src", "pace", "sink"]
        while True:
            status, text = get(base, "/metrics")
            assert status == 200
            line = next(l for l in text.splitlines() if l.startswith('sluice_node_items_out_total{node="pace"} '))
            if float(line.split()[-1]) > 0:
                break
            assert time.time() < deadline, text
            time.sleep(0.02)
        # A change needs the token, on loopback too.
        req = urllib.request.Request(base + "/api/stop", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=5)
        assert e.value.code == 401
    finally:
        h.stop()
        assert h.wait(timeout=10) is not None


def test_without_http_there_is_no_console_and_a_remote_address_is_refused():
    h = sluice.Graph.from_str(ENDLESS).start()
    assert h.console_url is None
    h.stop()
    h.wait(timeout=10)
    with pytest.raises(OSError, match="loopback only"):
        sluice.Graph.from_str(ENDLESS).start(http="0.0.0.0:0")
    with pytest.raises(ValueError, match="127.0.0.1:0"):
        sluice.Graph.from_str(ENDLESS).start(http="localhost")
