//! Receiver blocks, each on `channels` channels: IIR (biquad cascade), FM de-emphasis, DC
//! blocker, AGC and AM demodulator.

use super::common::{channels, dsp_err, node_err, param_channels, positive, sample_item};
use super::infinite;
use crate::blocks::{AgcBlock, AmDemodBlock, IirFilter, PowerSquelch};
use num_complex::Complex32;
use sluice_graph::{
    BlockType, Family, ItemDecl, Param, ParamDecl, ParamError, Params, PortDecl, Vlen,
};
use sluice_kernels::{butterworth, dc_blocker, deemphasis, AgcSettings, Biquad, Butterworth};
use sluice_runtime::{Node, Rated};

fn param_item_f32() -> ParamDecl {
    Param::choice(
        "item",
        &["f32", "c32"],
        "sample type: f32 or c32 (complex f32)",
    )
    .default("f32")
}

/// An IIR node of `item` on `channels` channels with `sections`.
fn iir_node(item: &str, sections: &[Biquad], channels: usize) -> Result<Box<dyn Node>, ParamError> {
    if item == "c32" {
        Ok(Box::new(Rated::new(
            IirFilter::<Complex32>::new(sections, channels).map_err(node_err("sos"))?,
        )))
    } else {
        Ok(Box::new(Rated::new(
            IirFilter::<f32>::new(sections, channels).map_err(node_err("sos"))?,
        )))
    }
}

/// The sections a graph file gives: `sos` (rows of b0 b1 b2 a0 a1 a2) or a Butterworth design.
fn sections(p: &mut Params) -> Result<Vec<Biquad>, ParamError> {
    let sos = p.opt_f64_list("sos")?;
    let design = p.opt_str("design")?;
    match (sos, design) {
        (Some(c), None) => {
            if c.is_empty() || c.len() % 6 != 0 {
                return Err(ParamError::new(
                    "sos",
                    format!(
                        "holds {} numbers; give rows of six (b0, b1, b2, a0, a1, a2)",
                        c.len()
                    ),
                ));
            }
            c.chunks_exact(6)
                .map(|r| {
                    Biquad::new([r[0], r[1], r[2]], [r[3], r[4], r[5]]).map_err(dsp_err("sos"))
                })
                .collect()
        }
        (None, Some(kind)) => {
            let order = p.u64_or("order", 4)? as usize;
            let kind = match kind.as_str() {
                "lowpass" => Butterworth::Lowpass {
                    cutoff: p.f64("cutoff")?,
                },
                "highpass" => Butterworth::Highpass {
                    cutoff: p.f64("cutoff")?,
                },
                "bandpass" => Butterworth::Bandpass {
                    low: p.f64("low")?,
                    high: p.f64("high")?,
                },
                other => {
                    return Err(ParamError::new(
                        "design",
                        format!("unknown design '{other}' (use lowpass, highpass or bandpass)"),
                    ))
                }
            };
            butterworth(kind, order).map_err(dsp_err("order"))
        }
        (None, None) => Err(ParamError::new("", "needs sections: give sos or design")),
        _ => Err(ParamError::new("", "give only one of sos and design")),
    }
}

fn iir(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let item = sample_item(p, "f32")?;
    let n = channels(p)?;
    iir_node(&item, &sections(p)?, n)
}

fn deemph(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let item = sample_item(p, "f32")?;
    let n = channels(p)?;
    let tau = p.f64_or("tau", 75e-6)?;
    let rate = p.f64("sample_rate")?;
    let section = deemphasis(tau, rate).map_err(dsp_err("tau"))?;
    iir_node(&item, &[section], n)
}

fn squelch(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let n = channels(p)?;
    let threshold = p.f64("threshold_db")?;
    let alpha = p.f64_or("alpha", 1e-3)?;
    let block = PowerSquelch::new(threshold, alpha, n).map_err(node_err("threshold_db"))?;
    Ok(Box::new(Rated::new(block)))
}

fn dc(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let item = sample_item(p, "f32")?;
    let n = channels(p)?;
    let section = dc_blocker(p.f64_or("pole", 0.999)?).map_err(dsp_err("pole"))?;
    iir_node(&item, &[section], n)
}

fn agc(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let item = sample_item(p, "f32")?;
    let n = channels(p)?;
    let d = AgcSettings::default();
    let settings = AgcSettings {
        reference: positive(p, "reference", d.reference.into())? as f32,
        attack: p.f64_or("attack", d.attack.into())? as f32,
        decay: p.f64_or("decay", d.decay.into())? as f32,
        max_gain: p.f64_or("max_gain", d.max_gain.into())? as f32,
    };
    let err = |e: sluice_runtime::NodeError| {
        let text = e.to_string();
        let param = ["attack", "decay", "max_gain", "reference"]
            .into_iter()
            .find(|k| text.contains(k))
            .unwrap_or("");
        ParamError::new(param, text)
    };
    if item == "c32" {
        Ok(Box::new(Rated::new(
            AgcBlock::<Complex32>::new(settings, n).map_err(err)?,
        )))
    } else {
        Ok(Box::new(Rated::new(
            AgcBlock::<f32>::new(settings, n).map_err(err)?,
        )))
    }
}

fn am(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let n = channels(p)?;
    let pole = p.f64_or("dc_pole", 0.999)?;
    Ok(Box::new(Rated::new(
        AmDemodBlock::new(pole, n).map_err(node_err("dc_pole"))?,
    )))
}

