//! The controller's side of a cluster run (`sluice cluster run`): connect to each host's worker,
//! load every partition, start them together, follow their counts, stop them all when one
//! fails or the user asks, and collect their reports.
//!
//! A host with a hot standby and its standby form a pair: each gets the partition's lease
//! ([`LeaseSpec`]), and when one of them fails or is lost while the other still runs, the run
//! goes on (the failed one reads `FAILED OVER`). The run is well when every host ended well or
//! was covered by its partner, which did.

use crate::placement::Plan;
use crate::protocol::{
    self, FromWorker, LeaseSpec, NodeLine, PromotionLine, ProtocolError, TakeoverLine, ToWorker,
};
use sluice_net::auth::ClusterKey;
use sluice_net::secure::{self, Identity, Peers, SecureReader, SecureWriter};
use sluice_runtime::StopHandle;
use std::collections::BTreeMap;
use std::io::BufReader;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How a cluster run is driven.
#[derive(Debug, Clone)]
pub struct ControlOptions {
    /// The run's identifier (in worker logs and etcd).
    pub run: String,
    /// The cluster key the workers hold.
    pub key: ClusterKey,
    /// The controller's static key pair (`sluice key new --identity`), which workers that
    /// list their controllers check; `None`: a fresh one per run.
    pub identity: Option<std::sync::Arc<Identity>>,
    /// The cluster's members by public key and host name (the controller's own members
    /// file): a worker is trusted only if its key is listed under the host it serves,
    /// whatever address etcd gave for it. `None`: any holder of the cluster key.
    pub members: Option<std::sync::Arc<Peers>>,
    /// How long to wait for a worker to answer the connection, the key check and the load.
    pub timeout: Duration,
    /// The controller's working directory, sent to the workers.
    pub cwd: String,
    /// Asked to stop (Ctrl-C): every partition is stopped gracefully.
    pub stop: StopHandle,
    /// Where the partition leases of hosts with a standby live; a plan with standbys needs it.
    pub leases: Option<LeaseOptions>,
}

/// The etcd that holds the partition leases of a run's primary/standby pairs.
#[derive(Debug, Clone)]
pub struct LeaseOptions {
    /// The etcd client URL, as the workers reach it.
    pub etcd: String,
    /// The cluster's name (the keys live under `/sluice/CLUSTER/leases/`).
    pub cluster: String,
    /// The leases' TTL in seconds: how long a dead primary keeps its standby waiting.
    pub ttl_s: i64,
}

impl LeaseOptions {
    /// Leases in the etcd at `etcd` for `cluster`, with the default TTL
    /// ([`crate::lease::PARTITION_TTL_S`]).
    pub fn new(etcd: &str, cluster: &str) -> LeaseOptions {
        LeaseOptions {
            etcd: etcd.to_string(),
            cluster: cluster.to_string(),
            ttl_s: crate::lease::PARTITION_TTL_S,
        }
    }
}

/// Why a cluster run failed.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// A host has no worker to run its partition.
    #[error("host {host}: no worker (the workers registered: {known})")]
    NoWorker {
        /// The host.
        host: String,
        /// The workers that are known.
        known: String,
    },
    /// A worker could not be reached or refused the connection.
    #[error("host {host}: worker at {addr}: {why}")]
    Connect {
        /// The host.
        host: String,
        /// Its worker's control address.
        addr: String,
        /// Why.
        why: String,
    },
    /// The plan has standbys but the run has no etcd for their leases.
    #[error("host {host} has the standby {standby}, whose takeover needs the partition's lease in etcd: run it on a cluster with etcd")]
    NoLeases {
        /// The protected host.
        host: String,
        /// Its standby.
        standby: String,
    },
    /// A worker refused its partition.
    #[error("host {host}: {message}")]
    Refused {
        /// The host.
        host: String,
        /// The worker's message (naming the node).
        message: String,
    },
    /// The control connection to a worker failed.
    #[error("host {host}: {source}")]
    Protocol {
        /// The host.
        host: String,
        /// What failed.
        source: ProtocolError,
    },
}

