//! `sluice convolve IN.wav IR.wav OUT.wav`: offline convolution of a WAV file with an impulse
//! response. The work is `sluice_audio::offline`; here are its arguments, progress bar and
//! warnings.

use std::path::PathBuf;

use clap::ValueEnum;
use sluice_audio::offline::{self, ConvolveOptions, EngineOptions, OfflineEvent};
use sluice_conv::Partitioning;

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
    /// Gain of the convolved (wet) signal in dB, -120 to 40, e.g. `--gain -12` for a loud
    /// reverb that would clip (the IR is scaled by it; the dry part of --mix is not).
    #[arg(
        long,
        default_value_t = 0.0,
        value_name = "DB",
        allow_negative_numbers = true
    )]
    pub gain: f64,
    /// Output sample format (i16, i24, i32, f32, as in graph files; s16, s24, s32 are accepted
    /// too); `same` keeps the input's.
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
    #[value(alias = "s16")]
    I16,
    /// 24-bit integer PCM.
    #[value(alias = "s24")]
    I24,
    /// 32-bit integer PCM.
    #[value(alias = "s32")]
    I32,
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

impl From<OutputFormat> for offline::OutputFormat {
    fn from(format: OutputFormat) -> Self {
        match format {
            OutputFormat::Same => offline::OutputFormat::Same,
            OutputFormat::I16 => offline::OutputFormat::S16,
            OutputFormat::I24 => offline::OutputFormat::S24,
            OutputFormat::I32 => offline::OutputFormat::S32,
            OutputFormat::F32 => offline::OutputFormat::F32,
        }
    }
}

impl From<Threads> for offline::Threads {
    fn from(threads: Threads) -> Self {
        match threads {
            Threads::Single => offline::Threads::Single,
            Threads::Threaded => offline::Threads::Threaded,
        }
    }
}

/// Runs `sluice convolve`. Ctrl-C (or SIGTERM) stops it gracefully, as it stops `sluice run`:
/// the input read so far is convolved with the full tail and written, a valid shorter file; a
/// second one exits at once and leaves no partial file.
pub fn run(args: ConvolveArgs) -> anyhow::Result<()> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_handle = sluice_runtime::StopHandle::new();
    let signals = sluice_runtime::os::stop_on_signals(stop_handle.clone());
    let options = ConvolveOptions {
        input: args.input,
        ir: args.ir,
        output: args.output,
        mix: args.mix,
        normalize: args.normalize,
        gain_db: args.gain,
        stop: Some(stop.clone()),
        format: args.format.into(),
        resample: args.resample,
        engine: EngineOptions {
            block: args.block,
            partitioning: args.partitioning,
            threads: args.threads.into(),
            max_ir_len: args.max_ir_len,
        },
    };
    let quiet = args.quiet;
    // Made once the files are read and checked, as long as the output: a failed check
    // draws no bar.
    let mut bar = indicatif::ProgressBar::hidden();
    let (mut total, mut done_at) = (0, 0);
    let report = offline::convolve_files(&options, |event| match event {
        OfflineEvent::Start { total_frames } => {
            total = total_frames;
            bar = progress_bar(total, quiet);
        }
        OfflineEvent::Progress { frames_done } => {
            if stop_handle.is_stopped() {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            // Redraw every ~1% only: the bar is cheap, but not free at small blocks.
            if frames_done >= done_at {
                bar.set_position(frames_done);
                done_at = frames_done + total / 100;
            }
        }
        OfflineEvent::Convolved => bar.finish_and_clear(),
        OfflineEvent::SilentOutput => {
            eprintln!("sluice: warning: the output is silent; nothing to normalize")
        }
    })?;
    if report.clipped > 0 {
        eprintln!(
            "sluice: warning: {} samples clipped in {}; use --gain -6 (or lower), --normalize -1 or --format f32",
            report.clipped,
            options.output.display()
        );
    }
    if let (Some(frames), Some(signal)) = (report.stopped_at, signals.signal()) {
        eprintln!(
            "sluice: stopped by {}: the first {frames} input frames were convolved, with the \
             full tail, into {}",
            sluice_os::signals::name(signal),
            options.output.display()
        );
        drop(signals);
        std::process::exit(128 + signal);
    }
    Ok(())
}

/// The progress bar of `total` frames on stderr (hidden if `quiet`).
fn progress_bar(total: u64, quiet: bool) -> indicatif::ProgressBar {
    let bar = if quiet {
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
    bar
}
