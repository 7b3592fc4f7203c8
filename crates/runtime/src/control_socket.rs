//! The control socket of a running graph: a Unix socket through which another process changes
//! run-time parameters ([`ControlHandle`]) and stops the graph ([`StopHandle`]). The `sluice
//! run --control PATH` option and `sluice ctl PATH …` use it; so can any other front end.
//!
//! The protocol is one line per command and one line per reply, so `socat` works too:
//!
//! | command | reply |
//! |---|---|
//! | `set NODE.PARAM=VALUE` | `ok NODE.PARAM=VALUE at item N` or `error: …` |
//! | `list` | `ok NODE.PARAM NODE.PARAM …` (every run-time parameter) |
//! | `stop` | `ok stopping` (a graceful stop, as Ctrl-C) |
//!
//! `N` is the item offset at which the change took effect: the node's first output item made
//! with the new value, where a `set:PARAM` tag now sits.
//!
//! A front end may serve more commands on the same socket ([`MoreCommands`]): the command
//! line adds the live graph changes of [`crate::live`] (`attach`, `detach`, `replace`,
//! `branches`), which need its graph-file loader.
//!
//! **Who may use it.** The socket is made mode 0600 whatever the umask, and each client's user
//! is checked with `SO_PEERCRED` (the kernel's word): the graph's own user or root, no one
//! else. A line is at most [`MAX_LINE`] bytes (a longer one ends that client) and at most
//! [`MAX_CLIENTS`] clients are served at once.

use crate::control::parse_value;
use crate::{ControlHandle, StopHandle};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The most clients served at once; more are told so and closed.
pub const MAX_CLIENTS: usize = 16;

/// Commands beyond `set`, `list` and `stop` that a front end serves through the socket, for
/// clients that passed the same credential check.
pub trait MoreCommands: Send + Sync {
    /// How to use them, for the reply to an unknown command: `attach NAME FILE [at N], …`.
    fn usage(&self) -> String;
    /// The reply line to the command `verb` followed by `rest` (trimmed), or `None` when
    /// `verb` is not one of these. The reply is shown to the client as it is: escape what came
    /// from the client.
    fn reply(&self, verb: &str, rest: &str) -> Option<String>;
}

/// The extra commands a socket serves, if any.
pub(crate) type More = Option<Arc<dyn MoreCommands>>;

/// Why a control socket could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ControlSocketError {
    /// The path exists and is not a socket; it is never deleted.
    #[error(
        "control socket {}: the path exists and is not a socket; choose another path \
         (nothing was changed)",
        path.display()
    )]
    NotASocket {
        /// The path asked for.
        path: PathBuf,
    },
    /// Another process listens on the socket.
    #[error("control socket {}: another process is listening on it", path.display())]
    InUse {
        /// The path asked for.
        path: PathBuf,
    },
    /// A stale socket left by a run that died could not be removed.
    #[error("control socket {}: removing a stale socket: {source}", path.display())]
    RemoveStale {
        /// The path asked for.
        path: PathBuf,
        /// Why it could not be removed.
        source: std::io::Error,
    },
    /// Binding the socket (or reading back its file) failed.
    #[error("control socket {}: {source}", path.display())]
    Bind {
        /// The path asked for.
        path: PathBuf,
        /// Why binding failed.
        source: std::io::Error,
    },
    /// The thread that accepts clients could not be started.
    #[error("starting the control socket's thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// A listening control socket; removes its file when dropped.
