//! `sluice bench failover`: issue 18's proof on a local cluster of network-namespace hosts
//! (needs root). `examples/failover.toml` runs on four hosts, its middle partition (FIR,
//! channelizer, FM demodulator, IIR on h2) with a hot standby on h3. Each run, at a random
//! moment, h2's worker is killed (`kill -9`), its link cut (`ip link set … down`, restored 3 s
//! later) or stopped (SIGSTOP, SIGCONT 2.5 s later: a zombie primary that must be refused).
//! Every run's output must be bit-identical to the same graph run on one machine; the table
//! gives, per fault, when h4's receiver declared the primary lost (the data plane's detection)
//! and when the standby's stream resumed there, both from the fault.

use crate::report::{machine_description, median, results_dir, Table};
use rand::{Rng, SeedableRng};
use sluice_cluster::control::{self, ControlOptions, LeaseOptions, Outcome};
use sluice_cluster::etcd::Etcd;
use sluice_cluster::local::{self, LocalCluster, LocalOptions, WorkerSpec};
use sluice_cluster::membership;
use sluice_cluster::placement::{self, PlanOptions};
use sluice_graph::{Override, Registry};
use sluice_net::auth::ClusterKey;
use sluice_runtime::{RunOptions, StopHandle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

const FAILOVER: &str = include_str!("../../../examples/failover.toml");

/// The protected host and its standby in `examples/failover.toml`.
const PRIMARY: &str = "h2";

/// Arguments of `sluice bench failover`.
#[derive(clap::Args, Debug)]
pub struct BenchFailoverArgs {
    /// Faults, one per run, taking the kinds in turn.
    #[arg(long, default_value_t = 20)]
    faults: usize,
    /// Seconds of signal per run (1 M samples/s, paced); the fault falls between 0.3 s and
    /// this less 1 s.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// The kinds of fault, comma-separated: kill (kill -9 of the primary's worker), link (its
    /// link down for 3 s), stop (SIGSTOP for 2.5 s: a zombie primary).
    #[arg(long, default_value = "kill,link,stop")]
    kinds: String,
    /// Seed of the fault moments.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the table, the outputs and the cluster's logs go.
    #[arg(long, default_value = "target/bench/failover")]
    out: PathBuf,
}

/// A kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Kill,
    Link,
    Stop,
}

impl Fault {
    fn parse(word: &str) -> anyhow::Result<Fault> {
        Ok(match word.trim() {
            "kill" => Fault::Kill,
            "link" => Fault::Link,
            "stop" => Fault::Stop,
            other => anyhow::bail!("--kinds: unknown fault '{other}' (kill, link or stop)"),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill -9",
            Fault::Link => "link down",
            Fault::Stop => "SIGSTOP",
        }
    }
}

/// The local cluster, removed when dropped.
struct Cluster {
    inner: LocalCluster,
    etcd: Etcd,
    key: ClusterKey,
    exe: PathBuf,
    /// Where the workers' and etcd's logs are copied before the cluster is removed.
    logs: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for h in self.inner.hosts() {
            let _ = Command::new("ip")
                .args(["link", "set", &h.link, "up"])
                .status();
            if let Some(pid) = h.worker_pid {
                let _ = Command::new("kill")
                    .args(["-CONT", &pid.to_string()])
                    .status();
            }
        }
        let _ = std::fs::create_dir_all(&self.logs);
        if let Ok(entries) = std::fs::read_dir(self.inner.run_dir()) {
            for path in entries.flatten().map(|e| e.path()) {
                if path.extension().is_some_and(|x| x == "log") {
                    let _ =
                        std::fs::copy(&path, self.logs.join(path.file_name().unwrap_or_default()));
                }
            }
        }
        if let Err(e) = local::down(self.inner.run_dir()) {
            eprintln!("sluice bench failover: removing the cluster: {e}");
        }
    }
}

fn registry() -> Registry {
    let mut r = sluice_dsp::graph_blocks::standard_registry();
    sluice_net::graph_blocks::register(&mut r);
    r
}

/// One faulted run's figures.
struct Measured {
    fault: Fault,
    at_s: f64,
    detect_ms: Option<f64>,
    resumed_ms: Option<f64>,
    identical: bool,
    items: u64,
}

