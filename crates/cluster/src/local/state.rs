//! A local cluster's `state.json`: its names, addresses, processes and the resources created
//! (each recorded before it is created), written atomically after every change.

use super::sys::Proc;
use super::LocalError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::Ipv4Addr;
use std::path::Path;

/// A system resource `down` removes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Resource {
    /// A network namespace (`ip netns delete`).
    Netns(String),
    /// An interface in the root namespace: the bridge or a veth's root end (`ip link delete`).
    Link(String),
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Netns(n) => write!(f, "network namespace {n}"),
            Resource::Link(l) => write!(f, "interface {l}"),
        }
    }
}

/// One host.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct HostState {
    pub name: String,
    pub netns: String,
    /// The veth pair's end in the root namespace, on the bridge.
    pub veth: String,
    pub address: Ipv4Addr,
    pub worker: Option<Proc>,
}

/// The whole `state.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct State {
    pub name: String,
    /// `A.B` of `10.A.B.0/24`.
    pub subnet: [u8; 2],
    pub bridge: String,
    pub rate: Option<String>,
    pub hosts: Vec<HostState>,
    pub etcd: Option<Proc>,
    /// The user the workers run as (once resolved).
    #[serde(default)]
    pub worker_ids: Option<super::Ids>,
    /// Created resources, in order (each written here before it was created).
    pub resources: Vec<Resource>,
}

/// The bridge's name for cluster `name`.
pub(crate) fn bridge_name(name: &str) -> String {
    format!("sl-{name}")
}

/// The subnet a cluster's name suggests (FNV-1a of the name), before collisions are avoided.
pub(crate) fn subnet_of(name: &str) -> [u8; 2] {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    let folded = (h >> 16) ^ (h & 0xffff);
    // Keep clear of 10.0.x and of .0/.255 third bytes, which tools treat specially.
    let a = (folded >> 8) as u8;
    let b = (folded & 0xff) as u8;
    [a.clamp(1, 254), b.clamp(1, 254)]
}

impl State {
    pub fn new(name: &str, hosts: usize, rate: Option<String>) -> State {
        let mut state = State {
            name: name.to_string(),
            subnet: subnet_of(name),
            bridge: bridge_name(name),
            rate,
            hosts: (1..=hosts)
                .map(|n| HostState {
                    name: format!("h{n}"),
                    netns: format!("sl-{name}-h{n}"),
                    veth: format!("sl-{name}-{n}"),
                    address: Ipv4Addr::UNSPECIFIED,
                    worker: None,
                })
                .collect(),
            etcd: None,
            worker_ids: None,
            resources: Vec::new(),
        };
        state.set_subnet(state.subnet);
        state
    }

    /// Sets the subnet and the hosts' addresses (`10.A.B.(N+1)`).
    pub fn set_subnet(&mut self, subnet: [u8; 2]) {
        self.subnet = subnet;
        for (i, h) in self.hosts.iter_mut().enumerate() {
            h.address = Ipv4Addr::new(10, subnet[0], subnet[1], i as u8 + 2);
        }
    }

    /// `10.A.B.1`.
    pub fn bridge_address(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, self.subnet[0], self.subnet[1], 1)
    }

    /// Writes `RUN/state.json` atomically (a temporary file renamed over it).
    pub fn save(&self, run_dir: &Path) -> Result<(), LocalError> {
        let path = run_dir.join("state.json");
        let tmp = run_dir.join("state.json.tmp");
        let text = serde_json::to_string_pretty(self).expect("the state always serializes");
        std::fs::write(&tmp, text + "\n")
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|source| LocalError::Io { path, source })
    }

    /// Reads `RUN/state.json`.
    pub fn load(run_dir: &Path) -> Result<State, LocalError> {
        let path = run_dir.join("state.json");
        let text = std::fs::read_to_string(&path).map_err(|e| LocalError::State {
            path: path.clone(),
            message: format!("cannot read it ({e}); not a local cluster's run directory?"),
        })?;
        serde_json::from_str(&text).map_err(|e| LocalError::State {
            path,
            message: format!("not a local cluster's state: {e}"),
        })
    }
}

/// A `tc` rate (`100mbit`, `1gbit`, `500kbit`, `10mbps`, ...) in bytes per second.
pub(crate) fn rate_bytes_per_s(rate: &str) -> Result<f64, String> {
    let bad = || {
        format!("bad rate {rate:?}: expected a number and a tc unit, e.g. 100mbit, 1gbit, 500kbit")
    };
    let lower = rate.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (number, unit) = lower.split_at(split);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let bits = match unit {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        "gbps" => 8e9,
        _ => return Err(bad()),
    };
    let bytes = number * bits / 8.0;
    if bytes < 1000.0 {
        return Err(format!("rate {rate:?} is too low (at least 8kbit)"));
    }
    Ok(bytes)
}

/// The `tbf` bucket for `rate`: 10 ms of traffic, at least 64 KiB (a veth passes whole GSO
/// packets of up to 64 KiB, which a smaller bucket would drop).
pub(crate) fn tbf_burst(rate: &str) -> Result<String, String> {
    let bytes = rate_bytes_per_s(rate)?;
    Ok(format!("{}", ((bytes / 100.0) as u64).max(64 * 1024)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(rate_bytes_per_s("100mbit").unwrap(), 12.5e6);
        assert_eq!(rate_bytes_per_s("1gbit").unwrap(), 125e6);
        assert_eq!(rate_bytes_per_s("10MBps").unwrap(), 10e6);
        assert!(rate_bytes_per_s("fast").is_err());
        assert!(rate_bytes_per_s("100").is_err());
        assert!(rate_bytes_per_s("1bit").is_err());
        assert_eq!(tbf_burst("1gbit").unwrap(), "1250000");
        assert_eq!(tbf_burst("1mbit").unwrap(), "65536");
    }

    #[test]
    fn names_and_addresses() {
        let s = State::new("abcdefghi", 32, None);
        assert_eq!(s.bridge, "sl-abcdefghi");
        assert!(s.hosts.iter().all(|h| h.veth.len() <= 15));
        assert_eq!(s.hosts[31].veth, "sl-abcdefghi-32");
        assert_eq!(s.hosts[0].netns, "sl-abcdefghi-h1");
        let [a, b] = s.subnet;
        assert_eq!(s.hosts[1].address, Ipv4Addr::new(10, a, b, 3));
        assert_ne!(subnet_of("a"), subnet_of("b"));
    }
}
