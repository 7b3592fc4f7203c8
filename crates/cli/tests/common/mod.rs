//! What the tests that bring up a local cluster share.

use std::path::Path;
use std::process::Command;

/// Fails `test` (its name, for the message) unless this runs as root with `ip` and etcd
/// installed: a local cluster is network namespaces and an etcd (CI runs as root;
/// `scripts/setup.sh` installs iproute2 and etcd-server).
pub fn require_root_iproute2_and_etcd(test: &str) {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    assert_eq!(
        uid, 0,
        "the {test} test makes network namespaces and needs root (CI runs as root)"
    );
    assert!(
        Command::new("ip").arg("-V").output().is_ok(),
        "the {test} test needs `ip` (package iproute2; scripts/setup.sh installs it)"
    );
    assert!(
        Path::new("/usr/bin/etcd").exists(),
        "the {test} test needs etcd (package etcd-server; scripts/setup.sh installs it)"
    );
}
