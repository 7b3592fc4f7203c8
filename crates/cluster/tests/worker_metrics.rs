//! A worker's partitions in Prometheus metrics (`sluice worker --metrics`): while a partition
//! runs, a `/metrics` server over [`Worker::running`] shows its nodes and edges labelled with
//! the run and the host, names escaped as the console escapes them; when the run ends it goes.
//! No etcd needed: the worker's address is given as etcd would give it.

use sluice_cluster::control::{self, ControlOptions};
use sluice_cluster::placement::{self, PlanOptions};
use sluice_cluster::worker::{Worker, WorkerOptions};
use sluice_net::auth::ClusterKey;
use sluice_runtime::StopHandle;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// About 1.5 s of a paced tone on host `a`.
const GRAPH: &str = r#"
[hosts.a]
address = "127.0.0.1"
[[node]]
name = "src \"1\""
type = "signal_source"
host = "a"
params = { item = "f32" }
[[node]]
name = "pace"
type = "throttle"
host = "a"
params = { item = "f32", rate = 20000.0 }
[[node]]
name = "head"
type = "head"
host = "a"
params = { item = "f32", items = 30000 }
[[node]]
name = "sink"
type = "null_sink"
host = "a"
params = { item = "f32" }
[[edge]]
from = "src \"1\".out"
to = "pace.in"
[[edge]]
from = "pace.out"
to = "head.in"
[[edge]]
from = "head.out"
to = "sink.in"
"#;

fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[test]
fn a_workers_running_partition_is_in_its_metrics_until_the_run_ends() {
    let key = ClusterKey::random().unwrap();
    let opts = WorkerOptions {
        stats_period: Duration::from_millis(200),
        ..WorkerOptions::new(
            "a",
            "t",
            key.clone(),
            PathBuf::from("/nonexistent/key"), // the partition has no streams
            std::env::temp_dir(),
        )
    };
    let worker = Worker::bind(opts, sluice_blocks::graph_blocks::standard_registry()).unwrap();
    let worker_addr = worker.local_addr();
    let running = worker.running();
    // As `sluice worker --metrics` wires it.
    let source: sluice_web::RunsSource = std::sync::Arc::new(move || {
        running
            .snapshot()
            .into_iter()
            .map(|p| sluice_web::WatchedRun {
                labels: vec![("run".into(), p.run), ("host".into(), p.host)],
                progress: p.progress,
                monitor: p.monitor,
            })
            .collect()
    });
    let metrics = sluice_web::MetricsServer::start("127.0.0.1:0".parse().unwrap(), source).unwrap();
    let maddr = metrics.addr();
    let stop = StopHandle::new();
    let serving = {
        let s = stop.clone();
        std::thread::spawn(move || worker.serve(&s).unwrap())
    };

    // Idle: a valid page with no samples; other paths and methods are refused with a reason.
    let (status, page) = get(maddr, "/metrics");
    assert_eq!(status, 200);
    assert!(!page.contains("run=\""), "{page}");
    let (status, body) = get(maddr, "/api/stats");
    assert_eq!(status, 404);
    assert!(body.contains("only /metrics"), "{body}");
    assert!(sluice_web::MetricsServer::start(
        "0.0.0.0:0".parse().unwrap(),
        std::sync::Arc::new(Vec::new)
    )
    .unwrap_err()
    .to_string()
    .contains("loopback only"));

    let registry = sluice_blocks::graph_blocks::standard_registry();
    let plan = placement::plan(GRAPH, "g.toml", &registry, &PlanOptions::default()).unwrap();
    let copts = ControlOptions {
        run: "r1".into(),
        key,
        identity: None,
        members: None,
        timeout: Duration::from_secs(5),
        cwd: std::env::temp_dir().display().to_string(),
        stop: StopHandle::new(),
        leases: None,
    };
    let addrs = BTreeMap::from([("a".to_string(), worker_addr.to_string())]);
    let controller = std::thread::spawn(move || control::run(&plan, &addrs, &copts, |_| {}));

    // While it runs: the partition's nodes and edges, labelled, the quote escaped.
    let wanted = r#"sluice_node_items_out_total{run="r1",host="a",node="src \"1\""} "#;
    let deadline = Instant::now() + Duration::from_secs(10);
    let page = loop {
        let (status, page) = get(maddr, "/metrics");
        assert_eq!(status, 200);
        let out = page
            .lines()
            .find_map(|l| l.strip_prefix(wanted))
            .map(|v| v.parse::<f64>().unwrap());
        if out.is_some_and(|v| v > 0.0) {
            break page;
        }
        assert!(
            Instant::now() < deadline,
            "the partition never showed: {page}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let lines = page.lines().map(|l| Ok(l.to_string()));
    prometheus_parse_check(lines);
    assert!(
        page.contains(r#"sluice_queue_capacity_items{run="r1",host="a",node="pace",port="out"} "#),
        "{page}"
    );
    assert!(
        page.contains(r#"sluice_run_progress_ratio{run="r1",host="a"} "#),
        "{page}"
    );

    let report = controller.join().unwrap().unwrap();
    assert!(report.ok(), "{report:?}");
    // Ended: gone from the page.
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(maddr, "/metrics").1.contains("run=\"r1\"") {
        assert!(
            Instant::now() < deadline,
            "the ended run stayed in the metrics"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.stop();
    serving.join().unwrap();
}

/// Every line is a comment or `name{labels} value`, as the exposition format has them.
fn prometheus_parse_check(lines: impl Iterator<Item = std::io::Result<String>>) {
    for line in lines {
        let line = line.unwrap();
        if line.is_empty() || line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
            continue;
        }
        let (_, value) = line.rsplit_once(' ').expect("a sample line");
        assert!(
            value == "NaN" || value.parse::<f64>().is_ok(),
            "bad sample line: {line}"
        );
    }
}
