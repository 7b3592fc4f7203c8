//! `sluice bench failover`: issue 18's proof on a local cluster of network-namespace hosts
//! (needs root). `examples/failover.toml` runs on four hosts, its middle partition (FIR,
//! channelizer, FM demodulator, IIR on h2) with a hot standby on h3. Each run, at a random
//! moment, h2's worker is killed (`kill -9`), its link cut (`ip link set … down`, restored 3 s
//! later) or stopped (SIGSTOP, SIGCONT 2.5 s later: a zombie primary that must be refused).
//! Every run's output must be bit-identical to the same graph run on one machine; the table
//! gives, per fault, when h4's receiver declared the primary lost (the data plane's detection)
//! and when the standby's stream resumed there, both from the fault.
//!
//! `--warm`: `examples/failover_warm.toml` instead, whose h2 (FIR, channelizer, FM
//! demodulator; the IIR moves to h4) has a *warm* standby on h3: it runs nothing until it wins
//! h2's lease, then starts the partition afresh, re-primed from the input h1 kept for it.
//!
//! `--amps`: the AMPS whole-band cluster (`examples/amps_cluster.toml`) with a hot standby for
//! h2's channelizer on a fifth host, once without a fault and once with h2's worker killed
//! mid-run; every channel's WAV is compared with the run without a fault.

use crate::cluster::{registry, workers_and_addresses};
use crate::report::{machine_description, median, results_dir, Table};
use crate::worker_out::{copy_dir, WorkerOut};
use rand::{Rng, SeedableRng};
use sluice_cluster::control::{self, ControlOptions, LeaseOptions, Outcome};
use sluice_cluster::etcd::Etcd;
use sluice_cluster::local::{self, LocalCluster, LocalOptions, WorkerSpec, WorkerUser};
use sluice_cluster::membership;
use sluice_cluster::placement::{self, PlanOptions};
use sluice_graph::Override;
use sluice_net::auth::ClusterKey;
use sluice_runtime::{RunOptions, StopHandle};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

const FAILOVER: &str = include_str!("../../../examples/failover.toml");
const FAILOVER_WARM: &str = include_str!("../../../examples/failover_warm.toml");
const AMPS_CLUSTER: &str = include_str!("../../../examples/amps_cluster.toml");

/// The protected host and its standby in `examples/failover.toml`.
const PRIMARY: &str = "h2";
/// Its standby.
const STANDBY: &str = "h3";

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
    /// link down for 3 s), stop (SIGSTOP for 2.5 s: a zombie primary), cut (its link down
    /// until the run ended without it), standby (kill -9 of the standby's worker: nothing may
    /// change).
    #[arg(long, default_value = "kill,link,stop")]
    kinds: String,
    /// Run examples/failover_warm.toml instead: h2's standby is warm (it starts the partition
    /// only when it takes over, re-primed from input kept upstream).
    #[arg(long)]
    warm: bool,
    /// Seed of the fault moments.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Instead: the AMPS whole-band cluster (examples/amps_cluster.toml) with a hot standby
    /// for h2's channelizer on h5, once without a fault and once with h2's worker killed;
    /// every channel's WAV compared with the run without a fault.
    #[arg(long)]
    amps: bool,
    /// With --amps: seconds of AMPS band (20 M samples/s).
    #[arg(long, default_value_t = 2.0)]
    amps_seconds: f64,
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
    /// The link down for the rest of the run (a machine that never comes back).
    Cut,
    /// `kill -9` of the standby's worker: the primary's stream must not notice.
    KillStandby,
}

