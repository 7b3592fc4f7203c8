//! A worker's files stay in its data root: every parameter a partition's blocks declare as a
//! file ([`BlockType::files`](sluice_graph::BlockType::files)) is a relative path without `..`,
//! resolved beneath the worker's `--data-dir` by the kernel (`openat2` with
//! `RESOLVE_BENEATH`, so that a symbolic link cannot lead out), and rewritten to the absolute
//! path the block then opens. Absolute paths and `..` are refused unless the worker's own
//! configuration allows paths outside (`--allow-paths-outside`; then, as before, relative
//! paths are the controller's, resolved against its working directory). The process's working
//! directory never changes: partitions run side by side on threads.
//!
//! A file name pattern (a parameter declared with
//! [`Param::writes_pattern`](sluice_graph::Param::writes_pattern), e.g. `wav_files`' `path`)
//! is confined as a written file is: its directory part is checked beneath the root and
//! rebased there, its file name keeps the pattern (whose `{}` each file replaces with a
//! number). A pattern that varies its directory (`ch{}/x.wav`) is refused: what it names
//! cannot be checked before the files are made.

use rustix::fs::{Mode, OFlags, ResolveFlags};
use sluice_graph::{FileAccess, PartitionDoc, Registry};
use std::path::{Component, Path, PathBuf};
use toml::Value;

/// Where a worker's partitions may read and write files.
#[derive(Debug, Clone)]
pub struct PathPolicy {
    /// The data root: relative paths resolve beneath it.
    pub data_dir: PathBuf,
    /// Paths outside the data root (absolute, `..`) are allowed, and relative paths are the
    /// controller's (resolved against the working directory it sends).
    pub allow_outside: bool,
}

/// Rewrites the file parameters of `partition`'s nodes by `policy`: every file path becomes
/// absolute, checked; the first refused path is the error (naming the node, the parameter and
/// the path).
pub fn confine(
    partition: &mut PartitionDoc,
    registry: &Registry,
    policy: &PathPolicy,
    controller_cwd: &str,
) -> Result<(), String> {
    for node in &mut partition.graph.nodes {
        let Some(decl) = registry.find(&node.kind) else {
            continue; // the loader names the unknown type
        };
        for (param, access) in decl.files() {
            let Some(Value::String(path)) = node.params.get_mut(param) else {
                continue; // absent, or not text: the loader names a wrong kind
            };
            let resolved = resolve(Path::new(path.as_str()), access, policy, controller_cwd)
                .map_err(|why| {
                    format!(
                        "node '{}' parameter {param} = {path:?}: {why}",
                        sluice_net::escape::text(&node.name)
                    )
                })?;
            *path = resolved.display().to_string();
        }
    }
    Ok(())
}

fn resolve(
    path: &Path,
    access: FileAccess,
    policy: &PathPolicy,
    controller_cwd: &str,
) -> Result<PathBuf, String> {
    if policy.allow_outside {
        return Ok(Path::new(controller_cwd).join(path));
    }
    if path.is_absolute() {
        return Err(format!(
            "an absolute path; this worker reads and writes only beneath its data directory {} (give a relative path, or start the worker with --allow-paths-outside)",
            policy.data_dir.display()
        ));
    }
    if path
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "a path with `..`; this worker reads and writes only beneath its data directory {}",
            policy.data_dir.display()
        ));
    }
    let directory = path.parent().filter(|p| !p.as_os_str().is_empty());
    if access == FileAccess::WritePattern
        && directory.is_some_and(|d| d.to_string_lossy().contains("{}"))
    {
        return Err(format!(
            "a file name pattern whose directory varies; beneath the data directory {} only the file name may (write DIR/NAME{{}}.wav)",
            policy.data_dir.display()
        ));
    }
    // The kernel resolves it beneath the root: a link that leads out fails here. A file to be
    // read must exist; one to be written needs its directory.
    let root = rustix::fs::open(
        &policy.data_dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("data directory {}: {e}", policy.data_dir.display()))?;
    let (target, flags) = match access {
        FileAccess::Read => (path, OFlags::RDONLY),
        FileAccess::Write | FileAccess::WritePattern => (
            directory.unwrap_or(Path::new(".")),
            OFlags::RDONLY | OFlags::DIRECTORY,
        ),
    };
    let beneath = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(
        &root,
        target,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        beneath,
    ) {
        Ok(_) => {}
        Err(rustix::io::Errno::XDEV) => {
            return Err(format!(
                "it leads out of the data directory {} (through a symbolic link)",
                policy.data_dir.display()
            ))
        }
        Err(e) => {
            return Err(format!(
                "{} beneath the data directory {}: {e}",
                target.display(),
                policy.data_dir.display()
            ))
        }
    }
    if matches!(access, FileAccess::Write) {
        // The file itself, if it exists, must not be a link out either (the block follows it).
        match rustix::fs::openat2(
            &root,
            path,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            beneath,
        ) {
            Ok(_) | Err(rustix::io::Errno::NOENT) => {}
            Err(rustix::io::Errno::XDEV) => {
                return Err(format!(
                    "it leads out of the data directory {} (through a symbolic link)",
                    policy.data_dir.display()
                ))
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(policy.data_dir.join(path))
}
