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
    /// Run a branch beside the graph: a branch file (a graph file whose `[[feed]]` tables name
    /// the running graph's outputs its inputs read, `from = "NODE.PORT"`, `to = "NODE.PORT"`).
    /// Its readers are lossless: the running graph's nodes never skip or repeat an item for it.
    Attach {
        /// The branch's name, for `detach` (letters, digits, `_`, `-`).
        name: String,
        /// The branch file.
        file: PathBuf,
        /// Start at this item of the feeds (still held in their queues) instead of now.
        #[arg(long, value_name = "N")]
        at: Option<u64>,
    },
    /// Take a branch away. By default it drains: it finishes on every item published until
    /// now and its sinks close normally.
    Detach {
        /// The branch's name.
        name: String,
        /// End it where it has read to instead of draining.
        #[arg(long)]
        drop: bool,
    },
    /// Put a new node in place of a running one from input item N: its output is the old
    /// node's before N and the new node's from N, the new one warmed up on its history.
    Replace {
        /// The node to replace.
        node: String,
        /// The input item from which the new node takes over.
        #[arg(long, value_name = "N")]
        at: u64,
        /// The new node's block type (`sluice blocks`); its ports must be the old node's.
        block: String,
        /// Its parameters, as PARAM=VALUE (TOML values: `taps=[0.5,0.5]`).
        #[arg(value_name = "PARAM=VALUE")]
        params: Vec<String>,
    },
    /// List the branches attached now.
    Branches,
}

/// `word` if it can travel as one word of a command line.
fn one_word(word: &str) -> anyhow::Result<&str> {
    if word.is_empty() || word.chars().any(|c| c.is_whitespace() || c.is_control()) {
        bail!("'{}' cannot be sent: the control socket's commands are words without spaces (write TOML values without spaces: taps=[0.5,0.5])", word.escape_debug());
    }
    Ok(word)
}

/// Runs `sluice ctl`: sends one command, prints the reply, fails if the reply is an error.
pub fn ctl(args: CtlArgs) -> anyhow::Result<()> {
    let command = match &args.action {
        CtlAction::Set { assignment } => format!("set {assignment}"),
        CtlAction::List => "list".to_string(),
        CtlAction::Stop => "stop".to_string(),
        CtlAction::Attach { name, file, at } => {
            // The server reads the file: send a path that means the same there.
            let file = std::fs::canonicalize(file)
                .with_context(|| format!("branch file {}", file.display()))?;
            let at = at.map_or(String::new(), |n| format!(" at {n}"));
            format!(
                "attach {name} {}{at}",
                one_word(&file.display().to_string())?
            )
        }
        CtlAction::Detach { name, drop } => {
            format!("detach {name} {}", if *drop { "drop" } else { "drain" })
        }
        CtlAction::Replace {
            node,
            at,
            block,
            params,
        } => {
            let mut line = format!("replace {node} at {at} {block}");
            for p in params {
                line.push(' ');
                line.push_str(one_word(p)?);
            }
            line
        }
        CtlAction::Branches => "branches".to_string(),
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
