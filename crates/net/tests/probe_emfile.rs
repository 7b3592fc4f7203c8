//! Out of file descriptors: the probe's plaintext listeners pass over a failed `accept`
//! (EMFILE) and take the connection waiting in the backlog once descriptors are free again,
//! instead of ending the probe. Alone in its test binary: it lowers the process's descriptor
//! limit.

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use sluice_net::probe::Relay;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

/// Puts the descriptor limit back, also when the test fails.
struct Restore(Rlimit);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = setrlimit(Resource::Nofile, self.0);
    }
}

#[test]
fn a_relay_out_of_descriptors_accepts_once_they_are_free() {
    let relay = Relay::new(
        "tcp-listen://127.0.0.1:0",
        "tcp-listen://127.0.0.1:0",
        Duration::ZERO,
        Duration::from_secs(10),
    )
    .unwrap();
    let (from, to) = (relay.from_addr().unwrap(), relay.to_addr().unwrap());
    let running = std::thread::spawn(move || relay.run());
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
    // One descriptor for the sender; none is left for the relay's accept.
    drop(fill.pop());
    let mut sender = TcpStream::connect(from).unwrap();
    // The relay polls every 50 ms: it meets EMFILE several times meanwhile.
    std::thread::sleep(Duration::from_millis(300));
    drop(fill);
    drop(restore);
    let mut receiver = TcpStream::connect(to).expect("the relay's listener lives on");
    receiver
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    sender.write_all(b"through").unwrap();
    sender.shutdown(Shutdown::Write).unwrap();
    let mut got = Vec::new();
    receiver.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"through");
    receiver.shutdown(Shutdown::Write).unwrap();
    let stats = running
        .join()
        .unwrap()
        .expect("EMFILE on accept is transient");
    assert_eq!((stats.forward, stats.back), (7, 0));
}
