//! `sluice worker`: runs the partitions a controller sends it, one at a time.
//!
//! The worker listens on its control address; each connection proves the cluster key
//! ([`sluice_net::auth`]) before anything else, then follows [`crate::protocol`]: load a
//! partition (a typed [`PartitionDoc`], checked against this worker's own configuration,
//! validated and built here, its stream listeners bound), run it on
//! Go, report live counts, stop on Stop or when the controller's connection drops, report the
//! end. A peer without the key is refused and logged.
//!
//! A partition of a primary/standby pair comes with a [`LeaseSpec`]: the primary takes the
//! partition's key in etcd when it loads, the standby campaigns for it once running and, when
//! it wins, promotes its fence so its senders take over. A replica that loses the lease it
//! held is fenced: it stops and reports so.

use crate::etcd::Etcd;
use crate::lease::{Campaign, CampaignEvent, PartitionLease};
use crate::protocol::{
    self, FromWorker, LeaseSpec, NodeLine, PromotionLine, ProtocolError, TakeoverLine, ToWorker,
};
use sluice_graph::{PartitionDoc, Registry};
use sluice_net::accept::{AcceptOptions, Acceptor, Admission, Prepare};
use sluice_net::auth::ClusterKey;
use sluice_net::secure::{
    self, Credentials, Identity, Link, Peers, Protection, Purpose, SecureWriter,
};
use sluice_net::Fence;
use sluice_runtime::{Progress, RunOptions, RunReport, RuntimeError, StopHandle};
use std::io::BufReader;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a controller has to send its Load once its connection is authenticated.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// The default limits of the control port's acceptor: a peer has 10 s to prove the cluster
/// key (the handshake's budget), at most 64 connections are in their handshake at once, 8 from
/// one address.
pub fn default_accept() -> AcceptOptions {
    AcceptOptions {
        budget: Duration::from_secs(10),
        ..AcceptOptions::default()
    }
}

/// The default cap on authenticated control sessions at once.
pub const DEFAULT_MAX_SESSIONS: usize = 16;

/// A worker's settings.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The worker's (host's) name, as graph files place nodes on it.
    pub name: String,
    /// Where it listens for controllers.
    pub listen: SocketAddr,
    /// The cluster key every peer must prove (control connections and streams).
    pub key: ClusterKey,
    /// The key's file, passed to the stream blocks of the partitions (`key_file`).
    pub key_file: PathBuf,
    /// This worker's static key pair for control connections (`sluice key new --identity`);
    /// `None`: a fresh one per start (controllers that pin members then refuse it).
    pub identity: Option<Arc<Identity>>,
    /// The file `identity` was read from: the partitions' stream blocks prove it too
    /// (`identity_file`), so a fenced receiver can bind a lease's holder to the connection.
    /// `None`: streams use a fresh key pair per connection.
    pub identity_file: Option<PathBuf>,
    /// The cluster's name (its etcd keys live under `/sluice/CLUSTER/`): where this worker's
    /// fenced receivers read their senders' leases back (see [`crate::lease_check`]).
    pub cluster: String,
    /// The controllers this worker obeys, by public key (a peers file); `None`: any holder
    /// of the cluster key. With it, a host that holds only the stream key (the cluster key
    /// every partition's streams use) cannot load partitions here.
    pub controllers: Option<Arc<Peers>>,
    /// How often a running partition's counts go to the controller.
    pub stats_period: Duration,
    /// Where partitions may read and write files (see [`crate::confine`]).
    pub paths: crate::confine::PathPolicy,
    /// Block types no partition may have here (see [`crate::refuse`]).
    pub refused: crate::refuse::RefusedBlocks,
    /// The etcd this worker registered with, as its own credentials reach it: partition
    /// leases (and so fencing revisions) are taken there, never at an etcd address a
    /// controller names. `None`: partitions with a lease are refused.
    pub etcd: Option<Etcd>,
    /// The control port's acceptor: each new connection proves the cluster key on a helper
    /// thread within `budget`, under caps on connections in their handshake overall and per
    /// address (see [`sluice_net::accept`]; [`default_accept`]).
    pub accept: AcceptOptions,
    /// The most authenticated control sessions at once; one beyond is closed and logged
    /// ([`DEFAULT_MAX_SESSIONS`]).
    pub max_sessions: usize,
    /// How long a worker waits on a quiet controller, and how long a fenced partition may
    /// drain ([`Liveness::default`]).
    pub liveness: Liveness,
}

