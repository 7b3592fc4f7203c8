//! Local clusters: several "hosts" on this machine, each a network namespace, for tests and
//! demos (`sluice cluster up --local N`). Needs root and iproute2.
//!
//! [`LocalCluster::up`] creates, for a cluster `NAME` with hosts `h1..hN`:
//!
//! - a run directory `BASE/NAME/` (by default under `/run/sluice/clusters`) whose `state.json`
//!   lists every resource *before* it is created, so [`down`] removes exactly what exists,
//!   also after a crash or a half-finished `up`;
//! - a bridge `sl-NAME` in the root namespace with address `10.A.B.1/24` (`A.B` derived from
//!   the name; another subnet is taken when an interface or route already uses that one);
//! - per host a namespace `sl-NAME-hN` joined to the bridge by a veth pair (`sl-NAME-N` in the
//!   root namespace, `eth0` inside with `10.A.B.(N+1)/24`, `lo` up, default route via the
//!   bridge), optionally rate-limited in both directions with `tc tbf` (this kernel has no
//!   netem);
//! - the cluster key `NAME/cluster.key` (64 hex digits and a newline, mode 0600);
//! - etcd's certificates in `NAME/etcd-pki/` (a CA of the cluster's own, etcd's certificate,
//!   a client certificate: [`crate::etcd::pki`]), private keys mode 0600;
//! - one etcd listening only on the bridge address (`https://10.A.B.1:2379`, peers on 2380),
//!   TLS only with client certificates required, and etcd's authentication on: user `root`
//!   (its login in `etcd-pki/root.login`), user `sluice` (the controller's), whose role may
//!   read and write only `/sluice/NAME/` (its access directory `etcd-pki/client/`, login
//!   included), and a user `sluice-hN` per host that reads `/sluice/NAME/` and writes only
//!   its member record and the partition leases (`leases/`) of the cluster's hosts (logins in
//!   `etcd-pki/hosts/`; [`crate::etcd::auth::HostGrant`]); its data in the run directory,
//!   left running in a session of its own;
//! - when asked, a worker per host inside its namespace (`sluice worker ...`, see
//!   [`WorkerSpec`]), as an unprivileged user when `up` runs as root ([`WorkerUser`]), with
//!   its own copies of the key in `NAME/worker/` and of its host's etcd access in
//!   `NAME/worker/etcd-hN/`, its output in `NAME/hN.log`;
//! - `hosts.toml`: a `[hosts.hN] address = "..."` table per host, to paste into a graph file.
//!
//! Cluster names are 1 to 9 lower-case letters and digits starting with a letter, so every
//! interface name fits Linux's 15 characters and no two clusters' names collide.
//!
//! ```no_run
//! use sluice_cluster::local::{self, LocalCluster, LocalOptions};
//! let cluster = LocalCluster::up(LocalOptions { hosts: 3, ..LocalOptions::default() })?;
//! println!("etcd at {}, hosts {:?}", cluster.etcd_url(), cluster.hosts());
//! let removed = local::down(cluster.run_dir())?;
//! println!("removed {}", removed.join(", "));
//! # Ok::<(), sluice_cluster::local::LocalError>(())
//! ```

mod state;
mod sys;
mod worker_user;

pub use worker_user::{Ids, WorkerUser, SYSTEM_USER};

use crate::etcd::pki::EtcdPki;
use crate::etcd::{
    auth, Etcd, EtcdAccess, EtcdOptions, EtcdServer, EtcdServerError, Login, CA_FILE, CERT_FILE,
    KEY_FILE, LOGIN_FILE,
};
use state::{Resource, State};
use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use sys::{run, run_removal, Proc};

/// Where clusters live unless told otherwise.
pub const DEFAULT_BASE_DIR: &str = "/run/sluice/clusters";
/// The lock that serialises the choice of subnets between concurrent `up`s (whatever their
/// base directory).
const SUBNET_LOCK: &str = "/run/sluice/local-subnets.lock";
/// The most hosts a local cluster may have.
pub const MAX_HOSTS: usize = 32;
/// The port each worker listens on, on its host's address.
pub const WORKER_PORT: u16 = 7000;
/// etcd's client port on the bridge address.
pub const ETCD_CLIENT_PORT: u16 = 2379;
/// etcd's peer port on the bridge address.
pub const ETCD_PEER_PORT: u16 = 2380;

