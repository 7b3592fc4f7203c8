//! Partition leases: which replica of a protected partition is its primary.
//!
//! A partition with a hot standby runs on two hosts. The one that holds the partition's key in
//! etcd (`/sluice/CLUSTER/leases/HOST/RUN`, created under its own lease) is the primary;
//! the key's create revision is its fencing token ([`sluice_net::Fence`]). The primary takes
//! the key when it loads ([`PartitionLease::try_acquire`]); the standby [`Campaign`]s for it
//! and wins only once the key has gone, i.e. once the primary's lease expired (it died or lost
//! etcd) or was revoked (it ended). A later holder's create revision is always higher, so
//! receivers can refuse the old primary if it ever wakes up.
//!
//! ```no_run
//! use sluice_cluster::etcd::Etcd;
//! use sluice_cluster::lease::{Campaign, CampaignEvent, PartitionLease};
//! let etcd = Etcd::new("http://127.0.0.1:2379")?;
//! let key = "/sluice/c/leases/h2/r";
//! let primary = PartitionLease::try_acquire(&etcd, key, "h2", 1)?.expect("the key is free");
//! let standby = Campaign::start(etcd.clone(), key, "h5", 1, |event| {
//!     if let CampaignEvent::Won { revision, .. } = event {
//!         println!("h5 is primary at revision {revision}");
//!     }
//! })?;
//! primary.release()?; // or the primary dies and its lease expires
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::etcd::{Etcd, EtcdError, KeepAlive, LeaseId};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The TTL of a partition lease in seconds: a dead primary's standby takes over within about
/// this long (plus a campaign period). etcd honours it only with an election timeout of at
/// most 2/3 s (its minimum TTL is 1.5 election timeouts): local clusters run with 250 ms.
pub const PARTITION_TTL_S: i64 = 1;

/// Seconds the mark of a finished partition ([`finished_key`]) stays: a standby's campaign
/// looks for it every [`Campaign::PERIOD`].
pub const FINISHED_TTL_S: i64 = 30;

/// A held partition key: created under a lease that a [`KeepAlive`] renews. Dropping it (or
/// [`release`](PartitionLease::release)) revokes the lease, so the key goes at once and a
/// standby need not wait out the TTL.
pub struct PartitionLease {
    etcd: Etcd,
    key: String,
    lease: LeaseId,
    ttl_s: i64,
    revision: i64,
    keep_alive: Option<KeepAlive>,
    released: bool,
}

impl PartitionLease {
    /// Tries once to take `key`: grants a lease of `ttl_s` seconds and creates the key (its
    /// value `holder`) under it, if the key does not exist. `Ok(None)` when another holds it.
    pub fn try_acquire(
        etcd: &Etcd,
        key: &str,
        holder: &str,
        ttl_s: i64,
    ) -> Result<Option<PartitionLease>, EtcdError> {
        // etcd may grant more than asked (its minimum is 1.5 election timeouts): renew and
        // judge the lease by what it granted.
        let (lease, ttl_s) = etcd.grant_with_ttl(ttl_s)?;
        let mut held = PartitionLease {
            etcd: etcd.clone(),
            key: key.to_string(),
            lease,
            ttl_s,
            revision: 0,
            keep_alive: None,
            released: false,
        };
        // On any early return `held` drops and revokes the lease it does not need.
        if !etcd.put_if_absent(key, holder.as_bytes(), Some(lease))? {
            return Ok(None);
        }
        held.keep_alive = Some(KeepAlive::start(etcd.clone(), lease, ttl_s));
        match etcd.get_entry(key)? {
            // Ours (not a successor's, had ours lapsed already): its create revision is the
            // fencing token.
            Some(entry) if entry.lease == Some(lease) => {
                held.revision = entry.create_revision;
                Ok(Some(held))
            }
            _ => Ok(None),
        }
    }

