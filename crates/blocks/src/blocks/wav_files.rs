//! One WAV file per channel from a multi-channel vector stream (a channelizer's and
//! demodulator's layout): one node writes them all, no deinterleave and no node per channel.

use super::wav::WavFormat;
use sluice_formats::wav::{Beyond4Gib, WavWriter};
use sluice_runtime::{Node, NodeError, Ports, TagPolicy, Work, WorkIo};
use std::path::{Path, PathBuf};

/// Frames written per call at most.
const CHUNK: usize = 4096;

/// Frames gathered into per-channel runs before they are handed to the writers: the runs of
/// all channels (256 × 333 floats for the AMPS receiver, 340 KB) stay in L2 until written.
const SEGMENT: usize = 256;

/// Frames transposed at a time: their rows stay in L1 while each channel's 16 values (one
/// cache line of its run) are picked out of them.
const TILE: usize = 16;

/// The sink; see the module docs.
#[derive(Debug)]
pub struct WavFiles {
    writers: Vec<WavWriter>,
    paths: Vec<PathBuf>,
    /// One segment of every channel, channel after channel (`SEGMENT` floats each).
    column: Vec<f32>,
    warnings: Vec<String>,
}

/// The file of `label` under `pattern`: its `{}` replaced by the label, zero-padded to three
/// digits (`amps_ch{}.wav`, 7 → `amps_ch007.wav`).
pub fn channel_path(pattern: &str, label: u64) -> PathBuf {
    PathBuf::from(sluice_graph::pattern_file(pattern, label))
}

impl WavFiles {
    /// One mono file per label (in vector order), named by [`channel_path`], at
    /// `sample_rate` Hz in `format`. A pattern without `{}` is refused (every file would
    /// have the same name).
    pub fn create(
        pattern: &str,
        labels: &[u64],
        sample_rate: u32,
        format: WavFormat,
    ) -> Result<Self, NodeError> {
        if !pattern.contains("{}") {
            return Err(NodeError::msg(format!(
                "path pattern '{pattern}' has no '{{}}' for the channel label"
            )));
        }
        if labels.is_empty() {
            return Err(NodeError::msg("no channels to write (labels is empty)"));
        }
        let paths: Vec<PathBuf> = labels.iter().map(|&l| channel_path(pattern, l)).collect();
        let writers = paths
            .iter()
            .map(|p| {
                WavWriter::create(Path::new(p), 1, Some(sample_rate), format.encoding())
                    .map_err(NodeError::from_error)
            })
            .collect::<Result<_, _>>()?;
        Ok(WavFiles {
            writers,
            paths,
            column: Vec::with_capacity(SEGMENT * labels.len()),
            warnings: Vec::new(),
        })
    }

    /// The same sink with `beyond` for recordings past 4 GiB (RF64 unless told otherwise).
    pub fn beyond_4gib(mut self, beyond: Beyond4Gib) -> Self {
        self.writers = self
            .writers
            .into_iter()
            .map(|w| w.beyond_4gib(beyond))
            .collect();
        self
    }

    /// The files written first, in vector order (a split recording goes on in
    /// [`sluice_formats::wav::split_path`]s of these).
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }
}

impl Node for WavFiles {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        ports.add_input_vectors::<f32>("in", self.writers.len(), 0);
        ports
    }

    fn warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let k = self.writers.len();
        let input = io.inputs.get::<f32>(0)?;
        let Some(x) = input.window(k)? else {
            return Ok(Work::NeedInput { port: 0, items: k });
        };
        let frames = (x.len() / k).min(CHUNK);
        if frames == 0 {
            for w in &mut self.writers {
                w.finish().map_err(NodeError::from_error)?;
                self.warnings.extend(w.warning());
            }
            return Ok(Work::Done);
        }
        // A strided gather per channel over the whole window touched one cache line per
        // sample (4096 × 333 lines per call, from beyond L2); tiles keep it in cache.
        for rows in x[..frames * k].chunks(SEGMENT * k) {
            let n = rows.len() / k;
            self.column.resize(n * k, 0.0);
            transpose(rows, k, &mut self.column);
            for (w, run) in self.writers.iter_mut().zip(self.column.chunks_exact(n)) {
                w.write(run).map_err(NodeError::from_error)?;
            }
        }
        input.consume(frames * k);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

/// `rows` (frames of `k` channels) channel after channel into `columns`: channel `c`'s
/// samples at `columns[c·n..(c + 1)·n]`, `n` the number of frames; in tiles of [`TILE`] frames.
fn transpose(rows: &[f32], k: usize, columns: &mut [f32]) {
    let n = rows.len() / k;
    for t0 in (0..n).step_by(TILE) {
        let tile = &rows[t0 * k..(t0 + TILE).min(n) * k];
        for (c, run) in columns.chunks_exact_mut(n).enumerate() {
            for (y, frame) in run[t0..].iter_mut().zip(tile.chunks_exact(k)) {
                *y = frame[c];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::VectorSource;
    use sluice_formats::wav::WavReader;
    use sluice_runtime::{Graph, Rated, RunOptions};

    #[test]
    fn transpose_puts_each_channel_in_one_run() {
        for (k, n) in [(1, 5), (3, 17), (333, 40), (7, 256)] {
            let rows: Vec<f32> = (0..n * k).map(|i| i as f32).collect();
            let mut columns = vec![f32::NAN; n * k];
            transpose(&rows, k, &mut columns);
            for c in 0..k {
                for t in 0..n {
                    assert_eq!(
                        columns[c * n + t],
                        rows[t * k + c],
                        "k {k} channel {c} frame {t}"
                    );
                }
            }
        }
    }

    #[test]
    fn each_channel_lands_in_its_own_file() {
        let dir = std::env::temp_dir().join(format!("sluice-wav-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pattern = dir.join("ch{}.wav").display().to_string();
        let x: Vec<f32> = (0..3 * 5000)
            .map(|i| (i % 3) as f32 * 0.25 + 1e-4 * (i / 3) as f32)
            .collect();
        let mut g = Graph::new();
        let src = g.add("src", VectorSource::new(x).max_chunk(700)).unwrap();
        let sink = WavFiles::create(&pattern, &[1, 2, 333], 12_000, WavFormat::Float32).unwrap();
        let paths = sink.paths().to_vec();
        let sink = g.add("files", sink).unwrap();
        let pack = Rated::new(crate::blocks::StreamToVector::<f32>::new(3));
        let pack = g.add("pack", pack).unwrap();
        g.connect(src, "out", pack, "in").unwrap();
        g.connect(pack, "out", sink, "in").unwrap();
        g.run(&RunOptions::default()).unwrap();
        assert!(paths[2].ends_with("ch333.wav") && paths[0].ends_with("ch001.wav"));
        for (c, p) in paths.iter().enumerate() {
            let mut r = WavReader::open(p).unwrap();
            assert_eq!(r.info().sample_rate, 12_000);
            let ch = r.read_channels().unwrap();
            assert_eq!(ch.len(), 1);
            assert_eq!(ch[0].len(), 5000);
            for (n, &v) in ch[0].iter().enumerate() {
                assert_eq!(v, c as f32 * 0.25 + 1e-4 * n as f32);
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(WavFiles::create("no_label.wav", &[1], 8000, WavFormat::Float32).is_err());
    }
}
