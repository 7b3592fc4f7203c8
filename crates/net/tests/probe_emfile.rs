//! Out of file descriptors: the probe's plaintext listeners pass over a failed `accept`
//! (EMFILE) and take the connection waiting in the backlog once descriptors are free again,
//! instead of ending the probe. Alone in its test binary: it lowers the process's descriptor
//! limit.

mod common;

use common::OutOfDescriptors;
use sluice_net::probe::Relay;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

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
    // One descriptor for the sender; none is left for the relay's accept.
    let out = OutOfDescriptors::take(1);
    let mut sender = TcpStream::connect(from).unwrap();
    // The relay polls every 50 ms: it meets EMFILE several times meanwhile.
    std::thread::sleep(Duration::from_millis(300));
    drop(out);
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
