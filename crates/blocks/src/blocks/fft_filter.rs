//! Overlap-save FFT filter block: each block's window of `N` items is read straight from the
//! input queue (`window(N)`, `consume(N − L + 1)`: the `L − 1` overlap stays in the queue as the
//! next window's head), and the valid outputs are written straight into the output queue's
//! reserved space. No staging buffers in the steady state.
//!
//! As in [`super::fir`], the stream is filtered as if preceded by `L − 1` zeros (one output per
//! input). The first `L − 1` outputs, whose windows reach into those zeros, come from a direct
//! form at startup; the last partial block at end of stream is zero-padded once.

use num_complex::Complex32;
use sluice_kernels::{ComplexTaps, Fir, OverlapSave};
use sluice_runtime::{Node, NodeError, Ports, Work, WorkIo};

/// An overlap-save FFT filter for complex items with complex taps.
#[derive(Debug)]
pub struct FftFilter {
    kernel: OverlapSave,
    startup: Fir<ComplexTaps>,
    primed: bool,
    scratch: Vec<Complex32>,
}

impl FftFilter {
    /// A filter with `taps` and FFT size `fft_size` (a power of two, at least `taps.len()`).
    pub fn new(taps: &[Complex32], fft_size: usize) -> Result<Self, NodeError> {
        let err = |e: sluice_kernels::DspError| NodeError::from_error(e);
        let kernel = OverlapSave::new(taps, fft_size).map_err(err)?;
        let startup = Fir::new(ComplexTaps::new(taps).map_err(err)?);
        Ok(FftFilter {
            primed: taps.len() == 1,
            kernel,
            startup,
            scratch: Vec::with_capacity(fft_size.max(2 * taps.len())),
        })
    }

    /// The FFT size `N`.
    pub fn fft_size(&self) -> usize {
        self.kernel.fft_size()
    }

    /// Outputs `0 .. L − 1`, whose windows start in the leading zeros (direct form, once).
    fn start(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let history = self.kernel.taps_len() - 1;
        let input = io.inputs.get::<Complex32>(0)?;
        let Some(x) = input.window(history)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: history,
            });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let have = x.len().min(history);
        self.scratch.clear();
        self.scratch.resize(history, Complex32::new(0.0, 0.0));
        self.scratch.extend_from_slice(&x[..have]);
        let output = io.outputs.get::<Complex32>(0)?;
        let Some(y) = output.reserve(have)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: have,
            });
        };
        let (_, produced) = self.startup.filter(&self.scratch, y);
        output.commit(produced);
        if have < history {
            input.consume(have);
            return Ok(Work::Done);
        }
        self.primed = true;
        Ok(Work::Progress)
    }

    /// The last, partial block: zero-padded to `N` once.
    fn finish(&mut self, io: &mut WorkIo<'_>, rest: usize) -> Result<Work, NodeError> {
        let history = self.kernel.taps_len() - 1;
        let outputs = rest.saturating_sub(history);
        let input = io.inputs.get::<Complex32>(0)?;
        if outputs == 0 {
            input.consume(rest);
            return Ok(Work::Done);
        }
        let output = io.outputs.get::<Complex32>(0)?;
        let Some(y) = output.reserve(outputs)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: outputs,
            });
        };
        let Some(x) = input.window(rest)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: rest,
            });
        };
        self.scratch.clear();
        self.scratch.extend_from_slice(&x[..rest]);
        self.scratch
            .resize(self.kernel.fft_size(), Complex32::new(0.0, 0.0));
        let mut block = vec![Complex32::new(0.0, 0.0); self.kernel.step()];
        self.kernel
            .process_block(&self.scratch, &mut block)
            .map_err(NodeError::from_error)?;
        y[..outputs].copy_from_slice(&block[..outputs]);
        output.commit(outputs);
        input.consume(rest);
        Ok(Work::Done)
    }
}

impl Node for FftFilter {
    fn ports(&self) -> Ports {
        let n = self.kernel.fft_size();
        Ports::new()
            .input_window::<Complex32>("in", n)
            .output_window::<Complex32>("out", n)
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if !self.primed {
            return self.start(io);
        }
        let n = self.kernel.fft_size();
        let step = self.kernel.step();
        let input = io.inputs.get::<Complex32>(0)?;
        let Some(x) = input.window(n)? else {
            return Ok(Work::NeedInput { port: 0, items: n });
        };
        if x.len() < n {
            let rest = x.len();
            return self.finish(io, rest);
        }
        let output = io.outputs.get::<Complex32>(0)?;
        let Some(y) = output.reserve(step)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: step,
            });
        };
        let (consumed, produced) = self.kernel.filter(x, y);
        output.commit(produced);
        input.consume(consumed);
        Ok(Work::Progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::test_support::{c32_noise, direct_f64, max_rel_error, run_filter};
    use crate::blocks::vector::{VectorSink, VectorSource};
    use sluice_runtime::{Graph, RunOptions, Tag, TagValue};

    #[test]
    fn matches_f64_direct_convolution_under_any_chunking_and_queue_size() {
        for (taps_len, fft, len) in [
            (1, 16, 500),
            (64, 256, 30_000),
            (1024, 4096, 50_000),
            (100, 128, 50),
            (17, 64, 20),
        ] {
            let taps = c32_noise(taps_len, 5);
            let x = c32_noise(len, 6);
            let want = direct_f64(&taps, &x, 1);
            for (chunk, cap) in [
                (usize::MAX, None),
                (301, Some(fft.max(1024))),
                (7, Some(2 * fft)),
            ] {
                let got = run_filter(FftFilter::new(&taps, fft).unwrap(), &x, chunk, cap);
                assert_eq!(got.len(), want.len(), "taps {taps_len} fft {fft} len {len}");
                let err = max_rel_error(&got, &want);
                assert!(
                    err <= 1e-5,
                    "taps {taps_len} fft {fft} chunk {chunk}: error {err}"
                );
            }
        }
    }

    #[test]
    fn tags_keep_their_item_index_through_the_filter() {
        let taps = c32_noise(64, 7);
        let mut g = Graph::new();
        let src = VectorSource::new(c32_noise(10_000, 8))
            .max_chunk(999)
            .with_tag(0, "start", TagValue::Bool(true))
            .with_tag(5000, "freq", TagValue::F64(7e6));
        let src = g.add("src", src).unwrap();
        let filt = g.add("fft", FftFilter::new(&taps, 256).unwrap()).unwrap();
        let (sink, data) = VectorSink::<Complex32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", filt, "in").unwrap();
        g.connect(filt, "out", sink, "in").unwrap();
        g.run(&RunOptions::default()).unwrap();
        assert_eq!(
            data.tags(),
            vec![
                Tag::new(0, "start", TagValue::Bool(true)),
                Tag::new(5000, "freq", TagValue::F64(7e6))
            ]
        );
    }

    #[test]
    fn bad_configurations_are_errors_with_clear_messages() {
        let taps = c32_noise(10, 1);
        let msg = |r: Result<FftFilter, NodeError>| r.unwrap_err().to_string();
        assert_eq!(
            msg(FftFilter::new(&[], 64)),
            "the filter has no taps (at least 1 is needed)"
        );
        assert_eq!(
            msg(FftFilter::new(&taps, 8)),
            "10 taps do not fit an FFT of size 8 (at most 8 taps)"
        );
        assert_eq!(
            msg(FftFilter::new(&taps, 100)),
            "FFT size 100 is not a power of two (at least 2)"
        );
    }
}
