//! Rate-changing filter blocks: the frequency-translating decimating FIR, the rational
//! resampler and the arbitrary-ratio resampler.

use num_complex::Complex32;
use sluice_kernels::{ArbResampler, RationalResampler, XlatingFir};
use sluice_runtime::{control, ControlSpec, FixedRate, InputRate, Node, NodeError, Ports};
use sluice_runtime::{TagPolicy, TagValue, Work, WorkIo};

/// The run-time parameter `center`.
const CENTER: ControlSpec = ControlSpec {
    name: "center",
    expects: "a finite number of Hz",
    help: "the frequency moved to 0 Hz (samples already filtered keep the old one)",
};

/// Frequency-translating decimating FIR (GNU Radio's `freq_xlating_fir_filter_ccf`): moves
/// `center` Hz to 0, low-passes with real taps designed for baseband, keeps one output in `D`
/// (see [`XlatingFir`]). The centre can be changed while running (`center`). Tags and the
/// `rx_rate` metadata are rescaled by `1/D`. Add it as `Rated::new(FreqXlatingFir::new(…)?)`.
#[derive(Debug)]
pub struct FreqXlatingFir {
    kernel: XlatingFir,
    sample_rate: f64,
}

impl FreqXlatingFir {
    /// `taps` (real, baseband), decimation `D`, `center` Hz of a stream at `sample_rate` Hz.
    pub fn new(
        taps: &[f32],
        decimation: usize,
        center: f64,
        sample_rate: f64,
    ) -> Result<Self, NodeError> {
        if !(sample_rate.is_finite() && sample_rate > 0.0) {
            return Err(NodeError::msg(format!(
                "sample rate must be positive, not {sample_rate}"
            )));
        }
        let kernel = XlatingFir::new(taps, decimation, center / sample_rate)
            .map_err(NodeError::from_error)?;
        Ok(FreqXlatingFir {
            kernel,
            sample_rate,
        })
    }
}

impl FixedRate<1, 1> for FreqXlatingFir {
    type In = Complex32;
    type Out = Complex32;
    fn ports(&self) -> Ports {
        Ports::new()
            .input::<Complex32>("in")
            .output::<Complex32>("out")
    }
    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(self.kernel.decimation())]
    }
    fn output_rates(&self) -> [usize; 1] {
        [1]
    }
    fn fire(
        &mut self,
        _: usize,
        [x]: [&[Complex32]; 1],
        [y]: [&mut [Complex32]; 1],
    ) -> Result<(), NodeError> {
        exactly(self.kernel.process(x, y), x.len(), y.len())
    }
    fn controls(&self) -> Vec<ControlSpec> {
        vec![CENTER]
    }
    fn set_control(&mut self, _: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        let hz = control::number(value, CENTER.expects)?;
        self.kernel
            .set_center(hz / self.sample_rate)
            .map_err(|_| NodeError::BadValue {
                expected: CENTER.expects.to_string(),
            })
    }
}

/// `D` inputs in, `I` outputs out per firing: the streaming kernels produce exactly that.
fn exactly((c, p): (usize, usize), inputs: usize, outputs: usize) -> Result<(), NodeError> {
    if (c, p) == (inputs, outputs) {
        Ok(())
    } else {
        Err(NodeError::msg(format!(
            "internal error: the kernel took {c} of {inputs} inputs and made {p} of {outputs} outputs"
        )))
    }
}

/// Rational resampler (GNU Radio's `rational_resampler_ccf`): `I/D` times the input rate,
/// polyphase (see [`RationalResampler`]). Tags and `rx_rate` are rescaled by `I/D`. Add it as
/// `Rated::new(RationalResamplerBlock::new(…)?)`.
#[derive(Debug)]
pub struct RationalResamplerBlock {
    kernel: RationalResampler,
}

impl RationalResamplerBlock {
    /// Interpolation `I`, decimation `D`, `taps` designed at `I ×` the input rate.
    pub fn new(interpolation: usize, decimation: usize, taps: &[f32]) -> Result<Self, NodeError> {
        Ok(RationalResamplerBlock {
            kernel: RationalResampler::new(interpolation, decimation, taps)
                .map_err(NodeError::from_error)?,
        })
    }
}

impl FixedRate<1, 1> for RationalResamplerBlock {
    type In = Complex32;
    type Out = Complex32;
    fn ports(&self) -> Ports {
        Ports::new()
            .input::<Complex32>("in")
            .output::<Complex32>("out")
    }
    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(self.kernel.decimation())]
    }
    fn output_rates(&self) -> [usize; 1] {
        [self.kernel.interpolation()]
    }
    fn fire(
        &mut self,
        _: usize,
        [x]: [&[Complex32]; 1],
        [y]: [&mut [Complex32]; 1],
    ) -> Result<(), NodeError> {
        exactly(self.kernel.process(x, y), x.len(), y.len())
    }
}

/// Arbitrary-ratio resampler (see [`ArbResampler`]): output `m` is the input at time
/// `m / ratio`; at the end of the stream it flushes, so `⌈n·ratio⌉` outputs come out of `n`
/// inputs. Tags and `rx_rate` are rescaled by a fraction within 1e-9 of the ratio.
#[derive(Debug)]
pub struct ArbResamplerBlock {
    kernel: ArbResampler,
    /// The ratio as a fraction, for the tag policy.
    fraction: (u64, u64),
}

