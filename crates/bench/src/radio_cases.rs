//! The cases of `sluice bench radio`: each as a sluice graph (`null_source → head → block →
//! null_sink`, built from graph-file text so it goes through the block registry as a user's
//! graph would), as the kernel alone in one thread, and as the arguments of its peers.

use num_complex::Complex32;
use sluice_kernels::{
    ArbResampler, Channelizer, Fir, FmDemod, RationalResampler, RealTaps, Rotator, XlatingFir,
};
use std::time::Instant;

/// One call of a kernel over the input table, into complex or real outputs; items consumed.
type Step = dyn FnMut(&mut [Complex32], &mut [f32]) -> usize;

/// One comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// Direct-form FIR, real taps on complex items.
    Fir(usize),
    /// Frequency-translating FIR, 256 taps, decimation 100.
    Xlating,
    /// Rational resampler 3/2, 48 taps per phase.
    Rational,
    /// FM quadrature demodulator.
    Fm,
    /// Frequency shift.
    Rotator,
    /// Arbitrary-ratio resampler, ratio 1.37.
    Arb,
    /// Channelizer M = 512, 18 taps per branch, oversampled by 1 or 2; per-channel streams
    /// (`false`) or one vector stream (`true`).
    Channelizer {
        /// 1 or 2.
        oversample: usize,
        /// One vector stream instead of 512 streams.
        vectors: bool,
    },
}

/// Channels of the channelizer cases.
pub const M: usize = 512;
/// Prototype taps per branch of the channelizer cases.
pub const P: usize = 18;

impl Case {
    /// Every case, in table order.
    pub fn all() -> Vec<Case> {
        let ch = |oversample, vectors| Case::Channelizer {
            oversample,
            vectors,
        };
        vec![
            Case::Fir(64),
            Case::Fir(256),
            Case::Xlating,
            Case::Rational,
            Case::Fm,
            Case::Rotator,
            Case::Arb,
            ch(1, false),
            ch(1, true),
            ch(2, false),
            ch(2, true),
        ]
    }

    /// Its name in the table and on the command line.
    pub fn name(self) -> String {
        match self {
            Case::Fir(t) => format!("fir{t}"),
            Case::Xlating => "xlating".into(),
            Case::Rational => "rational".into(),
            Case::Fm => "fm".into(),
            Case::Rotator => "rotator".into(),
            Case::Arb => "arb".into(),
            Case::Channelizer {
                oversample,
                vectors,
            } => format!(
                "channelizer{}{}",
                if oversample == 2 { "2x" } else { "" },
                if vectors { "-vec" } else { "" }
            ),
        }
    }

    /// What it measures, in words.
    pub fn describe(self) -> String {
        match self {
            Case::Fir(t) => format!("direct-form FIR, {t} real taps, complex items"),
            Case::Xlating => "freq-xlating FIR, 256 taps, decimation 100".into(),
            Case::Rational => "rational resampler 3/2, 48 taps per phase".into(),
            Case::Fm => "FM quadrature demodulator".into(),
            Case::Rotator => "frequency shift (rotator)".into(),
            Case::Arb => "arbitrary resampler, ratio 1.37".into(),
            Case::Channelizer {
                oversample,
                vectors,
            } => format!(
                "channelizer M={M}, {P} taps/branch, {}, {}",
                if oversample == 2 {
                    "2x oversampled"
                } else {
                    "critically sampled"
                },
                if vectors {
                    "one vector stream"
                } else {
                    "512 channel streams consumed"
                }
            ),
        }
    }

    /// Input items per run (at `scale` 1).
    pub fn items(self) -> u64 {
        match self {
            Case::Fir(64) => 20_000_000,
            Case::Fir(_) => 10_000_000,
            Case::Xlating => 100_000_000,
            Case::Rational | Case::Arb => 10_000_000,
            Case::Fm | Case::Rotator => 50_000_000,
            Case::Channelizer { oversample: 1, .. } => 40 * 512_000,
            Case::Channelizer { .. } => 20 * 512_000,
        }
    }

    /// Floating-point operations per input item (FIR cases only: 4 per tap, real × complex).
    pub fn flops_per_item(self) -> Option<f64> {
        match self {
            Case::Fir(t) => Some(4.0 * t as f64),
            _ => None,
        }
    }

