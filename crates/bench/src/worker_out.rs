//! Where the cluster benches' workers write: directories beneath the local cluster's worker
//! data directory (`RUN/worker/data/bench/`), owned by the unprivileged user the workers run
//! as (`sluice-worker` when the bench runs as root), so a worker never needs the caller's
//! rights. The bench reads what they wrote there and copies it into its results directory.

use sluice_cluster::local::LocalCluster;
use std::path::{Path, PathBuf};

/// The workers' output directories of one local cluster.
pub struct WorkerOut {
    root: PathBuf,
    ids: Option<(u32, u32)>,
}

impl WorkerOut {
    /// `RUN/worker/data/bench/` of `cluster`, made (empty) and given to its workers' user.
    pub fn new(cluster: &LocalCluster) -> anyhow::Result<WorkerOut> {
        let out = WorkerOut {
            root: cluster.worker_dir().join("data").join("bench"),
            ids: cluster.worker_ids().map(|i| (i.uid, i.gid)),
        };
        out.fresh_at(&out.root.clone())?;
        Ok(out)
    }

    /// A path for a file the workers write, `bench/NAME` (removed if a run left it).
    pub fn file(&self, name: &str) -> PathBuf {
        let path = self.root.join(name);
        let _ = std::fs::remove_file(&path);
        path
    }

    /// A fresh directory `bench/NAME` the workers may write into.
    pub fn fresh(&self, name: &str) -> anyhow::Result<PathBuf> {
        let dir = self.root.join(name);
        self.fresh_at(&dir)?;
        Ok(dir)
    }

    fn fresh_at(&self, dir: &Path) -> anyhow::Result<()> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir)?;
        if let Some((uid, gid)) = self.ids {
            std::os::unix::fs::chown(dir, Some(uid), Some(gid)).map_err(|e| {
                anyhow::anyhow!("{}: cannot give it to uid {uid}: {e}", dir.display())
            })?;
        }
        Ok(())
    }
}

/// Copies the files of `from` (not its subdirectories) into a fresh directory `to`: the
/// workers' outputs kept in the bench's results.
pub fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let path = entry?.path();
        if path.is_file() {
            std::fs::copy(&path, to.join(path.file_name().unwrap_or_default()))?;
        }
    }
    Ok(())
}