impl WorkerOptions {
    /// A worker called `name` of cluster `cluster`, proving `key` (read from `key_file`) and
    /// confining its partitions' files to `data_dir`, with every other setting at its
    /// default: listening on loopback at a port the system picks, counts every 500 ms, a fresh
    /// key pair per start, any holder of the key as controller, no refused blocks, no etcd
    /// (partitions with a lease are refused), [`default_accept`], [`DEFAULT_MAX_SESSIONS`] and
    /// [`Liveness::default`]. Set the fields to change any of them.
    pub fn new(
        name: impl Into<String>,
        cluster: impl Into<String>,
        key: ClusterKey,
        key_file: PathBuf,
        data_dir: PathBuf,
    ) -> Self {
        WorkerOptions {
            name: name.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            key,
            key_file,
            identity: None,
            identity_file: None,
            cluster: cluster.into(),
            controllers: None,
            stats_period: Duration::from_millis(500),
            paths: crate::confine::PathPolicy {
                data_dir,
                allow_outside: false,
            },
            refused: crate::refuse::RefusedBlocks::default(),
            etcd: None,
            accept: default_accept(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            liveness: Liveness::default(),
        }
    }
}

/// What keeps a worker from waiting forever on a controller that went quiet, and a fenced
/// partition from running on while its standby writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    /// After `Loaded`, the longest wait for `Go` (the controller loads the other hosts
    /// meanwhile); then the partition is dropped unrun and its lease released. Default 120 s.
    pub go_timeout: Duration,
    /// A control connection whose peer acknowledges nothing this long is dropped: TCP
    /// keepalive probes and `TCP_USER_TIMEOUT` on the socket, and the longest a message to the
    /// controller may take to write. Default 10 s.
    pub control_timeout: Duration,
    /// A partition that lost its lease (fenced) drains for at most this long, then stops
    /// hard, dropping what its queues hold (its standby carries the stream on). Default
    /// 100 ms.
    pub drain: Duration,
}

impl Default for Liveness {
    fn default() -> Self {
        Liveness {
            go_timeout: Duration::from_secs(120),
            control_timeout: Duration::from_secs(10),
            drain: Duration::from_millis(100),
        }
    }
}

