//! The web console of a cluster run, on a real local cluster (four network-namespace hosts,
//! etcd, a worker in each; needs root, iproute2 and etcd, as CI has): `sluice cluster run
//! --http` serves every host with its CPU and its nodes' rates; when the primary of the pair
//! h2/h3 is killed (`kill -9` of its worker, by pid), the failover appears with its takeover
//! record (h3 took over, h4's receiver resumed at an offset) while the run goes on, and the
//! run ends well. With `SLUICE_CLUSTER_SCREENSHOT=PATH` it also writes a screenshot of the
//! page after the failover there (docs/cluster-console.png).

mod common;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The longest any one step waits.
const STEP: Duration = Duration::from_secs(30);

/// h1 sends 15 s of noise (paced) to h2's FIR, whose hot standby is h3; h4 discards the
/// result.
const GRAPH: &str = r#"
[hosts.h1]
[hosts.h2]
standby = "h3"
[hosts.h3]
[hosts.h4]

[[node]]
name = "noise"
type = "signal_source"
host = "h1"
params = { waveform = "noise", seed = 7, sample_rate = 1e6 }

[[node]]
name = "take"
type = "head"
host = "h1"
params = { items = 15000000 }

[[node]]
name = "pace"
type = "throttle"
host = "h1"
params = { rate = 1e6 }

[[node]]
name = "lowpass"
type = "fir"
host = "h2"
params = { design = "lowpass", num_taps = 31, cutoff = 0.3 }

[[node]]
name = "out"
type = "null_sink"
host = "h4"

[[edge]]
from = "noise.out"
to = "take.in"
[[edge]]
from = "take.out"
to = "pace.in"
[[edge]]
from = "pace.out"
to = "lowpass.in"
[[edge]]
from = "lowpass.out"
to = "out.in"
"#;

/// The cluster, the controller and the directory, all removed when dropped (also when the
/// test fails).
struct Fixture {
    dir: PathBuf,
    base: PathBuf,
    name: String,
    controller: Option<Child>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(mut c) = self.controller.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let base = self.base.display().to_string();
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["cluster", "down", &self.name, "--base-dir", &base])
            .output();
        if let Some(out) = out.ok().filter(|o| !o.status.success()) {
            eprintln!(
                "cluster down {}: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `GET path` on the console; the body as JSON.
fn get(addr: &str, path: &str) -> Value {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("console at {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200"), "{path}: {text}");
    serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap()
}

/// Polls `/api/cluster` until `pick` finds what it waits for, within [`STEP`].
fn until<T>(addr: &str, what: &str, mut pick: impl FnMut(&Value) -> Option<T>) -> T {
    let deadline = Instant::now() + STEP;
    let mut last = Value::Null;
    while Instant::now() < deadline {
        last = get(addr, "/api/cluster");
        if let Some(found) = pick(&last) {
            return found;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("waited in vain for {what}; the console said:\n{last:#}");
}

fn host<'a>(c: &'a Value, name: &str) -> &'a Value {
    c["hosts"]
        .as_array()
        .and_then(|hosts| hosts.iter().find(|h| h["name"] == name))
        .unwrap_or(&Value::Null)
}

/// The pid of cluster `name`'s worker for `host`: the process whose arguments hold
/// `worker --cluster NAME --name HOST`.
fn worker_pid(name: &str, host: &str) -> u32 {
    let want: [&[u8]; 5] = [
        b"worker",
        b"--cluster",
        name.as_bytes(),
        b"--name",
        host.as_bytes(),
    ];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if args.windows(5).any(|w| w == want) {
            return pid;
        }
    }
    panic!("no worker {host} of cluster {name}");
}

