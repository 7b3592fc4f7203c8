//! A worker running one replica of a primary/standby pair against a real etcd: the primary
//! takes the partition's key at load and is fenced when it loses it; the standby campaigns
//! once running and promotes its fence when the key goes; a warm standby runs its partition
//! only then, and ends without running it when the primary finished. (The data plane's side, the fenced
//! streams, is tested in sluice-net; the whole failover in namespaces elsewhere.)

use sluice_cluster::etcd::{Etcd, KeepAlive};
use sluice_cluster::lease::PartitionLease;
use sluice_cluster::protocol::{self, FromWorker, LeaseSpec, ToWorker};
use sluice_cluster::worker::{Liveness, Worker, WorkerOptions};
use sluice_net::auth::ClusterKey;
use sluice_net::secure::{self, Credentials, Purpose, SecureReader, SecureWriter};
use sluice_net::Fence;
use sluice_runtime::StopHandle;
use std::io::BufReader;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

mod common;

use common::TestEtcd;

/// A worker on loopback, stopped on drop.
struct TestWorker {
    addr: SocketAddr,
    key: ClusterKey,
    stop: StopHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestWorker {
    fn start(name: &str, etcd: &Etcd) -> TestWorker {
        TestWorker::start_with(name, etcd, Liveness::default())
    }

    fn start_with(name: &str, etcd: &Etcd, liveness: Liveness) -> TestWorker {
        let key = ClusterKey::random().unwrap();
        let mut opts = WorkerOptions {
            stats_period: Duration::from_millis(200),
            etcd: Some(etcd.clone()),
            liveness,
            ..WorkerOptions::new(
                name,
                "t",
                key.clone(),
                PathBuf::from("/nonexistent/key"), // the partitions have no streams
                std::env::temp_dir(),
            )
        };
        opts.paths.allow_outside = true;
        let worker = Worker::bind(opts, sluice_blocks::graph_blocks::standard_registry()).unwrap();
        let addr = worker.local_addr();
        let stop = StopHandle::new();
        let s = stop.clone();
        let thread = std::thread::spawn(move || worker.serve(&s).unwrap());
        TestWorker {
            addr,
            key,
            stop,
            thread: Some(thread),
        }
    }

    /// A control connection that has sent Load and read the answer.
    fn load(&self, lease: LeaseSpec) -> (Control, FromWorker) {
        self.load_partition(PARTITION, lease)
    }

    /// [`TestWorker::load`] of another partition.
    fn load_partition(&self, partition: &str, lease: LeaseSpec) -> (Control, FromWorker) {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        let creds = Credentials::from_key(self.key.clone(), Purpose::Control).unwrap();
        let session = secure::connect(&mut stream, &creds, Duration::from_secs(5)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let (reader, out) = secure::split(secure::Link::secure(stream, session)).unwrap();
        let mut c = Control {
            out,
            input: BufReader::new(reader),
        };
        let load = ToWorker::Load {
            version: protocol::VERSION,
            run: "r1".into(),
            origin: "g.toml (partition of host h2)".into(),
            doc: sluice_graph::PartitionDoc::new(
                "h2",
                sluice_graph::GraphDoc::from_graph_file(partition).unwrap(),
            ),
            v3_partition: String::new(),
            cwd: std::env::temp_dir().display().to_string(),
            stream_receivers: Vec::new(),
            lease: Some(lease),
        };
        c.send(&load);
        let answer = c.receive();
        (c, answer)
    }
}

impl Drop for TestWorker {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Control {
    out: SecureWriter,
    input: BufReader<SecureReader>,
}

impl Control {
    fn send(&mut self, m: &ToWorker) {
        protocol::send(&mut self.out, m, "worker").unwrap();
    }

    fn receive(&mut self) -> FromWorker {
        protocol::receive(&mut self.input, "worker").unwrap()
    }

    /// The first message that is not Stats.
    fn end(&mut self) -> FromWorker {
        loop {
            match self.receive() {
                FromWorker::Stats { .. } => {}
                other => return other,
            }
        }
    }
}

/// A partition that runs until stopped, gently.
const PARTITION: &str = r#"
[[node]]
name = "src"
type = "signal_source"
params = { item = "f32" }
[[node]]
name = "pace"
type = "throttle"
params = { item = "f32", rate = 10000.0 }
[[node]]
name = "sink"
type = "null_sink"
params = { item = "f32" }
[[edge]]
from = "src.out"
to = "pace.in"
[[edge]]
from = "pace.out"
to = "sink.in"
"#;

/// A lease spec as a controller sends it. Its `etcd` names an address where no etcd runs
/// (TEST-NET-1): the worker takes leases in its own etcd, never where a controller points it.
fn spec(_etcd: &Etcd, key: &str, fence: &str, primary: bool) -> LeaseSpec {
    LeaseSpec {
        etcd: "http://192.0.2.1:2379".to_string(),
        key: key.to_string(),
        ttl_s: 1,
        fence: fence.to_string(),
        primary,
        warm: false,
    }
}

fn warm_spec(etcd: &Etcd, key: &str, fence: &str) -> LeaseSpec {
    LeaseSpec {
        warm: true,
        ..spec(etcd, key, fence, false)
    }
}

/// The node names in the next Stats.
fn running_nodes(control: &mut Control) -> Vec<String> {
    loop {
        if let FromWorker::Stats { nodes, .. } = control.receive() {
            return nodes.into_iter().map(|n| n.name).collect();
        }
    }
}

#[test]
fn a_warm_standby_runs_nothing_until_it_wins_and_nothing_when_the_primary_finished() {
    let etcd = TestEtcd::start("warm");
    let c = etcd.client();
    let worker = TestWorker::start("h6", &c);
    let fence = "lease-worker-test-warm";

    // The primary finishes normally: the warm standby ends without running its partition.
    let key = "/sluice/t/leases/h2/r1";
    let primary = PartitionLease::try_acquire(&c, key, "h2", 1)
        .unwrap()
        .unwrap();
    let (mut control, answer) = worker.load(warm_spec(&c, key, fence));
    assert_eq!(answer, FromWorker::Loaded);
    control.send(&ToWorker::Go);
    assert!(
        running_nodes(&mut control).is_empty(),
        "a warm standby runs nothing"
    );
    std::thread::sleep(Duration::from_millis(500));
    primary.finish().unwrap();
    match control.end() {
        FromWorker::Done {
            nodes, warnings, ..
        } => {
            assert!(nodes.is_empty(), "{nodes:?}");
            assert!(
                warnings.concat().contains("the primary finished"),
                "{warnings:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.get(key).unwrap(), None, "the standby never took the key");
    assert_eq!(Fence::named(fence).revision(), 0);

    // The primary dies: the warm standby takes the key and runs its partition.
    let key = "/sluice/t/leases/h2/r2";
    let primary = c.grant(1).unwrap();
    assert!(c.put_if_absent(key, b"h2", Some(primary)).unwrap());
    let (mut control, answer) = loop {
        match worker.load(warm_spec(&c, key, fence)) {
            (_, FromWorker::Error { message }) if message.contains("busy") => {
                std::thread::sleep(Duration::from_millis(50));
            }
            loaded => break loaded,
        }
    };
    assert_eq!(answer, FromWorker::Loaded);
    control.send(&ToWorker::Go);
    assert!(running_nodes(&mut control).is_empty());
    c.revoke(primary).unwrap();
    let died = Instant::now();
    loop {
        let nodes = running_nodes(&mut control);
        if !nodes.is_empty() {
            assert!(nodes.contains(&"pace".to_string()), "{nodes:?}");
            break;
        }
        assert!(
            died.elapsed() < Duration::from_secs(5),
            "the warm standby did not start its partition"
        );
    }
    assert!(Fence::named(fence).revision() > 0, "promoted");
    control.send(&ToWorker::Stop);
    assert!(matches!(
        control.end(),
        FromWorker::Done { stopped: true, .. }
    ));
}

#[test]
fn a_primary_takes_the_key_and_is_fenced_when_it_goes() {
    let etcd = TestEtcd::start("primary");
    let c = etcd.client();
    let worker = TestWorker::start("h2", &c);
    let key = "/sluice/t/leases/h2/r1";
    let fence = "lease-worker-test-primary";

    // Held by another: refused at load, naming the holder.
    let other = c.grant(10).unwrap();
    assert!(c.put_if_absent(key, b"h9", Some(other)).unwrap());
    let (_c, answer) = worker.load(spec(&c, key, fence, true));
    match answer {
        FromWorker::Error { message } => assert!(
            message.contains(&format!("host h2: partition lease {key} is held by h9")),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    drop(_c);
    c.revoke(other).unwrap();

    let started = Instant::now();
    let (mut control, answer) = loop {
        // The refused session may still hold the worker busy for a moment.
        match worker.load(spec(&c, key, fence, true)) {
            (_, FromWorker::Error { message }) if message.contains("busy") => {
                assert!(started.elapsed() < Duration::from_secs(5), "{message}");
                std::thread::sleep(Duration::from_millis(50));
            }
            loaded => break loaded,
        }
    };
    assert_eq!(answer, FromWorker::Loaded);
    let entry = c.get_entry(key).unwrap().expect("the primary's key");
    assert_eq!(entry.value, b"h2");
    assert_eq!(Fence::named(fence).revision(), entry.create_revision as u64);
    control.send(&ToWorker::Go);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(c.get(key).unwrap(), Some(b"h2".to_vec()), "kept alive");

    // Its lease goes (as when etcd lost it): the worker stops and says it was fenced.
    c.revoke(entry.lease.unwrap()).unwrap();
    match control.end() {
        FromWorker::Failed { message } => assert!(
            message.starts_with(&format!("host h2 lost partition lease {key}"))
                && message.ends_with("fenced (its standby took over)"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_standby_promotes_its_fence_when_the_key_goes() {
    let etcd = TestEtcd::start("standby");
    let c = etcd.client();
    let worker = TestWorker::start("h5", &c);
    let key = "/sluice/t/leases/h2/r1";
    let fence = "lease-worker-test-standby";

    // The primary, kept alive until it "dies" (stops renewing).
    let primary = c.grant(1).unwrap();
    assert!(c.put_if_absent(key, b"h2", Some(primary)).unwrap());
    let old = c.get_entry(key).unwrap().unwrap().create_revision;
    let keep = KeepAlive::start(c.clone(), primary, 1);

    let (mut control, answer) = worker.load(spec(&c, key, fence, false));
    assert_eq!(answer, FromWorker::Loaded);
    control.send(&ToWorker::Go);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(Fence::named(fence).revision(), 0, "still standby");
    assert_eq!(c.get(key).unwrap(), Some(b"h2".to_vec()));

    drop(keep);
    let died = Instant::now();
    while Fence::named(fence).revision() == 0 {
        assert!(
            died.elapsed() < Duration::from_secs(5),
            "the standby did not take over"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let entry = c.get_entry(key).unwrap().unwrap();
    assert_eq!(entry.value, b"h5");
    assert!(entry.create_revision > old);
    assert_eq!(Fence::named(fence).revision(), entry.create_revision as u64);

    // A normal stop: Done, and the key is released.
    control.send(&ToWorker::Stop);
    assert!(matches!(
        control.end(),
        FromWorker::Done { stopped: true, .. }
    ));
    assert_eq!(c.get(key).unwrap(), None);
}

/// A partition that drains slowly: a graceful stop ends the source, then its queue (tens of
/// thousands of items) passes a throttle of 1,000 items a second.
const SLOW_DRAIN: &str = r#"
[[node]]
name = "src"
type = "signal_source"
params = { item = "f32" }
[[node]]
name = "pace"
type = "throttle"
params = { item = "f32", rate = 1000.0 }
[[node]]
name = "sink"
type = "null_sink"
params = { item = "f32" }
[[edge]]
from = "src.out"
to = "pace.in"
[[edge]]
from = "pace.out"
to = "sink.in"
"#;

#[test]
fn a_fenced_primary_stops_hard_after_its_drain() {
    let etcd = TestEtcd::start("hard-stop");
    let c = etcd.client();
    let liveness = Liveness {
        drain: Duration::from_millis(100),
        ..Liveness::default()
    };
    let worker = TestWorker::start_with("h2", &c, liveness);
    let key = "/sluice/t/leases/h2/r1";
    let (mut control, answer) = worker.load_partition(SLOW_DRAIN, spec(&c, key, "hard-stop", true));
    assert_eq!(answer, FromWorker::Loaded);
    control.send(&ToWorker::Go);
    std::thread::sleep(Duration::from_millis(500));
    let entry = c.get_entry(key).unwrap().expect("the primary's key");
    let revoked = Instant::now();
    c.revoke(entry.lease.unwrap()).unwrap();
    // A graceful stop would drain the throttle's queue for many seconds (the control
    // connection's read times out after 10 s): the hard stop ends it at once.
    match control.end() {
        FromWorker::Failed { message } => assert!(message.contains("fenced"), "{message}"),
        other => panic!("{other:?}"),
    }
    // (A bound on liveness, not a measure of speed: the graceful drain takes about 65 s.)
    let took = revoked.elapsed();
    eprintln!(
        "fenced partition ended {:.0} ms after its lease was revoked",
        took.as_secs_f64() * 1e3
    );
    assert!(
        took < Duration::from_secs(5),
        "the fenced partition drained for {took:?}"
    );
}

#[test]
fn a_quiet_controller_costs_the_partition_and_its_lease_not_the_worker() {
    let etcd = TestEtcd::start("quiet");
    let c = etcd.client();
    let liveness = Liveness {
        go_timeout: Duration::from_millis(300),
        ..Liveness::default()
    };
    let worker = TestWorker::start_with("h2", &c, liveness);
    let key = "/sluice/t/leases/h2/r1";
    let (mut control, answer) = worker.load(spec(&c, key, "quiet", true));
    assert_eq!(answer, FromWorker::Loaded);
    assert!(c.get(key).unwrap().is_some(), "the primary took its key");
    // No Go: the worker gives the partition up and says why.
    match control.receive() {
        FromWorker::Error { message } => {
            assert!(message.contains("no Go within 0.3 s"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // Its lease went with it, and the worker takes the next run.
    let started = Instant::now();
    while c.get(key).unwrap().is_some() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the lease was kept"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_control, answer) = worker.load(spec(&c, key, "quiet", true));
    assert_eq!(answer, FromWorker::Loaded);
}
