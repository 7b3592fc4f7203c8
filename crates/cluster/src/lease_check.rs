//! The fencing revision a stream sender claims, read back from etcd.
//!
//! A fenced receiver (`tcp_source` with `fenced = true`) lets a HELLO with a higher lease
//! revision displace its primary. The revision is the sender's word: any holder of the stream
//! key could claim 2^64-1 and lock the real primary out. So a worker installs a [`LeaseCheck`]
//! as the process's [`RevisionCheck`](sluice_net::fence::RevisionCheck) for each run it loads;
//! the receivers of its partition (which name the senders' fence, `fenced_by`) ask it before
//! a raise, and it confirms the claim only if, in the worker's own etcd and with its own
//! credentials:
//!
//! - the partition's lease key (`/sluice/CLUSTER/leases/HOST/RUN`,
//!   [`primary_key`](crate::membership::primary_key)) exists now, so its lease is alive;
//! - its create revision is exactly the claimed revision;
//! - its value names a holder host that is a registered member, and when that host's member
//!   record lists an identity (`"identity"`, the worker's static public key), the
//!   connection's secure channel proved that very key.
//!
//! Every call is bounded (the client's connect and I/O timeouts below, and the receiver
//! abandons a check after [`CHECK_TIMEOUT`](sluice_net::fence::CHECK_TIMEOUT)): an etcd that
//! does not answer refuses the raise and the current primary keeps the stream.

use crate::etcd::Etcd;
use crate::membership;
use sluice_net::escape;
use sluice_net::fence::{RevisionCheck, RevisionClaim};
use sluice_net::secure::keys::hex32;
use std::time::Duration;

/// The connect timeout of a check's etcd calls.
const CONNECT: Duration = Duration::from_millis(500);
/// The I/O timeout of a check's etcd calls (a login and a read may both be needed).
const IO: Duration = Duration::from_millis(600);

/// Confirms claimed lease revisions of run `run` of cluster `cluster` in `etcd` (see the
/// module documentation).
#[derive(Debug, Clone)]
pub struct LeaseCheck {
    etcd: Etcd,
    cluster: String,
    run: String,
}

impl LeaseCheck {
    /// A check against `etcd` (the worker's own client: its calls get short timeouts here)
    /// for the leases of run `run` of `cluster`.
    pub fn new(etcd: &Etcd, cluster: &str, run: &str) -> LeaseCheck {
        LeaseCheck {
            etcd: etcd.clone().with_timeouts(CONNECT, IO),
            cluster: cluster.to_string(),
            run: run.to_string(),
        }
    }

    fn confirm(&self, claim: &RevisionClaim) -> Result<Option<[u8; 32]>, String> {
        let key = membership::primary_key(&self.cluster, &self.run, &claim.fence);
        let entry = self
            .etcd
            .get_entry(&key)
            .map_err(|e| format!("cannot read lease {key}: {e}"))?
            .ok_or_else(|| format!("lease {key} is not held by anyone"))?;
        if u64::try_from(entry.create_revision).ok() != Some(claim.revision) {
            return Err(format!(
                "lease {key} was taken at revision {}, not {}",
                entry.create_revision, claim.revision
            ));
        }
        let holder = std::str::from_utf8(&entry.value)
            .map_err(|_| format!("lease {key}: its holder is not a host name"))?;
        let record_key = membership::worker_key(&self.cluster, holder);
        let record = self
            .etcd
            .get(&record_key)
            .map_err(|e| format!("cannot read {record_key}: {e}"))?
            .ok_or_else(|| {
                format!(
                    "lease {key} is held by host {}, which is not a registered member",
                    escape::text(holder)
                )
            })?;
        let Some(listed) = membership::record_identity(&record) else {
            // No identity to bind the holder to: the lease itself is what was checked.
            return Ok(None);
        };
        match claim.peer_key {
            Some(proved) if proved == listed => Ok(Some(listed)),
            Some(proved) => Err(format!(
                "lease {key} is held by host {}, whose identity is {}; the sender proved {}",
                escape::text(holder),
                hex32(&listed),
                hex32(&proved)
            )),
            None => Err(format!(
                "lease {key} is held by host {}, which has an identity; this sender proved none",
                escape::text(holder)
            )),
        }
    }
}

impl RevisionCheck for LeaseCheck {
    fn check(&self, claim: &RevisionClaim) -> Result<Option<[u8; 32]>, String> {
        self.confirm(claim)
    }
}
