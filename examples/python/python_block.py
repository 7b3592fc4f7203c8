"""A Python block in the middle of a native graph.

A 1 kHz tone from sluice's own signal source is soft-clipped by a block written in Python
(numpy's tanh over views of the queue windows, no copies), low-pass filtered by the native FIR,
and collected into a numpy array.

    pip install ./crates/python && python examples/python/python_block.py
"""

import numpy as np

import sluice


class SoftClip(sluice.Block):
    """y = tanh(drive · x) / tanh(drive): a saturating amplifier. `drive` is settable."""

    inputs = [("in", "f32")]
    outputs = [("out", "f32")]
    settable = {"drive": "how hard the signal is driven into saturation"}

    def __init__(self, drive=4.0):
        self.drive = drive

    def work(self, inputs, outputs):
        np.tanh(inputs[0] * self.drive, out=outputs[0])
        outputs[0] /= np.tanh(self.drive)


def main():
    rate = 48_000
    g = sluice.Graph()
    src = g.add("signal_source", name="tone", item="f32", frequency=1000.0, sample_rate=float(rate))
    head = g.add("head", name="head", item="f32", items=rate)  # one second
    clip = g.add(SoftClip(), name="clip")
    lp = g.add("fir", name="lp", item="f32", design="lowpass", num_taps=101, cutoff=3500 / rate)
    g.connect(src, head)
    g.connect(head, clip)
    g.connect(clip, lp)
    out = g.collect(lp)
    for node in g.run():
        print(f"{node['name']:>14}: {node['items_in']:>7} in, {node['items_out']:>7} out, "
              f"{node['work_calls']:>5} calls, busy {node['busy_s'] * 1e3:.1f} ms")
    y = out.data
    spectrum = np.abs(np.fft.rfft(y * np.hanning(len(y))))
    level = lambda f: 20 * np.log10(spectrum[int(f * len(y) / rate)] / spectrum.max())  # noqa: E731
    print(f"{len(y)} samples; 3 kHz harmonic at {level(3000):.1f} dB below the fundamental, "
          f"5 kHz (past the low-pass) at {level(5000):.1f} dB")


if __name__ == "__main__":
    main()