/// Why the worker could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The control address could not be bound.
    #[error("worker {name}: cannot listen on {addr}: {source}")]
    Listen {
        /// The worker.
        name: String,
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Accepting could not start on the control address (no thread, no credentials).
    #[error("worker {name}: accept on {addr}: {source}")]
    Accept {
        /// The worker.
        name: String,
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// A bound worker, ready to [`serve`](Worker::serve).
pub struct Worker {
    listener: TcpListener,
    opts: WorkerOptions,
    registry: Arc<Registry>,
    busy: Arc<AtomicBool>,
    running: crate::running::RunningPartitions,
}

impl Worker {
    /// Binds the control address.
    pub fn bind(opts: WorkerOptions, registry: Registry) -> Result<Worker, WorkerError> {
        let listener = TcpListener::bind(opts.listen).map_err(|source| WorkerError::Listen {
            name: opts.name.clone(),
            addr: opts.listen,
            source,
        })?;
        Ok(Worker {
            listener,
            opts,
            registry: Arc::new(registry),
            busy: Arc::new(AtomicBool::new(false)),
            running: crate::running::RunningPartitions::new(),
        })
    }

    /// The partitions this worker runs now (for `sluice worker --metrics`); the list stays
    /// current after [`serve`](Worker::serve) takes the worker.
    pub fn running(&self) -> crate::running::RunningPartitions {
        self.running.clone()
    }

    /// The bound control address (its port, when `listen` asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or(self.opts.listen)
    }

    /// Serves controllers until `shutdown` is asked to stop (a running partition is stopped
    /// gracefully first). New connections prove the cluster key on the acceptor's helpers
    /// (see [`sluice_net::accept`]: silent or hostile peers cost their own connection, a
    /// flood is capped, and running out of descriptors only pauses accepting); each
    /// authenticated one gets a thread, up to `max_sessions`; a second controller while a
    /// partition runs is told the worker is busy.
    pub fn serve(self, shutdown: &StopHandle) -> Result<(), WorkerError> {
        let name = self.opts.name.clone();
        let setup = |source: std::io::Error| WorkerError::Accept {
            name: name.clone(),
            addr: self.opts.listen,
            source,
        };
        // One identity for the worker's life (a fresh one without an identity file).
        let creds = control_credentials(
            &self.opts.key,
            self.opts.identity.as_ref(),
            self.opts.controllers.as_ref(),
        )
        .map_err(|e| setup(std::io::Error::other(e.to_string())))?;
        let prepare: Arc<Prepare<(Link, SocketAddr)>> =
            Arc::new(move |mut stream: TcpStream, admission: &Admission| {
                let _ = stream.set_nodelay(true);
                let budget = admission.left().max(Duration::from_millis(1));
                // The peer's words in the error (a version, a key) are escaped by the acceptor.
                let session =
                    secure::accept(&mut stream, &creds, budget).map_err(|e| e.to_string())?;
                Ok((Link::secure(stream, session), admission.peer))
            });
        let acceptor = Acceptor::start(
            self.listener,
            &format!("worker {}", self.opts.name),
            self.opts.accept,
            prepare,
        )
        .map_err(setup)?;
        let sessions_stop = StopHandle::new();
        let mut sessions: Vec<std::thread::JoinHandle<()>> = Vec::new();
        while !shutdown.is_stopped() {
            let Some((link, peer)) = acceptor.next(Duration::from_millis(20)) else {
                sessions.retain(|h| !h.is_finished());
                continue;
            };
            sessions.retain(|h| !h.is_finished());
            if sessions.len() >= self.opts.max_sessions.max(1) {
                eprintln!(
                    "sluice worker {}: {peer}: refused: already {} control sessions (max_sessions)",
                    self.opts.name,
                    sessions.len()
                );
                continue; // dropping the link closes it
            }
            let session = Session {
                name: self.opts.name.clone(),
                peer: peer.to_string(),
                opts: self.opts.clone(),
                registry: self.registry.clone(),
                busy: self.busy.clone(),
                running: self.running.clone(),
                shutdown: sessions_stop.clone(),
            };
            let spawned = std::thread::Builder::new()
                .name(format!("session {peer}"))
                .spawn(move || session.serve(link));
            match spawned {
                Ok(handle) => sessions.push(handle),
                Err(e) => eprintln!("sluice worker {}: {peer}: {e}", self.opts.name),
            }
        }
        drop(acceptor);
        sessions_stop.stop();
        for handle in sessions {
            let _ = handle.join();
        }
        Ok(())
    }
}

/// One controller's connection.
struct Session {
    name: String,
    peer: String,
    opts: WorkerOptions,
    registry: Arc<Registry>,
    busy: Arc<AtomicBool>,
    /// Where the partition is listed while it runs.
    running: crate::running::RunningPartitions,
    /// The worker is shutting down: stop what runs.
    shutdown: StopHandle,
}

/// Clears the busy flag when the session ends, however it ends.
struct BusyGuard(Arc<AtomicBool>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Session {
    fn log(&self, what: &str) {
        eprintln!("sluice worker {}: {}: {what}", self.name, self.peer);
    }

    /// Follows the protocol on an authenticated connection (the acceptor ran the handshake).
    fn serve(self, link: Link) {
        let _ = link.stream.set_nonblocking(false);
        // A controller that vanished ends the session within the control timeout, and no
        // write to it blocks longer (see `Reporter`).
        let timeout = self.opts.liveness.control_timeout;
        if let Err(e) = sluice_net::detect_dead_peer(&link.stream, timeout)
            .and_then(|()| link.stream.set_write_timeout(Some(timeout)))
        {
            self.log(&format!("socket setup: {e}"));
        }
        if let Err(e) = self.run(link) {
            self.log(&sluice_net::escape::text(&e.to_string()));
        }
    }

    fn run(&self, link: Link) -> Result<(), ProtocolError> {
        let peer = self.peer.as_str();
        let io_err = |source| ProtocolError::Io {
            peer: peer.to_string(),
            source,
        };
        link.stream
            .set_read_timeout(Some(HANDSHAKE))
            .map_err(io_err)?;
        let (reader, mut out) = secure::split(link).map_err(io_err)?;
        let mut input = BufReader::new(reader);
        // The version first: a controller of another version is told so (see
        // `protocol::receive_load`).
        let (run, origin, partition, cwd, stream_receivers, lease) =
            match protocol::receive_load(&mut input, peer)? {
                Ok(ToWorker::Load {
                    run,
                    origin,
                    doc,
                    cwd,
                    stream_receivers,
                    lease,
                    ..
                }) => (run, origin, doc, cwd, stream_receivers, lease),
                Ok(other) => {
                    let message = format!("expected Load first, got {other:?}");
                    return protocol::send(&mut out, &FromWorker::Error { message }, peer);
                }
                Err(message) => {
                    self.log(&format!("refused: {message}"));
                    return protocol::send(&mut out, &FromWorker::Error { message }, peer);
                }
            };
        if self.busy.swap(true, Ordering::AcqRel) {
            let message = format!("worker {} is busy with another run", self.name);
            return protocol::send(&mut out, &FromWorker::Error { message }, peer);
        }
        let _busy = BusyGuard(self.busy.clone());
        self.log(&format!("run {run}: loading {origin}"));
        // A fresh fence (revision 0, standby) for the sinks this graph builds: nothing of an
        // earlier run's promotion carries over.
        if let Some(l) = &lease {
            Fence::forget(&l.fence);
        }
        // Nor does an earlier run's takeover record (the journal is process-wide too).
        sluice_net::takeovers::clear();
        // This run's fenced receivers confirm a raised revision in this worker's own etcd
        // (one worker per process: the check is process-wide). Without an etcd, revisions
        // are believed, as outside a cluster.
        sluice_net::fence::set_revision_check(self.opts.etcd.as_ref().map(|etcd| {
            Arc::new(crate::lease_check::LeaseCheck::new(
                etcd,
                &self.opts.cluster,
                &run,
            )) as Arc<dyn sluice_net::fence::RevisionCheck>
        }));
        let graph = match self.load(partition, &origin, &cwd) {
            Ok(graph) => graph,
            Err(message) => {
                return protocol::send(&mut out, &FromWorker::Error { message }, peer);
            }
        };
        // The worker's own etcd client: a controller's `etcd` URL is not followed (it could
        // send the worker to an etcd of its choosing, where any revision can be had).
        let etcd = match (&lease, &self.opts.etcd) {
            (None, _) => None,
            (Some(_), Some(etcd)) => Some(etcd.clone()),
            (Some(l), None) => {
                let message = format!(
                    "host {}: partition lease {}: this worker has no etcd of its own to take it in",
                    self.name, l.key
                );
                return protocol::send(&mut out, &FromWorker::Error { message }, peer);
            }
        };
        // The primary holds the key from now on (dropping it revokes the lease).
        let mut held = None;
        if let (Some(l), Some(etcd)) = (lease.as_ref().filter(|l| l.primary), &etcd) {
            match self.take_primary(etcd, l, &run) {
                Ok(h) => held = Some(h),
                Err(message) => {
                    return protocol::send(&mut out, &FromWorker::Error { message }, peer);
                }
            }
        }
        protocol::send(&mut out, &FromWorker::Loaded, peer)?;
        // The controller may take a while to load the other hosts: wait for Go that long, but
        // not past a closed connection; a quiet controller costs the partition (dropped
        // unrun, its lease released), not the worker.
        let go_timeout = self.opts.liveness.go_timeout;
        input
            .get_ref()
            .stream()
            .set_read_timeout(Some(go_timeout))
            .map_err(io_err)?;
        match protocol::receive::<ToWorker, _>(&mut input, peer) {
            Ok(ToWorker::Go) => {}
            Ok(ToWorker::Stop) => return Ok(()),
            Ok(other) => {
                let message = format!("expected Go, got {other:?}");
                return protocol::send(&mut out, &FromWorker::Error { message }, peer);
            }
            Err(ProtocolError::Io { source, .. })
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                let message = format!(
                    "run {run}: no Go within {:.1} s of Loaded (--go-timeout): the partition is dropped unrun",
                    go_timeout.as_secs_f64()
                );
                self.log(&message);
                return protocol::send(&mut out, &FromWorker::Error { message }, peer);
            }
            Err(e) => return Err(e),
        }
        input
            .get_ref()
            .stream()
            .set_read_timeout(None)
            .map_err(io_err)?;
        self.log(&format!("run {run}: running"));
        // The standby campaigns for the key once the primary runs (it took the key at load).
        let promoted = Promoted::default();
        let campaign = match (lease.as_ref().filter(|l| !l.primary), etcd) {
            (Some(l), Some(etcd)) => match self.campaign(etcd, l, &run, promoted.clone()) {
                Ok(c) => Some(c),
                Err(message) => {
                    return protocol::send(&mut out, &FromWorker::Failed { message }, peer);
                }
            },
            _ => None,
        };
        let stop = StopHandle::new();
        let progress = Progress::new();
        let monitor = sluice_runtime::Monitor::new();
        // Listed until this function returns, however the run ends.
        let _listed = self.running.register(crate::running::RunningPartition {
            run: run.clone(),
            host: self.name.clone(),
            progress: progress.clone(),
            monitor: monitor.clone(),
        });
        let started = Instant::now();
        let cpu_before = sluice_os::process_cpu_time();
        let (done_tx, done_rx) = mpsc::channel();
        // Stop on the controller's word or when its connection drops.
        let reader_stop = stop.clone();
        let reader_peer = peer.to_string();
        let reader = std::thread::Builder::new()
            .name(format!("control {peer}"))
            .spawn(move || loop {
                match protocol::receive::<ToWorker, _>(&mut input, &reader_peer) {
                    Ok(ToWorker::Stop) | Err(_) => {
                        reader_stop.stop();
                        return;
                    }
                    Ok(_) => {}
                }
            })
            .map_err(io_err)?;
        let cpu = || (sluice_os::process_cpu_time() - cpu_before).as_secs_f64();
        let reporter = Reporter::start(out, peer).map_err(io_err)?;
        // A warm standby runs its partition only once it won the lease.
        let idle = match (&campaign, lease.as_ref().is_some_and(|l| l.warm)) {
            (Some(c), true) => self.stand_by(c, &stop, &reporter, started, &cpu, &promoted),
            _ => None,
        };
        let runner = match idle {
            Some(report) => {
                let _ = done_tx.send(Ok(report));
                None
            }
            None => {
                let opts = RunOptions {
                    stop: Some(stop.clone()),
                    progress: Some(progress.clone()),
                    monitor: Some(monitor),
                    // A stop ends this host's own sources; its stream receivers end with the
                    // streams.
                    spared_by_stop: stream_receivers,
                    ..RunOptions::default()
                };
                let runner = std::thread::Builder::new()
                    .name(format!("run {run}"))
                    .spawn(move || {
                        let _ = done_tx.send(graph.run(&opts));
                    })
                    .map_err(io_err)?;
                Some(runner)
            }
        };
        // Short ticks: a lost lease must stop the partition well within its TTL, and nothing
        // in this loop blocks (messages to the controller go through the reporter's thread).
        let drain = self.opts.liveness.drain;
        let tick = Campaign::PERIOD
            .min(self.opts.stats_period)
            .min(drain.max(Duration::from_millis(10)));
        let mut next_stats = Instant::now() + self.opts.stats_period;
        let mut fenced: Option<(String, Instant)> = None;
        let result = loop {
            if self.shutdown.is_stopped() {
                stop.stop();
            }
            match &fenced {
                None => {
                    if let Some(message) = self.fenced(held.as_ref(), campaign.as_ref(), &lease) {
                        self.log(&format!(
                            "run {run}: {message}; stopping the partition (a drain of at most {} ms, then a hard stop)",
                            drain.as_millis()
                        ));
                        fenced = Some((message, Instant::now()));
                        stop.stop();
                    }
                }
                // Fenced: the standby writes now; what this replica still holds is dropped.
                Some((_, since)) if since.elapsed() >= drain && !stop.is_aborted() => {
                    stop.abort();
                }
                Some(_) => {}
            }
            if reporter.is_gone() {
                stop.stop();
            }
            match done_rx.recv_timeout(tick) {
                Ok(result) => break result,
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < next_stats => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    next_stats = Instant::now() + self.opts.stats_period;
                    let stats = FromWorker::Stats {
                        elapsed_s: started.elapsed().as_secs_f64(),
                        cpu_s: cpu(),
                        nodes: progress
                            .snapshot()
                            .into_iter()
                            .map(|n| NodeLine {
                                name: n.name,
                                items_in: n.items_in,
                                items_out: n.items_out,
                            })
                            .collect(),
                        takeovers: TakeoverLine::journal(),
                        promoted: promoted.get(),
                    };
                    reporter.offer(stats);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(RuntimeError::Spawn {
                        node: "(graph)".into(),
                        message: "the run's thread ended without a report".into(),
                    })
                }
            }
        };
        if let Some(runner) = runner {
            let _ = runner.join();
        }
        let wall_s = started.elapsed().as_secs_f64();
        // The run is over: no more campaigning, and the key goes now. After a normal end the
        // primary says so first, so that its standby does not take over a finished partition.
        let won = campaign.and_then(Campaign::stop);
        let finished = fenced.is_none() && result.as_ref().is_ok_and(|r| !r.stopped);
        for l in held.into_iter().chain(won) {
            let released = if finished { l.finish() } else { l.release() };
            if let Err(e) = released {
                self.log(&format!("run {run}: releasing the partition lease: {e}"));
            }
        }
        let message = match (fenced, result) {
            (Some((message, _)), _) => FromWorker::Failed { message },
            (None, Ok(report)) => done_message(&report, wall_s, cpu()),
            (None, Err(e)) => FromWorker::Failed {
                message: e.to_string(),
            },
        };
        let sent = reporter.finish(message);
        let _ = reader.join();
        self.log(&format!("run {run}: ended"));
        sent
    }

    /// A warm standby waits, reporting to the controller as a running worker does, until its
    /// campaign wins (`None`: run the partition now), the primary finished, or a stop came
    /// (the report of a run that never started).
    fn stand_by(
        &self,
        campaign: &Campaign,
        stop: &StopHandle,
        reporter: &Reporter,
        started: Instant,
        cpu: &dyn Fn() -> f64,
        promoted: &Promoted,
    ) -> Option<RunReport> {
        let mut next_stats = Instant::now();
        loop {
            if campaign.has_won() {
                return None;
            }
            let stopped = stop.is_stopped() || self.shutdown.is_stopped() || reporter.is_gone();
            let why = if campaign.primary_finished() {
                Some("warm standby: the primary finished its partition, nothing to take over")
            } else if stopped {
                Some("warm standby: stopped before it had to take over")
            } else {
                None
            };
            if let Some(why) = why {
                return Some(RunReport {
                    nodes: Vec::new(),
                    wall: started.elapsed(),
                    threads: 0,
                    scheduling: why.to_string(),
                    stopped,
                    warnings: vec![why.to_string()],
                });
            }
            if Instant::now() >= next_stats {
                next_stats = Instant::now() + self.opts.stats_period;
                let stats = FromWorker::Stats {
                    elapsed_s: started.elapsed().as_secs_f64(),
                    cpu_s: cpu(),
                    nodes: Vec::new(),
                    takeovers: TakeoverLine::journal(),
                    promoted: promoted.get(),
                };
                reporter.offer(stats);
            }
            std::thread::sleep(Campaign::PERIOD);
        }
    }

    /// Takes the partition's key as its primary and promotes the partition's fence.
    fn take_primary(
        &self,
        etcd: &Etcd,
        l: &LeaseSpec,
        run: &str,
    ) -> Result<PartitionLease, String> {
        let failed = |e: crate::etcd::EtcdError| {
            format!("host {}: partition lease {}: {e}", self.name, l.key)
        };
        match PartitionLease::try_acquire(etcd, &l.key, &self.name, l.ttl_s).map_err(failed)? {
            Some(held) => {
                Fence::named(&l.fence).promote(held.revision() as u64);
                self.log(&format!(
                    "run {run}: primary of {} at revision {} (lease of {} s)",
                    l.fence,
                    held.revision(),
                    held.ttl_s()
                ));
                Ok(held)
            }
            None => {
                let holder = etcd
                    .get(&l.key)
                    .ok()
                    .flatten()
                    .map(|v| String::from_utf8_lossy(&v).into_owned())
                    .unwrap_or_else(|| "another replica".into());
                Err(format!(
                    "host {}: partition lease {} is held by {holder}",
                    self.name, l.key
                ))
            }
        }
    }

    /// Starts the standby's campaign: on winning, it promotes the fence (the partition's
    /// senders then take over the streams) and logs how long the takeover took.
    fn campaign(
        &self,
        etcd: Etcd,
        l: &LeaseSpec,
        run: &str,
        promoted: Promoted,
    ) -> Result<Campaign, String> {
        let (name, peer, fence, run_id) = (
            self.name.clone(),
            self.peer.clone(),
            l.fence.clone(),
            run.to_string(),
        );
        let on_event = move |event| {
            let what = match event {
                CampaignEvent::Won {
                    revision,
                    after_vanished,
                } => {
                    Fence::named(&fence).promote(revision as u64);
                    promoted.set(PromotionLine {
                        fence: fence.clone(),
                        revision: revision as u64,
                        after_vanished_ms: after_vanished.as_millis() as u64,
                        unix_s: protocol::unix_s(std::time::SystemTime::now()),
                    });
                    format!(
                        "promoted to primary of {fence} at revision {revision} ({} ms after the key vanished)",
                        after_vanished.as_millis()
                    )
                }
                CampaignEvent::Error(e) => format!("standby of {fence}: campaign: {e}"),
                CampaignEvent::Finished => {
                    format!("standby of {fence}: the primary finished: nothing to take over")
                }
            };
            eprintln!("sluice worker {name}: {peer}: run {run_id}: {what}");
        };
        self.log(&format!("run {run}: standby of {}", l.fence));
        Campaign::start(etcd, &l.key, &self.name, l.ttl_s, on_event).map_err(|e| {
            format!(
                "host {}: cannot campaign for partition lease {}: {e}",
                self.name, l.key
            )
        })
    }

    /// The failure message when the replica held the partition's lease and lost it.
    fn fenced(
        &self,
        held: Option<&PartitionLease>,
        campaign: Option<&Campaign>,
        lease: &Option<LeaseSpec>,
    ) -> Option<String> {
        let (why, took_over) = match (held, campaign) {
            (Some(h), _) if !h.is_alive() => (h.last_error(), "its standby took over"),
            (_, Some(c)) if c.lease_lost() => (c.last_error(), "no replica holds it now"),
            _ => return None,
        };
        let key = lease.as_ref().map_or("", |l| l.key.as_str());
        let why = why.map(|w| format!(" ({w})")).unwrap_or_default();
        Some(format!(
            "host {} lost partition lease {key}{why}: fenced ({took_over})",
            self.name
        ))
    }

    /// Builds the partition from its document: block types this worker refuses are refused,
    /// its streams keyed, its files confined to the data directory (the process's working
    /// directory is never changed: see [`crate::confine`]), and its endpoints made the stream
    /// blocks they name; then it loads as a graph file does.
    fn load(
        &self,
        mut partition: PartitionDoc,
        origin: &str,
        cwd: &str,
    ) -> Result<sluice_runtime::Graph, String> {
        self.opts
            .refused
            .check(&partition)
            .map_err(|e| format!("{origin} on host {}: {e}", self.name))?;
        with_stream_key(
            &mut partition,
            &self.opts.key_file,
            self.opts.identity_file.as_deref(),
        );
        crate::confine::confine(&mut partition, &self.registry, &self.opts.paths, cwd)
            .map_err(|e| format!("{origin} on host {}: {e}", self.name))?;
        let graph = sluice_net::graph_blocks::partition_graph(&partition);
        sluice_graph::load_doc(&graph, origin, &self.registry)
            .map(|loaded| loaded.graph)
            .map_err(|e| e.to_string())
    }
}

