//! The standard blocks as graph-file block types: their ports, parameters, one line of help, the
//! files they touch, an example, and how each is built from its parameters.
//! [`register`] adds them all to a [`Registry`].

mod beamform;
mod common;
mod filters;
mod math;
mod plumbing;
mod radio;
mod receiver;
mod recording;
mod wav_files;

use crate::blocks::{
    Copy, FileSink, FileSource, Head, KeepOneInN, NullSink, NullSource, Probe, Sample,
    SignalSource, StreamToVector, Throttle, VectorToStream, WavFormat, WavSink, WavSource,
    Waveform,
};
use num_complex::Complex32;
use sluice_formats::wav::Beyond4Gib;
use sluice_graph::{
    BlockType, Family, ItemDecl, Memory, Param, ParamDecl, ParamError, Params, PortDecl, Rate,
    Registry, Vlen,
};
use sluice_runtime::{Item, Node, NodeError, Ports, Rated, TagPolicy, Work, WorkIo};
use std::path::Path;

pub(crate) fn param_item() -> ParamDecl {
    Param::choice(
        "item",
        &["c32", "f32", "i16", "u8"],
        "item type: c32 (complex f32), f32, i16, u8",
    )
    .default("c32")
}
pub(crate) fn param_sample() -> ParamDecl {
    Param::choice(
        "item",
        &["c32", "f32"],
        "sample type: c32 (complex f32) or f32",
    )
    .default("c32")
}

pub(crate) fn param_vlen() -> ParamDecl {
    Param::integer(
        "vlen",
        "items per vector: the stream carries vectors of this many items",
    )
    .default(1)
}

/// The most items per vector: far beyond an FFT frame or a channel count, and small enough that
/// a typo cannot ask for a queue of terabytes.
const MAX_VLEN: u64 = 1 << 24;

/// The `vlen` parameter (default 1), checked.
/// The memory of a block whose output item `j` is computed from input item `j` alone
/// (verified bit for bit in `tests/memory.rs`).
pub(crate) fn stateless(_: &mut Params) -> Result<Memory, ParamError> {
    Ok(Memory::Finite {
        decimation: 1,
        history: 0,
    })
}

/// The memory of a block whose state depends on the whole past.
pub(super) fn infinite(_: &mut Params) -> Result<Memory, ParamError> {
    Ok(Memory::Infinite)
}

fn vlen(p: &mut Params) -> Result<usize, ParamError> {
    let vlen = p.u64_or("vlen", 1)?;
    if !(1..=MAX_VLEN).contains(&vlen) {
        return Err(ParamError::new(
            "vlen",
            format!("must be between 1 and {MAX_VLEN}, not {vlen}"),
        ));
    }
    Ok(vlen as usize)
}

/// A block that moves items without looking at them (file source and sink, null source and
/// sink), declared as carrying vectors of `vlen` items on every port.
struct Vectors {
    node: Box<dyn Node>,
    vlen: usize,
}

impl Node for Vectors {
    fn ports(&self) -> Ports {
        let mut ports = self.node.ports();
        for spec in ports.inputs.iter_mut().chain(&mut ports.outputs) {
            spec.vlen = self.vlen;
        }
        ports
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        self.node.work(io)
    }
    fn tag_policy(&self) -> TagPolicy {
        self.node.tag_policy()
    }
    fn init(&mut self) -> Result<(), NodeError> {
        self.node.init()
    }
    fn stop(&mut self) {
        self.node.stop()
    }
    fn length(&self) -> Option<u64> {
        self.node.length()
    }
    fn warnings(&mut self) -> Vec<String> {
        self.node.warnings()
    }
}

/// `node`, carrying vectors of `vlen` items.
fn vectors(node: Box<dyn Node>, vlen: usize) -> Box<dyn Node> {
    match vlen {
        1 => node,
        vlen => Box::new(Vectors { node, vlen }),
    }
}

/// Builds a block generic over its item type.
trait ForItem {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError>;
}

