//! Registry entries of the DSP blocks: FIR (direct or overlap-save, chosen by length) and the
//! overlap-save FFT filter, with taps from a list, a file or a built-in design.

use crate::blocks::{ChannelFirFilter, FftFilter, FirFilter};
use num_complex::Complex32;
use sluice_formats::{load_taps, Taps};
use sluice_graph::memory::ensure_fits;
use sluice_graph::{
    BlockType, Family, ItemDecl, Memory, Param, ParamDecl, ParamError, Params, PortDecl, Rate, Vlen,
};
use sluice_kernels::{
    bandpass, complex_bandpass, fft_size_for_taps, lowpass, prefer_overlap_save, ComplexTaps,
    RealTaps, Window,
};
use sluice_runtime::{Node, Rated};
use std::path::Path;

pub(super) fn taps_params() -> Vec<ParamDecl> {
    vec![
        Param::numbers("taps", "real taps as a list of numbers").derived("-"),
        Param::reads(
            "taps_file",
            "taps file: one value per line (\"re im\" for complex) or raw f32 (.f32/.raw)",
        )
        .derived("-"),
        Param::choice(
            "design",
            &["lowpass", "bandpass", "complex_bandpass"],
            "the filter to design",
        )
        .derived("-"),
        Param::integer("num_taps", "taps of the design").default(101),
        Param::number("cutoff", "lowpass cutoff, cycles/sample (0..0.5)").derived("-"),
        Param::number("low", "band-pass lower edge, cycles/sample").derived("-"),
        Param::number("high", "band-pass upper edge, cycles/sample").derived("-"),
        Param::choice(
            "window",
            &["hamming", "blackman", "kaiser"],
            "the design's window",
        )
        .derived("hamming"),
        Param::number("beta", "Kaiser window shape").default(8.6),
    ]
}

/// The design in Hz, beside the normalised one: edges from the stream's rate, and a
/// transition width that sets the tap count as GNU Radio's `firdes` does.
pub(super) fn hz_params() -> Vec<ParamDecl> {
    vec![
        Param::number("cutoff_hz", "lowpass cutoff (instead of cutoff)").unit("Hz").derived("-"),
        Param::number("low_hz", "band-pass lower edge (instead of low)").unit("Hz").derived("-"),
        Param::number("high_hz", "band-pass upper edge (instead of high)").unit("Hz").derived("-"),
        Param::number("transition_hz", "transition width: sets num_taps from the window's attenuation, as GNU Radio's firdes does").unit("Hz").derived("-"),
    ]
}

/// The stopband attenuation (dB) GNU Radio's `firdes` assumes for a window, from which it
/// sizes a design by its transition width.
fn window_attenuation(window: Window) -> f64 {
    match window {
        Window::Hamming => 53.0,
        Window::Blackman => 74.0,
        Window::Kaiser { beta } => beta / 0.1102 + 8.7,
    }
}

/// A band edge in cycles/sample: `name` as given, or `hz_name` divided by the stream's rate.
fn edge(p: &mut Params, name: &str, hz_name: &str) -> Result<Option<f64>, ParamError> {
    match (p.opt_f64(name)?, p.opt_f64(hz_name)?) {
        (Some(_), Some(_)) => Err(ParamError::new(
            hz_name,
            format!("give {name} (cycles/sample) or {hz_name}, not both"),
        )),
        (None, Some(hz)) => Ok(Some(hz / stream_rate(p, hz_name)?)),
        (x, None) => Ok(x),
    }
}

/// The stream's rate, which a design in Hz needs.
fn stream_rate(p: &mut Params, about: &str) -> Result<f64, ParamError> {
    p.opt_f64("sample_rate")?.ok_or_else(|| {
        ParamError::new(
            about,
            "needs the stream's rate, which is not known before the graph runs here: give sample_rate",
        )
    })
}

