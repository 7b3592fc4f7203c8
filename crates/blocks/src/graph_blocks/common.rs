//! Parameters and errors several families of block declarations share: `channels`, a
//! positive number, the sample type, and errors of kernels and nodes as parameter errors.

use sluice_graph::{Param, ParamDecl, ParamError, Params};

/// The most channels of one multi-channel node (as the `fir` block allows).
const MAX_CHANNELS: u64 = 1 << 16;

pub(super) fn param_channels() -> ParamDecl {
    Param::integer("channels", "channels in one node: vector items of this many samples (one per channel), each channel processed alone").default(1)
}

/// The `channels` parameter, checked.
pub(super) fn channels(p: &mut Params) -> Result<usize, ParamError> {
    let n = p.u64_or("channels", 1)?;
    if !(1..=MAX_CHANNELS).contains(&n) {
        return Err(ParamError::new(
            "channels",
            format!("must be between 1 and {MAX_CHANNELS}, not {n}"),
        ));
    }
    Ok(n as usize)
}

/// A kernel's error as an error of the parameter it names (or `fallback`).
pub(super) fn dsp_err(fallback: &'static str) -> impl Fn(sluice_kernels::DspError) -> ParamError {
    move |e| {
        let about = match &e {
            sluice_kernels::DspError::InvalidParameter { name, .. } => name,
            _ => fallback,
        };
        ParamError::new(about, e.to_string())
    }
}

/// A node's construction error as an error of `param`.
pub(super) fn node_err(param: &'static str) -> impl Fn(sluice_runtime::NodeError) -> ParamError {
    move |e| ParamError::new(param, e.to_string())
}

/// `item`, limited to the sample types c32 and f32, with `default`.
pub(super) fn sample_item(p: &mut Params, default: &str) -> Result<String, ParamError> {
    let item = p.opt_str("item")?.unwrap_or_else(|| default.to_string());
    match item.as_str() {
        "c32" | "f32" => Ok(item),
        other => Err(ParamError::new(
            "item",
            format!("unknown sample type '{other}' (use c32 or f32)"),
        )),
    }
}

/// A positive, finite number parameter.
pub(super) fn positive(p: &mut Params, name: &str, default: f64) -> Result<f64, ParamError> {
    let v = p.f64_or(name, default)?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(ParamError::new(
            name,
            format!("must be a positive number, not {v}"),
        ))
    }
}
