//! The beamforming blocks as graph-file block types: `beamformer` and `array_source`.

use crate::blocks::beamform::parse_taper;
use crate::blocks::{Beamformer, SteeringMode};
use crate::kernels::Steering;
use sluice_graph::{BlockType, ParamDoc, ParamError, Params};
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
    let antennas = count(p, "antennas", None, crate::kernels::MAX_ANTENNAS as u64)?;
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

/// The beamforming blocks.
pub(super) fn block_types() -> Vec<BlockType> {
    vec![BlockType {
        name: "beamformer",
        help: "Delay-and-sum beams of a uniform linear array: phase steering (narrowband) or true time delay (wideband, 16-tap fractional delays); a partial-sum instance covers elements first..first+antennas and its beams add up with other instances' (sum blocks) to the full beams.",
        ports: "in0, in1, ...: c32 -> beam0, beam1, ...: c32",
        params: &[
            ParamDoc { name: "antennas", default: "required", help: "inputs of this node (1-64): elements first..first+antennas" },
            ParamDoc { name: "angles", default: "required", help: "steering angles in degrees from broadside, one per beam (1-32; settable while running as \"a, b, ...\")" },
            ParamDoc { name: "elements", default: "first+antennas", help: "elements of the full array (weights and delays come from it)" },
            ParamDoc { name: "first", default: "0", help: "index of this node's first element in the full array" },
            ParamDoc { name: "spacing", default: "0.5", help: "element spacing in wavelengths at the carrier" },
            ParamDoc { name: "taper", default: "rect", help: "rect, hamming, blackman or kaiser:<beta> over the full array (settable while running)" },
            ParamDoc { name: "mode", default: "phase", help: "phase (complex weights) or delay (true time delay, then the weights)" },
            ParamDoc { name: "sample_rate", default: "-", help: "Hz (mode = delay)" },
            ParamDoc { name: "carrier", default: "-", help: "carrier frequency in Hz (mode = delay)" },
        ],
        files: &[],
        settable: &["angles", "taper"],
        example: r#"[[node]]
name = "beams"
type = "beamformer"
params = { antennas = 2, first = 2, elements = 6, angles = [-20.0, 30.0], taper = "hamming" }"#,
        build: beamformer,
    }]
}

#[cfg(test)]
mod tests {
    use super::super::standard_registry;

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
