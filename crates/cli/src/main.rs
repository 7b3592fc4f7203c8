//! The `sluice` command: run process-network graphs, convolve audio, benchmark.

mod bench;
mod convolve;
mod dsp_blocks;
mod graph_file;
mod params;
mod registry;
mod run_cmd;

use clap::{Parser, Subcommand};

/// sluice: a runtime for native signal processing.
#[derive(Parser)]
#[command(name = "sluice", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a graph file (TOML), or the built-in default graph when none is given.
    Run(run_cmd::RunArgs),
    /// List every block type with its ports, parameters and one line of help.
    Blocks,
    /// Convolve a WAV file with an impulse response (partitioned convolution).
    Convolve(convolve::ConvolveArgs),
    /// Run a benchmark; each compares with its baseline or peer in the same run.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run_cmd::run(args),
        Command::Blocks => {
            print!("{}", registry::describe());
            Ok(())
        }
        Command::Convolve(args) => convolve::run(args),
        Command::Bench(cmd) => bench::run(cmd),
    };
    if let Err(err) = result {
        eprintln!("sluice: error: {err:#}");
        std::process::exit(1);
    }
}