/// The standby's promotion, once its campaign won: set on the campaign's thread, read with
/// each report to the controller.
#[derive(Debug, Clone, Default)]
struct Promoted(Arc<Mutex<Option<PromotionLine>>>);

impl Promoted {
    fn set(&self, line: PromotionLine) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(line);
    }

    fn get(&self) -> Option<PromotionLine> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Writes a running session's messages to its controller on a thread of its own, so that a
/// controller that stopped reading never holds up the session's loop (its lease checks and
/// its hard stop): [`offer`](Reporter::offer) drops a Stats while the previous one still
/// waits; [`finish`](Reporter::finish) queues the last message and waits for the thread,
/// whose writes each give up after the control timeout (the socket's write timeout).
struct Reporter {
    tx: Option<mpsc::SyncSender<FromWorker>>,
    gone: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<(), ProtocolError>>>,
}

impl Reporter {
    fn start(mut out: SecureWriter, peer: &str) -> std::io::Result<Reporter> {
        let (tx, rx) = mpsc::sync_channel::<FromWorker>(1);
        let gone = Arc::new(AtomicBool::new(false));
        let (flag, peer) = (gone.clone(), peer.to_string());
        let thread = std::thread::Builder::new()
            .name(format!("report {peer}"))
            .spawn(move || {
                let mut sent = Ok(());
                for message in rx {
                    sent = protocol::send(&mut out, &message, &peer);
                    if sent.is_err() {
                        flag.store(true, Ordering::Release);
                        break;
                    }
                }
                let _ = out.stream().shutdown(std::net::Shutdown::Both);
                sent
            })?;
        Ok(Reporter {
            tx: Some(tx),
            gone,
            thread: Some(thread),
        })
    }

