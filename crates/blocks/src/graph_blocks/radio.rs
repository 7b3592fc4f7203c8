//! Registry entries of the radio blocks: frequency shift, FM demodulator, frequency-translating
//! FIR, rational and arbitrary-ratio resamplers, polyphase channelizer.

use super::filters::{hz_params, taps_from, taps_params};
use crate::blocks::{
    ArbResamplerBlock, ChannelOutputs, ChannelizerBlock, FmDemodulator, FreqXlatingFir,
    FrequencyShift, RationalResamplerBlock,
};
use sluice_formats::Taps;
use sluice_graph::memory::ensure_fits;
use sluice_graph::{
    BlockType, Family, ItemDecl, Memory, Param, ParamDecl, ParamError, Params, PortDecl, Rate, Vlen,
};
use sluice_kernels::{lowpass, Channelizer, Window};
use sluice_runtime::{Node, NodeError, Rated};

fn param_sample_rate() -> ParamDecl {
    Param::number("sample_rate", "input sample rate").follows_stream()
}

fn node_err(param: &'static str) -> impl Fn(NodeError) -> ParamError {
    move |e| ParamError::new(param, e.to_string())
}

/// A positive whole number parameter no larger than `max`.
fn count(
    p: &mut Params,
    name: &'static str,
    default: Option<u64>,
    max: u64,
) -> Result<usize, ParamError> {
    let v = match default {
        Some(d) => p.u64_or(name, d)?,
        None => p.u64(name)?,
    };
    if !(1..=max).contains(&v) {
        return Err(ParamError::new(
            name,
            format!("must be between 1 and {max}, not {v}"),
        ));
    }
    Ok(v as usize)
}

/// Real taps from `taps`, `taps_file` or `design` (complex taps are refused).
fn real_taps(p: &mut Params) -> Result<Vec<f32>, ParamError> {
    match taps_from(p)? {
        Taps::Real(t) => Ok(t),
        Taps::Complex(_) => Err(ParamError::new(
            "taps",
            "must be real (the block rotates them to the band itself)",
        )),
    }
}

fn rotator(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let f = p.f64_or("frequency", 0.0)?;
    let rate = p.f64("sample_rate")?;
    let block = FrequencyShift::new(f, rate).map_err(node_err("sample_rate"))?;
    Ok(Box::new(Rated::new(block)))
}

fn fm_demod(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let channels = count(p, "channels", Some(1), 1 << 16)?;
    let gain = match p.opt_f64("deviation")? {
        Some(dev) => {
            let rate = p.f64("sample_rate")?;
            if !(dev > 0.0 && rate > 0.0 && dev.is_finite() && rate.is_finite()) {
                return Err(ParamError::new(
                    "deviation",
                    "deviation and sample_rate must be positive",
                ));
            }
            if p.opt_f64("gain")?.is_some() {
                return Err(ParamError::new("gain", "give gain or deviation, not both"));
            }
            rate / (std::f64::consts::TAU * dev)
        }
        None => p.f64_or("gain", 1.0)?,
    };
    let block = FmDemodulator::new(gain as f32, channels).map_err(node_err("gain"))?;
    Ok(Box::new(Rated::new(block)))
}

/// `fm_demod` compares each sample (vector) with the one before it: one item of history.
fn fm_demod_memory(_: &mut Params) -> Result<Memory, ParamError> {
    Ok(Memory::Finite {
        decimation: 1,
        history: 1,
    })
}

fn xlating(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let d = count(p, "decimation", None, 1 << 20)?;
    let center = p.f64_or("center", 0.0)?;
    let rate = p.f64("sample_rate")?;
    let taps = real_taps(p)?;
    ensure_fits(
        "num_taps",
        taps.len() as u128 * 8 * 4,
        "the taps and their history",
    )?;
    let block = FreqXlatingFir::new(&taps, d, center, rate).map_err(node_err("sample_rate"))?;
    Ok(Box::new(Rated::new(block)))
}

fn rational(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let i = count(p, "interpolation", None, 1 << 16)?;
    let d = count(p, "decimation", None, 1 << 16)?;
    let per_phase = count(p, "taps_per_phase", Some(24), 1 << 16)?;
    let given = ["taps", "taps_file", "design"]
        .iter()
        .any(|n| p.span(n).is_some());
    let taps = if given {
        real_taps(p)?
    } else {
        // Low-pass at the interpolated rate, cut at 0.8 of the lower Nyquist, gain I.
        let cutoff = 0.4 / i.max(d) as f64;
        let h = lowpass(i * per_phase, cutoff, Window::Kaiser { beta: 8.0 })
            .map_err(|e| ParamError::new("taps_per_phase", e.to_string()))?;
        h.iter().map(|v| v * i as f32).collect()
    };
    let block = RationalResamplerBlock::new(i, d, &taps).map_err(node_err("interpolation"))?;
    Ok(Box::new(Rated::new(block)))
}

