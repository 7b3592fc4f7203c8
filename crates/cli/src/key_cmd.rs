//! `sluice key`: the files of the secure channel. `new` makes an identity (a host's static
//! key pair, for `identity_file` and `--identity`) or a cluster key (`key_file`); `public`
//! prints an identity's public key, the line a peers or members file lists.

use clap::{Args, Subcommand};
use sluice_net::auth::ClusterKey;
use sluice_net::secure::{keys, Identity};
use std::path::PathBuf;

/// `sluice key …`.
#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Make a new key file (mode 600; an existing file is never overwritten): an identity by
    /// default, a cluster key with --cluster.
    New(NewArgs),
    /// Print the public key of an identity file with a name: one line of a peers file
    /// (`peers_file`, `--controllers`) or of a controller's members file (`--members`).
    Public(PublicArgs),
}

/// Arguments of `sluice key new`.
#[derive(Args, Debug)]
pub struct NewArgs {
    /// The file to create.
    pub path: PathBuf,
    /// Make a cluster key (64 hex characters; the secure channel's PSK) instead of an
    /// identity.
    #[arg(long)]
    pub cluster: bool,
}

/// Arguments of `sluice key public`.
#[derive(Args, Debug)]
pub struct PublicArgs {
    /// The identity file.
    pub path: PathBuf,
    /// The name to print after the key (a host's name, as graph files place nodes on it).
    #[arg(long)]
    pub name: Option<String>,
}

/// Runs `sluice key`.
pub fn run(cmd: KeyCommand) -> anyhow::Result<()> {
    match cmd {
        KeyCommand::New(a) if a.cluster => {
            ClusterKey::generate(&a.path)?;
            eprintln!(
                "sluice: wrote cluster key {} (give the same file to every end)",
                a.path.display()
            );
        }
        KeyCommand::New(a) => {
            let id = Identity::create(&a.path)?;
            eprintln!(
                "sluice: wrote identity {}; its public key:",
                a.path.display()
            );
            println!("{}", keys::hex32(&id.public()));
        }
        KeyCommand::Public(a) => {
            let id = Identity::load(&a.path)?;
            match a.name {
                Some(name) => println!("{} {name}", keys::hex32(&id.public())),
                None => println!("{}", keys::hex32(&id.public())),
            }
        }
    }
    Ok(())
}
