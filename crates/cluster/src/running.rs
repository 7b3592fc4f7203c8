//! The partitions a worker runs now, with their live counts and edges, for a metrics endpoint
//! (`sluice worker --metrics`): a session registers its partition while it runs and the entry
//! goes when the run ends, however it ends.

use sluice_runtime::{Monitor, Progress};
use std::sync::{Arc, Mutex, PoisonError};

/// One partition running on this worker.
#[derive(Debug, Clone)]
pub struct RunningPartition {
    /// The run's name, as the controller gave it.
    pub run: String,
    /// The host (worker) whose part of the graph this is.
    pub host: String,
    /// Its nodes' live counts.
    pub progress: Progress,
    /// Its edges.
    pub monitor: Monitor,
}

/// The partitions running now; clones share the list.
#[derive(Debug, Clone, Default)]
pub struct RunningPartitions(Arc<Mutex<Vec<(u64, RunningPartition)>>>, Arc<Mutex<u64>>);

impl RunningPartitions {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// The partitions running now.
    pub fn snapshot(&self) -> Vec<RunningPartition> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// Lists `p` until the returned guard is dropped.
    pub(crate) fn register(&self, p: RunningPartition) -> Registered {
        let id = {
            let mut next = self.1.lock().unwrap_or_else(PoisonError::into_inner);
            *next += 1;
            *next
        };
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, p));
        Registered {
            list: self.clone(),
            id,
        }
    }
}

/// Removes its partition from the list when dropped.
pub(crate) struct Registered {
    list: RunningPartitions,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.list
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(id, _)| *id != self.id);
    }
}
