//! Offline convolution of WAV files with an impulse response through the partitioned engine of
//! `sluice-conv`: what `sluice convolve IN.wav IR.wav OUT.wav` does, for any front end.
//!
//! The whole input is read into memory (deinterleaved, `f32`), convolved block by block, and the
//! full result (input length + IR length − 1 frames) is written at the end, so that
//! normalisation can see the peak first. The engine's latency is removed: output frame `n` is
//! the convolution at time `n`.
//!
//! Channel layouts (input channels × IR channels):
//! - a 1-channel IR is applied to every input channel;
//! - an IR with as many channels as the input: IR channel `c` on input channel `c`;
//! - a 2-channel input with a 4-channel IR is true stereo: IR channels are LL, LR, RL, RR
//!   (left in → left out, left in → right out, right in → left out, right in → right out);
//! - a 1-channel input with an N-channel IR gives N outputs (mono in, e.g. stereo reverb out).
//!
//! [`convolve_files`] is the whole job, reporting progress through a callback;
//! [`read_wav`], [`convolve`], [`normalize`] and [`write_wav`] are its steps.
//!
//! Error messages name the command-line options of `sluice convolve` (`--mix`, `--resample`,
//! …) that match the fields of [`ConvolveOptions`].

use std::path::{Path, PathBuf};

pub use sluice_conv::Layout;
use sluice_conv::{
    convolve_offline_until, ConvError, ConvolverConfig, LatePolicy, Partitioning, Scheduling,
};
pub use sluice_formats::wav::Encoding;
use sluice_formats::wav::{WavError, WavReader, WavWriter};
use sluice_kernels::resample_ir;

/// What went wrong in an offline convolution; every message names the file or setting.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    /// The wet/dry mix is outside 0..=1.
    #[error("--mix must be between 0 and 1, got {0}")]
    Mix(f32),
    /// The gain is outside -120..=40 dB.
    #[error("--gain takes a level in dB from -120 to 40 (e.g. -12), got {0}")]
    Gain(f64),
    /// The normalisation level is not a finite level at or below 0 dBFS.
    #[error("--normalize takes a peak level in dBFS at or below 0 (e.g. -1), got {0}")]
    Normalize(f64),
    /// The output path is the input's or the impulse response's.
    #[error(
        "{}: the output would overwrite the {role}; choose another output path",
        .output.display()
    )]
    Overwrite {
        /// The output path.
        output: PathBuf,
        /// `input` or `impulse response`.
        role: &'static str,
    },
    /// A WAV file could not be read or written.
    #[error(transparent)]
    Wav(#[from] WavError),
    /// The input has no frames.
    #[error("{}: the input has no samples", .0.display())]
    EmptyInput(PathBuf),
    /// The impulse response has no frames.
    #[error("{}: the impulse response has no samples", .0.display())]
    EmptyIr(PathBuf),
    /// Every sample of the impulse response is 0.
    #[error("{}: the impulse response is silent (every sample is 0)", .0.display())]
    SilentIr(PathBuf),
    /// The impulse response's rate is not the input's, and resampling was not asked for.
    #[error(
        "{} is {input_rate} Hz but the impulse response {} is {ir_rate} Hz; resample one of \
         them (e.g. `sox {} -r {input_rate} ir{}.wav`) or pass --resample",
        .input.display(), .ir.display(), .ir.display(), .input_rate / 1000
    )]
    RateMismatch {
        /// The input file.
        input: PathBuf,
        /// The impulse response file.
        ir: PathBuf,
        /// The input's sample rate, Hz.
        input_rate: u32,
        /// The impulse response's sample rate, Hz.
        ir_rate: u32,
    },
    /// The impulse response is longer than [`EngineOptions::max_ir_len`].
    #[error(
        "{}: the impulse response is {frames} frames ({:.1} s), longer than the limit of \
         {limit} frames (--max-ir-len)",
        .ir.display(), *.frames as f64 / f64::from(*.rate)
    )]
    IrTooLong {
        /// The impulse response file.
        ir: PathBuf,
        /// Its length (after resampling), frames.
        frames: usize,
        /// Its rate (after resampling), Hz.
        rate: u32,
        /// The limit, frames.
        limit: usize,
    },
    /// No channel layout fits the input's and the impulse response's channel counts.
    #[error("{}: {message}", .ir.display())]
    Layout {
        /// The impulse response file.
        ir: PathBuf,
        /// Why no layout fits.
        message: String,
    },
    /// The engine refused the configuration or failed.
    #[error("convolving {} with {}: {source}", .input.display(), .ir.display())]
    Convolve {
        /// The input file.
        input: PathBuf,
        /// The impulse response file.
        ir: PathBuf,
        /// The engine's error.
        #[source]
        source: ConvError,
    },
}