/// The tap count: `num_taps`, or from `transition_hz` as GNU Radio's `firdes` computes it
/// (`attenuation · fs / (22 · transition)`, made odd).
fn design_len(p: &mut Params, window: Window) -> Result<u64, ParamError> {
    let Some(transition) = p.opt_f64("transition_hz")? else {
        return p.u64_or("num_taps", 101);
    };
    if p.given("num_taps").is_some() {
        return Err(ParamError::new(
            "transition_hz",
            "give num_taps or transition_hz, not both",
        ));
    }
    if !(transition > 0.0 && transition.is_finite()) {
        return Err(ParamError::new(
            "transition_hz",
            format!("must be a positive number of Hz, not {transition}"),
        ));
    }
    let fs = stream_rate(p, "transition_hz")?;
    let n =
        (window_attenuation(window) * fs / (22.0 * transition)).min(MAX_DESIGN_TAPS as f64) as u64;
    Ok(n | 1)
}

/// A DSP error as an error of the parameter it is about: the one the design error names, the
/// tap count for a filter without taps, else `param`.
fn dsp_err(param: &'static str) -> impl Fn(sluice_kernels::DspError) -> ParamError {
    use sluice_kernels::DspError;
    move |e| {
        let about = match &e {
            DspError::InvalidDesign { name, .. } => name,
            DspError::EmptyTaps => "num_taps",
            _ => param,
        };
        ParamError::new(about, e.to_string())
    }
}

/// The most taps a designed filter may have: 2^24 (64 MiB of complex taps) is far beyond any
/// practical design, and a typo like `num_taps = 1e12` must be an error, not an abort on
/// allocating terabytes.
const MAX_DESIGN_TAPS: u64 = 1 << 24;

/// The taps a FIR node asked for, from exactly one of `taps`, `taps_file` or `design`.
pub(super) fn taps_from(p: &mut Params) -> Result<Taps, ParamError> {
    let list = p.opt_f64_list("taps")?;
    let file = p.opt_str("taps_file")?;
    let design = p.opt_str("design")?;
    match (list, file, design) {
        (Some(t), None, None) => {
            if t.is_empty() {
                return Err(ParamError::new(
                    "taps",
                    "is empty (a filter needs at least 1 tap)",
                ));
            }
            Ok(Taps::Real(t.iter().map(|&v| v as f32).collect()))
        }
        (None, Some(path), None) => load_taps(Path::new(&path)).map_err(dsp_err("taps_file")),
        (None, None, Some(kind)) => {
            let window = match p.opt_str("window")?.as_deref().unwrap_or("hamming") {
                "hamming" => Window::Hamming,
                "blackman" => Window::Blackman,
                "kaiser" => Window::Kaiser {
                    beta: p.f64_or("beta", 8.6)?,
                },
                other => {
                    return Err(ParamError::new(
                        "window",
                        format!("unknown window '{other}' (use hamming, blackman or kaiser)"),
                    ))
                }
            };
            let len = design_len(p, window)?;
            if len == 0 || len > MAX_DESIGN_TAPS {
                return Err(ParamError::new(
                    "num_taps",
                    format!("must be between 1 and {MAX_DESIGN_TAPS}, not {len}"),
                ));
            }
            let len = len as usize;
            let required = |name: &str, x: Option<f64>| {
                x.ok_or_else(|| ParamError::new(name, format!("is required (or {name}_hz)")))
            };
            match kind.as_str() {
                "lowpass" => {
                    let cutoff = required("cutoff", edge(p, "cutoff", "cutoff_hz")?)?;
                    lowpass(len, cutoff, window)
                        .map(Taps::Real)
                        .map_err(dsp_err("cutoff"))
                }
                "bandpass" | "complex_bandpass" => {
                    let low = required("low", edge(p, "low", "low_hz")?)?;
                    let high = required("high", edge(p, "high", "high_hz")?)?;
                    if kind == "bandpass" {
                        bandpass(len, low, high, window)
                            .map(Taps::Real)
                            .map_err(dsp_err("low"))
                    } else {
                        complex_bandpass(len, low, high, window)
                            .map(Taps::Complex)
                            .map_err(dsp_err("low"))
                    }
                }
                other => Err(ParamError::new(
                    "design",
                    format!("unknown design '{other}' (use lowpass, bandpass or complex_bandpass)"),
                )),
            }
        }
        (None, None, None) => Err(ParamError::new(
            "",
            "needs taps: give one of taps, taps_file or design",
        )),
        _ => Err(ParamError::new(
            "",
            "give only one of taps, taps_file and design",
        )),
    }
}

