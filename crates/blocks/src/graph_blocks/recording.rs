//! Spectra and their pictures, convolution with an impulse response file, SigMF recordings.

use super::common::{node_err, positive, sample_item};
use crate::blocks::{
    Convolve, Picture, PngSettings, SigmfSink, SigmfSource, Spectrum, SpectrumPng,
};
use num_complex::Complex32;
use sluice_conv::{parse_partitioning, ConvolverConfig, LatePolicy, Scheduling};
use sluice_formats::sigmf::Datatype;
use sluice_formats::wav::WavReader;
use sluice_graph::{BlockType, Family, ItemDecl, Param, ParamError, Params, PortDecl, Rate, Vlen};
use sluice_kernels::{resample_ir, SpectrumWindow, MAX_SPECTRUM_SIZE};
use sluice_runtime::Node;
use std::path::Path;

fn fft_size(p: &mut Params, required: bool) -> Result<usize, ParamError> {
    let n = if required {
        p.u64("fft_size")?
    } else {
        p.u64_or("fft_size", 1024)?
    };
    if !(2..=MAX_SPECTRUM_SIZE as u64).contains(&n) {
        return Err(ParamError::new(
            "fft_size",
            format!("must be between 2 and {MAX_SPECTRUM_SIZE}, not {n}"),
        ));
    }
    Ok(n as usize)
}

fn spectrum(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let item = sample_item(p, "c32")?;
    let size = fft_size(p, false)?;
    let window = p
        .opt_str("window")?
        .unwrap_or_else(|| "blackman_harris".into());
    let window =
        SpectrumWindow::parse(&window).map_err(|e| ParamError::new("window", e.to_string()))?;
    let averages = p.u64_or("averages", 8)?;
    if !(1..=1 << 20).contains(&averages) {
        return Err(ParamError::new(
            "averages",
            format!("must be between 1 and 1048576, not {averages}"),
        ));
    }
    let bytes = size as u128 * averages as u128 * 8 * 4;
    sluice_graph::memory::ensure_fits(
        "averages",
        bytes,
        &format!("{averages} frames of {size} samples"),
    )?;
    let averages = averages as usize;
    if item == "f32" {
        Ok(Box::new(
            Spectrum::<f32>::new(size, window, averages).map_err(node_err("fft_size"))?,
        ))
    } else {
        Ok(Box::new(
            Spectrum::<Complex32>::new(size, window, averages).map_err(node_err("fft_size"))?,
        ))
    }
}

fn spectrum_png(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let path = p.str("path")?;
    let bins = fft_size(p, true)?;
    let picture = match p.opt_str("picture")?.as_deref().unwrap_or("waterfall") {
        "waterfall" => Picture::Waterfall,
        "spectrum" => Picture::Spectrum,
        other => {
            return Err(ParamError::new(
                "picture",
                format!("unknown picture '{other}' (use waterfall or spectrum)"),
            ))
        }
    };
    let sample_rate = p.opt_f64("sample_rate")?;
    if let Some(r) = sample_rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(ParamError::new(
            "sample_rate",
            format!("must be a positive number of Hz, not {r}"),
        ));
    }
    let center_frequency = p.opt_f64("center_frequency")?;
    let pixels = |p: &mut Params, name: &str, default: u64| -> Result<u32, ParamError> {
        let v = p.u64_or(name, default)?;
        if !(100..=8192).contains(&v) {
            return Err(ParamError::new(
                name,
                format!("must be between 100 and 8192 pixels, not {v}"),
            ));
        }
        Ok(v as u32)
    };
    let size = (pixels(p, "width", 1000)?, pixels(p, "height", 650)?);
    let max_rows = p.u64_or("max_rows", 1000)?;
    if !(1..=100_000).contains(&max_rows) {
        return Err(ParamError::new(
            "max_rows",
            format!("must be between 1 and 100000, not {max_rows}"),
        ));
    }
    let range_db = positive(p, "range_db", 90.0)? as f32;
    let title = p.opt_str("title")?.unwrap_or_else(|| path.clone());
    let settings = PngSettings {
        picture,
        sample_rate,
        center_frequency,
        size,
        max_rows: max_rows as usize,
        range_db,
        title,
    };
    Ok(Box::new(
        SpectrumPng::create(Path::new(&path), bins, settings).map_err(node_err("path"))?,
    ))
}

