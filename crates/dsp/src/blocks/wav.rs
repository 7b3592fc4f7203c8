//! WAV source and sink: one `f32` port per channel (`out0`, `out1`, … / `in0`, `in1`, …), full
//! scale ±1.0. Reading and writing are [`crate::wav`]'s: 8/16/24/32-bit integer and 32/64-bit
//! float in, 16/24/32-bit integer and 32-bit float out.

use crate::wav::{Encoding, WavError, WavReader, WavWriter};
use sluice_runtime::{Node, NodeError, Ports, TagPolicy, Work, WorkIo};
use std::path::Path;

/// Frames decoded or encoded per work call.
const CHUNK: usize = 4096;

fn node_error(e: WavError) -> NodeError {
    NodeError::msg(e.to_string())
}

/// Reads a WAV file and streams each channel on its own output.
#[derive(Debug)]
pub struct WavSource {
    reader: WavReader,
    stage: Vec<f32>,
}

impl WavSource {
    /// Opens `path`; errors name the file and say what is wrong with it.
    pub fn open(path: &Path) -> Result<Self, NodeError> {
        let reader = WavReader::open(path).map_err(node_error)?;
        let channels = reader.info().channels;
        Ok(WavSource {
            reader,
            stage: Vec::with_capacity(CHUNK * channels),
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

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let channels = self.channels();
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
    fn encoding(self) -> Encoding {
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
#[derive(Debug)]
pub struct WavSink {
    writer: WavWriter,
    channels: usize,
    stage: Vec<f32>,
}

impl WavSink {
    /// Creates `path` for `channels` channels at `sample_rate` Hz in `format`.
    pub fn create(
        path: &Path,
        channels: usize,
        sample_rate: u32,
        format: WavFormat,
    ) -> Result<Self, NodeError> {
        let writer = WavWriter::create(path, channels, sample_rate, format.encoding())
            .map_err(node_error)?;
        Ok(WavSink {
            writer,
            channels,
            stage: Vec::with_capacity(CHUNK * channels),
        })
    }
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
            self.writer.finish().map_err(node_error)?;
            if let Some(warning) = self.writer.warning() {
                eprintln!("sluice: warning: wav_sink {warning}");
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
        self.writer.write(&self.stage).map_err(node_error)?;
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
        self.writer = self.writer.with_data_limit(bytes);
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
        assert!(err.contains("not a valid WAV file: no RIFF tag"), "{err}");
        assert!(err.contains(&path.display().to_string()));
        std::fs::remove_file(&path).unwrap();
    }
}
