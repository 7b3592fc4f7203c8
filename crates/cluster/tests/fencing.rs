//! Fencing revisions read back from etcd: a fenced receiver set up as a worker sets it up (the
//! worker's [`LeaseCheck`] installed, `fenced_by` naming the protected host) takes a raised
//! lease revision only if the lease key exists with exactly that create revision and its
//! holder's listed identity made the connection. A holder of the stream key who forges a
//! revision, or reuses the primary's under another identity, is refused while the real
//! primary's stream arrives bit-identical; an etcd that does not answer refuses the raise
//! within the bound.

mod common;

use common::TestEtcd;
use sluice_cluster::etcd::Etcd;
use sluice_cluster::lease::PartitionLease;
use sluice_cluster::lease_check::LeaseCheck;
use sluice_cluster::membership;
use sluice_net::auth::ClusterKey;
use sluice_net::fence::{self, RevisionClaim, CHECK_TIMEOUT};
use sluice_net::secure::Identity;
use sluice_net::{Fence, TcpOptions, TcpSink, TcpSource};
use sluice_runtime::{Graph, Node, NodeError, Ports, RunOptions, Work, WorkIo};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn make(i: u64) -> u64 {
    i.wrapping_mul(0x9e3779b97f4a7c15) ^ 0x5555
}

/// Produces `make(0..count)`, 2048 items a millisecond.
struct Paced {
    count: u64,
    next: u64,
}