/// How a host's partition ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It ran to its end (or to a requested stop).
    Done {
        /// Whether it was stopped.
        stopped: bool,
        /// The per-node statistics table.
        table: String,
        /// Warnings of the run.
        warnings: Vec<String>,
    },
    /// It failed; the message names the node.
    Failed(String),
    /// The worker was lost (its connection closed without a report).
    Lost(String),
}

/// One host's part of a run: live while it runs, final at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct HostStatus {
    /// The host.
    pub host: String,
    /// Seconds since the start.
    pub elapsed_s: f64,
    /// CPU seconds its worker used.
    pub cpu_s: f64,
    /// Its nodes' counts.
    pub nodes: Vec<NodeLine>,
    /// `None` while it runs.
    pub outcome: Option<Outcome>,
    /// The host's partner when it is one of a primary/standby pair.
    pub partner: Option<Partner>,
    /// It failed or was lost while its partner still ran: the run went on without it.
    pub failed_over: bool,
    /// The takeovers its fenced receivers saw (a partition upstream changed primary), as
    /// they happen: the worker's word, at most [`MAX_TAKEOVERS`].
    pub takeovers: Vec<TakeoverLine>,
    /// Set once this host, a standby, won its partition's lease.
    pub promoted: Option<PromotionLine>,
}

/// Takeover records kept per host (what a worker sends beyond them is not kept).
pub const MAX_TAKEOVERS: usize = sluice_net::takeovers::MAX_TAKEOVERS;

/// The other replica of a host's partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Partner {
    /// This host is the primary; the named host is its standby.
    Standby(String),
    /// This host is the standby of the named host.
    StandbyOf(String),
}

impl Partner {
    /// The partner's host name.
    pub fn host(&self) -> &str {
        match self {
            Partner::Standby(h) | Partner::StandbyOf(h) => h,
        }
    }
}

impl HostStatus {
    /// The node of this host that has produced the most items, with its count: a one-glance
    /// sign of progress for the live table.
    pub fn busiest(&self) -> Option<&NodeLine> {
        self.nodes.iter().max_by_key(|n| n.items_out)
    }

    /// The state in a word or two.
    pub fn state(&self) -> &'static str {
        match &self.outcome {
            None => "running",
            Some(Outcome::Done { stopped: true, .. }) => "stopped",
            Some(Outcome::Done { .. }) => "done",
            Some(_) if self.failed_over => "FAILED OVER",
            Some(Outcome::Failed(_)) => "FAILED",
            Some(Outcome::Lost(_)) => "LOST",
        }
    }

    /// Whether it failed or was lost.
    pub fn failed(&self) -> bool {
        matches!(
            self.outcome,
            Some(Outcome::Failed(_)) | Some(Outcome::Lost(_))
        )
    }

    /// Whether it ended well.
    pub fn done(&self) -> bool {
        matches!(self.outcome, Some(Outcome::Done { .. }))
    }
}

/// A finished cluster run.
#[derive(Debug, Clone)]
pub struct ClusterReport {
    /// Wall-clock seconds from Go to the last host's end.
    pub wall_s: f64,
    /// Each host, in plan order.
    pub hosts: Vec<HostStatus>,
    /// The host whose failure came first (the others were stopped because of it).
    pub first_failed: Option<usize>,
}

impl ClusterReport {
    /// Whether every host ended well, or failed and was covered by its partner, which did.
    pub fn ok(&self) -> bool {
        self.hosts.iter().all(|h| h.done() || self.covered(h))
    }

    /// Whether `h` failed and its partner ended well (the pair's work was done).
    pub fn covered(&self, h: &HostStatus) -> bool {
        let partner = h.partner.as_ref().map(Partner::host);
        h.failed()
            && self
                .hosts
                .iter()
                .any(|p| Some(p.host.as_str()) == partner && p.done())
    }

    /// The failure that came first (the cause; later ones may be its effects), as `host h2:
    /// message`; failures covered by a partner are not failures of the run.
    pub fn first_failure(&self) -> Option<String> {
        let first = self.first_failed.and_then(|i| self.hosts.get(i));
        first
            .into_iter()
            .chain(&self.hosts)
            .filter(|h| !self.covered(h))
            .find_map(|h| match &h.outcome {
                Some(Outcome::Failed(m)) | Some(Outcome::Lost(m)) => {
                    Some(format!("host {}: {m}", h.host))
                }
                _ => None,
            })
    }

