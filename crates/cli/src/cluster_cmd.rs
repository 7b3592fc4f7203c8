//! `sluice worker` and `sluice cluster …`: one graph over several machines.
//!
//! Membership lives in etcd: each worker keeps `/sluice/CLUSTER/workers/NAME` (its control
//! address) alive under a lease, so a dead worker disappears within the lease's TTL. A run
//! records its placement under `/sluice/CLUSTER/runs/RUN/` while it lasts.

use crate::cluster_run_cmd::{ClusterRunArgs, PlanArgs};
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use sluice_cluster::etcd::{Etcd, EtcdAccess};
use sluice_cluster::local::{self, LocalCluster, LocalOptions, WorkerSpec};
use sluice_cluster::membership::{self, RegistrationEvent};
use sluice_cluster::worker::{Worker, WorkerOptions};
use sluice_net::auth::ClusterKey;
use sluice_runtime::StopHandle;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where `sluice cluster up --local` keeps its clusters' state.
const DEFAULT_BASE: &str = "/run/sluice/clusters";

/// Arguments of `sluice worker`.
#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// The cluster's name (its etcd keys live under /sluice/CLUSTER/).
    #[arg(long)]
    pub cluster: String,
    /// This worker's name: the host name graph files place nodes on (`host = "NAME"`).
    #[arg(long)]
    pub name: String,
    /// Address and port to listen on for controllers, e.g. 10.0.0.2:7000.
    #[arg(long)]
    pub listen: SocketAddr,
    /// etcd client URL where the worker registers and takes partition leases:
    /// https://host:port with --etcd-access (http:// only for an etcd without TLS).
    #[arg(long)]
    pub etcd: String,
    /// The etcd access directory: ca.pem (the CA etcd's certificate must chain to),
    /// client.pem and client.key (this client's certificate), login (etcd user and password,
    /// mode 600). `sluice cluster up --local` writes one per cluster.
    #[arg(long, value_name = "DIR")]
    pub etcd_access: Option<PathBuf>,
    /// The cluster key file (64 hex characters, mode 0600): controllers and streams must prove
    /// they hold it.
    #[arg(long)]
    pub key_file: PathBuf,
    /// This worker's identity file (`sluice key new`): controllers with a members file
    /// accept the worker only under the name its public key is listed with.
    #[arg(long)]
    pub identity: Option<PathBuf>,
    /// A peers file of the controllers this worker obeys (`sluice key public`): with it, a
    /// holder of the cluster key alone (any stream endpoint) cannot load partitions here.
    #[arg(long)]
    pub controllers: Option<PathBuf>,
    /// Serve Prometheus metrics of the partitions this worker runs at http://ADDR/metrics
    /// (loopback only, e.g. 127.0.0.1:9100; the names are the console's, with `run` and
    /// `host` labels).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// The data root: partitions' relative file paths resolve beneath it (links out are
    /// refused). Default: the working directory at start.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Allow partitions absolute paths and `..`, and resolve relative paths against the
    /// controller's working directory (a local cluster on one machine, the operator's own).
    #[arg(long)]
    pub allow_paths_outside: bool,
    /// Block types this worker never loads, comma-separated (e.g. `tcp_sink,zmq_push_sink`:
    /// no partition here sends data elsewhere), whoever the controller is.
    #[arg(long, value_name = "TYPES")]
    pub refuse_blocks: Option<String>,
    /// Seconds a new control connection has to complete the secure handshake (proving the
    /// cluster key); a silent or slow peer is closed after it.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub handshake_timeout: f64,
    /// The most control connections in their handshake at once; one beyond is closed at once.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_pending: usize,
    /// The most control connections in their handshake at once from one address.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_pending_per_ip: usize,
    /// The most authenticated control sessions at once; one beyond is closed.
    #[arg(long, value_name = "N", default_value_t = sluice_cluster::worker::DEFAULT_MAX_SESSIONS)]
    pub max_sessions: usize,
    /// Seconds to wait for the controller's Go after a partition is loaded; a controller
    /// quiet that long costs the partition (dropped unrun, its lease released).
    #[arg(long, value_name = "SECONDS", default_value_t = 120.0)]
    pub go_timeout: f64,
    /// Seconds after which a control connection whose peer acknowledges nothing is dropped
    /// (TCP keepalive and user timeout), and the longest a message to the controller may
    /// take to write.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub control_timeout: f64,
    /// Milliseconds a fenced partition (its lease lost: its standby writes now) may drain
    /// before it stops hard, dropping what its queues hold.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub drain_ms: u64,
}

