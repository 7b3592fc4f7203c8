//! `sluice live convolve`: the partitioned convolution engine as a JACK client (sluice-audio's
//! `LiveConvolver`), set up from flags (`--ir IR.wav`, the layouts of `sluice convolve`) or from
//! a jconvolver configuration file.
//!
//! SIGINT or SIGTERM stops it cleanly (the client is deactivated and closed, the final
//! statistics printed, exit status 0); SIGHUP reloads the impulse responses from their files
//! and crossfades to them without a click.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::bail;
use sluice_audio::{LiveConvolver, LiveSpec};
use sluice_conv::Partitioning;

/// `sluice live …`: JACK clients.
#[derive(clap::Subcommand, Debug)]
pub enum LiveCommand {
    /// Convolve live on a JACK server (a jconvolver replacement): impulse responses from WAV
    /// files, N inputs x M outputs, zero latency at power-of-two periods.
    Convolve(LiveConvolveArgs),
}

/// Arguments of `sluice live convolve`.
#[derive(clap::Args, Debug, Clone)]
#[command(
    after_help = "Statistics go to stderr every --stats seconds and at the end: periods, \
late periods (a partition level of the engine was not ready in time), the worst callback time \
as a share of the period, the latency reported to JACK. SIGINT/SIGTERM stop cleanly; SIGHUP \
reloads the impulse responses with a crossfade."
)]
pub struct LiveConvolveArgs {
    /// A jconvolver configuration file (`/convolver/new`, `/impulse/read`, …); or use --ir.
    #[arg(required_unless_present = "ir", conflicts_with = "ir")]
    pub config: Option<PathBuf>,
    /// Impulse response WAV file; its channels are laid out as in `sluice convolve` (mono on
    /// every input, one per input, true stereo LL/LR/RL/RR, or mono in to N out).
    #[arg(long, value_name = "IR.wav")]
    pub ir: Option<PathBuf>,
    /// Number of input ports with --ir (default: 2 for a 4-channel IR, else the IR's channels).
    #[arg(long, value_name = "N")]
    pub inputs: Option<usize>,
    /// Wet/dry mix from 0 (input only) to 1 (convolved only), with --ir.
    #[arg(long, default_value_t = 1.0, value_name = "0..1")]
    pub mix: f32,
    /// Output gain in dB.
    #[arg(
        long,
        default_value_t = 0.0,
        value_name = "DB",
        allow_negative_numbers = true
    )]
    pub gain: f64,
    /// JACK client name (default: the config's /jack/client, else `sluice-convolve`).
    #[arg(long, short = 'N')]
    pub name: Option<String>,
    /// JACK server name (default: the config's /jack/server, else the default server).
    #[arg(long, short = 's')]
    pub server: Option<String>,
    /// Connect input i (in the order given) from this port, e.g. `system:capture_1`.
    #[arg(long, value_name = "PORT")]
    pub connect_in: Vec<String>,
    /// Connect output i (in the order given) to this port, e.g. `system:playback_1`.
    #[arg(long, value_name = "PORT")]
    pub connect_out: Vec<String>,
    /// Partitioning of the IR: auto, uniform, tuned, or explicit levels SIZExCOUNT,...
    #[arg(long, default_value = "auto", value_parser = sluice_conv::parse_partitioning)]
    pub partitioning: Partitioning,
    /// Longest accepted impulse response, in frames.
    #[arg(long, default_value_t = 1 << 22, value_name = "FRAMES")]
    pub max_ir_len: usize,
    /// Crossfade length of an IR change (SIGHUP), in milliseconds.
    #[arg(long, default_value_t = 50.0, value_name = "MS")]
    pub crossfade: f64,
    /// Print the statistics line every this many seconds (0: only at the end).
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub stats: f64,
    /// Stop after this many seconds (default: run until SIGINT).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
}