    /// The key's create revision: the fencing token of this holder (above 0).
    pub fn revision(&self) -> i64 {
        self.revision
    }

    /// The lease's TTL as etcd granted it, in seconds.
    pub fn ttl_s(&self) -> i64 {
        self.ttl_s
    }

    /// The key held.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether the lease is still renewed. Once false, a standby may hold the key: this
    /// holder is fenced and must stop acting as primary.
    pub fn is_alive(&self) -> bool {
        self.keep_alive.as_ref().is_some_and(KeepAlive::is_alive)
    }

    /// Why renewing the lease last failed, if it did.
    pub fn last_error(&self) -> Option<String> {
        self.keep_alive.as_ref().and_then(KeepAlive::last_error)
    }

    /// Stops renewing and revokes the lease: the key goes now.
    pub fn release(mut self) -> Result<(), EtcdError> {
        self.revoke()
    }

    /// The partition ended normally: says so (a key beside the partition's, see
    /// [`finished_key`]) before it releases the lease, so that a standby's campaign ends
    /// instead of taking over a finished partition.
    pub fn finish(mut self) -> Result<(), EtcdError> {
        // Under a lease of its own: the mark is needed only while a standby campaigns, and
        // goes by itself (no one else may write beneath the partition's lease prefix).
        let marked = self.etcd.grant(FINISHED_TTL_S).and_then(|mark| {
            self.etcd
                .put(&finished_key(&self.key), b"finished", Some(mark))
        });
        let revoked = self.revoke();
        marked.and(revoked)
    }

