//! Writing a long file at the disk's pace: [`start_writeback`] hands a written range to the
//! disk at once instead of when the kernel's dirty-page timer fires, and [`finish_writeback`]
//! waits for an earlier range and drops it from the page cache. A recording written this way
//! keeps the disk busy from its first megabytes, ends with little left to flush, and does not
//! push everything else out of memory (see `sluice_formats::streaming_file`).

use std::fs::File;
use std::io;

/// Starts writing `len` bytes of `file` from `offset` to the disk, without waiting.
pub fn start_writeback(file: &File, offset: u64, len: u64) -> io::Result<()> {
    sync_range(file, offset, len, false)
}

/// Waits until `len` bytes of `file` from `offset` are on the disk (starting any not yet
/// started), then tells the kernel that they will not be read again soon.
pub fn finish_writeback(file: &File, offset: u64, len: u64) -> io::Result<()> {
    sync_range(file, offset, len, true)?;
    #[cfg(target_os = "linux")]
    rustix::fs::fadvise(
        file,
        offset,
        std::num::NonZeroU64::new(len),
        rustix::fs::Advice::DontNeed,
    )?;
    Ok(())
}

#[cfg(target_os = "linux")]
fn sync_range(file: &File, offset: u64, len: u64, wait: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let flags = if wait {
        libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER
    } else {
        libc::SYNC_FILE_RANGE_WRITE
    };
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    // SAFETY: the descriptor is open for as long as `file` is borrowed; the call reads no
    // memory of ours.
    let rc = unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Elsewhere the kernel's own writeback does the work: nothing to ask for.
#[cfg(not(target_os = "linux"))]
fn sync_range(_: &File, _: u64, _: u64, _: bool) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn ranges_written_back_keep_their_content() {
        let path = std::env::temp_dir().join(format!("sluice-writeback-{}", std::process::id()));
        let mut file = File::create(&path).unwrap();
        let data: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 251) as u8).collect();
        file.write_all(&data).unwrap();
        start_writeback(&file, 0, 1 << 20).unwrap();
        finish_writeback(&file, 0, 2 << 20).unwrap();
        finish_writeback(&file, 2 << 20, 1 << 20).unwrap();
        drop(file);
        assert_eq!(std::fs::read(&path).unwrap(), data);
        std::fs::remove_file(&path).unwrap();
    }
}