/// `sluice cluster …`.
#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Create a local cluster: N hosts as network namespaces on a bridge, an etcd bound to the
    /// bridge (TLS with client certificates, authentication on, a user limited to the
    /// cluster's keys), a cluster key and a worker in each namespace, run as the system user
    /// sluice-worker (needs root).
    Up(UpArgs),
    /// Remove a local cluster: workers, etcd, namespaces, links, its run directory (also after
    /// a crash).
    Down(DownArgs),
    /// List a cluster's registered workers.
    Status(ClusterRef),
    /// Print how a graph file splits over its hosts: each host's partition as a graph file.
    Plan(PlanArgs),
    /// Run a graph file over a cluster: validate, place, wire the streams, start every
    /// partition, show a live table, stop them all cleanly (Ctrl-C included).
    Run(ClusterRunArgs),
}

/// Arguments of `sluice cluster up`.
#[derive(Args, Debug)]
pub struct UpArgs {
    /// Number of namespace hosts (h1 … hN).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=32))]
    pub local: u32,
    /// The cluster's name (default: a new unique one).
    #[arg(long)]
    pub name: Option<String>,
    /// Limit each host's link to this rate with tc (e.g. 100mbit, as the seed's Fast Ethernet;
    /// 1gbit). Default: no limit.
    #[arg(long)]
    pub rate: Option<String>,
    /// Where clusters keep their state.
    #[arg(long, default_value = DEFAULT_BASE)]
    pub base_dir: PathBuf,
}

/// Arguments of `sluice cluster down`.
#[derive(Args, Debug)]
pub struct DownArgs {
    /// The cluster to remove (default: the only one).
    pub name: Option<String>,
    /// Remove every local cluster.
    #[arg(long, conflicts_with = "name")]
    pub all: bool,
    /// Where clusters keep their state.
    #[arg(long, default_value = DEFAULT_BASE)]
    pub base_dir: PathBuf,
}

/// Which cluster a command talks to.
#[derive(Args, Debug, Clone)]
pub struct ClusterRef {
    /// A local cluster's name (default: the only one), which gives its etcd and key file.
    #[arg(long)]
    pub cluster: Option<String>,
    /// etcd client URL, for a cluster that is not local (with --key-file, --cluster and, for
    /// https://, --etcd-access).
    #[arg(long, requires = "cluster")]
    pub etcd: Option<String>,
    /// The etcd access directory (ca.pem, client.pem, client.key, login), for a cluster that
    /// is not local.
    #[arg(long, value_name = "DIR", requires = "etcd")]
    pub etcd_access: Option<PathBuf>,
    /// The cluster key file, for a cluster that is not local.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Where local clusters keep their state.
    #[arg(long, default_value = DEFAULT_BASE)]
    pub base_dir: PathBuf,
}

/// `seconds` as a duration above zero, or an error naming the option.
fn seconds_above_zero(seconds: f64, option: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("{option} {seconds}: a number of seconds above 0"))
}

/// What a worker's metrics server shows: its running partitions, labelled by run and host.
pub fn worker_metrics(
    running: sluice_cluster::running::RunningPartitions,
) -> sluice_web::RunsSource {
    std::sync::Arc::new(move || {
        running
            .snapshot()
            .into_iter()
            .map(|p| sluice_web::WatchedRun {
                labels: vec![("run".into(), p.run), ("host".into(), p.host)],
                progress: p.progress,
                monitor: p.monitor,
            })
            .collect()
    })
}

