//! WAV files, read and written once for the whole project (the graph blocks and `sluice
//! convolve`), as interleaved `f32` at full scale ±1.0.
//!
//! The reader parses the RIFF chunks itself because real files break simpler readers: chunks of
//! odd length are followed by a pad byte (and some writers forget it), streaming writers leave
//! the RIFF and data sizes at 0xFFFFFFFF ("until the end of the file"), RF64 files keep 64-bit
//! sizes in a `ds64` chunk, and 64-bit float data exists. It reads 8-bit (unsigned), 16/24/32-bit
//! integer and 32/64-bit float PCM, plain or in the extensible format.
//!
//! The writer ([`WavWriter`], in `wav/writer.rs`) writes beside the destination and moves the
//! file onto it only when it is finished ([`crate::output_file::PartialFile`]), counts what
//! quantisation changed (samples clipped to full scale, NaN), and never loses a recording to its
//! size: past 4 GiB the file becomes RF64, or the next of a series of plain WAV files.

mod writer;

pub use writer::{split_path, Beyond4Gib, WavWriter, MAX_WAV_DATA_BYTES};

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// What is wrong with a WAV file; every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum WavError {
    /// The file could not be opened or read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a WAV file, or its header is damaged.
    #[error("{path}: not a valid WAV file: {what}")]
    NotWav {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// A WAV file in an encoding this reader does not decode.
    #[error("{path}: {what} is not supported (use 8/16/24/32-bit integer or 32/64-bit float PCM)")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// The encoding, in words.
        what: String,
    },
    /// The data ends before the header says it does.
    #[error("{path}: truncated WAV file: the header announces {announced} frames but the data ends after {got}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Frames the header announces.
        announced: u64,
        /// Frames actually there.
        got: u64,
    },
    /// Writing failed, or the stream is longer than a WAV file can describe.
    #[error("{path}: {what}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        what: String,
    },
}

/// How samples are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Integer PCM of 8 (unsigned), 16, 24 or 32 bits.
    Int(u16),
    /// IEEE float of 32 or 64 bits.
    Float(u16),
}

impl Encoding {
    /// Bytes per sample.
    pub fn bytes(self) -> usize {
        match self {
            Encoding::Int(b) | Encoding::Float(b) => usize::from(b / 8),
        }
    }
}

/// A WAV file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WavInfo {
    /// Channels (interleaved in the file).
    pub channels: usize,
    /// Frames per second.
    pub sample_rate: u32,
    /// Sample encoding.
    pub encoding: Encoding,
    /// Frames the header announces; `None` for a streaming header ("until the end").
    pub frames: Option<u64>,
}

/// Reads a WAV file's samples as interleaved `f32`.
pub struct WavReader {
    path: PathBuf,
    file: BufReader<File>,
    info: WavInfo,
    /// Data bytes left to read (`u64::MAX`: until the end of the file).
    left: u64,
    frames_read: u64,
    raw: Vec<u8>,
}

impl std::fmt::Debug for WavReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WavReader")
            .field("path", &self.path)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// The most bytes one [`WavReader::read_frames`] call reads (and holds) at once.
pub const MAX_READ_BYTES: usize = 4 << 20;

/// A streaming writer's placeholder for sizes it did not know.
const UNKNOWN_SIZE: u32 = u32::MAX;

fn le16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

/// Whether `id` looks like a chunk id: four printable ASCII characters.
fn is_chunk_id(id: &[u8]) -> bool {
    id.len() == 4 && id.iter().all(|&c| (0x20..0x7f).contains(&c))
}

