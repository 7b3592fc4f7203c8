//! `sluice cluster plan` and `sluice cluster run`: a graph split over a cluster's hosts.

use crate::cluster_cmd::{registered_workers, target, ClusterRef};
use anyhow::bail;
use clap::Args;
use sluice_cluster::control::{self, ControlOptions, HostStatus, LeaseOptions};
use sluice_cluster::membership;
use sluice_cluster::placement::{self, PlanOptions};
use sluice_graph::Override;
use sluice_runtime::StopHandle;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Arguments of `sluice cluster plan`.
#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Graph file whose nodes name their hosts.
    pub graph: PathBuf,
    /// The cluster whose workers give the hosts' addresses, looked up as `sluice cluster run`
    /// does (hosts without `address = ...` in the file need it). Without --cluster or --etcd,
    /// only the file's own addresses are used.
    #[command(flatten)]
    pub cluster: ClusterRef,
    /// Override a node's parameter, as for `sluice run`.
    #[arg(long = "set", value_name = "NODE.PARAM=VALUE")]
    pub overrides: Vec<Override>,
    /// Port of the first stream between hosts (the next ones count up).
    #[arg(long, default_value_t = 7400)]
    pub first_port: u16,
}

/// Arguments of `sluice cluster run`.
#[derive(Args, Debug)]
pub struct ClusterRunArgs {
    /// Graph file whose nodes name their hosts.
    pub graph: PathBuf,
    #[command(flatten)]
    pub cluster: ClusterRef,
    /// Override a node's parameter, as for `sluice run`.
    #[arg(long = "set", value_name = "NODE.PARAM=VALUE")]
    pub overrides: Vec<Override>,
    /// Port of the first stream between hosts (the next ones count up).
    #[arg(long, default_value_t = 7400)]
    pub first_port: u16,
    /// Print each host's per-node statistics at the end.
    #[arg(long)]
    pub stats: bool,
    /// Seconds to wait for a worker to answer (connection, key check, loading).
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
    /// The controller's identity file (`sluice key new`), for workers started with
    /// --controllers.
    #[arg(long)]
    pub identity: Option<PathBuf>,
    /// The members file: each worker's public key and host name (`sluice key public FILE
    /// --name HOST`, one line each). A worker is trusted only under its listed name, whatever
    /// address etcd holds for it.
    #[arg(long)]
    pub members: Option<PathBuf>,
    /// Do not show the live table.
    #[arg(long, short)]
    pub quiet: bool,
    /// The web console (--http and its TLS and token flags), watching every host.
    #[command(flatten)]
    pub console: crate::console_args::HttpArgs,
}

/// Host name → address, from the workers registered in the cluster (their control
/// addresses' IPs): how `plan` and `run` find hosts the graph file gives no address.
fn worker_addresses(workers: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    workers
        .iter()
        .filter_map(|(name, control)| {
            let ip = control.parse::<SocketAddr>().ok()?.ip();
            Some((name.clone(), ip.to_string()))
        })
        .collect()
}

/// Runs `sluice cluster plan`: prints each host's partition.
pub fn plan(args: PlanArgs) -> anyhow::Result<()> {
    let text = sluice_graph::read(&args.graph)?;
    let addresses = if args.cluster.cluster.is_some() || args.cluster.etcd.is_some() {
        let t = target(&args.cluster)?;
        worker_addresses(&registered_workers(&t.etcd, &t.name)?)
    } else {
        Default::default()
    };
    let opts = PlanOptions {
        first_port: args.first_port,
        overrides: args.overrides,
        addresses,
        ..PlanOptions::default()
    };
    let plan = placement::plan(
        &text,
        &args.graph.display().to_string(),
        &crate::registry(),
        &opts,
    )?;
    for s in &plan.streams {
        println!(
            "# stream {} on port {} ({}{})",
            s.describe(),
            s.port,
            s.item,
            vlen_text(s.vlen)
        );
    }
    for (primary, standby) in plan.standbys() {
        println!("# standby: host {standby} runs a hot copy of host {primary}'s partition and takes over when {primary} fails");
    }
    for p in &plan.partitions {
        let role = match (&p.standby, &p.standby_of) {
            (Some(s), _) => format!(" [standby {s}]"),
            (_, Some(primary)) => format!(" [hot standby of {primary}]"),
            _ => String::new(),
        };
        println!(
            "\n# ---- host {} ({}){role}: {}\n{}",
            p.host,
            p.address,
            p.nodes.join(", "),
            p.text
        );
    }
    Ok(())
}

fn vlen_text(vlen: usize) -> String {
    if vlen > 1 {
        format!("[{vlen}]")
    } else {
        String::new()
    }
}