fn with_item(p: &mut Params, b: &impl ForItem) -> Result<Box<dyn Node>, ParamError> {
    let item = p.opt_str("item")?.unwrap_or_else(|| "c32".to_string());
    match item.as_str() {
        "c32" => b.build::<Complex32>(p),
        "f32" => b.build::<f32>(p),
        "i16" => b.build::<i16>(p),
        "u8" => b.build::<u8>(p),
        other => Err(ParamError::new(
            "item",
            format!("unknown item type '{other}' (use c32, f32, i16 or u8)"),
        )),
    }
}

/// Builds a block generic over real or complex samples.
trait ForSample {
    fn build<S: Sample>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError>;
}

fn with_sample(p: &mut Params, b: &impl ForSample) -> Result<Box<dyn Node>, ParamError> {
    let item = p.opt_str("item")?.unwrap_or_else(|| "c32".to_string());
    match item.as_str() {
        "c32" => b.build::<Complex32>(p),
        "f32" => b.build::<f32>(p),
        other => Err(ParamError::new(
            "item",
            format!("unknown sample type '{other}' (use c32 or f32)"),
        )),
    }
}

fn node_err(param: &str) -> impl Fn(NodeError) -> ParamError + '_ {
    move |e| ParamError::new(param, e.to_string())
}

struct NullSourceB;
impl ForItem for NullSourceB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        Ok(vectors(Box::new(NullSource::<T>::new()), vlen(p)?))
    }
}
struct NullSinkB;
impl ForItem for NullSinkB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        Ok(vectors(Box::new(NullSink::<T>::new()), vlen(p)?))
    }
}
struct StreamToVectorB;
impl ForItem for StreamToVectorB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let n = vlen(p)?;
        Ok(Box::new(Rated::new(StreamToVector::<T>::new(n))))
    }
}
struct VectorToStreamB;
impl ForItem for VectorToStreamB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let n = vlen(p)?;
        Ok(Box::new(Rated::new(VectorToStream::<T>::new(n))))
    }
}
struct HeadB;
impl ForItem for HeadB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        Ok(Box::new(Head::<T>::new(p.u64("items")?)))
    }
}
struct CopyB;
impl ForItem for CopyB {
    fn build<T: Item>(&self, _: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        Ok(Box::new(Copy::<T>::new()))
    }
}
struct ThrottleB;
impl ForItem for ThrottleB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let rate = p.f64("rate")?;
        Ok(Box::new(
            Throttle::<T>::new(rate).map_err(node_err("rate"))?,
        ))
    }
}
struct KeepB;
impl ForItem for KeepB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let n = p.u64("n")? as usize;
        Ok(Box::new(KeepOneInN::<T>::new(n).map_err(node_err("n"))?))
    }
}
struct CornerTurnB;
impl ForItem for CornerTurnB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let rows = p.u64("rows")? as usize;
        let cols = p.u64("cols")? as usize;
        // One matrix in and one out, each in a queue of two.
        let bytes = rows as u128 * cols as u128 * std::mem::size_of::<T>() as u128 * 4;
        sluice_graph::memory::ensure_fits("rows", bytes, &format!("{rows} x {cols} matrices"))?;
        Ok(Box::new(
            crate::blocks::CornerTurn::<T>::new(rows, cols).map_err(node_err("rows"))?,
        ))
    }
}
struct FileSourceB;
impl ForItem for FileSourceB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let path = p.str("path")?;
        let repeat = p.bool_or("repeat", false)?;
        let source = FileSource::<T>::open(Path::new(&path), repeat).map_err(node_err("path"))?;
        let n = vlen(p)?;
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        let items = bytes / std::mem::size_of::<T>() as u64;
        if !items.is_multiple_of(n as u64) {
            return Err(ParamError::new(
                "vlen",
                format!("{path} holds {items} items, not a whole number of {n}-item vectors"),
            ));
        }
        Ok(vectors(Box::new(source), n))
    }
}
struct FileSinkB;
impl ForItem for FileSinkB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let path = p.str("path")?;
        let n = vlen(p)?; // checked before the sink creates anything
        let sink = FileSink::<T>::create(Path::new(&path)).map_err(node_err("path"))?;
        Ok(vectors(Box::new(sink), n))
    }
}
struct SignalB;
impl ForSample for SignalB {
    fn build<S: Sample>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let waveform = match p.opt_str("waveform")?.as_deref().unwrap_or("tone") {
            "tone" => Waveform::Tone {
                frequency: p.f64_or("frequency", 1000.0)?,
            },
            "noise" => Waveform::Noise {
                seed: p.u64_or("seed", 1)?,
            },
            other => {
                return Err(ParamError::new(
                    "waveform",
                    format!("unknown waveform '{other}' (use tone or noise)"),
                ))
            }
        };
        let amplitude = p.f64_or("amplitude", 1.0)? as f32;
        let rate = p.f64_or("sample_rate", 48000.0)?;
        Ok(Box::new(
            SignalSource::<S>::new(waveform, amplitude, rate).map_err(node_err("sample_rate"))?,
        ))
    }
}
struct ChecksumB;
impl ForItem for ChecksumB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let label = p.opt_str("label")?;
        Ok(Box::new(crate::blocks::Checksum::<T>::new(label).0))
    }
}