impl ArbResamplerBlock {
    /// Resamples by `ratio` (output rate ÷ input rate).
    pub fn new(ratio: f64) -> Result<Self, NodeError> {
        let kernel = ArbResampler::new(ratio).map_err(NodeError::from_error)?;
        Ok(ArbResamplerBlock {
            kernel,
            fraction: fraction(ratio),
        })
    }
}

/// The fraction `p/q` closest to `x` with `q ≤ 10^9` (continued fractions).
fn fraction(x: f64) -> (u64, u64) {
    let (mut h0, mut h1, mut k0, mut k1) = (0u64, 1u64, 1u64, 0u64);
    let mut r = x;
    for _ in 0..64 {
        let a = r.floor() as u64;
        let (h2, k2) = (
            a.saturating_mul(h1).saturating_add(h0),
            a.saturating_mul(k1).saturating_add(k0),
        );
        if k2 > 1_000_000_000 {
            break;
        }
        (h0, h1, k0, k1) = (h1, h2, k1, k2);
        let frac = r - a as f64;
        if frac < 1e-12 {
            break;
        }
        r = 1.0 / frac;
    }
    (h1.max(1), k1.max(1))
}

impl Node for ArbResamplerBlock {
    fn ports(&self) -> Ports {
        Ports::new()
            .input::<Complex32>("in")
            .output::<Complex32>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<Complex32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        let output = io.outputs.get::<Complex32>(0)?;
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        if x.is_empty() {
            // End of stream: flush what is owed.
            let n = self.kernel.finish(y);
            let room = y.len();
            output.commit(n);
            return Ok(if n == room {
                Work::Progress
            } else {
                Work::Done
            });
        }
        let (consumed, produced) = self.kernel.process(x, y);
        output.commit(produced);
        input.consume(consumed);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Ratio {
            interpolation: self.fraction.0,
            decimation: self.fraction.1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::test_support::{c32_noise, run_filter};
    use sluice_runtime::Rated;

    /// The kernel alone on the whole signal (then flushed for the arbitrary resampler): what
    /// the block in a threaded graph, fed in small chunks, must reproduce exactly.
    fn whole<K>(
        x: &[Complex32],
        mut k: K,
        f: impl Fn(&mut K, &[Complex32], &mut [Complex32]) -> (usize, usize),
    ) -> Vec<Complex32> {
        let mut out = vec![Complex32::default(); 4 * x.len() + 16];
        let (_, p) = f(&mut k, x, &mut out);
        out.truncate(p);
        out
    }

    #[test]
    fn blocks_in_a_graph_give_the_kernels_output() {
        let x = c32_noise(20_000, 5);
        let taps: Vec<f32> = (0..256).map(|k| ((k as f32) * 0.05).sin() / 64.0).collect();
        for (chunk, cap) in [(usize::MAX, None), (333, Some(4096))] {
            let block = Rated::new(FreqXlatingFir::new(&taps, 100, 12_500.0, 100_000.0).unwrap());
            let got = run_filter(block, &x, chunk, cap);
            let k = XlatingFir::new(&taps, 100, 0.125).unwrap();
            assert_eq!(got, whole(&x, k, |k, a, b| k.process(a, b)), "xlating");
            assert_eq!(got.len(), 200);

            let block = Rated::new(RationalResamplerBlock::new(3, 2, &taps[..144]).unwrap());
            let got = run_filter(block, &x, chunk, cap);
            let k = RationalResampler::new(3, 2, &taps[..144]).unwrap();
            assert_eq!(got, whole(&x, k, |k, a, b| k.process(a, b)), "rational");
            assert_eq!(got.len(), 30_000);

            let got = run_filter(ArbResamplerBlock::new(1.37).unwrap(), &x, chunk, cap);
            let k = ArbResampler::new(1.37).unwrap();
            let want = whole(&x, k, |k, a, b| {
                let (c, p) = k.process(a, b);
                (c, p + k.finish(&mut b[p..]))
            });
            assert_eq!(got, want, "arbitrary");
            assert_eq!(got.len(), 27_400);
        }
    }

    #[test]
    fn rates_rescale_tags_and_bad_settings_are_refused() {
        assert_eq!(fraction(1.37), (137, 100));
        assert_eq!(fraction(44_100.0 / 48_000.0), (147, 160));
        assert_eq!(fraction(3.0), (3, 1));
        let arb = ArbResamplerBlock::new(0.5).unwrap();
        assert_eq!(
            arb.tag_policy(),
            TagPolicy::Ratio {
                interpolation: 1,
                decimation: 2
            }
        );
        let rr = Rated::new(RationalResamplerBlock::new(3, 2, &[1.0; 6]).unwrap());
        assert_eq!(
            rr.tag_policy(),
            TagPolicy::Ratio {
                interpolation: 3,
                decimation: 2
            }
        );
        let xl = Rated::new(FreqXlatingFir::new(&[1.0; 6], 10, 0.0, 1.0).unwrap());
        assert_eq!(
            xl.tag_policy(),
            TagPolicy::Ratio {
                interpolation: 1,
                decimation: 10
            }
        );
        assert!(FreqXlatingFir::new(&[1.0], 2, 0.0, 0.0).is_err());
        assert!(FreqXlatingFir::new(&[], 2, 0.0, 1.0).is_err());
        assert!(RationalResamplerBlock::new(0, 2, &[1.0]).is_err());
        assert!(ArbResamplerBlock::new(-1.0).is_err());
    }
}