/// Runs `sluice worker`.
pub fn worker(args: WorkerArgs) -> anyhow::Result<()> {
    let key = ClusterKey::load(&args.key_file)?;
    let opts = WorkerOptions {
        name: args.name.clone(),
        listen: args.listen,
        key,
        key_file: std::fs::canonicalize(&args.key_file)
            .with_context(|| format!("{}", args.key_file.display()))?,
        stats_period: Duration::from_millis(500),
        identity: match &args.identity {
            Some(p) => Some(std::sync::Arc::new(sluice_net::secure::Identity::load(p)?)),
            None => None,
        },
        identity_file: match &args.identity {
            Some(p) => Some(std::fs::canonicalize(p).with_context(|| format!("{}", p.display()))?),
            None => None,
        },
        cluster: args.cluster.clone(),
        controllers: match &args.controllers {
            Some(p) => Some(std::sync::Arc::new(sluice_net::secure::Peers::load(p)?)),
            None => None,
        },
        paths: sluice_cluster::confine::PathPolicy {
            data_dir: std::fs::canonicalize(match &args.data_dir {
                Some(d) => d.clone(),
                None => std::env::current_dir()?,
            })
            .context("--data-dir")?,
            allow_outside: args.allow_paths_outside,
        },
        refused: sluice_cluster::refuse::RefusedBlocks::parse(
            args.refuse_blocks.as_deref().unwrap_or(""),
            &crate::registry(),
        )
        .map_err(anyhow::Error::msg)?,
        etcd: None,
        accept: sluice_net::accept::AcceptOptions {
            budget: Duration::try_from_secs_f64(args.handshake_timeout)
                .ok()
                .filter(|d| !d.is_zero())
                .context("--handshake-timeout: a number of seconds above 0")?,
            max_pending: args.max_pending.max(1),
            max_pending_per_ip: args.max_pending_per_ip.max(1),
            ..sluice_cluster::worker::default_accept()
        },
        max_sessions: args.max_sessions.max(1),
        liveness: sluice_cluster::worker::Liveness {
            go_timeout: seconds_above_zero(args.go_timeout, "--go-timeout")?,
            control_timeout: seconds_above_zero(args.control_timeout, "--control-timeout")?,
            drain: Duration::from_millis(args.drain_ms),
        },
    };
    let etcd = etcd_client(&args.etcd, args.etcd_access.as_deref())?;
    let opts = WorkerOptions {
        etcd: Some(etcd.clone()),
        ..opts
    };
    let worker = Worker::bind(opts, crate::registry())?;
    let control = worker.local_addr();
    let _metrics = match args.metrics {
        Some(bind) => {
            let server = sluice_web::MetricsServer::start(bind, worker_metrics(worker.running()))?;
            eprintln!(
                "sluice worker {}: metrics at http://{}/metrics",
                args.name,
                server.addr()
            );
            Some(server)
        }
        None => None,
    };
    let identity = args
        .identity
        .as_deref()
        .map(sluice_net::secure::Identity::load)
        .transpose()?
        .map(|id| id.public());
    let registration = membership::register(&etcd, &args.cluster, &args.name, control, identity)?;
    eprintln!(
        "sluice worker {}: listening on {control}, registered in {} (cluster {})",
        args.name, args.etcd, args.cluster
    );
    let stop = StopHandle::new();
    let _signals = sluice_runtime::os::stop_on_signals(stop.clone());
    let keeper = {
        let (stop, name, cluster) = (stop.clone(), args.name.clone(), args.cluster.clone());
        std::thread::spawn(move || {
            let report = |event: RegistrationEvent<'_>| match event {
                RegistrationEvent::Renewed => eprintln!(
                    "sluice worker {name}: its registration had expired; registered again"
                ),
                RegistrationEvent::Retrying(e) => {
                    eprintln!("sluice worker {name}: registering again: {e} (retrying)")
                }
            };
            membership::keep_registered(
                registration,
                &etcd,
                &cluster,
                &name,
                control,
                &stop,
                report,
            )
        })
    };
    let served = worker.serve(&stop);
    stop.stop();
    let _ = keeper.join();
    eprintln!("sluice worker {}: stopped", args.name);
    Ok(served?)
}

/// Runs `sluice cluster …`.
pub fn run(cmd: ClusterCommand) -> anyhow::Result<()> {
    match cmd {
        ClusterCommand::Up(args) => up(args),
        ClusterCommand::Down(args) => down(args),
        ClusterCommand::Status(args) => status(args),
        ClusterCommand::Plan(args) => crate::cluster_run_cmd::plan(args),
        ClusterCommand::Run(args) => crate::cluster_run_cmd::run_graph(args),
    }
}

/// A client for the etcd at `url`, secured with the access directory when one is given.
fn etcd_client(url: &str, access: Option<&Path>) -> anyhow::Result<Etcd> {
    let access = access.map(EtcdAccess::load).transpose()?;
    Ok(Etcd::connect(url, access)?)
}

