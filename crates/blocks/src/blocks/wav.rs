//! WAV source and sink: one `f32` port per channel (`out0`, `out1`, … / `in0`, `in1`, …), full
//! scale ±1.0. Reading and writing are [`sluice_formats::wav`]'s: 8/16/24/32-bit integer and 32/64-bit
//! float in, 16/24/32-bit integer and 32-bit float out.

use sluice_formats::wav::{Beyond4Gib, Encoding, WavError, WavReader, WavWriter};
use sluice_runtime::{metadata, Node, NodeError, Ports, TagPolicy, TagValue, Work, WorkIo};
use std::path::Path;

/// Frames decoded or encoded per work call.
const CHUNK: usize = 4096;

fn node_error(e: WavError) -> NodeError {
    NodeError::from_error(e)
}

/// Reads a WAV file and streams each channel on its own output.
#[derive(Debug)]
pub struct WavSource {
    reader: WavReader,
    stage: Vec<f32>,
    /// Whether the first item of each channel has been tagged with the file's sample rate.
    tagged: bool,
}

impl WavSource {
    /// Opens `path`; errors name the file and say what is wrong with it.
    pub fn open(path: &Path) -> Result<Self, NodeError> {
        let reader = WavReader::open(path).map_err(node_error)?;
        let channels = reader.info().channels;
        Ok(WavSource {
            reader,
            stage: Vec::with_capacity(CHUNK * channels),
            tagged: false,
        })
    }

    /// Channels in the file.
    pub fn channels(&self) -> usize {
        self.reader.info().channels
    }

    /// Sample rate in Hz.
    pub fn sample_rate(&self) -> u32 {
        self.reader.info().sample_rate
    }
}

impl Node for WavSource {
    fn ports(&self) -> Ports {
        (0..self.channels()).fold(Ports::new(), |p, c| p.output::<f32>(&format!("out{c}")))
    }

    fn length(&self) -> Option<u64> {
        let info = self.reader.info();
        info.frames.map(|frames| frames * info.channels as u64)
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let channels = self.channels();
        if !self.tagged {
            // Stream metadata: every channel carries the file's sample rate from its first item.
            self.tagged = true;
            let rate = metadata::sample_rate(f64::from(self.sample_rate()));
            for c in 0..channels {
                io.outputs
                    .get::<f32>(c)?
                    .add_tag(0, metadata::SAMPLE_RATE, rate.clone());
            }
        }
        let mut frames = CHUNK;
        for c in 0..channels {
            match io.outputs.get::<f32>(c)?.reserve(1)? {
                Some(space) => frames = frames.min(space.len()),
                None => return Ok(Work::NeedOutput { port: c, items: 1 }),
            }
        }
        self.stage.clear();
        let got = self
            .reader
            .read_frames(&mut self.stage, frames)
            .map_err(node_error)?;
        if got == 0 {
            return Ok(Work::Done);
        }
        for c in 0..channels {
            let out = io.outputs.get::<f32>(c)?;
            if let Some(space) = out.reserve(got)? {
                for (dst, frame) in space.iter_mut().zip(self.stage.chunks_exact(channels)) {
                    *dst = frame[c];
                }
                out.commit(got);
            }
        }
        Ok(Work::Progress)
    }
}

/// Sample formats a [`WavSink`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WavFormat {
    /// 16-bit integer PCM.
    Int16,
    /// 24-bit integer PCM.
    Int24,
    /// 32-bit integer PCM.
    Int32,
    /// 32-bit IEEE float.
    Float32,
}

impl WavFormat {
    /// The format named `name` in a graph file or on the command line: `i16`, `i24`, `i32` or
    /// `f32`, the spelling of sluice's item types; `s16`, `s24` and `s32` (sox's and ffmpeg's
    /// spelling) are accepted as aliases.
    pub fn parse(name: &str) -> Option<WavFormat> {
        match name {
            "i16" | "s16" => Some(WavFormat::Int16),
            "i24" | "s24" => Some(WavFormat::Int24),
            "i32" | "s32" => Some(WavFormat::Int32),
            "f32" => Some(WavFormat::Float32),
            _ => None,
        }
    }

