"""An FM broadcast receiver: from a SigMF recording to a WAV file and a spectrum plot.

The example makes its own recording: speech from espeak-ng (a tone melody if espeak-ng is not
installed), FM-modulated at 75 kHz deviation into complex baseband at 240 kS/s with a little
noise, written as SigMF (cf32_le). sluice then receives it with native blocks:

    sigmf_source -> fm_demod -> fir (15 kHz low-pass, decimate by 5) -> wav_sink (48 kHz)

and the demodulated audio is also collected into numpy, compared with what was sent, and its
spectrum plotted with matplotlib (when installed) to fm_spectrum.png.

    python examples/python/fm_receiver.py [OUT_DIR]
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import wave

import numpy as np

import sluice

IQ_RATE = 240_000
AUDIO_RATE = 48_000
DEVIATION = 75_000.0


def speech(workdir):
    """Mono audio at 48 kHz, float in [-1, 1]: espeak-ng's voice, or a melody without it."""
    espeak = shutil.which("espeak-ng")
    if espeak:
        path = os.path.join(workdir, "speech.wav")
        subprocess.run(
            [espeak, "-w", path, "This is sluice, receiving frequency modulation from a SigMF recording."],
            check=True,
        )
        with wave.open(path) as w:
            rate = w.getframerate()
            x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64) / 32768
        t_out = np.arange(int(len(x) * AUDIO_RATE / rate)) / AUDIO_RATE
        return np.interp(t_out, np.arange(len(x)) / rate, x), "espeak-ng speech"
    t = np.arange(3 * AUDIO_RATE) / AUDIO_RATE
    f = np.select([t < 1, t < 2], [440.0, 660.0], 550.0)
    return 0.8 * np.sin(2 * np.pi * np.cumsum(f) / AUDIO_RATE), "a tone melody (espeak-ng is not installed)"


def write_sigmf(base, iq):
    iq.astype(np.complex64).tofile(base + ".sigmf-data")
    meta = {
        "global": {"core:datatype": "cf32_le", "core:sample_rate": IQ_RATE, "core:version": "1.2.0",
                   "core:description": "FM broadcast test signal made by examples/python/fm_receiver.py"},
        "captures": [{"core:sample_start": 0, "core:frequency": 98.1e6}],
        "annotations": [],
    }
    with open(base + ".sigmf-meta", "w") as f:
        json.dump(meta, f, indent=2)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        audio, what = speech(work)
    # Modulate: audio at 48 kHz, interpolated to 240 kS/s, as the phase's rate of change.
    t_iq = np.arange(len(audio) * IQ_RATE // AUDIO_RATE) / IQ_RATE
    m = np.interp(t_iq, np.arange(len(audio)) / AUDIO_RATE, audio)
    phase = 2 * np.pi * DEVIATION * np.cumsum(m) / IQ_RATE
    rng = np.random.default_rng(1)
    iq = np.exp(1j * phase) + 0.05 * (rng.standard_normal(len(m)) + 1j * rng.standard_normal(len(m)))
    base = os.path.join(out_dir, "fm_recording")
    write_sigmf(base, iq)

    wav_path = os.path.join(out_dir, "fm_audio.wav")
    g = sluice.Graph()
    src = g.add("sigmf_source", name="rec", path=base)
    demod = g.add("fm_demod", name="demod", deviation=DEVIATION, sample_rate=float(IQ_RATE))
    lp = g.add("fir", name="lp", item="f32", design="lowpass", num_taps=121,
               cutoff=15_000 / IQ_RATE, decimation=IQ_RATE // AUDIO_RATE)
    wav = g.add("wav_sink", name="wav", path=wav_path, sample_rate=AUDIO_RATE, format="i16")
    g.connect(src, demod)
    g.connect(demod, lp)
    g.connect(lp, wav)
    received = g.collect("lp.out")
    stats = g.run()
    y = received.data
    print(f"sent {what}: {len(audio)} samples; received {len(y)} samples at {AUDIO_RATE} Hz -> {wav_path}")
    for n in stats:
        print(f"  {n['name']:>12}: {n['items_out']:>8} items out, busy {n['busy_s'] * 1e3:7.1f} ms")
    # The receiver's delay is the FIR's group delay (60 taps at 240 kS/s = 12 audio samples).
    lag = np.argmax(np.correlate(y[:AUDIO_RATE], audio[:AUDIO_RATE], mode="full")) - (AUDIO_RATE - 1)
    n = min(len(y) - max(lag, 0), len(audio))
    corr = np.corrcoef(y[max(lag, 0):max(lag, 0) + n], audio[:n])[0, 1]
    print(f"  received audio vs sent: correlation {corr:.3f} at a lag of {lag} samples")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  (matplotlib is not installed: no spectrum plot)")
        return
    f = np.fft.rfftfreq(4096, 1 / AUDIO_RATE)
    frames = y[: len(y) // 4096 * 4096].reshape(-1, 4096) * np.hanning(4096)
    psd = 10 * np.log10(np.mean(np.abs(np.fft.rfft(frames, axis=1)) ** 2, axis=0) + 1e-20)
    plt.figure(figsize=(8, 4))
    plt.plot(f / 1e3, psd - psd.max())
    plt.xlabel("kHz")
    plt.ylabel("dB")
    plt.title("Demodulated FM audio (sluice)")
    plt.grid(True)
    png = os.path.join(out_dir, "fm_spectrum.png")
    plt.savefig(png, dpi=100)
    print(f"  spectrum: {png}")


if __name__ == "__main__":
    main()
