//! The etcd client against a real etcd (Debian's `etcd-server`) on 127.0.0.1, one member per
//! test on free ports with its own data directory, removed afterwards.

use sluice_cluster::etcd::{Etcd, EtcdError, EtcdOptions, EtcdServer, KeepAlive};
use sluice_cluster::lease::{Campaign, CampaignEvent, PartitionLease};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

mod common;

use common::{free_addr, TestEtcd};

#[test]
fn put_get_prefix_delete() {
    let etcd = TestEtcd::start("kv");
    let c = etcd.client();
    assert_eq!(c.get("a/x").unwrap(), None);
    c.put("a/x", b"1", None).unwrap();
    c.put("a/y", &[0, 255, 10, 13], None).unwrap();
    c.put("b", b"", None).unwrap();
    assert_eq!(c.get("a/x").unwrap(), Some(b"1".to_vec()));
    assert_eq!(c.get("b").unwrap(), Some(Vec::new()));
    let first = c.get_entry("a/x").unwrap().unwrap();
    c.put("a/x", b"2", None).unwrap();
    let second = c.get_entry("a/x").unwrap().unwrap();
    assert_eq!(second.value, b"2");
    assert!(second.mod_revision > first.mod_revision);
    assert_eq!(second.create_revision, first.create_revision);
    assert_eq!(
        c.get_prefix("a/").unwrap(),
        vec![
            ("a/x".to_string(), b"2".to_vec()),
            ("a/y".to_string(), vec![0, 255, 10, 13])
        ]
    );
    assert_eq!(c.delete("a/x").unwrap(), 1);
    assert_eq!(c.delete("a/x").unwrap(), 0);
    assert_eq!(c.get("a/x").unwrap(), None);
    c.put("a/z", b"3", None).unwrap();
    assert_eq!(c.delete_prefix("a/").unwrap(), 2);
    assert!(c.get_prefix("a/").unwrap().is_empty());
    assert_eq!(c.get("b").unwrap(), Some(Vec::new()), "outside the prefix");
}

#[test]
fn leased_key_expires_without_keep_alive_and_stays_with_it() {
    let etcd = TestEtcd::start("lease");
    let c = etcd.client();
    // Without renewal: the key goes when the lease expires.
    let lease = c.grant(1).unwrap();
    c.put("lease/dies", b"x", Some(lease)).unwrap();
    assert_eq!(
        c.get_entry("lease/dies").unwrap().unwrap().lease,
        Some(lease)
    );
    let started = Instant::now();
    while c.get("lease/dies").unwrap().is_some() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "a key on a lease of 1 s was still there after 10 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(matches!(
        c.keep_alive_once(lease),
        Err(EtcdError::LeaseExpired { .. })
    ));

    // With a KeepAlive: the key outlives the TTL several times over.
    let lease = c.grant(1).unwrap();
    c.put("lease/lives", b"y", Some(lease)).unwrap();
    assert!(c.keep_alive_once(lease).unwrap() >= 1);
    let keep = KeepAlive::start(c.clone(), lease, 1);
    std::thread::sleep(Duration::from_millis(3500));
    assert!(keep.is_alive(), "{:?}", keep.last_error());
    assert_eq!(c.get("lease/lives").unwrap(), Some(b"y".to_vec()));

    // Revoked under it: the key goes at once and the KeepAlive notices.
    c.revoke(lease).unwrap();
    assert_eq!(c.get("lease/lives").unwrap(), None);
    let started = Instant::now();
    while keep.is_alive() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "KeepAlive did not notice"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(keep
        .last_error()
        .unwrap()
        .contains("expired or was revoked"));
    drop(keep);
}

#[test]
fn put_if_absent_only_once() {
    let etcd = TestEtcd::start("cas");
    let c = etcd.client();
    let lease = c.grant(10).unwrap();
    assert!(c.put_if_absent("leader", b"a", Some(lease)).unwrap());
    assert!(!c.put_if_absent("leader", b"b", None).unwrap());
    assert_eq!(c.get("leader").unwrap(), Some(b"a".to_vec()));
    // Once the holder's lease is gone, the next candidate gets it.
    c.revoke(lease).unwrap();
    assert!(c.put_if_absent("leader", b"b", None).unwrap());
    assert_eq!(c.get("leader").unwrap(), Some(b"b".to_vec()));
}

