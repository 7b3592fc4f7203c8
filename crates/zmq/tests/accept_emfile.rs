//! Out of file descriptors: `accept` fails with EMFILE, and a binding socket logs it, pauses
//! accepting and serves on; the connection waiting in the backlog is taken once descriptors
//! are free again. Alone in its test binary: it lowers the process's descriptor limit.

mod common;

use common::recv_msg;
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use sluice_zmq::zmtp::{self, SocketType};
use sluice_zmq::{Socket, SocketOptions};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(10);

/// Puts the descriptor limit back, also when the test fails.
struct Restore(Rlimit);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = setrlimit(Resource::Nofile, self.0);
    }
}

#[test]
fn emfile_on_accept_is_transient() {
    let opts = SocketOptions {
        accept_backoff: Duration::from_millis(20),
        log_interval: Duration::from_millis(100),
        ..SocketOptions::default()
    };
    let mut s = Socket::new(SocketType::Pull, "tcp://127.0.0.1:0", true, opts).unwrap();
    let addr = s.local_addr().unwrap();
    let old = getrlimit(Resource::Nofile);
    let restore = Restore(old);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(256),
            maximum: old.maximum,
        },
    )
    .unwrap();
    let mut fill = Vec::new();
    for _ in 0..4096 {
        match std::fs::File::open("/dev/null") {
            Ok(f) => fill.push(f),
            Err(e) if e.raw_os_error() == Some(24) => break, // EMFILE
            Err(e) => panic!("open /dev/null: {e}"),
        }
    }
    // One descriptor for the peer; none is left for accept.
    drop(fill.pop());
    let mut peer = TcpStream::connect(addr).unwrap();
    let mut hello = zmtp::greeting().to_vec();
    hello.extend_from_slice(&zmtp::ready(SocketType::Push));
    hello.extend_from_slice(&[0, 3, b'a', b'b', b'c']);
    peer.write_all(&hello).unwrap();
    let start = Instant::now();
    while s.accept_failures() == 0 {
        assert!(start.elapsed() < LIMIT, "accept never failed");
        assert_eq!(s.next_frame().expect("EMFILE is transient"), None);
        s.wait(Duration::from_millis(5), false);
    }
    drop(fill);
    drop(restore);
    assert_eq!(recv_msg(&mut s, LIMIT), vec![b"abc".to_vec()]);
    drop(peer);
}