/// Sample format of the output file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// The input file's format (64-bit float input is written as 32-bit float).
    Same,
    /// 16-bit integer PCM.
    S16,
    /// 24-bit integer PCM.
    S24,
    /// 32-bit integer PCM.
    S32,
    /// 32-bit IEEE float.
    F32,
}

impl OutputFormat {
    /// The encoding written for an input in `input`.
    pub fn encoding(self, input: Encoding) -> Encoding {
        match self {
            OutputFormat::Same => match input {
                Encoding::Float(_) => Encoding::Float(32),
                other => other,
            },
            OutputFormat::S16 => Encoding::Int(16),
            OutputFormat::S24 => Encoding::Int(24),
            OutputFormat::S32 => Encoding::Int(32),
            OutputFormat::F32 => Encoding::Float(32),
        }
    }
}

/// How the engine schedules its partition levels for offline work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    /// Everything in the calling thread.
    Single,
    /// One worker thread per larger partition level.
    Threaded,
}

/// A decoded WAV file: sample rate, format and one `Vec<f32>` per channel (full scale = ±1).
#[derive(Clone, Debug, PartialEq)]
pub struct Audio {
    /// Sample rate in Hz.
    pub rate: u32,
    /// The file's sample format.
    pub format: Encoding,
    /// Samples, one vector per channel, all the same length.
    pub channels: Vec<Vec<f32>>,
}

impl Audio {
    /// Number of frames (samples per channel).
    pub fn frames(&self) -> usize {
        self.channels.first().map_or(0, Vec::len)
    }
}

/// Reads a WAV file into per-channel `f32` samples; errors name the file and what is wrong.
pub fn read_wav(path: &Path) -> Result<Audio, WavError> {
    let mut reader = WavReader::open(path)?;
    let info = reader.info();
    Ok(Audio {
        rate: info.sample_rate,
        format: info.encoding,
        channels: reader.read_channels()?,
    })
}

/// Writes per-channel samples as a WAV file in `format`; returns how many samples clipped.
pub fn write_wav(
    path: &Path,
    rate: u32,
    format: Encoding,
    channels: &[Vec<f32>],
) -> Result<u64, WavError> {
    // Written beside the destination and moved onto it at the end: a failed run leaves an
    // existing file untouched.
    let mut w = WavWriter::create(path, channels.len(), Some(rate), format)?;
    let frames = channels.first().map_or(0, Vec::len);
    let mut interleaved = Vec::with_capacity(channels.len() * 4096);
    for start in (0..frames).step_by(4096) {
        interleaved.clear();
        for n in start..(start + 4096).min(frames) {
            interleaved.extend(channels.iter().map(|ch| ch[n]));
        }
        w.write(&interleaved)?;
    }
    w.finish()?;
    Ok(w.clipped())
}

/// Engine settings for [`convolve`].
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Block size in samples.
    pub block: usize,
    /// Partitioning of the IR.
    pub partitioning: Partitioning,
    /// Threads of the engine.
    pub threads: Threads,
    /// Longest accepted IR, in frames.
    pub max_ir_len: usize,
}