/// With `SLUICE_CLUSTER_SCREENSHOT=PATH`, the test writes the page, as headless Chromium
/// draws it after the failover, there (docs/cluster-console.png).
fn screenshot(url: &str, path: &str) {
    let shot = Command::new("/usr/bin/chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .args(["--disable-background-networking", "--hide-scrollbars"])
        .args(["--window-size=1280,900", "--virtual-time-budget=3000"])
        .arg(format!("--screenshot={path}"))
        .arg(url)
        .output()
        .unwrap();
    assert!(
        shot.status.success(),
        "chromium --screenshot: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
}

#[test]
fn the_console_of_a_cluster_run_shows_every_host_and_a_failover_as_it_happens() {
    common::require_root_iproute2_and_etcd("cluster console");
    let id = std::process::id();
    let dir = std::env::temp_dir().join(format!("sluice-cluster-console-{id}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut fx = Fixture {
        base: dir.join("clusters"),
        name: format!("cv{}", id % 100_000),
        dir: dir.clone(),
        controller: None,
    };
    let base = fx.base.display().to_string();
    let up = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["cluster", "up", "--local", "4", "--name", &fx.name])
        .args(["--base-dir", &base])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        up.status.success(),
        "cluster up: {}",
        String::from_utf8_lossy(&up.stderr)
    );
    let graph = dir.join("failover.toml");
    std::fs::write(&graph, GRAPH).unwrap();

    let mut controller = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["cluster", "run"])
        .arg(&graph)
        .args(["--cluster", &fx.name, "--base-dir", &base, "--quiet"])
        .args(["--http", "127.0.0.1:0"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its lines, read on a thread (the console's address among them).
    let (tx, lines) = mpsc::channel::<String>();
    let stderr = controller.stderr.take().unwrap();
    fx.controller = Some(controller);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut said = Vec::new();
    let (addr, url) = loop {
        let line = lines
            .recv_timeout(STEP)
            .unwrap_or_else(|_| panic!("no console address in:\n{}", said.join("\n")));
        if let Some(rest) = line.strip_prefix("sluice: console at http://") {
            let url = format!("http://{}", rest.split_whitespace().next().unwrap());
            break (rest.split('/').next().unwrap().to_string(), url);
        }
        said.push(line);
    };

    // Every host, running, with its CPU and its nodes' rates.
    until(&addr, "four hosts with CPU and rates", |c| {
        let all = ["h1", "h2", "h3", "h4"].iter().all(|h| {
            let h = host(c, h);
            h["state"] == "running"
                && h["cpu_percent"].as_f64().is_some_and(|p| p > 0.0)
                && h["nodes"]
                    .as_array()
                    .is_some_and(|n| n.iter().any(|n| n["items_per_s"].as_f64() > Some(0.0)))
        });
        all.then_some(())
    });
    let c = get(&addr, "/api/cluster");
    assert_eq!(host(&c, "h2")["partner"]["standby"], "h3", "{c:#}");
    assert_eq!(host(&c, "h3")["partner"]["primary"], "h2", "{c:#}");
    assert_eq!(c["failovers"], Value::Array(Vec::new()));

    // The primary dies: the failover shows with its record while the run goes on.
    let pid = worker_pid(&fx.name, "h2");
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success(), "kill -9 {pid}");
    let failover = until(&addr, "the failover", |c| {
        let f = &c["failovers"][0];
        let record = f["streams"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["seen_by"] == "h4"));
        (record && f["took_over"] == "h3").then(|| f.clone())
    });
    assert_eq!(failover["partition"], "h2", "{failover:#}");
    assert_eq!(failover["failed"], "h2", "{failover:#}");
    let stream = &failover["streams"][0];
    assert!(stream["offset"].as_u64() > Some(0), "{failover:#}");
    assert!(
        stream["to_revision"].as_u64() > stream["from_revision"].as_u64(),
        "{failover:#}"
    );
    assert!(
        stream["resumed_unix_s"].as_f64() > Some(1.0e9),
        "{failover:#}"
    );
    let c = get(&addr, "/api/cluster");
    assert_eq!(host(&c, "h2")["state"], "failed_over", "{c:#}");
    let received = |c: &Value| host(c, "h4")["nodes"][0]["items_in"].as_u64().unwrap_or(0);
    let before = received(&c);
    until(&addr, "h4 receiving after the takeover", |c| {
        (host(c, "h3")["state"] == "running" && received(c) > before).then_some(())
    });
    if let Ok(path) = std::env::var("SLUICE_CLUSTER_SCREENSHOT") {
        screenshot(&url, &path);
    }

    // The run ends well: the standby finished the partition.
    let mut controller = fx.controller.take().unwrap();
    let deadline = Instant::now() + STEP;
    let status = loop {
        if let Some(status) = controller.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = controller.kill();
            panic!("the cluster run did not end");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let rest: Vec<String> = lines.try_iter().collect();
    let text = rest.join("\n");
    assert!(status.success(), "{text}");
    assert!(text.contains("failed over: host h2"), "{text}");
}
