//! The `sluice` command: run process-network graphs, convolve audio, benchmark.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![forbid(unsafe_code)]

mod amps_cmd;
mod cluster_cmd;
mod cluster_run_cmd;
mod console_args;
mod convolve;
mod ctl_cmd;
mod devices_cmd;
mod graph_changes;
mod key_cmd;
mod live_cmd;
mod probe_cmd;
mod probe_report;
mod progress_line;
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
    /// Talk to a running graph through its control socket (`sluice run GRAPH --control
    /// SOCKET`): change a parameter while it runs, list what can be changed, or stop it.
    Ctl(ctl_cmd::CtlArgs),
    /// List every block type with its ports, parameters and one line of help, or describe one.
    Blocks(BlocksArgs),
    /// Check a graph file and draw it as Graphviz DOT (`sluice graph --dot g.toml | dot -Tpng`).
    Graph(run_cmd::GraphArgs),
    /// Convolve a WAV file with an impulse response (partitioned convolution).
    Convolve(convolve::ConvolveArgs),
    /// Live audio on a JACK server: `sluice live convolve` (a jconvolver replacement).
    #[command(subcommand)]
    Live(live_cmd::LiveCommand),
    /// The seed's latency and jitter experiment: a loop of processes (origin, reflectors)
    /// over sluice-net streams, per-packet latency, mean, jitter, percentiles and a plot.
    #[command(subcommand)]
    Probe(probe_cmd::ProbeCommand),
    /// The AMPS whole-band example: generate a band (`sluice amps generate`), print bins.
    #[command(subcommand)]
    Amps(amps_cmd::AmpsCommand),
    /// Run a cluster worker: it registers in etcd and runs the partitions `sluice cluster run`
    /// sends it (only controllers that prove the cluster key).
    Worker(cluster_cmd::WorkerArgs),
    /// One graph over several machines: local namespace clusters (`up`, `down`), `status`,
    /// `plan` (how a graph splits over its hosts) and `run`.
    #[command(subcommand)]
    Cluster(cluster_cmd::ClusterCommand),
    /// Key files of the secure channel: `sluice key new FILE` (an identity), `sluice key new
    /// --cluster FILE` (a cluster key), `sluice key public FILE` (a peers file's line).
    #[command(subcommand)]
    Key(key_cmd::KeyCommand),
    /// Run a benchmark; each compares with its baseline or peer in the same run.
    #[command(subcommand)]
    Bench(sluice_bench::BenchCommand),
    /// The radios SoapySDR finds, or one device's channels, ranges, gains and antennas
    /// (`--probe ARGS`), as text or JSON.
    Devices(devices_cmd::DevicesArgs),
}

/// Arguments of `sluice blocks`.
#[derive(clap::Args)]
struct BlocksArgs {
    /// Describe only this block type, with an example entry for a graph file.
    name: Option<String>,
    /// Print the block types as JSON (name, help, ports, parameters, files, example).
    #[arg(long, conflicts_with = "name")]
    json: bool,
    /// Print the reference of every block type in Markdown (what docs/blocks.md holds).
    #[arg(long, conflicts_with_all = ["name", "json"])]
    markdown: bool,
}

/// The block types graph files may use: the standard blocks, the network endpoints and the
/// gr-zeromq-compatible ZeroMQ blocks.
pub(crate) fn registry() -> sluice_graph::Registry {
    sluice_registry::standard_registry()
}

fn blocks(args: BlocksArgs) -> anyhow::Result<()> {
    let registry = registry();
    if args.markdown {
        print!("{}", registry.reference_markdown());
        return Ok(());
    }
    match (args.name, args.json) {
        (_, true) => println!("{}", registry.to_json()),
        (Some(name), false) => match registry.describe_one(&name) {
            Some(text) => print!("{text}"),
            None => anyhow::bail!("no block type '{name}' ({})", registry.hint(&name)),
        },
        (None, false) => print!("{}", registry.describe()),
    }
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run_cmd::run(args),
        Command::Ctl(args) => ctl_cmd::ctl(args),
        Command::Blocks(args) => blocks(args),
        Command::Graph(args) => run_cmd::graph(args),
        Command::Convolve(args) => convolve::run(args),
        Command::Live(cmd) => live_cmd::run(cmd),
        Command::Probe(cmd) => probe_cmd::run(cmd),
        Command::Amps(cmd) => amps_cmd::run(cmd),
        Command::Worker(args) => cluster_cmd::worker(args),
        Command::Cluster(cmd) => cluster_cmd::run(cmd),
        Command::Key(cmd) => key_cmd::run(cmd),
        Command::Bench(cmd) => sluice_bench::run(cmd),
        Command::Devices(args) => devices_cmd::devices(args),
    };
    if let Err(err) = result {
        // A graph file's mistakes come one per line: each gets the prefix.
        for line in one_line(&err).lines() {
            eprintln!("sluice: error: {line}");
        }
        std::process::exit(1);
    }
}

/// The error and its causes on one line, each cause once: many errors already quote their
/// cause (`x.wav: cannot read: No such file…`), and repeating it would say it twice.
fn one_line(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_that_quotes_its_cause_says_it_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let wav = sluice_formats::wav::WavError::Io {
            path: "x.wav".into(),
            source: io,
        };
        let err = anyhow::Error::new(wav).context("reading the input");
        assert_eq!(
            one_line(&err),
            "reading the input: x.wav: cannot read: entity not found"
        );
    }

    /// A node's failure reaches the user as one line with its location, and the I/O error
    /// under it stays in the chain (as `run_cmd` wraps a run's error).
    #[test]
    fn a_failed_node_is_one_line_and_keeps_its_io_error() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let run = sluice_runtime::RuntimeError::NodeFailed {
            node: "src".into(),
            source: sluice_runtime::NodeError::caused("cannot open x.cf32", io),
        };
        let err = anyhow::Error::new(run).context("g.toml:3");
        assert_eq!(
            one_line(&err),
            "g.toml:3: node 'src' failed: cannot open x.cf32: entity not found"
        );
        let io = err.chain().find_map(|c| c.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound)
        );
    }
}