    /// The failures the run survived because a partner took over, as `host h2: message`.
    pub fn failovers(&self) -> Vec<String> {
        self.hosts
            .iter()
            .filter(|h| self.covered(h))
            .filter_map(|h| match &h.outcome {
                Some(Outcome::Failed(m)) | Some(Outcome::Lost(m)) => {
                    Some(format!("host {}: {m}", h.host))
                }
                _ => None,
            })
            .collect()
    }

    /// The per-host table: wall, CPU, CPU share, items.
    pub fn render(&self) -> String {
        render_table(&self.hosts)
    }
}

/// The live or final table of hosts.
pub fn render_table(hosts: &[HostStatus]) -> String {
    let mut out = format!(
        "{:<10} {:>8} {:>8} {:>6}  {:<11} {}\n",
        "host", "wall s", "cpu s", "cpu %", "state", "most items out"
    );
    for h in hosts {
        let share = if h.elapsed_s > 0.0 {
            100.0 * h.cpu_s / h.elapsed_s
        } else {
            0.0
        };
        let busiest = h
            .busiest()
            .map(|n| format!("{} {}", n.name, n.items_out))
            .unwrap_or_default();
        let role = match &h.partner {
            Some(Partner::Standby(s)) => format!("  [standby {s}]"),
            Some(Partner::StandbyOf(p)) => format!("  [standby of {p}]"),
            None => String::new(),
        };
        out.push_str(&format!(
            "{:<10} {:>8.2} {:>8.2} {:>6.0}  {:<11} {}{}\n",
            h.host,
            h.elapsed_s,
            h.cpu_s,
            share,
            h.state(),
            busiest,
            role
        ));
    }
    out
}

/// How long a running worker may send nothing (it reports every stats period, half a second
/// by default) before it is declared lost.
pub const WORKER_SILENCE: Duration = Duration::from_secs(5);

/// One connected worker.
struct Link {
    host: String,
    out: SecureWriter,
    input: BufReader<SecureReader>,
    peer: String,
}