#[test]
fn unreachable_etcd_is_a_quick_clear_error() {
    // A port that was just free on loopback: connection refused.
    let addr = free_addr();
    let url = format!("http://{addr}");
    let c = Etcd::new(&url).unwrap();
    let started = Instant::now();
    let e = c.get("k").unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    let text = e.to_string();
    assert!(
        matches!(e, EtcdError::Connect { .. }) && text.contains(&url) && text.contains("get k"),
        "{text}"
    );
    // A listener that never answers: the I/O timeout bounds the wait.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let c = Etcd::new(&url)
        .unwrap()
        .with_timeouts(Duration::from_millis(500), Duration::from_millis(500));
    let started = Instant::now();
    let e = c.put("k", b"v", None).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        e.to_string().contains(&url) && e.to_string().contains("put k"),
        "{e}"
    );
}

#[test]
fn a_dead_server_is_reported_with_its_log() {
    // A second member on a client port that is taken cannot bind it and exits: the error says
    // so and shows its log (the first member answering on that port is not mistaken for it).
    let etcd = TestEtcd::start("dup");
    let taken = etcd
        .server
        .as_ref()
        .unwrap()
        .url()
        .trim_start_matches("http://");
    let dir = etcd.dir.join("second");
    let options = EtcdOptions::new("second", &dir, taken.parse().unwrap(), free_addr());
    let e = EtcdServer::start(options).unwrap_err().to_string();
    assert!(e.contains("exited") && e.contains("second"), "{e}");
}

#[test]
fn a_one_second_lease_is_granted_as_one_second() {
    // The local cluster's timing (heartbeat 50 ms, election 250 ms): etcd's minimum TTL is
    // 1.5 election timeouts, so 1 s stays 1 s.
    let etcd = TestEtcd::start("ttl");
    let c = etcd.client();
    let (lease, ttl) = c.grant_with_ttl(1).unwrap();
    assert_eq!(ttl, 1);
    c.revoke(lease).unwrap();
    let held = PartitionLease::try_acquire(&c, "/sluice/t/leases/x/r", "x", 1)
        .unwrap()
        .unwrap();
    assert_eq!(held.ttl_s(), 1);
}

#[test]
fn a_held_partition_lease_is_not_taken() {
    let etcd = TestEtcd::start("plhold");
    let c = etcd.client();
    let key = "/sluice/t/leases/h2/r";
    let primary = PartitionLease::try_acquire(&c, key, "h2", 1)
        .unwrap()
        .expect("the key was free");
    assert!(primary.revision() > 0);
    assert_eq!(c.get(key).unwrap(), Some(b"h2".to_vec()));
    assert!(PartitionLease::try_acquire(&c, key, "h5", 1)
        .unwrap()
        .is_none());
    let won = Arc::new(AtomicBool::new(false));
    let w = won.clone();
    let campaign = Campaign::start(c.clone(), key, "h5", 1, move |e| {
        if let CampaignEvent::Won { .. } = e {
            w.store(true, Ordering::SeqCst);
        }
    })
    .unwrap();
    // Three TTLs: the primary's KeepAlive (renewing at TTL/3) holds it throughout.
    std::thread::sleep(Duration::from_millis(3000));
    assert!(primary.is_alive(), "{:?}", primary.last_error());
    assert!(!campaign.has_won() && !won.load(Ordering::SeqCst));
    assert!(campaign.stop().is_none());
    // Released: the key goes at once.
    primary.release().unwrap();
    assert_eq!(c.get(key).unwrap(), None);
}

/// Starts a campaign for `key` as `h5` that sends its events to the returned channel.
fn campaign(c: &Etcd, key: &str) -> (Campaign, mpsc::Receiver<CampaignEvent>) {
    let (tx, rx) = mpsc::channel();
    let campaign = Campaign::start(c.clone(), key, "h5", 1, move |e| {
        let _ = tx.send(e);
    })
    .unwrap();
    (campaign, rx)
}

/// Waits (at most `bound`) for the campaign to win; its revision and time since `since`.
fn wait_won(rx: &mpsc::Receiver<CampaignEvent>, since: Instant, bound: Duration) -> i64 {
    match rx.recv_timeout(bound.saturating_sub(since.elapsed())) {
        Ok(CampaignEvent::Won { revision, .. }) => revision,
        Ok(CampaignEvent::Error(e)) => panic!("campaign: {e}"),
        Ok(CampaignEvent::Finished) => panic!("the campaign saw the primary finished"),
        Err(_) => panic!("the standby did not win within {bound:?}"),
    }
}

