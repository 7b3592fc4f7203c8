//! Receiver blocks, each on `channels` channels: IIR (biquad cascade), FM de-emphasis, DC
//! blocker, AGC and AM demodulator.

use super::{channels, dsp_err, infinite, node_err, positive, sample_item, CHANNELS};
use crate::blocks::{AgcBlock, AmDemodBlock, IirFilter, PowerSquelch};
use num_complex::Complex32;
use sluice_graph::{BlockType, ParamDoc, ParamError, Params};
use sluice_kernels::{butterworth, dc_blocker, deemphasis, AgcSettings, Biquad, Butterworth};
use sluice_runtime::{Node, Rated};

const ITEM_F32: ParamDoc = ParamDoc {
    name: "item",
    default: "f32",
    help: "sample type: f32 or c32 (complex f32)",
};

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
        BlockType {
            name: "iir",
            help: "IIR filter as a cascade of biquads (f64 state), from coefficients (sos) or a Butterworth design; channels = N filters N channels in one node. Its state has infinite memory.",
            ports: "in: item[channels] -> out: item[channels]",
            params: &[
                ITEM_F32,
                CHANNELS,
                ParamDoc { name: "sos", default: "-", help: "second-order sections as one list, six numbers a row: b0 b1 b2 a0 a1 a2 (scipy's sos)" },
                ParamDoc { name: "design", default: "-", help: "Butterworth lowpass, highpass or bandpass (bilinear transform, prewarped)" },
                ParamDoc { name: "order", default: "4", help: "design order (1-16; a bandpass has twice the poles)" },
                ParamDoc { name: "cutoff", default: "-", help: "lowpass/highpass -3 dB point, cycles/sample (0..0.5)" },
                ParamDoc { name: "low", default: "-", help: "bandpass lower -3 dB point, cycles/sample" },
                ParamDoc { name: "high", default: "-", help: "bandpass upper -3 dB point, cycles/sample" },
            ],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"audio\"\ntype = \"iir\"\nparams = { item = \"f32\", design = \"lowpass\", order = 6, cutoff = 0.1, channels = 333 }",
            build: iir,
            memory: Some(infinite),
        },
        BlockType {
            name: "deemphasis",
            help: "FM de-emphasis, the one-pole low-pass 1/(1 + s·tau) (75 µs: Americas, Korea; 50 µs: elsewhere), corner prewarped to 1/(2π·tau). Its state has infinite memory.",
            ports: "in: item[channels] -> out: item[channels]",
            params: &[
                ITEM_F32,
                CHANNELS,
                ParamDoc { name: "tau", default: "75e-6", help: "time constant in seconds" },
                ParamDoc { name: "sample_rate", default: "required", help: "samples per second (per channel)" },
            ],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"deemph\"\ntype = \"deemphasis\"\nparams = { tau = 75e-6, sample_rate = 48000, channels = 333 }",
            build: deemph,
            memory: Some(infinite),
        },
        BlockType {
            name: "squelch",
            help: "Power squelch per channel (GNU Radio's pwr_squelch_cc): a one-pole average of |x|^2; samples pass while it is at or above threshold_db, zeros otherwise (an FM demodulator then puts out silence, not full-scale noise).",
            ports: "in: c32[channels] -> out: c32[channels]",
            params: &[
                CHANNELS,
                ParamDoc { name: "threshold_db", default: "required", help: "opening level: power in dB relative to a sample of magnitude 1" },
                ParamDoc { name: "alpha", default: "1e-3", help: "averaging weight per sample, 0 < alpha <= 1" },
            ],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"squelch\"\ntype = \"squelch\"\nparams = { channels = 333, threshold_db = -60.0 }",
            build: squelch,
            memory: Some(infinite),
        },
        BlockType {
            name: "dc_blocker",
            help: "Removes DC: (1 − z⁻¹)/(1 − pole·z⁻¹), -3 dB near (1 − pole)/2π cycles/sample. Its state has infinite memory.",
            ports: "in: item[channels] -> out: item[channels]",
            params: &[
                ITEM_F32,
                CHANNELS,
                ParamDoc { name: "pole", default: "0.999", help: "pole radius (0..1): closer to 1, narrower notch" },
            ],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"no_dc\"\ntype = \"dc_blocker\"\nparams = { item = \"c32\", pole = 0.9995 }",
            build: dc,
            memory: Some(infinite),
        },
        BlockType {
            name: "agc",
            help: "Automatic gain control per channel: an envelope with attack and decay rates, output at the reference level. Its envelope has infinite memory.",
            ports: "in: item[channels] -> out: item[channels]",
            params: &[
                ITEM_F32,
                CHANNELS,
                ParamDoc { name: "reference", default: "1.0", help: "output envelope aimed for" },
                ParamDoc { name: "attack", default: "0.1", help: "rate (0..1] at which the envelope follows a rising level, per sample" },
                ParamDoc { name: "decay", default: "0.001", help: "rate (0..1] at which it follows a falling level, per sample" },
                ParamDoc { name: "max_gain", default: "1e5", help: "the largest gain (on silence)" },
            ],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"level\"\ntype = \"agc\"\nparams = { item = \"f32\", reference = 0.3, attack = 0.01, decay = 0.0005, channels = 333 }",
            build: agc,
            memory: Some(infinite),
        },
        BlockType {
            name: "am_demod",
            help: "AM envelope demodulation: |x| with the carrier's DC removed by a DC blocker (whose state has infinite memory).",
            ports: "in: c32[channels] -> out: f32[channels]",
            params: &[
                CHANNELS,
                ParamDoc { name: "dc_pole", default: "0.999", help: "the DC blocker's pole (0..1)" },
            ],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"am\"\ntype = \"am_demod\"\nparams = { dc_pole = 0.999 }",
            build: am,
            memory: Some(infinite),
        },
    ]
}
