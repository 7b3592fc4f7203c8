//! `sluice bench copy`: the copy engine against glibc `memcpy`/`memset` and the machine's
//! memory bandwidth, all in one run; `--calibrate` measures the break-even table instead.
//!
//! Figures (each a median of `--trials` trials):
//! * **bandwidth**: every core copying its own 128 MiB buffer with `memcpy` at once;
//! * **large**: one engine worker copying ≥ 32 MiB against `memcpy` on the caller's core;
//! * **overlap**: a copy handed to one engine worker while the caller runs a 64-tap real FIR
//!   on c32 over as many bytes, against `memcpy` then the FIR on one thread; also how much
//!   the FIR slowed down;
//! * **transpose** 4096×4096 c32, **rotate** 90° 2048×2048 u32, **fill** 1 GiB: against
//!   `memcpy` / `memset` of the same bytes (and a naive transpose loop);
//! * **small**: 64 B-4 KiB copies through the engine's API against inline `memcpy`.

mod calibrate;
mod figures;

use std::path::PathBuf;

use super::report::machine_description;

/// Arguments of `sluice bench copy`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchCopyArgs {
    /// Measure the break-even table (caller cost of handing off vs doing it inline, per
    /// operation and size), print it and store it for this machine.
    #[arg(long)]
    pub calibrate: bool,
    /// With --calibrate: print the table but do not store it.
    #[arg(long)]
    pub no_store: bool,
    /// Output directory for CSV, JSON and PNG files (default: target/bench/copy).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Sizes in MiB of the overlap and large-copy figures (large uses those ≥ 32).
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64,256,1024")]
    pub sizes: Vec<usize>,
    /// Trials per point (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub trials: usize,
    /// Side of the square c32 matrix of the transpose figure.
    #[arg(long, default_value_t = 4096)]
    pub transpose_side: usize,
    /// Side of the square u32 image of the rotation figure.
    #[arg(long, default_value_t = 2048)]
    pub rotate_side: usize,
    /// MiB of the fill figure.
    #[arg(long, default_value_t = 1024)]
    pub fill_mib: usize,
    /// CPU to pin the engine's worker to (none: unpinned).
    #[arg(long)]
    pub engine_cpu: Option<usize>,
}

/// Runs the benchmark or the calibration.
pub fn run(args: BenchCopyArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.trials >= 1, "--trials must be at least 1");
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/bench/copy"));
    println!("# bench copy on {}", machine_description());
    let out = crate::report::results_dir(&out)?;
    if args.calibrate {
        calibrate::run(&args, &out)
    } else {
        figures::run(&args, &out)
    }
}
