"""Convolution reverb of a WAV file with sluice's partitioned convolution engine.

    python examples/python/reverb.py [IN.wav] [OUT.wav] [--seconds 3]

Without IN.wav it makes a dry test signal (clicks and a short melody). The impulse response
is synthetic: exponentially decaying stereo noise (a diffuse hall, RT60 = --seconds). The
result is normalised to -1 dBFS and written as 16-bit PCM.
"""

import argparse
import time
import wave

import numpy as np

import sluice


def read_wav(path):
    with wave.open(path) as w:
        rate, channels, width = w.getframerate(), w.getnchannels(), w.getsampwidth()
        raw = w.readframes(w.getnframes())
    if width != 2:
        raise SystemExit(f"{path}: only 16-bit PCM WAV files are read here (this one has {8 * width}-bit samples)")
    x = np.frombuffer(raw, dtype="<i2").reshape(-1, channels).T.astype(np.float32) / 32768
    return x, rate


def write_wav(path, y, rate):
    y = y / np.max(np.abs(y)) * 10 ** (-1 / 20)
    pcm = np.round(y.T * 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(y.shape[0])
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def dry_signal(rate):
    t = np.arange(int(2.5 * rate)) / rate
    notes = [440.0, 554.4, 659.3, 880.0]
    x = np.zeros_like(t)
    for i, f in enumerate(notes):
        seg = (t >= 0.5 * i) & (t < 0.5 * i + 0.3)
        x[seg] += 0.5 * np.sin(2 * np.pi * f * t[seg]) * np.hanning(seg.sum())
    x[:: rate // 2] += 0.9  # clicks: the reverb's impulse response made audible
    return np.stack([x, x]).astype(np.float32)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", nargs="?", help="16-bit PCM WAV file (default: a made-up dry signal)")
    p.add_argument("output", nargs="?", default="reverb.wav")
    p.add_argument("--seconds", type=float, default=3.0, help="reverberation time RT60 in seconds")
    args = p.parse_args()
    if args.input:
        x, rate = read_wav(args.input)
    else:
        rate = 48_000
        x = dry_signal(rate)
    rng = np.random.default_rng(7)
    n = int(args.seconds * rate)
    decay = np.exp(-6.9 * np.arange(n) / n)  # -60 dB at the end
    ir = (rng.standard_normal((x.shape[0], n)) * decay).astype(np.float32)
    started = time.perf_counter()
    wet = sluice.convolve(x, ir if x.shape[0] > 1 else ir[:1])
    took = time.perf_counter() - started
    mix = 0.7 * np.pad(x, ((0, 0), (0, wet.shape[1] - x.shape[1]))) + 0.3 * wet / np.max(np.abs(wet))
    write_wav(args.output, mix, rate)
    print(f"{x.shape[0]} channels × {x.shape[1]} samples with a {n}-tap IR: convolved in "
          f"{took * 1e3:.0f} ms; wrote {args.output}")


if __name__ == "__main__":
    main()