pub struct ControlSocket {
    path: PathBuf,
    /// The socket file's (device, inode), so that only our own file is removed.
    identity: (u64, u64),
    done: Arc<AtomicBool>,
    stopped_here: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl ControlSocket {
    /// Listens on `path` for commands to `control` and `stop`. A path that exists and is not a
    /// socket is refused (never deleted); a socket another process listens on is refused; a
    /// stale socket left by a run that died is replaced.
    pub fn bind(
        path: &Path,
        control: ControlHandle,
        stop: StopHandle,
    ) -> Result<Self, ControlSocketError> {
        ControlSocket::bind_with(path, control, stop, None)
    }

    /// [`ControlSocket::bind`], serving `more` commands too.
    pub fn bind_with(
        path: &Path,
        control: ControlHandle,
        stop: StopHandle,
        more: Option<Arc<dyn MoreCommands>>,
    ) -> Result<Self, ControlSocketError> {
        let bind_error = |source| ControlSocketError::Bind {
            path: path.to_path_buf(),
            source,
        };
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            refuse_non_socket(path)?;
            debug_assert!(meta.file_type().is_socket());
            if UnixStream::connect(path).is_ok() {
                return Err(ControlSocketError::InUse {
                    path: path.to_path_buf(),
                });
            }
            std::fs::remove_file(path).map_err(|source| ControlSocketError::RemoveStale {
                path: path.to_path_buf(),
                source,
            })?;
        }
        let listener = UnixListener::bind(path).map_err(bind_error)?;
        // Owner only, whatever the umask (a client that came in before this is still
        // checked by its credentials).
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(bind_error)?;
        let meta = std::fs::symlink_metadata(path).map_err(bind_error)?;
        let done = Arc::new(AtomicBool::new(false));
        let stopped_here = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (done, stopped_here) = (Arc::clone(&done), Arc::clone(&stopped_here));
            std::thread::Builder::new()
                .name("sluice-control".into())
                .spawn(move || accept(listener, control, stop, more, done, stopped_here))
                .map_err(ControlSocketError::Thread)?
        };
        Ok(ControlSocket {
            path: path.to_path_buf(),
            identity: (meta.dev(), meta.ino()),
            done,
            stopped_here,
            acceptor: Some(acceptor),
        })
    }

    /// Whether a `stop` command came through this socket.
    pub fn stopped_here(&self) -> bool {
        self.stopped_here.load(Ordering::Acquire)
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        // Wake the thread blocked in accept; it sees `done` and ends.
        let _ = UnixStream::connect(&self.path);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| (m.dev(), m.ino()) == self.identity);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Refuses a control socket path that exists and is not a socket (checked before anything
/// else is opened or written, and again when binding).
pub fn refuse_non_socket(path: &Path) -> Result<(), ControlSocketError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_socket() => Err(ControlSocketError::NotASocket {
            path: path.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

fn accept(
    listener: UnixListener,
    control: ControlHandle,
    stop: StopHandle,
    more: More,
    done: Arc<AtomicBool>,
    stopped_here: Arc<AtomicBool>,
) {
    let clients = Arc::new(AtomicUsize::new(0));
    let me = sluice_os::effective_uid();
    for stream in listener.incoming() {
        if done.load(Ordering::Acquire) {
            return;
        }
        let Ok(mut stream) = stream else {
            // Out of descriptors (EMFILE) or a client gone before it was taken: transient.
            // A pause, not a busy loop on an error that repeats until a descriptor frees.
            std::thread::sleep(ACCEPT_BACKOFF);
            continue;
        };
        match sluice_os::peer_uid(&stream) {
            Ok(uid) if uid == me || uid == 0 => {}
            Ok(uid) => {
                eprintln!("sluice: control socket: refused a client of uid {uid} (only uid {me} or root may control this graph)");
                // One write: a client reading once gets the whole line (`writeln!` on an
                // unbuffered stream writes each piece of the format on its own).
                let line = format!("error: uid {uid} may not control this graph\n");
                let _ = stream.write_all(line.as_bytes());
                continue;
            }
            Err(e) => {
                eprintln!("sluice: control socket: a client without credentials: {e}");
                continue;
            }
        }
        if clients.fetch_add(1, Ordering::AcqRel) >= MAX_CLIENTS {
            clients.fetch_sub(1, Ordering::AcqRel);
            let line = format!("error: {MAX_CLIENTS} clients are connected already\n");
            let _ = stream.write_all(line.as_bytes());
            continue;
        }
        let (control, stop, more, stopped_here, count) = (
            control.clone(),
            stop.clone(),
            more.clone(),
            Arc::clone(&stopped_here),
            Arc::clone(&clients),
        );
        // One thread per client: a `set` may wait for its node to fire.
        let spawned = std::thread::Builder::new()
            .name("sluice-control-client".into())
            .spawn(move || {
                serve(stream, &control, &stop, &more, &stopped_here);
                count.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            clients.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// How long accepting pauses after `accept` failed.
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(50);

/// The longest command line a client may send (the newline not counted): a longer one is
/// answered with an error and ends that client's connection, so a client that never sends a
/// newline costs at most this much memory.
pub const MAX_LINE: usize = 4096;

/// Answers one client's commands, a line each, until it hangs up.
fn serve(
    stream: UnixStream,
    control: &ControlHandle,
    stop: &StopHandle,
    more: &More,
    stopped_here: &AtomicBool,
) {
    let Ok(writer) = stream.try_clone() else {
        return;
    };
    serve_lines(
        BufReader::new(stream),
        writer,
        control,
        stop,
        more,
        stopped_here,
    );
}

/// Answers the command lines read from `input` on `output`, one reply line each, until the
/// input ends, a write fails or a line is longer than [`MAX_LINE`].
pub(crate) fn serve_lines(
    mut input: impl BufRead,
    mut output: impl Write,
    control: &ControlHandle,
    stop: &StopHandle,
    more: &More,
    stopped_here: &AtomicBool,
) {
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = MAX_LINE as u64 + 1;
        match input.by_ref().take(limit).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') && line.len() > MAX_LINE {
            let _ = writeln!(
                output,
                "error: a command line is longer than {MAX_LINE} bytes; closing the connection"
            );
            return;
        }
        let reply = match std::str::from_utf8(&line) {
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => reply(text.trim(), control, stop, more, stopped_here),
            Err(_) => "error: a command line is not UTF-8 text".to_string(),
        };
        if writeln!(output, "{reply}").is_err() {
            return;
        }
    }
}

/// `text` with its control characters escaped (`\u{1b}`, `\t`, ...): what a client sent is
/// shown back on its terminal, where it must not act as a terminal command.
/// `text` with its control characters escaped, for a reply that quotes what a client sent.
pub fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The reply line to one command line (already trimmed, not empty).
fn reply(
    line: &str,
    control: &ControlHandle,
    stop: &StopHandle,
    more: &More,
    stopped_here: &AtomicBool,
) -> String {
    let (verb, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    if let Some(reply) = more.as_ref().and_then(|m| m.reply(verb, rest.trim())) {
        return reply;
    }
    match line.split_once(char::is_whitespace) {
        Some(("set", assignment)) => set(control, assignment.trim()),
        None if line == "stop" => {
            stopped_here.store(true, Ordering::Release);
            stop.stop();
            "ok stopping".to_string()
        }
        None if line == "list" => {
            let mut params = Vec::new();
            for (node, specs) in control.controls() {
                params.extend(specs.iter().map(|s| format!("{node}.{}", s.name)));
            }
            format!("ok {}", params.join(" "))
        }
        _ => format!(
            "error: unknown command '{}' (use: set NODE.PARAM=VALUE, list, stop{})",
            shown(line),
            more.as_ref()
                .map_or(String::new(), |m| format!(", {}", m.usage()))
        ),
    }
}

/// Runs `set NODE.PARAM=VALUE`; the reply line.
fn set(control: &ControlHandle, assignment: &str) -> String {
    let Some((target, value)) = assignment.split_once('=') else {
        return format!("error: '{}' must be NODE.PARAM=VALUE", shown(assignment));
    };
    let (target, value) = (target.trim(), value.trim());
    let Some((node, param)) = target
        .rsplit_once('.')
        .filter(|(n, p)| !n.is_empty() && !p.is_empty())
    else {
        return format!(
            "error: '{}' must name a node and a parameter as NODE.PARAM",
            shown(target)
        );
    };
    match control.set(node, param, parse_value(value)) {
        Ok(at) => format!("ok {node}.{param}={} at item {at}", shown(value)),
        Err(e) => format!("error: {}", shown(&e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn temp_path(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("sluice-ctl-{}-{name}", std::process::id()))
    }

    #[test]
    fn a_regular_file_is_refused_and_kept() {
        let path = temp_path("file");
        std::fs::write(&path, b"keep").unwrap();
        let err = refuse_non_socket(&path).unwrap_err();
        assert!(matches!(err, ControlSocketError::NotASocket { .. }));
        assert!(err.to_string().contains("is not a socket"));
        assert_eq!(std::fs::read(&path).unwrap(), b"keep");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_line_longer_than_the_cap_ends_that_client() {
        let path = temp_path("long");
        let _ = std::fs::remove_file(&path);
        let (control, stop) = (crate::Graph::new().control_handle(), StopHandle::new());
        let socket = ControlSocket::bind(&path, control, stop.clone()).unwrap();
        let mut client = UnixStream::connect(&path).unwrap();
        // 1 MiB without a newline: not buffered whole; the client is told and closed.
        let _ = client.write_all(&vec![b'x'; 1 << 20]);
        let mut reply = String::new();
        let _ = BufReader::new(&client).read_line(&mut reply);
        assert!(reply.contains("longer than 4096 bytes"), "{reply:?}");
        assert!(!stop.is_stopped());
        drop(socket);
    }

    #[test]
    fn another_user_is_refused() {
        if sluice_os::effective_uid() != 0 {
            eprintln!("skipped: connecting as another user needs root");
            return;
        }
        let path = temp_path("uid");
        let _ = std::fs::remove_file(&path);
        let (control, stop) = (crate::Graph::new().control_handle(), StopHandle::new());
        let socket = ControlSocket::bind(&path, control, stop.clone()).unwrap();
        // A child process as user nobody (65534) says `stop`: with mode 0600 it cannot
        // connect; with the mode opened up, its credentials refuse it.
        let as_nobody = || {
            use std::os::unix::process::CommandExt;
            let script = format!(
                "import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect({:?})\nexcept OSError as e:\n    print('connect:', e.errno)\n    raise SystemExit\ntry:\n    s.sendall(b'stop\\n')\nexcept OSError:\n    pass\nprint(s.recv(200).decode())\n",
                path.display().to_string()
            );
            let out = std::process::Command::new("/usr/bin/python3")
                .arg("-c")
                .arg(script)
                .uid(65534)
                .gid(65534)
                .output()
                .unwrap();
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        };
        let first = as_nobody();
        assert!(first.contains("connect: 13"), "{first}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let second = as_nobody();
        assert!(second.contains("may not control"), "{second}");
        assert!(!stop.is_stopped(), "another user stopped the graph");
        drop(socket);
    }

    #[test]
    fn replies_and_removes_its_file() {
        let path = temp_path("sock");
        let _ = std::fs::remove_file(&path);
        let (control, stop) = (crate::Graph::new().control_handle(), StopHandle::new());
        let socket = ControlSocket::bind(&path, control, stop.clone()).unwrap();
        assert!(matches!(
            ControlSocket::bind(
                &path,
                crate::Graph::new().control_handle(),
                StopHandle::new()
            ),
            Err(ControlSocketError::InUse { .. })
        ));
        let mut client = UnixStream::connect(&path).unwrap();
        let mut lines = BufReader::new(client.try_clone().unwrap()).lines();
        let mut ask = |command: &str| {
            writeln!(client, "{command}").unwrap();
            lines.next().unwrap().unwrap()
        };
        assert_eq!(ask("list"), "ok ");
        assert!(ask("frobnicate").starts_with("error: unknown command 'frobnicate'"));
        assert_eq!(ask("set gain"), "error: 'gain' must be NODE.PARAM=VALUE");
        assert!(ask("set .x=1").starts_with("error: '.x' must name a node"));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the socket's mode");
        assert_eq!(ask("stop"), "ok stopping");
        assert!(socket.stopped_here() && stop.is_stopped());
        drop(socket);
        assert!(std::fs::symlink_metadata(&path).is_err());
    }

    #[test]
    fn a_client_without_newlines_is_closed_at_the_line_limit_and_others_are_served() {
        let path = temp_path("flood");
        let _ = std::fs::remove_file(&path);
        let (control, stop) = (crate::Graph::new().control_handle(), StopHandle::new());
        let socket = ControlSocket::bind(&path, control, stop).unwrap();
        let mut flood = UnixStream::connect(&path).unwrap();
        flood
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        // Twice the limit, no newline: the server must not keep reading it into memory.
        let _ = flood.write_all(&vec![b'x'; 2 * MAX_LINE]);
        let mut reply = String::new();
        BufReader::new(flood.try_clone().unwrap())
            .read_line(&mut reply)
            .unwrap();
        assert!(
            reply.starts_with(&format!(
                "error: a command line is longer than {MAX_LINE} bytes"
            )),
            "{reply}"
        );
        let mut rest = Vec::new();
        let _ = flood.read_to_end(&mut rest); // the server closed: EOF (or a reset)
        let mut client = UnixStream::connect(&path).unwrap();
        writeln!(client, "frob\x1b[2Jnicate").unwrap();
        let mut line = String::new();
        BufReader::new(client).read_line(&mut line).unwrap();
        assert!(
            line.starts_with("error: unknown command 'frob\\u{1b}[2Jnicate'"),
            "{line}"
        );
        drop(socket);
    }
}
