//! `sluice bench …`: benchmarks that print a table, write CSV/JSON, and compare in one run.

mod chain;
mod convolve;
pub mod report;

use clap::Subcommand;

/// The benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Copy chain (source -> head -> k copies -> sink) on mirrored and copying queues vs GNU Radio.
    Chain(chain::BenchChainArgs),
    /// Partitioned convolution: offline, real-time and max-channels figures.
    Convolve(convolve::BenchConvolveArgs),
}

/// Runs one benchmark.
pub fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Chain(args) => chain::run(args),
        BenchCommand::Convolve(args) => convolve::run(args),
    }
}