/// The most channels one `fir` node carries.
const MAX_CHANNELS: u64 = 1 << 16;

fn fir(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let item = p.opt_str("item")?.unwrap_or_else(|| "c32".to_string());
    let decimation = p.u64_or("decimation", 1)? as usize;
    let channels = p.u64_or("channels", 1)?;
    if !(1..=MAX_CHANNELS).contains(&channels) {
        return Err(ParamError::new(
            "channels",
            format!("must be between 1 and {MAX_CHANNELS}, not {channels}"),
        ));
    }
    let method = p.opt_str("method")?.unwrap_or_else(|| "auto".to_string());
    let fft_size = p.opt_u64("fft_size")?.map(|n| n as usize);
    let taps = taps_from(p)?;
    if channels > 1 {
        return channel_fir(&item, &method, channels as usize, decimation, taps);
    }
    let node_err = |param: &'static str| {
        move |e: sluice_runtime::NodeError| ParamError::new(param, e.to_string())
    };
    if overlap_save(&item, &method, decimation, taps.len())? {
        let n = fft_size.unwrap_or_else(|| fft_size_for_taps(taps.len()));
        ensure_overlap_save_fits(n, fft_size.is_some())?;
        return Ok(Box::new(
            FftFilter::new(&taps.to_complex(), n).map_err(node_err("fft_size"))?,
        ));
    }
    // The taps, and an input window of history plus a block in a queue twice that size.
    ensure_fits(
        "num_taps",
        taps.len() as u128 * 8 * 6,
        "the taps and the input history",
    )?;
    match (item.as_str(), taps) {
        ("c32", Taps::Real(t)) => Ok(Box::new(
            FirFilter::<Complex32, _>::new(RealTaps::new(&t).map_err(dsp_err("taps"))?, decimation)
                .map_err(node_err("decimation"))?,
        )),
        ("c32", Taps::Complex(t)) => Ok(Box::new(
            FirFilter::<Complex32, _>::new(
                ComplexTaps::new(&t).map_err(dsp_err("taps"))?,
                decimation,
            )
            .map_err(node_err("decimation"))?,
        )),
        ("f32", Taps::Real(t)) => Ok(Box::new(
            FirFilter::<f32, _>::new(RealTaps::new(&t).map_err(dsp_err("taps"))?, decimation)
                .map_err(node_err("decimation"))?,
        )),
        ("f32", Taps::Complex(_)) => Err(ParamError::new(
            "item",
            "complex taps need complex items (item = \"c32\")",
        )),
        (other, _) => Err(ParamError::new(
            "item",
            format!("unknown item type '{other}' (use c32 or f32)"),
        )),
    }
}

/// Whether a one-channel `fir` filters by overlap-save (else direct form).
fn overlap_save(
    item: &str,
    method: &str,
    decimation: usize,
    taps: usize,
) -> Result<bool, ParamError> {
    match method {
        "auto" => Ok(item == "c32" && decimation == 1 && prefer_overlap_save(taps)),
        "direct" => Ok(false),
        "fft" if item == "c32" && decimation == 1 => Ok(true),
        "fft" => Err(ParamError::new(
            "method",
            "fft needs item = \"c32\" and decimation = 1",
        )),
        other => Err(ParamError::new(
            "method",
            format!("unknown method '{other}' (use auto, direct or fft)"),
        )),
    }
}

/// What a `fir` node remembers. Direct form: output `j` is `Σ h[k]·x[j·D − k]`, each computed
/// alike wherever the window lies, so `taps − 1` items of history (with `channels` > 1 the
/// windows of `taps` frames are not zero-padded: output `j` reads frames `j·D ..= j·D + taps − 1`,
/// no history). Overlap-save's outputs depend on where the FFT blocks fall: infinite.
fn fir_memory(p: &mut Params) -> Result<Memory, ParamError> {
    let item = p.opt_str("item")?.unwrap_or_else(|| "c32".to_string());
    let decimation = p.u64_or("decimation", 1)?;
    let channels = p.u64_or("channels", 1)?;
    let method = p.opt_str("method")?.unwrap_or_else(|| "auto".to_string());
    p.opt_u64("fft_size")?;
    let taps = taps_from(p)?.len() as u64;
    if decimation == 0 {
        return Err(ParamError::new("decimation", "must be at least 1"));
    }
    if channels > 1 {
        return Ok(Memory::Finite {
            decimation,
            history: 0,
        });
    }
    if overlap_save(&item, &method, decimation as usize, taps as usize)? {
        return Ok(Memory::Infinite);
    }
    Ok(Memory::Finite {
        decimation,
        history: taps.saturating_sub(1),
    })
}

