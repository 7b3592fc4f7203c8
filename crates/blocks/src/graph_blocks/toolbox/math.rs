//! Math and type conversion: two-stream arithmetic, constants, complex parts, integer IQ.

use super::{node_err, sample_item, stateless};
use crate::blocks::{AddConst, Binary, ComplexToIq, FloatToComplex, IqToComplex, Map};
use num_complex::Complex32;
use sluice_graph::{BlockType, ParamDoc, ParamError, Params};
use sluice_kernels::{BinaryOp, IqFormat};
use sluice_runtime::{Node, Rated};

const SAMPLE: ParamDoc = ParamDoc {
    name: "item",
    default: "c32",
    help: "sample type: c32 (complex f32) or f32",
};

const FORMAT: ParamDoc = ParamDoc {
    name: "format",
    default: "cu8",
    help: "cu8 (RTL-SDR, offset 127.5), ci8 (HackRF) or ci16 (USRP sc16, SigMF ci16_le): u8[2] or i16[2] per sample",
};

fn binary(p: &mut Params, op: BinaryOp) -> Result<Box<dyn Node>, ParamError> {
    match sample_item(p, "c32")?.as_str() {
        "f32" => Ok(Box::new(Binary::<f32>::with_op(op))),
        _ => Ok(Box::new(Binary::<Complex32>::with_op(op))),
    }
}

fn add_const(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let item = sample_item(p, "c32")?;
    let re = p.f64_or("value", 0.0)? as f32;
    let im = p.f64_or("value_im", 0.0)? as f32;
    if item == "f32" {
        if im != 0.0 {
            return Err(ParamError::new(
                "value_im",
                "needs item = \"c32\" (a real stream has no imaginary part)",
            ));
        }
        return Ok(Box::new(Rated::new(AddConst::new(re))));
    }
    Ok(Box::new(Rated::new(AddConst::new(Complex32::new(re, im)))))
}

fn format(p: &mut Params) -> Result<IqFormat, ParamError> {
    let name = p.opt_str("format")?.unwrap_or_else(|| "cu8".into());
    IqFormat::parse(&name).map_err(|e| ParamError::new("format", e.to_string()))
}

fn iq_to_c32(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    match format(p)? {
        IqFormat::Ci16 => Ok(Box::new(
            IqToComplex::<i16>::new(IqFormat::Ci16).map_err(node_err("format"))?,
        )),
        f => Ok(Box::new(
            IqToComplex::<u8>::new(f).map_err(node_err("format"))?,
        )),
    }
}

fn c32_to_iq(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    match format(p)? {
        IqFormat::Ci16 => Ok(Box::new(
            ComplexToIq::<i16>::new(IqFormat::Ci16).map_err(node_err("format"))?,
        )),
        f => Ok(Box::new(
            ComplexToIq::<u8>::new(f).map_err(node_err("format"))?,
        )),
    }
}

/// A block of `map`'s kind with no parameters.
macro_rules! part {
    ($name:literal, $help:literal, $ports:literal, $make:expr) => {
        BlockType {
            name: $name,
            help: $help,
            ports: $ports,
            params: &[],
            files: &[],
            settable: &[],
            example: concat!("[[node]]\nname = \"", $name, "\"\ntype = \"", $name, "\""),
            build: |_| Ok(Box::new(Rated::new($make))),
            memory: Some(stateless),
        }
    };
}

pub(super) fn block_types() -> Vec<BlockType> {
    vec![
        BlockType {
            name: "subtract",
            help: "Subtracts stream b from stream a item by item, reading both windows in place (ends with the shorter).",
            ports: "a, b: item -> out: item",
            params: &[SAMPLE],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"difference\"\ntype = \"subtract\"\nparams = { item = \"f32\" }",
            build: |p| binary(p, BinaryOp::Subtract),
            memory: None,
        },
        BlockType {
            name: "multiply",
            help: "Multiplies two streams item by item (the complex product for c32), reading both windows in place.",
            ports: "a, b: item -> out: item",
            params: &[SAMPLE],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"mix\"\ntype = \"multiply\"\nparams = { item = \"c32\" }",
            build: |p| binary(p, BinaryOp::Multiply),
            memory: None,
        },
        BlockType {
            name: "add_const",
            help: "Adds a constant to every sample (multiply_const scales).",
            ports: "in: item -> out: item",
            params: &[
                SAMPLE,
                ParamDoc { name: "value", default: "0.0", help: "the constant (its real part for c32)" },
                ParamDoc { name: "value_im", default: "0.0", help: "its imaginary part (c32 only)" },
            ],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"offset\"\ntype = \"add_const\"\nparams = { item = \"f32\", value = -0.5 }",
            build: add_const,
            memory: Some(stateless),
        },
        part!("conjugate", "Complex conjugate of every sample.", "in: c32 -> out: c32", Map::conjugate()),
        part!("magnitude", "|x| of every complex sample.", "in: c32 -> out: f32", Map::magnitude()),
        part!("magnitude_squared", "|x|² (power) of every complex sample.", "in: c32 -> out: f32", Map::magnitude_squared()),
        part!("complex_to_real", "The real part of every complex sample.", "in: c32 -> out: f32", Map::real_part()),
        part!("complex_to_imag", "The imaginary part of every complex sample.", "in: c32 -> out: f32", Map::imag_part()),
        BlockType {
            name: "float_to_complex",
            help: "A complex stream from a real part and an imaginary part (ends with the shorter).",
            ports: "re, im: f32 -> out: c32",
            params: &[],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"iq\"\ntype = \"float_to_complex\"",
            build: |_| Ok(Box::new(Rated::new(FloatToComplex))),
            memory: None,
        },
        BlockType {
            name: "iq_to_c32",
            help: "Interleaved integer IQ as SDR front ends give it (rtl_sdr, hackrf_transfer) to complex f32.",
            ports: "in: u8[2] (cu8, ci8) or i16[2] (ci16) -> out: c32",
            params: &[FORMAT],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"to_c32\"\ntype = \"iq_to_c32\"\nparams = { format = \"cu8\" }",
            build: iq_to_c32,
            memory: None,
        },
        BlockType {
            name: "c32_to_iq",
            help: "Complex f32 to interleaved integer IQ; values beyond the format's range are clipped and counted (a warning at the end).",
            ports: "in: c32 -> out: u8[2] (cu8, ci8) or i16[2] (ci16)",
            params: &[FORMAT],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"to_ci16\"\ntype = \"c32_to_iq\"\nparams = { format = \"ci16\" }",
            build: c32_to_iq,
            memory: None,
        },
    ]
}
