//! WAV source and sink: one `f32` port per channel (`out0`, `out1`, … / `in0`, `in1`, …), full
//! scale ±1.0, for 16/24/32-bit integer and 32-bit float files.

use crate::output_file::PartialFile;
use sluice_runtime::{Node, NodeError, Ports, TagPolicy, Work, WorkIo};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

/// Frames decoded or encoded per work call.
const CHUNK: usize = 4096;

/// Reads a WAV file and streams each channel on its own output.
pub struct WavSource {
    path: PathBuf,
    reader: hound::WavReader<BufReader<File>>,
    spec: hound::WavSpec,
    stage: Vec<f32>,
}

impl std::fmt::Debug for WavSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WavSource")
            .field("path", &self.path)
            .finish()
    }
}

impl WavSource {
    /// Opens `path`; errors name the file and say what is wrong with it.
    pub fn open(path: &Path) -> Result<Self, NodeError> {
        let reader = hound::WavReader::open(path).map_err(|e| {
            NodeError::msg(format!(
                "{} is not a readable WAV file: {e}",
                path.display()
            ))
        })?;
        let spec = reader.spec();
        match (spec.sample_format, spec.bits_per_sample) {
            (hound::SampleFormat::Float, 32) | (hound::SampleFormat::Int, 8 | 16 | 24 | 32) => {}
            (format, bits) => {
                return Err(NodeError::msg(format!(
                    "{}: {bits}-bit {format:?} samples are not supported (use 16/24/32-bit integer or 32-bit float)",
                    path.display()
                )))
            }
        }
        Ok(WavSource {
            path: path.to_path_buf(),
            reader,
            spec,
            stage: Vec::with_capacity(CHUNK * usize::from(spec.channels)),
        })
    }

    /// Channels in the file.
    pub fn channels(&self) -> usize {
        usize::from(self.spec.channels)
    }

    /// Sample rate in Hz.
    pub fn sample_rate(&self) -> u32 {
        self.spec.sample_rate
    }

    /// Decodes up to `frames` interleaved frames into `self.stage`.
    fn decode(&mut self, frames: usize) -> Result<(), NodeError> {
        self.stage.clear();
        let want = frames * self.channels();
        let bad = |e: hound::Error, path: &Path| {
            NodeError::msg(format!(
                "{}: {e} (truncated or corrupt file?)",
                path.display()
            ))
        };
        if self.spec.sample_format == hound::SampleFormat::Float {
            for s in self.reader.samples::<f32>().take(want) {
                self.stage.push(s.map_err(|e| bad(e, &self.path))?);
            }
        } else {
            let scale = 1.0 / (1u64 << (self.spec.bits_per_sample - 1)) as f32;
            for s in self.reader.samples::<i32>().take(want) {
                self.stage
                    .push(s.map_err(|e| bad(e, &self.path))? as f32 * scale);
            }
        }
        Ok(())
    }
}

impl Node for WavSource {
    fn ports(&self) -> Ports {
        (0..self.channels()).fold(Ports::new(), |p, c| p.output::<f32>(&format!("out{c}")))
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let channels = self.channels();
        let mut frames = CHUNK;
        for c in 0..channels {
            match io.outputs.get::<f32>(c)?.reserve(1)? {
                Some(space) => frames = frames.min(space.len()),
                None => return Ok(Work::NeedOutput { port: c, items: 1 }),
            }
        }
        self.decode(frames)?;
        let got = self.stage.len() / channels;
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

/// Sample encodings a [`WavSink`] can write.
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

/// Writes its inputs as the channels of a WAV file; the header is finalised at end of stream,
/// and only then is the file moved onto its path (see [`PartialFile`]): an existing file there
/// is untouched unless the graph finishes.
pub struct WavSink {
    path: PathBuf,
    writer: Option<hound::WavWriter<BufWriter<File>>>,
    partial: Option<PartialFile>,
    /// Sample bytes written so far, and the most a WAV file can hold (4 GiB; lower in tests).
    data_bytes: u64,
    data_limit: u64,
    channels: usize,
    format: WavFormat,
    stage: Vec<f32>,
    /// Samples clipped to full scale, and NaN samples (written as 0 in integer formats).
    clipped: u64,
    not_a_number: u64,
}

impl std::fmt::Debug for WavSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WavSink").field("path", &self.path).finish()
    }
}

