//! Key files, opened as ssh opens its own: once, without following a symbolic link, checked on
//! the open descriptor (`fstat`: a regular file, owned by the caller, readable by its owner
//! only) in a directory that nobody else may write. What is read is what was checked.

use crate::NetError;
use rustix::fs::{FileType, Mode, OFlags};
use std::io::Read;
use std::path::Path;

/// The longest key file read (an identity file is under 200 bytes).
const MAX_KEY_FILE: u64 = 4096;

/// Reads the secret file at `path` (`what` names it in errors: "cluster key file", "identity
/// file") after the checks above; every refusal names the path and the fix.
pub fn read_secret(path: &Path, what: &str) -> Result<Vec<u8>, NetError> {
    read_checked(path, what, true)
}

/// Reads a file of public keys (a peers file): the same checks, except that others may read
/// it (public keys are not secret; who may change it matters).
pub fn read_public(path: &Path, what: &str) -> Result<Vec<u8>, NetError> {
    read_checked(path, what, false)
}

fn read_checked(path: &Path, what: &str, secret: bool) -> Result<Vec<u8>, NetError> {
    let shown = path.display();
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| {
        if e == rustix::io::Errno::LOOP {
            NetError::Config(format!(
                "{what} {shown} is a symbolic link: key files are opened without following links (name the file itself)"
            ))
        } else {
            NetError::Config(format!("{what} {shown}: {e}"))
        }
    })?;
    let st =
        rustix::fs::fstat(&fd).map_err(|e| NetError::Config(format!("{what} {shown}: {e}")))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(NetError::Config(format!(
            "{what} {shown} is not a regular file"
        )));
    }
    let me = rustix::process::geteuid().as_raw();
    if st.st_uid != me {
        return Err(NetError::Config(format!(
            "{what} {shown} belongs to uid {}, not to this process's uid {me}: a key file must belong to the user who uses it (chown it)",
            st.st_uid
        )));
    }
    let mode = st.st_mode & 0o777;
    let forbidden = if secret { 0o077 } else { 0o022 };
    if mode & forbidden != 0 {
        return Err(NetError::Config(format!(
            "{what} {shown} has mode {mode:03o}: {}; expected mode {} (run chmod {} {shown})",
            if secret {
                "others than its owner may read or write it"
            } else {
                "others than its owner may write it"
            },
            if secret { "600" } else { "644 or 600" },
            if secret { "600" } else { "644" },
        )));
    }
    check_parent(path, what)?;
    if st.st_size as u64 > MAX_KEY_FILE {
        return Err(NetError::Config(format!(
            "{what} {shown} holds {} bytes, more than a key file's {MAX_KEY_FILE}",
            st.st_size
        )));
    }
    let mut text = Vec::with_capacity(st.st_size as usize);
    std::fs::File::from(fd)
        .take(MAX_KEY_FILE + 1)
        .read_to_end(&mut text)
        .map_err(|e| NetError::Config(format!("{what} {shown}: {e}")))?;
    Ok(text)
}

/// Refuses a key file whose directory others may write (they could swap the file): group- or
/// world-writable without the sticky bit, or owned by another user than the caller or root.
fn check_parent(path: &Path, what: &str) -> Result<(), NetError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let st = rustix::fs::stat(parent).map_err(|e| {
        NetError::Config(format!(
            "{what} {}: its directory {}: {e}",
            path.display(),
            parent.display()
        ))
    })?;
    let me = rustix::process::geteuid().as_raw();
    let sticky = st.st_mode & 0o1000 != 0;
    if st.st_uid != me && st.st_uid != 0 {
        return Err(NetError::Config(format!(
            "{what} {}: its directory {} belongs to uid {}, neither this process's uid {me} nor root: its owner could replace the key",
            path.display(),
            parent.display(),
            st.st_uid
        )));
    }
    if st.st_mode & 0o022 != 0 && !sticky {
        return Err(NetError::Config(format!(
            "{what} {}: its directory {} has mode {:03o}: others may write it and replace the key (run chmod go-w {})",
            path.display(),
            parent.display(),
            st.st_mode & 0o777,
            parent.display()
        )));
    }
    Ok(())
}

/// Parses 64 hex characters into 32 bytes; `None` for anything else.
pub fn parse_hex32(text: &str) -> Option<[u8; 32]> {
    let text = text.as_bytes();
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.chunks(2).enumerate() {
        let digit = |c: u8| (c as char).to_digit(16);
        out[i] = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Some(out)
}

/// 32 bytes as 64 lowercase hex characters.
pub fn hex32(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates `path` with mode 600 holding `text`; never overwrites.
pub fn create_secret(path: &Path, what: &str, text: &str) -> Result<(), NetError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc_nofollow())
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                NetError::Config(format!(
                    "{what} {shown} exists already: a key is never overwritten (remove it first)"
                ))
            } else {
                NetError::Config(format!("cannot create {what} {shown}: {e}"))
            }
        })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| NetError::Config(format!("writing {what} {shown}: {e}")))
}

/// `O_NOFOLLOW` as the raw flag `OpenOptionsExt::custom_flags` takes.
fn libc_nofollow() -> i32 {
    OFlags::NOFOLLOW.bits() as i32
}