impl Default for EngineOptions {
    /// The defaults of `sluice convolve`: 4096-sample blocks, automatic partitioning, one
    /// thread, IRs up to 2^22 frames.
    fn default() -> Self {
        EngineOptions {
            block: 4096,
            partitioning: Partitioning::Auto,
            threads: Threads::Single,
            max_ir_len: 1 << 22,
        }
    }
}

/// Convolves `input` (one vector per channel) with the IR channels `ir` in `layout`, mixing
/// `mix` of the convolved signal with `1 - mix` of the input. Returns one vector per output
/// channel of `input length + IR length - 1` frames. `progress` gets the frames done so far
/// and says whether to go on: when it returns `false`, the input ends where it was read to and
/// the output is that part with its full tail.
pub fn convolve(
    input: &[Vec<f32>],
    ir: &[Vec<f32>],
    layout: Layout,
    mix: f32,
    opts: &EngineOptions,
    mut progress: impl FnMut(u64) -> bool,
) -> Result<Vec<Vec<f32>>, ConvError> {
    let frames = input.first().map_or(0, Vec::len);
    let ir_len = ir.first().map_or(0, Vec::len);
    let matrix = layout.matrix(input.len(), ir)?;
    let config = ConvolverConfig {
        block_size: opts.block,
        partitioning: opts.partitioning.clone(),
        scheduling: match opts.threads {
            Threads::Single => Scheduling::SingleThread,
            Threads::Threaded => Scheduling::Threaded {
                pin_cores: None,
                realtime_priority: None,
            },
        },
        late_policy: LatePolicy::Wait,
        max_ir_len: opts.max_ir_len,
    };
    let inputs: Vec<&[f32]> = input.iter().map(Vec::as_slice).collect();
    let mut out = convolve_offline_until(&matrix, &inputs, &config, &mut progress)?;
    // The engine's tail is as long as its longest IR; this one's, as the IR given (and the
    // input as long as it was read, if stopped).
    let read = out
        .first()
        .map_or(0, |o| (o.len() + 1).saturating_sub(matrix.max_len()));
    let out_len = frames.min(read) + ir_len - 1;
    for o in &mut out {
        o.truncate(out_len);
    }
    if mix != 1.0 {
        for (o, y) in out.iter_mut().enumerate() {
            let dry = &input[layout.dry_source(o)];
            for (n, v) in y.iter_mut().enumerate() {
                *v = mix * *v + (1.0 - mix) * dry.get(n).copied().unwrap_or(0.0);
            }
        }
    }
    Ok(out)
}

/// Peak-normalizes `channels` to `dbfs`; returns the gain applied, or `None` if all is silent.
pub fn normalize(channels: &mut [Vec<f32>], dbfs: f64) -> Option<f64> {
    let peak = channels
        .iter()
        .flatten()
        .fold(0.0f32, |m, &v| m.max(v.abs()));
    if peak == 0.0 {
        return None;
    }
    let gain = 10f64.powf(dbfs / 20.0) / f64::from(peak);
    for v in channels.iter_mut().flatten() {
        *v = (f64::from(*v) * gain) as f32;
    }
    Some(gain)
}

/// What [`convolve_files`] does: the files, and how to convolve and write.
#[derive(Clone, Debug)]
pub struct ConvolveOptions {
    /// Input WAV file: 8/16/24/32-bit integer or 32-bit float PCM, any number of channels.
    pub input: PathBuf,
    /// Impulse response WAV file (same sample rate as the input, or set `resample`).
    pub ir: PathBuf,
    /// Output WAV file; holds input length + IR length - 1 frames (the full tail).
    pub output: PathBuf,
    /// Wet/dry mix from 0 (input only) to 1 (convolved signal only).
    pub mix: f32,
    /// Peak-normalize the output to this level in dBFS (at or below 0).
    pub normalize: Option<f64>,
    /// Gain of the convolved signal in dB (the IR is scaled by it), so that a loud IR does not
    /// clip; 0 leaves it as it is.
    pub gain_db: f64,
    /// When set (by a Ctrl-C handler), the convolution stops at the next block: the input read
    /// so far is convolved with the full tail and written, a shorter but valid file.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Output sample format.
    pub format: OutputFormat,
    /// Resample the impulse response to the input's sample rate if they differ.
    pub resample: bool,
    /// The engine's settings.
    pub engine: EngineOptions,
}