/// Runs the benchmark; fails if any output differs from the one-machine run or a takeover
/// did not happen.
pub fn run(args: BenchFailoverArgs) -> anyhow::Result<()> {
    let kinds = args
        .kinds
        .split(',')
        .map(Fault::parse)
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(args.faults > 0, "--faults must be at least 1");
    anyhow::ensure!(
        args.seconds >= 1.5,
        "--seconds must be at least 1.5 (the fault falls between 0.3 s and the end less 1 s)"
    );
    let out = std::fs::canonicalize(results_dir(&args.out)?)?;
    println!("# {}", machine_description());
    let items = (args.seconds * 1e6).round() as u64;

    // The reference: the same file on one machine (placement ignored).
    let reference = out.join("reference.f32");
    let text = FAILOVER;
    let loaded = sluice_graph::load_with(
        text,
        "examples/failover.toml",
        &registry(),
        &overrides(items, &reference)?,
    )?;
    loaded.graph.run(&RunOptions::default())?;
    let expected = std::fs::read(&reference)?;

    let name = format!("f{}", std::process::id() % 100_000);
    let exe = std::env::current_exe()?;
    let inner = LocalCluster::up(LocalOptions {
        name: Some(name.clone()),
        hosts: 4,
        rate: None,
        base_dir: out.join("clusters"),
        worker: Some(WorkerSpec { exe: exe.clone() }),
    })?;
    let etcd = Etcd::new(&inner.etcd_url())?;
    let key = ClusterKey::load(&inner.key_file())?;
    let mut cluster = Cluster {
        inner,
        etcd,
        key,
        exe,
        logs: out.join("logs"),
    };
    let hosts: Vec<String> = cluster
        .inner
        .hosts()
        .iter()
        .map(|h| h.name.clone())
        .collect();
    membership::wait_for(&cluster.etcd, &name, &hosts, Duration::from_secs(15))
        .map_err(anyhow::Error::msg)?;

    let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed);
    let mut results = Vec::new();
    for i in 0..=args.faults {
        // Run 0 has no fault: the cluster's own output must match too.
        let fault = (i > 0).then(|| kinds[(i - 1) % kinds.len()]);
        let at = rng.gen_range(0.3..args.seconds - 1.0);
        let file = out.join(format!("run{i:02}.f32"));
        let _ = std::fs::remove_file(&file);
        let (warnings, fault_time) = faulted_run(&mut cluster, &name, i, items, &file, fault, at)?;
        let got = std::fs::read(&file).unwrap_or_default();
        let identical = got == expected;
        let takeover = takeover_times(&warnings);
        let since = |t: f64| fault_time.map(|f| (t - f) * 1e3);
        let m = Measured {
            fault: fault.unwrap_or(Fault::Kill),
            at_s: at,
            detect_ms: takeover.and_then(|(lost, _)| lost).and_then(since),
            resumed_ms: takeover.and_then(|(_, resumed)| since(resumed)),
            identical,
            items: got.len() as u64 / 4,
        };
        match fault {
            None => println!(
                "no fault: {} items, {}",
                m.items,
                if identical { "bit-identical" } else { "DIFFERS" }
            ),
            Some(f) => println!(
                "fault {i:>2} {:<9} at {:.2} s: lost detected {} ms, standby producing {} ms after the fault, {} items, {}",
                f.name(),
                at,
                m.detect_ms.map_or("-".into(), |d| format!("{d:.0}")),
                m.resumed_ms.map_or("-".into(), |d| format!("{d:.0}")),
                m.items,
                if identical { "bit-identical" } else { "DIFFERS" }
            ),
        }
        if !identical {
            anyhow::bail!(
                "run {i}: the output ({} items) differs from the one-machine run ({} items); warnings:\n{}",
                got.len() / 4,
                expected.len() / 4,
                warnings.join("\n")
            );
        }
        if fault.is_some() {
            anyhow::ensure!(
                takeover.is_some(),
                "run {i}: no takeover in h4's warnings:\n{}",
                warnings.join("\n")
            );
            results.push(m);
        }
    }

    let mut table = Table::new(&[
        "fault",
        "kind",
        "at_s",
        "detect_ms",
        "producing_again_ms",
        "items",
        "lost_or_duplicated",
        "bit_identical",
    ]);
    for (i, m) in results.iter().enumerate() {
        table.push(vec![
            (i + 1).to_string(),
            m.fault.name().into(),
            format!("{:.2}", m.at_s),
            m.detect_ms.map_or("-".into(), |d| format!("{d:.0}")),
            m.resumed_ms.map_or("-".into(), |d| format!("{d:.0}")),
            m.items.to_string(),
            "0".into(),
            if m.identical { "yes" } else { "no" }.into(),
        ]);
    }
    let mut summary = Table::new(&["measure", "kind", "faults", "p50", "p99", "max", "target"]);
    for kind in [
        None,
        Some(Fault::Kill),
        Some(Fault::Link),
        Some(Fault::Stop),
    ] {
        let of_kind: Vec<&Measured> = results
            .iter()
            .filter(|m| kind.is_none_or(|k| m.fault == k))
            .collect();
        if of_kind.is_empty() {
            continue;
        }
        let label = kind.map_or("all", Fault::name);
        for (measure, values, target) in [
            (
                "silent peer detected (ms)",
                of_kind
                    .iter()
                    .filter_map(|m| m.detect_ms)
                    .collect::<Vec<_>>(),
                "<= 500",
            ),
            (
                "standby producing again (ms)",
                of_kind.iter().filter_map(|m| m.resumed_ms).collect(),
                "<= 2000 (lease TTL 1 s + 1 s)",
            ),
        ] {
            summary.push(vec![
                measure.into(),
                label.into(),
                values.len().to_string(),
                format!("{:.0}", median(&values)),
                format!("{:.0}", percentile(&values, 0.99)),
                format!("{:.0}", values.iter().cloned().fold(f64::NAN, f64::max)),
                target.into(),
            ]);
        }
    }
    let identical = results.iter().filter(|m| m.identical).count();
    let text = format!(
        "{}\n{}\noutputs bit-identical to the one-machine run: {identical} of {} faulted runs (and the run without a fault); samples lost or duplicated: 0\n",
        table.render(),
        summary.render(),
        results.len()
    );
    println!("\n{text}");
    std::fs::write(out.join("failover.txt"), &text)?;
    table.write_csv(&out.join("failover.csv"))?;
    summary.write_csv(&out.join("failover_summary.csv"))?;
    println!("tables in {}", out.display());
    Ok(())
}