    /// Every name [`WavFormat::parse`] accepts: the four formats, then the aliases.
    pub const NAMES: [&'static str; 7] = ["i16", "i24", "i32", "f32", "s16", "s24", "s32"];

    pub(crate) fn encoding(self) -> Encoding {
        match self {
            WavFormat::Int16 => Encoding::Int(16),
            WavFormat::Int24 => Encoding::Int(24),
            WavFormat::Int32 => Encoding::Int(32),
            WavFormat::Float32 => Encoding::Float(32),
        }
    }
}

/// Writes its inputs as the channels of a WAV file; the header is finalised at end of stream,
/// and only then is the file moved onto its path: an existing file there is untouched unless
/// the graph finishes. Samples clipped to full scale and NaN samples are counted and reported
/// at the end.
///
/// The file's sample rate is the one given, or else the stream's own (its
/// [`metadata::SAMPLE_RATE`] tag on the first item, which WAV and signal sources set and
/// decimators rescale), or else 48 kHz with a warning.
#[derive(Debug)]
pub struct WavSink {
    writer: WavWriter,
    channels: usize,
    stage: Vec<f32>,
    /// The rate the user gave, if any (to compare with what the stream says).
    given_rate: Option<u32>,
    tags: Vec<sluice_runtime::Tag>,
    /// What the user should hear about when the run ends (see [`Node::warnings`]).
    warnings: Vec<String>,
}

/// The rate a WAV sink falls back to when neither the graph nor the stream gives one.
const FALLBACK_RATE: u32 = 48_000;

impl WavSink {
    /// Creates `path` for `channels` channels in `format`, at `sample_rate` Hz or, with `None`,
    /// at the rate the stream's metadata gives.
    pub fn create(
        path: &Path,
        channels: usize,
        sample_rate: Option<u32>,
        format: WavFormat,
    ) -> Result<Self, NodeError> {
        let writer = WavWriter::create(path, channels, sample_rate, format.encoding())
            .map_err(node_error)?;
        Ok(WavSink {
            writer,
            channels,
            stage: Vec::with_capacity(CHUNK * channels),
            given_rate: sample_rate,
            tags: Vec::new(),
            warnings: Vec::new(),
        })
    }

    /// The same sink with `beyond` for recordings past 4 GiB (RF64 unless told otherwise).
    pub fn beyond_4gib(mut self, beyond: Beyond4Gib) -> Self {
        self.writer = self.writer.beyond_4gib(beyond);
        self
    }

    /// Reads the sample rate tags on the window about to be written (first channel).
    fn read_rate_tags(&mut self, io: &mut WorkIo<'_>, frames: usize) -> Result<(), NodeError> {
        let input = io.inputs.get::<f32>(0)?;
        self.tags.clear();
        input.take_tags(input.items_read() + frames as u64, &mut self.tags);
        for tag in &self.tags {
            if &*tag.key != metadata::SAMPLE_RATE {
                continue;
            }
            let hz = match tag.value {
                TagValue::F64(hz) => hz,
                TagValue::U64(hz) => hz as f64,
                TagValue::I64(hz) => hz as f64,
                _ => continue,
            };
            if !(1.0..=f64::from(u32::MAX)).contains(&hz) {
                continue;
            }
            let hz = hz.round() as u32;
            match (self.writer.sample_rate(), self.given_rate) {
                (None, _) => self.writer.set_sample_rate(hz).map_err(node_error)?,
                (Some(rate), Some(_)) if rate != hz => self.warnings.push(format!(
                    "the stream says {hz} Hz but the file is written at the {rate} Hz given"
                )),
                (Some(rate), None) if rate != hz => self.warnings.push(format!(
                    "the stream changes to {hz} Hz at item {}; a WAV file has one rate ({rate} Hz)",
                    tag.index
                )),
                _ => {}
            }
        }
        if self.writer.sample_rate().is_none() {
            self.warnings.push(format!(
                "neither the graph nor the stream gives a sample rate; writing {FALLBACK_RATE} Hz"
            ));
            self.writer
                .set_sample_rate(FALLBACK_RATE)
                .map_err(node_error)?;
        }
        Ok(())
    }
}

impl Node for WavSink {
    fn ports(&self) -> Ports {
        (0..self.channels).fold(Ports::new(), |p, c| p.input::<f32>(&format!("in{c}")))
    }

