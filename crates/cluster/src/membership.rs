//! Membership and placement in etcd: where workers register and runs record what runs where.
//!
//! ```text
//! /sluice/CLUSTER/workers/NAME          {"name", "control": "ip:port", "pid", "version",
//!                                       "identity": HEX (when the worker has one)}
//!                                       under the worker's lease (TTL 3 s, kept alive)
//! /sluice/CLUSTER/runs/RUN/hosts/HOST   the partition HOST runs (a graph file), under the
//!                                       controller's lease while the run lasts
//! /sluice/CLUSTER/leases/HOST/RUN      the host name of the replica that is primary for
//!                                       HOST's partition in run RUN (when HOST has a
//!                                       standby), under that replica's lease (TTL 1 s); a
//!                                       host's etcd role may write the leases of the
//!                                       partitions it may host, `leases/HOST/`
//! /sluice/CLUSTER/leases/HOST/RUN/finished  set by the primary when the partition ended
//!                                       normally, under a lease of its own (30 s)
//! ```
//!
//! A worker that dies stops renewing its lease and disappears from the list within the TTL.

use crate::etcd::{Etcd, EtcdError, KeepAlive, LeaseId};
use sluice_runtime::StopHandle;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// Seconds a worker's registration outlives its last renewal.
pub const WORKER_TTL_S: i64 = 3;

/// How often [`keep_registered`] checks that its registration is alive.
const RECHECK: Duration = Duration::from_millis(200);

/// The key of worker `name` of `cluster`.
pub fn worker_key(cluster: &str, name: &str) -> String {
    format!("/sluice/{cluster}/workers/{name}")
}

/// The prefix of a run's records.
pub fn run_prefix(cluster: &str, run: &str) -> String {
    format!("/sluice/{cluster}/runs/{run}/")
}

/// The key whose holder is primary for protected host `host`'s partition in run `run`.
pub fn primary_key(cluster: &str, run: &str, host: &str) -> String {
    format!("{}{run}", lease_prefix(cluster, host))
}

/// The prefix of protected host `host`'s partition leases, of every run: what the etcd role
/// of a host that may host that partition may write (see [`crate::etcd::auth::HostGrant`]).
pub fn lease_prefix(cluster: &str, host: &str) -> String {
    format!("/sluice/{cluster}/leases/{host}/")
}

/// A worker's registration, kept alive until dropped (then revoked: the key goes at once).
pub struct Registration {
    etcd: Etcd,
    lease: LeaseId,
    /// The identity the record lists (registering again lists it again).
    identity: Option<[u8; 32]>,
    keep_alive: Option<KeepAlive>,
}

impl Registration {
    /// Whether etcd still renews the registration.
    pub fn is_alive(&self) -> bool {
        self.keep_alive.as_ref().is_some_and(KeepAlive::is_alive)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.keep_alive.take();
        let _ = self.etcd.revoke(self.lease);
    }
}

/// The identity (static public key) a member record lists, if it lists a valid one.
pub fn record_identity(record: &[u8]) -> Option<[u8; 32]> {
    let value = serde_json::from_slice::<serde_json::Value>(record).ok()?;
    sluice_net::secure::keys::parse_hex32(value["identity"].as_str()?)
}

/// Registers worker `name` of `cluster`, reachable at `control`, with its identity's public
/// key when it has one (a fenced receiver binds a lease's holder to it, see
/// [`lease_check`](crate::lease_check)).
pub fn register(
    etcd: &Etcd,
    cluster: &str,
    name: &str,
    control: SocketAddr,
    identity: Option<[u8; 32]>,
) -> Result<Registration, EtcdError> {
    let lease = etcd.grant(WORKER_TTL_S)?;
    let mut record = serde_json::json!({
        "name": name,
        "control": control.to_string(),
        "pid": std::process::id(),
        "version": env!("CARGO_PKG_VERSION"),
    });
    if let Some(key) = identity {
        record["identity"] = sluice_net::secure::keys::hex32(&key).into();
    }
    etcd.put(
        &worker_key(cluster, name),
        record.to_string().as_bytes(),
        Some(lease),
    )?;
    Ok(Registration {
        etcd: etcd.clone(),
        lease,
        identity,
        keep_alive: Some(KeepAlive::start(etcd.clone(), lease, WORKER_TTL_S)),
    })
}

