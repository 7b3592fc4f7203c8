//! Hot standbys: a fenced receiver fed by a primary and a standby sender of the same stream.
//! The primary dies (its graph fails: its connection closes) or freezes (a relay stops
//! forwarding: a SIGSTOP or a cut link), the standby is promoted with a newer lease revision
//! and resumes where the receiver stands: every item arrives once, in order; a frozen primary
//! that wakes up is refused.

mod common;

use common::*;
use sluice_net::auth::ClusterKey;
use sluice_net::{Fence, TcpOptions, TcpSink, TcpSource};
use sluice_runtime::{Graph, Node, NodeError, Ports, Work, WorkIo};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn make(i: u64) -> u64 {
    i.wrapping_mul(0x9e3779b97f4a7c15) ^ 0x5555
}

/// Produces `make(0..count)` in chunks, paced (one chunk per millisecond), and fails once it
/// has produced `fail_at` items (if set): a primary that dies mid-stream.
struct Paced {
    count: u64,
    next: u64,
    fail_at: Option<u64>,
}

impl Node for Paced {
    fn ports(&self) -> Ports {
        Ports::new().output::<u64>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.fail_at.is_some_and(|k| self.next >= k) {
            return Err(NodeError::msg("the primary dies here"));
        }
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

fn replica(count: u64, fail_at: Option<u64>, url: &str, opts: TcpOptions) -> Graph {
    let mut g = Graph::new();
    let a = g
        .add(
            "count",
            Paced {
                count,
                next: 0,
                fail_at,
            },
        )
        .unwrap();
    let b = g
        .add("tx", TcpSink::<u64>::new(url, opts).unwrap())
        .unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g
}

fn fenced_receiver(opts: TcpOptions) -> (Graph, SocketAddr, Arc<std::sync::Mutex<Seen>>) {
    receiver::<u64>(
        make,
        TcpOptions {
            fenced: true,
            ..opts
        },
    )
}

fn wait_until(what: &str, limit: Duration, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn warnings(report: &sluice_runtime::RunReport) -> String {
    report
        .nodes
        .iter()
        .flat_map(|n| n.warnings.iter().cloned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The options of these tests, over the secure channel when `key` is set.
fn opts_with(key: &Option<ClusterKey>, opts: TcpOptions) -> TcpOptions {
    TcpOptions {
        key: key.clone(),
        ..opts
    }
}

fn secure() -> Option<ClusterKey> {
    Some(ClusterKey::from_bytes([9; 32]))
}

#[test]
fn a_standby_takes_over_from_a_dead_primary_and_nothing_is_lost_or_repeated() {
    dead_primary(None);
}

#[test]
fn a_standby_takes_over_from_a_dead_primary_over_the_secure_channel() {
    dead_primary(secure());
}

fn dead_primary(key: Option<ClusterKey>) {
    // (The standby starts late in the last round: it is behind the receiver when promoted,
    // and releases what the receiver has as it produces it before it sends.)
    for (round, (fail_at, standby_late)) in [(300_000u64, 0), (1_000_000, 0), (1_700_000, 300)]
        .into_iter()
        .enumerate()
    {
        let count = 2_000_000;
        let (rx, addr, seen) = fenced_receiver(opts_with(&key, fast()));
        let url = format!("tcp://{addr}");
        let tag = if key.is_some() { "secure" } else { "plain" };
        let primary = Fence::named(&format!("dead-primary-{tag}-{round}"));
        primary.promote(5);
        let standby = Fence::named(&format!("dead-standby-{tag}-{round}"));
        let opts = |fence: &Fence| TcpOptions {
            fence: Some(fence.clone()),
            ..opts_with(&key, fast())
        };
        let rx = spawn(rx);
        let p = spawn(replica(count, Some(fail_at), &url, opts(&primary)));
        std::thread::sleep(Duration::from_millis(standby_late));
        let s = spawn(replica(count, None, &url, opts(&standby)));
        let err = p.join().unwrap().expect_err("the primary dies");
        assert!(err.to_string().contains("dies here"), "{err}");
        // The lease's TTL passes; the standby wins it with a newer revision.
        std::thread::sleep(Duration::from_millis(200));
        standby.promote(6);
        s.join()
            .unwrap()
            .expect("the promoted standby ends the stream");
        let report = rx
            .join()
            .unwrap()
            .expect("the receiver ends with the stream");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.first_bad, None, "round {round}: an item out of place");
        assert_eq!(seen.items, count, "round {round}: items lost or repeated");
        let w = warnings(&report);
        assert!(
            w.contains("failover at offset") && w.contains("revision 6 took over from revision 5"),
            "round {round}: {w}"
        );
        // The same record is in the process's journal, which a worker reads while it runs.
        let offset: u64 = w
            .split("failover at offset ")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("round {round}: no offset in {w}"));
        let journal = sluice_net::takeovers::takeovers();
        let record = journal
            .iter()
            .find(|t| t.offset == offset && t.from_revision == 5 && t.to_revision == 6)
            .unwrap_or_else(|| panic!("round {round}: offset {offset} not in {journal:?}"));
        assert!(record.first_item_at.is_some(), "{record:?}");
        assert!(record.resumed_at >= record.lost_at.unwrap_or(record.resumed_at));
    }
}

/// A relay that forwards both ways until frozen: a frozen relay reads nothing and writes
/// nothing (a process under SIGSTOP, or a link that went down), and on thawing closes both
/// sides of any connection whose other end went away meanwhile.
struct Relay {
    addr: SocketAddr,
    frozen: Arc<AtomicBool>,
}

impl Relay {
    fn start(target: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let frozen = Arc::new(AtomicBool::new(false));
        let f = frozen.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().take(8) {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(target) else {
                    return;
                };
                for (from, to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let f = f.clone();
                    std::thread::spawn(move || pump(from, to, &f));
                }
            }
        });
        Relay { addr, frozen }
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, frozen: &AtomicBool) {
    from.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let mut buf = vec![0u8; 64 << 10];
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if frozen.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = from.shutdown(std::net::Shutdown::Both);
    let _ = to.shutdown(std::net::Shutdown::Both);
}

/// `displaced`: the receiver still holds the frozen primary's connection when the standby
/// comes (a long peer timeout), so the new revision displaces it; otherwise the receiver has
/// declared the frozen primary silent first.
fn zombie(displaced: bool, key: Option<ClusterKey>) {
    let count = 1_500_000;
    let rx_opts = TcpOptions {
        key: key.clone(),
        peer_timeout: if displaced {
            Duration::from_secs(30)
        } else {
            Duration::from_millis(300)
        },
        ..fast()
    };
    let (rx, addr, seen) = fenced_receiver(rx_opts);
    let relay = Relay::start(addr);
    let tag = match (displaced, key.is_some()) {
        (true, false) => "displaced",
        (false, false) => "silent",
        (true, true) => "displaced-secure",
        (false, true) => "silent-secure",
    };
    let primary = Fence::named(&format!("zombie-primary-{tag}"));
    primary.promote(5);
    let standby = Fence::named(&format!("zombie-standby-{tag}"));
    let opts = |fence: &Fence| TcpOptions {
        fence: Some(fence.clone()),
        peer_timeout: Duration::from_secs(30),
        ..opts_with(&key, fast())
    };
    let (rx_report, rx_seen) = (spawn(rx), seen.clone());
    let p = spawn(replica(
        count,
        None,
        &format!("tcp://{}", relay.addr),
        opts(&primary),
    ));
    let s = spawn(replica(
        count,
        None,
        &format!("tcp://{addr}"),
        opts(&standby),
    ));
    wait_until("the primary sent a third", Duration::from_secs(20), || {
        rx_seen.lock().unwrap().items > count / 3
    });
    relay.frozen.store(true, Ordering::SeqCst);
    // Past the lease: the standby wins it.
    std::thread::sleep(Duration::from_millis(500));
    standby.promote(6);
    wait_until(
        "the standby sent two thirds",
        Duration::from_secs(20),
        || rx_seen.lock().unwrap().items > 2 * count / 3,
    );
    // The zombie wakes up: whatever it sends is refused, and it fails.
    relay.frozen.store(false, Ordering::SeqCst);
    let err = p.join().unwrap().expect_err("the zombie is refused");
    assert!(err.to_string().contains("fenced"), "{err}");
    s.join()
        .unwrap()
        .expect("the promoted standby ends the stream");
    let report = rx_report.join().unwrap().expect("the receiver ends");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.first_bad, None, "an item out of place");
    assert_eq!(seen.items, count, "items lost or repeated");
    let w = warnings(&report);
    let how = if displaced {
        "displacing the connected primary"
    } else {
        "after the primary was lost"
    };
    assert!(w.contains(how), "{w}");
}

#[test]
fn a_zombie_primary_declared_silent_is_refused_when_it_wakes() {
    zombie(false, None);
}

#[test]
fn a_zombie_primary_still_connected_is_displaced_and_refused_when_it_wakes() {
    zombie(true, None);
}

#[test]
fn a_zombie_primary_declared_silent_is_refused_over_the_secure_channel() {
    zombie(false, secure());
}

#[test]
fn a_zombie_primary_still_connected_is_displaced_over_the_secure_channel() {
    zombie(true, secure());
}

#[test]
fn fenced_and_unfenced_ends_do_not_mix() {
    // A fenced sender to an ordinary receiver: refused (the receiver waits on for a sender it
    // can take, and fails when its connect timeout ends, naming the parameter).
    let (rx, addr, _) = receiver::<u64>(
        make,
        TcpOptions {
            connect_timeout: Duration::from_secs(1),
            ..fast()
        },
    );
    let fence = Fence::named("mix-primary");
    fence.promote(1);
    let opts = TcpOptions {
        fence: Some(fence),
        resume_timeout: Duration::ZERO,
        ..fast()
    };
    let rx = spawn(rx);
    let tx = spawn(replica(1000, None, &format!("tcp://{addr}"), opts));
    let err = rx.join().unwrap().expect_err("refused");
    assert!(err.to_string().contains("fenced = true"), "{err}");
    assert!(tx.join().unwrap().is_err());

    // An ordinary sender to a fenced receiver: refused, and the receiver waits on for a
    // fenced one (here: none comes, and its connect timeout ends it).
    let (rx, addr, _) = fenced_receiver(TcpOptions {
        connect_timeout: Duration::from_millis(500),
        ..fast()
    });
    let rx = spawn(rx);
    let tx = spawn(replica(
        1000,
        None,
        &format!("tcp://{addr}"),
        TcpOptions {
            resume_timeout: Duration::ZERO,
            ..fast()
        },
    ));
    let err = tx.join().unwrap().expect_err("refused");
    assert!(err.to_string().contains("fenced senders only"), "{err}");
    assert!(rx.join().unwrap().is_err(), "no fenced sender came");
}

#[test]
fn a_replica_sink_gives_a_dead_receiver_up_and_the_other_replica_gets_everything() {
    let count = 600_000;
    // Two receivers of one output: the replica that dies, and the one that lives.
    let (live, live_addr, live_seen) = receiver::<u64>(make, fast());
    let dying = TcpSource::<u64>::new("tcp-listen://127.0.0.1:0", fast()).unwrap();
    let dying_addr = dying.local_addr().unwrap();
    let mut d = Graph::new();
    let a = d.add("rx", dying).unwrap();
    let b = d.add("die", DieAfter { left: count / 4 }).unwrap();
    d.connect(a, "out", b, "in").unwrap();
    let replica_opts = TcpOptions {
        replica: true,
        ..fast()
    };
    let mut g = Graph::new();
    let src = g
        .add(
            "count",
            Paced {
                count,
                next: 0,
                fail_at: None,
            },
        )
        .unwrap();
    for (name, addr) in [("to_live", live_addr), ("to_dying", dying_addr)] {
        let sink = TcpSink::<u64>::new(&format!("tcp://{addr}"), replica_opts.clone()).unwrap();
        let k = g.add(name, sink).unwrap();
        g.connect(src, "out", k, "in").unwrap();
    }
    let live = spawn(live);
    let dying = spawn(d);
    let tx = spawn(g);
    assert!(dying.join().unwrap().is_err(), "the replica died");
    let report = tx.join().unwrap().expect("the sender ends well");
    live.join()
        .unwrap()
        .expect("the live replica ends with the stream");
    let seen = live_seen.lock().unwrap();
    assert_eq!((seen.items, seen.first_bad), (count, None));
    let w = warnings(&report);
    assert!(w.contains("gave its receiver"), "{w}");
}

/// Takes `left` items, then fails (a replica's process dying).
struct DieAfter {
    left: u64,
}

impl Node for DieAfter {
    fn ports(&self) -> Ports {
        Ports::new().input::<u64>("in")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u64>(0)?;
        let Some(w) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        let n = (w.len() as u64).min(self.left) as usize;
        input.consume(n);
        self.left -= n as u64;
        if self.left == 0 {
            return Err(NodeError::msg("this replica dies"));
        }
        Ok(Work::Progress)
    }
}