impl ConvolveOptions {
    /// Convolves `input` with `ir` into `output`, with every other setting at its default
    /// (full mix, no normalisation, the input's format, no resampling).
    pub fn new(
        input: impl Into<PathBuf>,
        ir: impl Into<PathBuf>,
        output: impl Into<PathBuf>,
    ) -> Self {
        ConvolveOptions {
            input: input.into(),
            ir: ir.into(),
            output: output.into(),
            mix: 1.0,
            normalize: None,
            gain_db: 0.0,
            stop: None,
            format: OutputFormat::Same,
            resample: false,
            engine: EngineOptions::default(),
        }
    }
}

/// What [`convolve_files`] tells its caller while it works.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OfflineEvent {
    /// The files were read and checked; the output will have `total_frames` frames.
    Start {
        /// Frames of the output.
        total_frames: u64,
    },
    /// After each block: input frames convolved so far.
    Progress {
        /// Frames done.
        frames_done: u64,
    },
    /// The convolution is done; normalising and writing follow.
    Convolved,
    /// Normalisation was asked for but the output is silent: nothing was scaled.
    SilentOutput,
}

/// What [`convolve_files`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct OfflineReport {
    /// Frames written per channel.
    pub frames: usize,
    /// Channels written.
    pub channels: usize,
    /// The output's sample rate (the input's), Hz.
    pub rate: u32,
    /// The gain normalisation applied, if it was asked for and the output was not silent.
    pub gain: Option<f64>,
    /// Samples that clipped in an integer output format.
    pub clipped: u64,
    /// Input frames convolved, if `stop` ended the convolution before the input's end.
    pub stopped_at: Option<u64>,
}

/// Convolves the input file with the impulse response file and writes the output file, as
/// `options` say; `on_event` hears of the progress. Nothing is written if a check fails.
pub fn convolve_files(
    options: &ConvolveOptions,
    mut on_event: impl FnMut(OfflineEvent),
) -> Result<OfflineReport, OfflineError> {
    if !(0.0..=1.0).contains(&options.mix) {
        return Err(OfflineError::Mix(options.mix));
    }
    if let Some(db) = options.normalize {
        if !db.is_finite() || db > 0.0 {
            return Err(OfflineError::Normalize(db));
        }
    }
    for (role, other) in [("input", &options.input), ("impulse response", &options.ir)] {
        if sluice_graph::same_file(&options.output, other) {
            return Err(OfflineError::Overwrite {
                output: options.output.clone(),
                role,
            });
        }
    }
    let input = read_wav(&options.input)?;
    if input.frames() == 0 {
        return Err(OfflineError::EmptyInput(options.input.clone()));
    }
    if !(-120.0..=40.0).contains(&options.gain_db) {
        return Err(OfflineError::Gain(options.gain_db));
    }
    let mut ir = load_ir(options, input.rate)?;
    if options.gain_db != 0.0 {
        let gain = 10f64.powf(options.gain_db / 20.0);
        for v in ir.iter_mut().flatten() {
            *v = (f64::from(*v) * gain) as f32;
        }
    }
    let layout =
        Layout::choose(input.channels.len(), ir.len()).map_err(|message| OfflineError::Layout {
            ir: options.ir.clone(),
            message,
        })?;
    let total = (input.frames() + ir[0].len() - 1) as u64;
    on_event(OfflineEvent::Start {
        total_frames: total,
    });
    let stop = options.stop.clone();
    let mut out = convolve(
        &input.channels,
        &ir,
        layout,
        options.mix,
        &options.engine,
        |frames_done| {
            on_event(OfflineEvent::Progress { frames_done });
            !stop
                .as_ref()
                .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
        },
    )
    .map_err(|source| OfflineError::Convolve {
        input: options.input.clone(),
        ir: options.ir.clone(),
        source,
    })?;
    on_event(OfflineEvent::Convolved);
    let mut gain = None;
    if let Some(db) = options.normalize {
        gain = normalize(&mut out, db);
        if gain.is_none() {
            on_event(OfflineEvent::SilentOutput);
        }
    }
    let format = options.format.encoding(input.format);
    let clipped = write_wav(&options.output, input.rate, format, &out)?;
    let frames = out.first().map_or(0, Vec::len);
    let read = (frames + 1 - ir[0].len()) as u64;
    Ok(OfflineReport {
        frames,
        channels: out.len(),
        rate: input.rate,
        gain,
        clipped,
        stopped_at: (read < input.frames() as u64).then_some(read),
    })
}