/// The settings for `items` samples into `file`.
fn overrides(items: u64, file: &Path) -> anyhow::Result<Vec<Override>> {
    [
        format!("take.items={items}"),
        format!("out.path=\"{}\"", file.display()),
    ]
    .iter()
    .map(|s| s.parse().map_err(anyhow::Error::msg))
    .collect()
}

/// Runs the file on the cluster with `fault` applied to the primary `at` seconds after the
/// start; h4's warnings and the fault's wall-clock time (unix seconds).
fn faulted_run(
    cluster: &mut Cluster,
    name: &str,
    index: usize,
    items: u64,
    file: &Path,
    fault: Option<Fault>,
    at: f64,
) -> anyhow::Result<(Vec<String>, Option<f64>)> {
    // Every worker registered (one cut off registers again once its link is back).
    let hosts: Vec<String> = cluster
        .inner
        .hosts()
        .iter()
        .map(|h| h.name.clone())
        .collect();
    membership::wait_for(&cluster.etcd, name, &hosts, Duration::from_secs(15))
        .map_err(anyhow::Error::msg)?;
    let workers: BTreeMap<String, String> = membership::workers(&cluster.etcd, name)?
        .into_iter()
        .map(|(n, a)| (n, a.to_string()))
        .collect();
    let addresses: BTreeMap<String, String> = cluster
        .inner
        .hosts()
        .iter()
        .map(|h| (h.name.clone(), h.address.to_string()))
        .collect();
    let plan = placement::plan(
        FAILOVER,
        "examples/failover.toml",
        &registry(),
        &PlanOptions {
            addresses,
            overrides: overrides(items, file)?,
            ..PlanOptions::default()
        },
    )?;
    let run = format!("failover-{}-{index}", std::process::id());
    let opts = ControlOptions {
        run: run.clone(),
        key: cluster.key.clone(),
        timeout: Duration::from_secs(30),
        cwd: std::env::current_dir()?.display().to_string(),
        stop: StopHandle::new(),
        leases: Some(LeaseOptions::new(&cluster.inner.etcd_url(), name)),
    };
    let primary = cluster
        .inner
        .hosts()
        .into_iter()
        .find(|h| h.name == PRIMARY)
        .ok_or_else(|| anyhow::anyhow!("no host {PRIMARY}"))?;
    let pid = primary
        .worker_pid
        .ok_or_else(|| anyhow::anyhow!("host {PRIMARY} has no worker"))?
        .to_string();
    let link = primary.link.clone();
    let injector = std::thread::spawn(move || -> anyhow::Result<Option<f64>> {
        let Some(fault) = fault else {
            return Ok(None);
        };
        std::thread::sleep(Duration::from_secs_f64(at));
        let now = unix_now();
        match fault {
            Fault::Kill => sh("kill", &["-9", &pid])?,
            Fault::Stop => {
                sh("kill", &["-STOP", &pid])?;
                std::thread::sleep(Duration::from_millis(2500));
                sh("kill", &["-CONT", &pid])?;
            }
            Fault::Link => {
                sh("ip", &["link", "set", &link, "down"])?;
                std::thread::sleep(Duration::from_secs(3));
                sh("ip", &["link", "set", &link, "up"])?;
            }
        }
        Ok(Some(now))
    });
    let report = control::run(&plan, &workers, &opts, |_| {});
    let fault_time = injector
        .join()
        .map_err(|_| anyhow::anyhow!("the fault thread panicked"))??;
    let report = report?;
    if let Some(failure) = report.first_failure() {
        anyhow::bail!("run {index}: {failure}");
    }
    let warnings = report
        .hosts
        .iter()
        .filter(|h| h.host == "h4")
        .flat_map(|h| match &h.outcome {
            Some(Outcome::Done { warnings, .. }) => warnings.clone(),
            _ => Vec::new(),
        })
        .collect();
    // The primary's worker must be free for the next run: started again after a kill, its
    // session over after a zombie's refusal or a cut link.
    let log = cluster.inner.run_dir().join(format!("{PRIMARY}.log"));
    if fault == Some(Fault::Kill) {
        let starts = log_count(&log, "listening on");
        cluster.inner.restart_worker(
            PRIMARY,
            &WorkerSpec {
                exe: cluster.exe.clone(),
            },
        )?;
        wait_log(&log, "listening on", starts + 1)?;
    } else {
        wait_log(&log, &format!("run {run}: ended"), 1)?;
    }
    Ok((warnings, fault_time))
}