    fn warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let mut frames = CHUNK;
        for c in 0..self.channels {
            match io.inputs.get::<f32>(c)?.window(1)? {
                None => return Ok(Work::NeedInput { port: c, items: 1 }),
                Some(w) => frames = frames.min(w.len()),
            }
        }
        self.read_rate_tags(io, frames)?;
        if frames == 0 {
            self.writer.finish().map_err(node_error)?;
            self.warnings.extend(self.writer.warning());
            return Ok(Work::Done);
        }
        self.stage.clear();
        self.stage.resize(frames * self.channels, 0.0);
        for c in 0..self.channels {
            let input = io.inputs.get::<f32>(c)?;
            if let Some(w) = input.window(frames)? {
                for (frame, &x) in self.stage.chunks_exact_mut(self.channels).zip(w) {
                    frame[c] = x;
                }
            }
            input.consume(frames);
        }
        self.writer.write(&self.stage).map_err(node_error)?;
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

#[cfg(test)]
impl WavSink {
    /// The same sink with a smaller plain-WAV limit, to test RF64 and split files without
    /// writing 4 GiB.
    fn with_data_limit(mut self, bytes: u64) -> Self {
        self.writer = self.writer.with_data_limit(bytes);
        self
    }
}

#[cfg(test)]
mod tests {
    /// A stream longer than a plain WAV file holds (the limit made small here) is never lost:
    /// it becomes one RF64 file, or plain files one after another if asked; both read back whole.
    #[test]
    fn a_stream_longer_than_a_wav_file_can_hold_is_kept_whole() {
        use crate::blocks::vector::VectorSource;
        use sluice_runtime::Graph;
        let dir = std::env::temp_dir().join(format!("sluice-wav-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let x: Vec<f32> = (0..10_000).map(|i| (i as f32 * 1e-4) - 0.5).collect();
        for beyond in [Beyond4Gib::Rf64, Beyond4Gib::Split] {
            let path = dir.join(format!("{beyond:?}.wav"));
            let mut g = Graph::new();
            let src = g
                .add("src", VectorSource::new(x.clone()).max_chunk(999))
                .unwrap();
            let sink = super::WavSink::create(&path, 1, Some(48000), super::WavFormat::Float32)
                .unwrap()
                .beyond_4gib(beyond)
                .with_data_limit(16_000);
            let sink = g.add("wav", sink).unwrap();
            g.connect(src, "out", sink, "in0").unwrap();
            let report = g.run_stepped().unwrap();
            let files = match beyond {
                Beyond4Gib::Rf64 => vec![path.clone()],
                Beyond4Gib::Split => (1..=3)
                    .map(|n| match n {
                        1 => path.clone(),
                        n => sluice_formats::wav::split_path(&path, n),
                    })
                    .collect(),
            };
            let mut back = Vec::new();
            for f in &files {
                let head = std::fs::read(f).unwrap();
                let magic = if beyond == Beyond4Gib::Rf64 {
                    b"RF64"
                } else {
                    b"RIFF"
                };
                assert_eq!(&head[0..4], magic, "{}", f.display());
                back.extend(
                    WavReader::open(f)
                        .unwrap()
                        .read_channels()
                        .unwrap()
                        .remove(0),
                );
            }
            assert_eq!(back, x, "{beyond:?}");
            let warnings = &report.node("wav").unwrap().warnings;
            assert_eq!(
                warnings.iter().any(|w| w.contains("went on in")),
                beyond == Beyond4Gib::Split,
                "{warnings:?}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    use super::*;
    use crate::blocks::vector::{VectorSink, VectorSource};
    use sluice_runtime::Graph;

    fn round_trip(format: WavFormat, tolerance: f32) {
        let dir =
            std::env::temp_dir().join(format!("sluice-wav-{}-{format:?}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.wav");
        let left: Vec<f32> = (0..10_000).map(|i| (i as f32 * 0.01).sin() * 0.9).collect();
        let right: Vec<f32> = left.iter().map(|x| -x * 0.5).collect();
        let mut g = Graph::new();
        let l = g
            .add("l", VectorSource::new(left.clone()).max_chunk(777))
            .unwrap();
        let r = g.add("r", VectorSource::new(right.clone())).unwrap();
        let sink = g
            .add(
                "wav",
                WavSink::create(&path, 2, Some(48000), format).unwrap(),
            )
            .unwrap();
        g.connect(l, "out", sink, "in0").unwrap();
        g.connect(r, "out", sink, "in1").unwrap();
        g.run_stepped().unwrap();

        let src = WavSource::open(&path).unwrap();
        assert_eq!((src.channels(), src.sample_rate()), (2, 48000));
        let mut g = Graph::new();
        let s = g.add("src", src).unwrap();
        let (a, da) = VectorSink::<f32>::new();
        let (b, db) = VectorSink::<f32>::new();
        let a = g.add("a", a).unwrap();
        let b = g.add("b", b).unwrap();
        g.connect(s, "out0", a, "in").unwrap();
        g.connect(s, "out1", b, "in").unwrap();
        g.run_stepped().unwrap();
        for (got, want) in [(da.items(), &left), (db.items(), &right)] {
            assert_eq!(got.len(), want.len());
            let err = got
                .iter()
                .zip(want.iter())
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(err <= tolerance, "{format:?}: error {err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Stream metadata: the file's rate travels with the samples, is halved by a decimator, and
    /// labels the output WAV when the sink is given no rate.
    #[test]
    fn the_output_wav_carries_the_streams_sample_rate() {
        let dir = std::env::temp_dir().join(format!("sluice-wav-rate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in.wav");
        let mut w = WavWriter::create(&input, 1, Some(44100), Encoding::Int(16)).unwrap();
        w.write(&vec![0.25; 4410]).unwrap();
        w.finish().unwrap();
        for (decimation, rate, frames) in [(1, 44100, 4410), (2, 22050, 2205)] {
            let output = dir.join(format!("out{decimation}.wav"));
            let mut g = Graph::new();
            let src = g.add("src", WavSource::open(&input).unwrap()).unwrap();
            let keep = g
                .add(
                    "keep",
                    crate::blocks::KeepOneInN::<f32>::new(decimation).unwrap(),
                )
                .unwrap();
            let sink = g
                .add(
                    "sink",
                    WavSink::create(&output, 1, None, WavFormat::Float32).unwrap(),
                )
                .unwrap();
            g.connect(src, "out0", keep, "in").unwrap();
            g.connect(keep, "out", sink, "in0").unwrap();
            g.run_stepped().unwrap();
            let back = WavReader::open(&output).unwrap().info();
            assert_eq!((back.sample_rate, back.frames), (rate, Some(frames)));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn round_trips_in_every_format() {
        round_trip(WavFormat::Float32, 0.0);
        round_trip(WavFormat::Int16, 1.0 / 32768.0);
        round_trip(WavFormat::Int24, 1.0 / 8_388_608.0);
        round_trip(WavFormat::Int32, 1e-7);
    }

    #[test]
    fn formats_have_one_spelling_and_sox_s_as_an_alias() {
        assert_eq!(WavFormat::parse("i24"), Some(WavFormat::Int24));
        assert_eq!(WavFormat::parse("s24"), Some(WavFormat::Int24));
        assert_eq!(WavFormat::parse("s16"), Some(WavFormat::Int16));
        assert_eq!(WavFormat::parse("f64"), None);
        assert!(WavFormat::NAMES
            .iter()
            .all(|n| WavFormat::parse(n).is_some()));
    }

    #[test]
    fn not_a_wav_is_an_error_naming_the_file() {
        let path = std::env::temp_dir().join(format!("sluice-notwav-{}.wav", std::process::id()));
        std::fs::write(&path, b"this is not audio").unwrap();
        let err = WavSource::open(&path).unwrap_err().to_string();
        assert!(err.contains("not a valid WAV file: no RIFF tag"), "{err}");
        assert!(err.contains(&path.display().to_string()));
        std::fs::remove_file(&path).unwrap();
    }
}