/// Reads the impulse response and checks it: not empty, not silent, not too long, and at the
/// input's rate (resampled if `resample`).
fn load_ir(options: &ConvolveOptions, rate: u32) -> Result<Vec<Vec<f32>>, OfflineError> {
    let ir = read_wav(&options.ir)?;
    if ir.frames() == 0 {
        return Err(OfflineError::EmptyIr(options.ir.clone()));
    }
    if ir.channels.iter().flatten().all(|&v| v == 0.0) {
        return Err(OfflineError::SilentIr(options.ir.clone()));
    }
    let mut channels = ir.channels;
    if ir.rate != rate {
        if !options.resample {
            return Err(OfflineError::RateMismatch {
                input: options.input.clone(),
                ir: options.ir.clone(),
                input_rate: rate,
                ir_rate: ir.rate,
            });
        }
        channels = channels
            .iter()
            .map(|c| resample_ir(c, ir.rate, rate))
            .collect();
    }
    let len = channels[0].len();
    if len > options.engine.max_ir_len {
        return Err(OfflineError::IrTooLong {
            ir: options.ir.clone(),
            frames: len,
            rate,
            limit: options.engine.max_ir_len,
        });
    }
    Ok(channels)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in [-0.5, 0.5).
    fn noise(len: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.max(1);
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                s as f32 / 4_294_967_296.0 - 0.5
            })
            .collect()
    }

    fn args(dir: &Path, input: &str, ir: &str) -> ConvolveOptions {
        let mut options = ConvolveOptions::new(dir.join(input), dir.join(ir), dir.join("out.wav"));
        options.format = OutputFormat::F32;
        options.engine.block = 64;
        options
    }

    fn run(options: ConvolveOptions) -> Result<OfflineReport, OfflineError> {
        convolve_files(&options, |_| {})
    }

    fn write(path: &Path, rate: u32, format: Encoding, channels: &[Vec<f32>]) {
        write_wav(path, rate, format, channels).unwrap();
    }

    /// The error and its causes, as `sluice` prints them (each cause once).
    fn error_of(a: ConvolveOptions) -> String {
        let err = run(a).unwrap_err();
        let mut line = err.to_string();
        let mut cause = std::error::Error::source(&err);
        while let Some(c) = cause {
            let text = c.to_string();
            if !line.contains(&text) {
                line = format!("{line}: {text}");
            }
            cause = c.source();
        }
        line
    }

    /// Direct convolution in f64.
    fn direct(x: &[f32], h: &[f32]) -> Vec<f64> {
        let mut y = vec![0.0f64; x.len() + h.len() - 1];
        for (i, &xv) in x.iter().enumerate() {
            for (j, &hv) in h.iter().enumerate() {
                y[i + j] += f64::from(xv) * f64::from(hv);
            }
        }
        y
    }

    #[test]
    fn wav_round_trips_every_format() {
        let dir = tempfile::tempdir().unwrap();
        for format in [
            Encoding::Int(8),
            Encoding::Int(16),
            Encoding::Int(24),
            Encoding::Int(32),
            Encoding::Float(32),
        ] {
            let path = dir.path().join("rt.wav");
            // Values on the format's grid, so integer formats round-trip exactly.
            let step = match format {
                Encoding::Int(b) => 1.0 / f64::from(1u32 << (b - 1)),
                Encoding::Float(_) => 1e-7,
            };
            let grid = |v: f32| ((f64::from(v) / step).round() * step) as f32;
            let channels: Vec<Vec<f32>> = (0..3)
                .map(|c| noise(1000, c + 7).into_iter().map(grid).collect())
                .collect();
            let clipped = write_wav(&path, 44100, format, &channels).unwrap();
            assert_eq!(clipped, 0);
            let back = read_wav(&path).unwrap();
            assert_eq!(back.rate, 44100);
            assert_eq!(back.format, format);
            let tol = if format == Encoding::Int(32) {
                1e-7
            } else {
                0.0
            };
            for (a, b) in channels.iter().zip(&back.channels) {
                assert_eq!(a.len(), b.len());
                for (x, y) in a.iter().zip(b) {
                    assert!((x - y).abs() <= tol, "{format:?}: {x} vs {y}");
                }
            }
        }
    }

    #[test]
    fn integer_output_clips_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clip.wav");
        let clipped = write_wav(
            &path,
            48000,
            Encoding::Int(16),
            &[vec![0.5, 1.0, -1.0, 2.0]],
        )
        .unwrap();
        assert_eq!(clipped, 2); // +1.0 and 2.0 exceed 32767/32768; -1.0 fits
        let back = read_wav(&path).unwrap();
        assert_eq!(back.channels[0][2], -1.0);
        assert!((back.channels[0][3] - 32767.0 / 32768.0).abs() < 1e-9);
    }

    #[test]
    fn layouts_map_channels() {
        assert_eq!(Layout::choose(2, 1), Ok(Layout::MonoIr));
        assert_eq!(Layout::choose(5, 5), Ok(Layout::PerChannel));
        assert_eq!(Layout::choose(2, 4), Ok(Layout::TrueStereo));
        assert_eq!(Layout::choose(1, 2), Ok(Layout::MonoToMany));
        assert_eq!(Layout::choose(1, 1), Ok(Layout::MonoIr));
        let e = Layout::choose(2, 3).unwrap_err();
        assert!(e.contains("has 3 channels but the input has 2"), "{e}");
        assert!(e.contains("4 (true stereo: LL, LR, RL, RR)"), "{e}");
        let e = Layout::choose(6, 2).unwrap_err();
        assert!(
            e.contains("1 channel")
                && e.contains("6 (one per channel)")
                && !e.contains("true stereo"),
            "{e}"
        );
        assert_eq!(Layout::MonoToMany.outputs(1, 2), 2);
        assert_eq!(
            Layout::TrueStereo.entries(2, 4),
            vec![(0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3)]
        );
    }

    #[test]
    fn true_stereo_routes_ll_lr_rl_rr() {
        // IR channel k is a single impulse of height k+1 at delay k: each path is recognisable.
        let ir: Vec<Vec<f32>> = (0..4)
            .map(|k| {
                let mut h = vec![0.0; 8];
                h[k] = (k + 1) as f32;
                h
            })
            .collect();
        let input = vec![vec![1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 0.0, 0.0]]; // impulse on the left only
        let opts = EngineOptions {
            block: 16,
            partitioning: Partitioning::Auto,
            threads: Threads::Single,
            max_ir_len: 1 << 20,
        };
        let out = convolve(&input, &ir, Layout::TrueStereo, 1.0, &opts, |_| true).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].len(), 4 + 8 - 1);
        // Left in -> left out is LL (height 1 at 0); left in -> right out is LR (height 2 at 1).
        assert!((out[0][0] - 1.0).abs() < 1e-6 && out[0][1].abs() < 1e-6);
        assert!((out[1][1] - 2.0).abs() < 1e-6 && out[1][0].abs() < 1e-6);
        let input = vec![vec![0.0; 4], vec![1.0, 0.0, 0.0, 0.0]]; // right only: RL and RR
        let out = convolve(&input, &ir, Layout::TrueStereo, 1.0, &opts, |_| true).unwrap();
        assert!((out[0][2] - 3.0).abs() < 1e-6 && (out[1][3] - 4.0).abs() < 1e-6);
    }

    #[test]
    fn mix_zero_is_the_dry_input_and_silent_channels_are_skipped() {
        let input = vec![noise(300, 3), noise(300, 4)];
        let ir = vec![noise(100, 5), vec![0.0; 100]]; // second IR channel silent: output 1 is dry only
        let opts = EngineOptions {
            block: 64,
            partitioning: Partitioning::Auto,
            threads: Threads::Single,
            max_ir_len: 1 << 20,
        };
        let out = convolve(&input, &ir, Layout::PerChannel, 0.0, &opts, |_| true).unwrap();
        assert_eq!(&out[0][..300], &input[0][..]);
        assert!(out[0][300..].iter().all(|&v| v == 0.0));
        let out = convolve(&input, &ir, Layout::PerChannel, 0.5, &opts, |_| true).unwrap();
        for (n, &v) in out[1].iter().enumerate() {
            assert!((v - 0.5 * input[1].get(n).copied().unwrap_or(0.0)).abs() < 1e-7);
        }
    }

    #[test]
    fn end_to_end_matches_direct_convolution() {
        let dir = tempfile::tempdir().unwrap();
        let input = vec![noise(5000, 11), noise(5000, 12)];
        let ir = vec![noise(3000, 13)];
        write(
            &dir.path().join("in.wav"),
            48000,
            Encoding::Float(32),
            &input,
        );
        write(&dir.path().join("ir.wav"), 48000, Encoding::Float(32), &ir);
        for threads in [Threads::Single, Threads::Threaded] {
            let mut a = args(dir.path(), "in.wav", "ir.wav");
            a.engine.threads = threads;
            a.engine.block = 128;
            run(a).unwrap();
            let out = read_wav(&dir.path().join("out.wav")).unwrap();
            assert_eq!(out.channels.len(), 2);
            for (c, y) in out.channels.iter().enumerate() {
                let want = direct(&input[c], &ir[0]);
                assert_eq!(y.len(), want.len(), "full tail: input + IR - 1");
                let peak = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let err = y
                    .iter()
                    .zip(&want)
                    .fold(0.0f64, |m, (a, b)| m.max((f64::from(*a) - b).abs()));
                assert!(
                    err <= 1e-4 * peak,
                    "{threads:?} channel {c}: error {err} vs peak {peak}"
                );
            }
        }
    }

    #[test]
    fn normalize_sets_the_peak_and_same_format_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        write(
            &dir.path().join("in.wav"),
            48000,
            Encoding::Int(24),
            &[noise(2000, 21)],
        );
        write(
            &dir.path().join("ir.wav"),
            48000,
            Encoding::Int(16),
            &[noise(500, 22)],
        );
        let mut a = args(dir.path(), "in.wav", "ir.wav");
        a.format = OutputFormat::Same;
        a.normalize = Some(-1.0);
        run(a).unwrap();
        let out = read_wav(&dir.path().join("out.wav")).unwrap();
        assert_eq!(out.format, Encoding::Int(24));
        let peak = out.channels[0].iter().fold(0.0f32, |m, v| m.max(v.abs()));
        assert!(
            (f64::from(peak) - 10f64.powf(-1.0 / 20.0)).abs() < 1e-5,
            "peak {peak}"
        );
        let mut silent = vec![vec![0.0f32; 4]];
        assert_eq!(normalize(&mut silent, -1.0), None);
    }

    #[test]
    fn resample_flag_converts_the_ir() {
        let dir = tempfile::tempdir().unwrap();
        write(
            &dir.path().join("in.wav"),
            44100,
            Encoding::Int(16),
            &[noise(1000, 31)],
        );
        write(
            &dir.path().join("ir.wav"),
            48000,
            Encoding::Int(16),
            &[noise(480, 32)],
        );
        let e = error_of(args(dir.path(), "in.wav", "ir.wav"));
        assert!(e.contains("is 44100 Hz but the impulse response"), "{e}");
        assert!(
            e.contains("is 48000 Hz") && e.contains("--resample") && e.contains("sox"),
            "{e}"
        );
        let mut a = args(dir.path(), "in.wav", "ir.wav");
        a.resample = true;
        run(a).unwrap();
        let out = read_wav(&dir.path().join("out.wav")).unwrap();
        assert_eq!(out.rate, 44100);
        assert_eq!(out.frames(), 1000 + 441 - 1);
    }

    #[test]
    fn bad_inputs_are_named_and_explained() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(
            &d.join("in.wav"),
            48000,
            Encoding::Int(16),
            &[noise(1000, 41), noise(1000, 42)],
        );
        write(&d.join("empty.wav"), 48000, Encoding::Int(16), &[vec![]]);
        write(
            &d.join("silent.wav"),
            48000,
            Encoding::Int(16),
            &[vec![0.0; 100]],
        );
        write(
            &d.join("long.wav"),
            48000,
            Encoding::Int(16),
            &[noise(5000, 43)],
        );
        write(
            &d.join("three.wav"),
            48000,
            Encoding::Int(16),
            &[noise(100, 1), noise(100, 2), noise(100, 3)],
        );
        std::fs::write(d.join("text.wav"), "this is not audio, just some text").unwrap();
        let full = std::fs::read(d.join("in.wav")).unwrap();
        std::fs::write(d.join("cut.wav"), &full[..full.len() - 1001]).unwrap();
        // Cut inside the fmt chunk (after the RIFF header and the JUNK chunk kept for RF64).
        std::fs::write(d.join("stub.wav"), &full[..60]).unwrap();

        let e = error_of(args(d, "in.wav", "empty.wav"));
        assert!(
            e.contains("empty.wav") && e.contains("has no samples"),
            "{e}"
        );
        let e = error_of(args(d, "in.wav", "silent.wav"));
        assert!(e.contains("silent.wav") && e.contains("silent"), "{e}");
        let mut a = args(d, "in.wav", "long.wav");
        a.engine.max_ir_len = 4096;
        let e = error_of(a);
        assert!(
            e.contains("long.wav") && e.contains("5000 frames") && e.contains("--max-ir-len"),
            "{e}"
        );
        let e = error_of(args(d, "in.wav", "three.wav"));
        assert!(
            e.contains("three.wav") && e.contains("has 3 channels but the input has 2"),
            "{e}"
        );
        let e = error_of(args(d, "text.wav", "three.wav"));
        assert!(
            e.contains("text.wav") && e.contains("not a valid WAV file"),
            "{e}"
        );
        let e = error_of(args(d, "cut.wav", "three.wav"));
        assert!(
            e.contains("cut.wav") && e.contains("truncated") && e.contains("1000 frames"),
            "{e}"
        );
        let e = error_of(args(d, "stub.wav", "three.wav"));
        assert!(
            e.contains("stub.wav")
                && e.contains("not a valid WAV file: the fmt chunk is cut short"),
            "{e}"
        );
        let e = error_of(args(d, "missing.wav", "three.wav"));
        assert!(
            e.contains("missing.wav") && e.contains("cannot read"),
            "{e}"
        );
        let mut a = args(d, "in.wav", "long.wav");
        a.mix = 1.5;
        assert!(error_of(a).contains("--mix"));
        let mut a = args(d, "in.wav", "long.wav");
        a.normalize = Some(3.0);
        assert!(error_of(a).contains("--normalize"));
        for e in [&e, &error_of(args(d, "in.wav", "silent.wav"))] {
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}
