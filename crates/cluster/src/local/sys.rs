//! The system side of local clusters: `ip`/`tc` commands with readable errors, processes
//! identified by pid and start time, and the free-subnet search.

use super::LocalError;
use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Runs `argv` and returns its stdout; a failure is an error naming the command and its
/// stderr.
pub(crate) fn run(argv: &[&str]) -> Result<String, LocalError> {
    let command = argv.join(" ");
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .map_err(|e| LocalError::Command {
            command: command.clone(),
            stderr: if e.kind() == std::io::ErrorKind::NotFound {
                format!("{} is not installed (Debian package iproute2)", argv[0])
            } else {
                e.to_string()
            },
        })?;
    if !out.status.success() {
        return Err(LocalError::Command {
            command,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Like [`run`], but a failure whose stderr says the object is already gone is `Ok(false)`
/// (for the steps of `down`); `Ok(true)` when the command removed something.
pub(crate) fn run_removal(argv: &[&str]) -> Result<bool, LocalError> {
    match run(argv) {
        Ok(_) => Ok(true),
        Err(LocalError::Command { stderr, .. })
            if stderr.contains("Cannot find device")
                || stderr.contains("No such file or directory")
                || stderr.contains("does not exist")
                || stderr.contains("not found") =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Whether a network interface of that name exists in the root namespace.
pub(crate) fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// Whether a named network namespace exists (`ip netns add` creates `/run/netns/NAME`).
pub(crate) fn netns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

/// A process we started: its pid and its start time (in clock ticks since boot, field 22 of
/// `/proc/PID/stat`), so a recycled pid is never mistaken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Proc {
    pub pid: u32,
    pub start: u64,
}

impl Proc {
    /// The process `pid` as it is now, if it exists.
    pub fn of(pid: u32) -> Option<Proc> {
        let (state, start) = stat(pid)?;
        (state != 'Z').then_some(Proc { pid, start })
    }

    /// Whether this very process is still running (not a zombie, not a recycled pid).
    pub fn alive(&self) -> bool {
        matches!(stat(self.pid), Some((state, start)) if state != 'Z' && start == self.start)
    }
}

/// `(state, start time)` from `/proc/PID/stat`.
fn stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain anything.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

/// Every process whose arguments contain `flag` immediately followed by `value` (how `down`
/// finds the etcd and workers of a cluster whose `up` died before it recorded their pids).
pub(crate) fn processes_with_arg(flag: &str, value: &str) -> Vec<Proc> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if args
            .windows(2)
            .any(|w| w[0] == flag.as_bytes() && w[1] == value.as_bytes())
        {
            found.extend(Proc::of(pid));
        }
    }
    found
}

/// Every process in the named network namespace (`ip netns pids`).
pub(crate) fn processes_in_netns(netns: &str) -> Vec<Proc> {
    run(&["ip", "netns", "pids", netns])
        .map(|out| {
            out.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .filter_map(Proc::of)
                .collect()
        })
        .unwrap_or_default()
}

/// Stops `procs`: SIGTERM, then SIGKILL to those still running after `grace`; waits (bounded)
/// until they are gone, reaping those that are our children. Returns those that were running.
pub(crate) fn stop_processes(procs: &[Proc], grace: Duration) -> Vec<Proc> {
    use rustix::process::{kill_process, Pid, Signal};
    let running: Vec<Proc> = procs.iter().copied().filter(Proc::alive).collect();
    let signal = |sig: Signal| {
        for p in running.iter().filter(|p| p.alive()) {
            if let Some(pid) = Pid::from_raw(p.pid as i32) {
                let _ = kill_process(pid, sig);
            }
        }
    };
    let wait = |limit: Duration| {
        let deadline = Instant::now() + limit;
        loop {
            reap(&running);
            if running.iter().all(|p| !p.alive()) || Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    signal(Signal::TERM);
    wait(grace);
    signal(Signal::KILL);
    wait(Duration::from_secs(5));
    running
}

/// Collects the exit status of those of `procs` that are our exited children (no zombies left
/// behind by a long-lived caller such as a test).
fn reap(procs: &[Proc]) {
    use rustix::process::{waitpid, Pid, WaitOptions};
    for p in procs {
        if let Some(pid) = Pid::from_raw(p.pid as i32) {
            let _ = waitpid(Some(pid), WaitOptions::NOHANG);
        }
    }
}

/// The IPv4 prefixes in use on this machine: interface addresses and routes.
pub(crate) fn used_prefixes() -> Result<Vec<(Ipv4Addr, u8)>, LocalError> {
    let mut prefixes = Vec::new();
    let addrs = run(&["ip", "-o", "-4", "addr", "show"])?;
    for word in addrs.split_whitespace() {
        prefixes.extend(parse_prefix(word));
    }
    let routes = run(&["ip", "-4", "route", "show", "table", "all"])?;
    for line in routes.lines() {
        let mut words = line.split_whitespace();
        let first = match words.next() {
            Some("broadcast" | "local" | "unicast" | "anycast" | "multicast") => words.next(),
            w => w,
        };
        if let Some(w) = first {
            prefixes
                .extend(parse_prefix(w).or_else(|| w.parse::<Ipv4Addr>().ok().map(|a| (a, 32))));
        }
    }
    Ok(prefixes)
}

fn parse_prefix(word: &str) -> Option<(Ipv4Addr, u8)> {
    let (addr, len) = word.split_once('/')?;
    let len: u8 = len.parse().ok().filter(|&l| l <= 32)?;
    Some((addr.parse().ok()?, len))
}

/// Whether `10.a.b.0/24` overlaps `prefix`.
pub(crate) fn overlaps(subnet: [u8; 2], prefix: (Ipv4Addr, u8)) -> bool {
    let ours = u32::from(Ipv4Addr::new(10, subnet[0], subnet[1], 0));
    let (addr, len) = prefix;
    let shorter = len.min(24);
    let mask = if shorter == 0 {
        0
    } else {
        u32::MAX << (32 - shorter)
    };
    ours & mask == u32::from(addr) & mask
}

/// The first `10.a.b.0/24`, starting from `start` and counting up, that overlaps nothing in
/// `used` nor any of `taken`.
pub(crate) fn free_subnet(
    start: [u8; 2],
    used: &[(Ipv4Addr, u8)],
    taken: &BTreeSet<[u8; 2]>,
) -> Option<[u8; 2]> {
    let first = u16::from_be_bytes(start);
    (0..=u16::MAX)
        .map(|i| first.wrapping_add(i).to_be_bytes())
        .filter(|s| s[1] != 0 && s[1] != 255)
        .find(|s| !taken.contains(s) && !used.iter().any(|&p| overlaps(*s, p)))
}

/// `n` random bytes from the kernel.
pub(crate) fn random_bytes(n: usize) -> Result<Vec<u8>, LocalError> {
    use std::io::Read;
    let mut bytes = vec![0; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|source| LocalError::Io {
            path: "/dev/urandom".into(),
            source,
        })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnet_overlaps() {
        let p = |s: &str| parse_prefix(s).unwrap();
        assert!(overlaps([1, 2], p("10.1.2.7/24")));
        assert!(overlaps([1, 2], p("10.0.0.0/8")));
        assert!(overlaps([1, 2], p("10.1.2.128/25")));
        assert!(!overlaps([1, 2], p("10.1.3.0/24")));
        assert!(!overlaps([1, 2], p("192.168.0.0/16")));
        assert!(overlaps([1, 2], p("0.0.0.0/0")));
        let used = vec![p("10.1.2.0/24"), p("10.1.3.1/32")];
        let taken = BTreeSet::from([[1, 4]]);
        assert_eq!(free_subnet([1, 2], &used, &taken), Some([1, 5]));
        assert_eq!(free_subnet([1, 254], &[], &BTreeSet::new()), Some([1, 254]));
        assert_eq!(free_subnet([1, 255], &[], &BTreeSet::new()), Some([2, 1]));
    }

    #[test]
    fn own_process_is_alive() {
        let me = Proc::of(std::process::id()).unwrap();
        assert!(me.alive());
        let recycled = Proc {
            pid: me.pid,
            start: me.start + 1,
        };
        assert!(!recycled.alive());
    }
}