/// Runs `plan` on the workers at `workers` (host name → control address): loads every
/// partition, starts them, calls `on_update` with every host's status as counts arrive, stops
/// them all when one fails or `opts.stop` is asked, and returns every host's end.
pub fn run(
    plan: &Plan,
    workers: &BTreeMap<String, String>,
    opts: &ControlOptions,
    mut on_update: impl FnMut(&[HostStatus]),
) -> Result<ClusterReport, ControlError> {
    let known = || workers.keys().cloned().collect::<Vec<_>>().join(", ");
    if let (Some((host, standby)), None) = (plan.standbys().into_iter().next(), &opts.leases) {
        return Err(ControlError::NoLeases { host, standby });
    }
    let mut links = Vec::new();
    for part in &plan.partitions {
        let addr = workers
            .get(&part.host)
            .ok_or_else(|| ControlError::NoWorker {
                host: part.host.clone(),
                known: if workers.is_empty() {
                    "none".into()
                } else {
                    known()
                },
            })?;
        let mut link = connect(&part.host, addr, opts)?;
        let load = ToWorker::Load {
            version: protocol::VERSION,
            run: opts.run.clone(),
            origin: format!("{} (partition of host {})", plan.origin, part.host),
            doc: part.doc.clone(),
            v3_partition: String::new(),
            cwd: opts.cwd.clone(),
            stream_receivers: plan
                .streams
                .iter()
                .filter(|s| s.to_host == part.host)
                .map(|s| s.receiver.clone())
                .collect(),
            // Both replicas of a pair compete for one key, named after the protected host.
            lease: opts
                .leases
                .as_ref()
                .filter(|_| part.is_replicated())
                .map(|l| LeaseSpec {
                    etcd: l.etcd.clone(),
                    key: crate::membership::primary_key(
                        &l.cluster,
                        &opts.run,
                        part.protected_host(),
                    ),
                    ttl_s: l.ttl_s,
                    fence: part.protected_host().to_string(),
                    primary: part.standby_of.is_none(),
                    warm: part.warm,
                }),
        };
        protocol::send(&mut link.out, &load, &link.peer).map_err(|source| {
            ControlError::Protocol {
                host: part.host.clone(),
                source,
            }
        })?;
        links.push(link);
    }
    // Every partition loads (and binds its listeners) before any starts.
    for link in &mut links {
        let answer = protocol::receive::<FromWorker, _>(&mut link.input, &link.peer);
        match answer {
            Ok(FromWorker::Loaded) => {}
            Ok(FromWorker::Error { message }) => {
                return Err(ControlError::Refused {
                    host: link.host.clone(),
                    message,
                })
            }
            Ok(other) => {
                return Err(ControlError::Refused {
                    host: link.host.clone(),
                    message: format!("unexpected answer to Load: {other:?}"),
                })
            }
            Err(source) => {
                return Err(ControlError::Protocol {
                    host: link.host.clone(),
                    source,
                })
            }
        }
    }
    let started = Instant::now();
    for link in &mut links {
        protocol::send(&mut link.out, &ToWorker::Go, &link.peer).map_err(|source| {
            ControlError::Protocol {
                host: link.host.clone(),
                source,
            }
        })?;
    }
    // One reader per worker; the messages meet here.
    let (tx, rx) = mpsc::channel::<(usize, Result<FromWorker, ProtocolError>)>();
    let mut outs = Vec::new();
    let mut hosts = Vec::new();
    let mut readers = Vec::new();
    for (i, (link, part)) in links.into_iter().zip(&plan.partitions).enumerate() {
        let Link {
            host,
            out,
            mut input,
            peer,
        } = link;
        let _ = input.get_ref().stream().set_read_timeout(None);
        let partner = match (&part.standby, &part.standby_of) {
            (Some(s), _) => Some(Partner::Standby(s.clone())),
            (_, Some(p)) => Some(Partner::StandbyOf(p.clone())),
            _ => None,
        };
        hosts.push(HostStatus {
            host: host.clone(),
            elapsed_s: 0.0,
            cpu_s: 0.0,
            nodes: Vec::new(),
            outcome: None,
            partner,
            failed_over: false,
            takeovers: Vec::new(),
            promoted: None,
        });
        outs.push((out, peer.clone()));
        let tx = tx.clone();
        let reader = std::thread::Builder::new()
            .name(format!("control {host}"))
            .spawn(move || loop {
                let message = protocol::receive::<FromWorker, _>(&mut input, &peer);
                let end = !matches!(message, Ok(FromWorker::Stats { .. }));
                if tx.send((i, message)).is_err() || end {
                    return;
                }
            });
        if let Ok(reader) = reader {
            readers.push(reader);
        }
    }
    drop(tx);
    let mut stopping = false;
    let mut first_failed = None;
    // Each running worker reports every stats period: one that says nothing for much longer
    // is lost (its machine or its link is down; a dead link gives no error of its own).
    let mut last_heard = vec![Instant::now(); hosts.len()];
    let stop_all = |outs: &mut Vec<(SecureWriter, String)>| {
        for (out, peer) in outs.iter_mut() {
            let _ = protocol::send(out, &ToWorker::Stop, peer);
        }
    };
    while hosts.iter().any(|h| h.outcome.is_none()) {
        if opts.stop.is_stopped() && !stopping {
            stopping = true;
            stop_all(&mut outs);
        }
        let (i, message) = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let silent = (0..hosts.len()).find(|&i| {
                    hosts[i].outcome.is_none() && last_heard[i].elapsed() > WORKER_SILENCE
                });
                let Some(i) = silent else { continue };
                let source = std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no word for {} s", WORKER_SILENCE.as_secs()),
                );
                let peer = outs[i].1.clone();
                (i, Err(ProtocolError::Io { peer, source }))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if hosts[i].outcome.is_some() {
            continue; // a worker declared lost that speaks again: too late
        }
        last_heard[i] = Instant::now();
        let h = &mut hosts[i];
        match message {
            Ok(FromWorker::Stats {
                elapsed_s,
                cpu_s,
                nodes,
                takeovers,
                promoted,
            }) => {
                h.elapsed_s = elapsed_s;
                h.cpu_s = cpu_s;
                h.nodes = nodes;
                // Each Stats carries the run's takeovers so far: the latest list replaces.
                h.takeovers = bounded(takeovers);
                if promoted.is_some() {
                    h.promoted = promoted;
                }
            }
            Ok(FromWorker::Done {
                wall_s,
                cpu_s,
                stopped,
                nodes,
                table,
                warnings,
                takeovers,
            }) => {
                if !takeovers.is_empty() {
                    h.takeovers = bounded(takeovers);
                }
                h.elapsed_s = wall_s;
                h.cpu_s = cpu_s;
                h.nodes = nodes;
                h.outcome = Some(Outcome::Done {
                    stopped,
                    table,
                    warnings,
                });
            }
            Ok(FromWorker::Failed { message }) | Ok(FromWorker::Error { message }) => {
                h.outcome = Some(Outcome::Failed(message));
            }
            Ok(FromWorker::Loaded) => {
                h.outcome = Some(Outcome::Failed("sent Loaded while running".into()));
            }
            Err(e) => {
                h.outcome = Some(Outcome::Lost(format!(
                    "worker lost: {e} (its process ended, or its machine or link went down)"
                )));
            }
        }
        let failed = h.failed();
        // One of a pair whose partner has not failed: the partner carries the partition on.
        let partner = h.partner.as_ref().map(|p| p.host().to_string());
        let covered =
            failed && partner.is_some_and(|p| hosts.iter().any(|o| o.host == p && !o.failed()));
        let h = &mut hosts[i];
        h.failed_over = covered;
        let failed = failed && !covered;
        if failed && first_failed.is_none() {
            first_failed = Some(i);
        }
        if failed && !stopping {
            // One partition failed: the others stop cleanly instead of waiting on it.
            stopping = true;
            stop_all(&mut outs);
        }
        on_update(&hosts);
    }
    for h in hosts.iter_mut().filter(|h| h.outcome.is_none()) {
        h.outcome = Some(Outcome::Lost("no report".into()));
    }
    for (out, _) in &outs {
        let _ = out.stream().shutdown(std::net::Shutdown::Both);
    }
    for reader in readers {
        let _ = reader.join();
    }
    Ok(ClusterReport {
        wall_s: started.elapsed().as_secs_f64(),
        hosts,
        first_failed,
    })
}

