//! Prometheus metrics in the text exposition format (version 0.0.4). The names and labels are
//! stable; `docs/console.md` lists them.

use crate::server::Shared;
use std::fmt::Write;

/// A label value escaped as the format requires (backslash, double quote, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// One run whose metrics a page shows, with the labels that tell it from the others (none
/// for the console's single run; `partition` for a worker's).
#[derive(Debug, Clone)]
pub struct WatchedRun {
    /// Extra labels on every sample of this run, `(name, value)`; names must be valid
    /// Prometheus label names (they come from code, values may come from anywhere).
    pub labels: Vec<(String, String)>,
    /// The run's live counts.
    pub progress: sluice_runtime::Progress,
    /// The run's edges.
    pub monitor: sluice_runtime::Monitor,
}

/// The console's metrics page: the run's, and the console's own.
pub(crate) fn render(shared: &Shared) -> String {
    let h = &shared.handles;
    let mut s = render_runs(&[WatchedRun {
        labels: Vec::new(),
        progress: h.progress.clone(),
        monitor: h.monitor.clone(),
    }]);
    let name = "sluice_console_dropped_events_total";
    let _ =
        writeln!(
        s,
        "# HELP {name} Stream events the console dropped because their client read too slowly.\n\
         # TYPE {name} counter\n{name} {}",
        shared.dropped_events.load(std::sync::atomic::Ordering::Relaxed)
    );
    s
}

/// The metrics page of `runs`: one family per metric, each with the samples of every run.
pub(crate) fn render_runs(runs: &[WatchedRun]) -> String {
    let snapshots: Vec<_> = runs
        .iter()
        .map(|r| {
            let extra: String = r
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\",", label(v)))
                .collect();
            (extra, r.progress.snapshot(), r.monitor.edges(), &r.progress)
        })
        .collect();
    let mut s = String::new();
    let mut family = |name: &str, kind: &str, help: &str, rows: Vec<(String, String)>| {
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in rows {
            let labels = labels.trim_end_matches(',');
            if labels.is_empty() {
                let _ = writeln!(s, "{name} {value}");
            } else {
                let _ = writeln!(s, "{name}{{{labels}}} {value}");
            }
        }
    };
    let per_node = |f: &dyn Fn(&sluice_runtime::NodeCounts) -> String| {
        snapshots
            .iter()
            .flat_map(|(extra, nodes, _, _)| {
                nodes
                    .iter()
                    .map(move |n| (format!("{extra}node=\"{}\"", label(&n.name)), f(n)))
            })
            .collect::<Vec<_>>()
    };
    family(
        "sluice_node_items_in_total",
        "counter",
        "Items consumed by the node, summed over its inputs.",
        per_node(&|n| n.items_in.to_string()),
    );
    family(
        "sluice_node_items_out_total",
        "counter",
        "Items produced by the node, summed over its outputs.",
        per_node(&|n| n.items_out.to_string()),
    );
    family(
        "sluice_node_work_calls_total",
        "counter",
        "Calls of the node's work.",
        per_node(&|n| n.work_calls.to_string()),
    );
    family(
        "sluice_node_busy_seconds_total",
        "counter",
        "Time inside the node's work, less pacing sleeps.",
        per_node(&|n| format!("{:.6}", n.busy.as_secs_f64())),
    );
    family(
        "sluice_node_waiting_seconds_total",
        "counter",
        "Time the node waited for input or output room.",
        per_node(&|n| format!("{:.6}", n.waiting.as_secs_f64())),
    );
    family(
        "sluice_node_late_total",
        "counter",
        "Deadlines the node missed (late periods, device buffers it could not serve in time).",
        per_node(&|n| n.troubles.late.to_string()),
    );
    family(
        "sluice_node_dropped_items_total",
        "counter",
        "Items the node lost because the graph fell behind (a real-time source's overflow).",
        per_node(&|n| n.troubles.dropped.to_string()),
    );
    family(
        "sluice_node_underflow_items_total",
        "counter",
        "Items of zeros a real-time sink played because its input came late.",
        per_node(&|n| n.troubles.underflow.to_string()),
    );
    family(
        "sluice_node_errors_total",
        "counter",
        "Errors the node failed with (a node's error stops the run: 0 or 1).",
        per_node(&|n| u8::from(n.error.is_some()).to_string()),
    );
    // Only the nodes that moved bytes over a stream (the network and shared-memory endpoints).
    let bytes = snapshots
        .iter()
        .flat_map(|(extra, nodes, _, _)| {
            nodes
                .iter()
                .filter(|n| !n.bytes.is_zero())
                .flat_map(move |n| {
                    [("sent", n.bytes.sent), ("received", n.bytes.received)]
                        .into_iter()
                        .map(move |(direction, v)| {
                            (
                                format!(
                                    "{extra}node=\"{}\",direction=\"{direction}\"",
                                    label(&n.name)
                                ),
                                v.to_string(),
                            )
                        })
                })
        })
        .collect();
    family(
        "sluice_stream_bytes_total",
        "counter",
        "Bytes the node's stream endpoints sent to and received from their peers.",
        bytes,
    );
    let per_edge = |f: &dyn Fn(&sluice_runtime::TapPoint) -> String| {
        snapshots
            .iter()
            .flat_map(|(extra, _, edges, _)| {
                edges.iter().map(move |e| {
                    (
                        format!(
                            "{extra}node=\"{}\",port=\"{}\"",
                            label(&e.node),
                            label(&e.port)
                        ),
                        f(e),
                    )
                })
            })
            .collect::<Vec<_>>()
    };
    family(
        "sluice_port_items_out_total",
        "counter",
        "Items written to the output port's queue.",
        per_edge(&|e| e.items_written().to_string()),
    );
    family(
        "sluice_queue_fill_items",
        "gauge",
        "Items in the output port's queue not yet read by its slowest reader.",
        per_edge(&|e| e.fill().to_string()),
    );
    family(
        "sluice_queue_capacity_items",
        "gauge",
        "Capacity of the output port's queue in items.",
        per_edge(&|e| e.capacity().to_string()),
    );
    family(
        "sluice_taps",
        "gauge",
        "Taps (live views) attached to the output port's queue.",
        per_edge(&|e| e.taps().to_string()),
    );
    let fractions = snapshots
        .iter()
        .map(|(extra, _, _, progress)| {
            let f = progress
                .leading()
                .map_or(String::from("NaN"), |(_, f)| f.to_string());
            (extra.clone(), f)
        })
        .collect();
    family(
        "sluice_run_progress_ratio",
        "gauge",
        "How far a finite run has come (0 to 1; NaN when endless).",
        fractions,
    );
    s
}
