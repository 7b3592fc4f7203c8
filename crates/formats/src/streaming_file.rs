//! [`StreamingFile`]: a file written front to back at the disk's pace, for recordings.
//!
//! Left to itself the kernel keeps written pages in memory and writes them out when its
//! dirty-page limits or timers say so: a fast recording fills the page cache first, then
//! stalls, and the final `fsync` writes most of the file at once. A `StreamingFile` instead
//! hands every completed window of [`WINDOW`] bytes to the disk as soon as it is written and
//! waits for the window before it (double buffering), so the disk writes while the stream
//! produces, the final `sync` has at most two windows left, and the recording does not push
//! the rest of the machine's memory out (each finished window is dropped from the cache).

use std::fs::File;
use std::io::{self, Write};

/// Bytes per writeback window: large enough for the disk to merge into long requests, small
/// enough that two of them in flight are little memory.
pub const WINDOW: u64 = 16 << 20;

/// A file written sequentially and streamed to the disk as it grows (see the module docs).
#[derive(Debug)]
pub struct StreamingFile {
    file: File,
    /// Bytes written so far.
    written: u64,
    /// Bytes handed to the disk (a multiple of [`WINDOW`]).
    started: u64,
}

impl StreamingFile {
    /// Streams what is written to `file` from its current start.
    pub fn new(file: File) -> Self {
        StreamingFile {
            file,
            written: 0,
            started: 0,
        }
    }

    /// Writes what is left and waits until the whole file is on the disk.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }

    /// Starts every whole window written since the last call and waits for the one before it.
    fn stream(&mut self) -> io::Result<()> {
        while self.written - self.started >= WINDOW {
            sluice_os::writeback::start_writeback(&self.file, self.started, WINDOW)?;
            if let Some(previous) = self.started.checked_sub(WINDOW) {
                sluice_os::writeback::finish_writeback(&self.file, previous, WINDOW)?;
            }
            self.started += WINDOW;
        }
        Ok(())
    }
}

impl Write for StreamingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        self.stream()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_is_what_is_read_across_windows() {
        let path =
            std::env::temp_dir().join(format!("sluice-streaming-file-{}", std::process::id()));
        let mut file = StreamingFile::new(File::create(&path).unwrap());
        let data: Vec<u8> = (0..(2 * WINDOW + 12_345) as u32)
            .map(|i| (i % 253) as u8)
            .collect();
        // Uneven pieces, so that windows end inside writes.
        for piece in data.chunks(1_000_003) {
            file.write_all(piece).unwrap();
        }
        assert_eq!(file.started, 2 * WINDOW);
        file.sync().unwrap();
        drop(file);
        assert_eq!(std::fs::read(&path).unwrap(), data);
        std::fs::remove_file(&path).unwrap();
    }
}
