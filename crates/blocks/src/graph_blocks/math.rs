//! Math and type conversion: two-stream arithmetic, constants, complex parts, integer IQ.

use super::common::{node_err, sample_item};
use super::stateless;
use crate::blocks::{AddConst, Binary, ComplexToIq, FloatToComplex, IqToComplex, Map};
use num_complex::Complex32;
use sluice_graph::{
    BlockType, Family, ItemDecl, Param, ParamDecl, ParamError, Params, PortDecl, Vlen,
};
use sluice_kernels::{BinaryOp, IqFormat};
use sluice_runtime::{Node, Rated};

fn param_sample() -> ParamDecl {
    Param::choice(
        "item",
        &["c32", "f32"],
        "sample type: c32 (complex f32) or f32",
    )
    .default("c32")
}

fn param_format() -> ParamDecl {
    Param::choice("format", &["cu8", "ci8", "ci16"], "cu8 (RTL-SDR, offset 127.5), ci8 (HackRF) or ci16 (USRP sc16, SigMF ci16_le): u8[2] or i16[2] per sample").default("cu8")
}

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

/// A block of `map`'s kind, from c32 to `out`, with no parameters.
fn part(
    name: &'static str,
    help: &'static str,
    out: &'static str,
    make: fn() -> Box<dyn Node>,
) -> BlockType {
    BlockType::new(name, Family::Math, help)
        .input("in", ItemDecl::fixed("c32"))
        .output("out", ItemDecl::fixed(out))
        .memory(stateless)
        .build(move |_| Ok(make()))
}

/// The integer IQ item of a `format`: two u8 or two i16 per sample.
fn iq_port(port: PortDecl) -> PortDecl {
    port.vlen(Vlen::Fixed(2))
}

fn iq_item() -> ItemDecl {
    ItemDecl::Mapped {
        param: "format".into(),
        cases: vec![
            ("cu8".into(), "u8".into()),
            ("ci8".into(), "u8".into()),
            ("ci16".into(), "i16".into()),
        ],
    }
}

pub(super) fn block_types() -> Vec<BlockType> {
    vec![
        BlockType::new("subtract", Family::Math, "Subtracts stream b from stream a item by item, reading both windows in place (ends with the shorter).")
            .gnuradio(&["sub"])
            .port(PortDecl::input("a", ItemDecl::item()))
            .port(PortDecl::input("b", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_sample())
            .example(r#"item = "f32""#)
            .build(|p| binary(p, BinaryOp::Subtract)),
        BlockType::new("multiply", Family::Math, "Multiplies two streams item by item (the complex product for c32), reading both windows in place.")
            .gnuradio(&["multiply"])
            .port(PortDecl::input("a", ItemDecl::item()))
            .port(PortDecl::input("b", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_sample())
            .example(r#"item = "c32""#)
            .build(|p| binary(p, BinaryOp::Multiply)),
        BlockType::new("add_const", Family::Math, "Adds a constant to every sample (multiply_const scales).")
            .gnuradio(&["add_const"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_sample())
            .param(Param::number("value", "the constant (its real part for c32)").default(0.0))
            .param(Param::number("value_im", "its imaginary part (c32 only)").default(0.0))
            .example(r#"item = "f32", value = -0.5"#)
            .memory(stateless)
            .build(add_const),
        part("conjugate", "Complex conjugate of every sample.", "c32", || Box::new(Rated::new(Map::conjugate()))).gnuradio(&["conjugate"]),
        part("magnitude", "|x| of every complex sample.", "f32", || Box::new(Rated::new(Map::magnitude()))).gnuradio(&["complex_to_mag"]),
        part("magnitude_squared", "|x|² (power) of every complex sample.", "f32", || Box::new(Rated::new(Map::magnitude_squared()))).gnuradio(&["complex_to_mag_squared"]),
        part("complex_to_real", "The real part of every complex sample.", "f32", || Box::new(Rated::new(Map::real_part()))).gnuradio(&["complex_to_real"]),
        part("complex_to_imag", "The imaginary part of every complex sample.", "f32", || Box::new(Rated::new(Map::imag_part()))).gnuradio(&["complex_to_imag"]),
        BlockType::new("float_to_complex", Family::Math, "A complex stream from a real part and an imaginary part (ends with the shorter).")
            .gnuradio(&["float_to_complex"])
            .port(PortDecl::input("re", ItemDecl::fixed("f32")))
            .port(PortDecl::input("im", ItemDecl::fixed("f32")))
            .port(PortDecl::output("out", ItemDecl::fixed("c32")))
            .build(|_| Ok(Box::new(Rated::new(FloatToComplex)))),
        BlockType::new("iq_to_c32", Family::Math, "Interleaved integer IQ as SDR front ends give it (rtl_sdr, hackrf_transfer) to complex f32.")
            .gnuradio(&["interleaved_short_to_complex", "interleaved_char_to_complex"])
            .port(iq_port(PortDecl::input("in", iq_item())))
            .output("out", ItemDecl::fixed("c32"))
            .param(param_format())
            .example(r#"format = "cu8""#)
            .build(iq_to_c32),
        BlockType::new("c32_to_iq", Family::Math, "Complex f32 to interleaved integer IQ; values beyond the format's range are clipped and counted (a warning at the end).")
            .gnuradio(&["complex_to_interleaved_short", "complex_to_interleaved_char"])
            .input("in", ItemDecl::fixed("c32"))
            .port(iq_port(PortDecl::output("out", iq_item())))
            .param(param_format())
            .example(r#"format = "ci16""#)
            .build(c32_to_iq),
    ]
}