struct ProbeB;
impl ForSample for ProbeB {
    fn build<S: Sample>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let label = p.opt_str("label")?;
        Ok(Box::new(Probe::<S>::new(label).0))
    }
}

/// `add` (two inputs, `a` and `b`) and `sum` (`inputs` inputs): elementwise sums of f32 or c32
/// streams, reading windows of every input at once.
fn sum_block(p: &mut Params, add: bool) -> Result<Box<dyn Node>, ParamError> {
    let item = p.opt_str("item")?.unwrap_or_else(|| "c32".to_string());
    let inputs = if add { 2 } else { p.u64("inputs")? };
    if !(1..=1024).contains(&inputs) {
        return Err(ParamError::new(
            "inputs",
            format!("must be between 1 and 1024, not {inputs}"),
        ));
    }
    let dsp = |e: sluice_kernels::DspError| ParamError::new("inputs", e.to_string());
    let n = inputs as usize;
    match (item.as_str(), add) {
        ("f32", true) => Ok(Box::new(crate::blocks::Add::<f32>::new())),
        ("c32", true) => Ok(Box::new(crate::blocks::Add::<Complex32>::new())),
        ("f32", false) => Ok(Box::new(crate::blocks::Sum::<f32>::new(n).map_err(dsp)?)),
        ("c32", false) => Ok(Box::new(
            crate::blocks::Sum::<Complex32>::new(n).map_err(dsp)?,
        )),
        (other, _) => Err(ParamError::new(
            "item",
            format!("unknown sample type '{other}' (use c32 or f32)"),
        )),
    }
}

/// A WAV file's rate, read from its header when the graph loads (`None` if it cannot be read:
/// the build then says why).
fn wav_rate(path: &str) -> Option<f64> {
    let reader = sluice_formats::wav::WavReader::open(Path::new(path)).ok()?;
    Some(f64::from(reader.info().sample_rate))
}

fn wav_source(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let path = p.str("path")?;
    Ok(Box::new(
        WavSource::open(Path::new(&path)).map_err(node_err("path"))?,
    ))
}

fn wav_sink(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let path = p.str("path")?;
    let channels = p.u64_or("channels", 1)?;
    if !(1..=u64::from(u16::MAX)).contains(&channels) {
        return Err(ParamError::new(
            "channels",
            format!("must be between 1 and 65535 (a WAV file's limit), not {channels}"),
        ));
    }
    let channels = channels as usize;
    // A WAV header holds a whole number of frames per second.
    let rate = match p.opt_f64("sample_rate")? {
        Some(hz) if hz.fract() != 0.0 || !(1.0..=f64::from(u32::MAX)).contains(&hz) => {
            return Err(ParamError::new(
                "sample_rate",
                format!(
                    "must be a whole number of Hz between 1 and {} (a WAV file's), not {hz}",
                    u32::MAX
                ),
            ))
        }
        hz => hz.map(|hz| hz as u32),
    };
    let format = wav_format(p)?;
    let beyond = beyond_4gib(p)?;
    Ok(Box::new(
        WavSink::create(Path::new(&path), channels, rate, format)
            .map_err(node_err("path"))?
            .beyond_4gib(beyond),
    ))
}

