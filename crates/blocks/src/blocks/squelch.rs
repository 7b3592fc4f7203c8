//! Power squelch: silences a channel while its average power is below a threshold (GNU Radio's
//! `pwr_squelch_cc` without ramping). An FM demodulator fed noise alone puts out full-scale
//! noise; behind a squelch an empty channel demodulates to silence.

use num_complex::Complex32;
use sluice_runtime::{FixedRate, InputRate, NodeError, Ports};

/// Per channel, `avg += alpha·(|x|² − avg)`; the sample passes while `avg ≥ threshold`, else
/// zero goes out. With `channels` > 1 the ports carry vectors of one sample per channel (a
/// channelizer's vector output). Add it as `Rated::new(PowerSquelch::new(…)?)`.
#[derive(Debug)]
pub struct PowerSquelch {
    threshold: f32,
    alpha: f32,
    average: Vec<f32>,
}

impl PowerSquelch {
    /// A squelch opening at `threshold_db` (power, dB relative to a full-scale sample of
    /// magnitude 1) with averaging weight `alpha` (0 < alpha ≤ 1) over `channels` channels.
    pub fn new(threshold_db: f64, alpha: f64, channels: usize) -> Result<Self, NodeError> {
        if !threshold_db.is_finite() {
            return Err(NodeError::msg(format!(
                "threshold_db must be a number of dB, not {threshold_db}"
            )));
        }
        if !(alpha > 0.0 && alpha <= 1.0) {
            return Err(NodeError::msg(format!(
                "alpha must be in (0, 1], not {alpha}"
            )));
        }
        if channels == 0 {
            return Err(NodeError::msg("channels must be at least 1"));
        }
        Ok(PowerSquelch {
            threshold: 10f64.powf(threshold_db / 10.0) as f32,
            alpha: alpha as f32,
            average: vec![0.0; channels],
        })
    }
}

impl FixedRate<1, 1> for PowerSquelch {
    type In = Complex32;
    type Out = Complex32;

    fn ports(&self) -> Ports {
        let c = self.average.len();
        let mut ports = Ports::new();
        ports.add_input_vectors::<Complex32>("in", c, 0);
        ports.add_output_vectors::<Complex32>("out", c, 0);
        ports
    }

    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(self.average.len())]
    }

    fn output_rates(&self) -> [usize; 1] {
        [self.average.len()]
    }

    fn fire(
        &mut self,
        _: usize,
        [x]: [&[Complex32]; 1],
        [y]: [&mut [Complex32]; 1],
    ) -> Result<(), NodeError> {
        let c = self.average.len();
        for (frame, out) in x.chunks_exact(c).zip(y.chunks_exact_mut(c)) {
            for ((v, o), avg) in frame.iter().zip(out).zip(&mut self.average) {
                *avg += self.alpha * (v.norm_sqr() - *avg);
                *o = if *avg >= self.threshold {
                    *v
                } else {
                    Complex32::default()
                };
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{VectorSink, VectorSource};
    use sluice_runtime::{Graph, Rated, RunOptions};

    /// Two channels: a carrier at −6 dB passes (after the average rises), noise at −40 dB is
    /// silenced, with a −20 dB threshold.
    #[test]
    fn a_strong_channel_passes_and_a_weak_one_is_silenced() {
        let frames = 2000;
        let mut x = Vec::new();
        for n in 0..frames {
            x.push(Complex32::from_polar(0.5, n as f32 * 0.1));
            x.push(Complex32::from_polar(0.01, n as f32 * 0.7));
        }
        let (sink, data) = VectorSink::<Complex32>::new();
        let mut g = Graph::new();
        let a = g.add("src", VectorSource::new(x.clone())).unwrap();
        let pack = g
            .add(
                "pack",
                Rated::new(crate::blocks::StreamToVector::<Complex32>::new(2)),
            )
            .unwrap();
        let b = g
            .add("sq", Rated::new(PowerSquelch::new(-20.0, 0.05, 2).unwrap()))
            .unwrap();
        let unpack = g
            .add(
                "unpack",
                Rated::new(crate::blocks::VectorToStream::<Complex32>::new(2)),
            )
            .unwrap();
        let c = g.add("sink", sink).unwrap();
        g.connect(a, "out", pack, "in").unwrap();
        g.connect(pack, "out", b, "in").unwrap();
        g.connect(b, "out", unpack, "in").unwrap();
        g.connect(unpack, "out", c, "in").unwrap();
        g.run(&RunOptions::default()).unwrap();
        let y = data.items();
        assert_eq!(y.len(), x.len());
        // After 200 frames the strong channel passes unchanged and the weak one is zero.
        for n in 200..frames {
            assert_eq!(y[2 * n], x[2 * n], "frame {n}");
            assert_eq!(y[2 * n + 1], Complex32::default(), "frame {n}");
        }
    }

    #[test]
    fn bad_settings_are_refused_by_name() {
        assert!(PowerSquelch::new(-20.0, 0.0, 1)
            .unwrap_err()
            .to_string()
            .contains("alpha"));
        assert!(PowerSquelch::new(f64::NAN, 0.1, 1)
            .unwrap_err()
            .to_string()
            .contains("threshold_db"));
        assert!(PowerSquelch::new(-20.0, 0.1, 0)
            .unwrap_err()
            .to_string()
            .contains("channels"));
    }
}
