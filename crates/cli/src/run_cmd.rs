//! `sluice run [GRAPH.toml]`: runs a graph file, or the built-in default graph.

use crate::progress_line::ProgressLine;
use clap::Args;
use sluice_graph::{LoadedGraph, Override};
use sluice_runtime::control_socket::{self, ControlSocket};
use sluice_runtime::{Progress, RunOptions, Scheduler, StopHandle};
use std::path::PathBuf;
use std::time::Duration;

/// The graph `sluice run` runs when given no file (examples/default.toml).
pub const DEFAULT_GRAPH: &str = include_str!("../../../examples/default.toml");

/// Arguments of `sluice run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Graph file (TOML); without one, runs the built-in default graph (examples/default.toml).
    pub graph: Option<PathBuf>,
    /// Override a node's parameter without editing the file: `--set src.frequency=440`
    /// (repeatable; the value is TOML: `440`, `"c32"`, `[1, 2]`, or a bare word for text).
    #[arg(long = "set", value_name = "NODE.PARAM=VALUE")]
    pub overrides: Vec<Override>,
    /// Print per-node statistics (items, rate, busy and waiting time) at the end.
    #[arg(long)]
    pub stats: bool,
    /// Only check the graph (file, parameters, connections, cycles, queues) and exit: nothing
    /// runs and no file is written.
    #[arg(long, conflicts_with_all = ["stats", "stepped", "threads", "thread_per_node", "http"])]
    pub check: bool,
    /// Run every node on the calling thread in turn (deterministic) instead of on threads.
    #[arg(long, conflicts_with_all = ["threads", "thread_per_node", "http"])]
    pub stepped: bool,
    /// Run the nodes on this many threads, each working a contiguous group of nodes in turn.
    /// Without it (and without --thread-per-node) sluice measures the nodes for 15 ms on one
    /// thread and splits them over more cores only where that pays (and keeps the split only if
    /// it runs faster).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,
    /// Give every node a thread of its own (the Computational Process Network model).
    #[arg(long, conflicts_with = "threads")]
    pub thread_per_node: bool,
    /// Pin threads to the CPUs this process may use (thread i on the i-th allowed CPU).
    #[arg(long)]
    pub pin: bool,
    /// Ask for SCHED_FIFO at this priority (1-99) for every node thread.
    #[arg(long, value_name = "PRIORITY", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub rt_priority: Option<i32>,
    /// Listen on this Unix socket for commands while the graph runs: `sluice ctl SOCKET set
    /// NODE.PARAM=VALUE` changes a parameter (those `sluice blocks NAME` marks settable),
    /// `sluice ctl SOCKET stop` stops the graph gracefully. An existing path that is not a
    /// socket is refused; the socket is removed when the run ends.
    #[arg(long, value_name = "SOCKET", conflicts_with = "check")]
    pub control: Option<PathBuf>,
    /// Seconds with every node blocked and nothing moving before the run stops as a deadlock.
    #[arg(long, default_value_t = 1.0)]
    pub deadlock_timeout: f64,
    /// The web console (--http and its TLS and token flags).
    #[command(flatten)]
    pub console: crate::console_args::HttpArgs,
    /// Do not show the progress line (it is shown only on a terminal, and not with --stepped).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Arguments of `sluice graph`.
#[derive(Args, Debug)]
pub struct GraphArgs {
    /// Graph file (TOML); without one, the built-in default graph.
    pub graph: Option<PathBuf>,
    /// Print the graph as Graphviz DOT on standard output.
    #[arg(long, required = true)]
    pub dot: bool,
    /// Override a node's parameter, as for `sluice run`.
    #[arg(long = "set", value_name = "NODE.PARAM=VALUE")]
    pub overrides: Vec<Override>,
}

/// Reads and loads the graph file (or the built-in default), with overrides.
fn load(graph: Option<&PathBuf>, overrides: &[Override]) -> anyhow::Result<LoadedGraph> {
    let (text, origin) = match graph {
        Some(path) => (sluice_graph::read(path)?, path.display().to_string()),
        None => (
            DEFAULT_GRAPH.to_string(),
            "built-in default graph".to_string(),
        ),
    };
    let registry = crate::registry();
    Ok(sluice_graph::load_with(
        &text, &origin, &registry, overrides,
    )?)
}

/// Runs `sluice graph --dot`.
pub fn graph(args: GraphArgs) -> anyhow::Result<()> {
    let loaded = load(args.graph.as_ref(), &args.overrides)?;
    print!("{}", loaded.to_dot());
    Ok(())
}