/// The loss and resumption times (unix seconds) in a fenced receiver's failover warning.
fn takeover_times(warnings: &[String]) -> Option<(Option<f64>, f64)> {
    let line = warnings.iter().find(|w| w.contains("failover at offset"))?;
    let after = |marker: &str| -> Option<f64> {
        let rest = &line[line.find(marker)? + marker.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    let resumed = after(" at unix time ")?;
    Some((after("lost at unix time "), resumed))
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn sh(program: &str, argv: &[&str]) -> anyhow::Result<()> {
    let status = Command::new(program).args(argv).status()?;
    anyhow::ensure!(status.success(), "{program} {}: {status}", argv.join(" "));
    Ok(())
}

/// How many lines of `log` contain `what`.
fn log_count(log: &Path, what: &str) -> usize {
    std::fs::read_to_string(log).map_or(0, |t| t.lines().filter(|l| l.contains(what)).count())
}

/// Waits until `count` lines of the worker's `log` contain `what` (its session of a run
/// ended; a restarted worker listens).
fn wait_log(log: &Path, what: &str, count: usize) -> anyhow::Result<()> {
    let start = Instant::now();
    while log_count(log, what) < count {
        anyhow::ensure!(
            start.elapsed() < Duration::from_secs(30),
            "{}: no line '{what}' within 30 s",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The nearest-rank percentile `p` (0..1) of `values`.
fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}