impl WavReader {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path) -> Result<Self, WavError> {
        let io = |source| WavError::Io {
            path: path.to_path_buf(),
            source,
        };
        let not_wav = |what: &str| WavError::NotWav {
            path: path.to_path_buf(),
            what: what.to_string(),
        };
        let mut file = BufReader::new(File::open(path).map_err(io)?);
        let file_len = file.get_ref().metadata().map_err(io)?.len();
        let mut head = [0u8; 12];
        file.read_exact(&mut head)
            .map_err(|_| not_wav("shorter than a RIFF header"))?;
        let rf64 = match &head[0..4] {
            b"RIFF" => false,
            b"RF64" => true,
            _ => return Err(not_wav("no RIFF tag at the start")),
        };
        if &head[8..12] != b"WAVE" {
            return Err(not_wav("a RIFF file, but not of type WAVE"));
        }
        let mut format: Option<(usize, u32, Encoding)> = None;
        let mut ds64_data: Option<u64> = None;
        let mut pos = 12u64;
        loop {
            let mut chunk = [0u8; 8];
            file.seek(SeekFrom::Start(pos)).map_err(io)?;
            if file.read_exact(&mut chunk).is_err() {
                return Err(not_wav("no data chunk"));
            }
            // A writer that forgot the pad byte after an odd-sized chunk: the id is one back.
            if !is_chunk_id(&chunk[0..4]) && pos > 12 {
                let mut back = [0u8; 8];
                file.seek(SeekFrom::Start(pos - 1)).map_err(io)?;
                file.read_exact(&mut back).map_err(io)?;
                if is_chunk_id(&back[0..4]) {
                    pos -= 1;
                    chunk = back;
                }
            }
            let id = &chunk[0..4];
            let size = le32(&chunk[4..8]);
            let body = pos + 8;
            match id {
                b"fmt " => {
                    let mut fmt = vec![0u8; (size as usize).min(64)];
                    file.read_exact(&mut fmt)
                        .map_err(|_| not_wav("the fmt chunk is cut short"))?;
                    format = Some(Self::parse_format(&fmt, path)?);
                }
                b"ds64" if rf64 => {
                    let mut ds = [0u8; 24];
                    file.read_exact(&mut ds)
                        .map_err(|_| not_wav("the ds64 chunk is cut short"))?;
                    ds64_data = Some(le64(&ds[8..16]));
                }
                b"data" => {
                    let (channels, sample_rate, encoding) = format
                        .ok_or_else(|| not_wav("the data chunk comes before the fmt chunk"))?;
                    let in_file = file_len.saturating_sub(body);
                    let declared = match (rf64, size) {
                        (true, UNKNOWN_SIZE) => ds64_data,
                        (_, UNKNOWN_SIZE) => None,
                        _ => Some(u64::from(size)),
                    };
                    // A streaming writer may also have left 0 behind.
                    let declared = declared.filter(|&d| d > 0 || in_file == 0);
                    let frame_bytes = (channels * encoding.bytes()) as u64;
                    file.seek(SeekFrom::Start(body)).map_err(io)?;
                    return Ok(WavReader {
                        path: path.to_path_buf(),
                        file,
                        info: WavInfo {
                            channels,
                            sample_rate,
                            encoding,
                            frames: declared.map(|d| d / frame_bytes),
                        },
                        left: declared.unwrap_or(u64::MAX),
                        frames_read: 0,
                        raw: Vec::new(),
                    });
                }
                _ => {}
            }
            // Chunks are padded to an even length.
            pos = body + u64::from(size) + u64::from(size & 1);
            if pos >= file_len {
                return Err(not_wav("no data chunk"));
            }
        }
    }

    /// `fmt ` chunk → (channels, rate, encoding).
    fn parse_format(fmt: &[u8], path: &Path) -> Result<(usize, u32, Encoding), WavError> {
        let not_wav = |what: &str| WavError::NotWav {
            path: path.to_path_buf(),
            what: what.to_string(),
        };
        if fmt.len() < 16 {
            return Err(not_wav("the fmt chunk is shorter than 16 bytes"));
        }
        let mut tag = le16(&fmt[0..2]);
        let channels = usize::from(le16(&fmt[2..4]));
        let sample_rate = le32(&fmt[4..8]);
        let bits = le16(&fmt[14..16]);
        if tag == 0xFFFE {
            if fmt.len() < 26 {
                return Err(not_wav("the extensible fmt chunk is cut short"));
            }
            // The sub-format GUID starts with the plain format tag.
            tag = le16(&fmt[24..26]);
        }
        if channels == 0 {
            return Err(not_wav("the header declares 0 channels"));
        }
        if sample_rate == 0 {
            return Err(not_wav("the header declares a sample rate of 0"));
        }
        let encoding = match (tag, bits) {
            (1, 8 | 16 | 24 | 32) => Encoding::Int(bits),
            (3, 32 | 64) => Encoding::Float(bits),
            (1, b) => {
                return Err(WavError::Unsupported {
                    path: path.to_path_buf(),
                    what: format!("{b}-bit integer PCM"),
                })
            }
            (3, b) => {
                return Err(WavError::Unsupported {
                    path: path.to_path_buf(),
                    what: format!("{b}-bit float"),
                })
            }
            (t, _) => {
                return Err(WavError::Unsupported {
                    path: path.to_path_buf(),
                    what: format!("WAV format tag {t:#06x} (compressed audio)"),
                })
            }
        };
        Ok((channels, sample_rate, encoding))
    }

    /// The file's format.
    pub fn info(&self) -> WavInfo {
        self.info
    }

    /// Appends up to `frames` interleaved frames to `out`; returns how many (0 at the end).
    /// One call reads at most [`MAX_READ_BYTES`] (and at least one frame): a header's channel
    /// count and sample size set the frame size, so a file cannot make a call allocate more.
    pub fn read_frames(&mut self, out: &mut Vec<f32>, frames: usize) -> Result<usize, WavError> {
        let sample_bytes = self.info.encoding.bytes();
        let frame_bytes = (self.info.channels * sample_bytes) as u64;
        let frames = frames.min((MAX_READ_BYTES as u64 / frame_bytes).max(1) as usize);
        let want = (frames as u64 * frame_bytes).min(self.left / frame_bytes * frame_bytes);
        self.raw.resize(want as usize, 0);
        let mut got = 0;
        while got < self.raw.len() {
            match self.file.read(&mut self.raw[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(WavError::Io {
                        path: self.path.clone(),
                        source,
                    })
                }
            }
        }
        // Whole frames only; a partial last frame at the end of the file is dropped.
        let whole = got as u64 / frame_bytes;
        if whole * frame_bytes < want {
            if let Some(announced) = self.info.frames {
                return Err(WavError::Truncated {
                    path: self.path.clone(),
                    announced,
                    got: self.frames_read + whole,
                });
            }
            self.left = 0;
        } else if self.left != u64::MAX {
            self.left -= want;
        }
        let bytes = &self.raw[..(whole * frame_bytes) as usize];
        decode(bytes, self.info.encoding, out);
        self.frames_read += whole;
        Ok(whole as usize)
    }

    /// The whole file, one vector per channel.
    pub fn read_channels(&mut self) -> Result<Vec<Vec<f32>>, WavError> {
        let channels = self.info.channels;
        let mut interleaved = Vec::new();
        while self.read_frames(&mut interleaved, 1 << 16)? > 0 {}
        let frames = interleaved.len() / channels;
        Ok((0..channels)
            .map(|c| (0..frames).map(|f| interleaved[f * channels + c]).collect())
            .collect())
    }
}

