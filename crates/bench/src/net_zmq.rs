//! The libzmq peer of `sluice bench net`: `peers/zmq_bench.c`, compiled at run time with `cc`
//! against Debian's libzmq3-dev (nothing links libzmq into the workspace), run as two
//! processes on loopback per measurement.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SOURCE: &str = include_str!("../peers/zmq_bench.c");

/// The compiled harness.
pub(super) struct Zmq {
    exe: PathBuf,
}

/// One process's closing line of JSON.
pub(super) type Report = serde_json::Value;

impl Zmq {
    /// Compiles the harness into `dir` (again only if its source changed). The error names
    /// the Debian package that is missing.
    pub fn build(dir: &Path) -> Result<Zmq, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let src = dir.join("zmq_bench.c");
        let exe = dir.join("zmq_bench");
        let same = std::fs::read_to_string(&src).is_ok_and(|s| s == SOURCE);
        if same && exe.exists() {
            return Ok(Zmq { exe });
        }
        std::fs::write(&src, SOURCE).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
        let out = Command::new("cc")
            .args(["-O2", "-Wall", "-o"])
            .arg(&exe)
            .arg(&src)
            .arg("-lzmq")
            .output()
            .map_err(|e| {
                format!("cannot run cc ({e}): install gcc (scripts/setup.sh installs it)")
            })?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let _ = std::fs::remove_file(&exe);
            if err.contains("zmq.h") || err.contains("-lzmq") {
                return Err(
                    "libzmq's headers or library are missing: install libzmq3-dev (scripts/setup.sh installs it)"
                        .into(),
                );
            }
            return Err(format!("cc failed on {}: {}", src.display(), err.trim()));
        }
        Ok(Zmq { exe })
    }

    /// Runs `binder` (which binds and prints its endpoint first) and `connector` with `size`
    /// and `count` (and `extra` arguments for the connector); returns both closing reports.
    pub fn pair(
        &self,
        binder: &str,
        connector: &str,
        size: usize,
        count: u64,
        extra: &[&str],
    ) -> anyhow::Result<(Report, Report)> {
        let mut b = Command::new(&self.exe)
            .args([
                binder,
                "tcp://127.0.0.1:*",
                &size.to_string(),
                &count.to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let mut out = BufReader::new(b.stdout.take().expect("piped"));
        let mut first = String::new();
        out.read_line(&mut first)?;
        let Some(endpoint) = first.trim().strip_prefix("endpoint ") else {
            let _ = b.kill();
            let _ = b.wait();
            anyhow::bail!("zmq_bench {binder} said '{}'", first.trim());
        };
        let c = Command::new(&self.exe)
            .args([connector, endpoint, &size.to_string(), &count.to_string()])
            .args(extra)
            .output()?;
        let c_report = last_json(&c.stdout, connector, &c.stderr);
        if c_report.is_err() {
            let _ = b.kill();
        }
        let mut rest = String::new();
        for line in out.lines() {
            rest.push_str(&line?);
            rest.push('\n');
        }
        let b_out = b.wait_with_output()?;
        let b_report = last_json(rest.as_bytes(), binder, &b_out.stderr)?;
        Ok((b_report, c_report?))
    }
}

fn last_json(stdout: &[u8], role: &str, stderr: &[u8]) -> anyhow::Result<Report> {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "zmq_bench {role} reported nothing: {}",
                String::from_utf8_lossy(stderr).trim()
            )
        })?;
    Ok(serde_json::from_str(line)?)
}

/// A number from a report.
pub(super) fn num(r: &Report, key: &str) -> anyhow::Result<f64> {
    r[key]
        .as_f64()
        .ok_or_else(|| anyhow::anyhow!("zmq_bench's report has no '{key}': {r}"))
}