impl Fault {
    fn parse(word: &str) -> anyhow::Result<Fault> {
        Ok(match word.trim() {
            "kill" => Fault::Kill,
            "link" => Fault::Link,
            "stop" => Fault::Stop,
            "cut" => Fault::Cut,
            "standby" => Fault::KillStandby,
            other => {
                anyhow::bail!("--kinds: unknown fault '{other}' (kill, link, stop, cut or standby)")
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill -9",
            Fault::Link => "link down",
            Fault::Stop => "SIGSTOP",
            Fault::Cut => "link cut",
            Fault::KillStandby => "kill -9 standby",
        }
    }

    /// The host it strikes.
    fn host(self) -> &'static str {
        match self {
            Fault::KillStandby => STANDBY,
            _ => PRIMARY,
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
    /// Where the workers write the runs' outputs.
    worker_out: WorkerOut,
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

impl Cluster {
    /// Waits until every host's worker is registered in etcd.
    fn wait_for_workers(&self, name: &str) -> anyhow::Result<()> {
        let hosts: Vec<String> = self.inner.hosts().iter().map(|h| h.name.clone()).collect();
        membership::wait_for(&self.etcd, name, &hosts, Duration::from_secs(15))
            .map_err(anyhow::Error::msg)
    }
}

/// One faulted run's figures.
struct Measured {
    fault: Fault,
    at_s: f64,
    detect_ms: Option<f64>,
    resumed_ms: Option<f64>,
    identical: bool,
    items: u64,
    /// Items missing, extra, or different from the one-machine run.
    wrong: u64,
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
        !(args.warm && args.amps),
        "--warm runs examples/failover_warm.toml and --amps the AMPS cluster (with a hot standby): give one of them"
    );
    anyhow::ensure!(
        args.seconds >= 1.5,
        "--seconds must be at least 1.5 (the fault falls between 0.3 s and the end less 1 s)"
    );
    let out = std::fs::canonicalize(results_dir(&args.out)?)?;
    println!("# {}", machine_description());
    let name = format!("f{}", std::process::id() % 100_000);
    let exe = std::env::current_exe()?;
    let inner = LocalCluster::up(LocalOptions {
        name: Some(name.clone()),
        hosts: 5,
        rate: None,
        base_dir: out.join("clusters"),
        // Run as `sluice cluster up --local` runs them (sluice-worker when root): they write
        // into directories of that user (`WorkerOut`), copied into the results after.
        worker: Some(WorkerSpec {
            exe: exe.clone(),
            user: WorkerUser::unprivileged(),
        }),
    })?;
    let etcd = inner.etcd()?;
    let key = ClusterKey::load(&inner.key_file())?;
    let worker_out = WorkerOut::new(&inner)?;
    let mut cluster = Cluster {
        inner,
        etcd,
        key,
        exe,
        logs: out.join("logs"),
        worker_out,
    };
    cluster.wait_for_workers(&name)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed);
    if args.amps {
        return amps_runs(&args, &mut cluster, &name, &out, &mut rng);
    }

    let (graph, origin, stem) = if args.warm {
        (
            FAILOVER_WARM,
            "examples/failover_warm.toml",
            "failover_warm",
        )
    } else {
        (FAILOVER, "examples/failover.toml", "failover")
    };
    // The reference: the same file on one machine (placement ignored).
    let items = (args.seconds * 1e6).round() as u64;
    let reference = out.join(format!("{stem}_reference.f32"));
    let loaded =
        sluice_graph::load_with(graph, origin, &registry(), &overrides(items, &reference)?)?;
    loaded.graph.run(&RunOptions::default())?;
    let expected = std::fs::read(&reference)?;

    let mut results = Vec::new();
    for i in 0..=args.faults {
        // Run 0 has no fault: the cluster's own output must match too.
        let fault = (i > 0).then(|| kinds[(i - 1) % kinds.len()]);
        let at = rng.gen_range(0.3..args.seconds - 1.0);
        let kept = out.join(format!("{stem}_run{i:02}.f32"));
        let _ = std::fs::remove_file(&kept);
        let file = cluster.worker_out.file(&format!("{stem}_run{i:02}.f32"));
        let scenario = Scenario {
            text: graph,
            origin,
            overrides: overrides(items, &file)?,
        };
        let RunEnd {
            warnings,
            fault_time,
            ..
        } = faulted_run(&mut cluster, &name, i, &scenario, fault, at)?;
        let got = std::fs::read(&file).unwrap_or_default();
        std::fs::write(&kept, &got)?;
        let _ = std::fs::remove_file(&file);
        let identical = got == expected;
        let wrong = wrong_items(&expected, &got);
        let takeover = takeover_times(&warnings);
        let since = |t: f64| fault_time.map(|f| (t - f) * 1e3);
        let m = Measured {
            fault: fault.unwrap_or(Fault::Kill),
            at_s: at,
            detect_ms: takeover.and_then(|(lost, _)| lost).and_then(since),
            resumed_ms: takeover.and_then(|(_, resumed)| since(resumed)),
            identical,
            items: got.len() as u64 / 4,
            wrong,
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
        // A warm standby says where it started afresh.
        if let Some(w) = warnings.iter().find(|w| w.contains("warm start:")) {
            println!("    {w}");
        }
        if !identical {
            anyhow::bail!(
                "run {i}: the output ({} items) differs from the one-machine run ({} items); warnings:\n{}",
                got.len() / 4,
                expected.len() / 4,
                warnings.join("\n")
            );
        }
        if fault == Some(Fault::KillStandby) {
            anyhow::ensure!(
                takeover.is_none(),
                "run {i}: the primary's stream was taken over although only its standby died:\n{}",
                warnings.join("\n")
            );
            results.push(m);
        } else if fault.is_some() {
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
            m.wrong.to_string(),
            if m.identical { "yes" } else { "no" }.into(),
        ]);
    }
    let mut summary = Table::new(&["measure", "kind", "faults", "p50", "p99", "max", "target"]);
    for kind in [
        None,
        Some(Fault::Kill),
        Some(Fault::Link),
        Some(Fault::Stop),
        Some(Fault::Cut),
        Some(Fault::KillStandby),
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
            if values.is_empty() {
                continue; // (a standby's death has no takeover to time)
            }
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
    let wrong: u64 = results.iter().map(|m| m.wrong).sum();
    let text = format!(
        "{}\n{}\noutputs bit-identical to the one-machine run: {identical} of {} faulted runs (and the run without a fault); samples lost, duplicated or changed: {wrong}\n",
        table.render(),
        summary.render(),
        results.len()
    );
    println!("\n{text}");
    std::fs::write(out.join(format!("{stem}.txt")), &text)?;
    table.write_csv(&out.join(format!("{stem}.csv")))?;
    summary.write_csv(&out.join(format!("{stem}_summary.csv")))?;
    println!("tables in {}", out.display());
    Ok(())
}

/// Items (f32) of `got` missing from, added to, or differing from `expected`.
fn wrong_items(expected: &[u8], got: &[u8]) -> u64 {
    let differing = expected
        .chunks_exact(4)
        .zip(got.chunks_exact(4))
        .filter(|(a, b)| a != b)
        .count();
    (differing + expected.len().abs_diff(got.len()) / 4) as u64
}

/// `examples/amps_cluster.toml` with a hot standby for h2 (its lower channelizer) on h5.
fn amps_with_standby() -> anyhow::Result<String> {
    let (primary, last) = ("[hosts.h2]\n", "[hosts.h4]\n");
    anyhow::ensure!(
        AMPS_CLUSTER.matches(primary).count() == 1 && AMPS_CLUSTER.matches(last).count() == 1,
        "examples/amps_cluster.toml no longer declares [hosts.h2] and [hosts.h4] once each"
    );
    Ok(AMPS_CLUSTER
        .replace(primary, "[hosts.h2]\nstandby = \"h5\"\n")
        .replace(last, "[hosts.h4]\n[hosts.h5]\n"))
}

/// `--amps`: the whole band on five hosts, without a fault and with h2 killed.
fn amps_runs(
    args: &BenchFailoverArgs,
    cluster: &mut Cluster,
    name: &str,
    out: &Path,
    rng: &mut rand::rngs::StdRng,
) -> anyhow::Result<()> {
    let band = out.join("amps_band");
    sluice_amps::write_band(&band, sluice_amps::BandConfig::default(), args.amps_seconds)
        .map_err(anyhow::Error::msg)?;
    let text = amps_with_standby()?;
    let mut walls = Vec::new();
    let mut dirs = Vec::new();
    let mut takeover = None;
    for (i, fault) in [None, Some(Fault::Kill)].into_iter().enumerate() {
        let dir = cluster.worker_out.fresh(if fault.is_some() {
            "amps_killed"
        } else {
            "amps_no_fault"
        })?;
        let wav = dir.join("amps_ch{}.wav").display().to_string();
        let overrides = [
            format!("capture.path=\"{}\"", band.display()),
            format!("save_lo.path=\"{wav}\""),
            format!("save_hi.path=\"{wav}\""),
        ]
        .iter()
        .map(|s| s.parse().map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<Override>>>()?;
        let scenario = Scenario {
            text: &text,
            origin: "examples/amps_cluster.toml (h2's standby on h5)",
            overrides,
        };
        // The kill falls between 20 % and 45 % of the run without a fault (a run with a kill may
        // be faster than that one: the band is then in the page cache).
        let at = walls
            .first()
            .map_or(0.0, |w: &f64| w * rng.gen_range(0.2..0.45));
        let end = faulted_run(cluster, name, i, &scenario, fault, at)?;
        if fault.is_some() {
            let times = takeover_times(&end.warnings).ok_or_else(|| {
                anyhow::anyhow!(
                    "h2 killed {at:.2} s into a run of {:.2} s (the run without a fault took {:.2} s), but no takeover in the warnings:\n{}",
                    end.wall_s,
                    walls[0],
                    end.warnings.join("\n")
                )
            })?;
            takeover = Some((at, times, end.fault_time));
        }
        walls.push(end.wall_s);
        copy_dir(&dir, &out.join(dir.file_name().unwrap_or_default()))?;
        dirs.push(dir);
    }
    let wavs = |dir: &Path| -> anyhow::Result<Vec<PathBuf>> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        v.retain(|p| p.extension().is_some_and(|x| x == "wav"));
        v.sort();
        Ok(v)
    };
    let (a, b) = (wavs(&dirs[0])?, wavs(&dirs[1])?);
    let mut same = 0;
    for path in &a {
        let other = dirs[1].join(path.file_name().unwrap_or_default());
        if std::fs::read(&other).ok() == Some(std::fs::read(path)?) {
            same += 1;
        }
    }
    let (at, (lost, resumed), fault_time) = takeover.expect("the killed run recorded it");
    let since = |t: f64| fault_time.map_or("-".into(), |f| format!("{:.0}", (t - f) * 1e3));
    let text = format!(
        "AMPS, {} s of band, 333 channels on 5 hosts (h2: channelizer for channels 1-167, hot standby h5)\n\
         run without a fault: {:.2} s; run with h2's worker killed at {at:.2} s: {:.2} s\n\
         h4's receiver declared h2 lost {} ms after the kill; h5 producing {} ms after it\n\
         WAVs bit-identical to the run without a fault: {same} of {} ({} written by the killed run)\n",
        args.amps_seconds,
        walls[0],
        walls[1],
        lost.map_or("-".into(), since),
        since(resumed),
        a.len(),
        b.len()
    );
    println!("\n{text}");
    std::fs::write(out.join("amps_failover.txt"), &text)?;
    anyhow::ensure!(
        a.len() == 333 && same == a.len() && b.len() == a.len(),
        "the killed run's WAVs differ from the run without a fault"
    );
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
/// What one run runs: a graph file (with the primary `h2` and its standby) and its settings.
struct Scenario<'a> {
    text: &'a str,
    origin: &'a str,
    overrides: Vec<Override>,
}

/// One run's end: every host's warnings, the fault's wall-clock time (unix seconds) and the
/// run's wall time.
struct RunEnd {
    warnings: Vec<String>,
    fault_time: Option<f64>,
    wall_s: f64,
}

fn faulted_run(
    cluster: &mut Cluster,
    name: &str,
    index: usize,
    scenario: &Scenario,
    fault: Option<Fault>,
    at: f64,
) -> anyhow::Result<RunEnd> {
    // Every worker registered (one cut off registers again once its link is back).
    cluster.wait_for_workers(name)?;
    let (workers, addresses) = workers_and_addresses(&cluster.inner, &cluster.etcd)?;
    let plan = placement::plan(
        scenario.text,
        scenario.origin,
        &registry(),
        &PlanOptions {
            addresses,
            overrides: scenario.overrides.clone(),
            ..PlanOptions::default()
        },
    )?;
    let run = format!("failover-{}-{index}", std::process::id());
    let opts = ControlOptions {
        run: run.clone(),
        key: cluster.key.clone(),
        identity: None,
        members: None,
        timeout: Duration::from_secs(30),
        cwd: std::env::current_dir()?.display().to_string(),
        stop: StopHandle::new(),
        leases: Some(LeaseOptions::new(&cluster.inner.etcd_url(), name)),
    };
    let target = fault.map_or(PRIMARY, Fault::host);
    let struck = cluster
        .inner
        .hosts()
        .into_iter()
        .find(|h| h.name == target)
        .ok_or_else(|| anyhow::anyhow!("no host {target}"))?;
    let pid = struck
        .worker_pid
        .ok_or_else(|| anyhow::anyhow!("host {target} has no worker"))?
        .to_string();
    let link = struck.link.clone();
    let log = cluster.inner.run_dir().join(format!("{PRIMARY}.log"));
    let (running, ended) = (format!("run {run}: running"), format!("run {run}: ended"));
    let injector = std::thread::spawn(move || -> anyhow::Result<Option<f64>> {
        let Some(fault) = fault else {
            return Ok(None);
        };
        // `at` counts from the primary's start (its log says so at Go), not from the loads.
        wait_log(&log, &running, 1)?;
        std::thread::sleep(Duration::from_secs_f64(at));
        anyhow::ensure!(
            log_count(&log, &ended) == 0,
            "the run ended before the fault was due ({at:.2} s after the start): give it more signal"
        );
        let now = unix_now();
        match fault {
            Fault::Kill | Fault::KillStandby => sh("kill", &["-9", &pid])?,
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
            Fault::Cut => sh("ip", &["link", "set", &link, "down"])?,
        }
        Ok(Some(now))
    });
    let report = control::run(&plan, &workers, &opts, |_| {});
    if fault == Some(Fault::Cut) {
        // The run ended without h2 (declared lost once silent): its link comes back for the
        // next run.
        sh("ip", &["link", "set", &struck.link, "up"])?;
    }
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
        .flat_map(|h| match &h.outcome {
            Some(Outcome::Done { warnings, .. }) => warnings.clone(),
            _ => Vec::new(),
        })
        .collect();
    // The struck worker must be free for the next run: started again after a kill, its
    // session over after a zombie's refusal or a cut link.
    let log = cluster.inner.run_dir().join(format!("{target}.log"));
    if matches!(fault, Some(Fault::Kill | Fault::KillStandby)) {
        let starts = log_count(&log, "listening on");
        cluster.inner.restart_worker(
            target,
            &WorkerSpec {
                exe: cluster.exe.clone(),
                user: WorkerUser::unprivileged(),
            },
        )?;
        wait_log(&log, "listening on", starts + 1)?;
    } else {
        wait_log(&log, &format!("run {run}: ended"), 1)?;
    }
    Ok(RunEnd {
        warnings,
        fault_time,
        wall_s: report.wall_s,
    })
}

/// The loss and resumption times (unix seconds) in a fenced receiver's failover warning.
fn takeover_times(warnings: &[String]) -> Option<(Option<f64>, f64)> {
    let line = warnings.iter().find(|w| w.contains("failover at offset"))?;
    let after = |marker: &str| -> Option<f64> {
        let rest = &line[line.find(marker)? + marker.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    // Producing again: the new primary's first item (a warm standby connects first and
    // re-primes), else its connection.
    let resumed = after("first new item at unix time ").or_else(|| after(" at unix time "))?;
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
