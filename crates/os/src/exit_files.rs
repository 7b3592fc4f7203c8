//! Files to remove if the process is made to exit before it could clean up by itself.
//!
//! Unfinished output files are normally removed by their owners' `Drop` (on errors and while a
//! panic unwinds). A forced exit (a second Ctrl-C while a graceful stop is under way, which
//! calls [`std::process::exit`]) runs no destructor of other threads, so the owners list their
//! files here and the code that forces the exit calls [`remove_all`] first. SIGKILL runs no code
//! at all; the next run that finds such a file says so (see `sluice_formats::output_file`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The files listed now, with the token that unlists each.
static FILES: Mutex<Vec<(u64, PathBuf)>> = Mutex::new(Vec::new());

/// A listed file; [`unlist`] it when it is finished or removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listed(u64);

/// Lists `path` for removal at a forced exit.
pub fn list(path: PathBuf) -> Listed {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let token = NEXT.fetch_add(1, Ordering::Relaxed);
    // A poisoned lock only means another thread panicked while pushing: the list is still valid.
    FILES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((token, path));
    Listed(token)
}

/// Takes a file off the list (it was finished, or removed by its owner).
pub fn unlist(listed: Listed) {
    FILES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|(t, _)| *t != listed.0);
}

/// Whether `path` is listed now.
pub fn is_listed(path: &std::path::Path) -> bool {
    FILES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .any(|(_, p)| p == path)
}

/// Removes every listed file (those already gone are skipped) and empties the list; returns
/// how many were removed. Call it just before a forced exit.
pub fn remove_all() -> usize {
    let files = std::mem::take(&mut *FILES.lock().unwrap_or_else(|p| p.into_inner()));
    files
        .iter()
        .filter(|(_, path)| std::fs::remove_file(path).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_files_are_removed_and_unlisted_ones_kept() {
        let dir = std::env::temp_dir().join(format!("sluice-exit-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, b"a").unwrap();
        std::fs::write(&b, b"b").unwrap();
        let _la = list(a.clone());
        let lb = list(b.clone());
        unlist(lb);
        assert!(remove_all() >= 1);
        assert!(!a.exists() && b.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
