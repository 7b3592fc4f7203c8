//! The client against an etcd secured as local clusters run it (TLS with client certificates
//! required, authentication on, a member user limited to one prefix), on 127.0.0.1. Each test
//! plays a client an attacker could be: no certificate, a certificate but no login, another
//! user's login, a certificate from another CA.

use sluice_cluster::etcd::pki::EtcdPki;
use sluice_cluster::etcd::{auth, Etcd, EtcdAccess, EtcdError, Login, CA_FILE};
use std::time::Duration;

mod common;

use common::TestEtcd;

#[test]
fn the_member_reads_and_writes_its_prefix_only() {
    let common::Secured { etcd, member, .. } = TestEtcd::secured("member", None);
    let c = Etcd::secure(&etcd.url(), member).unwrap();
    c.put("/sluice/t/x", b"1", None).unwrap();
    assert_eq!(c.get("/sluice/t/x").unwrap(), Some(b"1".to_vec()));
    // Leases and fencing: a key created under a lease, its create revision read back.
    let lease = c.grant(5).unwrap();
    assert!(c
        .put_if_absent("/sluice/t/primary", b"h1", Some(lease))
        .unwrap());
    let entry = c.get_entry("/sluice/t/primary").unwrap().unwrap();
    assert!(entry.create_revision > 0 && entry.lease == Some(lease));
    assert!(c.keep_alive_once(lease).unwrap() >= 1);
    c.revoke(lease).unwrap();
    for key in ["/sluice/u/x", "x", "/sluice/t"] {
        let e = c.put(key, b"2", None).unwrap_err().to_string();
        assert!(e.contains("permission denied"), "{key}: {e}");
    }
}

#[test]
fn a_client_without_a_certificate_is_refused() {
    let common::Secured { etcd, pki, .. } = TestEtcd::secured("nocert", None);
    let ca = std::fs::read(pki.client_dir.join(CA_FILE)).unwrap();
    let login = Login::generate("member").unwrap();
    let no_cert = EtcdAccess::from_pem(&ca, None, Some(login)).unwrap();
    let c = Etcd::secure(&etcd.url(), no_cert).unwrap();
    let e = c.get("/sluice/t/x").unwrap_err();
    assert!(
        matches!(e, EtcdError::Tls { .. } | EtcdError::Io { .. }),
        "a client without a certificate got past TLS: {e}"
    );
    // Plain HTTP to the TLS port is no etcd gateway either.
    let plain = etcd.url().replace("https://", "http://");
    let e = Etcd::new(&plain).unwrap().get("/sluice/t/x").unwrap_err();
    assert!(!matches!(e, EtcdError::LeaseExpired { .. }), "{e}");
    assert!(
        Etcd::new(&plain)
            .unwrap()
            .put("/sluice/t/x", b"evil", None)
            .is_err(),
        "a plain-HTTP write went through"
    );
}

#[test]
fn a_certificate_from_another_ca_is_refused_and_the_server_is_verified() {
    let common::Secured { etcd, member, .. } = TestEtcd::secured("otherca", None);
    let other_dir = etcd.dir.join("other");
    let other = EtcdPki::create(&other_dir, "other", &["127.0.0.1".parse().unwrap()]).unwrap();
    // Another CA's client certificate, the right CA to verify the server: etcd refuses.
    let ca = std::fs::read(etcd.dir.join("pki").join(CA_FILE)).unwrap();
    let cert = std::fs::read(other.client_dir.join("client.pem")).unwrap();
    let key = std::fs::read(other.client_dir.join("client.key")).unwrap();
    let login = member.login().cloned();
    let forged = EtcdAccess::from_pem(&ca, Some((&cert, &key)), login.clone()).unwrap();
    let e = Etcd::secure(&etcd.url(), forged)
        .unwrap()
        .put("/sluice/t/x", b"evil", None)
        .unwrap_err();
    assert!(
        matches!(e, EtcdError::Tls { .. } | EtcdError::Io { .. }),
        "{e}"
    );
    // A client that trusts another CA does not talk to this etcd (no login sent).
    let wrong_ca = EtcdAccess::load(&other.client_dir)
        .unwrap()
        .with_login(login);
    let e = Etcd::secure(&etcd.url(), wrong_ca)
        .unwrap()
        .get("/sluice/t/x")
        .unwrap_err();
    assert!(matches!(e, EtcdError::Tls { .. }), "{e}");
    assert!(e.to_string().contains("certificate"), "{e}");
}

