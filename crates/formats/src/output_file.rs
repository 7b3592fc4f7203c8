//! Output files that never destroy what a user already had: a sink writes under a temporary
//! name beside its destination and moves the file onto the destination only when it finishes
//! successfully. A graph that fails, panics or is stopped before then leaves an existing file
//! at the destination untouched and no half-written file behind.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file being written under a temporary name beside `destination`; see the module docs.
#[derive(Debug)]
pub struct PartialFile {
    destination: PathBuf,
    temporary: PathBuf,
    done: bool,
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
        PartialFile {
            temporary: destination.with_file_name(unique),
            destination: destination.to_path_buf(),
            done: false,
        }
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
        Ok(())
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if !self.done {
            // Not finished: the destination keeps what it had; the partial file goes.
            let _ = std::fs::remove_file(&self.temporary);
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
}