/// Decodes little-endian samples to `f32` at full scale ±1.0.
fn decode(bytes: &[u8], encoding: Encoding, out: &mut Vec<f32>) {
    match encoding {
        Encoding::Int(8) => out.extend(bytes.iter().map(|&b| (f32::from(b) - 128.0) / 128.0)),
        Encoding::Int(16) => out.extend(
            bytes
                .chunks_exact(2)
                .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0),
        ),
        Encoding::Int(24) => out.extend(
            bytes
                .chunks_exact(3)
                .map(|b| (i32::from_le_bytes([0, b[0], b[1], b[2]]) >> 8) as f32 / 8_388_608.0),
        ),
        Encoding::Int(_) => out.extend(bytes.chunks_exact(4).map(|b| {
            (f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])) / 2_147_483_648.0) as f32
        })),
        Encoding::Float(32) => out.extend(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        ),
        Encoding::Float(_) => out.extend(
            bytes
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")) as f32),
        ),
    }
}

/// `x` (full scale ±1.0) as a `bits`-bit integer, rounded and clipped; and whether it clipped.
/// NaN becomes 0.
pub fn quantize(x: f32, bits: u32) -> (i32, bool) {
    let full = (1i64 << (bits - 1)) as f64;
    let v = (f64::from(x) * full).round();
    let q = v.clamp(-full, full - 1.0);
    (q as i32, !x.is_nan() && q != v)
}