/// The worker program to start in each host's namespace.
#[derive(Debug, Clone)]
pub struct WorkerSpec {
    /// The `sluice` executable. Each host runs `EXE worker --cluster NAME --name hN --listen
    /// 10.A.B.(N+1):7000 --etcd https://10.A.B.1:2379 --etcd-access RUN/worker/etcd-hN
    /// --key-file RUN/worker/cluster.key --data-dir RUN/worker/data
    /// --identity RUN/worker/hN.identity --allow-paths-outside`.
    pub exe: PathBuf,
    /// Who the workers run as.
    pub user: WorkerUser,
}

impl WorkerSpec {
    /// `exe` run as [`WorkerUser::unprivileged`]: the system user [`SYSTEM_USER`] when this
    /// process is root.
    pub fn new(exe: impl Into<PathBuf>) -> WorkerSpec {
        WorkerSpec {
            exe: exe.into(),
            user: WorkerUser::unprivileged(),
        }
    }
}

/// What [`LocalCluster::up`] creates.
#[derive(Debug, Clone)]
pub struct LocalOptions {
    /// The cluster's name; by default a short unique one is generated (`c` and 5 hex digits).
    pub name: Option<String>,
    /// How many hosts (1 to 32).
    pub hosts: usize,
    /// A rate limit on each host's link, both directions, in `tc` syntax (`100mbit`, `1gbit`).
    pub rate: Option<String>,
    /// Where the run directory goes ([`DEFAULT_BASE_DIR`] by default).
    pub base_dir: PathBuf,
    /// Start a worker on each host.
    pub worker: Option<WorkerSpec>,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions {
            name: None,
            hosts: 2,
            rate: None,
            base_dir: PathBuf::from(DEFAULT_BASE_DIR),
            worker: None,
        }
    }
}

/// One host of a local cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalHost {
    /// Its name in graph files (`h1`, `h2`, ...).
    pub name: String,
    /// Its network namespace (`ip netns exec NETNS ...` runs a program there).
    pub netns: String,
    /// Its address on the cluster's bridge.
    pub address: Ipv4Addr,
    /// Its link's end in the root namespace, on the bridge (`ip link set LINK down` cuts the
    /// host off).
    pub link: String,
    /// Its worker's process id, when one was started.
    pub worker_pid: Option<u32>,
}