/// Runs `sluice cluster run`.
pub fn run_graph(args: ClusterRunArgs) -> anyhow::Result<()> {
    let t = target(&args.cluster)?;
    let workers = registered_workers(&t.etcd, &t.name)?;
    let addresses = worker_addresses(&workers);
    let text = sluice_graph::read(&args.graph)?;
    let origin = args.graph.display().to_string();
    let plan = placement::plan(
        &text,
        &origin,
        &crate::registry(),
        &PlanOptions {
            first_port: args.first_port,
            overrides: args.overrides.clone(),
            addresses,
            // Each worker passes its own key file to its streams.
            stream_security: Default::default(),
        },
    )?;
    let run = format!("{}-{}", std::process::id(), unix_seconds());
    let partitions: Vec<(String, String)> = plan
        .partitions
        .iter()
        .map(|p| (p.host.clone(), p.text.clone()))
        .collect();
    let record = membership::RunRecord::write(&t.etcd, &t.name, &run, &partitions)?;
    eprintln!(
        "sluice: running {origin} on cluster {}: {} hosts, {} streams between them",
        t.name,
        plan.partitions.len(),
        plan.streams.len()
    );
    for (primary, standby) in plan.standbys() {
        eprintln!("sluice: host {standby} is the hot standby of host {primary}");
    }
    let stop = StopHandle::new();
    let signals = sluice_runtime::os::stop_on_signals(stop.clone());
    let opts = ControlOptions {
        run,
        key: t.key.clone(),
        identity: match &args.identity {
            Some(p) => Some(std::sync::Arc::new(sluice_net::secure::Identity::load(p)?)),
            None => None,
        },
        members: match &args.members {
            Some(p) => Some(std::sync::Arc::new(sluice_net::secure::Peers::load(p)?)),
            None => None,
        },
        timeout: Duration::from_secs_f64(args.timeout.max(0.1)),
        cwd: std::env::current_dir()?.display().to_string(),
        stop: stop.clone(),
        // The pairs' partition leases live in the cluster's etcd, as the workers reach it.
        leases: Some(LeaseOptions::new(t.etcd.url(), &t.name)),
    };
    // The console's view is filled below as the hosts report; its stop button stops the run
    // as Ctrl-C does.
    let view = sluice_web::ClusterView::new();
    let console = args.console.start(sluice_web::ClusterHandles {
        view: view.clone(),
        stop: stop.clone(),
        title: origin.clone(),
    })?;
    let live = !args.quiet && std::io::stderr().is_terminal();
    let mut drawn_lines = 0usize;
    let mut last_draw = Instant::now();
    let report = control::run(&plan, &workers, &opts, |hosts: &[HostStatus]| {
        if console.is_some() {
            view.update(&hosts.iter().map(host_report).collect::<Vec<_>>());
        }
        if live && last_draw.elapsed() > Duration::from_millis(250) {
            last_draw = Instant::now();
            let table = control::render_table(hosts);
            // Redraw in place: up as many lines as last time, clear below.
            if drawn_lines > 0 {
                eprint!("\x1b[{drawn_lines}A\x1b[J");
            }
            eprint!("{table}");
            drawn_lines = table.lines().count();
        }
    })?;
    drop(record);
    drop(console);
    if live && drawn_lines > 0 {
        eprint!("\x1b[{drawn_lines}A\x1b[J");
    }
    eprint!("{}", report.render());
    if args.stats {
        for h in &report.hosts {
            if let Some(control::Outcome::Done { table, .. }) = &h.outcome {
                println!("host {}:\n{table}", h.host);
            }
        }
    }
    for h in &report.hosts {
        if let Some(control::Outcome::Done { warnings, .. }) = &h.outcome {
            for w in warnings {
                eprintln!("sluice: warning: host {}: {w}", h.host);
            }
        }
    }
    for failover in report.failovers() {
        eprintln!("sluice: failed over: {failover} (its partner finished the partition)");
    }
    let signal = signals.signal();
    drop(signals);
    if let Some(failure) = report.first_failure() {
        bail!("{origin}: {failure}");
    }
    eprintln!(
        "sluice: {} hosts finished in {:.3} s",
        report.hosts.len(),
        report.wall_s
    );
    if let Some(signal) = signal {
        eprintln!("sluice: stopped by signal {signal}: every host stopped its sources and finished its files");
        std::process::exit(128 + signal);
    }
    Ok(())
}

/// A host's status as the web console shows it (the console knows no cluster crate).
fn host_report(h: &HostStatus) -> sluice_web::HostReport {
    use control::{Outcome, Partner};
    use sluice_web::{HostState, PartnerLink};
    let (state, message) = match &h.outcome {
        None => (HostState::Running, None),
        Some(Outcome::Done { stopped: true, .. }) => (HostState::Stopped, None),
        Some(Outcome::Done { .. }) => (HostState::Done, None),
        Some(Outcome::Failed(m)) | Some(Outcome::Lost(m)) if h.failed_over => {
            (HostState::FailedOver, Some(m.clone()))
        }
        Some(Outcome::Failed(m)) => (HostState::Failed, Some(m.clone())),
        Some(Outcome::Lost(m)) => (HostState::Lost, Some(m.clone())),
    };
    sluice_web::HostReport {
        host: h.host.clone(),
        elapsed_s: h.elapsed_s,
        cpu_s: h.cpu_s,
        nodes: h
            .nodes
            .iter()
            .map(|n| sluice_web::NodeReport {
                name: n.name.clone(),
                items_in: n.items_in,
                items_out: n.items_out,
            })
            .collect(),
        state,
        message,
        partner: h.partner.as_ref().map(|p| match p {
            Partner::Standby(s) => PartnerLink::Standby(s.clone()),
            Partner::StandbyOf(p) => PartnerLink::StandbyOf(p.clone()),
        }),
        takeovers: h
            .takeovers
            .iter()
            .map(|t| sluice_web::TakeoverReport {
                fence: t.fence.clone(),
                offset: t.offset,
                from_revision: t.from_revision,
                to_revision: t.to_revision,
                lost_unix_s: t.lost_unix_s,
                lost_cause: t.lost_cause.clone(),
                resumed_unix_s: t.resumed_unix_s,
                first_item_unix_s: t.first_item_unix_s,
            })
            .collect(),
        promotion: h.promoted.as_ref().map(|p| sluice_web::PromotionReport {
            fence: p.fence.clone(),
            revision: p.revision,
            after_vanished_ms: p.after_vanished_ms,
            unix_s: p.unix_s,
        }),
    }
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