/// [`quantize`] to 16 bits of every sample of `samples`, as little-endian bytes into `out`
/// (two per sample); returns how many clipped. The same results as [`quantize`], computed in
/// `f32` so the loop vectorises: `x · 32768` is exact in `f32` (a power-of-two scale), and
/// below 2²³ in magnitude its rounding half away from zero is its truncation plus one step
/// where the exact remainder reaches ±0.5. A block holding a sample beyond that range or a NaN
/// goes through [`quantize`] itself. This is the WAV sinks' hot loop (the AMPS receiver writes
/// 4 M samples per second of band).
pub fn quantize_i16(samples: &[f32], out: &mut [u8]) -> u64 {
    assert_eq!(
        out.len(),
        2 * samples.len(),
        "quantize_i16: two bytes per sample"
    );
    const BLOCK: usize = 64;
    let mut clipped = 0u64;
    for (xs, bytes) in samples.chunks(BLOCK).zip(out.chunks_mut(2 * BLOCK)) {
        let mut wild = false;
        let mut n = 0u32;
        for (&x, b) in xs.iter().zip(bytes.chunks_exact_mut(2)) {
            let v = x * 32768.0;
            // Beyond 2²³ or NaN (whose comparisons are all false).
            wild |= v.abs() >= 8_388_608.0 || v.is_nan();
            let t = v as i32;
            let d = v - t as f32;
            // Wrapping: a wild sample's `t` saturates, and its block is redone below.
            let r = t
                .wrapping_add(i32::from(d >= 0.5))
                .wrapping_sub(i32::from(d <= -0.5));
            let q = r.clamp(-32768, 32767);
            n += u32::from(q != r);
            b.copy_from_slice(&(q as i16).to_le_bytes());
        }
        if wild {
            n = 0;
            for (&x, b) in xs.iter().zip(bytes.chunks_exact_mut(2)) {
                let (q, c) = quantize(x, 16);
                n += u32::from(c);
                b.copy_from_slice(&(q as i16).to_le_bytes());
            }
        }
        clipped += u64::from(n);
    }
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("sluice-wavio-{}-{name}", std::process::id()))
    }

    /// A WAV file built by hand: `chunks` after the RIFF header, sizes as given.
    fn riff(riff_size: Option<u32>, chunks: &[(&[u8; 4], u32, Vec<u8>, bool)]) -> Vec<u8> {
        let mut body = b"WAVE".to_vec();
        for (id, size, data, pad) in chunks {
            body.extend_from_slice(*id);
            body.extend_from_slice(&size.to_le_bytes());
            body.extend_from_slice(data);
            if *pad && data.len() % 2 == 1 {
                body.push(0);
            }
        }
        let mut file = b"RIFF".to_vec();
        file.extend_from_slice(&riff_size.unwrap_or(body.len() as u32).to_le_bytes());
        file.extend(body);
        file
    }

    fn fmt(tag: u16, channels: u16, rate: u32, bits: u16) -> Vec<u8> {
        let block = channels * bits / 8;
        let mut f = Vec::new();
        f.extend_from_slice(&tag.to_le_bytes());
        f.extend_from_slice(&channels.to_le_bytes());
        f.extend_from_slice(&rate.to_le_bytes());
        f.extend_from_slice(&(rate * u32::from(block)).to_le_bytes());
        f.extend_from_slice(&block.to_le_bytes());
        f.extend_from_slice(&bits.to_le_bytes());
        f
    }

    fn i16_data(samples: &[i16]) -> Vec<u8> {
        samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    fn read_all(bytes: &[u8], name: &str) -> Result<(WavInfo, Vec<Vec<f32>>), WavError> {
        let path = temp(name);
        std::fs::write(&path, bytes).unwrap();
        let result = WavReader::open(&path).and_then(|mut r| Ok((r.info(), r.read_channels()?)));
        std::fs::remove_file(&path).unwrap();
        result
    }

    #[test]
    fn an_odd_list_chunk_is_skipped_with_or_without_its_pad_byte() {
        let data = i16_data(&[16384, -16384, 8192, 0]);
        for pad in [true, false] {
            let bytes = riff(
                None,
                &[
                    (b"fmt ", 16, fmt(1, 2, 8000, 16), true),
                    (b"LIST", 5, b"INFOx".to_vec(), pad),
                    (b"data", data.len() as u32, data.clone(), true),
                ],
            );
            let (info, ch) = read_all(&bytes, &format!("list-{pad}")).unwrap();
            assert_eq!(
                (info.channels, info.sample_rate, info.frames),
                (2, 8000, Some(2))
            );
            assert_eq!(ch, vec![vec![0.5, 0.25], vec![-0.5, 0.0]], "pad {pad}");
        }
    }

    #[test]
    fn streaming_headers_with_unknown_sizes_read_to_the_end() {
        let data = i16_data(&[100, 200, 300]);
        let bytes = riff(
            Some(u32::MAX),
            &[
                (b"fmt ", 16, fmt(1, 1, 48000, 16), true),
                (b"data", u32::MAX, data, true),
            ],
        );
        let (info, ch) = read_all(&bytes, "stream").unwrap();
        assert_eq!(info.frames, None);
        assert_eq!(ch[0].len(), 3);
        assert!((ch[0][2] - 300.0 / 32768.0).abs() < 1e-9);
    }

    #[test]
    fn float64_and_extensible_and_8_and_24_bit_data_decode() {
        let f64_data: Vec<u8> = [0.25f64, -1.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let bytes = riff(
            None,
            &[
                (b"fmt ", 16, fmt(3, 1, 96000, 64), true),
                (b"data", 16, f64_data, true),
            ],
        );
        assert_eq!(read_all(&bytes, "f64").unwrap().1, vec![vec![0.25, -1.0]]);

        // Extensible: cbSize 22, valid bits, channel mask, then the PCM sub-format GUID.
        let mut ext = fmt(0xFFFE, 1, 44100, 24);
        ext.extend_from_slice(&22u16.to_le_bytes());
        ext.extend_from_slice(&24u16.to_le_bytes());
        ext.extend_from_slice(&4u32.to_le_bytes());
        ext.extend_from_slice(&[
            1, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71,
        ]);
        let data = vec![0x00, 0x00, 0x40, 0x00, 0x00, 0xC0]; // 0.5, -0.5 in 24 bits
        let bytes = riff(None, &[(b"fmt ", 40, ext, true), (b"data", 6, data, true)]);
        assert_eq!(read_all(&bytes, "ext24").unwrap().1, vec![vec![0.5, -0.5]]);

        let bytes = riff(
            None,
            &[
                (b"fmt ", 16, fmt(1, 1, 8000, 8), true),
                (b"data", 3, vec![128, 192, 0], true),
            ],
        );
        assert_eq!(
            read_all(&bytes, "u8").unwrap().1,
            vec![vec![0.0, 0.5, -1.0]]
        );
    }

    #[test]
    fn damaged_files_are_errors_naming_the_file_and_the_fault() {
        let short = riff(
            None,
            &[
                (b"fmt ", 16, fmt(1, 1, 8000, 16), true),
                (b"data", 100, i16_data(&[1, 2]), true),
            ],
        );
        let err = read_all(&short, "short").unwrap_err().to_string();
        assert!(
            err.ends_with(
                "truncated WAV file: the header announces 50 frames but the data ends after 2"
            ),
            "{err}"
        );
        let err = read_all(b"this is not audio", "text")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sluice-wavio-")
                && err.ends_with("not a valid WAV file: no RIFF tag at the start"),
            "{err}"
        );
        let alaw = riff(
            None,
            &[
                (b"fmt ", 16, fmt(6, 1, 8000, 8), true),
                (b"data", 2, vec![0, 0], true),
            ],
        );
        let err = read_all(&alaw, "alaw").unwrap_err().to_string();
        assert!(
            err.contains("WAV format tag 0x0006 (compressed audio) is not supported"),
            "{err}"
        );
        let no_data = riff(None, &[(b"fmt ", 16, fmt(1, 1, 8000, 16), true)]);
        let err = read_all(&no_data, "nodata").unwrap_err().to_string();
        assert!(err.ends_with("no data chunk"), "{err}");
    }

    #[test]
    fn written_files_read_back_and_clipping_is_counted() {
        for (encoding, tolerance) in [
            (Encoding::Float(32), 0.0),
            (Encoding::Int(16), 1.0 / 32768.0),
            (Encoding::Int(24), 1.0 / 8_388_608.0),
            (Encoding::Int(32), 1e-7),
        ] {
            let path = temp(&format!("rw-{encoding:?}"));
            let samples: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.01).sin() * 0.9).collect();
            let mut w = WavWriter::create(&path, 2, Some(44100), encoding).unwrap();
            w.write(&samples).unwrap();
            assert!(
                !path.exists(),
                "written beside the destination until finished"
            );
            w.finish().unwrap();
            let mut r = WavReader::open(&path).unwrap();
            assert_eq!(r.info().encoding, encoding);
            let mut back = Vec::new();
            while r.read_frames(&mut back, 100).unwrap() > 0 {}
            let err = back
                .iter()
                .zip(&samples)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(
                back.len() == 1000 && err <= tolerance,
                "{encoding:?}: {err}"
            );
            std::fs::remove_file(&path).unwrap();
        }
        let path = temp("clip");
        let mut w = WavWriter::create(&path, 1, Some(8000), Encoding::Int(16)).unwrap();
        w.write(&[0.5, 1.0, 1.5, -2.0, f32::NAN, -1.0]).unwrap();
        assert_eq!((w.clipped(), w.not_a_number()), (3, 1));
        assert!(w.warning().unwrap().ends_with(
            "3 samples were beyond full scale (±1.0) and clipped; lower the level or write 32-bit float; 1 samples were NaN, written as 0"
        ));
        drop(w);
        assert!(!path.exists(), "an unfinished WAV leaves nothing behind");
    }

    #[test]
    fn quantize_rounds_and_clips() {
        assert_eq!(quantize(1.0, 16), (32767, true));
        assert_eq!(quantize(-1.0, 16), (-32768, false));
        assert_eq!(quantize(0.5, 16), (16384, false));
        assert_eq!(quantize(2.0, 24), (8_388_607, true));
        assert_eq!(quantize(f32::NAN, 16), (0, false));
    }

    #[test]
    fn quantize_i16_is_quantize_for_every_kind_of_sample() {
        let step = 1.0f32 / 32768.0;
        let mut xs: Vec<f32> = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            2.0,
            -2.0,
            1e30,
            -1e30,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            1e-45,
            255.9,
            -255.9,
            32767.5 * step,
            -32768.5 * step,
            32766.5 * step,
            0.5 * step,
            -0.5 * step,
            1.5 * step,
            -1.5 * step,
            0.49999997 * step,
            -0.49999997 * step,
        ];
        // Every tie and its neighbours across the range, then a spread of values.
        for i in -32770i32..32770 {
            let v = (i as f32 + 0.5) * step;
            xs.extend([
                v,
                f32::from_bits(v.to_bits() + 1),
                f32::from_bits(v.to_bits() - 1),
            ]);
        }
        for i in 0..20_000 {
            xs.push(((i as f32) * 0.618_034).sin() * 1.2);
        }
        let want: Vec<(i32, bool)> = xs.iter().map(|&x| quantize(x, 16)).collect();
        // Blocks with and without a wild sample: the whole list, and every sample alone.
        let mut out = vec![0u8; 2 * xs.len()];
        let clipped = quantize_i16(&xs, &mut out);
        assert_eq!(clipped, want.iter().filter(|w| w.1).count() as u64);
        for (i, (w, b)) in want.iter().zip(out.chunks_exact(2)).enumerate() {
            assert_eq!(
                i16::from_le_bytes([b[0], b[1]]),
                w.0 as i16,
                "sample {i}: {}",
                xs[i]
            );
            let mut one = [0u8; 2];
            let c = quantize_i16(&xs[i..=i], &mut one);
            assert_eq!(
                (i16::from_le_bytes(one), c == 1),
                (w.0 as i16, w.1),
                "{}",
                xs[i]
            );
        }
    }
}
