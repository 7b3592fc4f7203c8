//! `sluice bench cluster`: the seed's cluster experiments on a local cluster of network-namespace
//! hosts (needs root), each beside the same graph on one machine in the same run.
//!
//! - one cross-host edge (veth, no rate limit) against the same two partitions on loopback;
//! - AMPS on four hosts as in the seed's figure 5 (band select, two channel-select hosts, one
//!   demodulator writing WAVs): the seed's 12 channels, then the whole band (333 channels),
//!   against the same file run in one process, WAVs compared byte for byte;
//! - the multiuser beamformer on five hosts (figure 4: three partial-sum hosts, two beam hosts)
//!   against the same file on one machine, beams compared byte for byte.
//!
//! Every namespace host shares this machine's cores: per-host CPU shows where the work goes,
//! not how a cluster of separate machines would scale.

use crate::report::{machine_description, median, results_dir, Table};
use crate::worker_out::{copy_dir, WorkerOut};
use sluice_amps::{self as amps, BandConfig};
use sluice_cluster::control::{self, ControlOptions, Outcome};
use sluice_cluster::etcd::Etcd;
use sluice_cluster::local::{self, LocalCluster, LocalOptions, WorkerSpec, WorkerUser};
use sluice_cluster::membership;
use sluice_cluster::placement::{self, Plan, PlanOptions};
use sluice_graph::{Override, Registry};
use sluice_net::auth::ClusterKey;
use sluice_runtime::{RunOptions, StopHandle};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const AMPS_CLUSTER: &str = include_str!("../../../examples/amps_cluster.toml");
const BEAM_CLUSTER: &str = include_str!("../../../examples/beamform_cluster.toml");

/// Arguments of `sluice bench cluster`.
#[derive(clap::Args, Debug)]
pub struct BenchClusterArgs {
    /// Seconds of AMPS band (20 M samples, 160 MB, per second).
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Bytes sent over the cross-host edge per run.
    #[arg(long, default_value_t = 2 << 30)]
    edge_bytes: u64,
    /// Runs of each case; medians are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Limit every host's link with tc (e.g. 1gbit, 100mbit as the seed's); default: none.
    #[arg(long)]
    rate: Option<String>,
    /// Packets timed per probe loop (the seed collected 50,000).
    #[arg(long, default_value_t = 20_000)]
    probe_count: u64,
    /// Where the tables, WAVs and beams go.
    #[arg(long, default_value = "target/bench/cluster")]
    out: PathBuf,
}

/// The local cluster, removed when dropped.
struct Cluster {
    inner: LocalCluster,
    etcd: Etcd,
    key: ClusterKey,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Err(e) = local::down(self.inner.run_dir()) {
            eprintln!("sluice bench cluster: removing the cluster: {e}");
        }
    }
}

/// The control addresses of `cluster`'s registered workers and its hosts' addresses, by host
/// name.
pub(crate) fn workers_and_addresses(
    cluster: &LocalCluster,
    etcd: &Etcd,
) -> anyhow::Result<(BTreeMap<String, String>, BTreeMap<String, String>)> {
    let workers = membership::workers(etcd, cluster.name())?
        .into_iter()
        .map(|(n, a)| (n, a.to_string()))
        .collect();
    let addresses = cluster
        .hosts()
        .iter()
        .map(|h| (h.name.clone(), h.address.to_string()))
        .collect();
    Ok((workers, addresses))
}

/// The registry the controller plans with: the standard one, as the workers have.
pub(crate) fn registry() -> Registry {
    sluice_registry::standard_registry()
}

