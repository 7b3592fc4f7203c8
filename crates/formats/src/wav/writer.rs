//! The WAV writer: RIFF/WAVE while the file fits in 4 GiB, RF64 (EBU Tech 3306) beyond, or a
//! new file at each 4 GiB if asked for plain WAV ([`Beyond4Gib`]). A recording is never lost to
//! its size.
//!
//! The header is laid out as EBU Tech 3306 recommends, so one file can become RF64 when it is
//! finished without moving its samples:
//!
//! ```text
//! RIFF <size> WAVE | JUNK <28 zero bytes> | fmt <16 or 40 bytes> | [fact <4>] | data <size> ...
//! ```
//!
//! A file that fits keeps its `JUNK` chunk (which every reader skips) and is a plain WAV; one
//! that does not turns `RIFF` into `RF64` and `JUNK` into the `ds64` chunk holding the 64-bit
//! sizes, with the 32-bit sizes at 0xFFFFFFFF. While the file is written its sizes are
//! 0xFFFFFFFF (a streaming header: "until the end of the file"), so the partial file of a
//! process that was killed still reads. Integer formats of more than 16 bits or 2 channels use
//! `WAVE_FORMAT_EXTENSIBLE`; float uses `WAVE_FORMAT_IEEE_FLOAT` with the extended fmt chunk
//! (an 18-byte one whose `cbSize` is 0) and a `fact` chunk, as Microsoft's format notes ask for
//! every non-PCM format. sox 14.4 warns about a float fmt chunk without `cbSize`, and also about
//! an extensible float one (it then checks the sub-format as if it had no extension), so float
//! is written the one way it reads silently.

use super::{quantize, Encoding, WavError};
use crate::output_file::PartialFile;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// What a writer does when the samples outgrow what a 32-bit WAV header describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Beyond4Gib {
    /// The file becomes RF64 when it is finished (sox, libsndfile, ffmpeg and most DAWs read it).
    #[default]
    Rf64,
    /// Plain WAV files only: the file is finished at the limit and the stream goes on in the
    /// next one (`rec.wav`, `rec.2.wav`, `rec.3.wav`, …; see [`split_path`]).
    Split,
}

/// Bytes of the header before the samples' `data` chunk body, at most (RIFF 12, JUNK/ds64 36,
/// extensible fmt 48, fact 12, data header 8; float's fmt is 26 bytes, extensible has no fact).
const MAX_HEADER: u64 = 12 + 36 + 48 + 12 + 8;

/// The most sample bytes a plain WAV file holds: its 32-bit RIFF size counts the whole file
/// after the first 8 bytes, header and pad byte included.
pub const MAX_WAV_DATA_BYTES: u64 = u32::MAX as u64 - MAX_HEADER;

/// The body of the `ds64` chunk: RIFF size, data size, sample count (64 bits each) and an
/// empty table (a 32-bit count).
const DS64_BODY: u32 = 28;

/// The streaming placeholder for sizes not yet known.
const UNKNOWN_SIZE: u32 = u32::MAX;

/// The `n`-th file (from 2) of a split recording: `rec.wav` → `rec.2.wav`.
pub fn split_path(first: &Path, n: u32) -> PathBuf {
    let stem = first
        .file_stem()
        .map_or_else(|| "output".into(), |s| s.to_string_lossy().into_owned());
    let name = match first.extension() {
        Some(ext) => format!("{stem}.{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{n}"),
    };
    first.with_file_name(name)
}

/// Writes interleaved `f32` frames as a WAV file, moved onto its path when finished.
pub struct WavWriter {
    path: PathBuf,
    channels: u16,
    sample_rate: u32,
    encoding: Encoding,
    beyond: Beyond4Gib,
    /// The open file and its temporary name, once the header is written (the sample rate is
    /// known); `partial` alone before.
    file: Option<BufWriter<File>>,
    partial: Option<PartialFile>,
    /// Where the `data` chunk's body starts, and where the `fact` chunk's is (float only).
    data_start: u64,
    fact_at: Option<u64>,
    data_bytes: u64,
    /// Plain WAV up to this many data bytes (smaller only in tests); RF64 or a new file beyond.
    data_limit: u64,
    /// Files of a split recording already finished, and the number of the current one.
    finished: Vec<PathBuf>,
    part: u32,
    finished_all: bool,
    bytes: Vec<u8>,
    clipped: u64,
    not_a_number: u64,
    stale: Vec<String>,
}

impl std::fmt::Debug for WavWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WavWriter")
            .field("path", &self.path)
            .field("channels", &self.channels)
            .field("encoding", &self.encoding)
            .field("data_bytes", &self.data_bytes)
            .finish_non_exhaustive()
    }
}