/// The spec from flags or from a config file, and the IR sample rate.
fn load(args: &LiveConvolveArgs) -> anyhow::Result<LiveSpec> {
    let mut spec = if let Some(config) = &args.config {
        let cfg = sluice_audio::jconvolver::Config::load(config)?;
        for note in &cfg.notes {
            eprintln!("sluice live: note: {note}");
        }
        let mut spec = cfg.to_spec()?;
        if !args.connect_in.is_empty() || !args.connect_out.is_empty() {
            spec.connect_inputs = vec![Vec::new(); spec.irs.inputs()];
            spec.connect_outputs = vec![Vec::new(); spec.irs.outputs()];
        }
        spec
    } else {
        let path = args
            .ir
            .as_ref()
            .expect("clap requires --ir without a config");
        sluice_audio::live_spec_from_wav(path, args.inputs)?
    };
    if !(0.0..=1.0).contains(&args.mix) {
        bail!("--mix must be between 0 and 1, got {}", args.mix);
    }
    if args.config.is_some() && args.mix != 1.0 {
        // A jconvolver matrix has no dry path of its own: input i is the dry source of output i.
        let ni = spec.irs.inputs();
        spec.dry_sources = (0..spec.irs.outputs())
            .map(|o| (o < ni).then_some(o))
            .collect();
    }
    spec.mix = args.mix;
    spec.gain = 10f64.powf(args.gain / 20.0) as f32;
    if let Some(n) = &args.name {
        spec.client_name = n.clone();
    }
    if args.server.is_some() {
        spec.server = args.server.clone();
    }
    spec.partitioning = args.partitioning.clone();
    spec.max_ir_len = args.max_ir_len;
    if args.connect_in.len() > spec.irs.inputs() {
        bail!(
            "{} --connect-in ports given for {} inputs",
            args.connect_in.len(),
            spec.irs.inputs()
        );
    }
    if args.connect_out.len() > spec.irs.outputs() {
        bail!(
            "{} --connect-out ports given for {} outputs",
            args.connect_out.len(),
            spec.irs.outputs()
        );
    }
    for (i, p) in args.connect_in.iter().enumerate() {
        spec.connect_inputs[i].push(p.clone());
    }
    for (o, p) in args.connect_out.iter().enumerate() {
        spec.connect_outputs[o].push(p.clone());
    }
    Ok(spec)
}

/// Runs `sluice live …`.
pub fn run(cmd: LiveCommand) -> anyhow::Result<()> {
    match cmd {
        LiveCommand::Convolve(args) => convolve(args),
    }
}

fn convolve(args: LiveConvolveArgs) -> anyhow::Result<()> {
    let spec = load(&args)?;
    {
        use sluice_os::signals::{catch, Repeat, SIGHUP, SIGINT, SIGTERM};
        catch(&[SIGINT, SIGTERM, SIGHUP], Repeat::Every)?;
    }
    let crossfade = Duration::from_secs_f64(args.crossfade.clamp(0.0, 60_000.0) / 1000.0);
    let live = LiveConvolver::start(spec, crossfade)?;
    let s = live.stats();
    eprintln!(
        "sluice live: client ready, inputs {}, outputs {}; period {} frames at {} Hz, latency {} \
         frames; level workers {}",
        live.input_ports().join(" "),
        live.output_ports().join(" "),
        s.block,
        s.rate,
        s.latency,
        match live.worker_priority() {
            Some(p) => format!("at SCHED_FIFO priority {p} (below JACK's)"),
            None => "at normal priority (JACK is not in real-time mode)".into(),
        }
    );
    let start = Instant::now();
    let mut freewheel = false;
    let mut next_stats = start + Duration::from_secs_f64(args.stats.max(0.0));
    let reason = loop {
        std::thread::sleep(Duration::from_millis(20));
        live.collect_garbage();
        match sluice_os::signals::take() {
            Some(sluice_os::signals::SIGHUP) => reload(&args, &live),
            Some(s) => break sluice_os::signals::name(s),
            None => {}
        }
        if live.freewheel() != freewheel {
            freewheel = !freewheel;
            eprintln!(
                "sluice live: freewheel {}",
                if freewheel {
                    "on: late levels are waited for (exact output)"
                } else {
                    "off: late levels are left out and counted"
                }
            );
        }
        if live.sample_rate_changed() {
            eprintln!("sluice live: the server's sample rate changed; reloading the IRs");
            reload(&args, &live);
        }
        if let Some(why) = live.failure() {
            eprintln!("sluice live: {}", live.stats());
            bail!("{why}");
        }
        if args
            .duration
            .is_some_and(|d| start.elapsed().as_secs_f64() >= d)
        {
            break "--duration".to_string();
        }
        if args.stats > 0.0 && Instant::now() >= next_stats {
            eprintln!("sluice live: {}", live.stats());
            next_stats += Duration::from_secs_f64(args.stats);
        }
    };
    let stats = live.stop();
    eprintln!("sluice live: stopped by {reason}: {stats}");
    Ok(())
}

/// Reloads the IR files and crossfades to them; errors are reported and the old IRs kept.
fn reload(args: &LiveConvolveArgs, live: &LiveConvolver) {
    match load(args).and_then(|spec| Ok(live.change_irs(&spec.irs)?)) {
        Ok(()) => eprintln!("sluice live: impulse responses reloaded"),
        Err(e) => eprintln!("sluice live: reload failed, keeping the old IRs: {e:#}"),
    }
}
