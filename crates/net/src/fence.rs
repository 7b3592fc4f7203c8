//! Fencing tokens: which of a partition's replicas may write to a stream.
//!
//! A partition that has a hot standby runs twice, on its primary host and on its standby host,
//! and both replicas' `tcp_sink`s connect to the same receivers. Each sink names a [`Fence`]
//! (graph parameter `fence`): the revision of the etcd lease its process holds for the
//! partition. Revision 0 means *standby*: the sink connects, says so in its HELLO, sends
//! nothing and only releases what the receiver acknowledges having received from the primary.
//! A revision above 0 means *primary*: the sink sends, its HELLO carrying the revision. When
//! the process wins the lease (the old primary's expired), it sets the new revision and the
//! sink reconnects as primary; the receiver (`fenced = true`) then drops the old primary's
//! connection and refuses every later HELLO with an older revision, so a primary that was
//! frozen past its lease (a zombie) can never write again.
//!
//! Fences are process-wide and found by name, because the graph file that builds the sinks
//! cannot carry a handle: the worker sets the revision of the fence its partition's sinks
//! name.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// A shared lease revision (see the module documentation). Cloning it shares it.
#[derive(Debug, Clone, Default)]
pub struct Fence(Arc<AtomicU64>);

impl PartialEq for Fence {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The process's fences by name.
fn fences() -> &'static Mutex<BTreeMap<String, Fence>> {
    static FENCES: OnceLock<Mutex<BTreeMap<String, Fence>>> = OnceLock::new();
    FENCES.get_or_init(Default::default)
}

impl Fence {
    /// The process-wide fence called `name` (created at revision 0, standby, the first time).
    pub fn named(name: &str) -> Fence {
        let mut map = fences().lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(name.to_string()).or_default().clone()
    }

    /// Forgets the fence called `name`: the next [`Fence::named`] makes a new one at revision 0
    /// (a worker does this before it loads the next run's partition).
    pub fn forget(name: &str) {
        fences()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
    }

    /// The revision: 0 while standby, the lease's revision once primary.
    pub fn revision(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Sets the revision (a process that won the lease). Revisions only rise: a lower value
    /// than the current one is ignored.
    pub fn promote(&self, revision: u64) {
        self.0.fetch_max(revision, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::Fence;

    #[test]
    fn named_fences_are_shared_and_only_rise() {
        let a = Fence::named("fence-test-a");
        assert_eq!(a.revision(), 0);
        Fence::named("fence-test-a").promote(7);
        assert_eq!(a.revision(), 7);
        a.promote(3);
        assert_eq!(a.revision(), 7);
        assert_eq!(Fence::named("fence-test-b").revision(), 0);
        Fence::forget("fence-test-a");
        assert_eq!(Fence::named("fence-test-a").revision(), 0);
        assert_eq!(a.revision(), 7, "a forgotten fence's holders keep theirs");
    }
}