/// The `format` parameter of the WAV sinks (see [`WavFormat::parse`]).
pub(crate) fn wav_format(p: &mut Params) -> Result<WavFormat, ParamError> {
    let name = p.opt_str("format")?.unwrap_or_else(|| "f32".into());
    WavFormat::parse(&name).ok_or_else(|| {
        ParamError::new(
            "format",
            format!("unknown WAV format '{name}' (use i16, i24, i32 or f32)"),
        )
    })
}

/// The `beyond_4gib` parameter of the WAV sinks.
pub(crate) fn beyond_4gib(p: &mut Params) -> Result<Beyond4Gib, ParamError> {
    match p.opt_str("beyond_4gib")?.as_deref().unwrap_or("rf64") {
        "rf64" => Ok(Beyond4Gib::Rf64),
        "split" => Ok(Beyond4Gib::Split),
        other => Err(ParamError::new(
            "beyond_4gib",
            format!("must be rf64 or split, not '{other}'"),
        )),
    }
}

/// The declarations of the WAV sinks' `format` and `beyond_4gib` parameters.
pub(crate) fn wav_sink_params() -> [ParamDecl; 2] {
    [
        Param::choice(
            "format",
            &WavFormat::NAMES,
            "sample format: i16, i24, i32 or f32 (s16, s24, s32 are accepted for i16, i24, i32)",
        )
        .default("f32"),
        Param::choice(
            "beyond_4gib",
            &["rf64", "split"],
            "past the 4 GiB a WAV header describes: rf64 makes the file RF64 (sox, libsndfile, \
             ffmpeg read it); split finishes it and goes on in NAME.2.wav, NAME.3.wav, …",
        )
        .default("rf64"),
    ]
}