pub(super) fn block_types() -> Vec<BlockType> {
    vec![
        BlockType::new("iir", Family::Filters, "IIR filter as a cascade of biquads (f64 state), from coefficients (sos) or a Butterworth design; channels = N filters N channels in one node. Its state has infinite memory.")
            .gnuradio(&["iir_filter"])
            .port(PortDecl::input("in", ItemDecl::item()).vlen(Vlen::param("channels")))
            .port(PortDecl::output("out", ItemDecl::item()).vlen(Vlen::param("channels")))
            .param(param_item_f32())
            .param(param_channels())
            .param(Param::numbers("sos", "second-order sections as one list, six numbers a row: b0 b1 b2 a0 a1 a2 (scipy's sos)").derived("-"))
            .param(Param::text("design", "Butterworth lowpass, highpass or bandpass (bilinear transform, prewarped)").derived("-"))
            .param(Param::integer("order", "design order (1-16; a bandpass has twice the poles)").default(4))
            .param(Param::number("cutoff", "lowpass/highpass -3 dB point, cycles/sample (0..0.5)").derived("-"))
            .param(Param::number("low", "bandpass lower -3 dB point, cycles/sample").derived("-"))
            .param(Param::number("high", "bandpass upper -3 dB point, cycles/sample").derived("-"))
            .example(r#"item = "f32", design = "lowpass", order = 6, cutoff = 0.1, channels = 333"#)
            .memory(infinite)
            .build(iir),
        BlockType::new("deemphasis", Family::Radio, "FM de-emphasis, the one-pole low-pass 1/(1 + s·tau) (75 µs: Americas, Korea; 50 µs: elsewhere), corner prewarped to 1/(2π·tau). Its state has infinite memory.")
            .gnuradio(&["fm_deemph"])
            .port(PortDecl::input("in", ItemDecl::item()).vlen(Vlen::param("channels")))
            .port(PortDecl::output("out", ItemDecl::item()).vlen(Vlen::param("channels")))
            .param(param_item_f32())
            .param(param_channels())
            .param(Param::number("tau", "time constant in seconds").default(75e-6))
            .param(Param::number("sample_rate", "samples per second (per channel)").follows_stream())
            .example("tau = 75e-6, sample_rate = 48000, channels = 333")
            .memory(infinite)
            .build(deemph),
        BlockType::new("squelch", Family::Radio, "Power squelch per channel (GNU Radio's pwr_squelch_cc): a one-pole average of |x|^2; samples pass while it is at or above threshold_db, zeros otherwise (an FM demodulator then puts out silence, not full-scale noise).")
            .gnuradio(&["pwr_squelch", "simple_squelch"])
            .port(PortDecl::input("in", ItemDecl::fixed("c32")).vlen(Vlen::param("channels")))
            .port(PortDecl::output("out", ItemDecl::fixed("c32")).vlen(Vlen::param("channels")))
            .param(param_channels())
            .param(Param::number("threshold_db", "opening level: power in dB relative to a sample of magnitude 1"))
            .param(Param::number("alpha", "averaging weight per sample, 0 < alpha <= 1").default(1e-3))
            .example("channels = 333, threshold_db = -60.0")
            .memory(infinite)
            .build(squelch),
        BlockType::new("dc_blocker", Family::Filters, "Removes DC: (1 − z⁻¹)/(1 − pole·z⁻¹), -3 dB near (1 − pole)/2π cycles/sample. Its state has infinite memory.")
            .gnuradio(&["dc_blocker"])
            .port(PortDecl::input("in", ItemDecl::item()).vlen(Vlen::param("channels")))
            .port(PortDecl::output("out", ItemDecl::item()).vlen(Vlen::param("channels")))
            .param(param_item_f32())
            .param(param_channels())
            .param(Param::number("pole", "pole radius (0..1): closer to 1, narrower notch").default(0.999))
            .example(r#"item = "c32", pole = 0.9995"#)
            .memory(infinite)
            .build(dc),
        BlockType::new("agc", Family::Radio, "Automatic gain control per channel: an envelope with attack and decay rates, output at the reference level. Its envelope has infinite memory.")
            .gnuradio(&["agc", "agc2"])
            .port(PortDecl::input("in", ItemDecl::item()).vlen(Vlen::param("channels")))
            .port(PortDecl::output("out", ItemDecl::item()).vlen(Vlen::param("channels")))
            .param(param_item_f32())
            .param(param_channels())
            .param(Param::number("reference", "output envelope aimed for").default(1.0))
            .param(Param::number("attack", "rate (0..1] at which the envelope follows a rising level, per sample").default(0.1))
            .param(Param::number("decay", "rate (0..1] at which it follows a falling level, per sample").default(0.001))
            .param(Param::number("max_gain", "the largest gain (on silence)").default(1e5))
            .example(r#"item = "f32", reference = 0.3, attack = 0.01, decay = 0.0005, channels = 333"#)
            .memory(infinite)
            .build(agc),
        BlockType::new("am_demod", Family::Radio, "AM envelope demodulation: |x| with the carrier's DC removed by a DC blocker (whose state has infinite memory).")
            .gnuradio(&["am_demod"])
            .port(PortDecl::input("in", ItemDecl::fixed("c32")).vlen(Vlen::param("channels")))
            .port(PortDecl::output("out", ItemDecl::fixed("f32")).vlen(Vlen::param("channels")))
            .param(param_channels())
            .param(Param::number("dc_pole", "the DC blocker's pole (0..1)").default(0.999))
            .example("dc_pole = 0.999")
            .memory(infinite)
            .build(am),
    ]
}
