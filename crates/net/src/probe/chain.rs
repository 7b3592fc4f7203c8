//! A whole loop on one machine: hop processes (reflectors or relays) started as children and
//! chained between the origin's two listeners, each told where to connect by the one before.
//!
//! A hop process speaks a two-line protocol on its standard output: its first line says
//! where it listens (`…: listening on ADDR`), and it ends with a [`cpu_line`] saying how much
//! CPU it used. Every other line is passed on to the caller.

use super::ProbeError;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

/// The prefix of a hop's last line, [`cpu_line`].
const CPU_PREFIX: &str = "reflect-cpu ";

/// The line a hop process prints last: `reflect-cpu SECONDS BYTES`, its CPU time and the bytes
/// it passed on.
pub fn cpu_line(cpu_s: f64, bytes: u64) -> String {
    format!("{CPU_PREFIX}{cpu_s:.6} {bytes}")
}

/// Hop processes chained between an origin's listeners; any still running are killed when
/// this is dropped.
pub struct LocalHops {
    children: Vec<Child>,
    outputs: Vec<BufReader<ChildStdout>>,
}

impl LocalHops {
    /// Starts `count` hop processes: the first connects to the origin's outgoing listener
    /// `out` and listens for the next, …, the last connects to the origin's returning
    /// listener `back`. `command(from, to)` makes a hop's command (its standard output is
    /// taken here), `from` and `to` being `tcp://…` or `tcp-listen://…` URLs.
    pub fn start(
        count: u32,
        out: SocketAddr,
        back: SocketAddr,
        mut command: impl FnMut(&str, &str) -> Command,
    ) -> Result<LocalHops, ProbeError> {
        let mut hops = LocalHops {
            children: Vec::new(),
            outputs: Vec::new(),
        };
        let mut prev = out.to_string();
        for i in 1..=count {
            let to = if i == count {
                format!("tcp://{back}")
            } else {
                "tcp-listen://127.0.0.1:0".to_string()
            };
            let mut cmd = command(&format!("tcp://{prev}"), &to);
            let mut child = cmd.stdout(Stdio::piped()).spawn().map_err(|source| {
                let program = Path::new(cmd.get_program()).display().to_string();
                ProbeError::Io {
                    what: format!("cannot start {program}"),
                    source,
                }
            })?;
            let stdout = child.stdout.take();
            hops.children.push(child);
            let mut out = BufReader::new(
                stdout.ok_or_else(|| ProbeError::Config("no reflector stdout".into()))?,
            );
            let mut line = String::new();
            out.read_line(&mut line).map_err(|source| ProbeError::Io {
                what: "reading the reflector's first line".into(),
                source,
            })?;
            if i < count {
                prev = line
                    .trim()
                    .split_once(": listening on ")
                    .map(|(_, a)| a)
                    .ok_or_else(|| {
                        ProbeError::Config(format!("reflector {i} said '{}'", line.trim()))
                    })?
                    .to_string();
            }
            hops.outputs.push(out);
        }
        Ok(hops)
    }

    /// Waits for every hop to end, passing each line it printed (but its [`cpu_line`]) to
    /// `line`; the CPU seconds each hop reported (NaN where it did not). An error if a hop
    /// failed.
    pub fn finish(mut self, mut line: impl FnMut(&str)) -> Result<Vec<f64>, ProbeError> {
        let mut cpus = Vec::new();
        let outputs = std::mem::take(&mut self.outputs);
        for (child, out) in self.children.iter_mut().zip(outputs) {
            let status = child.wait().map_err(|source| ProbeError::Io {
                what: "waiting for a reflector".into(),
                source,
            })?;
            let mut cpu = None;
            for text in out.lines() {
                let text = text.unwrap_or_default();
                if let Some(rest) = text.strip_prefix(CPU_PREFIX) {
                    cpu = rest.split(' ').next().and_then(|v| v.parse::<f64>().ok());
                } else {
                    line(&text);
                }
            }
            if !status.success() {
                return Err(ProbeError::HopFailed(status));
            }
            cpus.push(cpu.unwrap_or(f64::NAN));
        }
        Ok(cpus)
    }
}

impl Drop for LocalHops {
    fn drop(&mut self) {
        for c in &mut self.children {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hop made of `sh`: says where it "listens", prints a line and its CPU line.
    fn hop(from: &str, to: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!(
            "echo 'hop: listening on 127.0.0.1:9'; echo 'from {from} to {to}'; echo '{}'",
            cpu_line(0.25, 7)
        ));
        cmd
    }

    #[test]
    fn hops_are_chained_and_report_their_cpu() {
        let (out, back) = (
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
        );
        let hops = LocalHops::start(2, out, back, hop).unwrap();
        let mut lines = Vec::new();
        let cpus = hops.finish(|l| lines.push(l.to_string())).unwrap();
        assert_eq!(cpus, [0.25, 0.25]);
        assert_eq!(
            lines,
            [
                "from tcp://127.0.0.1:1 to tcp-listen://127.0.0.1:0",
                "from tcp://127.0.0.1:9 to tcp://127.0.0.1:2",
            ]
        );
    }

    #[test]
    fn a_failing_hop_is_an_error() {
        let (out, back) = (
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
        );
        let hops = LocalHops::start(1, out, back, |_, _| {
            let mut cmd = Command::new("sh");
            cmd.arg("-c").arg("echo hi; exit 3");
            cmd
        })
        .unwrap();
        let e = hops.finish(|_| {}).unwrap_err().to_string();
        assert!(e.starts_with("a reflector failed ("), "{e}");
    }
}
