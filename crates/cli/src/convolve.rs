//! `sluice convolve IN.wav IR.wav OUT.wav`: offline convolution of a WAV file with an impulse
//! response through the partitioned engine of `sluice-conv`.
//!
//! The whole input is read into memory (deinterleaved, `f32`), convolved block by block, and the
//! full result (input length + IR length − 1 frames) is written at the end, so that
//! `--normalize` can see the peak first. The engine's latency is removed: output frame `n` is
//! the convolution at time `n`.
//!
//! Channel layouts (input channels × IR channels):
//! - a 1-channel IR is applied to every input channel;
//! - an IR with as many channels as the input: IR channel `c` on input channel `c`;
//! - a 2-channel input with a 4-channel IR is true stereo: IR channels are LL, LR, RL, RR
//!   (left in → left out, left in → right out, right in → left out, right in → right out);
//! - a 1-channel input with an N-channel IR gives N outputs (mono in, e.g. stereo reverb out).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use clap::ValueEnum;
pub use sluice_conv::Layout;
use sluice_conv::{
    convolve_offline_with_progress, ConvolverConfig, LatePolicy, Partitioning, Scheduling,
};
use sluice_formats::wav::{Encoding, WavReader, WavWriter};
use sluice_kernels::resample_ir;

/// Arguments of `sluice convolve`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Channel layouts: a 1-channel IR applies to every input channel; an IR \
with as many channels as the input applies channel by channel; a 4-channel IR on a stereo input \
is true stereo, its channels being LL, LR, RL, RR (left in to left out, left in to right out, \
right in to left out, right in to right out); a mono input with an N-channel IR gives N outputs."
)]
pub struct ConvolveArgs {
    /// Input WAV file: 8/16/24/32-bit integer or 32-bit float PCM, any number of channels.
    pub input: PathBuf,
    /// Impulse response WAV file (same sample rate as the input, or pass --resample).
    pub ir: PathBuf,
    /// Output WAV file; holds input length + IR length - 1 frames (the full tail).
    pub output: PathBuf,
    /// Wet/dry mix from 0 (input only) to 1 (convolved signal only).
    #[arg(long, default_value_t = 1.0, value_name = "0..1")]
    pub mix: f32,
    /// Peak-normalize the output to this level in dBFS, e.g. `--normalize -1`.
    #[arg(long, value_name = "DBFS", allow_negative_numbers = true)]
    pub normalize: Option<f64>,
    /// Output sample format; `same` keeps the input's.
    #[arg(long, value_enum, default_value_t = OutputFormat::Same)]
    pub format: OutputFormat,
    /// Resample the impulse response to the input's sample rate if they differ
    /// (windowed-sinc; the IR's frequency response is kept).
    #[arg(long)]
    pub resample: bool,
    /// Processing block size in samples (up to 8192); offline, 2048-8192 are the fastest.
    #[arg(long, default_value_t = 4096, value_name = "SAMPLES")]
    pub block: usize,
    /// Partitioning of the IR: auto, uniform, tuned, or explicit levels SIZExCOUNT,...
    /// (e.g. `1024x4,8192x30`; the first size must be the block size).
    #[arg(long, default_value = "auto", value_parser = sluice_conv::parse_partitioning)]
    pub partitioning: Partitioning,
    /// Engine scheduling: `single` runs every partition level in the calling thread, `threaded`
    /// gives each larger level its own worker thread. Offline, `single` was as fast as
    /// `threaded` in wall time (2 min of stereo, 2^18 IR) and used less CPU, so it is the default.
    #[arg(long, value_enum, default_value_t = Threads::Single)]
    pub threads: Threads,
    /// Longest accepted impulse response, in frames (default 2^22, 87 s at 48 kHz).
    #[arg(long, default_value_t = 1 << 22, value_name = "FRAMES")]
    pub max_ir_len: usize,
    /// Do not show the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Sample format of the output file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The input file's format.
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

/// How the engine schedules its partition levels for offline work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
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
pub fn read_wav(path: &Path) -> anyhow::Result<Audio> {
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
) -> anyhow::Result<u64> {
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

/// Convolves `input` (one vector per channel) with the IR channels `ir` in `layout`, mixing
/// `mix` of the convolved signal with `1 - mix` of the input. Returns one vector per output
/// channel of `input length + IR length - 1` frames. `progress` gets the frames done so far.
pub fn convolve(
    input: &[Vec<f32>],
    ir: &[Vec<f32>],
    layout: Layout,
    mix: f32,
    opts: &EngineOptions,
    mut progress: impl FnMut(u64),
) -> anyhow::Result<Vec<Vec<f32>>> {
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
    let mut out = convolve_offline_with_progress(&matrix, &inputs, &config, &mut progress)?;
    // The engine's tail is as long as its longest IR; this one's, as the IR given.
    let out_len = frames + ir_len - 1;
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

/// Reads the impulse response and checks it: not empty, not silent, not too long, and at the
/// input's rate (resampled if `resample`).
fn load_ir(args: &ConvolveArgs, rate: u32) -> anyhow::Result<Vec<Vec<f32>>> {
    let name = args.ir.display();
    let ir = read_wav(&args.ir)?;
    if ir.frames() == 0 {
        bail!("{name}: the impulse response has no samples");
    }
    if ir.channels.iter().flatten().all(|&v| v == 0.0) {
        bail!("{name}: the impulse response is silent (every sample is 0)");
    }
    let mut channels = ir.channels;
    if ir.rate != rate {
        if !args.resample {
            bail!(
                "{} is {rate} Hz but the impulse response {name} is {} Hz; resample one of them \
                 (e.g. `sox {name} -r {rate} ir{}.wav`) or pass --resample",
                args.input.display(),
                ir.rate,
                rate / 1000
            );
        }
        channels = channels
            .iter()
            .map(|c| resample_ir(c, ir.rate, rate))
            .collect();
    }
    let len = channels[0].len();
    if len > args.max_ir_len {
        bail!(
            "{name}: the impulse response is {len} frames ({:.1} s), longer than the limit of {} \
             frames (--max-ir-len)",
            len as f64 / f64::from(rate),
            args.max_ir_len
        );
    }
    Ok(channels)
}

/// Runs `sluice convolve`.
pub fn run(args: ConvolveArgs) -> anyhow::Result<()> {
    if !(0.0..=1.0).contains(&args.mix) {
        bail!("--mix must be between 0 and 1, got {}", args.mix);
    }
    if let Some(db) = args.normalize {
        if !db.is_finite() || db > 0.0 {
            bail!("--normalize takes a peak level in dBFS at or below 0 (e.g. -1), got {db}");
        }
    }
    for (role, other) in [("input", &args.input), ("impulse response", &args.ir)] {
        if sluice_graph::same_file(&args.output, other) {
            bail!(
                "{}: the output would overwrite the {role}; choose another output path",
                args.output.display()
            );
        }
    }
    let input = read_wav(&args.input)?;
    if input.frames() == 0 {
        bail!("{}: the input has no samples", args.input.display());
    }
    let ir = load_ir(&args, input.rate)?;
    let layout = Layout::choose(input.channels.len(), ir.len())
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.ir.display()))?;
    let total = (input.frames() + ir[0].len() - 1) as u64;
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::with_draw_target(
            Some(total),
            indicatif::ProgressDrawTarget::stderr(),
        )
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} convolving [{bar:40}] {percent:>3}% {elapsed} (eta {eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let opts = EngineOptions {
        block: args.block,
        partitioning: args.partitioning.clone(),
        threads: args.threads,
        max_ir_len: args.max_ir_len,
    };
    let mut done_at = 0;
    let mut out = convolve(&input.channels, &ir, layout, args.mix, &opts, |done| {
        // Redraw every ~1% only: the bar is cheap, but not free at small blocks.
        if done >= done_at {
            bar.set_position(done);
            done_at = done + total / 100;
        }
    })
    .with_context(|| {
        format!(
            "convolving {} with {}",
            args.input.display(),
            args.ir.display()
        )
    })?;
    bar.finish_and_clear();
    if let Some(db) = args.normalize {
        if normalize(&mut out, db).is_none() {
            eprintln!("sluice: warning: the output is silent; nothing to normalize");
        }
    }
    let format = match args.format {
        // 64-bit float input is written as 32-bit float.
        OutputFormat::Same => match input.format {
            Encoding::Float(_) => Encoding::Float(32),
            other => other,
        },
        OutputFormat::S16 => Encoding::Int(16),
        OutputFormat::S24 => Encoding::Int(24),
        OutputFormat::S32 => Encoding::Int(32),
        OutputFormat::F32 => Encoding::Float(32),
    };
    let clipped = write_wav(&args.output, input.rate, format, &out)?;
    if clipped > 0 {
        eprintln!(
            "sluice: warning: {clipped} samples clipped in {}; use --normalize -1 or --format f32",
            args.output.display()
        );
    }
    Ok(())
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

    fn args(dir: &Path, input: &str, ir: &str) -> ConvolveArgs {
        ConvolveArgs {
            input: dir.join(input),
            ir: dir.join(ir),
            output: dir.join("out.wav"),
            mix: 1.0,
            normalize: None,
            format: OutputFormat::F32,
            resample: false,
            block: 64,
            partitioning: Partitioning::Auto,
            threads: Threads::Single,
            max_ir_len: 1 << 22,
            quiet: true,
        }
    }

    fn write(path: &Path, rate: u32, format: Encoding, channels: &[Vec<f32>]) {
        write_wav(path, rate, format, channels).unwrap();
    }

    fn error_of(a: ConvolveArgs) -> String {
        format!("{:#}", run(a).unwrap_err())
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
        let out = convolve(&input, &ir, Layout::TrueStereo, 1.0, &opts, |_| {}).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].len(), 4 + 8 - 1);
        // Left in -> left out is LL (height 1 at 0); left in -> right out is LR (height 2 at 1).
        assert!((out[0][0] - 1.0).abs() < 1e-6 && out[0][1].abs() < 1e-6);
        assert!((out[1][1] - 2.0).abs() < 1e-6 && out[1][0].abs() < 1e-6);
        let input = vec![vec![0.0; 4], vec![1.0, 0.0, 0.0, 0.0]]; // right only: RL and RR
        let out = convolve(&input, &ir, Layout::TrueStereo, 1.0, &opts, |_| {}).unwrap();
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
        let out = convolve(&input, &ir, Layout::PerChannel, 0.0, &opts, |_| {}).unwrap();
        assert_eq!(&out[0][..300], &input[0][..]);
        assert!(out[0][300..].iter().all(|&v| v == 0.0));
        let out = convolve(&input, &ir, Layout::PerChannel, 0.5, &opts, |_| {}).unwrap();
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
            a.threads = threads;
            a.block = 128;
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
        std::fs::write(d.join("stub.wav"), &full[..20]).unwrap();

        let e = error_of(args(d, "in.wav", "empty.wav"));
        assert!(
            e.contains("empty.wav") && e.contains("has no samples"),
            "{e}"
        );
        let e = error_of(args(d, "in.wav", "silent.wav"));
        assert!(e.contains("silent.wav") && e.contains("silent"), "{e}");
        let mut a = args(d, "in.wav", "long.wav");
        a.max_ir_len = 4096;
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
