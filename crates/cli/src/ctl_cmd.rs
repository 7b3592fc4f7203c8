//! `sluice ctl PATH …`: the client of a running graph's control socket (`sluice run --control
//! PATH`). The server and its protocol are `sluice_runtime::control_socket`.

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

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
