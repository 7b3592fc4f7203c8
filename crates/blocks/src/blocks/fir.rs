//! Direct-form FIR block (optionally decimating): windows straight from the input queue, outputs
//! straight into the output queue.
//!
//! The stream is filtered as if preceded by `taps − 1` zeros, so output `j` is
//! `Σ_k h[k] · x[j·D − k]` and a 1:1 filter emits one output per input (GNU Radio's convention;
//! tags keep their item index). Only the first outputs, whose windows reach into those zeros, are
//! computed from a small startup buffer; after that every window is read in place.

use sluice_kernels::{Fir, FirTaps};
use sluice_runtime::{Item, Node, NodeError, Ports, TagPolicy, Work, WorkIo};

/// A FIR filter block over items `I` with prepared taps `T` (`RealTaps` or `ComplexTaps`).
#[derive(Debug)]
pub struct FirFilter<I, T> {
    kernel: Fir<T>,
    taps_len: usize,
    decimation: usize,
    /// Outputs whose windows reach into the leading zeros; computed once at startup.
    startup_outputs: usize,
    primed: bool,
    scratch: Vec<I>,
}

impl<I: Item, T: FirTaps<I, Output = I>> FirFilter<I, T> {
    /// A filter keeping one output in `decimation` (1 for none).
    pub fn new(taps: T, decimation: usize) -> Result<Self, NodeError> {
        let taps_len = taps.len();
        let kernel = Fir::decimating(taps, decimation).map_err(NodeError::from_error)?;
        let startup_outputs = (taps_len - 1).div_ceil(decimation);
        Ok(FirFilter {
            kernel,
            taps_len,
            decimation,
            startup_outputs,
            primed: startup_outputs == 0,
            scratch: Vec::with_capacity(2 * taps_len),
        })
    }

    /// Computes the outputs whose windows start in the leading zeros.
    fn start(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let (d, history) = (self.decimation, self.taps_len - 1);
        let need = (self.startup_outputs - 1) * d + 1;
        let input = io.inputs.get::<I>(0)?;
        let Some(x) = input.window(need)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: need,
            });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let have = x.len().min(need);
        self.scratch.clear();
        self.scratch.resize(history, I::zeroed());
        self.scratch.extend_from_slice(&x[..have]);
        let output = io.outputs.get::<I>(0)?;
        let Some(y) = output.reserve(self.startup_outputs)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: self.startup_outputs,
            });
        };
        // zeros ++ x[..have] holds exactly the windows of outputs j with j·D < have: all
        // startup outputs, or, for a stream that ends sooner, one per D items it had.
        let (_, produced) = self.kernel.filter(&self.scratch, y);
        output.commit(produced);
        if have < need {
            input.consume(have);
            return Ok(Work::Done);
        }
        // The next output's window starts at input j0·D − (L − 1).
        input.consume(self.startup_outputs * d - history);
        self.primed = true;
        Ok(Work::Progress)
    }
}

impl<I: Item, T: FirTaps<I, Output = I> + Send> Node for FirFilter<I, T> {
    fn ports(&self) -> Ports {
        Ports::new()
            .input_window::<I>("in", self.taps_len)
            .output::<I>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if !self.primed {
            return self.start(io);
        }
        let input = io.inputs.get::<I>(0)?;
        let Some(x) = input.window(self.taps_len)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: self.taps_len,
            });
        };
        if x.len() < self.taps_len {
            return Ok(Work::Done);
        }
        let output = io.outputs.get::<I>(0)?;
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let (consumed, produced) = self.kernel.filter(x, y);
        output.commit(produced);
        input.consume(consumed);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Ratio {
            interpolation: 1,
            decimation: self.decimation as u64,
        }
    }

    /// The delay line (taps − 1), rounded up to whole decimation steps so that a replacement
    /// at a multiple of the decimation keeps the output's phase.
    fn history(&self) -> u64 {
        (self.startup_outputs * self.decimation) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::test_support::{c32_noise, direct_f64, max_rel_error, run_filter};
    use num_complex::Complex32;
    use sluice_kernels::{ComplexTaps, RealTaps};

    #[test]
    fn matches_f64_direct_convolution_with_and_without_decimation() {
        for (taps_len, decim, len) in [
            (1, 1, 100),
            (7, 1, 5000),
            (64, 1, 20_000),
            (33, 4, 9999),
            (5, 3, 4),
        ] {
            let taps = c32_noise(taps_len, 1);
            let x = c32_noise(len, 2);
            let want = direct_f64(&taps, &x, decim);
            for (chunk, cap) in [(usize::MAX, None), (37, Some(4096)), (1, Some(4096))] {
                let block = FirFilter::new(ComplexTaps::new(&taps).unwrap(), decim).unwrap();
                let got = run_filter(block, &x, chunk, cap);
                assert_eq!(
                    got.len(),
                    want.len(),
                    "taps {taps_len} decim {decim} len {len}"
                );
                let err = max_rel_error(&got, &want);
                assert!(err <= 1e-5, "taps {taps_len} decim {decim}: error {err}");
            }
        }
    }

    #[test]
    fn real_taps_on_complex_items_match_too() {
        let taps: Vec<f32> = c32_noise(21, 3).iter().map(|c| c.re).collect();
        let ctaps: Vec<Complex32> = taps.iter().map(|&t| Complex32::new(t, 0.0)).collect();
        let x = c32_noise(3000, 4);
        let block = FirFilter::<Complex32, _>::new(RealTaps::new(&taps).unwrap(), 2).unwrap();
        let got = run_filter(block, &x, 100, None);
        let err = max_rel_error(&got, &direct_f64(&ctaps, &x, 2));
        assert!(err <= 1e-5, "error {err}");
    }

    #[test]
    fn zero_decimation_is_an_error() {
        let err = FirFilter::<Complex32, _>::new(RealTaps::new(&[1.0]).unwrap(), 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "decimation factor 0 is invalid (at least 1)"
        );
    }
}