fn convolve(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let ir_path = p.str("ir")?;
    let inputs = p.u64_or("inputs", 1)?;
    if !(1..=crate::blocks::convolve::MAX_CONVOLVE_CHANNELS as u64).contains(&inputs) {
        return Err(ParamError::new(
            "inputs",
            format!("must be between 1 and 64, not {inputs}"),
        ));
    }
    let block = p.u64_or("block", 1024)?;
    if !(1..=sluice_conv::MAX_BLOCK_SIZE as u64).contains(&block) {
        return Err(ParamError::new(
            "block",
            format!(
                "must be between 1 and {}, not {block}",
                sluice_conv::MAX_BLOCK_SIZE
            ),
        ));
    }
    let scheduling = match p.opt_str("threads")?.as_deref().unwrap_or("single") {
        "single" => Scheduling::SingleThread,
        "threaded" => Scheduling::Threaded {
            pin_cores: None,
            realtime_priority: None,
        },
        other => {
            return Err(ParamError::new(
                "threads",
                format!("unknown value '{other}' (use single or threaded)"),
            ))
        }
    };
    let partitioning = parse_partitioning(p.opt_str("partitioning")?.as_deref().unwrap_or("auto"))
        .map_err(|e| ParamError::new("partitioning", e))?;
    // The IR is resampled to a whole number of Hz (the stream's rate, when it follows it).
    let rate = match p.opt_f64("sample_rate")? {
        Some(hz) if hz.fract() != 0.0 || hz < 1.0 => {
            return Err(ParamError::new(
                "sample_rate",
                format!("must be a whole number of Hz, at least 1, not {hz}"),
            ))
        }
        hz => hz.map(|hz| hz as u64),
    };
    let tail = p.bool_or("tail", true)?;
    let max_ir_len = p
        .u64_or("max_ir_len", 1 << 22)?
        .min(sluice_conv::MAX_IR_LEN_LIMIT as u64) as usize;
    let mut reader =
        WavReader::open(Path::new(&ir_path)).map_err(|e| ParamError::new("ir", e.to_string()))?;
    let ir_rate = reader.info().sample_rate;
    let mut ir = reader
        .read_channels()
        .map_err(|e| ParamError::new("ir", e.to_string()))?;
    if ir.iter().flatten().all(|&v| v == 0.0) {
        return Err(ParamError::new(
            "ir",
            format!("{ir_path}: the impulse response is silent or empty"),
        ));
    }
    // The gain scales the IR: the wet signal's level, exactly, at no cost per sample.
    let gain_db = p.f64_or("gain", 0.0)?;
    if gain_db != 0.0 {
        let gain = 10f64.powf(gain_db / 20.0);
        for v in ir.iter_mut().flatten() {
            *v = (f64::from(*v) * gain) as f32;
        }
    }
    let rate = match rate {
        Some(r) if r != u64::from(ir_rate) => {
            let r = u32::try_from(r)
                .map_err(|_| ParamError::new("sample_rate", format!("{r} Hz is out of range")))?;
            ir = ir.iter().map(|c| resample_ir(c, ir_rate, r)).collect();
            r
        }
        _ => ir_rate,
    };
    let config = ConvolverConfig {
        block_size: block as usize,
        partitioning,
        scheduling,
        late_policy: LatePolicy::Wait,
        max_ir_len,
    };
    Ok(Box::new(
        Convolve::new(&ir, rate, &ir_path, inputs as usize, config, tail)
            .map_err(node_err("ir"))?,
    ))
}

/// A SigMF recording's `core:sample_rate`, read when the graph loads.
fn sigmf_rate(path: &str) -> Option<f64> {
    let (meta, _) = sluice_formats::sigmf::paths(Path::new(path));
    sluice_formats::sigmf::read_meta(&meta).ok()?.sample_rate
}

fn sigmf_source(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let path = p.str("path")?;
    Ok(Box::new(
        SigmfSource::open(Path::new(&path)).map_err(node_err("path"))?,
    ))
}

fn sigmf_sink(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let path = p.str("path")?;
    let name = p.opt_str("datatype")?.unwrap_or_else(|| "cf32_le".into());
    let datatype = Datatype::parse(&name).ok_or_else(|| {
        ParamError::new(
            "datatype",
            format!("unknown datatype '{name}' (use cf32_le, ci16_le, cu8 or ci8)"),
        )
    })?;
    let rate = p.opt_f64("sample_rate")?;
    if let Some(r) = rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(ParamError::new(
            "sample_rate",
            format!("must be a positive number of Hz, not {r}"),
        ));
    }
    let frequency = p.opt_f64("frequency")?;
    let description = p.opt_str("description")?;
    Ok(Box::new(
        SigmfSink::create(Path::new(&path), datatype, rate, frequency, description)
            .map_err(node_err("path"))?,
    ))
}

