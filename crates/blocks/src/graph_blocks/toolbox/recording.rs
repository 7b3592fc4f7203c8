//! Spectra and their pictures, convolution with an impulse response file, SigMF recordings.

use super::{node_err, positive, sample_item};
use crate::blocks::{
    Convolve, Picture, PngSettings, SigmfSink, SigmfSource, Spectrum, SpectrumPng,
};
use num_complex::Complex32;
use sluice_conv::{parse_partitioning, ConvolverConfig, LatePolicy, Scheduling};
use sluice_formats::sigmf::Datatype;
use sluice_formats::wav::WavReader;
use sluice_graph::{BlockType, FileAccess, FileParam, ParamDoc, ParamError, Params};
use sluice_kernels::{resample_ir, SpectrumWindow, MAX_SPECTRUM_SIZE};
use sluice_runtime::Node;
use std::path::Path;

const READS_PATH: &[FileParam] = &[FileParam {
    param: "path",
    access: FileAccess::Read,
}];
const WRITES_PATH: &[FileParam] = &[FileParam {
    param: "path",
    access: FileAccess::Write,
}];
const READS_IR: &[FileParam] = &[FileParam {
    param: "ir",
    access: FileAccess::Read,
}];

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
    let rate = p.opt_u64("sample_rate")?;
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
        BlockType {
            name: "spectrum",
            help: "Averaged power spectra in dB (windowed FFTs, DC in the middle): one vector of fft_size per `averages` frames; 0 dB is a full-scale complex tone.",
            ports: "in: item -> out: f32[fft_size]",
            params: &[
                ParamDoc { name: "item", default: "c32", help: "c32 or f32 (analysed as complex)" },
                ParamDoc { name: "fft_size", default: "1024", help: "bins per spectrum (any size; powers of two are fastest)" },
                ParamDoc { name: "window", default: "blackman_harris", help: "blackman_harris (-92 dB side lobes), hann or rectangular" },
                ParamDoc { name: "averages", default: "8", help: "frames averaged per spectrum (no overlap)" },
            ],
            files: &[],
            settable: &[],
            example: "[[node]]\nname = \"psd\"\ntype = \"spectrum\"\nparams = { fft_size = 1024, window = \"hann\", averages = 16 }",
            build: spectrum,
            memory: None,
        },
        BlockType {
            name: "spectrum_png",
            help: "Draws the spectra it receives into a PNG when the stream ends: a waterfall (newest at the top) or the mean spectrum; frequencies from the stream's rx_rate and rx_freq.",
            ports: "in: f32[fft_size]",
            params: &[
                ParamDoc { name: "path", default: "required", help: "PNG file to write (replaced only when the stream ends)" },
                ParamDoc { name: "fft_size", default: "required", help: "bins per spectrum (the spectrum block's fft_size)" },
                ParamDoc { name: "picture", default: "waterfall", help: "waterfall or spectrum" },
                ParamDoc { name: "sample_rate", default: "stream's", help: "the analysed stream's rate in Hz (else its rx_rate, else cycles/sample)" },
                ParamDoc { name: "center_frequency", default: "stream's", help: "centre frequency in Hz (else its rx_freq, else 0)" },
                ParamDoc { name: "width", default: "1000", help: "pixels" },
                ParamDoc { name: "height", default: "650", help: "pixels" },
                ParamDoc { name: "max_rows", default: "1000", help: "waterfall rows kept; beyond twice this, rows are averaged in pairs" },
                ParamDoc { name: "range_db", default: "90", help: "waterfall colours span this many dB below the peak" },
                ParamDoc { name: "title", default: "the path", help: "caption" },
            ],
            files: WRITES_PATH,
            settable: &[],
            example: "[[node]]\nname = \"picture\"\ntype = \"spectrum_png\"\nparams = { path = \"waterfall.png\", fft_size = 1024, picture = \"waterfall\" }",
            build: spectrum_png,
            memory: None,
        },
        BlockType {
            name: "convolve",
            help: "Partitioned convolution (sluice-conv) with an impulse response WAV, mono or multi-channel in sluice convolve's layouts; latency removed, tail appended.",
            ports: "in0, in1, …: f32 -> out0, out1, …: f32 (one port per channel)",
            params: &[
                ParamDoc { name: "ir", default: "required", help: "impulse response WAV: 1 channel for every input, one per input, 4 for true stereo (LL LR RL RR), or N for a mono input" },
                ParamDoc { name: "inputs", default: "1", help: "input channels (1-64)" },
                ParamDoc { name: "block", default: "1024", help: "engine block size in samples (1-8192)" },
                ParamDoc { name: "threads", default: "single", help: "single (every level in the node's thread) or threaded (a worker per larger level)" },
                ParamDoc { name: "partitioning", default: "auto", help: "auto, uniform, tuned, or SIZExCOUNT,… as sluice convolve takes it" },
                ParamDoc { name: "sample_rate", default: "the IR's", help: "the stream's rate: the IR is resampled to it if it differs (a stream whose rx_rate differs from the IR's is an error)" },
                ParamDoc { name: "tail", default: "true", help: "after the input ends, output the tail (IR length − 1 frames)" },
                ParamDoc { name: "max_ir_len", default: "4194304", help: "longest accepted IR, in frames" },
            ],
            files: READS_IR,
            settable: &[],
            example: "[[node]]\nname = \"reverb\"\ntype = \"convolve\"\nparams = { ir = \"hall.wav\", inputs = 2, block = 512 }",
            build: convolve,
            memory: None,
        },
        BlockType {
            name: "sigmf_source",
            help: "Reads a SigMF recording (cf32_le, ci16_le, cu8, ci8) as c32; sample rate, captures (frequency, time) and annotations become tags.",
            ports: "out: c32",
            params: &[ParamDoc { name: "path", default: "required", help: "the recording: NAME, NAME.sigmf-meta or NAME.sigmf-data" }],
            files: READS_PATH,
            settable: &[],
            example: "[[node]]\nname = \"capture\"\ntype = \"sigmf_source\"\nparams = { path = \"fm_band.sigmf-meta\" }",
            build: sigmf_source,
            memory: None,
        },
        BlockType {
            name: "sigmf_sink",
            help: "Writes c32 as a SigMF recording (NAME.sigmf-data and .sigmf-meta, replaced only when the stream ends); rx_rate, rx_freq, rx_time and other tags go into the metadata.",
            ports: "in: c32",
            params: &[
                ParamDoc { name: "path", default: "required", help: "the recording: NAME (or NAME.sigmf-meta)" },
                ParamDoc { name: "datatype", default: "cf32_le", help: "cf32_le, ci16_le, cu8 or ci8 (integers clipped and counted)" },
                ParamDoc { name: "sample_rate", default: "stream's", help: "core:sample_rate in Hz (else the stream's rx_rate)" },
                ParamDoc { name: "frequency", default: "stream's", help: "the first capture's core:frequency when the stream gives no rx_freq" },
                ParamDoc { name: "description", default: "-", help: "core:description" },
            ],
            files: WRITES_PATH,
            settable: &[],
            example: "[[node]]\nname = \"record\"\ntype = \"sigmf_sink\"\nparams = { path = \"capture\", datatype = \"ci16_le\" }",
            build: sigmf_sink,
            memory: None,
        },
    ]
}