    /// The graph file of the sluice side.
    pub fn graph(self, items: u64) -> String {
        let (block, params, out, sinks) = match self {
            Case::Fir(t) => (
                "fir",
                format!("method = \"direct\", design = \"lowpass\", num_taps = {t}, cutoff = 0.1"),
                "item = \"c32\"".to_string(),
                1,
            ),
            Case::Xlating => (
                "xlating_fir",
                "decimation = 100, center = 100000.0, sample_rate = 1000000.0, design = \"lowpass\", num_taps = 256, cutoff = 0.004".into(),
                "item = \"c32\"".into(),
                1,
            ),
            Case::Rational => (
                "rational_resampler",
                "interpolation = 3, decimation = 2, taps_per_phase = 48".into(),
                "item = \"c32\"".into(),
                1,
            ),
            Case::Fm => ("fm_demod", "gain = 1.0".into(), "item = \"f32\"".into(), 1),
            Case::Rotator => (
                "rotator",
                "frequency = 12300.0, sample_rate = 1000000.0".into(),
                "item = \"c32\"".into(),
                1,
            ),
            Case::Arb => ("arb_resampler", "ratio = 1.37".into(), "item = \"c32\"".into(), 1),
            Case::Channelizer {
                oversample,
                vectors,
            } => (
                "channelizer",
                format!(
                    "channels = {M}, oversample = {oversample}, taps_per_branch = {P}, layout = \"{}\"",
                    if vectors { "vectors" } else { "streams" }
                ),
                if vectors {
                    format!("item = \"c32\", vlen = {M}")
                } else {
                    "item = \"c32\"".into()
                },
                if vectors { 1 } else { M },
            ),
        };
        let mut text = format!(
            "[[node]]\nname = \"src\"\ntype = \"null_source\"\nparams = {{ item = \"c32\" }}\n\n\
             [[node]]\nname = \"head\"\ntype = \"head\"\nparams = {{ item = \"c32\", items = {items} }}\n\n\
             [[node]]\nname = \"dut\"\ntype = \"{block}\"\nparams = {{ {params} }}\n\n\
             [[edge]]\nfrom = \"src.out\"\nto = \"head.in\"\n\n\
             [[edge]]\nfrom = \"head.out\"\nto = \"dut.in\"\n"
        );
        for s in 0..sinks {
            let port = if sinks == 1 {
                "out".to_string()
            } else {
                format!("out{s}")
            };
            text += &format!(
                "\n[[node]]\nname = \"sink{s}\"\ntype = \"null_sink\"\nparams = {{ {out} }}\n\n\
                 [[edge]]\nfrom = \"dut.{port}\"\nto = \"sink{s}.in\"\n"
            );
        }
        text
    }

    /// Arguments of `scripts/gr_radio.py` (besides items and runs), or None if GNU Radio has
    /// no such block. `taps_file` holds the channelizer's prototype.
    pub fn gnuradio_args(self, taps_file: &str) -> Option<Vec<String>> {
        let a: Vec<String> = match self {
            Case::Fir(t) => vec![
                "--case".into(),
                "fir".into(),
                "--taps".into(),
                t.to_string(),
            ],
            Case::Xlating => "--case xlating --taps 256 --decimation 100"
                .split(' ')
                .map(String::from)
                .collect(),
            Case::Rational => "--case rational --taps 144 --interpolation 3 --decimation 2"
                .split(' ')
                .map(String::from)
                .collect(),
            Case::Fm => vec!["--case".into(), "fm".into()],
            Case::Rotator => vec!["--case".into(), "rotator".into()],
            Case::Arb => vec![
                "--case".into(),
                "arb".into(),
                "--rate".into(),
                "1.37".into(),
            ],
            Case::Channelizer { vectors: true, .. } => return None,
            Case::Channelizer { oversample, .. } => vec![
                "--case".into(),
                "channelizer".into(),
                "--channels".into(),
                M.to_string(),
                "--taps-file".into(),
                taps_file.into(),
                "--oversample".into(),
                oversample.to_string(),
            ],
        };
        Some(a)
    }