/// Adds every standard block type to `registry`, in the order `sluice blocks` lists them.
pub fn register(registry: &mut Registry) {
    let types = [
        BlockType::new("null_source", Family::Sources, "Endless zero-valued items (bound it with head).")
            .gnuradio(&["null_source"])
            .port(PortDecl::output("out", ItemDecl::item()).vlen(Vlen::param("vlen")))
            .param(param_item())
            .param(param_vlen())
            .example(r#"item = "f32""#)
            .build(|p| with_item(p, &NullSourceB)),
        BlockType::new("null_sink", Family::Sinks, "Discards everything it receives.")
            .gnuradio(&["null_sink"])
            .port(PortDecl::input("in", ItemDecl::item()).vlen(Vlen::param("vlen")))
            .param(param_item())
            .param(param_vlen())
            .example(r#"item = "f32""#)
            .build(|p| with_item(p, &NullSinkB)),
        BlockType::new("head", Family::Plumbing, "Passes the first `items` items, then ends the stream.")
            .gnuradio(&["head"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_item())
            .param(Param::integer("items", "items to pass"))
            .example(r#"item = "f32", items = 48000"#)
            .build(|p| with_item(p, &HeadB)),
        BlockType::new("copy", Family::Plumbing, "Copies input to output (one memcpy per window).")
            .gnuradio(&["copy"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_item())
            .example(r#"item = "c32""#)
            .build(|p| with_item(p, &CopyB)),
        BlockType::new("throttle", Family::Plumbing, "Paces a stream to `rate` items per second.")
            .gnuradio(&["throttle"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_item())
            .param(Param::number("rate", "items per second"))
            .example(r#"item = "f32", rate = 48000.0"#)
            .build(|p| with_item(p, &ThrottleB)),
        BlockType::new("keep_one_in_n", Family::Resampling, "Keeps item 0, n, 2n, … (decimation without filtering); tags are rescaled.")
            .gnuradio(&["keep_one_in_n"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_item())
            .param(Param::integer("n", "decimation factor"))
            .rate(Rate::divided_by("n"))
            .example(r#"item = "c32", n = 4"#)
            .build(|p| with_item(p, &KeepB)),
        BlockType::new("corner_turn", Family::Plumbing, "Transposes each rows x cols matrix (row-major) on the copy engine.")
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_item())
            .param(Param::integer("rows", "rows of each input matrix"))
            .param(Param::integer("cols", "columns of each input matrix"))
            .example(r#"item = "c32", rows = 64, cols = 1024"#)
            .build(|p| with_item(p, &CornerTurnB)),
        BlockType::new("stream_to_vector", Family::Plumbing, "Groups every vlen items into one vector (a partial vector at the end is dropped).")
            .gnuradio(&["stream_to_vector"])
            .rate(Rate::divided_by("vlen"))
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()).vlen(Vlen::param("vlen")))
            .param(param_item())
            .param(param_vlen())
            .example(r#"item = "c32", vlen = 1024"#)
            .build(|p| with_item(p, &StreamToVectorB)),
        BlockType::new("vector_to_stream", Family::Plumbing, "Splits vectors of vlen items back into a stream.")
            .gnuradio(&["vector_to_stream"])
            .rate(Rate::times("vlen"))
            .port(PortDecl::input("in", ItemDecl::item()).vlen(Vlen::param("vlen")))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_item())
            .param(param_vlen())
            .example(r#"item = "c32", vlen = 1024"#)
            .build(|p| with_item(p, &VectorToStreamB)),
        BlockType::new("add", Family::Math, "Adds two streams item by item, reading both windows in place (ends with the shorter).")
            .gnuradio(&["add"])
            .port(PortDecl::input("a", ItemDecl::item()))
            .port(PortDecl::input("b", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_sample())
            .example(r#"item = "f32""#)
            .build(|p| sum_block(p, true)),
        BlockType::new("sum", Family::Math, "Adds `inputs` streams item by item, reading every window in place (ends with the shortest).")
            .port(PortDecl::input("in", ItemDecl::item()).counted("inputs"))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_sample())
            .param(Param::integer("inputs", "number of inputs (1-1024)"))
            .example(r#"item = "c32", inputs = 4"#)
            .build(|p| sum_block(p, false)),
        crate::blocks::multiply_const::multiply_const(),
        crate::blocks::fm_mod::fm_mod(),
        crate::blocks::vector::vector_source(),
        BlockType::new("signal_source", Family::Sources, "A tone or Gaussian noise, endless.")
            .gnuradio(&["sig_source", "noise_source"])
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_sample())
            .param(Param::text("waveform", "tone or noise").derived("tone"))
            .param(Param::number("frequency", "tone frequency in Hz (phase-continuous when changed while running)").default(1000.0).settable())
            .param(Param::number("amplitude", "peak amplitude (tone) or RMS (noise)").default(1.0).settable())
            .param(Param::number("sample_rate", "samples per second").default(48000.0))
            .rate(Rate::param("sample_rate"))
            .param(Param::integer("seed", "noise seed").default(1))
            .example(r#"item = "f32", frequency = 440.0, amplitude = 0.5, sample_rate = 48000"#)
            .build(|p| with_sample(p, &SignalB)),
        BlockType::new("probe", Family::Analysis, "Measures rate, RMS and peak of a stream; prints them at the end with a label.")
            .gnuradio(&["probe_rate", "probe_signal"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .param(param_sample())
            .param(Param::text("label", "name printed with the summary").derived("none"))
            .example(r#"item = "f32", label = "output""#)
            .build(|p| with_sample(p, &ProbeB)),
        BlockType::new("checksum", Family::Analysis, "Hashes the bytes of a stream (CRC32C); prints items, bytes and the checksum at the end with a label, to check that a transport delivered exactly what was sent.")
            .port(PortDecl::input("in", ItemDecl::item()))
            .param(param_item())
            .param(Param::text("label", "name printed with the summary").derived("none"))
            .example(r#"item = "c32", label = "received""#)
            .build(|p| with_item(p, &ChecksumB)),
        BlockType::new("file_source", Family::Files, "Reads raw little-endian items (GNU Radio's file format).")
            .gnuradio(&["file_source"])
            .port(PortDecl::output("out", ItemDecl::item()).vlen(Vlen::param("vlen")))
            .param(param_item())
            .param(param_vlen())
            .param(Param::reads("path", "file to read"))
            .param(Param::bool("repeat", "start over at the end").default(false))
            .example(r#"item = "c32", path = "capture.c32""#)
            .build(|p| with_item(p, &FileSourceB)),
        BlockType::new("file_sink", Family::Files, "Writes raw little-endian items (GNU Radio's file format).")
            .gnuradio(&["file_sink"])
            .port(PortDecl::input("in", ItemDecl::item()).vlen(Vlen::param("vlen")))
            .param(param_item())
            .param(param_vlen())
            .param(Param::writes("path", "file to write"))
            .example(r#"item = "c32", path = "out.c32""#)
            .build(|p| with_item(p, &FileSinkB)),
        BlockType::new("wav_source", Family::Files, "Reads a WAV file (16/24/32-bit int or 32-bit float) as f32, one port per channel.")
            .gnuradio(&["wavfile_source"])
            .port(PortDecl::output("out", ItemDecl::fixed("f32")).counted_when_built("one per channel of the file"))
            .param(Param::reads("path", "WAV file to read"))
            .example(r#"path = "speech.wav""#)
            .rate(Rate::fixed(|p| wav_rate(&p.opt_str("path").ok()??)))
            .build(wav_source),
        BlockType::new("wav_sink", Family::Files, "Writes its inputs as the channels of a WAV file.")
            .gnuradio(&["wavfile_sink"])
            .port(PortDecl::input("in", ItemDecl::fixed("f32")).counted("channels"))
            .param(Param::writes("path", "WAV file to write"))
            .param(Param::integer("channels", "number of channels (inputs)").default(1))
            .param(Param::number("sample_rate", "the file's sample rate; when the stream's is not known before it runs: its rx_rate tag, else 48000").follows_stream())
            .params(wav_sink_params())
            .example(r#"path = "out.wav", channels = 2, sample_rate = 44100, format = "i16""#)
            .build(wav_sink),
    ];
    for t in types
        .into_iter()
        .chain(filters::block_types())
        .chain(radio::block_types())
        .chain(beamform::block_types())
        .chain(math::block_types())
        .chain(plumbing::block_types())
        .chain(receiver::block_types())
        .chain(recording::block_types())
        .chain(wav_files::block_types())
    {
        registry
            .add(t)
            .expect("the standard blocks have distinct names");
    }
}

/// A registry holding the standard blocks.
pub fn standard_registry() -> Registry {
    let mut registry = Registry::new();
    register(&mut registry);
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settable_parameters_are_described() {
        let registry = standard_registry();
        let text = registry.describe_one("multiply_const").unwrap();
        assert!(text.contains("a number; settable; default 1.0"), "{text}");
        assert!(
            text.contains("while the graph runs, change gain with `sluice ctl"),
            "{text}"
        );
        let sink = registry.describe_one("file_sink").unwrap();
        assert!(!sink.contains("its memory is declared"), "{sink}");
    }

    #[test]
    fn multiply_const_from_a_graph_file_takes_its_gain() {
        let text = r#"
[[node]]
name = "src"
type = "signal_source"
params = { item = "f32", frequency = 0.0, amplitude = 2.0 }

[[node]]
name = "first"
type = "head"
params = { item = "f32", items = 10 }

[[node]]
name = "gain"
type = "multiply_const"
params = { item = "f32", gain = -1.5 }

[[node]]
name = "sink"
type = "null_sink"
params = { item = "f32" }

[[edge]]
from = "src.out"
to = "first.in"

[[edge]]
from = "first.out"
to = "gain.in"

[[edge]]
from = "gain.out"
to = "sink.in"
"#;
        let registry = standard_registry();
        let graph = sluice_graph::load_str(text, "g.toml", &registry).unwrap();
        let names: Vec<String> = graph
            .control_handle()
            .controls()
            .into_iter()
            .map(|(node, specs)| {
                let params: Vec<&str> = specs.iter().map(|s| s.name).collect();
                format!("{node}: {}", params.join(", "))
            })
            .collect();
        assert_eq!(names, ["src: frequency, amplitude", "gain: gain"]);
        assert_eq!(
            graph.run_stepped().unwrap().node("sink").unwrap().items_in,
            10
        );
        let bad = text.replace("gain = -1.5", "gain = \"loud\"");
        let err = sluice_graph::load_str(&bad, "g.toml", &registry)
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .contains("node 'gain': parameter 'gain' must be a number, not a string"),
            "{err}"
        );
    }
}