impl WavSink {
    /// Creates `path` for `channels` channels at `sample_rate` Hz in `format`.
    pub fn create(
        path: &Path,
        channels: usize,
        sample_rate: u32,
        format: WavFormat,
    ) -> Result<Self, NodeError> {
        if channels == 0 || channels > usize::from(u16::MAX) {
            return Err(NodeError::msg(format!(
                "a WAV file needs 1 to 65535 channels, not {channels}"
            )));
        }
        let (bits, sample_format) = match format {
            WavFormat::Int16 => (16, hound::SampleFormat::Int),
            WavFormat::Int24 => (24, hound::SampleFormat::Int),
            WavFormat::Int32 => (32, hound::SampleFormat::Int),
            WavFormat::Float32 => (32, hound::SampleFormat::Float),
        };
        let spec = hound::WavSpec {
            channels: channels as u16,
            sample_rate,
            bits_per_sample: bits,
            sample_format,
        };
        let partial = PartialFile::new(path);
        let writer = hound::WavWriter::create(partial.temporary(), spec)
            .map_err(|e| NodeError::msg(format!("cannot create {}: {e}", path.display())))?;
        Ok(WavSink {
            path: path.to_path_buf(),
            writer: Some(writer),
            partial: Some(partial),
            data_bytes: 0,
            data_limit: MAX_WAV_DATA_BYTES,
            channels,
            format,
            stage: Vec::with_capacity(CHUNK * channels),
            clipped: 0,
            not_a_number: 0,
        })
    }

    fn write_stage(&mut self) -> Result<(), NodeError> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        // The RIFF sizes are 32-bit: past 4 GiB the header would wrap (and hound panics in
        // debug builds). Refuse before writing what cannot be described.
        let bytes = (self.stage.len() * bytes_per_sample(self.format)) as u64;
        if self.data_bytes + bytes > self.data_limit {
            return Err(NodeError::msg(format!(
                "{}: a WAV file holds at most 4 GiB of samples ({} frames of {} channel(s) here); \
                 bound the stream (head, a shorter capture) or write a raw file with file_sink",
                self.path.display(),
                self.data_limit / (bytes_per_sample(self.format) * self.channels) as u64,
                self.channels
            )));
        }
        self.data_bytes += bytes;
        let err = |e: hound::Error| NodeError::msg(format!("writing {}: {e}", self.path.display()));
        if self.format != WavFormat::Float32 {
            // Integer formats hold [-1, 1): count what quantisation changes beyond rounding.
            for &x in &self.stage {
                if x.is_nan() {
                    self.not_a_number += 1;
                } else if !(-1.0..=1.0).contains(&x) {
                    self.clipped += 1;
                }
            }
        } else {
            self.not_a_number += self.stage.iter().filter(|x| x.is_nan()).count() as u64;
        }
        for &x in &self.stage {
            let r = match self.format {
                WavFormat::Float32 => w.write_sample(x),
                WavFormat::Int16 => w.write_sample(quantize(x, 16)),
                WavFormat::Int24 => w.write_sample(quantize(x, 24)),
                WavFormat::Int32 => w.write_sample(quantize(x, 32)),
            };
            r.map_err(err)?;
        }
        Ok(())
    }
}

impl WavSink {
    /// Samples clipped to full scale so far (integer formats: beyond ±1.0).
    pub fn clipped(&self) -> u64 {
        self.clipped
    }

    /// NaN samples so far (written as 0 in integer formats, as NaN in float ones).
    pub fn not_a_number(&self) -> u64 {
        self.not_a_number
    }

    /// What went into the file changed or suspicious, in words (printed at the end).
    fn warning(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.clipped > 0 {
            parts.push(format!(
                "{} samples were beyond full scale (±1.0) and clipped; lower the level or write format = \"f32\"",
                self.clipped
            ));
        }
        if self.not_a_number > 0 {
            let written = if self.format == WavFormat::Float32 {
                "written as NaN"
            } else {
                "written as 0"
            };
            parts.push(format!("{} samples were NaN, {written}", self.not_a_number));
        }
        (!parts.is_empty())
            .then(|| format!("wav_sink {}: {}", self.path.display(), parts.join("; ")))
    }
}

/// The most sample bytes a WAV file can describe: its 32-bit RIFF size counts the whole file
/// after the first 8 bytes, so leave room for the header (and hound's extensible-format one).
const MAX_WAV_DATA_BYTES: u64 = u32::MAX as u64 - 128;

fn bytes_per_sample(format: WavFormat) -> usize {
    match format {
        WavFormat::Int16 => 2,
        WavFormat::Int24 => 3,
        WavFormat::Int32 | WavFormat::Float32 => 4,
    }
}

/// `x` (full scale ±1.0) as a `bits`-bit integer, rounded and clipped.
pub fn quantize(x: f32, bits: u32) -> i32 {
    let full = (1i64 << (bits - 1)) as f64;
    (f64::from(x) * full).round().clamp(-full, full - 1.0) as i32
}

