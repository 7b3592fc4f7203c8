//! `pdu_fm_demod`: FM demodulation of a burst carried as a PDU (GNU Radio's
//! `quadrature_demod_cf` applied to the PDU's vector), so that PDUs go through DSP.

use super::pdu_meta::PduMap;
use sluice_kernels::FmDemod;
use sluice_runtime::{NodeError, TagValue, Uniform};

/// The metadata key of the demodulated PDU's mean output: for a gain of
/// `sample_rate / 2π`, the burst's carrier offset in Hz.
pub const MEAN_KEY: &str = "fm_mean";

/// FM demodulation of c32 PDUs into f32 PDUs: `y[n] = gain · arg(x[n+1] · conj(x[n]))`, one
/// sample fewer than came; the mean of `y` is added as metadata [`MEAN_KEY`].
pub struct PduFmDemod;

impl PduFmDemod {
    /// The node, with `gain` (1 gives radians per sample; `fs/2π` gives Hz); a gain that is
    /// not finite is an error.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(gain: f32) -> Result<PduMap, NodeError> {
        let mut demod = FmDemod::new(gain, 1).map_err(|e| NodeError::msg(e.to_string()))?;
        let mut buf = Vec::new();
        Ok(PduMap::new(Box::new(move |pdu| {
            let Uniform::C32(x) = &pdu.data else {
                return Err(NodeError::msg(format!(
                    "pdu_fm_demod takes c32 PDUs, not {}",
                    pdu.data.type_name()
                )));
            };
            // Each burst on its own: the first sample only sets the phase reference.
            demod.reset();
            buf.resize(x.len(), 0.0);
            demod.process(x, &mut buf);
            let y = buf.get(1..).unwrap_or(&[]);
            let mean = if y.is_empty() {
                0.0
            } else {
                y.iter().map(|&v| f64::from(v)).sum::<f64>() / y.len() as f64
            };
            pdu.data = Uniform::F32(y.into());
            pdu.set(MEAN_KEY, TagValue::F64(mean));
            Ok(())
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::messages::{MessageDebug, MessageStrobe};
    use num_complex::Complex32;
    use sluice_runtime::{Graph, Pdu};
    use std::time::Duration;

    #[test]
    fn a_tone_demodulates_to_its_frequency_as_the_reference_says() {
        let (fs, f) = (48_000.0f64, 1_500.0f64);
        let x: Vec<Complex32> = (0..200)
            .map(|n| {
                let ph = 2.0 * std::f64::consts::PI * f * n as f64 / fs;
                Complex32::new(ph.cos() as f32, ph.sin() as f32)
            })
            .collect();
        let gain = (fs / (2.0 * std::f64::consts::PI)) as f32;
        // The straightforward reference: the phase step by atan2, in Hz.
        let reference: Vec<f32> = x
            .windows(2)
            .map(|w| (w[1] * w[0].conj()).arg() * gain)
            .collect();
        let mut g = Graph::new();
        let pdu = Pdu::new(Uniform::C32(x.into())).into_message();
        let s = g
            .add("s", MessageStrobe::new(pdu, Duration::ZERO, Some(1)))
            .unwrap();
        let d = g.add("fm", PduFmDemod::new(gain).unwrap()).unwrap();
        let (debug, log) = MessageDebug::new(false, true);
        let k = g.add("k", debug).unwrap();
        g.connect(s, "out", d, "pdus").unwrap();
        g.connect(d, "pdus", k, "in").unwrap();
        g.run_stepped().unwrap();
        let out = Pdu::from_message(&log.messages()[0]).unwrap();
        let Uniform::F32(y) = &out.data else {
            panic!("not f32")
        };
        assert_eq!(y.len(), reference.len());
        for (a, b) in y.iter().zip(&reference) {
            assert!((a - b).abs() < 0.5, "{a} vs {b} Hz");
        }
        let Some(TagValue::F64(mean)) = out.get(MEAN_KEY) else {
            panic!("no mean")
        };
        assert!((mean - f).abs() < 0.5, "mean {mean}");
        assert!(PduFmDemod::new(f32::NAN).is_err());
    }
}
