"""Ctrl-C: SIGINT to a child process running a graph stops it gracefully (the sink finishes
its file) and raises KeyboardInterrupt there."""

import os
import signal
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import sys
    import sluice
    g = sluice.Graph()
    src = g.add("signal_source", name="src", item="f32", frequency=440.0, amplitude=0.5)
    pace = g.add("throttle", name="pace", item="f32", rate=48000.0)
    out = g.add("wav_sink", name="out", path=sys.argv[1])
    g.connect(src, pace)
    g.connect(pace, out)
    print("running", flush=True)
    try:
        g.run()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(0)
    print("ended without a signal", flush=True)
    sys.exit(3)
    """
)


def test_sigint_stops_a_running_graph_gracefully(tmp_path):
    wav = tmp_path / "out.wav"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(wav)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "running"
        import time

        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    assert out.strip() == "interrupted"
    # The sink finished its file: a valid WAV with the samples written so far.
    with open(wav, "rb") as f:
        head = f.read(12)
    assert head[:4] in (b"RIFF", b"RF64") and head[8:12] == b"WAVE"
    assert os.path.getsize(wav) > 1000