/// `fir` with `channels` > 1: one direct-form filter per channel over vector items.
fn channel_fir(
    item: &str,
    method: &str,
    channels: usize,
    decimation: usize,
    taps: Taps,
) -> Result<Box<dyn Node>, ParamError> {
    if !matches!(method, "auto" | "direct") {
        return Err(ParamError::new(
            "method",
            format!("'{method}' is not available with channels > 1 (use direct)"),
        ));
    }
    let Taps::Real(taps) = taps else {
        return Err(ParamError::new(
            "channels",
            "channels > 1 needs real taps (complex taps filter one channel only)",
        ));
    };
    // The taps, and an input window of `taps` frames in a queue twice that size.
    ensure_fits(
        "channels",
        taps.len() as u128 * channels as u128 * 8 * 4,
        &format!("{channels} channels of {}-tap history", taps.len()),
    )?;
    let err = |e: sluice_runtime::NodeError| ParamError::new("decimation", e.to_string());
    match item {
        "c32" => Ok(Box::new(Rated::new(
            ChannelFirFilter::<Complex32>::new(&taps, channels, decimation).map_err(err)?,
        ))),
        "f32" => Ok(Box::new(Rated::new(
            ChannelFirFilter::<f32>::new(&taps, channels, decimation).map_err(err)?,
        ))),
        other => Err(ParamError::new(
            "item",
            format!("unknown item type '{other}' (use c32 or f32)"),
        )),
    }
}

fn fft_filter(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let fft_size = p.opt_u64("fft_size")?.map(|n| n as usize);
    let taps = taps_from(p)?;
    let n = fft_size.unwrap_or_else(|| fft_size_for_taps(taps.len()));
    ensure_overlap_save_fits(n, fft_size.is_some())?;
    Ok(Box::new(
        FftFilter::new(&taps.to_complex(), n)
            .map_err(|e| ParamError::new("fft_size", e.to_string()))?,
    ))
}

/// Overlap-save of size `n` holds about eight blocks of `n` complex items: the taps' spectrum,
/// the FFT's buffers and scratch, and the input and output queues (two blocks each).
fn ensure_overlap_save_fits(n: usize, size_given: bool) -> Result<(), ParamError> {
    let param = if size_given { "fft_size" } else { "num_taps" };
    ensure_fits(
        param,
        n as u128 * 8 * 8,
        &format!("overlap-save with {n}-point FFTs"),
    )
}

fn fir_params() -> Vec<ParamDecl> {
    [vec![
        Param::text("item", "c32 or f32").derived("c32"),
        Param::integer("decimation", "keep one output in this many").default(1),
        Param::integer("channels", "channels in one node: vector items of this many samples, each channel filtered alone (direct form, real taps)").default(1),
        Param::choice("method", &["auto", "direct", "fft"], "auto (overlap-save from the measured crossover on), direct or fft").derived("auto"),
        Param::integer("fft_size", "FFT size when overlap-save is used").derived("auto"),
        Param::number("sample_rate", "the stream's rate, for a design in Hz").follows_stream(),
    ], taps_params(), hz_params()].concat()
}

fn fft_params() -> Vec<ParamDecl> {
    [
        vec![
            Param::integer("fft_size", "FFT size (power of two, at least the taps)")
                .derived("auto"),
            Param::number("sample_rate", "the stream's rate, for a design in Hz").follows_stream(),
        ],
        taps_params(),
        hz_params(),
    ]
    .concat()
}

