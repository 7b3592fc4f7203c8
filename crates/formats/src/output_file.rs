//! Output files that never destroy what a user already had: a sink writes under a temporary
//! name beside its destination and moves the file onto the destination only when it finishes
//! successfully. A graph that fails or panics leaves an existing file at the destination
//! untouched and no half-written file behind (the owner's `Drop` removes it; a forced exit
//! removes it through [`sluice_os::exit_files`]). Only SIGKILL or a power cut can leave one: the
//! next writer of the same destination finds it and says so ([`PartialFile::stale`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file being written under a temporary name beside `destination`; see the module docs.
#[derive(Debug)]
pub struct PartialFile {
    destination: PathBuf,
    temporary: PathBuf,
    done: bool,
    listed: sluice_os::exit_files::Listed,
    stale: Vec<PathBuf>,
}

impl PartialFile {
    /// Reserves a temporary name in `destination`'s directory (so that the final rename is
    /// atomic): `.NAME.partial-PID-N`. Nothing is created yet; write to
    /// [`PartialFile::temporary`].
    pub fn new(destination: &Path) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = destination
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let unique = format!(
            ".{name}.partial-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let temporary = destination.with_file_name(unique);
        PartialFile {
            listed: sluice_os::exit_files::list(temporary.clone()),
            stale: stale_partials(destination),
            temporary,
            destination: destination.to_path_buf(),
            done: false,
        }
    }

    /// Partial files of the same destination left by earlier processes that no longer run
    /// (killed by SIGKILL, or a power cut): they hold the samples written before that process
    /// ended, under a streaming header that sluice's reader and sox read to the end. They are
    /// left for the user to keep or remove; [`PartialFile::stale_warning`] says so.
    pub fn stale(&self) -> &[PathBuf] {
        &self.stale
    }

    /// [`PartialFile::stale`] in words, if there is any.
    pub fn stale_warning(&self) -> Option<String> {
        (!self.stale.is_empty()).then(|| {
            let names: Vec<String> = self.stale.iter().map(|p| p.display().to_string()).collect();
            format!(
                "found {} left by an earlier run that was killed before it could clean up; it \
                 holds what that run wrote (a streaming WAV header reads to the end): keep it \
                 under another name or remove it",
                names.join(", ")
            )
        })
    }

    /// Where to write meanwhile.
    pub fn temporary(&self) -> &Path {
        &self.temporary
    }

    /// Where the file goes on success.
    pub fn destination(&self) -> &Path {
        &self.destination
    }

    /// Moves the finished file onto its destination (replacing what was there).
    pub fn commit(mut self) -> std::io::Result<()> {
        std::fs::rename(&self.temporary, &self.destination)?;
        self.done = true;
        sluice_os::exit_files::unlist(self.listed);
        Ok(())
    }
}

/// `.NAME.partial-PID-N` files beside `destination` whose process no longer runs.
fn stale_partials(destination: &Path) -> Vec<PathBuf> {
    let Some(name) = destination.file_name() else {
        return Vec::new();
    };
    let prefix = format!(".{}.partial-", name.to_string_lossy());
    let dir = match destination.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Whether a process runs is read from /proc (Linux); without it, nothing is called stale.
    if !Path::new("/proc/self").exists() {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut stale: Vec<PathBuf> = entries
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().to_string_lossy().into_owned();
            let pid: u32 = file
                .strip_prefix(&prefix)?
                .split('-')
                .next()?
                .parse()
                .ok()?;
            let alive = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
            (!alive).then(|| destination.with_file_name(&file))
        })
        .collect();
    stale.sort();
    stale
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if !self.done {
            // Not finished: the destination keeps what it had; the partial file goes.
            let _ = std::fs::remove_file(&self.temporary);
            sluice_os::exit_files::unlist(self.listed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sluice-partial-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_committed_file_replaces_the_destination() {
        let d = dir("commit");
        let dest = d.join("out.bin");
        std::fs::write(&dest, b"old").unwrap();
        let p = PartialFile::new(&dest);
        std::fs::write(p.temporary(), b"new").unwrap();
        assert_eq!(
            std::fs::read(&dest).unwrap(),
            b"old",
            "untouched while writing"
        );
        p.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            1,
            "no partial file left"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_abandoned_file_leaves_the_destination_as_it_was() {
        let d = dir("abandon");
        let dest = d.join("out.bin");
        std::fs::write(&dest, b"old").unwrap();
        let p = PartialFile::new(&dest);
        std::fs::write(p.temporary(), b"half").unwrap();
        drop(p);
        assert_eq!(std::fs::read(&dest).unwrap(), b"old");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            1,
            "no partial file left"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_stale_partial_file_of_a_dead_process_is_named_and_kept() {
        let d = dir("stale");
        let dest = d.join("rec.wav");
        // A process that has ended: a child that ran and was waited for.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = d.join(format!(".rec.wav.partial-{dead}-0"));
        std::fs::write(&stale, b"samples").unwrap();
        // A live process's partial file (ours) and another destination's are not stale.
        std::fs::write(
            d.join(format!(".rec.wav.partial-{}-99", std::process::id())),
            b"",
        )
        .unwrap();
        std::fs::write(d.join(format!(".other.wav.partial-{dead}-0")), b"").unwrap();
        let p = PartialFile::new(&dest);
        assert_eq!(p.stale(), std::slice::from_ref(&stale));
        let warning = p.stale_warning().unwrap();
        assert!(
            warning.starts_with(&format!("found {} left by an earlier run", stale.display())),
            "{warning}"
        );
        drop(p);
        assert!(
            stale.exists(),
            "a stale file may hold a recording: it is kept"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn unfinished_files_are_listed_for_a_forced_exit_until_finished() {
        // `remove_all` itself is tested in sluice-os; calling it here would remove the files
        // of this binary's other tests, running in parallel.
        let d = dir("forced");
        let p = PartialFile::new(&d.join("out.bin"));
        let temporary = p.temporary().to_path_buf();
        assert!(sluice_os::exit_files::is_listed(&temporary));
        std::fs::write(&temporary, b"whole").unwrap();
        p.commit().unwrap();
        assert!(!sluice_os::exit_files::is_listed(&temporary));
        let p = PartialFile::new(&d.join("out.bin"));
        let temporary = p.temporary().to_path_buf();
        drop(p);
        assert!(!sluice_os::exit_files::is_listed(&temporary));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
