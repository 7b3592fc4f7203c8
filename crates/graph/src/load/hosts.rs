//! `[hosts.NAME]` and `host = "…"`: where a graph's nodes run when a cluster runs it, and which
//! hosts stand by for which.

use super::{line_column, NodeDoc};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

/// `[hosts.NAME]`: a machine of a cluster (see `sluice-cluster`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HostDoc {
    #[serde(default)]
    address: Option<Spanned<String>>,
    #[serde(default)]
    standby: Option<Spanned<String>>,
    #[serde(default)]
    standby_mode: Option<Spanned<String>>,
}

/// A host a graph file declares: `[hosts.NAME]` with the address its worker is reached at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostDecl {
    /// The address (an IP address or a name, no port) streams to this host connect to; `None`
    /// when the file leaves it to the cluster (the address its worker registered).
    pub address: Option<String>,
    /// The `[hosts.NAME]` line.
    pub line: usize,
    /// The host that runs a hot copy of this host's partition and takes over when this one
    /// fails (`standby = "NAME"`): a declared host with no nodes of its own.
    pub standby: Option<String>,
    /// How the standby runs (`standby_mode`, default `"hot"`).
    pub standby_mode: StandbyMode,
}

/// How a standby host runs its copy of a partition (`standby_mode = "…"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StandbyMode {
    /// It runs an identical copy on the same inputs all along; only the primary's outputs are
    /// used until the primary fails.
    #[default]
    Hot,
    /// It waits, running nothing, until the primary fails; it then starts the partition
    /// afresh, re-primed from input that upstream kept for it. Every block of the partition
    /// must declare finite memory (an FIR, a channelizer, an FM demodulator; not an IIR).
    Warm,
}

/// A host's address names a machine: no scheme, no port, no spaces.
fn check_address(
    name: &str,
    address: &Spanned<String>,
) -> Result<(), (Range<usize>, Option<String>, String)> {
    let text = address.get_ref().trim();
    if text.is_empty() || text.contains(char::is_whitespace) {
        return Err((
            address.span(),
            None,
            format!("hosts.{name}: address must be an IP address or a host name, not '{text}'"),
        ));
    }
    if text.contains('/') || text.matches(':').count() == 1 {
        return Err((
            address.span(),
            None,
            format!("hosts.{name}: address '{text}' must name the machine only (no scheme, no port: the streams' ports are chosen when the graph runs)"),
        ));
    }
    Ok(())
}

type Placement = (BTreeMap<String, HostDecl>, BTreeMap<String, String>);

/// Hosts and `host = "…"`: every host has an address, and when the file declares hosts every
/// node names one of them (a graph without hosts runs on one machine, and so does one with
/// hosts when `sluice run` runs it: placement matters only to `sluice cluster run`).
pub(super) fn check_placement(
    hosts: &BTreeMap<String, Spanned<HostDoc>>,
    nodes: &[Spanned<NodeDoc>],
    text: &str,
) -> Result<Placement, (Range<usize>, Option<String>, String)> {
    let mut declared = BTreeMap::new();
    for (name, host) in hosts {
        if let Some(address) = &host.get_ref().address {
            check_address(name, address)?;
        }
        let line = line_column(text, host.span().start).0;
        let standby_mode = match &host.get_ref().standby_mode {
            None => StandbyMode::Hot,
            Some(mode) if mode.get_ref() == "hot" => StandbyMode::Hot,
            Some(mode) if mode.get_ref() == "warm" => StandbyMode::Warm,
            Some(mode) => {
                return Err((
                    mode.span(),
                    None,
                    format!(
                        "hosts.{name} (line {line}): standby_mode must be \"hot\" or \"warm\", not \"{}\"",
                        mode.get_ref()
                    ),
                ));
            }
        };
        declared.insert(
            name.clone(),
            HostDecl {
                address: host
                    .get_ref()
                    .address
                    .as_ref()
                    .map(|a| a.get_ref().trim().to_string()),
                line,
                standby: host.get_ref().standby.as_ref().map(|s| s.get_ref().clone()),
                standby_mode,
            },
        );
    }
    let names: Vec<&str> = declared.keys().map(String::as_str).collect();
    let mut node_hosts = BTreeMap::new();
    for node in nodes {
        let node = node.get_ref();
        let name = node.name.get_ref();
        match &node.host {
            Some(host) if !declared.contains_key(host.get_ref()) => {
                let known = if names.is_empty() {
                    "the file declares no [hosts.NAME] tables".to_string()
                } else {
                    format!("declared hosts: {}", names.join(", "))
                };
                return Err((
                    host.span(),
                    Some(name.clone()),
                    format!("node '{name}': unknown host '{}' ({known})", host.get_ref()),
                ));
            }
            Some(host) => {
                node_hosts.insert(name.clone(), host.get_ref().clone());
            }
            None if !declared.is_empty() => {
                return Err((
                    node.name.span(),
                    Some(name.clone()),
                    format!(
                        "node '{name}': no host; the file declares hosts ({}), so every node says where it runs with host = \"…\"",
                        names.join(", ")
                    ),
                ));
            }
            None => {}
        }
    }
    check_standbys(hosts, &declared, &node_hosts)?;
    Ok((declared, node_hosts))
}

/// `standby = "S"`: S is another declared host that runs nothing of its own, stands by for
/// this host only, and has no standby itself.
fn check_standbys(
    hosts: &BTreeMap<String, Spanned<HostDoc>>,
    declared: &BTreeMap<String, HostDecl>,
    node_hosts: &BTreeMap<String, String>,
) -> Result<(), (Range<usize>, Option<String>, String)> {
    for (name, host) in hosts {
        let Some(standby) = &host.get_ref().standby else {
            continue;
        };
        let s = standby.get_ref();
        let line = declared[name].line;
        let fail = |why: String| {
            Err((
                standby.span(),
                None,
                format!("hosts.{name} (line {line}): standby \"{s}\" {why}"),
            ))
        };
        let Some(decl) = declared.get(s) else {
            let names: Vec<&str> = declared.keys().map(String::as_str).collect();
            return fail(format!(
                "is not a declared host (declared hosts: {})",
                names.join(", ")
            ));
        };
        if s == name {
            return fail("is the host itself: name another host".into());
        }
        if let Some(node) = node_hosts.iter().find(|(_, h)| *h == s).map(|(n, _)| n) {
            return fail(format!(
                "runs nodes of its own (node '{node}'): a standby host runs only the copy of the partition it stands by for"
            ));
        }
        if decl.standby.is_some() {
            return fail(format!(
                "has a standby of its own (line {}): a standby host cannot itself have a standby",
                decl.line
            ));
        }
        if let Some((other, _)) = declared
            .iter()
            .find(|(o, d)| *o < name && d.standby.as_deref() == Some(s.as_str()))
        {
            return fail(format!(
                "already stands by for host {other}: a standby host stands by for one host only"
            ));
        }
    }
    Ok(())
}