/// What [`keep_registered`] has to report, for its caller to print or log.
#[derive(Debug)]
pub enum RegistrationEvent<'a> {
    /// The registration's lease had expired (the host was cut off, or etcd was away, longer
    /// than its TTL); the worker is registered again.
    Renewed,
    /// Registering again failed; reported once per outage, while tries go on every 200 ms.
    Retrying(&'a EtcdError),
}

/// Keeps worker `name` of `cluster` registered until `stop`: a registration whose lease etcd
/// let expire is made again (with the same identity) once etcd answers. Checks every 200 ms; `report` hears of each
/// renewal and of the first failure of each outage. The registration is revoked on return.
pub fn keep_registered(
    mut registration: Registration,
    etcd: &Etcd,
    cluster: &str,
    name: &str,
    control: SocketAddr,
    stop: &StopHandle,
    mut report: impl FnMut(RegistrationEvent<'_>),
) {
    let mut said = false;
    while !stop.is_stopped() {
        std::thread::sleep(RECHECK);
        if registration.is_alive() {
            continue;
        }
        match register(etcd, cluster, name, control, registration.identity) {
            Ok(again) => {
                report(RegistrationEvent::Renewed);
                registration = again;
                said = false;
            }
            // Once per outage: the next tries follow every 200 ms.
            Err(e) if !said => {
                report(RegistrationEvent::Retrying(&e));
                said = true;
            }
            Err(_) => {}
        }
    }
    drop(registration);
}

/// The registered workers of `cluster`: name → control address. A record that is not a
/// worker's is skipped with a warning naming its key.
pub fn workers(etcd: &Etcd, cluster: &str) -> Result<BTreeMap<String, SocketAddr>, EtcdError> {
    let prefix = format!("/sluice/{cluster}/workers/");
    let mut found = BTreeMap::new();
    for (key, value) in etcd.get_prefix(&prefix)? {
        let name = key.trim_start_matches(&prefix).to_string();
        let control = serde_json::from_slice::<serde_json::Value>(&value)
            .ok()
            .and_then(|r| r["control"].as_str().and_then(|c| c.parse().ok()));
        match control {
            Some(addr) => {
                found.insert(name, addr);
            }
            None => eprintln!("sluice: etcd key {key} is not a worker record; skipped"),
        }
    }
    Ok(found)
}

/// Waits (at most `timeout`) until every worker in `names` has registered.
pub fn wait_for(
    etcd: &Etcd,
    cluster: &str,
    names: &[String],
    timeout: std::time::Duration,
) -> Result<(), String> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let registered = workers(etcd, cluster).map_err(|e| e.to_string())?;
        let missing: Vec<&str> = names
            .iter()
            .filter(|n| !registered.contains_key(*n))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(format!(
                "cluster {cluster}: workers {} did not register in etcd within {:.0} s",
                missing.join(", "),
                timeout.as_secs_f64()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Records a run's placement under the controller's lease; the records go when the
/// returned guard drops (or the lease expires, if the controller dies).
pub struct RunRecord {
    etcd: Etcd,
    prefix: String,
    lease: LeaseId,
    keep_alive: Option<KeepAlive>,
}

impl RunRecord {
    /// Writes each host's partition under `/sluice/CLUSTER/runs/RUN/hosts/`.
    pub fn write(
        etcd: &Etcd,
        cluster: &str,
        run: &str,
        partitions: &[(String, String)],
    ) -> Result<RunRecord, EtcdError> {
        let ttl = 10;
        let lease = etcd.grant(ttl)?;
        let prefix = run_prefix(cluster, run);
        for (host, text) in partitions {
            etcd.put(
                &format!("{prefix}hosts/{host}"),
                text.as_bytes(),
                Some(lease),
            )?;
        }
        Ok(RunRecord {
            etcd: etcd.clone(),
            prefix,
            lease,
            keep_alive: Some(KeepAlive::start(etcd.clone(), lease, ttl)),
        })
    }
}

impl Drop for RunRecord {
    fn drop(&mut self) {
        self.keep_alive.take();
        let _ = self.etcd.delete_prefix(&self.prefix);
        let _ = self.etcd.revoke(self.lease);
    }
}