impl WavWriter {
    /// Starts `path` (written beside it until [`WavWriter::finish`]) with `channels` channels
    /// at `sample_rate` in `encoding` (8/16/24/32-bit integer or 32-bit float). A `sample_rate`
    /// of `None` is set later with [`WavWriter::set_sample_rate`], before the first write (a
    /// sink learns it from the stream's metadata); the file is created now either way, so a
    /// path that cannot be written is an error here.
    pub fn create(
        path: &Path,
        channels: usize,
        sample_rate: Option<u32>,
        encoding: Encoding,
    ) -> Result<Self, WavError> {
        let write_err = |what: String| WavError::Write {
            path: path.to_path_buf(),
            what,
        };
        let channels = u16::try_from(channels)
            .ok()
            .filter(|&c| c > 0)
            .ok_or_else(|| {
                write_err(format!(
                    "a WAV file needs 1 to 65535 channels, not {channels}"
                ))
            })?;
        if sample_rate == Some(0) {
            return Err(write_err(
                "a WAV file needs a sample rate of at least 1 Hz".into(),
            ));
        }
        if !matches!(
            encoding,
            Encoding::Int(8 | 16 | 24 | 32) | Encoding::Float(32)
        ) {
            return Err(write_err(format!("cannot write {encoding:?} samples")));
        }
        let mut w = WavWriter {
            path: path.to_path_buf(),
            channels,
            sample_rate: sample_rate.unwrap_or(0),
            encoding,
            beyond: Beyond4Gib::Rf64,
            file: None,
            partial: None,
            data_start: 0,
            fact_at: None,
            data_bytes: 0,
            data_limit: MAX_WAV_DATA_BYTES,
            finished: Vec::new(),
            part: 1,
            finished_all: false,
            bytes: Vec::new(),
            clipped: 0,
            not_a_number: 0,
            stale: Vec::new(),
        };
        w.open_part()?;
        Ok(w)
    }

    /// The same writer with `beyond` for recordings past 4 GiB (RF64 unless told otherwise).
    pub fn beyond_4gib(mut self, beyond: Beyond4Gib) -> Self {
        self.beyond = beyond;
        self
    }

    /// The path of the file being written now (the first, or a later part of a split one).
    fn current_path(&self) -> PathBuf {
        match self.part {
            1 => self.path.clone(),
            n => split_path(&self.path, n),
        }
    }

    fn err(&self, what: String) -> WavError {
        WavError::Write {
            path: self.current_path(),
            what,
        }
    }

    /// Creates the temporary file of the current part.
    fn open_part(&mut self) -> Result<(), WavError> {
        let partial = PartialFile::new(&self.current_path());
        self.stale.extend(partial.stale_warning());
        File::create(partial.temporary()).map_err(|e| self.err(format!("cannot create: {e}")))?;
        self.partial = Some(partial);
        self.data_bytes = 0;
        Ok(())
    }

    /// The sample rate, once known.
    pub fn sample_rate(&self) -> Option<u32> {
        (self.sample_rate > 0).then_some(self.sample_rate)
    }

    /// Sets the sample rate; possible until the first samples are written (the header holds it).
    pub fn set_sample_rate(&mut self, hz: u32) -> Result<(), WavError> {
        if self.file.is_some() || self.part > 1 || hz == 0 {
            return Err(self.err(format!(
                "cannot set the sample rate to {hz} Hz after writing began"
            )));
        }
        self.sample_rate = hz;
        Ok(())
    }

    /// Whether the fmt chunk is `WAVE_FORMAT_EXTENSIBLE` (integer PCM beyond 16 bits or 2
    /// channels).
    fn extensible(&self) -> bool {
        match self.encoding {
            Encoding::Float(_) => false,
            Encoding::Int(bits) => bits > 16 || self.channels > 2,
        }
    }