pub(super) fn block_types() -> Vec<BlockType> {
    vec![
        BlockType::new("spectrum", Family::Analysis, "Averaged power spectra in dB (windowed FFTs, DC in the middle): one vector of fft_size per `averages` frames; 0 dB is a full-scale complex tone.")
            .gnuradio(&["logpwrfft"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::fixed("f32")).vlen(Vlen::param("fft_size")))
            .param(Param::text("item", "c32 or f32 (analysed as complex)").derived("c32"))
            .param(Param::integer("fft_size", "bins per spectrum (any size; powers of two are fastest)").default(1024))
            .param(Param::text("window", "blackman_harris (-92 dB side lobes), hann or rectangular").derived("blackman_harris"))
            .param(Param::integer("averages", "frames averaged per spectrum (no overlap)").default(8))
            .rate(Rate::scaled(|p| {
                let frames = p.opt_u64("fft_size").ok()?? * p.opt_u64("averages").ok()??;
                (frames > 0).then(|| 1.0 / frames as f64)
            }))
            .example(r#"fft_size = 1024, window = "hann", averages = 16"#)
            .build(spectrum),
        BlockType::new("spectrum_png", Family::Analysis, "Draws the spectra it receives into a PNG when the stream ends: a waterfall (newest at the top) or the mean spectrum; frequencies from the stream's rx_rate and rx_freq.")
            .port(PortDecl::input("in", ItemDecl::fixed("f32")).vlen(Vlen::param("fft_size")))
            .param(Param::writes("path", "PNG file to write (replaced only when the stream ends)"))
            .param(Param::integer("fft_size", "bins per spectrum (the spectrum block's fft_size)"))
            .param(Param::text("picture", "waterfall or spectrum").derived("waterfall"))
            .param(Param::number("sample_rate", "the analysed stream's rate in Hz (else its rx_rate, else cycles/sample)").derived("stream's"))
            .param(Param::number("center_frequency", "centre frequency in Hz (else its rx_freq, else 0)").derived("stream's"))
            .param(Param::integer("width", "pixels").default(1000))
            .param(Param::integer("height", "pixels").default(650))
            .param(Param::integer("max_rows", "waterfall rows kept; beyond twice this, rows are averaged in pairs").default(1000))
            .param(Param::number("range_db", "waterfall colours span this many dB below the peak").default(90.0))
            .param(Param::text("title", "caption").derived("the path"))
            .example(r#"path = "waterfall.png", fft_size = 1024, picture = "waterfall""#)
            .build(spectrum_png),
        BlockType::new("convolve", Family::Filters, "Partitioned convolution (sluice-conv) with an impulse response WAV, mono or multi-channel in sluice convolve's layouts; latency removed, tail appended.")
            .port(PortDecl::input("in", ItemDecl::fixed("f32")).counted("inputs"))
            .port(PortDecl::output("out", ItemDecl::fixed("f32")).counted("inputs"))
            .param(Param::reads("ir", "impulse response WAV: 1 channel for every input, one per input, 4 for true stereo (LL LR RL RR), or N for a mono input"))
            .param(Param::integer("inputs", "input channels (1-64)").default(1))
            .param(Param::integer("block", "engine block size in samples (1-8192)").default(1024))
            .param(Param::text("threads", "single (every level in the node's thread) or threaded (a worker per larger level)").derived("single"))
            .param(Param::text("partitioning", "auto, uniform, tuned, or SIZExCOUNT,… as sluice convolve takes it").derived("auto"))
            .param(Param::number("sample_rate", "the stream's rate: the IR is resampled to it if it differs (when the stream's is not known before it runs: its rx_rate tag, else the IR's)").follows_stream())
            .param(Param::bool("tail", "after the input ends, output the tail (IR length − 1 frames)").default(true))
            .param(Param::number("gain", "gain of the convolved signal (the IR scaled by it), e.g. -12 for a loud reverb").unit("dB").range(-120.0, 40.0).default(0.0))
            .param(Param::integer("max_ir_len", "longest accepted IR, in frames").default(4194304))
            .example(r#"ir = "hall.wav", inputs = 2, block = 512"#)
            .build(convolve),
        BlockType::new("sigmf_source", Family::Files, "Reads a SigMF recording (cf32_le, ci16_le, cu8, ci8) as c32; sample rate, captures (frequency, time) and annotations become tags.")
            .gnuradio(&["sigmf_source"])
            .port(PortDecl::output("out", ItemDecl::fixed("c32")))
            .param(Param::reads("path", "the recording: NAME, NAME.sigmf-meta or NAME.sigmf-data"))
            .example(r#"path = "fm_band.sigmf-meta""#)
            .rate(Rate::fixed(|p| sigmf_rate(&p.opt_str("path").ok()??)))
            .build(sigmf_source),
        BlockType::new("sigmf_sink", Family::Files, "Writes c32 as a SigMF recording (NAME.sigmf-data and .sigmf-meta, replaced only when the stream ends); rx_rate, rx_freq, rx_time and other tags go into the metadata.")
            .gnuradio(&["sigmf_sink"])
            .port(PortDecl::input("in", ItemDecl::fixed("c32")))
            .param(Param::writes("path", "the recording: NAME (or NAME.sigmf-meta)"))
            .param(Param::text("datatype", "cf32_le, ci16_le, cu8 or ci8 (integers clipped and counted)").derived("cf32_le"))
            .param(Param::number("sample_rate", "core:sample_rate (when the stream's is not known before it runs: its rx_rate tag)").follows_stream())
            .param(Param::number("frequency", "the first capture's core:frequency when the stream gives no rx_freq").derived("stream's"))
            .param(Param::text("description", "core:description").derived("-"))
            .example(r#"path = "capture", datatype = "ci16_le""#)
            .build(sigmf_sink),
    ]
}
