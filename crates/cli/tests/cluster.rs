//! A real local cluster (four network-namespace hosts, etcd, a worker in each; needs root and
//! iproute2, as CI has): the AMPS receiver spread over the hosts writes WAVs bit-identical to
//! the same graph file run on one machine, and within one LSB of the one-chain receiver
//! (`amps_receiver.toml`: its multi-channel kernels see 333 channels at once instead of 167 and
//! 166, so a few samples round the other way); a peer without the cluster key is refused and
//! logged; Ctrl-C drains every host (nothing sent is lost); a killed worker ends the run within
//! seconds, naming the host.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn sluice_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn sluice_ok(dir: &Path, args: &[&str]) -> String {
    let out = sluice_in(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sluice {args:?} failed:\n{stderr}");
    format!("{}{stderr}", String::from_utf8_lossy(&out.stdout))
}

/// The cluster and its directories, removed when dropped (also when the test fails).
struct Fixture {
    dir: PathBuf,
    base: PathBuf,
    name: String,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // What the workers saw, for the failure's diagnosis (the run dir goes below).
            let run_dir = self.base.join(&self.name);
            for h in ["h1", "h2", "h3", "h4"] {
                let log = std::fs::read_to_string(run_dir.join(format!("{h}.log")));
                let log = log.unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                eprintln!("--- {h}.log (last lines) ---");
                for line in tail.iter().rev() {
                    eprintln!("{line}");
                }
            }
        }
        let base = self.base.display().to_string();
        let out = sluice_in(
            &self.dir,
            &["cluster", "down", &self.name, "--base-dir", &base],
        );
        if !out.status.success() {
            eprintln!(
                "cluster down {}: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The tests here bring up local clusters (namespaces, a bridge, etcd, workers) and tear them
/// down; two at once on a 2-core machine starve each other's workers past their stream
/// timeouts, so they take turns.
static ONE_CLUSTER_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_cluster_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_CLUSTER_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn wavs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wav"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn amps_on_four_hosts_matches_one_machine_and_intruders_are_refused() {
    let _turn = one_cluster_at_a_time();
    common::require_root_iproute2_and_etcd("cluster");
    let id = std::process::id();
    let dir = std::env::temp_dir().join(format!("sluice-cluster-test-{id}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fx = Fixture {
        base: dir.join("clusters"),
        name: format!("t{}", id % 100_000),
        dir: dir.clone(),
    };
    let base = fx.base.display().to_string();
    let up = sluice_ok(
        &dir,
        &[
            "cluster",
            "up",
            "--local",
            "4",
            "--name",
            &fx.name,
            "--base-dir",
            &base,
        ],
    );
    assert!(up.contains("is up"), "{up}");

    // Started by root, the workers run as the unprivileged system user (their etcd is TLS
    // with a login: `up` waited for all four to register there).
    let worker_uid = system_user_uid("sluice-worker");
    assert_ne!(worker_uid, 0);
    assert!(up.contains(&format!("uid {worker_uid}")), "{up}");
    let workers = worker_pids(&fx.name);
    assert_eq!(workers.len(), 4, "four workers of cluster {}", fx.name);
    for pid in workers {
        assert_eq!(
            uid_of(pid),
            worker_uid,
            "worker pid {pid} runs as another user"
        );
    }
    assert!(up.contains("https://"), "{up}");

    // The band, and the one-machine runs' WAVs: the cluster's file and the one-chain receiver.
    let one = dir.join("one");
    let chain = dir.join("chain");
    let many = dir.join("many");
    // The examples read and write in out/, as from the repository root.
    for d in [&one, &chain, &many] {
        std::fs::create_dir_all(d.join("out")).unwrap();
    }
    // The workers write where their user may: the cluster run's out/ and the endless
    // graph's directory are given to it.
    let endless_dir = dir.join("endless");
    std::fs::create_dir_all(&endless_dir).unwrap();
    for d in [&many.join("out"), &endless_dir] {
        std::os::unix::fs::chown(d, Some(worker_uid), None).unwrap();
    }
    sluice_ok(
        &one,
        &["amps", "generate", "out/amps_band", "--seconds", "0.04"],
    );
    for d in [&chain, &many] {
        for ext in ["sigmf-meta", "sigmf-data"] {
            let name = format!("out/amps_band.{ext}");
            std::fs::copy(one.join(&name), d.join(&name)).unwrap();
        }
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let cluster = examples.join("amps_cluster.toml").display().to_string();
    let receiver = examples.join("amps_receiver.toml").display().to_string();
    sluice_ok(&one, &["run", &cluster, "--quiet"]);
    sluice_ok(&chain, &["run", &receiver, "--quiet"]);

    let out = sluice_ok(
        &many,
        &[
            "cluster",
            "run",
            &cluster,
            "--cluster",
            &fx.name,
            "--base-dir",
            &base,
            "--quiet",
        ],
    );
    for h in ["h1", "h2", "h3", "h4"] {
        assert!(out.contains(h), "the host table names {h}:\n{out}");
    }
    let (a, b) = (wavs(&one.join("out")), wavs(&many.join("out")));
    assert_eq!(a.len(), 333, "one WAV per channel on one machine");
    assert_eq!(
        a.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        b.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(x.len() > 44 + 2 * 300, "{name}: {} bytes", x.len());
        assert!(
            x == y,
            "{name}: the cluster's WAV differs from one machine's"
        );
    }
    let mut off_by_one = 0;
    for ((name, x), (_, y)) in wavs(&chain.join("out")).iter().zip(&b) {
        assert_eq!(x.len(), y.len(), "{name}");
        for (p, q) in x[44..].chunks_exact(2).zip(y[44..].chunks_exact(2)) {
            let (p, q) = (
                i16::from_le_bytes([p[0], p[1]]),
                i16::from_le_bytes([q[0], q[1]]),
            );
            assert!(
                (p - q).abs() <= 1,
                "{name}: {p} vs {q} (one chain vs cluster)"
            );
            off_by_one += usize::from(p != q);
        }
    }
    // 333 channels x ~450 samples: a handful round the other way.
    assert!(off_by_one < 100, "{off_by_one} samples differ by one LSB");

    // A controller without the key: refused, and the worker logs it.
    let run_dir = fx.base.join(&fx.name);
    let wrong = dir.join("wrong.key");
    std::fs::write(&wrong, format!("{}\n", "ab".repeat(32))).unwrap();
    std::fs::set_permissions(&wrong, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let out = sluice_in(
        &many,
        &[
            "cluster",
            "run",
            &cluster,
            "--cluster",
            &fx.name,
            "--base-dir",
            &base,
            "--key-file",
            &wrong.display().to_string(),
            "--quiet",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("cluster key"), "{stderr}");

    // A raw connection that sends a stream HELLO-like garbage instead of proving the key.
    let hosts = std::fs::read_to_string(run_dir.join("hosts.toml")).unwrap();
    let h1 = hosts
        .lines()
        .skip_while(|l| !l.contains("hosts.h1"))
        .find_map(|l| l.split('"').nth(1).map(str::to_string))
        .expect("hosts.toml gives h1's address");
    let mut s = std::net::TcpStream::connect((h1.as_str(), 7000)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let _ = s.write_all(b"SLCE\x01 not a key proof, just bytes\n");
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest); // the worker closes the connection
    let log = run_dir.join("h1.log");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.matches("refused").count() >= 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "h1's log does not show both refusals:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Ctrl-C on an endless graph: h1's source ends, everything it sent drains through h2 and
    // h3 into h4's file (the stream receivers are not cut), and the exit status is 130.
    let endless = dir.join("endless.toml");
    std::fs::write(&endless, ENDLESS).unwrap();
    let endless = endless.display().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["cluster", "run", &endless, "--cluster", &fx.name])
        .args(["--base-dir", &base, "--quiet"])
        .current_dir(&endless_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    signal(child.id(), "-INT");
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(130), "{text}");
    let sent: u64 = text
        .lines()
        .find(|l| l.starts_with("h1 ") && l.contains(" stopped "))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no stopped h1 in:\n{text}"));
    assert!(sent > 0, "{text}");
    let written = std::fs::metadata(endless_dir.join("endless.c32"))
        .unwrap()
        .len();
    assert_eq!(written, 8 * sent, "h4's file lacks items h1 sent:\n{text}");

    // A worker killed in the middle: the run ends within seconds (not after the streams'
    // resume timeout), its error names the lost host, and the others stop.
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["cluster", "run", &endless, "--cluster", &fx.name])
        .args(["--base-dir", &base, "--quiet"])
        .current_dir(&endless_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let killed = Command::new("pkill")
        .args([
            "-9",
            "-f",
            &format!("worker --cluster {} --name h3 ", fx.name),
        ])
        .status()
        .unwrap();
    assert!(killed.success(), "no worker h3 to kill");
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the run took {:?} to end after h3 died:\n{stderr}",
        started.elapsed()
    );
    assert!(
        stderr.contains("host h3: worker lost"),
        "the error does not name the lost host:\n{stderr}"
    );
}

/// An endless source on h1 (paced at 2 M items/s: 16 MB/s into the file) through a filter on
/// h2 and a gain on h3 into a file on h4.
const ENDLESS: &str = r#"
[hosts.h1]
[hosts.h2]
[hosts.h3]
[hosts.h4]

[[node]]
name = "src"
type = "signal_source"
host = "h1"
params = { item = "c32", waveform = "tone", frequency = 1000.0, sample_rate = 48000 }

[[node]]
name = "pace"
type = "throttle"
host = "h1"
params = { item = "c32", rate = 2e6 }

[[node]]
name = "lowpass"
type = "fir"
host = "h2"
params = { design = "lowpass", num_taps = 31, cutoff = 0.1 }

[[node]]
name = "gain"
type = "multiply_const"
host = "h3"
params = { item = "c32", gain = 0.5 }

[[node]]
name = "sink"
type = "file_sink"
host = "h4"
params = { path = "endless.c32" }

[[edge]]
from = "src.out"
to = "pace.in"

[[edge]]
from = "pace.out"
to = "lowpass.in"

[[edge]]
from = "lowpass.out"
to = "gain.in"

[[edge]]
from = "gain.out"
to = "sink.in"
"#;

/// The uid of system user `name` (`id -u`).
fn system_user_uid(name: &str) -> u32 {
    let out = Command::new("id").args(["-u", name]).output().unwrap();
    assert!(out.status.success(), "no user {name}");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// The pids of cluster `name`'s workers: processes whose arguments are `worker --cluster NAME`.
fn worker_pids(name: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if args
            .windows(3)
            .any(|w| w[0] == b"worker" && w[1] == b"--cluster" && w[2] == name.as_bytes())
        {
            pids.push(pid);
        }
    }
    pids
}

/// A process's real uid, from the `Uid:` line of `/proc/PID/status`.
fn uid_of(pid: u32) -> u32 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().next())
        .and_then(|uid| uid.parse().ok())
        .unwrap_or_else(|| panic!("no Uid line for pid {pid}"))
}

fn signal(pid: u32, which: &str) {
    let status = Command::new("kill")
        .args([which, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {which} {pid}");
}

/// Every shipped cluster example (a graph file with `[hosts.…]`) names in its comment the
/// local cluster to bring up and the `cluster run` to give; on that cluster (its number of
/// hosts, a unique name here) `sluice cluster plan --cluster` places every host at the address
/// its worker registered, as `cluster run` does. The 3-host example also runs, and its WAV is
/// the one-machine run's, byte for byte.
#[test]
fn every_cluster_example_plans_on_the_cluster_its_comment_names() {
    let _turn = one_cluster_at_a_time();
    common::require_root_iproute2_and_etcd("cluster");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    // (cluster name in the comment, hosts) → the examples that name it.
    let mut clusters: std::collections::BTreeMap<(String, u32), Vec<String>> = Default::default();
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.lines().any(|l| l.starts_with("[hosts.")) {
            continue;
        }
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let up = text
            .lines()
            .find_map(|l| l.split("sluice cluster up --local ").nth(1))
            .unwrap_or_else(|| {
                panic!("{file}: the comment names no `sluice cluster up --local N`")
            });
        let mut words = up.split_whitespace();
        let hosts: u32 = words.next().unwrap().parse().unwrap();
        assert_eq!(words.next(), Some("--name"), "{file}: {up}");
        let name = words.next().unwrap().to_string();
        assert!(
            text.contains(&format!(
                "sluice cluster run examples/{file} --cluster {name}"
            )),
            "{file}: the comment runs it on cluster {name}"
        );
        clusters.entry((name, hosts)).or_default().push(file);
    }
    assert!(clusters.len() >= 4, "{clusters:?}");
    let id = std::process::id();
    let dir = std::env::temp_dir().join(format!("sluice-cluster-plans-{id}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("out")).unwrap();
    for (k, ((named, hosts), files)) in clusters.iter().enumerate() {
        let fx = Fixture {
            base: dir.join(format!("clusters{k}")),
            name: format!("p{}{k}", id % 100_000),
            dir: dir.join(format!("d{k}")),
        };
        std::fs::create_dir_all(fx.dir.join("out")).unwrap();
        let base = fx.base.display().to_string();
        let up = sluice_ok(
            &fx.dir,
            &[
                "cluster",
                "up",
                "--local",
                &hosts.to_string(),
                "--name",
                &fx.name,
                "--base-dir",
                &base,
            ],
        );
        assert!(up.contains("is up"), "{named}: {up}");
        // The workers run as the system user: the examples' out/ is given to it.
        let worker_uid = system_user_uid("sluice-worker");
        std::os::unix::fs::chown(fx.dir.join("out"), Some(worker_uid), None).unwrap();
        let status = sluice_ok(
            &fx.dir,
            &[
                "cluster",
                "status",
                "--cluster",
                &fx.name,
                "--base-dir",
                &base,
            ],
        );
        for file in files {
            let graph = examples.join(file).display().to_string();
            // The files the comment makes first (the AMPS band: a short one here).
            let text = std::fs::read_to_string(examples.join(file)).unwrap();
            if text.contains("sluice amps generate out/amps_band") {
                sluice_ok(
                    &fx.dir,
                    &["amps", "generate", "out/amps_band", "--seconds", "0.01"],
                );
            }
            let plan = sluice_ok(
                &fx.dir,
                &[
                    "cluster",
                    "plan",
                    &graph,
                    "--cluster",
                    &fx.name,
                    "--base-dir",
                    &base,
                ],
            );
            // Each host's partition, at its worker's registered address.
            for line in status.lines().skip(1) {
                let mut words = line.split_whitespace();
                let (host, control) = (words.next().unwrap(), words.next().unwrap());
                let ip = control.rsplit_once(':').unwrap().0;
                if text_names_host(&examples.join(file), host) {
                    assert!(
                        plan.contains(&format!("# ---- host {host} ({ip})")),
                        "{file} on {named}: {host} at {ip}?\n{plan}"
                    );
                }
            }
            if file == "tone_cluster.toml" {
                sluice_ok(
                    &fx.dir,
                    &[
                        "cluster",
                        "run",
                        &graph,
                        "--cluster",
                        &fx.name,
                        "--base-dir",
                        &base,
                        "--quiet",
                    ],
                );
                sluice_ok(&dir, &["run", &graph, "--quiet"]);
                let one = std::fs::read(dir.join("out/tone_cluster.wav")).unwrap();
                let many = std::fs::read(fx.dir.join("out/tone_cluster.wav")).unwrap();
                assert!(one.len() > 96_000 * 2);
                assert!(one == many, "the cluster's WAV differs from one machine's");
            }
        }
        // Without --cluster, the same plan cannot know the addresses, and says how to give them.
        let graph = examples.join(&files[0]).display().to_string();
        let out = sluice_in(&fx.dir, &["cluster", "plan", &graph]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains("--cluster NAME"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether the graph file at `path` declares `[hosts.HOST]`.
fn text_names_host(path: &Path, host: &str) -> bool {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .any(|l| l.trim() == format!("[hosts.{host}]"))
}
