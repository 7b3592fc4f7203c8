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
//!
//! **Checked revisions.** A revision in a HELLO is the sender's word. A receiver that names
//! the fence of its senders (`fenced_by`) asks the process's [`RevisionCheck`] (a worker of a
//! cluster installs one that reads the lease back from etcd) before a higher revision
//! displaces its primary; the check runs once per raise, never for a revision already
//! accepted, and within [`CHECK_TIMEOUT`] (beyond it the raise is refused). A check that binds
//! the revision to the static key its holder proved makes the receiver refuse a later HELLO of
//! the same revision from any other key. Without a check
//! (a fenced receiver outside a cluster) the revision is believed: there, every holder of the
//! stream's credentials is trusted to be one of the partition's replicas.

use crate::AckHandle;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// The longest a receiver waits for the [`RevisionCheck`] of one HELLO: the receive loop of
/// the current primary stands still meanwhile, and an etcd that does not answer by then
/// refuses the raise.
pub const CHECK_TIMEOUT: Duration = Duration::from_millis(1500);

/// What a fenced receiver asks its [`RevisionCheck`] about: a connection whose HELLO claims
/// a lease revision above the current primary's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevisionClaim {
    /// The fence of the senders' partition (the receiver's `fenced_by`: in a cluster, the
    /// protected host's name).
    pub fence: String,
    /// The revision the HELLO claims.
    pub revision: u64,
    /// The static public key the sender proved in the secure channel's handshake (`None` on
    /// a plaintext stream).
    pub peer_key: Option<[u8; 32]>,
    /// The sender's address, for messages.
    pub peer: String,
}

/// Decides whether a claimed lease revision is real (see the module documentation). `Err`
/// says why not; it is escaped before it is logged.
pub trait RevisionCheck: Send + Sync {
    /// Whether `claim` may displace the current primary: `Ok(Some(key))` when the revision's
    /// holder is bound to the static key `key` (the one the sender proved: later connections
    /// of the same revision must prove it too), `Ok(None)` when the revision is confirmed but
    /// its holder has no key to bind. It runs on a thread of its own and is abandoned (the
    /// raise refused) after [`CHECK_TIMEOUT`].
    fn check(&self, claim: &RevisionClaim) -> Result<Option<[u8; 32]>, String>;
}

fn revision_check_slot() -> &'static Mutex<Option<Arc<dyn RevisionCheck>>> {
    static CHECK: OnceLock<Mutex<Option<Arc<dyn RevisionCheck>>>> = OnceLock::new();
    CHECK.get_or_init(Default::default)
}

/// Installs the process's revision check (`None` removes it): every fenced receiver with
/// `fenced_by` asks it before a raise.
pub fn set_revision_check(check: Option<Arc<dyn RevisionCheck>>) {
    *revision_check_slot()
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = check;
}

/// The process's revision check, if one is installed.
pub fn revision_check() -> Option<Arc<dyn RevisionCheck>> {
    revision_check_slot()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Runs `check` on `claim` within `timeout`: `Err` when it refuses, fails to answer in time
/// or panics. The thread of a check that overran is left to finish on its own (its answer is
/// dropped): a check must bound its own calls too.
pub fn verify(
    check: Arc<dyn RevisionCheck>,
    claim: &RevisionClaim,
    timeout: Duration,
) -> Result<Option<[u8; 32]>, String> {
    let (tx, rx) = mpsc::sync_channel(1);
    let asked = claim.clone();
    std::thread::Builder::new()
        .name("sluice-revision-check".into())
        .spawn(move || {
            let _ = tx.send(check.check(&asked));
        })
        .map_err(|e| format!("cannot start the revision check: {e}"))?;
    match rx.recv_timeout(timeout) {
        Ok(answer) => answer,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "the revision check did not answer within {} ms",
            timeout.as_millis()
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("the revision check failed".into()),
    }
}

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
    use super::{verify, Fence, RevisionCheck, RevisionClaim};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    struct Slow;
    impl RevisionCheck for Slow {
        fn check(&self, _: &RevisionClaim) -> Result<Option<[u8; 32]>, String> {
            std::thread::sleep(Duration::from_millis(500));
            Ok(None)
        }
    }

    struct Only(u64);
    impl RevisionCheck for Only {
        fn check(&self, claim: &RevisionClaim) -> Result<Option<[u8; 32]>, String> {
            if claim.revision == self.0 {
                Ok(None)
            } else {
                Err(format!("not {}", self.0))
            }
        }
    }

    fn claim(revision: u64) -> RevisionClaim {
        RevisionClaim {
            fence: "h".into(),
            revision,
            peer_key: None,
            peer: "127.0.0.1:1".into(),
        }
    }

    #[test]
    fn a_check_answers_or_is_cut_off() {
        assert_eq!(
            verify(Arc::new(Only(5)), &claim(5), Duration::from_secs(1)),
            Ok(None)
        );
        assert_eq!(
            verify(Arc::new(Only(5)), &claim(6), Duration::from_secs(1)),
            Err("not 5".into())
        );
        let t = Instant::now();
        let slow = verify(Arc::new(Slow), &claim(5), Duration::from_millis(50));
        assert!(slow.unwrap_err().contains("did not answer within 50 ms"));
        assert!(t.elapsed() < Duration::from_millis(400));
    }

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