/// Runs the benchmark.
pub fn run(args: BenchClusterArgs) -> anyhow::Result<()> {
    let out = std::fs::canonicalize(results_dir(&args.out)?)?;
    let exe = std::env::current_exe()?;
    println!("# {}", machine_description());
    println!(
        "# every namespace host shares this machine's {} cores: per-host CPU shows where the work goes, not scaling",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let name = format!("b{}", std::process::id() % 100_000);
    let inner = LocalCluster::up(LocalOptions {
        name: Some(name.clone()),
        hosts: 5,
        rate: args.rate.clone(),
        base_dir: out.join("clusters"),
        // Run as `sluice cluster up --local` runs them (sluice-worker when root): they write
        // into directories of that user (`WorkerOut`), copied into the results after.
        worker: Some(WorkerSpec {
            exe,
            user: WorkerUser::unprivileged(),
        }),
    })?;
    let worker_out = WorkerOut::new(&inner)?;
    let etcd = inner.etcd()?;
    let key = ClusterKey::load(&inner.key_file())?;
    let cluster = Cluster { inner, etcd, key };
    let hosts: Vec<String> = cluster
        .inner
        .hosts()
        .iter()
        .map(|h| h.name.clone())
        .collect();
    membership::wait_for(&cluster.etcd, &name, &hosts, Duration::from_secs(15))
        .map_err(anyhow::Error::msg)?;
    let (workers, addresses) = workers_and_addresses(&cluster.inner, &cluster.etcd)?;

    let mut table = Table::new(&[
        "case",
        "hosts",
        "one_machine",
        "cluster",
        "ratio",
        "identical",
        "cpu_s_and_load_per_host",
    ]);

    // 1. One cross-host edge against the same partitions on loopback.
    let items = args.edge_bytes / 8;
    let edge_graph = format!(
        "[hosts.h1]\n[hosts.h2]\n[[node]]\nname = \"src\"\ntype = \"null_source\"\nhost = \"h1\"\nparams = {{ item = \"c32\" }}\n[[node]]\nname = \"head\"\ntype = \"head\"\nhost = \"h1\"\nparams = {{ item = \"c32\", items = {items} }}\n[[node]]\nname = \"sink\"\ntype = \"null_sink\"\nhost = \"h2\"\nparams = {{ item = \"c32\" }}\n[[edge]]\nfrom = \"src.out\"\nto = \"head.in\"\n[[edge]]\nfrom = \"head.out\"\nto = \"sink.in\"\n"
    );
    let mut loop_rates = Vec::new();
    let mut veth_rates = Vec::new();
    let mut cpu = BTreeMap::new();
    for _ in 0..args.runs.max(1) {
        let loopback = BTreeMap::from([
            ("h1".to_string(), "127.0.0.1".to_string()),
            ("h2".to_string(), "127.0.0.1".to_string()),
        ]);
        let plan = plan_of(&edge_graph, "edge", &loopback, &[])?;
        let wall = run_in_process(&plan)?;
        loop_rates.push(args.edge_bytes as f64 / wall / 1e9);
        let plan = plan_of(&edge_graph, "edge", &addresses, &[])?;
        let (wall, host_cpu) = run_on_cluster(&cluster, &plan, &workers, &out)?;
        veth_rates.push(args.edge_bytes as f64 / wall / 1e9);
        merge(&mut cpu, host_cpu);
    }
    let (l, v) = (median(&loop_rates), median(&veth_rates));
    table.push(vec![
        "one edge, GB/s (veth vs loopback)".into(),
        "2".into(),
        format!("{l:.2}"),
        format!("{v:.2}"),
        format!("{:.2}", v / l),
        "-".into(),
        cpu_text(&cpu, args.edge_bytes as f64 / (v * 1e9)),
    ]);
    println!("{}", table.render());

    // 2. AMPS on four hosts, the seed's 12 channels and the whole band.
    let band = out.join("amps_band");
    let samples = (args.seconds * amps::BAND_RATE).round() as u64;
    let (_, data) = sluice_formats::sigmf::paths(&band);
    if std::fs::metadata(&data).map(|m| m.len()).ok() != Some(samples * 8) {
        println!(
            "# generating {} s of band into {}",
            args.seconds,
            data.display()
        );
        amps::write_band(&band, BandConfig::default(), args.seconds).map_err(anyhow::Error::msg)?;
    }
    let mut file = std::fs::File::open(&data)?;
    let mut buf = vec![0u8; 1 << 22];
    while file.read(&mut buf)? > 0 {}
    for (label, channels) in [
        ("AMPS, the seed's 12 channels", 12usize),
        ("AMPS, all 333 channels", 333),
    ] {
        let one_dir = out.join(format!("amps{channels}_one"));
        let many_name = format!("amps{channels}_cluster");
        let many_dir = worker_out.fresh(&many_name)?;
        let one_sets = amps_overrides(&band, &one_dir, channels)?;
        let many_sets = amps_overrides(&band, &many_dir, channels)?;
        let mut one_walls = Vec::new();
        let mut many_walls = Vec::new();
        let mut cpu = BTreeMap::new();
        let mut identical = true;
        for _ in 0..args.runs.max(1) {
            fresh_dir(&one_dir)?;
            worker_out.fresh(&many_name)?;
            let loaded =
                sluice_graph::load_with(AMPS_CLUSTER, "amps_cluster.toml", &registry(), &one_sets)?;
            let report = loaded.graph.run(&RunOptions::default())?;
            one_walls.push(report.wall.as_secs_f64());
            let plan = plan_of(AMPS_CLUSTER, "amps_cluster.toml", &addresses, &many_sets)?;
            let (wall, host_cpu) = run_on_cluster(&cluster, &plan, &workers, &out)?;
            many_walls.push(wall);
            merge(&mut cpu, host_cpu);
            identical &= same_files(&one_dir, &many_dir, "wav")? == channels;
        }
        copy_dir(&many_dir, &out.join(&many_name))?;
        let (a, b) = (median(&one_walls), median(&many_walls));
        table.push(vec![
            format!("{label}, x real time"),
            "4".into(),
            format!("{:.2}", args.seconds / a),
            format!("{:.2}", args.seconds / b),
            format!("{:.2}", a / b),
            if identical { "yes".into() } else { "NO".into() },
            cpu_text(&cpu, b),
        ]);
        println!("{}", table.render());
    }

    // 3. The beamformer on five hosts.
    let one_dir = out.join("beam_one");
    let many_dir = worker_out.fresh("beam_cluster")?;
    let sets = |dir: &Path| -> anyhow::Result<Vec<Override>> {
        [
            format!("sink0.path=\"{}\"", dir.join("cluster_beam0.c32").display()),
            format!("sink1.path=\"{}\"", dir.join("cluster_beam1.c32").display()),
        ]
        .iter()
        .map(|s| s.parse().map_err(anyhow::Error::msg))
        .collect()
    };
    let mut one_walls = Vec::new();
    let mut many_walls = Vec::new();
    let mut cpu = BTreeMap::new();
    let mut identical = true;
    for _ in 0..args.runs.max(1) {
        fresh_dir(&one_dir)?;
        worker_out.fresh("beam_cluster")?;
        let loaded = sluice_graph::load_with(
            BEAM_CLUSTER,
            "beamform_cluster.toml",
            &registry(),
            &sets(&one_dir)?,
        )?;
        let report = loaded.graph.run(&RunOptions::default())?;
        one_walls.push(report.wall.as_secs_f64());
        let plan = plan_of(
            BEAM_CLUSTER,
            "beamform_cluster.toml",
            &addresses,
            &sets(&many_dir)?,
        )?;
        let (wall, host_cpu) = run_on_cluster(&cluster, &plan, &workers, &out)?;
        many_walls.push(wall);
        merge(&mut cpu, host_cpu);
        identical &= same_files(&one_dir, &many_dir, "c32")? == 2;
    }
    copy_dir(&many_dir, &out.join("beam_cluster"))?;
    let (a, b) = (median(&one_walls), median(&many_walls));
    let items = 2_000_000.0;
    table.push(vec![
        "beamformer 6 antennas x 2 beams, M samples/s".into(),
        "5".into(),
        format!("{:.2}", items / a / 1e6),
        format!("{:.2}", items / b / 1e6),
        format!("{:.2}", a / b),
        if identical { "yes".into() } else { "NO".into() },
        cpu_text(&cpu, b),
    ]);
    println!("{}", table.render());

    // 4. The latency/jitter loop over 2 and 3 hosts (origin on h1, reflectors on h2, h3).
    let exe = std::env::current_exe()?;
    let mut loops = Vec::new();
    for reflectors in [1usize, 2] {
        loops.push(probe_loop(
            &cluster,
            &exe,
            reflectors,
            args.probe_count,
            &out,
        )?);
    }
    let mut probe = Table::new(&[
        "loop",
        "mean_us",
        "jitter_us",
        "p99_us",
        "added_mean_us",
        "added_jitter_us",
        "seed_added_mean_us",
        "seed_added_jitter_us",
    ]);
    for (i, s) in loops.iter().enumerate() {
        let (am, aj) = if i == 0 {
            ("-".to_string(), "-".to_string())
        } else {
            let a = s.added_over(&loops[i - 1]);
            (format!("{:.0}", a.mean), format!("{:.0}", a.jitter))
        };
        probe.push(vec![
            format!("{} hosts", i + 2),
            format!("{:.0}", s.mean),
            format!("{:.0}", s.std),
            format!("{:.0}", s.p99),
            am,
            aj,
            "2200".into(),
            "450".into(),
        ]);
    }
    println!(
        "# sluice probe, 1024-byte packets at 70 Mbit/s, {} packets per loop",
        args.probe_count
    );
    println!("{}", probe.render());
    probe.write_csv(&out.join("probe.csv"))?;
    probe.write_json(&out.join("probe.json"), "cluster probe")?;
    table.write_csv(&out.join("cluster.csv"))?;
    table.write_json(&out.join("cluster.json"), "cluster")?;
    println!("# results in {}", out.display());
    Ok(())
}

/// One probe loop through `reflectors` hosts after h1: reflector processes in h2, h3, … and
/// the origin in h1, each in its host's namespace; the origin's latency summary.
fn probe_loop(
    cluster: &Cluster,
    exe: &Path,
    reflectors: usize,
    count: u64,
    out: &Path,
) -> anyhow::Result<sluice_net::probe::Summary> {
    let hosts = cluster.inner.hosts();
    anyhow::ensure!(
        hosts.len() > reflectors,
        "not enough hosts for {reflectors} reflectors"
    );
    let mut children = Vec::new();
    let name = format!("probe{}", reflectors + 1);
    for i in 1..=reflectors {
        let next = if i == reflectors {
            format!("{}:7601", hosts[0].address)
        } else {
            format!("{}:7600", hosts[i + 1].address)
        };
        let log = std::fs::File::create(out.join(format!("{name}.reflector{i}.log")))?;
        let child = std::process::Command::new("ip")
            .args(["netns", "exec", &hosts[i].netns])
            .arg(exe)
            .args([
                "probe",
                "reflect",
                "--from",
                &format!("tcp-listen://{}:7600", hosts[i].address),
                "--to",
                &format!("tcp://{next}"),
                "--timeout",
                "30",
            ])
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        children.push(child);
    }
    let status = std::process::Command::new("ip")
        .args(["netns", "exec", &hosts[0].netns])
        .arg(exe)
        .args([
            "probe",
            "origin",
            "--to",
            &format!("tcp://{}:7600", hosts[1].address),
            "--from",
            &format!("tcp-listen://{}:7601", hosts[0].address),
            "--timeout",
            "10",
            "--rate",
            "70M",
            "--count",
            &count.to_string(),
            "--hops",
            &reflectors.to_string(),
            "--label",
            &format!("{} namespace hosts", reflectors + 1),
            "--out",
            &out.display().to_string(),
            "--name",
            &name,
        ])
        .stdout(std::process::Stdio::null())
        .status()?;
    for mut c in children {
        let deadline = Instant::now() + Duration::from_secs(10);
        while c.try_wait()?.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
    anyhow::ensure!(
        status.success(),
        "the probe loop through {reflectors} reflector(s) failed (logs in {})",
        out.display()
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join(format!("{name}.json")))?)?;
    let s = &json["summary_us"];
    let f = |k: &str| s[k].as_f64().unwrap_or(f64::NAN);
    Ok(sluice_net::probe::Summary {
        packets: s["packets"].as_u64().unwrap_or(0),
        mean: f("mean"),
        std: f("std"),
        min: f("min"),
        p50: f("p50"),
        p99: f("p99"),
        p999: f("p999"),
        max: f("max"),
    })
}

fn plan_of(
    text: &str,
    origin: &str,
    addresses: &BTreeMap<String, String>,
    overrides: &[Override],
) -> anyhow::Result<Plan> {
    Ok(placement::plan(
        text,
        origin,
        &registry(),
        &PlanOptions {
            addresses: addresses.clone(),
            overrides: overrides.to_vec(),
            ..PlanOptions::default()
        },
    )?)
}

/// Runs every partition of `plan` on threads of this process; the wall time.
fn run_in_process(plan: &Plan) -> anyhow::Result<f64> {
    let start = Instant::now();
    let threads: Vec<_> = plan
        .partitions
        .iter()
        .map(|p| {
            let (text, host) = (p.text.clone(), p.host.clone());
            std::thread::spawn(move || -> anyhow::Result<()> {
                let g = sluice_graph::load_str(&text, &host, &registry())?;
                g.run(&RunOptions::default())?;
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join()
            .map_err(|_| anyhow::anyhow!("a partition's thread panicked"))??;
    }
    Ok(start.elapsed().as_secs_f64())
}

/// Runs `plan` on the cluster's workers: the wall time and each host's CPU seconds.
fn run_on_cluster(
    cluster: &Cluster,
    plan: &Plan,
    workers: &BTreeMap<String, String>,
    cwd: &Path,
) -> anyhow::Result<(f64, BTreeMap<String, Vec<f64>>)> {
    let opts = ControlOptions {
        run: format!("bench-{}", std::process::id()),
        key: cluster.key.clone(),
        identity: None,
        members: None,
        timeout: Duration::from_secs(30),
        cwd: cwd.display().to_string(),
        stop: StopHandle::new(),
        // The benchmark's graphs have no standbys.
        leases: None,
    };
    let report = control::run(plan, workers, &opts, |_| {})?;
    if let Some(failure) = report.first_failure() {
        anyhow::bail!("{}: {failure}", plan.origin);
    }
    let mut cpu = BTreeMap::new();
    for h in &report.hosts {
        if let Some(Outcome::Done { .. }) = h.outcome {
            cpu.insert(h.host.clone(), vec![h.cpu_s]);
        }
    }
    Ok((report.wall_s, cpu))
}

fn merge(into: &mut BTreeMap<String, Vec<f64>>, from: BTreeMap<String, Vec<f64>>) {
    for (host, v) in from {
        into.entry(host).or_default().extend(v);
    }
}

/// Each host's median CPU seconds and, like the seed's tables, its load: the percentage of
/// one core over the cluster run's median wall time `wall`.
fn cpu_text(cpu: &BTreeMap<String, Vec<f64>>, wall: f64) -> String {
    cpu.iter()
        .map(|(h, v)| format!("{h} {:.2} {:.0}%", median(v), 100.0 * median(v) / wall))
        .collect::<Vec<_>>()
        .join(" ")
}

fn fresh_dir(dir: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    Ok(())
}

/// How many files with extension `ext` are byte-identical in both directories (and exist in
/// both).
fn same_files(a: &Path, b: &Path, ext: &str) -> anyhow::Result<usize> {
    let mut same = 0;
    for entry in std::fs::read_dir(a)? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == ext) {
            let other = b.join(path.file_name().unwrap_or_default());
            if std::fs::read(&other).ok() == Some(std::fs::read(&path)?) {
                same += 1;
            }
        }
    }
    Ok(same)
}

/// The settings that point `examples/amps_cluster.toml` at `band` and its WAVs into `dir`,
/// with `channels` 12 (the seed's two 200 kHz sections: channels 1-6 on one channel-select
/// host, 168-173 on the other) or 333 (the whole band, as the file stands).
fn amps_overrides(band: &Path, dir: &Path, channels: usize) -> anyhow::Result<Vec<Override>> {
    let wav = dir.join("amps_ch{}.wav").display().to_string();
    let mut sets = vec![
        format!("capture.path=\"{}\"", band.display()),
        format!("save_lo.path=\"{wav}\""),
        format!("save_hi.path=\"{wav}\""),
    ];
    if channels == 12 {
        let lo: Vec<usize> = (1..=6).collect();
        let hi: Vec<usize> = (168..=173).collect();
        for (half, chs) in [("lo", &lo), ("hi", &hi)] {
            sets.extend([
                format!("bank_{half}.outputs={:?}", amps::bins(chs)),
                format!("squelch_{half}.channels=6"),
                format!("demod_{half}.channels=6"),
                format!("deemph_{half}.channels=6"),
                format!("audio_{half}.channels=6"),
                format!("save_{half}.channels=6"),
                format!("save_{half}.labels={chs:?}"),
            ]);
        }
    }
    sets.iter()
        .map(|s| s.parse().map_err(anyhow::Error::msg))
        .collect()
}