#[test]
fn a_standby_does_not_take_over_a_finished_partition() {
    let etcd = TestEtcd::start("plfinish");
    let c = etcd.client();
    let key = "/sluice/t/leases/h2/r";
    let primary = PartitionLease::try_acquire(&c, key, "h2", 1)
        .unwrap()
        .unwrap();
    let (campaign, rx) = campaign(&c, key);
    std::thread::sleep(Duration::from_millis(300));
    primary.finish().unwrap();
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(2)).unwrap(),
        CampaignEvent::Finished
    );
    assert!(campaign.primary_finished() && !campaign.has_won());
    assert_eq!(c.get(key).unwrap(), None, "nobody holds the key");
    assert!(campaign.stop().is_none());
}

#[test]
fn a_standby_wins_when_the_primary_releases() {
    let etcd = TestEtcd::start("plrelease");
    let c = etcd.client();
    let key = "/sluice/t/leases/h2/r";
    let primary = PartitionLease::try_acquire(&c, key, "h2", 1)
        .unwrap()
        .unwrap();
    let old = primary.revision();
    let (campaign, rx) = campaign(&c, key);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!campaign.has_won());
    let released = Instant::now();
    primary.release().unwrap();
    let revision = wait_won(&rx, released, Duration::from_secs(2));
    assert!(revision > old, "{revision} after {old}");
    assert!(campaign.has_won() && !campaign.lease_lost());
    let entry = c.get_entry(key).unwrap().unwrap();
    assert_eq!(
        (entry.value, entry.create_revision),
        (b"h5".to_vec(), revision)
    );
    // The campaign hands over its lease, still renewed; dropping it revokes it.
    let won = campaign.stop().expect("won");
    assert_eq!(won.revision(), revision);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(won.is_alive(), "{:?}", won.last_error());
    drop(won);
    assert_eq!(c.get(key).unwrap(), None);
}

#[test]
fn a_standby_wins_when_the_primary_dies() {
    let etcd = TestEtcd::start("pldead");
    let c = etcd.client();
    let key = "/sluice/t/leases/h2/r";
    // A primary that stops renewing (killed, frozen, cut off): its key lives one TTL more.
    let lease = c.grant(1).unwrap();
    assert!(c.put_if_absent(key, b"h2", Some(lease)).unwrap());
    let died = Instant::now();
    let old = c.get_entry(key).unwrap().unwrap().create_revision;
    let (campaign, rx) = campaign(&c, key);
    // TTL + 1 s.
    let revision = wait_won(&rx, died, Duration::from_secs(2));
    assert!(revision > old, "{revision} after {old}");
    assert_eq!(c.get(key).unwrap(), Some(b"h5".to_vec()));
    // Revoked under it (as if it were cut off in turn): the winner learns it is fenced.
    let won_lease = c.get_entry(key).unwrap().unwrap().lease.unwrap();
    c.revoke(won_lease).unwrap();
    let started = Instant::now();
    while !campaign.lease_lost() {
        assert!(started.elapsed() < Duration::from_secs(5), "not noticed");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(campaign.last_error().is_some());
}

#[test]
fn an_expired_worker_registration_is_made_again() {
    use sluice_cluster::membership::{self, RegistrationEvent};
    let etcd = TestEtcd::start("reregister");
    let c = etcd.client();
    let control = "127.0.0.1:7000".parse().unwrap();
    let registration = membership::register(&c, "t", "w1", control, None).unwrap();
    let key = membership::worker_key("t", "w1");
    let lease = c.get_entry(&key).unwrap().unwrap().lease.unwrap();
    let stop = sluice_runtime::StopHandle::new();
    let (tx, rx) = mpsc::channel();
    let keeper = {
        let (c, stop) = (c.clone(), stop.clone());
        std::thread::spawn(move || {
            membership::keep_registered(registration, &c, "t", "w1", control, &stop, |e| {
                let _ = tx.send(matches!(e, RegistrationEvent::Renewed));
            })
        })
    };
    // As if etcd had let the lease expire: the key goes, the keep-alive fails.
    c.revoke(lease).unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(true));
    let again = c.get_entry(&key).unwrap().expect("registered again");
    assert_ne!(again.lease, Some(lease));
    assert!(membership::workers(&c, "t").unwrap().contains_key("w1"));
    stop.stop();
    keeper.join().unwrap();
    // Stopping revokes the registration: the key goes at once.
    assert_eq!(c.get(&key).unwrap(), None);
}