    fn revoke(&mut self) -> Result<(), EtcdError> {
        self.keep_alive.take();
        if std::mem::replace(&mut self.released, true) {
            return Ok(());
        }
        match self.etcd.revoke(self.lease) {
            // Gone already: the key went with it.
            Ok(()) | Err(EtcdError::LeaseExpired { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The key a primary sets when its partition ended normally: the partition's key with
/// `/finished` appended.
pub fn finished_key(key: &str) -> String {
    format!("{key}/finished")
}

impl Drop for PartitionLease {
    fn drop(&mut self) {
        let _ = self.revoke();
    }
}

/// What a [`Campaign`] reports (from its thread).
#[derive(Debug, Clone, PartialEq)]
pub enum CampaignEvent {
    /// The campaign took the key.
    Won {
        /// The key's create revision: the new fencing token.
        revision: i64,
        /// How long after the campaign first saw the key absent it held it.
        after_vanished: Duration,
    },
    /// etcd could not be asked (reported once per distinct message; the campaign goes on).
    Error(String),
    /// The primary ended its partition normally (see [`PartitionLease::finish`]): nothing
    /// to take over. The campaign ends.
    Finished,
}

/// A standby's campaign for a partition key: checks every [`Campaign::PERIOD`] whether the
/// key is absent and, if so, tries to take it. It stops when it wins or is stopped; the won
/// lease is renewed until [`Campaign::stop`] hands it over.
pub struct Campaign {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    stop: Mutex<bool>,
    wake: Condvar,
    won: Mutex<Option<PartitionLease>>,
    has_won: AtomicBool,
    finished: AtomicBool,
}

impl Campaign {
    /// How often the campaign looks at the key.
    pub const PERIOD: Duration = Duration::from_millis(50);

    /// Starts campaigning for `key` as `holder`, with leases of `ttl_s` seconds. `on_event`
    /// runs on the campaign's thread: on [`CampaignEvent::Won`] the caller promotes its fence.
    /// Fails only if its thread cannot be started.
    pub fn start(
        etcd: Etcd,
        key: &str,
        holder: &str,
        ttl_s: i64,
        mut on_event: impl FnMut(CampaignEvent) + Send + 'static,
    ) -> std::io::Result<Campaign> {
        let shared = Arc::new(Shared {
            stop: Mutex::new(false),
            wake: Condvar::new(),
            won: Mutex::new(None),
            has_won: AtomicBool::new(false),
            finished: AtomicBool::new(false),
        });
        let s = Arc::clone(&shared);
        let (key, holder) = (key.to_string(), holder.to_string());
        // Short timeouts: a stop must not wait on an unreachable etcd for long.
        let etcd = etcd.with_timeouts(Duration::from_millis(250), Duration::from_millis(500));
        let thread = std::thread::Builder::new()
            .name("lease-campaign".into())
            .spawn(move || campaign(&etcd, &key, &holder, ttl_s, &s, &mut on_event));
        Ok(Campaign {
            shared,
            thread: Some(thread?),
        })
    }

    /// Whether the campaign has taken the key.
    pub fn has_won(&self) -> bool {
        self.shared.has_won.load(Ordering::Acquire)
    }

    /// Whether the primary ended its partition normally (the campaign then ends unwon).
    pub fn primary_finished(&self) -> bool {
        self.shared.finished.load(Ordering::Acquire)
    }

    /// Whether the campaign won and has since lost the lease (the holder is fenced).
    pub fn lease_lost(&self) -> bool {
        self.has_won()
            && lock(&self.shared.won)
                .as_ref()
                .is_some_and(|l| !l.is_alive())
    }

    /// Why renewing the won lease last failed, if it did.
    pub fn last_error(&self) -> Option<String> {
        lock(&self.shared.won)
            .as_ref()
            .and_then(PartitionLease::last_error)
    }

    /// Ends the campaign; the lease if it won (still renewed, revoked when dropped).
    pub fn stop(mut self) -> Option<PartitionLease> {
        self.end();
        lock(&self.shared.won).take()
    }

    fn end(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Campaign {
    fn drop(&mut self) {
        self.end();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One look at the key.
enum Attempt {
    /// Someone holds it (or took it first).
    Held,
    /// The campaign took it: the lease, and since when the key had been absent.
    /// (Boxed: a secured etcd client made the lease far larger than the other variants.)
    Won(Box<PartitionLease>, Instant),
    /// The primary ended normally.
    Finished,
}

fn campaign(
    etcd: &Etcd,
    key: &str,
    holder: &str,
    ttl_s: i64,
    shared: &Shared,
    on_event: &mut dyn FnMut(CampaignEvent),
) {
    let mut absent_since: Option<Instant> = None;
    let mut last_error = String::new();
    loop {
        {
            let stop = lock(&shared.stop);
            let (stop, _) = shared
                .wake
                .wait_timeout_while(stop, Campaign::PERIOD, |s| !*s)
                .unwrap_or_else(|p| p.into_inner());
            if *stop {
                return;
            }
        }
        let attempt = etcd.get_entry(key).and_then(|entry| {
            if entry.is_some() {
                absent_since = None;
                return Ok(Attempt::Held);
            }
            if etcd.get(&finished_key(key))?.is_some() {
                return Ok(Attempt::Finished);
            }
            let since = *absent_since.get_or_insert_with(Instant::now);
            Ok(
                match PartitionLease::try_acquire(etcd, key, holder, ttl_s)? {
                    Some(lease) => Attempt::Won(Box::new(lease), since),
                    None => Attempt::Held,
                },
            )
        });
        match attempt {
            Ok(Attempt::Finished) => {
                shared.finished.store(true, Ordering::Release);
                on_event(CampaignEvent::Finished);
                return;
            }
            Ok(Attempt::Won(lease, since)) => {
                let revision = lease.revision();
                *lock(&shared.won) = Some(*lease);
                shared.has_won.store(true, Ordering::Release);
                on_event(CampaignEvent::Won {
                    revision,
                    after_vanished: since.elapsed(),
                });
                return;
            }
            Ok(Attempt::Held) => {}
            Err(e) => {
                let message = e.to_string();
                if message != last_error {
                    on_event(CampaignEvent::Error(message.clone()));
                    last_error = message;
                }
            }
        }
    }
}