    /// Sends `stats` unless the previous message is still being written (then it is dropped:
    /// the next period's counts supersede it).
    fn offer(&self, stats: FromWorker) {
        if let Some(tx) = &self.tx {
            if let Err(mpsc::TrySendError::Disconnected(_)) = tx.try_send(stats) {
                self.gone.store(true, Ordering::Release);
            }
        }
    }

    /// Whether writing to the controller failed (it closed, or took none of a message within
    /// the control timeout).
    fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }

    /// Sends the last message, closes the connection and says whether it went out.
    fn finish(mut self, last: FromWorker) -> Result<(), ProtocolError> {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(last);
        }
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(sent)) => sent,
            _ => Ok(()),
        }
    }
}

fn done_message(report: &RunReport, wall_s: f64, cpu_s: f64) -> FromWorker {
    let mut warnings = report.warnings.clone();
    for node in &report.nodes {
        for w in &node.warnings {
            warnings.push(format!("node '{}': {w}", node.name));
        }
    }
    FromWorker::Done {
        wall_s,
        cpu_s,
        stopped: report.stopped,
        nodes: report
            .nodes
            .iter()
            .map(|n| NodeLine {
                name: n.name.clone(),
                items_in: n.items_in,
                items_out: n.items_out,
            })
            .collect(),
        table: report.render(),
        warnings,
        takeovers: TakeoverLine::journal(),
    }
}

