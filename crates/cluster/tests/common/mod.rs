//! The test etcd shared by the etcd and worker-lease tests: one member per test on free ports
//! of 127.0.0.1, with the local cluster's timing, its data directory removed afterwards.
#![allow(dead_code)]

use sluice_cluster::etcd::pki::EtcdPki;
use sluice_cluster::etcd::{auth, Etcd, EtcdAccess, EtcdOptions, EtcdServer, Login};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;

/// A free port on 127.0.0.1 (bound, then released).
pub fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
}

/// A running etcd and its temporary directory, removed on drop (also when a test fails).
pub struct TestEtcd {
    pub server: Option<EtcdServer>,
    pub dir: PathBuf,
}

impl TestEtcd {
    pub fn start(test: &str) -> TestEtcd {
        let dir = std::env::temp_dir().join(format!("sluice-etcd-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut options = EtcdOptions::new(test, dir.join("data"), free_addr(), free_addr());
        options.heartbeat_ms = 50;
        options.election_timeout_ms = 250;
        let server = EtcdServer::start(options).unwrap_or_else(|e| panic!("{e}"));
        TestEtcd {
            server: Some(server),
            dir,
        }
    }

    /// An etcd with TLS (client certificates required) and authentication on: user `root`,
    /// and user `member` whose role may read and write `/sluice/t/` only. Returns it, the
    /// member's access (certificate and login) and the certificates; root's access is
    /// [`Secured::root`].
    pub fn secured(test: &str, token_ttl_s: Option<u32>) -> Secured {
        let dir = std::env::temp_dir().join(format!("sluice-etcd-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pki = EtcdPki::create(&dir.join("pki"), test, &["127.0.0.1".parse().unwrap()])
            .unwrap_or_else(|e| panic!("{e}"));
        let tls_only = EtcdAccess::load(&pki.client_dir).unwrap_or_else(|e| panic!("{e}"));
        let mut options = EtcdOptions::new(test, dir.join("data"), free_addr(), free_addr());
        options.heartbeat_ms = 50;
        options.election_timeout_ms = 250;
        options.tls = Some((pki.server.clone(), tls_only.clone()));
        options.auth_token_ttl_s = token_ttl_s;
        let server = EtcdServer::start(options).unwrap_or_else(|e| panic!("{e}"));
        let root = Login::generate("root").unwrap();
        let member = Login::generate("member").unwrap();
        auth::enable(&server.client(), &root, &member, "/sluice/t/")
            .unwrap_or_else(|e| panic!("{e}"));
        let etcd = TestEtcd {
            server: Some(server),
            dir,
        };
        Secured {
            etcd,
            member: tls_only.with_login(Some(member)),
            root: tls_only.with_login(Some(root)),
            pki,
        }
    }

    pub fn url(&self) -> String {
        self.server.as_ref().unwrap().url().to_string()
    }

    pub fn client(&self) -> Etcd {
        self.server.as_ref().unwrap().client()
    }
}

impl Drop for TestEtcd {
    fn drop(&mut self) {
        drop(self.server.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A secured test etcd and its credentials.
pub struct Secured {
    pub etcd: TestEtcd,
    pub member: EtcdAccess,
    pub root: EtcdAccess,
    pub pki: EtcdPki,
}