impl Node for WavSink {
    fn ports(&self) -> Ports {
        (0..self.channels).fold(Ports::new(), |p, c| p.input::<f32>(&format!("in{c}")))
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let mut frames = CHUNK;
        for c in 0..self.channels {
            match io.inputs.get::<f32>(c)?.window(1)? {
                None => return Ok(Work::NeedInput { port: c, items: 1 }),
                Some(w) => frames = frames.min(w.len()),
            }
        }
        if frames == 0 {
            if let Some(w) = self.writer.take() {
                w.finalize().map_err(|e| {
                    NodeError::msg(format!("finishing {}: {e}", self.path.display()))
                })?;
            }
            if let Some(partial) = self.partial.take() {
                partial.commit().map_err(|e| {
                    NodeError::msg(format!(
                        "cannot move the output into {}: {e}",
                        self.path.display()
                    ))
                })?;
            }
            if let Some(warning) = self.warning() {
                eprintln!("sluice: warning: {warning}");
            }
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
        self.write_stage()?;
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

#[cfg(test)]
impl WavSink {
    /// The same sink with a smaller size limit, to test the 4 GiB check without writing 4 GiB.
    fn with_data_limit(mut self, bytes: u64) -> Self {
        self.data_limit = bytes;
        self
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_stream_longer_than_a_wav_file_can_hold_is_an_error_and_leaves_no_file() {
        use crate::blocks::vector::VectorSource;
        use sluice_runtime::Graph;
        let path =
            std::env::temp_dir().join(format!("sluice-wav-limit-{}.wav", std::process::id()));
        let mut g = Graph::new();
        let src = g
            .add("src", VectorSource::new(vec![0.25f32; 10_000]))
            .unwrap();
        let sink = super::WavSink::create(&path, 1, 48000, super::WavFormat::Float32)
            .unwrap()
            .with_data_limit(4000);
        let sink = g.add("wav", sink).unwrap();
        g.connect(src, "out", sink, "in0").unwrap();
        let err = g.run_stepped().unwrap_err().to_string();
        assert!(
            err.contains(
                "a WAV file holds at most 4 GiB of samples (1000 frames of 1 channel(s) here)"
            ),
            "{err}"
        );
        assert!(!path.exists(), "a partial WAV was left behind");
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
            .add("wav", WavSink::create(&path, 2, 48000, format).unwrap())
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

    #[test]
    fn round_trips_in_every_format() {
        round_trip(WavFormat::Float32, 0.0);
        round_trip(WavFormat::Int16, 1.0 / 32768.0);
        round_trip(WavFormat::Int24, 1.0 / 8_388_608.0);
        round_trip(WavFormat::Int32, 1e-7);
    }

    #[test]
    fn not_a_wav_is_an_error_naming_the_file() {
        let path = std::env::temp_dir().join(format!("sluice-notwav-{}.wav", std::process::id()));
        std::fs::write(&path, b"this is not audio").unwrap();
        let err = WavSource::open(&path).unwrap_err().to_string();
        assert!(err.contains("is not a readable WAV file"), "{err}");
        assert!(err.contains(&path.display().to_string()));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn clipped_and_nan_samples_are_counted_and_reported() {
        let dir = std::env::temp_dir().join(format!("sluice-wav-clip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut sink = WavSink::create(&dir.join("c.wav"), 1, 8000, WavFormat::Int16).unwrap();
        sink.stage = vec![0.5, 1.0, 1.5, -2.0, f32::NAN, -1.0];
        sink.write_stage().unwrap();
        assert_eq!((sink.clipped(), sink.not_a_number()), (2, 1));
        assert_eq!(
            sink.warning().unwrap(),
            format!(
                "wav_sink {}: 2 samples were beyond full scale (±1.0) and clipped; lower the level \
                 or write format = \"f32\"; 1 samples were NaN, written as 0",
                dir.join("c.wav").display()
            )
        );
        // Float WAVs hold any level: only NaN is reported.
        let mut sink = WavSink::create(&dir.join("f.wav"), 1, 8000, WavFormat::Float32).unwrap();
        sink.stage = vec![1.5, f32::NAN];
        sink.write_stage().unwrap();
        assert_eq!((sink.clipped(), sink.not_a_number()), (0, 1));
        drop(sink);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn quantize_rounds_and_clips() {
        assert_eq!(quantize(1.0, 16), 32767);
        assert_eq!(quantize(-1.0, 16), -32768);
        assert_eq!(quantize(0.5, 16), 16384);
        assert_eq!(quantize(2.0, 24), 8_388_607);
    }
}