    /// The header with streaming sizes (see the module docs).
    fn header(&self) -> (Vec<u8>, Option<u64>) {
        let bits = (self.encoding.bytes() * 8) as u16;
        let block = self.channels * (bits / 8);
        let mut h = Vec::with_capacity(MAX_HEADER as usize);
        h.extend_from_slice(b"RIFF");
        h.extend_from_slice(&UNKNOWN_SIZE.to_le_bytes());
        h.extend_from_slice(b"WAVE");
        // Room for the ds64 chunk if the file outgrows 4 GiB.
        h.extend_from_slice(b"JUNK");
        h.extend_from_slice(&DS64_BODY.to_le_bytes());
        h.extend_from_slice(&[0; DS64_BODY as usize]);
        let tag: u16 = match self.encoding {
            Encoding::Float(_) => 3,
            Encoding::Int(_) => 1,
        };
        let float = matches!(self.encoding, Encoding::Float(_));
        let fmt_len: u32 = match (self.extensible(), float) {
            (true, _) => 40,
            (false, true) => 18,
            (false, false) => 16,
        };
        h.extend_from_slice(b"fmt ");
        h.extend_from_slice(&fmt_len.to_le_bytes());
        h.extend_from_slice(&(if self.extensible() { 0xFFFE } else { tag }).to_le_bytes());
        h.extend_from_slice(&self.channels.to_le_bytes());
        h.extend_from_slice(&self.sample_rate.to_le_bytes());
        h.extend_from_slice(&(self.sample_rate * u32::from(block)).to_le_bytes());
        h.extend_from_slice(&block.to_le_bytes());
        h.extend_from_slice(&bits.to_le_bytes());
        if self.extensible() {
            h.extend_from_slice(&22u16.to_le_bytes()); // cbSize
            h.extend_from_slice(&bits.to_le_bytes()); // valid bits
            let mask: u32 = match self.channels {
                1 => 0x4, // front centre
                2 => 0x3, // front left, front right
                _ => 0,   // no speaker positions
            };
            h.extend_from_slice(&mask.to_le_bytes());
            // The sub-format GUID: the plain tag, then KSDATAFORMAT_SUBTYPE's fixed tail.
            h.extend_from_slice(&tag.to_le_bytes());
            h.extend_from_slice(&[0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71]);
        } else if float {
            h.extend_from_slice(&0u16.to_le_bytes()); // cbSize: no extension, but present
        }
        let mut fact_at = None;
        if float {
            h.extend_from_slice(b"fact");
            h.extend_from_slice(&4u32.to_le_bytes());
            fact_at = Some(h.len() as u64);
            h.extend_from_slice(&UNKNOWN_SIZE.to_le_bytes());
        }
        h.extend_from_slice(b"data");
        h.extend_from_slice(&UNKNOWN_SIZE.to_le_bytes());
        (h, fact_at)
    }

    /// The open file, writing the header first if it has not been written.
    fn open_file(&mut self) -> Result<(), WavError> {
        if self.file.is_some() {
            return Ok(());
        }
        if self.sample_rate == 0 {
            return Err(self.err("the sample rate is unknown (set it before writing)".into()));
        }
        let partial = self
            .partial
            .as_ref()
            .expect("a part is open until finished");
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(partial.temporary())
            .map_err(|e| self.err(format!("cannot open: {e}")))?;
        let mut file = BufWriter::with_capacity(1 << 16, file);
        let (header, fact_at) = self.header();
        file.write_all(&header)
            .map_err(|e| self.err(format!("cannot write the header: {e}")))?;
        self.data_start = header.len() as u64;
        self.fact_at = fact_at;
        self.file = Some(file);
        Ok(())
    }

    /// Appends interleaved frames (`samples.len()` a multiple of the channel count).
    pub fn write(&mut self, samples: &[f32]) -> Result<(), WavError> {
        if self.finished_all {
            return Ok(());
        }
        self.open_file()?;
        let frame_bytes = self.encoding.bytes() * usize::from(self.channels);
        let mut rest = samples;
        while !rest.is_empty() {
            let mut take = rest.len();
            if self.beyond == Beyond4Gib::Split {
                let room = (self.data_limit - self.data_bytes) as usize / frame_bytes;
                if room == 0 {
                    self.finish_part()?;
                    self.part += 1;
                    self.open_part()?;
                    self.open_file()?;
                    continue;
                }
                take = take.min(room * usize::from(self.channels));
            }
            self.encode(&rest[..take]);
            let file = self.file.as_mut().expect("opened above");
            if let Err(e) = file.write_all(&self.bytes) {
                return Err(self.err(format!("cannot write: {e}")));
            }
            self.data_bytes += self.bytes.len() as u64;
            rest = &rest[take..];
        }
        Ok(())
    }

    /// `samples` as little-endian bytes in the file's encoding, into `self.bytes`; counts
    /// clipped and NaN samples.
    fn encode(&mut self, samples: &[f32]) {
        self.bytes.clear();
        self.not_a_number += samples.iter().filter(|x| x.is_nan()).count() as u64;
        match self.encoding {
            Encoding::Float(_) => self
                .bytes
                .extend(samples.iter().flat_map(|x| x.to_le_bytes())),
            Encoding::Int(16) => {
                self.bytes.resize(2 * samples.len(), 0);
                self.clipped += super::quantize_i16(samples, &mut self.bytes);
            }
            Encoding::Int(bits) => {
                for &x in samples {
                    let (q, clipped) = quantize(x, u32::from(bits));
                    self.clipped += u64::from(clipped);
                    match bits {
                        8 => self.bytes.push((q + 128) as u8),
                        16 => self.bytes.extend_from_slice(&(q as i16).to_le_bytes()),
                        24 => self.bytes.extend_from_slice(&q.to_le_bytes()[..3]),
                        _ => self.bytes.extend_from_slice(&q.to_le_bytes()),
                    }
                }
            }
        }
    }

