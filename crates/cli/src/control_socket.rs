//! The control socket of a running graph (`sluice run --control PATH`) and its client
//! (`sluice ctl PATH …`).
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

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use sluice_runtime::control::parse_value;
use sluice_runtime::{ControlHandle, StopHandle};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

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
    pub fn bind(path: &Path, control: ControlHandle, stop: StopHandle) -> anyhow::Result<Self> {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            refuse_non_socket(path)?;
            debug_assert!(meta.file_type().is_socket());
            if UnixStream::connect(path).is_ok() {
                bail!(
                    "control socket {}: another process is listening on it",
                    path.display()
                );
            }
            std::fs::remove_file(path).with_context(|| {
                format!("control socket {}: removing a stale socket", path.display())
            })?;
        }
        let listener = UnixListener::bind(path)
            .with_context(|| format!("control socket {}", path.display()))?;
        let meta = std::fs::symlink_metadata(path)
            .with_context(|| format!("control socket {}", path.display()))?;
        let done = Arc::new(AtomicBool::new(false));
        let stopped_here = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (done, stopped_here) = (Arc::clone(&done), Arc::clone(&stopped_here));
            std::thread::Builder::new()
                .name("sluice-control".into())
                .spawn(move || accept(listener, control, stop, done, stopped_here))
                .context("starting the control socket's thread")?
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
pub fn refuse_non_socket(path: &Path) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_socket() => bail!(
            "control socket {}: the path exists and is not a socket; choose another path \
             (nothing was changed)",
            path.display()
        ),
        _ => Ok(()),
    }
}

fn accept(
    listener: UnixListener,
    control: ControlHandle,
    stop: StopHandle,
    done: Arc<AtomicBool>,
    stopped_here: Arc<AtomicBool>,
) {
    for stream in listener.incoming() {
        if done.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let (control, stop, stopped_here) =
            (control.clone(), stop.clone(), Arc::clone(&stopped_here));
        // One thread per client: a `set` may wait for its node to fire.
        let _ = std::thread::Builder::new()
            .name("sluice-control-client".into())
            .spawn(move || serve(stream, &control, &stop, &stopped_here));
    }
}

/// Answers one client's commands, a line each, until it hangs up.
fn serve(
    stream: UnixStream,
    control: &ControlHandle,
    stop: &StopHandle,
    stopped_here: &AtomicBool,
) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let reply = match line.split_once(char::is_whitespace) {
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
            _ => format!("error: unknown command '{line}' (use: set NODE.PARAM=VALUE, list, stop)"),
        };
        if writeln!(writer, "{reply}").is_err() {
            return;
        }
    }
}

/// Runs `set NODE.PARAM=VALUE`; the reply line.
fn set(control: &ControlHandle, assignment: &str) -> String {
    let Some((target, value)) = assignment.split_once('=') else {
        return format!("error: '{assignment}' must be NODE.PARAM=VALUE");
    };
    let (target, value) = (target.trim(), value.trim());
    let Some((node, param)) = target
        .rsplit_once('.')
        .filter(|(n, p)| !n.is_empty() && !p.is_empty())
    else {
        return format!("error: '{target}' must name a node and a parameter as NODE.PARAM");
    };
    match control.set(node, param, parse_value(value)) {
        Ok(at) => format!("ok {node}.{param}={value} at item {at}"),
        Err(e) => format!("error: {e}"),
    }
}

/// Arguments of `sluice ctl`.
#[derive(Args, Debug)]
pub struct CtlArgs {
    /// The control socket of a running graph (`sluice run GRAPH --control SOCKET`).
    pub socket: PathBuf,
    /// What to ask of the running graph.
    #[command(subcommand)]
    pub action: CtlAction,
}

/// What `sluice ctl` asks of a running graph.
#[derive(Subcommand, Debug)]
pub enum CtlAction {
    /// Change a node's parameter while it runs: `set gain.gain=0.5`. Prints the item offset at
    /// which the change took effect (tagged `set:PARAM` in the stream there).
    Set {
        /// `NODE.PARAM=VALUE`; `sluice blocks NAME` lists which parameters are settable.
        #[arg(value_name = "NODE.PARAM=VALUE")]
        assignment: String,
    },
    /// List every parameter that can be changed while the graph runs, as NODE.PARAM.
    List,
    /// Stop the graph gracefully (as Ctrl-C): sources end, sinks finish their files.
    Stop,
}

/// Runs `sluice ctl`: sends one command, prints the reply, fails if the reply is an error.
pub fn ctl(args: CtlArgs) -> anyhow::Result<()> {
    let command = match &args.action {
        CtlAction::Set { assignment } => format!("set {assignment}"),
        CtlAction::List => "list".to_string(),
        CtlAction::Stop => "stop".to_string(),
    };
    let socket = args.socket.display();
    let mut stream = UnixStream::connect(&args.socket).with_context(|| {
        format!("cannot connect to control socket {socket} (is `sluice run GRAPH --control {socket}` running?)")
    })?;
    // A `set` waits for its node to fire, at most 5 s: this bounds a server that hangs.
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    writeln!(stream, "{command}").with_context(|| format!("control socket {socket}"))?;
    let mut reply = String::new();
    BufReader::new(&stream)
        .read_line(&mut reply)
        .with_context(|| format!("control socket {socket}: no reply"))?;
    let reply = reply.trim_end();
    match reply.strip_prefix("error: ") {
        Some(err) => bail!("{err}"),
        None if reply.is_empty() => {
            bail!("control socket {socket}: the graph closed the connection")
        }
        None => println!("{reply}"),
    }
    Ok(())
}