/// The filter blocks.
pub(super) fn block_types() -> Vec<BlockType> {
    vec![
        BlockType::new("fir", Family::Filters, "FIR filter (optionally decimating, optionally many channels in one node); direct form or overlap-save by length.")
            .gnuradio(&["fir_filter", "decimating_fir_filter"])
            .port(PortDecl::input("in", ItemDecl::item()).vlen(Vlen::param("channels")))
            .port(PortDecl::output("out", ItemDecl::item()).vlen(Vlen::param("channels")))
            .params(fir_params())
            .rate(Rate::divided_by("decimation"))
            .example(r#"item = "c32", design = "lowpass", num_taps = 127, cutoff = 0.1, decimation = 4"#)
            .memory(fir_memory)
            .build(fir),
        BlockType::new("fft_filter", Family::Filters, "Overlap-save FFT filter on complex items, windows read in place from the queue.")
            .gnuradio(&["fft_filter"])
            .port(PortDecl::input("in", ItemDecl::fixed("c32")))
            .port(PortDecl::output("out", ItemDecl::fixed("c32")))
            .params(fft_params())
            .example(r#"design = "complex_bandpass", num_taps = 1023, low = 0.05, high = 0.15"#)
            .memory(|_| Ok(Memory::Infinite))
            .build(fft_filter),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use toml::Value;

    fn params(pairs: &[(&str, Value)]) -> Params {
        Params::from_values(pairs.iter().map(|(k, v)| (k.to_string(), v.clone())))
    }

    #[test]
    fn a_design_in_hz_is_the_normalised_design_at_the_stream_rate() {
        let hz = taps_from(&mut params(&[
            ("design", "lowpass".into()),
            ("cutoff_hz", 3000.0.into()),
            ("num_taps", 63.into()),
            ("sample_rate", 48000.0.into()),
        ]))
        .unwrap();
        let normalised = lowpass(63, 3000.0 / 48000.0, Window::Hamming).unwrap();
        assert_eq!(hz, Taps::Real(normalised));
    }

    #[test]
    fn a_transition_width_sizes_the_design_as_gnuradio_firdes_does() {
        // GNU Radio 3.10: len(firdes.low_pass(1, 48000, 3000, 500)) is 231 (Hamming), 323
        // with WIN_BLACKMAN, 379 with WIN_KAISER and beta 8.6; band_pass(1, 48000, 1000,
        // 3000, 500) is 231.
        for (window, len) in [("hamming", 231), ("blackman", 323), ("kaiser", 379)] {
            let taps = taps_from(&mut params(&[
                ("design", "lowpass".into()),
                ("cutoff_hz", 3000.0.into()),
                ("transition_hz", 500.0.into()),
                ("window", window.into()),
                ("sample_rate", 48000.0.into()),
            ]))
            .unwrap();
            assert_eq!(taps.len(), len, "{window}");
        }
        let band = taps_from(&mut params(&[
            ("design", "bandpass".into()),
            ("low_hz", 1000.0.into()),
            ("high_hz", 3000.0.into()),
            ("transition_hz", 500.0.into()),
            ("sample_rate", 48000.0.into()),
        ]))
        .unwrap();
        assert_eq!(band.len(), 231);
    }

    #[test]
    fn a_design_in_hz_without_a_rate_or_with_both_forms_is_refused() {
        let e = taps_from(&mut params(&[
            ("design", "lowpass".into()),
            ("cutoff_hz", 3000.0.into()),
        ]))
        .unwrap_err();
        assert_eq!(e.param, "cutoff_hz");
        assert!(e.message.contains("give sample_rate"), "{}", e.message);
        let e = taps_from(&mut params(&[
            ("design", "lowpass".into()),
            ("cutoff", 0.1.into()),
            ("cutoff_hz", 3000.0.into()),
            ("sample_rate", 48000.0.into()),
        ]))
        .unwrap_err();
        assert_eq!(
            e.message,
            "give cutoff (cycles/sample) or cutoff_hz, not both"
        );
        let e = taps_from(&mut params(&[
            ("design", "lowpass".into()),
            ("cutoff_hz", 3000.0.into()),
            ("num_taps", 11.into()),
            ("transition_hz", 500.0.into()),
            ("sample_rate", 48000.0.into()),
        ]))
        .unwrap_err();
        assert_eq!(e.message, "give num_taps or transition_hz, not both");
    }
}