    /// Arguments of the FutureSDR harness, or None where FutureSDR has no such block.
    pub fn futuresdr_args(self) -> Option<Vec<String>> {
        let s = match self {
            Case::Fir(t) => format!("--case fir --taps {t}"),
            Case::Xlating => "--case xlating --taps 256 --decimation 100".into(),
            Case::Rational => "--case rational --taps 144 --interpolation 3 --decimation 2".into(),
            Case::Fm => "--case fm".into(),
            Case::Arb => "--case arb --rate 1.37".into(),
            Case::Channelizer {
                oversample,
                vectors: false,
            } => format!(
                "--case channelizer --channels {M} --taps {} --oversample {oversample}",
                M * P
            ),
            _ => return None,
        };
        Some(s.split(' ').map(String::from).collect())
    }

    /// Arguments of the liquid-dsp harness (single-threaded kernel loop), or None.
    pub fn liquid_args(self, taps_file: &str) -> Option<Vec<String>> {
        let s = match self {
            Case::Fir(t) => format!("--case fir --taps {t}"),
            Case::Rational => "--case rational --taps 48 --interp 3 --decim 2".into(),
            Case::Fm => "--case fm".into(),
            Case::Arb => "--case arb --rate 1.37".into(),
            Case::Channelizer {
                oversample,
                vectors: false,
            } => format!(
                "--case {} --channels {M} --taps {P} --taps-file {taps_file}",
                if oversample == 2 {
                    "channelizer2"
                } else {
                    "channelizer"
                }
            ),
            _ => return None,
        };
        Some(s.split(' ').map(String::from).collect())
    }

    /// Input items per second of the kernel alone, in this thread, over a 2^16-item
    /// cache-resident input processed repeatedly for about `seconds` (liquid's harness does
    /// the same), or None for the vector layouts (same kernel as the streams case).
    pub fn kernel_rate(self, seconds: f64) -> anyhow::Result<Option<f64>> {
        let x: Vec<Complex32> = (0..1 << 16)
            .map(|i| Complex32::from_polar(1.0, (i as f32 * 0.37).sin()))
            .collect();
        let mut y = vec![Complex32::default(); 4 * x.len()];
        let mut f = vec![0.0f32; x.len()];
        let taps = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|k| ((k as f32) * 0.1).sin() / n as f32)
                .collect()
        };
        let mut step: Box<Step> = match self {
            Case::Fir(t) => {
                let mut k = Fir::new(RealTaps::new(&taps(t))?);
                Box::new(move |y, _| k.filter(&x, y).0)
            }
            Case::Xlating => {
                let mut k = XlatingFir::new(&taps(256), 100, 0.1)?;
                Box::new(move |y, _| k.process(&x, y).0)
            }
            Case::Rational => {
                let mut k = RationalResampler::new(3, 2, &taps(144))?;
                Box::new(move |y, _| k.process(&x, y).0)
            }
            Case::Fm => {
                let mut k = FmDemod::new(1.0, 1)?;
                Box::new(move |_, f| k.process(&x, f).0)
            }
            Case::Rotator => {
                let mut k = Rotator::new(0.0123)?;
                Box::new(move |y, _| k.process(&x, y).0)
            }
            Case::Arb => {
                let mut k = ArbResampler::new(1.37)?;
                Box::new(move |y, _| k.process(&x, y).0)
            }
            Case::Channelizer { vectors: true, .. } => return Ok(None),
            Case::Channelizer { oversample, .. } => {
                let proto = Channelizer::prototype(M, P)?;
                let mut k = Channelizer::new(M, M / oversample, &proto, None)?;
                Box::new(move |y, _| k.process(&x, y).0)
            }
        };
        step(&mut y, &mut f); // warm up
        let t0 = Instant::now();
        let mut items = 0u64;
        while t0.elapsed().as_secs_f64() < seconds {
            items += step(&mut y, &mut f) as u64;
        }
        Ok(Some(items as f64 / t0.elapsed().as_secs_f64()))
    }

    /// The target of the issue for this case, as (peer, factor), if there is one.
    pub fn targets(self) -> &'static [(&'static str, f64)] {
        match self {
            Case::Fir(_) => &[("gnuradio", 2.0), ("futuresdr", 2.0)],
            Case::Xlating | Case::Rational | Case::Fm => &[("gnuradio", 3.0)],
            Case::Channelizer { vectors: false, .. } => &[("gnuradio", 5.0), ("liquid", 1.0)],
            _ => &[],
        }
    }
}