/// Why a local cluster could not be created, read or removed.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The options are not valid.
    #[error("local cluster: {0}")]
    Invalid(String),
    /// Not running as root.
    #[error("local clusters need root (network namespaces, veth pairs and bridges)")]
    NotRoot,
    /// A command failed.
    #[error("{command}: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its stderr (or why it could not run).
        stderr: String,
    },
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A cluster's `state.json` is missing or unreadable.
    #[error("{path}: {message}")]
    State {
        /// The state file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A cluster of that name exists already (here or, by its bridge, in another base dir).
    #[error(
        "a local cluster named {name} exists already ({what}); `sluice cluster down` it first"
    )]
    Exists {
        /// The name.
        name: String,
        /// What exists.
        what: String,
    },
    /// No free `10.A.B.0/24` was found.
    #[error("no free 10.x.y.0/24 subnet for cluster {0}")]
    NoSubnet(String),
    /// etcd could not be started.
    #[error("cluster {name}: {source}")]
    Etcd {
        /// The cluster.
        name: String,
        /// Why.
        source: Box<EtcdServerError>,
    },
    /// etcd's certificates, users or roles could not be set up, or its client made.
    #[error("cluster {name}: securing etcd: {message}")]
    EtcdSetup {
        /// The cluster.
        name: String,
        /// What failed.
        message: String,
    },
    /// `up` failed and then could not remove what it had created.
    #[error("{error} (and removing what was created failed: {cleanup}; run `sluice cluster down {run_dir}`)")]
    Cleanup {
        /// The first error.
        error: Box<LocalError>,
        /// The cleanup's error.
        cleanup: Box<LocalError>,
        /// The run directory left behind.
        run_dir: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LocalError + '_ {
    move |source| LocalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A local cluster: a handle on its run directory's state. Dropping it changes nothing (the
/// cluster runs until [`down`]).
#[derive(Debug, Clone)]
pub struct LocalCluster {
    run_dir: PathBuf,
    state: State,
}

impl LocalCluster {
    /// Creates a cluster as `options` say (see the module's documentation). On failure, what
    /// was created is removed again and the error names the step that failed.
    pub fn up(options: LocalOptions) -> Result<LocalCluster, LocalError> {
        if options.hosts == 0 || options.hosts > MAX_HOSTS {
            return Err(LocalError::Invalid(format!(
                "{} hosts asked; 1 to {MAX_HOSTS} are possible",
                options.hosts
            )));
        }
        if let Some(rate) = &options.rate {
            state::rate_bytes_per_s(rate).map_err(LocalError::Invalid)?;
        }
        if let Some(name) = &options.name {
            check_name(name)?;
        }
        check_root()?;
        fs::create_dir_all(&options.base_dir).map_err(io_err(&options.base_dir))?;
        let (name, run_dir) = claim_name(&options)?;
        let mut cluster = LocalCluster {
            state: State::new(&name, options.hosts, options.rate.clone()),
            run_dir: run_dir.clone(),
        };
        if let Err(error) = cluster.save().and_then(|()| cluster.build(&options)) {
            return Err(match down(&run_dir) {
                Ok(_) => error,
                Err(cleanup) => LocalError::Cleanup {
                    error: Box::new(error),
                    cleanup: Box::new(cleanup),
                    run_dir: run_dir.display().to_string(),
                },
            });
        }
        Ok(cluster)
    }

    /// The cluster `name` under `base_dir`, as its `state.json` describes it.
    pub fn open(base_dir: &Path, name: &str) -> Result<LocalCluster, LocalError> {
        let run_dir = base_dir.join(name);
        let state = State::load(&run_dir)?;
        Ok(LocalCluster { run_dir, state })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// Its run directory.
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// Its hosts, `h1` first.
    pub fn hosts(&self) -> Vec<LocalHost> {
        self.state
            .hosts
            .iter()
            .map(|h| LocalHost {
                name: h.name.clone(),
                netns: h.netns.clone(),
                address: h.address,
                link: h.veth.clone(),
                worker_pid: h.worker.map(|p| p.pid),
            })
            .collect()
    }

    /// The bridge's address, `10.A.B.1`.
    pub fn bridge_address(&self) -> Ipv4Addr {
        self.state.bridge_address()
    }

    /// The bridge's interface name.
    pub fn bridge(&self) -> &str {
        &self.state.bridge
    }

    /// The URL of its etcd, `https://10.A.B.1:2379`.
    pub fn etcd_url(&self) -> String {
        format!("https://{}:{ETCD_CLIENT_PORT}", self.bridge_address())
    }

    /// The etcd access directory of the cluster's member user (CA, client certificate and
    /// key, login), for controllers run by root on this machine.
    pub fn etcd_access_dir(&self) -> PathBuf {
        self.run_dir.join("etcd-pki").join("client")
    }

    /// The key prefix the cluster's etcd user may read and write, `/sluice/NAME/`.
    pub fn etcd_prefix(&self) -> String {
        format!("/sluice/{}/", self.name())
    }

    /// A client of its etcd as the cluster's member user (the files of
    /// [`etcd_access_dir`](LocalCluster::etcd_access_dir)).
    pub fn etcd(&self) -> Result<Etcd, LocalError> {
        let fail = |message: String| LocalError::EtcdSetup {
            name: self.name().to_string(),
            message,
        };
        let access = EtcdAccess::load(&self.etcd_access_dir()).map_err(|e| fail(e.to_string()))?;
        Etcd::secure(&self.etcd_url(), access).map_err(|e| fail(e.to_string()))
    }

    /// The directory of the workers' own files (key, etcd access, data), owned by the user
    /// they run as.
    pub fn worker_dir(&self) -> PathBuf {
        self.run_dir.join("worker")
    }

    /// The ids the workers run as, once started.
    pub fn worker_ids(&self) -> Option<Ids> {
        self.state.worker_ids
    }

    /// The etcd's process id (once started).
    pub fn etcd_pid(&self) -> Option<u32> {
        self.state.etcd.map(|p| p.pid)
    }

    /// The cluster key's file.
    pub fn key_file(&self) -> PathBuf {
        self.run_dir.join("cluster.key")
    }

    /// The `hosts.toml` file.
    pub fn hosts_file(&self) -> PathBuf {
        self.run_dir.join("hosts.toml")
    }

    fn save(&self) -> Result<(), LocalError> {
        self.state.save(&self.run_dir)
    }

    /// Records `resource` in `state.json`, then creates it with `create`.
    fn create(
        &mut self,
        resource: Resource,
        create: impl FnOnce() -> Result<(), LocalError>,
    ) -> Result<(), LocalError> {
        self.state.resources.push(resource);
        self.save()?;
        create()
    }

    fn build(&mut self, options: &LocalOptions) -> Result<(), LocalError> {
        self.network()?;
        for i in 0..self.state.hosts.len() {
            self.host(i)?;
        }
        self.write_key()?;
        self.start_etcd()?;
        if let Some(worker) = &options.worker {
            self.worker_files(worker)?;
            for i in 0..self.state.hosts.len() {
                self.start_worker(i, worker)?;
            }
        }
        let mut toml = format!(
            "# Hosts of local cluster {} (etcd at {}). Paste into a graph file.\n",
            self.name(),
            self.etcd_url()
        );
        for h in &self.state.hosts {
            toml.push_str(&format!(
                "\n[hosts.{}]\naddress = \"{}\"\n",
                h.name, h.address
            ));
        }
        let path = self.hosts_file();
        fs::write(&path, toml).map_err(io_err(&path))
    }

    /// Picks the subnet and creates the bridge, under the subnet lock.
    fn network(&mut self) -> Result<(), LocalError> {
        let lock_path = Path::new(SUBNET_LOCK);
        if let Some(parent) = lock_path.parent() {
            fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        let lock = File::create(lock_path).map_err(io_err(lock_path))?;
        lock.lock().map_err(io_err(lock_path))?;
        let bridge = self.state.bridge.clone();
        if sys::link_exists(&bridge) {
            return Err(LocalError::Exists {
                name: self.name().to_string(),
                what: format!("interface {bridge}"),
            });
        }
        let used = sys::used_prefixes()?;
        // Subnets recorded by clusters whose bridge is not up yet cannot be seen by `ip`; the
        // lock makes that impossible for clusters created by this code, this covers the rest.
        let taken: BTreeSet<[u8; 2]> = list_states(self.run_dir.parent().unwrap_or(Path::new("/")))
            .into_iter()
            .filter(|s| s.name != self.state.name)
            .map(|s| s.subnet)
            .collect();
        let subnet = sys::free_subnet(state::subnet_of(self.name()), &used, &taken)
            .ok_or_else(|| LocalError::NoSubnet(self.name().to_string()))?;
        self.state.set_subnet(subnet);
        let address = format!("{}/24", self.bridge_address());
        self.create(Resource::Link(bridge.clone()), || {
            run(&["ip", "link", "add", &bridge, "type", "bridge"])?;
            run(&["ip", "addr", "add", &address, "dev", &bridge])?;
            run(&["ip", "link", "set", &bridge, "up"]).map(drop)
        })?;
        drop(lock);
        Ok(())
    }

    fn host(&mut self, i: usize) -> Result<(), LocalError> {
        let h = self.state.hosts[i].clone();
        let bridge = self.state.bridge.clone();
        for (what, exists) in [
            (
                format!("network namespace {}", h.netns),
                sys::netns_exists(&h.netns),
            ),
            (format!("interface {}", h.veth), sys::link_exists(&h.veth)),
        ] {
            if exists {
                return Err(LocalError::Exists {
                    name: self.name().to_string(),
                    what,
                });
            }
        }
        self.create(Resource::Netns(h.netns.clone()), || {
            run(&["ip", "netns", "add", &h.netns]).map(drop)
        })?;
        self.create(Resource::Link(h.veth.clone()), || {
            run(&[
                "ip", "link", "add", &h.veth, "type", "veth", "peer", "name", "eth0", "netns",
                &h.netns,
            ])
            .map(drop)
        })?;
        let ns = h.netns.as_str();
        let address = format!("{}/24", h.address);
        let gateway = self.bridge_address().to_string();
        run(&["ip", "link", "set", &h.veth, "master", &bridge, "up"])?;
        run(&["ip", "-n", ns, "addr", "add", &address, "dev", "eth0"])?;
        run(&["ip", "-n", ns, "link", "set", "eth0", "up"])?;
        run(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        run(&["ip", "-n", ns, "route", "add", "default", "via", &gateway])?;
        if let Some(rate) = &self.state.rate {
            let burst = state::tbf_burst(rate).map_err(LocalError::Invalid)?;
            let tbf = [
                "root", "tbf", "rate", rate, "burst", &burst, "latency", "50ms",
            ];
            // Egress of the root end is the host's download, egress of eth0 its upload.
            let mut down = vec!["tc", "qdisc", "replace", "dev", &h.veth];
            down.extend(tbf);
            run(&down)?;
            let mut up = vec!["tc", "-n", ns, "qdisc", "replace", "dev", "eth0"];
            up.extend(tbf);
            run(&up)?;
        }
        Ok(())
    }

    fn write_key(&self) -> Result<(), LocalError> {
        let path = self.key_file();
        let hex: String = sys::random_bytes(32)?
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err(&path))?;
        file.write_all(format!("{hex}\n").as_bytes())
            .map_err(io_err(&path))
    }

    fn start_etcd(&mut self) -> Result<(), LocalError> {
        let name = self.name().to_string();
        let fail = |message: String| LocalError::EtcdSetup {
            name: name.clone(),
            message,
        };
        let ip = self.bridge_address();
        let pki_dir = self.run_dir.join("etcd-pki");
        let pki = EtcdPki::create(&pki_dir, self.name(), &[IpAddr::V4(ip)])
            .map_err(|e| fail(e.to_string()))?;
        let tls_only = EtcdAccess::load(&pki.client_dir).map_err(|e| fail(e.to_string()))?;
        let mut options = EtcdOptions::new(
            self.name(),
            self.run_dir.join("etcd"),
            SocketAddr::from((ip, ETCD_CLIENT_PORT)),
            SocketAddr::from((ip, ETCD_PEER_PORT)),
        );
        options.log_path = Some(self.run_dir.join("etcd.log"));
        options.new_session = true;
        options.heartbeat_ms = 50;
        // etcd's shortest lease is 1.5 election timeouts: 250 ms lets partition leases of 1 s
        // (lease::PARTITION_TTL_S) be what they say.
        options.election_timeout_ms = 250;
        options.tls = Some((pki.server.clone(), tls_only));
        let server = EtcdServer::start(options).map_err(|source| LocalError::Etcd {
            name: self.name().to_string(),
            source: Box::new(source),
        })?;
        // Recorded at once, so that `down` stops it whatever fails next.
        self.state.etcd = server.pid().and_then(Proc::of);
        self.save()?;
        let root = Login::generate("root").map_err(fail)?;
        let member = Login::generate("sluice").map_err(fail)?;
        let secret = |path: PathBuf, text: String| {
            sluice_net::secure::keys::create_secret(&path, "etcd login file", &text)
                .map_err(|e| fail(e.to_string()))
        };
        secret(pki_dir.join("root.login"), root.to_file_text())?;
        secret(pki.client_dir.join(LOGIN_FILE), member.to_file_text())?;
        // One etcd user per host: it writes its own member record and the leases of the
        // partitions it may host. On one machine any host may be placed as any partition's
        // standby (the graph file decides per run), so each may take every host's leases.
        let names: Vec<String> = self.state.hosts.iter().map(|h| h.name.clone()).collect();
        fs::DirBuilder::new()
            .mode(0o700)
            .create(self.host_logins_dir())
            .map_err(io_err(&self.host_logins_dir()))?;
        let mut hosts = Vec::new();
        for name in &names {
            let login = Login::generate(&host_user(name)).map_err(fail)?;
            secret(self.host_login_file(name), login.to_file_text())?;
            hosts.push(auth::HostGrant {
                login,
                host: name.clone(),
                leases: names.clone(),
            });
        }
        auth::enable_with_hosts(
            &server.client(),
            &root,
            &member,
            &self.etcd_prefix(),
            &hosts,
        )
        .map_err(|e| fail(e.to_string()))?;
        server.detach();
        Ok(())
    }

    /// The workers' own files in `RUN/worker/`, owned by the user they run as: copies of the
    /// cluster key, each host's etcd access (the cluster's certificate, the host's own login)
    /// in `etcd-HOST/`, and their data directory.
    fn worker_files(&mut self, worker: &WorkerSpec) -> Result<(), LocalError> {
        let ids = worker_user::resolve(&worker.user)?;
        self.state.worker_ids = Some(ids);
        self.save()?;
        let dir = self.worker_dir();
        worker_user::own_dir(&dir, ids)?;
        worker_user::own_dir(&dir.join("data"), ids)?;
        worker_user::own_copy(&self.key_file(), &dir.join("cluster.key"), 0o600, ids)?;
        let access = self.etcd_access_dir();
        let names: Vec<String> = self.state.hosts.iter().map(|h| h.name.clone()).collect();
        for host in &names {
            let own = self.worker_etcd_dir(host);
            worker_user::own_dir(&own, ids)?;
            for (name, mode) in [(CA_FILE, 0o644), (CERT_FILE, 0o644), (KEY_FILE, 0o600)] {
                worker_user::own_copy(&access.join(name), &own.join(name), mode, ids)?;
            }
            worker_user::own_copy(
                &self.host_login_file(host),
                &own.join(LOGIN_FILE),
                0o600,
                ids,
            )?;
            // Its identity: listed in its member record, proved by its streams, so a fenced
            // receiver knows which host's sender connects (`crate::lease_check`).
            let made = self.run_dir.join(format!("{host}.identity"));
            if !made.exists() {
                sluice_net::secure::Identity::create(&made).map_err(|e| LocalError::Io {
                    path: made.clone(),
                    source: std::io::Error::other(e.to_string()),
                })?;
            }
            worker_user::own_copy(&made, &self.worker_identity(host), 0o600, ids)?;
        }
        Ok(())
    }

    /// Host `host`'s worker's identity file, `RUN/worker/HOST.identity`, owned by the user
    /// the workers run as.
    pub fn worker_identity(&self, host: &str) -> PathBuf {
        self.worker_dir().join(format!("{host}.identity"))
    }

    /// Where root keeps each host's etcd login (`etcd-pki/hosts/`, mode 700).
    fn host_logins_dir(&self) -> PathBuf {
        self.run_dir.join("etcd-pki").join("hosts")
    }

    /// Host `host`'s etcd login file in [`host_logins_dir`](Self::host_logins_dir).
    fn host_login_file(&self, host: &str) -> PathBuf {
        self.host_logins_dir().join(format!("{host}.login"))
    }

    /// Host `host`'s worker's etcd access directory, `RUN/worker/etcd-HOST/`, owned by the
    /// user the workers run as.
    pub fn worker_etcd_dir(&self, host: &str) -> PathBuf {
        self.worker_dir().join(format!("etcd-{host}"))
    }

    /// Starts host `name`'s worker again (after it died or was killed), its output appended
    /// to the host's log. Fails if the host is unknown or its worker still runs.
    pub fn restart_worker(&mut self, name: &str, worker: &WorkerSpec) -> Result<(), LocalError> {
        let i = self
            .state
            .hosts
            .iter()
            .position(|h| h.name == name)
            .ok_or_else(|| {
                LocalError::Invalid(format!("no host {name} in cluster {}", self.name()))
            })?;
        if self.state.hosts[i].worker.is_some_and(|p| p.alive()) {
            return Err(LocalError::Invalid(format!(
                "host {name}'s worker still runs (pid {})",
                self.state.hosts[i].worker.map_or(0, |p| p.pid)
            )));
        }
        self.start_worker(i, worker)
    }

    fn start_worker(&mut self, i: usize, worker: &WorkerSpec) -> Result<(), LocalError> {
        let h = self.state.hosts[i].clone();
        let log_path = self.run_dir.join(format!("{}.log", h.name));
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(io_err(&log_path))?;
        let err = out.try_clone().map_err(io_err(&log_path))?;
        let listen = format!("{}:{WORKER_PORT}", h.address);
        let etcd = self.etcd_url();
        let own = self.worker_dir();
        let key = own.join("cluster.key").display().to_string();
        let access = self.worker_etcd_dir(&h.name).display().to_string();
        let identity = self.worker_identity(&h.name).display().to_string();
        let data = own.join("data");
        let data_arg = data.display().to_string();
        // An absolute path, so that the log and `ps` say which executable runs.
        let exe_path = fs::canonicalize(&worker.exe).unwrap_or_else(|_| worker.exe.clone());
        let exe = exe_path.display().to_string();
        let ids = match self.state.worker_ids {
            Some(ids) => ids,
            None => worker_user::resolve(&worker.user)?,
        };
        // `ip netns exec` needs root to enter the namespace; privileges drop after it.
        let drop_to = worker_user::drop_privileges(ids);
        let mut argv: Vec<&str> = vec!["setsid", "ip", "netns", "exec", &h.netns];
        argv.extend(drop_to.iter().map(String::as_str));
        argv.extend([
            exe.as_str(),
            "worker",
            "--cluster",
            &self.state.name,
            "--name",
            &h.name,
            "--listen",
            &listen,
            "--etcd",
            &etcd,
            "--etcd-access",
            &access,
            "--key-file",
            &key,
            "--data-dir",
            &data_arg,
            "--identity",
            &identity,
            // One machine, the operator's own: the controller's paths, as they are, where
            // the worker's user may read and write them.
            "--allow-paths-outside",
        ]);
        if !exe_path.is_file() {
            return Err(LocalError::Command {
                command: argv.join(" "),
                stderr: format!("{exe}: no such file (the worker executable)"),
            });
        }
        // `setsid`, `ip netns exec` and `setpriv` all exec, so the pid is the worker's.
        let child = Command::new(argv[0])
            .args(&argv[1..])
            .current_dir(&data)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| LocalError::Command {
                command: argv.join(" "),
                stderr: e.to_string(),
            })?;
        self.state.hosts[i].worker = Some(Proc::of(child.id()).unwrap_or(Proc {
            pid: child.id(),
            start: 0,
        }));
        self.save()
    }
}

/// The clusters under `base_dir` (those with a readable `state.json`), sorted by name.
pub fn list(base_dir: &Path) -> Result<Vec<LocalCluster>, LocalError> {
    if !base_dir.exists() {
        return Ok(Vec::new());
    }
    fs::read_dir(base_dir).map_err(io_err(base_dir))?;
    let mut clusters: Vec<LocalCluster> = list_states(base_dir)
        .into_iter()
        .map(|state| LocalCluster {
            run_dir: base_dir.join(&state.name),
            state,
        })
        .collect();
    clusters.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(clusters)
}

fn list_states(base_dir: &Path) -> Vec<State> {
    let Ok(dir) = fs::read_dir(base_dir) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| State::load(&e.path()).ok())
        .collect()
}

/// Removes the cluster whose run directory is `run_dir`: stops its workers and etcd (SIGTERM,
/// SIGKILL after 5 s), deletes its namespaces, links and bridge, then the directory. Every step
/// tolerates what is already gone, so it is idempotent and also cleans up after a crash. A step
/// that fails does not stop the others; the directory (and its `state.json`) is then kept for
/// another try and the first error returned. Returns what it removed, one description per item.
///
/// A directory without `state.json` is only removed when it is empty (an `up` that died at
/// once): `down` never deletes a directory it cannot tell is a cluster's.
pub fn down(run_dir: &Path) -> Result<Vec<String>, LocalError> {
    let mut removed = Vec::new();
    if !run_dir.exists() {
        return Ok(removed);
    }
    let state = match State::load(run_dir) {
        Ok(state) => Some(state),
        Err(e) => {
            let entries: Vec<_> = fs::read_dir(run_dir)
                .map_err(io_err(run_dir))?
                .flatten()
                .map(|e| e.file_name())
                .filter(|n| n != "state.json.tmp")
                .collect();
            if !entries.is_empty() {
                return Err(e);
            }
            None
        }
    };
    // Processes first: those recorded, those in the namespaces, and those started with this
    // run directory's files (recorded or not: `up` may have died before writing their pids).
    let mut procs: Vec<(Proc, String)> = Vec::new();
    if let Some(s) = &state {
        procs.extend(s.etcd.map(|p| (p, "etcd".to_string())));
        for h in &s.hosts {
            procs.extend(h.worker.map(|p| (p, format!("worker {}", h.name))));
        }
        for r in &s.resources {
            if let Resource::Netns(ns) = r {
                for p in sys::processes_in_netns(ns) {
                    procs.push((p, format!("process in {ns}")));
                }
            }
        }
    }
    let etcd_dir = run_dir.join("etcd").display().to_string();
    for p in sys::processes_with_arg("--data-dir", &etcd_dir) {
        procs.push((p, "etcd".into()));
    }
    for key in [
        run_dir.join("cluster.key"),
        run_dir.join("worker").join("cluster.key"),
    ] {
        for p in sys::processes_with_arg("--key-file", &key.display().to_string()) {
            procs.push((p, "worker".into()));
        }
    }
    let mut seen = BTreeSet::new();
    procs.retain(|(p, _)| seen.insert(p.pid));
    let list: Vec<Proc> = procs.iter().map(|(p, _)| *p).collect();
    let stopped = sys::stop_processes(&list, Duration::from_secs(5));
    let mut first_error = None;
    for (p, what) in &procs {
        if stopped.contains(p) {
            removed.push(format!("{what} (pid {})", p.pid));
        }
        if p.alive() {
            first_error.get_or_insert(LocalError::Command {
                command: format!("kill -KILL {}", p.pid),
                stderr: format!("{what} is still running after SIGKILL"),
            });
        }
    }
    if let Some(s) = &state {
        for r in s.resources.iter().rev() {
            let result = match r {
                Resource::Netns(ns) => run_removal(&["ip", "netns", "delete", ns]),
                Resource::Link(link) => run_removal(&["ip", "link", "delete", link]),
            };
            match result {
                Ok(true) => removed.push(r.to_string()),
                Ok(false) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    match fs::remove_dir_all(run_dir) {
        Ok(()) => removed.push(format!("directory {}", run_dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(run_dir)(e)),
    }
    Ok(removed)
}

fn check_root() -> Result<(), LocalError> {
    if rustix::process::geteuid().is_root() {
        Ok(())
    } else {
        Err(LocalError::NotRoot)
    }
}

/// Valid names: 1 to 9 of `[a-z0-9]`, starting with a letter.
fn check_name(name: &str) -> Result<(), LocalError> {
    let ok = (1..=9).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(LocalError::Invalid(format!(
            "bad cluster name {name:?}: 1 to 9 lower-case letters and digits, starting with a \
             letter (interface names are at most 15 characters)"
        )))
    }
}

/// Creates the run directory, which claims the name in this base directory.
fn claim_name(options: &LocalOptions) -> Result<(String, PathBuf), LocalError> {
    for _ in 0..100 {
        let name = match &options.name {
            Some(n) => n.clone(),
            None => {
                let r = sys::random_bytes(3)?;
                format!(
                    "c{:05x}",
                    u32::from_be_bytes([0, r[0], r[1], r[2]]) & 0xfffff
                )
            }
        };
        let run_dir = options.base_dir.join(&name);
        let bridge_taken = sys::link_exists(&state::bridge_name(&name));
        if !bridge_taken {
            match fs::create_dir(&run_dir) {
                Ok(()) => return Ok((name, run_dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_err(&run_dir)(e)),
            }
        }
        if options.name.is_some() {
            return Err(LocalError::Exists {
                what: if bridge_taken {
                    format!("interface {}", state::bridge_name(&name))
                } else {
                    format!("directory {}", run_dir.display())
                },
                name,
            });
        }
    }
    Err(LocalError::Invalid(
        "no unused cluster name found in 100 tries".into(),
    ))
}

/// The etcd user (and role) of host `host`'s worker.
pub fn host_user(host: &str) -> String {
    format!("sluice-{host}")
}