/// A worker's takeover records as the controller keeps them: at most [`MAX_TAKEOVERS`], each
/// cause cut to [`protocol::MAX_CAUSE`].
fn bounded(takeovers: Vec<TakeoverLine>) -> Vec<TakeoverLine> {
    takeovers
        .into_iter()
        .take(MAX_TAKEOVERS)
        .map(TakeoverLine::bounded)
        .collect()
}

fn connect(host: &str, addr: &str, opts: &ControlOptions) -> Result<Link, ControlError> {
    let fail = |why: String| ControlError::Connect {
        host: host.to_string(),
        addr: addr.to_string(),
        why,
    };
    let target = addr
        .to_socket_addrs()
        .map_err(|e| fail(format!("cannot resolve: {e}")))?
        .next()
        .ok_or_else(|| fail("resolves to no address".into()))?;
    let mut stream = TcpStream::connect_timeout(&target, opts.timeout).map_err(|e| {
        fail(format!(
            "cannot connect: {e} (is `sluice worker` running there?)"
        ))
    })?;
    let _ = stream.set_nodelay(true);
    let creds = crate::worker::control_credentials(
        &opts.key,
        opts.identity.as_ref(),
        opts.members.as_ref(),
    )
    .map_err(|e| fail(e.to_string()))?;
    let session = secure::connect(&mut stream, &creds, opts.timeout).map_err(|e| {
        fail(format!(
            "secure handshake failed: {}",
            sluice_net::escape::text(&e.to_string())
        ))
    })?;
    // The members file names each key's host: the worker at this address must be the one
    // the plan places on `host`, not another member that an etcd record pointed here.
    if opts.members.is_some() && session.peer_name != host {
        return Err(fail(format!(
            "the worker there proved the identity of member '{}', not of '{host}' (an etcd record may move an address, never an identity)",
            sluice_net::escape::text(&session.peer_name)
        )));
    }
    // A worker that vanished ends its link within the timeout, and no write to a worker (a
    // Stop among them) waits longer on one that stopped reading.
    stream
        .set_read_timeout(Some(opts.timeout))
        .and_then(|()| stream.set_write_timeout(Some(opts.timeout)))
        .and_then(|()| sluice_net::detect_dead_peer(&stream, opts.timeout))
        .map_err(|e| fail(e.to_string()))?;
    let (reader, out) =
        secure::split(secure::Link::secure(stream, session)).map_err(|e| fail(e.to_string()))?;
    Ok(Link {
        host: host.to_string(),
        out,
        input: BufReader::new(reader),
        peer: target.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, outcome: Outcome, partner: Option<Partner>) -> HostStatus {
        HostStatus {
            host: name.into(),
            elapsed_s: 1.0,
            cpu_s: 0.5,
            nodes: Vec::new(),
            failed_over: partner.is_some() && !matches!(outcome, Outcome::Done { .. }),
            outcome: Some(outcome),
            partner,
            takeovers: Vec::new(),
            promoted: None,
        }
    }

    fn done() -> Outcome {
        Outcome::Done {
            stopped: false,
            table: String::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn a_failure_covered_by_the_partner_is_not_the_runs() {
        let report = ClusterReport {
            wall_s: 1.0,
            hosts: vec![
                host("a", done(), None),
                host(
                    "b",
                    Outcome::Lost("worker lost".into()),
                    Some(Partner::Standby("s".into())),
                ),
                host("s", done(), Some(Partner::StandbyOf("b".into()))),
            ],
            first_failed: None,
        };
        assert!(report.ok());
        assert_eq!(report.first_failure(), None);
        assert_eq!(report.failovers(), ["host b: worker lost"]);
        assert_eq!(report.hosts[1].state(), "FAILED OVER");
        let table = report.render();
        assert!(table.contains("FAILED OVER"), "{table}");
        assert!(table.contains("[standby of b]") && table.contains("[standby s]"));
    }

    #[test]
    fn a_workers_takeover_records_are_kept_bounded() {
        let line = |cause: String| TakeoverLine {
            fence: "h2".into(),
            offset: 1,
            from_revision: 1,
            to_revision: 2,
            lost_unix_s: None,
            lost_cause: Some(cause),
            resumed_unix_s: 0.0,
            first_item_unix_s: None,
        };
        let many = vec![line("é".repeat(protocol::MAX_CAUSE)); MAX_TAKEOVERS + 5];
        let kept = bounded(many);
        assert_eq!(kept.len(), MAX_TAKEOVERS);
        let cause = kept[0].lost_cause.as_deref().unwrap();
        assert!(
            cause.len() <= protocol::MAX_CAUSE + '…'.len_utf8(),
            "{}",
            cause.len()
        );
        assert!(cause.ends_with('…'));
        assert_eq!(
            bounded(vec![line("reset".into())])[0].lost_cause.as_deref(),
            Some("reset")
        );
    }

    #[test]
    fn a_pair_that_both_failed_fails_the_run() {
        let report = ClusterReport {
            wall_s: 1.0,
            hosts: vec![
                host(
                    "b",
                    Outcome::Failed("fenced".into()),
                    Some(Partner::Standby("s".into())),
                ),
                host(
                    "s",
                    Outcome::Failed("node 'x': broke".into()),
                    Some(Partner::StandbyOf("b".into())),
                ),
            ],
            first_failed: Some(1),
        };
        assert!(!report.ok());
        assert_eq!(
            report.first_failure().as_deref(),
            Some("host s: node 'x': broke")
        );
        assert!(report.failovers().is_empty());
    }
}