/// Runs `sluice run`.
pub fn run(args: RunArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.control {
        control_socket::refuse_non_socket(path)?;
    }
    let loaded = load(args.graph.as_ref(), &args.overrides)?;
    let LoadedGraph { graph, source } = loaded;
    let origin = source.origin.clone();
    // The location becomes context, so the run's error (and the node error and I/O error under
    // it) stays in the chain; `main` prints the chain as one line.
    let located = |e: sluice_runtime::RuntimeError| {
        let at = source.locate(&e);
        anyhow::Error::new(e).context(at.trim_end_matches(": ").to_string())
    };
    if args.check {
        graph
            .check()
            .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        eprintln!("sluice: {origin}: the graph is valid (nothing was run or written)");
        return Ok(());
    }
    // Ctrl-C or SIGTERM stops the graph gracefully: sources end, sinks finish their files.
    let stop = StopHandle::new();
    // Live changes (new branches, replaced nodes) come through the control socket.
    let live = sluice_runtime::LiveGraph::new();
    let changes = std::sync::Arc::new(crate::graph_changes::GraphChanges::new(
        live.clone(),
        crate::registry(),
    ));
    let socket = match &args.control {
        Some(path) => Some(ControlSocket::bind_with(
            path,
            graph.control_handle(),
            stop.clone(),
            (!args.stepped).then(|| changes.clone() as std::sync::Arc<_>),
        )?),
        None => None,
    };
    eprintln!("sluice: running {origin}");
    if let Some(path) = &args.control {
        eprintln!(
            "sluice: control socket {} (sluice ctl {} --help: set, list, attach, detach, replace, stop)",
            path.display(),
            path.display()
        );
    }
    let control_handle = graph.control_handle();
    let signals = sluice_runtime::os::stop_on_signals(stop.clone());
    let result = if args.stepped {
        graph.run_stepped_with(&stop)
    } else {
        let progress = Progress::new();
        let monitor = sluice_runtime::Monitor::new();
        let _console = args.console.start(sluice_web::RunHandles {
            control: control_handle.clone(),
            stop: stop.clone(),
            progress: progress.clone(),
            monitor: monitor.clone(),
            title: origin.clone(),
        })?;
        let _line = (!args.quiet).then(|| ProgressLine::start(progress.clone()));
        let opts = RunOptions {
            scheduler: match (args.threads, args.thread_per_node) {
                (Some(n), _) => Scheduler::Pooled(n as usize),
                (None, true) => Scheduler::ThreadPerNode,
                (None, false) => Scheduler::Auto,
            },
            pin_cores: args.pin,
            realtime_priority: args.rt_priority,
            deadlock_timeout: Duration::from_secs_f64(args.deadlock_timeout.max(0.05)),
            stop: Some(stop.clone()),
            progress: Some(progress),
            monitor: Some(monitor),
            spared_by_stop: Vec::new(),
        };
        graph.run_live(&opts, &live)
    };
    // The socket goes first: nobody can send to a graph that has ended.
    let stopped_by_socket = socket.as_ref().is_some_and(ControlSocket::stopped_here);
    drop(socket);
    changes.finish();
    let report = result.map_err(located)?;
    for w in &report.warnings {
        eprintln!("sluice: warning: {w}");
    }
    for node in &report.nodes {
        for w in &node.warnings {
            let at = source.locate_node(&node.name);
            eprintln!("sluice: warning: {at}node '{}': {w}", node.name);
        }
    }
    let moved: u64 = report.nodes.iter().map(|n| n.items_out).sum();
    eprintln!(
        "sluice: {} nodes finished in {:.3} s, {} items produced in all",
        report.nodes.len(),
        report.wall.as_secs_f64(),
        moved
    );
    let signal = signals.signal().filter(|_| report.stopped);
    drop(signals);
    if args.stats || signal.is_some() {
        print!("{}", report.render());
    }
    if signal.is_none() && stopped_by_socket && report.stopped {
        eprintln!(
            "sluice: stopped by `stop` on the control socket: the sources were ended, every \
             sink finished its file"
        );
    }
    if let Some(signal) = signal {
        let name = sluice_os::signals::name(signal);
        eprintln!(
            "sluice: stopped by {name}: the sources were ended, every sink finished its file"
        );
        // The shell's convention for a process ended by a signal: 128 + its number.
        std::process::exit(128 + signal);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_graph_loads_and_has_the_documented_level() {
        let text = DEFAULT_GRAPH.replace("20_000_000", "200_000");
        let registry = sluice_blocks::graph_blocks::standard_registry();
        let report = sluice_graph::load_str(&text, "default", &registry)
            .unwrap()
            .run_stepped()
            .unwrap();
        assert_eq!(report.node("probe").unwrap().items_in, 200_000);
    }
}