    /// Writes the final sizes of the current part and moves it onto its path.
    fn finish_part(&mut self) -> Result<(), WavError> {
        self.open_file()?; // an empty stream still gets a header
        let file = self.file.take().expect("opened above");
        let data = self.data_bytes;
        let pad = data & 1;
        let riff = self.data_start + data + pad - 8;
        let frames = data / (self.encoding.bytes() as u64 * u64::from(self.channels));
        let rf64 = data > self.data_limit || riff > u64::from(u32::MAX);
        let result = (|| -> std::io::Result<()> {
            let mut file = file.into_inner().map_err(|e| e.into_error())?;
            if pad == 1 {
                file.write_all(&[0])?;
            }
            let small = |v: u64| if rf64 { UNKNOWN_SIZE } else { v as u32 };
            file.seek(SeekFrom::Start(0))?;
            file.write_all(if rf64 { b"RF64" } else { b"RIFF" })?;
            file.write_all(&small(riff).to_le_bytes())?;
            if rf64 {
                file.seek(SeekFrom::Start(12))?;
                file.write_all(b"ds64")?;
                file.write_all(&DS64_BODY.to_le_bytes())?;
                file.write_all(&riff.to_le_bytes())?;
                file.write_all(&data.to_le_bytes())?;
                file.write_all(&frames.to_le_bytes())?;
                file.write_all(&0u32.to_le_bytes())?;
            }
            if let Some(at) = self.fact_at {
                file.seek(SeekFrom::Start(at))?;
                file.write_all(&small(frames).to_le_bytes())?;
            }
            file.seek(SeekFrom::Start(self.data_start - 4))?;
            file.write_all(&small(data).to_le_bytes())?;
            file.flush()
        })();
        result.map_err(|e| self.err(format!("cannot finish: {e}")))?;
        let partial = self.partial.take().expect("a part is open until finished");
        partial
            .commit()
            .map_err(|e| self.err(format!("cannot move the finished file into place: {e}")))?;
        self.finished.push(self.current_path());
        Ok(())
    }

    /// Finalises the header and moves the file onto its path.
    pub fn finish(&mut self) -> Result<(), WavError> {
        if self.finished_all {
            return Ok(());
        }
        self.finish_part()?;
        self.finished_all = true;
        Ok(())
    }

    /// The files finished so far: the path given, and for a split recording its later parts.
    pub fn files(&self) -> &[PathBuf] {
        &self.finished
    }

    /// Samples clipped to full scale so far (integer encodings: beyond ±1.0).
    pub fn clipped(&self) -> u64 {
        self.clipped
    }

    /// NaN samples so far (written as 0 in integer encodings, as NaN in float ones).
    pub fn not_a_number(&self) -> u64 {
        self.not_a_number
    }

    /// What went into the file changed or suspicious, or what was found beside it, in words;
    /// `None` if nothing.
    pub fn warning(&self) -> Option<String> {
        let mut parts = self.stale.clone();
        if self.clipped > 0 {
            parts.push(format!(
                "{} samples were beyond full scale (±1.0) and clipped; lower the level or write 32-bit float",
                self.clipped
            ));
        }
        if self.not_a_number > 0 {
            let written = match self.encoding {
                Encoding::Float(_) => "written as NaN",
                Encoding::Int(_) => "written as 0",
            };
            parts.push(format!("{} samples were NaN, {written}", self.not_a_number));
        }
        if self.finished.len() > 1 {
            parts.push(format!(
                "the recording outgrew a plain WAV file and went on in {}",
                self.finished[1..]
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        (!parts.is_empty()).then(|| format!("{}: {}", self.path.display(), parts.join("; ")))
    }

    /// The same writer with a smaller plain-WAV limit, to test RF64 and split files without
    /// writing 4 GiB (here and in the WAV sinks' tests). Rounded down to whole frames.
    #[doc(hidden)]
    pub fn with_data_limit(mut self, bytes: u64) -> Self {
        let frame = self.encoding.bytes() as u64 * u64::from(self.channels);
        self.data_limit = (bytes / frame * frame).max(frame);
        self
    }
}
