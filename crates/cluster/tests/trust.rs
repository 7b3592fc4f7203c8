//! Whom a worker obeys and whom a controller trusts, over the secure channel: a controller
//! with a members file refuses a worker that proves another member's identity (an etcd record
//! may point a host's name at any address), and a worker that lists its controllers refuses
//! a holder of the cluster key alone (the key every stream endpoint holds). No etcd needed:
//! the workers' addresses are given as etcd would give them.

use sluice_cluster::control::{self, ControlOptions};
use sluice_cluster::placement::{self, PlanOptions};
use sluice_cluster::protocol::{self, FromWorker, ToWorker};
use sluice_cluster::refuse::RefusedBlocks;
use sluice_cluster::worker::{Worker, WorkerOptions};
use sluice_net::auth::ClusterKey;
use sluice_net::secure::{self, Credentials, Identity, Peers, Protection, Purpose};
use sluice_runtime::StopHandle;
use std::collections::BTreeMap;
use std::io::BufReader;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A worker on loopback with its own identity, stopped on drop.
struct TestWorker {
    addr: SocketAddr,
    identity: Arc<Identity>,
    stop: StopHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestWorker {
    fn start(name: &str, key: &ClusterKey, controllers: Option<Arc<Peers>>) -> TestWorker {
        Self::refusing(name, key, controllers, &RefusedBlocks::default())
    }

    fn refusing(
        name: &str,
        key: &ClusterKey,
        controllers: Option<Arc<Peers>>,
        refused: &RefusedBlocks,
    ) -> TestWorker {
        let identity = Arc::new(Identity::generate().unwrap());
        let opts = WorkerOptions {
            stats_period: Duration::from_millis(200),
            identity: Some(identity.clone()),
            controllers,
            refused: refused.clone(),
            ..WorkerOptions::new(
                name,
                "t",
                key.clone(),
                PathBuf::from("/nonexistent/key"), // the partitions have no streams
                std::env::temp_dir(),
            )
        };
        let worker = Worker::bind(opts, sluice_blocks::graph_blocks::standard_registry()).unwrap();
        let addr = worker.local_addr();
        let stop = StopHandle::new();
        let s = stop.clone();
        let thread = Some(std::thread::spawn(move || worker.serve(&s).unwrap()));
        TestWorker {
            addr,
            identity,
            stop,
            thread,
        }
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

const GRAPH: &str = r#"
[hosts.a]
address = "127.0.0.1"
[[node]]
name = "src"
type = "signal_source"
host = "a"
params = { item = "f32" }
[[node]]
name = "head"
type = "head"
host = "a"
params = { item = "f32", items = 1000 }
[[node]]
name = "sink"
type = "null_sink"
host = "a"
params = { item = "f32" }
[[edge]]
from = "src.out"
to = "head.in"
[[edge]]
from = "head.out"
to = "sink.in"
"#;

#[test]
fn an_etcd_record_pointing_at_another_identity_is_refused() {
    let key = ClusterKey::random().unwrap();
    let (a, b) = (
        TestWorker::start("a", &key, None),
        TestWorker::start("b", &key, None),
    );
    let members = Arc::new(Peers::new(vec![
        (a.identity.public(), "a".into()),
        (b.identity.public(), "b".into()),
    ]));
    let registry = sluice_blocks::graph_blocks::standard_registry();
    let plan = placement::plan(GRAPH, "g.toml", &registry, &PlanOptions::default()).unwrap();
    let opts = |stop: StopHandle| ControlOptions {
        run: "r1".into(),
        key: key.clone(),
        identity: None,
        members: Some(members.clone()),
        timeout: Duration::from_secs(5),
        cwd: std::env::temp_dir().display().to_string(),
        stop,
        leases: None,
    };
    // The record for host a names b's address: b proves b's identity, not a's.
    let forged = BTreeMap::from([("a".to_string(), b.addr.to_string())]);
    let e = control::run(&plan, &forged, &opts(StopHandle::new()), |_| {})
        .expect_err("the controller trusted the wrong worker")
        .to_string();
    assert!(e.contains("identity of member 'b', not of 'a'"), "{e}");
    // The true address runs.
    let honest = BTreeMap::from([("a".to_string(), a.addr.to_string())]);
    let report = control::run(&plan, &honest, &opts(StopHandle::new()), |_| {}).unwrap();
    assert!(report.ok(), "{report:?}");
}

/// The one host's partition of [`GRAPH`], as a controller sends it.
fn partition() -> sluice_graph::PartitionDoc {
    let registry = sluice_blocks::graph_blocks::standard_registry();
    let plan = placement::plan(GRAPH, "g.toml", &registry, &PlanOptions::default()).unwrap();
    plan.partitions[0].doc.clone()
}

/// Connects with `creds` and sends a Load: the worker's first answer, or how it failed.
fn try_load(addr: SocketAddr, creds: &Credentials) -> Result<FromWorker, String> {
    let mut stream = TcpStream::connect(addr).unwrap();
    let session =
        secure::connect(&mut stream, creds, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let (reader, mut out) = secure::split(secure::Link::secure(stream, session)).unwrap();
    let load = ToWorker::Load {
        version: protocol::VERSION,
        run: "r1".into(),
        origin: "g.toml".into(),
        doc: partition(),
        v3_partition: String::new(),
        cwd: std::env::temp_dir().display().to_string(),
        stream_receivers: Vec::new(),
        lease: None,
    };
    protocol::send(&mut out, &load, "worker").map_err(|e| e.to_string())?;
    protocol::receive(&mut BufReader::new(reader), "worker").map_err(|e| e.to_string())
}

#[test]
fn a_holder_of_the_stream_key_alone_cannot_load_partitions() {
    let key = ClusterKey::random().unwrap();
    let controller = Arc::new(Identity::generate().unwrap());
    let controllers = Arc::new(Peers::new(vec![(controller.public(), "ctl".into())]));
    let w = TestWorker::start("a", &key, Some(controllers));
    // A stream endpoint of the cluster: it holds the key, with an identity of its own.
    let stranger = Credentials::from_key(key.clone(), Purpose::Control).unwrap();
    let e = try_load(w.addr, &stranger).unwrap_err();
    assert!(e.contains("refused this end"), "{e}");
    let ours = Credentials {
        identity: controller,
        psk: Some(key),
        peers: None,
        purpose: Purpose::Control,
        protection: Protection::Encrypt,
    };
    let before = std::env::current_dir().unwrap();
    assert!(matches!(try_load(w.addr, &ours), Ok(FromWorker::Loaded)));
    // The Load named another working directory: the worker's process keeps its own.
    assert_eq!(std::env::current_dir().unwrap(), before);
}

#[test]
fn a_worker_refuses_the_block_types_its_configuration_names() {
    let key = ClusterKey::random().unwrap();
    let registry = sluice_blocks::graph_blocks::standard_registry();
    let e = RefusedBlocks::parse("file_sink,no_such_block", &registry).unwrap_err();
    assert!(
        e.contains("'no_such_block', which is not a block type"),
        "{e}"
    );
    let refused = RefusedBlocks::parse("file_sink, null_sink", &registry).unwrap();
    let w = TestWorker::refusing("a", &key, None, &refused);
    let ours = Credentials::from_key(key.clone(), Purpose::Control).unwrap();
    match try_load(w.addr, &ours) {
        Ok(FromWorker::Error { message }) => assert!(
            message.contains(
                "node 'sink' is a null_sink, a block type this worker's configuration refuses"
            ),
            "{message}"
        ),
        other => panic!("the worker loaded a refused block: {other:?}"),
    }
    // A worker that refuses other types loads the same partition.
    let other = RefusedBlocks::parse("file_sink", &registry).unwrap();
    let w = TestWorker::refusing("a", &key, None, &other);
    assert!(matches!(try_load(w.addr, &ours), Ok(FromWorker::Loaded)));
}
