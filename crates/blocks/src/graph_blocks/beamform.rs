//! The beamforming blocks as graph-file block types: `beamformer` and `array_source`.

use crate::blocks::beamform::parse_taper;
use crate::blocks::{ArraySource, BeamPattern, Beamformer, SteeringMode};
use sluice_graph::{BlockType, Family, ItemDecl, Param, ParamError, Params, PortDecl, Rate};
use sluice_kernels::{ArrayGenerator, Emission, PlaneWave, Steering};
use sluice_runtime::{Node, NodeError};

fn node_err(param: &'static str) -> impl Fn(NodeError) -> ParamError {
    move |e| ParamError::new(param, e.to_string())
}

/// A count parameter within `1..=max`.
fn count(p: &mut Params, name: &str, default: Option<u64>, max: u64) -> Result<usize, ParamError> {
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

/// `angles`, `spacing`, `taper` and the array size (`elements`, default `first + antennas`).
fn steering(p: &mut Params, first: usize, antennas: usize) -> Result<Steering, ParamError> {
    let angles = p
        .opt_f64_list("angles")?
        .ok_or_else(|| ParamError::new("angles", "is required: one angle per beam, degrees"))?;
    let elements = p.u64_or("elements", (first + antennas) as u64)? as usize;
    let taper = p.opt_str("taper")?.unwrap_or_else(|| "rect".into());
    let steering = Steering {
        elements,
        spacing: p.f64_or("spacing", 0.5)?,
        angles,
        taper: parse_taper(&taper).map_err(node_err("taper"))?,
    };
    steering
        .check()
        .map_err(|e| ParamError::new("angles", e.to_string()))?;
    Ok(steering)
}

fn beamformer(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let antennas = count(p, "antennas", None, sluice_kernels::MAX_ANTENNAS as u64)?;
    let first = p.u64_or("first", 0)? as usize;
    let steering = steering(p, first, antennas)?;
    if first + antennas > steering.elements {
        return Err(ParamError::new(
            "first",
            format!(
                "elements {first}..{} lie outside an array of {}",
                first + antennas,
                steering.elements
            ),
        ));
    }
    let mode = match p.opt_str("mode")?.as_deref().unwrap_or("phase") {
        "phase" => SteeringMode::Phase,
        "delay" => {
            let rate = p.f64("sample_rate")?;
            let carrier = p.f64("carrier")?;
            if !(rate > 0.0 && carrier > 0.0 && rate.is_finite() && carrier.is_finite()) {
                return Err(ParamError::new(
                    "carrier",
                    "carrier and sample_rate must be positive",
                ));
            }
            SteeringMode::Delay {
                samples_per_cycle: rate / carrier,
            }
        }
        other => {
            return Err(ParamError::new(
                "mode",
                format!("unknown mode '{other}' (use phase or delay)"),
            ))
        }
    };
    let block = Beamformer::new(steering, first, antennas, mode).map_err(node_err("antennas"))?;
    Ok(Box::new(block))
}

/// The `index`-th value of an optional per-source list, or `default`.
fn nth(list: &Option<Vec<f64>>, index: usize, default: f64) -> f64 {
    list.as_ref()
        .and_then(|l| l.get(index).copied())
        .unwrap_or(default)
}

fn array_source(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let elements = count(p, "elements", None, 4096)?;
    let spacing = p.f64_or("spacing", 0.5)?;
    let carrier = p.f64("carrier")?;
    let rate = p.f64("sample_rate")?;
    let angles = p.opt_f64_list("angles")?.unwrap_or_default();
    let offsets = p.opt_f64_list("offsets")?;
    let amplitudes = p.opt_f64_list("amplitudes")?;
    let deviation = p.f64_or("deviation", 5000.0)?;
    let kinds = p.opt_str("signals")?.unwrap_or_default();
    let kinds: Vec<&str> = kinds
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .collect();
    if kinds.len() > angles.len() {
        return Err(ParamError::new("signals", "more signals than angles"));
    }
    let mut sources = Vec::new();
    for (i, &angle) in angles.iter().enumerate() {
        let emission = match kinds.get(i).copied().unwrap_or("tone") {
            "tone" => Emission::Tone,
            "noise" => Emission::Noise,
            "fm" => Emission::Fm { deviation },
            other => {
                return Err(ParamError::new(
                    "signals",
                    format!("unknown signal '{other}' (use tone, noise or fm)"),
                ))
            }
        };
        sources.push(PlaneWave {
            angle,
            offset: nth(&offsets, i, 0.0),
            amplitude: nth(&amplitudes, i, 1.0),
            emission,
        });
    }
    let noise = p.f64_or("noise", 0.1)?;
    let seed = p.u64_or("seed", 1)?;
    let items = p.opt_u64("items")?;
    let generator = ArrayGenerator::new(elements, spacing, carrier, rate, sources, noise, seed)
        .map_err(|e| ParamError::new("angles", e.to_string()))?;
    Ok(Box::new(
        ArraySource::new(generator, items).with_rate_tag(rate),
    ))
}

fn beam_pattern(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let elements = count(p, "elements", None, sluice_kernels::MAX_ANTENNAS as u64)?;
    let path = p.str("path")?;
    let (from, to, step) = (
        p.f64_or("from", -90.0)?,
        p.f64_or("to", 90.0)?,
        p.f64_or("step", 0.5)?,
    );
    if !(-90.0 <= from && from < to && to <= 90.0 && step > 0.0 && (to - from) / step <= 7200.0) {
        return Err(ParamError::new(
            "step",
            "need -90 <= from < to <= 90 and 0 < step, at most 7200 angles",
        ));
    }
    let angles: Vec<f64> = (0..=((to - from) / step + 1e-9) as usize)
        .map(|i| from + step * i as f64)
        .collect();
    let taper = p.opt_str("taper")?.unwrap_or_else(|| "rect".into());
    let steering = Steering {
        elements,
        spacing: p.f64_or("spacing", 0.5)?,
        angles,
        taper: parse_taper(&taper).map_err(node_err("taper"))?,
    };
    let marks = p.opt_f64_list("marks")?.unwrap_or_default();
    let block = BeamPattern::new(steering, path.into(), marks).map_err(node_err("spacing"))?;
    Ok(Box::new(block))
}

/// The beamforming blocks.
pub(super) fn block_types() -> Vec<BlockType> {
    vec![BlockType::new("array_source", Family::Beamforming, "A uniform linear array receiving plane waves (tones, noise or FM at chosen angles) plus independent noise per antenna, at complex baseband: one output per antenna.")
        .port(PortDecl::output("out", ItemDecl::fixed("c32")).counted("elements"))
        .param(Param::integer("elements", "antennas (outputs)").range(1.0, 64.0))
        .param(Param::number("spacing", "element spacing in wavelengths at the carrier").default(0.5))
        .param(Param::number("carrier", "carrier frequency, Hz"))
        .param(Param::number("sample_rate", "samples per second").unit("Hz"))
        .rate(Rate::param("sample_rate"))
        .param(Param::numbers("angles", "one arrival angle per source, degrees from broadside").derived("[]"))
        .param(Param::text("signals", "comma-separated kind per source: tone, noise or fm (tones and FM are true-time-delayed, noise narrowband)").derived("tone,..."))
        .param(Param::numbers("offsets", "per source: frequency offset from the carrier, Hz").derived("0"))
        .param(Param::numbers("amplitudes", "per source: amplitude (RMS for noise)").derived("1"))
        .param(Param::number("deviation", "FM peak deviation, Hz (1 kHz modulating tone)").default(5000.0))
        .param(Param::number("noise", "RMS of the independent noise of each antenna").default(0.1))
        .param(Param::integer("seed", "noise seed").default(1))
        .param(Param::integer("items", "samples per antenna").derived("endless"))
        .example(r#"elements = 4, carrier = 2.4e9, sample_rate = 1e6, angles = [20.0, -40.0], signals = "tone,fm", offsets = [10000.0, -50000.0], noise = 0.3, items = 100000"#)
        .build(array_source),
    BlockType::new("beam_pattern", Family::Beamforming, "Sink: scans beams over a range of steering angles on every antenna's stream and draws the power against angle as a PNG when the streams end.")
        .port(PortDecl::input("in", ItemDecl::fixed("c32")).counted("elements"))
        .param(Param::integer("elements", "antennas (inputs), the whole array").range(1.0, 64.0))
        .param(Param::writes("path", "PNG file to write"))
        .param(Param::number("spacing", "element spacing in wavelengths").default(0.5))
        .param(Param::text("taper", "rect, hamming, blackman or kaiser:<beta>").derived("rect"))
        .param(Param::number("from", "first angle, degrees").default(-90.0))
        .param(Param::number("to", "last angle, degrees").default(90.0))
        .param(Param::number("step", "angle step, degrees").default(0.5))
        .param(Param::numbers("marks", "angles to mark with a vertical line (the beams, the sources)").derived("[]"))
        .example(r#"elements = 4, path = "pattern.png", marks = [20.0]"#)
        .build(beam_pattern),
    BlockType::new("beamformer", Family::Beamforming, "Delay-and-sum beams of a uniform linear array: phase steering (narrowband) or true time delay (wideband, 16-tap fractional delays); a partial-sum instance covers elements first..first+antennas and its beams add up with other instances' (sum blocks) to the full beams.")
        .port(PortDecl::input("in", ItemDecl::fixed("c32")).counted("antennas"))
        .port(PortDecl::output("beam", ItemDecl::fixed("c32")).counted("antennas"))
        .param(Param::integer("antennas", "inputs of this node: elements first..first+antennas").range(1.0, 64.0))
        .param(Param::numbers("angles", "steering angles in degrees from broadside, one per beam (1-32; while running, as \"a, b, ...\")").settable())
        .param(Param::integer("elements", "elements of the full array (weights and delays come from it)").derived("first+antennas"))
        .param(Param::integer("first", "index of this node's first element in the full array").default(0))
        .param(Param::number("spacing", "element spacing in wavelengths at the carrier").default(0.5))
        .param(Param::text("taper", "rect, hamming, blackman or kaiser:<beta> over the full array").derived("rect").settable())
        .param(Param::text("mode", "phase (complex weights) or delay (true time delay, then the weights)").derived("phase"))
        .param(Param::number("sample_rate", "the stream's rate (mode = delay)").follows_stream())
        .param(Param::number("carrier", "carrier frequency in Hz (mode = delay)").derived("-"))
        .example(r#"antennas = 2, first = 2, elements = 6, angles = [-20.0, 30.0], taper = "hamming""#)
        .build(beamformer)]
}

#[cfg(test)]
mod tests {
    use super::super::standard_registry;

    /// array_source → beamformer (both modes) → null sinks, from a graph file, to the end:
    /// phase steering passes every item, true-time delay all but its latency and taps.
    #[test]
    fn both_modes_run_from_a_graph_file() {
        let registry = standard_registry();
        for (mode, lost) in [
            ("mode = \"phase\"", 0),
            (
                "mode = \"delay\", sample_rate = 4e9, carrier = 1e9",
                15 + 8, // latency: max delay 3 x 0.5 x 4 = 6, + 9; then 8 taps past it
            ),
        ] {
            let mut text = String::from(
                "[[node]]\nname = \"ula\"\ntype = \"array_source\"\n\
                 params = { elements = 4, carrier = 1e9, sample_rate = 4e9, angles = [30.0], signals = \"fm\", items = 10000 }\n\n",
            );
            text += &format!(
                "[[node]]\nname = \"bf\"\ntype = \"beamformer\"\nparams = {{ antennas = 4, angles = [30.0, -10.0], {mode} }}\n\n"
            );
            for b in 0..2 {
                text += &format!("[[node]]\nname = \"sink{b}\"\ntype = \"null_sink\"\nparams = {{ item = \"c32\" }}\n\n[[edge]]\nfrom = \"bf.beam{b}\"\nto = \"sink{b}.in\"\n\n");
            }
            for k in 0..4 {
                text += &format!("[[edge]]\nfrom = \"ula.out{k}\"\nto = \"bf.in{k}\"\n\n");
            }
            let graph = sluice_graph::load_str(&text, "beams.toml", &registry)
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            let report = graph.run_stepped().unwrap();
            for b in 0..2 {
                let got = report.node(&format!("sink{b}")).unwrap().items_in;
                assert_eq!(got, 10000 - lost, "{mode}, beam {b}");
            }
        }
    }

    #[test]
    fn bad_parameters_name_themselves() {
        let registry = standard_registry();
        for (params, bad) in [
            ("antennas = 4", "angles"),
            ("antennas = 4, angles = [100.0]", "angles"),
            (
                "antennas = 4, first = 3, elements = 6, angles = [0.0]",
                "first",
            ),
            ("antennas = 65, angles = [0.0]", "antennas"),
            ("antennas = 4, angles = [0.0], taper = \"cosine\"", "taper"),
            (
                "antennas = 4, angles = [0.0], mode = \"delay\", sample_rate = 1.0",
                "carrier",
            ),
            ("antennas = 4, angles = [0.0], mode = \"fast\"", "mode"),
        ] {
            let text = format!(
                "[[node]]\nname = \"dut\"\ntype = \"beamformer\"\nparams = {{ {params} }}\n"
            );
            let err = sluice_graph::load_str(&text, "bad.toml", &registry)
                .err()
                .unwrap();
            assert!(
                err.to_string().contains(&format!("parameter '{bad}'")),
                "{params}: {err}"
            );
        }
    }
}
