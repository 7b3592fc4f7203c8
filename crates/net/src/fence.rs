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
//!
//! **Warm standbys.** A partition with a *warm* standby runs once, on its primary; the standby
//! starts the same partition only when it wins the lease. Its nodes then start fresh, so they
//! must be re-primed from input sent again: the partition's sender (a `tcp_sink` with a
//! [`WarmMap`]) maps every offset its receiver acknowledges to the input offset whose effect
//! on the outputs is complete ([`Fence::input_acknowledged`]), and the partition's receiver
//! acknowledges upstream only that far (so upstream keeps the rest, plus the declared
//! history). A partition that starts (the primary at first, a promoted standby later) learns
//! from its receiver's WELCOME where the output stream stands, starts its input that far back
//! that its fresh nodes are exact again by then ([`Fence::start`]), and drops the outputs
//! its receiver already has.

use crate::AckHandle;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// A shared lease revision, and a warm partition's input acknowledgement and start (see the
/// module documentation). Cloning it shares it.
#[derive(Debug, Clone, Default)]
pub struct Fence(Arc<State>);

#[derive(Debug, Default)]
struct State {
    revision: AtomicU64,
    input_acknowledged: AckHandle,
    start: Mutex<Option<u64>>,
}

/// How a warm partition's output offsets map to its input offsets, from the memory its blocks
/// declare (see `sluice_graph::chain_memory`): `decimation` input items per output item, and
/// `lag` outputs after which a fresh partition started at an input offset that is a multiple
/// of `decimation` gives the uninterrupted run's outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmMap {
    /// Input items per output item.
    pub decimation: u64,
    /// Outputs of a fresh start that differ from the uninterrupted run's.
    pub lag: u64,
}

impl WarmMap {
    /// The input offset from which to start fresh nodes so that every output from `resume`
    /// on is exact, and the output offset of their first output: `(input, output)`.
    pub fn start_for(&self, resume: u64) -> (u64, u64) {
        let output = resume.saturating_sub(self.lag);
        // `resume` is the peer's: saturate rather than wrap (a start beyond every offset
        // simply waits).
        (output.saturating_mul(self.decimation), output)
    }

    /// The input offset below which every item's effect on the outputs below `acked` is
    /// complete.
    pub fn input_for(&self, acked: u64) -> u64 {
        acked.saturating_mul(self.decimation)
    }
}

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
        self.0.revision.load(Ordering::Acquire)
    }

    /// Sets the revision (a process that won the lease). Revisions only rise: a lower value
    /// than the current one is ignored.
    pub fn promote(&self, revision: u64) {
        self.0.revision.fetch_max(revision, Ordering::AcqRel);
    }

    /// A warm partition's input offset whose effect on acknowledged outputs is complete: its
    /// sender advances it, its receiver acknowledges upstream no further.
    pub fn input_acknowledged(&self) -> AckHandle {
        self.0.input_acknowledged.clone()
    }

    /// The input offset a warm partition starts at, once its sender learnt it (`None` before).
    pub fn start(&self) -> Option<u64> {
        *self.0.start.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets where a warm partition's input starts (the first call wins).
    pub fn set_start(&self, offset: u64) {
        self.0
            .start
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(offset);
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

    #[test]
    fn a_warm_start_goes_back_by_the_lag_and_the_first_start_stays() {
        let map = super::WarmMap {
            decimation: 8,
            lag: 10,
        };
        assert_eq!(map.start_for(1000), (990 * 8, 990));
        assert_eq!(
            map.start_for(4),
            (0, 0),
            "near the start: from the beginning"
        );
        assert_eq!(map.input_for(1000), 8000);
        let f = Fence::named("fence-test-warm");
        assert_eq!(f.start(), None);
        f.set_start(80);
        f.set_start(160);
        assert_eq!(Fence::named("fence-test-warm").start(), Some(80));
    }
}
