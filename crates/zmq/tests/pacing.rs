//! A socket that sends rarely and never waits (a sink fed slowly) still looks after its
//! connections at every call: a subscriber that connects is accepted, and gets messages,
//! within a few sends. (The socket reads the precise clock only when the coarse one ticked, so
//! a fast sender does not pay for it at every message; a slow one must not pay with delays.)

use sluice_zmq::zmtp::SocketType;
use sluice_zmq::{Sent, Socket, SocketOptions};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The time between sends.
const EVERY: Duration = Duration::from_millis(20);

/// A subscriber that connects once `sent` reaches `after`, notes in `connected_at` the send
/// after which it did, and reads until `done` (when it is set) or else until its first
/// message, whose index it returns.
fn subscriber(
    url: String,
    after: u64,
    sent: Arc<AtomicU64>,
    connected_at: Arc<AtomicU64>,
    done: Option<Arc<AtomicBool>>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        while sent.load(Ordering::Acquire) < after {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut sub = Socket::new(SocketType::Sub, &url, false, SocketOptions::default()).unwrap();
        connected_at.store(sent.load(Ordering::Acquire), Ordering::Release);
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut first = None;
        loop {
            let stop = done
                .as_ref()
                .map_or(first.is_some(), |d| d.load(Ordering::Acquire));
            if stop {
                return first.expect("a message came");
            }
            assert!(Instant::now() < deadline, "no end in 20 s");
            let Some(frame) = sub.next_frame().unwrap() else {
                sub.wait(Duration::from_millis(10), false);
                continue;
            };
            let mut body = vec![0u8; frame.len as usize];
            let mut got = 0;
            while got < body.len() {
                let k = sub.read_into(&mut body[got..]).unwrap();
                if k == 0 {
                    sub.wait(Duration::from_millis(10), false);
                }
                got += k;
            }
            first.get_or_insert(u64::from_le_bytes(
                body.try_into().expect("an 8-byte index"),
            ));
        }
    })
}

#[test]
fn a_publisher_sending_every_20_ms_without_waiting_takes_a_new_subscriber_within_a_few_sends() {
    let mut publisher = Socket::new(
        SocketType::Pub,
        "tcp://127.0.0.1:0",
        true,
        SocketOptions::default(),
    )
    .unwrap();
    let url = format!("tcp://{}", publisher.local_addr().unwrap());
    let sent = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    // One subscriber from the start, so that the publisher has a peer throughout (a socket
    // without peers reads the clock at every call anyway), and one that comes later.
    let early = subscriber(
        url.clone(),
        0,
        sent.clone(),
        Arc::new(AtomicU64::new(0)),
        Some(done.clone()),
    );
    let connected_at = Arc::new(AtomicU64::new(u64::MAX));
    let late = subscriber(url, 40, sent.clone(), connected_at.clone(), None);
    // Only `send`, as a sink's work does between its inputs: no wait, no poll.
    let mut i = 0u64;
    while !late.is_finished() && i < 500 {
        let body = i.to_le_bytes();
        let frame: [&[u8]; 1] = [&body];
        assert!(matches!(publisher.send(&[&frame]).unwrap(), Sent::Done));
        i += 1;
        sent.store(i, Ordering::Release);
        std::thread::sleep(EVERY);
    }
    done.store(true, Ordering::Release);
    let first = late.join().unwrap();
    early.join().unwrap();
    let connected = connected_at.load(Ordering::Acquire);
    assert!(
        first >= connected && first - connected <= 10,
        "the late subscriber connected after send {connected} and got send {first} first: accepting it waited for {} sends",
        first.saturating_sub(connected)
    );
}