impl Node for Paced {
    fn ports(&self) -> Ports {
        Ports::new().output::<u64>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next == self.count {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u64>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min((self.count - self.next) as usize).min(2048);
        for (k, x) in space[..n].iter_mut().enumerate() {
            *x = make(self.next + k as u64);
        }
        out.commit(n);
        self.next += n as u64;
        std::thread::sleep(Duration::from_millis(1));
        Ok(Work::Progress)
    }
}

/// Items received, and the first that was not `make(index)`.
#[derive(Debug, Default)]
struct Seen {
    items: u64,
    first_bad: Option<u64>,
}

struct Check(Arc<Mutex<Seen>>);

impl Node for Check {
    fn ports(&self) -> Ports {
        Ports::new().input::<u64>("in")
    }
    fn tag_policy(&self) -> sluice_runtime::TagPolicy {
        sluice_runtime::TagPolicy::Drop
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u64>(0)?;
        let start = input.items_read();
        let Some(w) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if w.is_empty() {
            return Ok(Work::Done);
        }
        let n = w.len();
        let mut seen = self.0.lock().unwrap();
        if seen.first_bad.is_none() {
            if let Some(k) = (0..n).find(|&k| w[k] != make(start + k as u64)) {
                seen.first_bad = Some(start + k as u64);
            }
        }
        seen.items += n as u64;
        input.consume(n);
        Ok(Work::Progress)
    }
}

/// Stream settings: every wait of these tests at most a second.
fn quick(key: &ClusterKey) -> TcpOptions {
    TcpOptions {
        key: Some(key.clone()),
        heartbeat: Duration::from_millis(50),
        peer_timeout: Duration::from_secs(1),
        connect_timeout: Duration::from_secs(1),
        resume_timeout: Duration::from_secs(1),
        auth_timeout: Duration::from_secs(1),
        frame_bytes: 16 << 10,
        retention_bytes: 2 << 20,
        ..TcpOptions::default()
    }
}

fn sender(count: u64, url: &str, opts: TcpOptions) -> Graph {
    let mut g = Graph::new();
    let a = g.add("count", Paced { count, next: 0 }).unwrap();
    let b = g
        .add("tx", TcpSink::<u64>::new(url, opts).unwrap())
        .unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g
}

type Run = std::thread::JoinHandle<Result<sluice_runtime::RunReport, sluice_runtime::RuntimeError>>;

fn spawn(g: Graph) -> Run {
    std::thread::spawn(move || g.run(&RunOptions::default()))
}

#[test]
fn a_forged_revision_is_refused_and_the_primary_streams_on() {
    let etcd = TestEtcd::start("fencing-forged");
    let client = etcd.client();
    let key = ClusterKey::random().unwrap();
    // Host h2's worker: registered with its identity, primary of its partition.
    let h2 = Arc::new(Identity::generate().unwrap());
    let _registered = membership::register(
        &client,
        "t",
        "h2",
        "127.0.0.1:1".parse().unwrap(),
        Some(h2.public()),
    )
    .unwrap();
    let lease_key = membership::primary_key("t", "r1", "h2");
    let held = PartitionLease::try_acquire(&client, &lease_key, "h2", 2)
        .unwrap()
        .expect("the key is free");
    let revision = held.revision() as u64;
    // The receiving worker's check, as a worker installs it when it loads run r1.
    fence::set_revision_check(Some(Arc::new(LeaseCheck::new(&client, "t", "r1"))));

    let source = TcpSource::<u64>::new(
        "tcp-listen://127.0.0.1:0",
        TcpOptions {
            fenced: true,
            fenced_by: Some("h2".into()),
            ..quick(&key)
        },
    )
    .unwrap();
    let addr = source.local_addr().unwrap();
    let url = format!("tcp://{addr}");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut rx = Graph::new();
    let a = rx.add("rx", source).unwrap();
    let b = rx.add("check", Check(seen.clone())).unwrap();
    rx.connect(a, "out", b, "in").unwrap();
    let rx = spawn(rx);

    let count = 3_000_000;
    let primary = Fence::named("fencing-h2");
    primary.promote(revision);
    let p = spawn(sender(
        count,
        &url,
        TcpOptions {
            fence: Some(primary),
            identity: Some(h2.clone()),
            ..quick(&key)
        },
    ));
    let start = Instant::now();
    while seen.lock().unwrap().items < count / 10 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the primary's stream did not start"
        );
        std::thread::sleep(Duration::from_millis(5));
    }

    // A stream-key holder claims the highest revision, then the next one: neither lease
    // exists in etcd.
    for (name, forged) in [("max", u64::MAX), ("next", revision + 1)] {
        let f = Fence::named(&format!("fencing-forger-{name}"));
        f.promote(forged);
        let forger = sender(
            count,
            &url,
            TcpOptions {
                fence: Some(f),
                ..quick(&key)
            },
        );
        let err = forger
            .run(&RunOptions::default())
            .expect_err("a forged revision is refused");
        let text = err.to_string();
        assert!(
            text.contains(&format!("lease revision {forged} of h2 not confirmed"))
                && text.contains(&format!("not {forged}")),
            "{text}"
        );
    }
    // The real revision, from another identity than the holder's: refused too.
    let f = Fence::named("fencing-forger-same");
    f.promote(revision);
    let err = sender(
        count,
        &url,
        TcpOptions {
            fence: Some(f),
            ..quick(&key)
        },
    )
    .run(&RunOptions::default())
    .expect_err("the primary's revision under another identity is refused");
    assert!(
        err.to_string()
            .contains(&format!("lease revision {revision} belongs to the host")),
        "{err}"
    );
    assert!(
        !p.is_finished(),
        "the refusals came while the primary was streaming"
    );

    p.join().unwrap().expect("the primary ends its stream");
    rx.join()
        .unwrap()
        .expect("the receiver ends with the primary's stream");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.first_bad, None, "an item out of place");
    assert_eq!(seen.items, count, "items lost or repeated");
    fence::set_revision_check(None);
    drop(held);
}

#[test]
fn an_etcd_that_does_not_answer_refuses_the_raise_in_time() {
    // A listener that never accepts: connections are made (the backlog) and never answered.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let refused_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    for url in [
        format!("http://{}", silent.local_addr().unwrap()),
        refused_url,
    ] {
        let check = LeaseCheck::new(&Etcd::new(&url).unwrap(), "t", "r1");
        let claim = RevisionClaim {
            fence: "h2".into(),
            revision: 7,
            peer_key: None,
            peer: "127.0.0.1:9".into(),
        };
        let t = Instant::now();
        let err = fence::verify(Arc::new(check), &claim, CHECK_TIMEOUT).unwrap_err();
        assert!(
            t.elapsed() < CHECK_TIMEOUT + Duration::from_millis(300),
            "{url}: {:?}",
            t.elapsed()
        );
        assert!(err.contains("/sluice/t/leases/h2/r1"), "{url}: {err}");
    }
}