fn arb(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let ratio = p.f64("ratio")?;
    Ok(Box::new(
        ArbResamplerBlock::new(ratio).map_err(node_err("ratio"))?,
    ))
}

fn channelizer(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let m = count(p, "channels", None, 1 << 16)?;
    let oversample = count(p, "oversample", Some(1), 2)?;
    if m < 2 || m % oversample != 0 {
        return Err(ParamError::new(
            "channels",
            format!("must be at least 2 (and even when oversample = 2), not {m}"),
        ));
    }
    let per_branch = count(p, "taps_per_branch", Some(18), 1 << 10)?;
    let layout = match p.opt_str("layout")?.as_deref().unwrap_or("streams") {
        "streams" => ChannelOutputs::Streams,
        "vectors" => ChannelOutputs::Vectors,
        other => {
            return Err(ParamError::new(
                "layout",
                format!("unknown layout '{other}' (use streams or vectors)"),
            ))
        }
    };
    let outputs: Option<Vec<usize>> = match p.opt_f64_list("outputs")? {
        None => None,
        Some(list) => Some(
            list.iter()
                .map(|&c| {
                    if c.fract() == 0.0 && c >= 0.0 && c < m as f64 {
                        Ok(c as usize)
                    } else {
                        Err(ParamError::new(
                            "outputs",
                            format!("{c} is not a channel index below {m}"),
                        ))
                    }
                })
                .collect::<Result<_, _>>()?,
        ),
    };
    ensure_fits(
        "channels",
        (m * per_branch) as u128 * 8 * 8,
        &format!("{m} channels of {per_branch}-tap branches and their history"),
    )?;
    let taps = Channelizer::prototype(m, per_branch)
        .map_err(|e| ParamError::new("taps_per_branch", e.to_string()))?;
    let kernel = Channelizer::new(m, m / oversample, &taps, outputs.as_deref())
        .map_err(|e| ParamError::new("outputs", e.to_string()))?;
    Ok(Box::new(ChannelizerBlock::new(kernel, layout)))
}

/// What a `channelizer` remembers. Critically sampled (`D = M`): frame `n` reads the `P·M`
/// samples ending at `n·M`, and its phase factors repeat every frame, so `P·M − 1` samples of
/// history. Oversampled (`D = M/2`): the factors of frame `n` depend on `n` mod 2, which a
/// fresh instance started at an odd multiple of `D` gets wrong: infinite.
fn channelizer_memory(p: &mut Params) -> Result<Memory, ParamError> {
    let m = count(p, "channels", None, 1 << 16)? as u64;
    let oversample = count(p, "oversample", Some(1), 2)?;
    let per_branch = count(p, "taps_per_branch", Some(18), 1 << 10)? as u64;
    p.opt_str("layout")?;
    p.opt_f64_list("outputs")?;
    if oversample != 1 {
        return Ok(Memory::Infinite);
    }
    Ok(Memory::Finite {
        decimation: m,
        history: m * per_branch - 1,
    })
}

fn xlating_params() -> Vec<ParamDecl> {
    [
        vec![
            Param::integer("decimation", "keep one output in this many"),
            Param::number("center", "frequency moved to 0 Hz")
                .unit("Hz")
                .default(0.0)
                .settable(),
            param_sample_rate(),
        ],
        taps_params(),
        hz_params(),
    ]
    .concat()
}

fn rational_params() -> Vec<ParamDecl> {
    [vec![
        Param::integer("interpolation", "I: output samples per D input samples"),
        Param::integer("decimation", "D"),
        Param::integer("taps_per_phase", "without taps: design I x this many taps (Kaiser low-pass at 0.4/max(I, D), gain I)").default(24),
    ], taps_params()].concat()
}