/// Gives the stream endpoints of a partition the worker's key file and, when it has one, its
/// identity file (a fenced receiver then knows which host's sender connects), unless the
/// partition names them; and the graph's own `tcp_sink` and `tcp_source` nodes too, as before
/// partitions were typed.
pub fn with_stream_key(
    partition: &mut PartitionDoc,
    key_file: &std::path::Path,
    identity_file: Option<&std::path::Path>,
) {
    use sluice_net::graph_blocks::{param, TCP_SINK, TCP_SOURCE};
    let key = key_file.display().to_string();
    let identity = identity_file.map(|f| f.display().to_string());
    for endpoint in &mut partition.streams {
        let c = &mut endpoint.security;
        c.key_file.get_or_insert_with(|| key.clone());
        if let Some(id) = &identity {
            c.identity_file.get_or_insert_with(|| id.clone());
        }
    }
    for node in &mut partition.graph.nodes {
        if node.kind == TCP_SINK || node.kind == TCP_SOURCE {
            node.params
                .entry(param::KEY_FILE.to_string())
                .or_insert_with(|| toml::Value::String(key.clone()));
            if let Some(id) = &identity {
                node.params
                    .entry(param::IDENTITY_FILE.to_string())
                    .or_insert_with(|| toml::Value::String(id.clone()));
            }
        }
    }
}

/// The credentials of a control connection: the cluster key as PSK, this end's identity (a
/// fresh one without), and the peers it accepts (any holder of the key without).
pub fn control_credentials(
    key: &ClusterKey,
    identity: Option<&Arc<Identity>>,
    peers: Option<&Arc<Peers>>,
) -> Result<Credentials, sluice_net::NetError> {
    Ok(Credentials {
        identity: match identity {
            Some(id) => id.clone(),
            None => Arc::new(Identity::generate()?),
        },
        psk: Some(key.clone()),
        peers: peers.cloned(),
        purpose: Purpose::Control,
        protection: Protection::Encrypt,
    })
}
