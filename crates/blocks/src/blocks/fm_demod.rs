//! FM quadrature demodulator block: one channel, or many channels as vector items.

use num_complex::Complex32;
use sluice_kernels::FmDemod;
use sluice_runtime::{FixedRate, InputRate, NodeError, Ports};

/// `out = gain · arg(x[n] · conj(x[n − 1]))` per channel (GNU Radio's `quadrature_demod_cf`);
/// with `channels` > 1 the ports carry vectors of `channels` samples (one per channel, as a
/// channelizer's vector output delivers them) and each channel is demodulated against its own
/// previous sample, all in one node. Add it as `Rated::new(FmDemodulator::new(gain, n)?)`.
#[derive(Debug)]
pub struct FmDemodulator {
    kernel: FmDemod,
}

impl FmDemodulator {
    /// A demodulator with `gain` (radians per sample → output; GNU Radio's gain for peak
    /// deviation `Δf` at rate `fs` is `fs / (2π·Δf)`) over `channels` channels.
    pub fn new(gain: f32, channels: usize) -> Result<Self, NodeError> {
        Ok(FmDemodulator {
            kernel: FmDemod::new(gain, channels).map_err(NodeError::from_error)?,
        })
    }
}

impl FixedRate<1, 1> for FmDemodulator {
    type In = Complex32;
    type Out = f32;

    fn ports(&self) -> Ports {
        let c = self.kernel.channels();
        let mut ports = Ports::new();
        ports.add_input_vectors::<Complex32>("in", c, 0);
        ports.add_output_vectors::<f32>("out", c, 0);
        ports
    }

    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(self.kernel.channels())]
    }

    fn output_rates(&self) -> [usize; 1] {
        [self.kernel.channels()]
    }

    fn fire(
        &mut self,
        _: usize,
        [x]: [&[Complex32]; 1],
        [y]: [&mut [f32]; 1],
    ) -> Result<(), NodeError> {
        self.kernel.process(x, y);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{VectorSink, VectorSource};
    use sluice_runtime::{Graph, Rated, RunOptions};
    use std::f64::consts::TAU;

    /// Three FM channels, each carrying its own tone, interleaved as vectors through one node
    /// in a threaded graph: each channel's output is its own tone (times the gain).
    #[test]
    fn three_interleaved_fm_channels_demodulate_to_their_own_tones() {
        let (channels, frames, rate, deviation) = (3, 4000, 48_000.0, 5_000.0);
        let tones = [440.0, 1000.0, 2500.0];
        let mut phase = [0.0f64; 3];
        let mut x = Vec::with_capacity(channels * frames);
        for n in 0..frames {
            for c in 0..channels {
                let m = (TAU * tones[c] * n as f64 / rate).sin();
                phase[c] += TAU * deviation * m / rate;
                x.push(Complex32::from_polar(0.7, phase[c] as f32));
            }
        }
        let gain = (rate / (TAU * deviation)) as f32;
        let mut g = Graph::new();
        let src = g.add("src", VectorSource::new(x)).unwrap();
        let pack = g
            .add(
                "pack",
                Rated::new(crate::blocks::StreamToVector::<Complex32>::new(channels)),
            )
            .unwrap();
        let fm = g
            .add(
                "fm",
                Rated::new(FmDemodulator::new(gain, channels).unwrap()),
            )
            .unwrap();
        let unpack = g
            .add(
                "unpack",
                Rated::new(crate::blocks::VectorToStream::<f32>::new(channels)),
            )
            .unwrap();
        let (sink, data) = VectorSink::<f32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", pack, "in").unwrap();
        g.connect(pack, "out", fm, "in").unwrap();
        g.connect(fm, "out", unpack, "in").unwrap();
        g.connect(unpack, "out", sink, "in").unwrap();
        g.run(&RunOptions::default()).unwrap();
        let y = data.items();
        assert_eq!(y.len(), channels * frames);
        for n in 1..frames {
            for c in 0..channels {
                let want = (TAU * tones[c] * n as f64 / rate).sin();
                let got = f64::from(y[n * channels + c]);
                assert!(
                    (got - want).abs() < 1e-3,
                    "channel {c} sample {n}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(FmDemodulator::new(f32::INFINITY, 1).is_err());
        assert!(FmDemodulator::new(1.0, 0).is_err());
    }
}