#[test]
fn a_certificate_without_a_login_or_with_another_user_cannot_write() {
    let common::Secured {
        etcd, member, root, ..
    } = TestEtcd::secured("nologin", None);
    let writer = Etcd::secure(&etcd.url(), member.clone()).unwrap();
    writer
        .put("/sluice/t/worker", b"10.0.0.2:7000", None)
        .unwrap();

    // The cluster's certificate, no token.
    let anonymous = Etcd::secure(&etcd.url(), member.with_login(None)).unwrap();
    for result in [
        anonymous.put("/sluice/t/worker", b"evil", None).map(drop),
        anonymous.get("/sluice/t/worker").map(drop),
        anonymous.delete_prefix("/sluice/t/").map(drop),
    ] {
        let e = result.unwrap_err().to_string();
        assert!(
            e.contains("user name is empty") || e.contains("permission denied"),
            "{e}"
        );
    }

    // The member's name with a wrong password.
    let wrong_password = Login::new("member", "not-the-password").unwrap();
    let e = Etcd::secure(&etcd.url(), member.with_login(Some(wrong_password)))
        .unwrap()
        .put("/sluice/t/worker", b"evil", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("authentication failed"), "{e}");
    // Another user, made by root, whose role has another cluster's prefix.
    let admin = Etcd::secure(&etcd.url(), root).unwrap();
    let other = Login::generate("other").unwrap();
    auth::add_user(&admin, &other).unwrap();
    auth::add_role(&admin, "other").unwrap();
    auth::grant_prefix(&admin, "other", "/sluice/u/").unwrap();
    auth::grant_role(&admin, "other", "other").unwrap();
    let intruder = Etcd::secure(&etcd.url(), member.with_login(Some(other))).unwrap();
    intruder.put("/sluice/u/worker", b"mine", None).unwrap();
    for result in [
        intruder.put("/sluice/t/worker", b"evil", None).map(drop),
        intruder.get("/sluice/t/worker").map(drop),
        intruder.delete("/sluice/t/worker").map(drop),
    ] {
        let e = result.unwrap_err().to_string();
        assert!(e.contains("permission denied"), "{e}");
    }
    assert_eq!(
        writer.get("/sluice/t/worker").unwrap(),
        Some(b"10.0.0.2:7000".to_vec()),
        "the record was changed"
    );
}

#[test]
fn an_expired_token_is_renewed_by_logging_in_again() {
    let common::Secured { etcd, member, .. } = TestEtcd::secured("token", Some(1));
    let c = Etcd::secure(&etcd.url(), member).unwrap();
    c.put("/sluice/t/a", b"1", None).unwrap();
    c.get("/sluice/t/a").unwrap();
    assert_eq!(
        c.logins(),
        1,
        "one login serves the calls while its token lives"
    );
    // Simple tokens live --auth-token-ttl seconds after their last use.
    std::thread::sleep(Duration::from_millis(2500));
    c.put("/sluice/t/a", b"2", None).unwrap();
    assert_eq!(c.logins(), 2, "the expired token was not replaced");
    assert_eq!(c.get("/sluice/t/a").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn a_host_writes_its_own_record_and_leases_only() {
    use sluice_cluster::etcd::auth::{add_host, HostGrant};
    use sluice_cluster::lease::PartitionLease;
    use sluice_cluster::membership;
    let common::Secured { etcd, root, .. } = TestEtcd::secured("hosts", None);
    let as_root = Etcd::secure(&etcd.url(), root.clone()).unwrap();
    // h1 may host its own partition; h2 its own and stand by for h1's.
    let grants = [("h1", vec!["h1"]), ("h2", vec!["h2", "h1"])];
    let mut clients = Vec::new();
    for (host, leases) in grants {
        let grant = HostGrant {
            login: Login::generate(&format!("sluice-{host}")).unwrap(),
            host: host.into(),
            leases: leases.into_iter().map(String::from).collect(),
        };
        add_host(&as_root, "/sluice/t/", &grant).unwrap();
        clients.push(Etcd::secure(&etcd.url(), root.with_login(Some(grant.login))).unwrap());
    }
    let (h1, h2) = (&clients[0], &clients[1]);
    let control = "127.0.0.1:7000".parse().unwrap();
    let _r1 = membership::register(h1, "t", "h1", control, None).unwrap();
    let _r2 = membership::register(h2, "t", "h2", control, None).unwrap();
    // h1 reads the cluster, but cannot overwrite or delete h2's record: etcd refuses.
    assert!(membership::workers(h1, "t").unwrap().contains_key("h2"));
    let record = membership::worker_key("t", "h2");
    for e in [
        h1.put(&record, b"{\"control\":\"10.6.6.6:7000\"}", None)
            .unwrap_err(),
        h1.delete(&record).unwrap_err(),
    ] {
        assert!(
            matches!(&e, EtcdError::Server { message, .. } if message.contains("permission denied")),
            "{e}"
        );
    }
    assert_eq!(membership::workers(h2, "t").unwrap()["h2"], control);
    // Leases: h2 may take h1's (its standby), h1 may not take h2's.
    let h1_key = membership::primary_key("t", "r1", "h1");
    let held = PartitionLease::try_acquire(h2, &h1_key, "h2", 2).unwrap();
    assert!(held.is_some(), "h2 stands by for h1");
    drop(held);
    let h2_key = membership::primary_key("t", "r1", "h2");
    let e = PartitionLease::try_acquire(h1, &h2_key, "h1", 2)
        .err()
        .expect("h1 may not take h2's lease");
    assert!(e.to_string().contains("permission denied"), "{e}");
    // Nor write anywhere else in the cluster's prefix (the controller's run records).
    let e = h1
        .put("/sluice/t/runs/r1/hosts/h1", b"x", None)
        .unwrap_err();
    assert!(e.to_string().contains("permission denied"), "{e}");
}