fn up(args: UpArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("cannot find the sluice executable")?;
    let spec = WorkerSpec::new(exe);
    let cluster = LocalCluster::up(LocalOptions {
        name: args.name,
        hosts: args.local as usize,
        rate: args.rate.clone(),
        base_dir: args.base_dir.clone(),
        worker: Some(spec.clone()),
    })?;
    // The workers register in etcd once they listen: wait for all of them (bounded).
    let etcd = cluster.etcd()?;
    let names: Vec<String> = cluster.hosts().iter().map(|h| h.name.clone()).collect();
    if let Err(e) = membership::wait_for(&etcd, cluster.name(), &names, Duration::from_secs(15)) {
        bail!(
            "{e} (see their logs in {}; remove the cluster with `sluice cluster down {}`)",
            cluster.run_dir().display(),
            cluster.name()
        );
    }
    println!("local cluster {} is up:", cluster.name());
    for h in cluster.hosts() {
        println!(
            "  host {:<4} {:<15} namespace {}",
            h.name, h.address, h.netns
        );
    }
    if let Some(rate) = &args.rate {
        println!("  links limited to {rate} each way");
    }
    println!(
        "  etcd       {} (TLS, client certificates, user sluice limited to {})",
        cluster.etcd_url(),
        cluster.etcd_prefix()
    );
    println!("  access     {}", cluster.etcd_access_dir().display());
    println!("  key        {}", cluster.key_file().display());
    if let (local::WorkerUser::System(user), Some(ids)) = (&spec.user, cluster.worker_ids()) {
        println!(
            "  workers    run as {user} (uid {}): they read and write only where it may; \
             run graphs from a directory it can write (chown {user} DIR)",
            ids.uid
        );
    }
    println!("  hosts      {}", cluster.hosts_file().display());
    println!(
        "run a graph: sluice cluster run GRAPH --cluster {}    remove: sluice cluster down {}",
        cluster.name(),
        cluster.name()
    );
    Ok(())
}

fn down(args: DownArgs) -> anyhow::Result<()> {
    let names: Vec<String> = if args.all {
        local::list(&args.base_dir)?
            .iter()
            .map(|c| c.name().to_string())
            .collect()
    } else {
        vec![only_cluster(&args.base_dir, args.name.as_deref())?]
    };
    if names.is_empty() {
        println!("no local clusters in {}", args.base_dir.display());
    }
    for name in names {
        let run_dir = args.base_dir.join(&name);
        if !run_dir.exists() {
            // Nothing to do (down is idempotent), but a misspelt name should not read as done.
            let known: Vec<String> = local::list(&args.base_dir)
                .map(|all| all.iter().map(|c| c.name().to_string()).collect())
                .unwrap_or_default();
            println!(
                "no local cluster {name} in {} (nothing removed); clusters there: {}",
                args.base_dir.display(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
            continue;
        }
        let removed = local::down(&run_dir)?;
        println!(
            "local cluster {name} removed: {}",
            if removed.is_empty() {
                "nothing was left".to_string()
            } else {
                removed.join(", ")
            }
        );
    }
    Ok(())
}

/// The cluster a command names, or the only local one.
fn only_cluster(base: &Path, name: Option<&str>) -> anyhow::Result<String> {
    if let Some(name) = name {
        return Ok(name.to_string());
    }
    let all: Vec<String> = local::list(base)?
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    match all.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!(
            "no local cluster in {} (create one with `sluice cluster up --local N`)",
            base.display()
        ),
        many => bail!(
            "several local clusters ({}): name one with --cluster",
            many.join(", ")
        ),
    }
}

/// The etcd URL, cluster name and key a command uses.
pub(crate) struct Target {
    pub(crate) name: String,
    pub(crate) etcd: Etcd,
    pub(crate) key: ClusterKey,
}

pub(crate) fn target(r: &ClusterRef) -> anyhow::Result<Target> {
    if let Some(url) = &r.etcd {
        let key_file = r
            .key_file
            .clone()
            .context("--etcd needs --key-file (the cluster key the workers hold)")?;
        return Ok(Target {
            name: r.cluster.clone().context("--etcd needs --cluster NAME")?,
            etcd: etcd_client(url, r.etcd_access.as_deref())?,
            key: ClusterKey::load(&key_file)?,
        });
    }
    let name = only_cluster(&r.base_dir, r.cluster.as_deref())?;
    let cluster = LocalCluster::open(&r.base_dir, &name)?;
    let key_file = r.key_file.clone().unwrap_or(cluster.key_file());
    Ok(Target {
        name,
        etcd: cluster.etcd()?,
        key: ClusterKey::load(&key_file)?,
    })
}

/// Registered workers: name → control address.
pub(crate) fn registered_workers(
    etcd: &Etcd,
    cluster: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(membership::workers(etcd, cluster)?
        .into_iter()
        .map(|(name, addr)| (name, addr.to_string()))
        .collect())
}

fn status(r: ClusterRef) -> anyhow::Result<()> {
    let t = target(&r)?;
    let workers = registered_workers(&t.etcd, &t.name)?;
    println!("cluster {}: {} workers registered", t.name, workers.len());
    for (name, addr) in workers {
        println!("  {name:<6} {addr}");
    }
    Ok(())
}
