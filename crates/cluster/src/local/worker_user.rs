//! Who a local cluster's workers run as, and the files they need as that user.
//!
//! Started by root, `up` runs the workers as the system user [`SYSTEM_USER`] (created with
//! `useradd --system --no-create-home` when missing, reused when present), through
//! `setpriv --reuid --regid --clear-groups --no-new-privs` after `ip netns exec` has entered
//! the host's namespace: a partition a controller sends cannot read root's files or write
//! outside what that user may. The worker's own copies of the cluster key and of the etcd
//! access files live in `RUN/worker/`, owned by that user (sluice's key files must belong to
//! the process that reads them), with its data directory `RUN/worker/data`.

use super::LocalError;
use serde::{Deserialize, Serialize};
use std::fs;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::process::Command;

/// The system user root's local clusters run their workers as.
pub const SYSTEM_USER: &str = "sluice-worker";

/// Who a local cluster's workers run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerUser {
    /// The user that runs `up` (for a caller that is not root, or a bench that keeps root).
    Caller,
    /// A system user, created when missing (`useradd --system --no-create-home`).
    System(String),
}

impl WorkerUser {
    /// [`SYSTEM_USER`] when this process is root, else the caller.
    pub fn unprivileged() -> WorkerUser {
        if rustix::process::geteuid().is_root() {
            WorkerUser::System(SYSTEM_USER.to_string())
        } else {
            WorkerUser::Caller
        }
    }
}

/// A resolved user: its name and ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ids {
    /// The user id.
    pub uid: u32,
    /// Its primary group id.
    pub gid: u32,
}

/// The ids `user` stands for, creating the system user if it does not exist yet.
pub(crate) fn resolve(user: &WorkerUser) -> Result<Ids, LocalError> {
    let name = match user {
        WorkerUser::Caller => {
            return Ok(Ids {
                uid: rustix::process::geteuid().as_raw(),
                gid: rustix::process::getegid().as_raw(),
            })
        }
        WorkerUser::System(name) => name,
    };
    if let Some(ids) = lookup(name)? {
        return Ok(ids);
    }
    let argv = [
        "useradd",
        "--system",
        "--no-create-home",
        "--user-group",
        "--home-dir",
        "/nonexistent",
        "--shell",
        "/usr/sbin/nologin",
        "--comment",
        "sluice local cluster workers",
        name.as_str(),
    ];
    let made = super::sys::run(&argv);
    // Another `up` may have created it meanwhile: what counts is that it exists now.
    match (lookup(name)?, made) {
        (Some(ids), _) => Ok(ids),
        (None, Err(e)) => Err(e),
        (None, Ok(_)) => Err(LocalError::Command {
            command: argv.join(" "),
            stderr: format!("user {name} is still not in /etc/passwd"),
        }),
    }
}

/// The ids of user `name` from `/etc/passwd` (`getent` would also ask NSS; a system user
/// made by `useradd` is in the file).
fn lookup(name: &str) -> Result<Option<Ids>, LocalError> {
    let out = Command::new("getent").args(["passwd", name]).output();
    let text = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(_) => return Ok(None),
        Err(_) => fs::read_to_string("/etc/passwd").map_err(|source| LocalError::Io {
            path: "/etc/passwd".into(),
            source,
        })?,
    };
    Ok(text.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() < 4 || f[0] != name {
            return None;
        }
        Some(Ids {
            uid: f[2].parse().ok()?,
            gid: f[3].parse().ok()?,
        })
    }))
}

/// Creates directory `path` (mode 700) owned by `ids`.
pub(crate) fn own_dir(path: &Path, ids: Ids) -> Result<(), LocalError> {
    let err = |source| LocalError::Io {
        path: path.to_path_buf(),
        source,
    };
    fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .map_err(err)?;
    std::os::unix::fs::lchown(path, Some(ids.uid), Some(ids.gid)).map_err(err)
}

/// Copies `from` to the new file `to` (mode `mode`, never over an existing file) owned by
/// `ids`.
pub(crate) fn own_copy(from: &Path, to: &Path, mode: u32, ids: Ids) -> Result<(), LocalError> {
    use std::io::Write;
    let bytes = fs::read(from).map_err(|source| LocalError::Io {
        path: from.to_path_buf(),
        source,
    })?;
    let err = |source| LocalError::Io {
        path: to.to_path_buf(),
        source,
    };
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(to)
        .map_err(err)?;
    file.write_all(&bytes).map_err(err)?;
    std::os::unix::fs::fchown(&file, Some(ids.uid), Some(ids.gid)).map_err(err)
}

/// The arguments that drop from root to `ids` before the worker executes (empty for the
/// caller's own ids).
pub(crate) fn drop_privileges(ids: Ids) -> Vec<String> {
    if ids.uid == rustix::process::geteuid().as_raw() {
        return Vec::new();
    }
    vec![
        "setpriv".into(),
        format!("--reuid={}", ids.uid),
        format!("--regid={}", ids.gid),
        "--clear-groups".into(),
        "--no-new-privs".into(),
        "--".into(),
    ]
}
