//! The process's journal of takeovers: each change of primary that one of its fenced
//! receivers saw (see [`fence`](crate::fence)), readable while the graph runs.
//!
//! A receiver also lists its takeovers in its warnings, but those are read once, when the
//! node ends; a worker of a cluster reads this journal with every report to its controller,
//! so that the controller (and its console) shows a failover as it happens. The journal is
//! process-wide for the reason the fences are: the graph file that builds the receivers
//! cannot carry a handle, and a worker runs one partition at a time ([`clear`] starts a run's
//! journal afresh).
//!
//! A receiver writes here only when its primary changes and when the new primary's first
//! item comes (twice per takeover, off the steady path), under a lock that a reader holds
//! only to copy at most [`MAX_TAKEOVERS`] short records.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

/// Records kept; a run with more drops its oldest (a partition fails over a handful of times
/// at most: more means something else is wrong, and the warnings at the end still list all).
pub const MAX_TAKEOVERS: usize = 64;

/// One change of primary, as a fenced receiver saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Takeover {
    /// The fence of the receiver's senders (`fenced_by`: in a cluster, the protected host's
    /// name); `None` for a fenced receiver that names none.
    pub fence: Option<String>,
    /// The stream offset at which the new primary resumed.
    pub offset: u64,
    /// The old primary's lease revision.
    pub from_revision: u64,
    /// The new primary's lease revision.
    pub to_revision: u64,
    /// When the old primary's connection was declared lost (`None`: the new primary
    /// displaced a connected one).
    pub lost_at: Option<SystemTime>,
    /// Why it was lost.
    pub lost_cause: Option<String>,
    /// When the new primary was welcomed.
    pub resumed_at: SystemTime,
    /// When its first item came (`None` until then).
    pub first_item_at: Option<SystemTime>,
}

struct Journal {
    /// Numbers the records, so that a receiver finds its own again for its first item.
    next: u64,
    records: std::collections::VecDeque<(u64, Takeover)>,
}

fn journal() -> &'static Mutex<Journal> {
    static JOURNAL: OnceLock<Mutex<Journal>> = OnceLock::new();
    JOURNAL.get_or_init(|| {
        Mutex::new(Journal {
            next: 0,
            records: Default::default(),
        })
    })
}

/// Every takeover recorded since the last [`clear`], oldest first (at most
/// [`MAX_TAKEOVERS`]).
pub fn takeovers() -> Vec<Takeover> {
    let j = journal().lock().unwrap_or_else(PoisonError::into_inner);
    j.records.iter().map(|(_, t)| t.clone()).collect()
}

/// Forgets every record: a worker calls it as it starts a run.
pub fn clear() {
    journal()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .records
        .clear();
}

/// Records `t`; the number returned finds it again ([`first_item`]).
pub(crate) fn record(t: Takeover) -> u64 {
    let mut j = journal().lock().unwrap_or_else(PoisonError::into_inner);
    let id = j.next;
    j.next += 1;
    if j.records.len() == MAX_TAKEOVERS {
        j.records.pop_front();
    }
    j.records.push_back((id, t));
    id
}

/// The new primary of record `id` sent its first item at `at`.
pub(crate) fn first_item(id: u64, at: SystemTime) {
    let mut j = journal().lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, t)) = j.records.iter_mut().find(|(i, _)| *i == id) {
        t.first_item_at = Some(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_kept_in_order_updated_by_number_and_bounded() {
        clear();
        let t = |offset| Takeover {
            fence: Some("h2".into()),
            offset,
            from_revision: 5,
            to_revision: 9,
            lost_at: None,
            lost_cause: None,
            resumed_at: SystemTime::UNIX_EPOCH,
            first_item_at: None,
        };
        let first = record(t(100));
        first_item(
            first,
            SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(3),
        );
        let seen = takeovers();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].offset, 100);
        assert!(seen[0].first_item_at.is_some());
        for i in 0..MAX_TAKEOVERS as u64 {
            record(t(200 + i));
        }
        let seen = takeovers();
        assert_eq!(seen.len(), MAX_TAKEOVERS);
        assert_eq!(seen[0].offset, 200, "the oldest went first");
        clear();
        assert!(takeovers().is_empty());
    }
}