/// The radio blocks.
pub(super) fn block_types() -> Vec<BlockType> {
    vec![
        BlockType::new("rotator", Family::Radio, "Frequency shift of a complex stream by `frequency` Hz, retunable while running (phase-continuous).")
            .gnuradio(&["rotator", "freq_shift"])
            .port(PortDecl::input("in", ItemDecl::fixed("c32")))
            .port(PortDecl::output("out", ItemDecl::fixed("c32")))
            .param(Param::number("frequency", "shift in Hz, negative shifts down").derived("0").settable())
            .param(param_sample_rate())
            .example("frequency = -125000.0, sample_rate = 1000000.0")
            .memory(|_| Ok(Memory::Infinite))
            .build(rotator),
        BlockType::new("fm_demod", Family::Radio, "FM quadrature demodulator: gain x phase step per sample; `channels` > 1 demodulates vectors of that many channels in one node.")
            .gnuradio(&["quadrature_demod"])
            .port(PortDecl::input("in", ItemDecl::fixed("c32")).vlen(Vlen::param("channels")))
            .port(PortDecl::output("out", ItemDecl::fixed("f32")).vlen(Vlen::param("channels")))
            .param(Param::integer("channels", "channels per vector item").default(1))
            .param(Param::number("gain", "output per radian of phase step").derived("1.0, or from deviation"))
            .param(Param::number("deviation", "peak deviation in Hz: sets gain = sample_rate / (2 pi deviation), so it maps to +-1").derived("-"))
            .param(Param::number("sample_rate", "sample rate (with deviation)").follows_stream())
            .example("deviation = 12000.0, sample_rate = 60000.0")
            .memory(fm_demod_memory)
            .build(fm_demod),
        BlockType::new("xlating_fir", Family::Channelizers, "Frequency-translating decimating FIR: moves `center` Hz to 0, low-passes with real taps, keeps one in `decimation`.")
            .gnuradio(&["freq_xlating_fir_filter"])
            .port(PortDecl::input("in", ItemDecl::fixed("c32")))
            .port(PortDecl::output("out", ItemDecl::fixed("c32")))
            .params(xlating_params())
            .rate(Rate::divided_by("decimation"))
            .example(r#"decimation = 100, center = 250000.0, sample_rate = 20000000.0, design = "lowpass", num_taps = 256, cutoff = 0.004"#)
            .build(xlating),
        BlockType::new("rational_resampler", Family::Resampling, "Polyphase rational resampler: interpolation/decimation times the input rate.")
            .gnuradio(&["rational_resampler", "rational_resampler_base"])
            .port(PortDecl::input("in", ItemDecl::fixed("c32")))
            .port(PortDecl::output("out", ItemDecl::fixed("c32")))
            .params(rational_params())
            .rate(Rate::scaled(|p| {
                let (i, d) = (p.opt_u64("interpolation").ok()??, p.opt_u64("decimation").ok()??);
                (d > 0).then(|| i as f64 / d as f64)
            }))
            .example("interpolation = 3, decimation = 2, taps_per_phase = 48")
            .build(rational),
        BlockType::new("arb_resampler", Family::Resampling, "Arbitrary-ratio resampler (windowed-sinc polyphase bank): output m is the input at time m / ratio.")
            .gnuradio(&["pfb_arb_resampler", "arb_resampler", "fractional_resampler", "mmse_resampler"])
            .port(PortDecl::input("in", ItemDecl::fixed("c32")))
            .port(PortDecl::output("out", ItemDecl::fixed("c32")))
            .param(Param::number("ratio", "output rate / input rate (0.001 to 1000)"))
            .rate(Rate::scaled(|p| p.opt_f64("ratio").ok()?))
            .example("ratio = 0.91875")
            .build(arb),
        BlockType::new("channelizer", Family::Channelizers, "Polyphase filter-bank channelizer: `channels` channels at k x fs/channels, critically sampled or 2x oversampled, chosen channels out as streams or vectors.")
            .gnuradio(&["pfb_channelizer"])
            .input("in", ItemDecl::fixed("c32"))
            .port(
                PortDecl::output("out", ItemDecl::fixed("c32"))
                    .counted_when_built("one per channel in `outputs`")
                    .when("layout", "streams"),
            )
            .port(
                PortDecl::output("out", ItemDecl::fixed("c32"))
                    .vlen(Vlen::param("outputs"))
                    .when("layout", "vectors"),
            )
            .param(Param::integer("channels", "number of channels M (any, at least 2)"))
            .rate(Rate::scaled(|p| {
                let m = p.opt_u64("channels").ok()??;
                let over = p.opt_u64("oversample").ok()?.unwrap_or(1);
                (m > 0).then(|| over as f64 / m as f64)
            }))
            .param(Param::integer("oversample", "1: one frame per M samples; 2: per M/2 samples (M even)").default(1))
            .param(Param::integer("taps_per_branch", "prototype taps per branch (Kaiser low-pass cut at the channel edge)").default(18))
            .param(Param::numbers("outputs", "channel indices to output, in port/vector order (channel k is centred on k x fs/M)").derived("all"))
            .param(Param::text("layout", "streams (one port per channel) or vectors (one port, one sample per channel per item)").derived("streams"))
            .example(r#"channels = 512, oversample = 2, outputs = [1, 2, 511], layout = "vectors""#)
            .memory(channelizer_memory)
            .build(channelizer),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::standard_registry;

    /// Each radio block from a graph file: source → head → block → sink(s), run to the end.
    #[test]
    fn every_radio_block_runs_from_a_graph_file() {
        let cases = [
            ("rotator", "frequency = 1000.0, sample_rate = 48000.0", "c32", 1, 4800),
            ("fm_demod", "channels = 4", "f32", 1, 4800),
            ("xlating_fir", "decimation = 10, center = 1000.0, sample_rate = 48000.0, design = \"lowpass\", num_taps = 64, cutoff = 0.04", "c32", 1, 480),
            ("rational_resampler", "interpolation = 3, decimation = 2", "c32", 1, 7200),
            ("arb_resampler", "ratio = 0.5", "c32", 1, 2400),
            ("channelizer", "channels = 8, outputs = [7, 1]", "c32", 2, 600),
            ("channelizer", "channels = 8, oversample = 2, layout = \"vectors\"", "c32", 1, 9600),
        ];
        let registry = standard_registry();
        for (kind, params, out_item, sinks, want) in cases {
            // fm_demod takes vectors of 4: pack the stream first.
            let (feed, vlen) = if kind == "fm_demod" {
                ("pack", ", vlen = 4")
            } else {
                ("dut", "")
            };
            let mut text = format!(
                "[[node]]\nname = \"src\"\ntype = \"null_source\"\nparams = {{ item = \"c32\" }}\n\n\
                 [[node]]\nname = \"head\"\ntype = \"head\"\nparams = {{ item = \"c32\", items = 4800 }}\n\n\
                 [[node]]\nname = \"pack\"\ntype = \"stream_to_vector\"\nparams = {{ item = \"c32\", vlen = 4 }}\n\n\
                 [[node]]\nname = \"dut\"\ntype = \"{kind}\"\nparams = {{ {params} }}\n\n\
                 [[edge]]\nfrom = \"src.out\"\nto = \"head.in\"\n\n[[edge]]\nfrom = \"head.out\"\nto = \"{feed}.in\"\n"
            );
            if feed == "pack" {
                text += "\n[[edge]]\nfrom = \"pack.out\"\nto = \"dut.in\"\n";
            } else {
                text = text.replace("[[node]]\nname = \"pack\"\ntype = \"stream_to_vector\"\nparams = { item = \"c32\", vlen = 4 }\n\n", "");
            }
            let sink_vlen = if params.contains("vectors") {
                ", vlen = 8"
            } else {
                vlen
            };
            for s in 0..sinks {
                let port = if sinks == 1 {
                    "out".to_string()
                } else {
                    format!("out{s}")
                };
                text += &format!(
                    "\n[[node]]\nname = \"sink{s}\"\ntype = \"null_sink\"\nparams = {{ item = \"{out_item}\"{sink_vlen} }}\n\n\
                     [[edge]]\nfrom = \"dut.{port}\"\nto = \"sink{s}.in\"\n"
                );
            }
            let graph = sluice_graph::load_str(&text, "radio.toml", &registry)
                .unwrap_or_else(|e| panic!("{kind}: {e}\n{text}"));
            let report = graph
                .run_stepped()
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            let got = report.node("sink0").unwrap().items_in;
            assert_eq!(got, want, "{kind} ({params})");
        }
    }

    #[test]
    fn bad_parameters_name_themselves() {
        let registry = standard_registry();
        for (kind, params, bad) in [
            ("channelizer", "channels = 7, oversample = 2", "channels"),
            ("channelizer", "channels = 8, outputs = [8]", "outputs"),
            ("channelizer", "channels = 8, layout = \"rows\"", "layout"),
            (
                "rational_resampler",
                "interpolation = 0, decimation = 2",
                "interpolation",
            ),
            ("fm_demod", "deviation = 5000.0", "sample_rate"),
            (
                "xlating_fir",
                "decimation = 4, sample_rate = 1.0, taps_file = \"/nonexistent.taps\"",
                "taps_file",
            ),
            ("arb_resampler", "ratio = -2.0", "ratio"),
        ] {
            let text =
                format!("[[node]]\nname = \"dut\"\ntype = \"{kind}\"\nparams = {{ {params} }}\n");
            let err = sluice_graph::load_str(&text, "bad.toml", &registry)
                .err()
                .unwrap();
            assert!(
                err.to_string().contains(&format!("parameter '{bad}'")),
                "{kind}: {err}"
            );
        }
    }
}
