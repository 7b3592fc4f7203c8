//! The test etcd shared by the etcd and worker-lease tests: one member per test on free ports
//! of 127.0.0.1, with the local cluster's timing, its data directory removed afterwards.
#![allow(dead_code)]

use sluice_cluster::etcd::{Etcd, EtcdOptions, EtcdServer};
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
