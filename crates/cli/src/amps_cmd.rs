//! `sluice amps`: the AMPS whole-band example's helpers: generate a band, print channel bins.

use anyhow::{bail, Context};
use sluice_amps::{self as amps, BandConfig};
use std::path::PathBuf;
use std::time::Instant;

/// The `sluice amps` verbs.
#[derive(clap::Subcommand)]
pub enum AmpsCommand {
    /// Write a 20 M samples/s AMPS band centred on 875 MHz as SigMF (cf32_le): FM voice
    /// channels (±12 kHz, 75 µs pre-emphasis) each carrying its own synthetic talker, carrier
    /// offsets of a few hundred Hz, noise at a chosen C/N in 30 kHz. Receive it with
    /// `sluice run examples/amps_receiver.toml`.
    Generate(GenerateArgs),
    /// Print the channelizer bins (`outputs` of examples/amps_receiver.toml) of channels.
    Bins {
        /// Channel numbers, 1-333.
        #[arg(required = true)]
        channels: Vec<usize>,
    },
}

/// Arguments of `sluice amps generate`.
#[derive(clap::Args)]
pub struct GenerateArgs {
    /// The recording's name: writes NAME.sigmf-meta and NAME.sigmf-data.
    #[arg(default_value = "amps_band")]
    path: PathBuf,
    /// Seconds of band (20 M samples, 160 MB, per second).
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Occupied channels (1-333, comma-separated, ranges as 5-9); all by default.
    #[arg(long, value_delimiter = ',')]
    channels: Vec<String>,
    /// Carrier-to-noise ratio in 30 kHz, dB.
    #[arg(long, default_value_t = 25.0)]
    cn_db: f64,
    /// No noise at all.
    #[arg(long, conflicts_with = "cn_db")]
    no_noise: bool,
    /// Do not pre-emphasise the audio (then receive with the de-emphasis node removed).
    #[arg(long)]
    no_preemphasis: bool,
    /// Largest carrier offset, Hz (each channel draws one in ±this).
    #[arg(long, default_value_t = 300.0)]
    max_offset_hz: f64,
    /// Seed of the carrier offsets and the noise.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn parse_channels(list: &[String]) -> anyhow::Result<Vec<usize>> {
    if list.is_empty() {
        return Ok((1..=amps::CHANNELS).collect());
    }
    let mut out = Vec::new();
    for item in list {
        let num = |s: &str| {
            s.trim()
                .parse::<usize>()
                .with_context(|| format!("--channels: '{item}' is not a channel number or range"))
        };
        match item.split_once('-') {
            Some((a, b)) => out.extend(num(a)?..=num(b)?),
            None => out.push(num(item)?),
        }
    }
    if let Some(bad) = out.iter().find(|&&n| n == 0 || n > amps::CHANNELS) {
        bail!("--channels: channel {bad} is not on the AMPS raster (1-333)");
    }
    Ok(out)
}

/// Runs `sluice amps …`.
pub fn run(cmd: AmpsCommand) -> anyhow::Result<()> {
    match cmd {
        AmpsCommand::Bins { channels } => {
            if let Some(bad) = channels.iter().find(|&&n| n == 0 || n > amps::CHANNELS) {
                bail!("channel {bad} is not on the AMPS raster (1-333)");
            }
            let bins: Vec<String> = amps::bins(&channels)
                .iter()
                .map(|b| b.to_string())
                .collect();
            println!("[{}]", bins.join(", "));
            Ok(())
        }
        AmpsCommand::Generate(args) => {
            if !(args.seconds > 0.0 && args.seconds <= 600.0) {
                bail!("--seconds must be between 0 and 600, not {}", args.seconds);
            }
            let channels = parse_channels(&args.channels)?;
            let count = channels.len();
            let config = BandConfig {
                channels,
                cn_db: (!args.no_noise).then_some(args.cn_db),
                preemphasis: !args.no_preemphasis,
                max_offset_hz: args.max_offset_hz,
                seed: args.seed,
                ..BandConfig::default()
            };
            let start = Instant::now();
            amps::write_band(&args.path, config, args.seconds)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("generating the band {}", args.path.display()))?;
            let took = start.elapsed().as_secs_f64();
            println!(
                "wrote {}.sigmf-meta/-data: {} s at 20 M samples/s, {count} channels, in {took:.1} s ({:.2}x real time)",
                args.path.display(),
                args.seconds,
                args.seconds / took
            );
            Ok(())
        }
    }
}
