//! Items leave promptly: a tcp_sink whose earlier items still wait for their acknowledgement
//! sends new ones as they come, without waiting for the peer's ACK. The peer here never
//! acknowledges anything; the bound is generous and nothing asserts a duration.

use sluice_net::decoder::{Decoder, Event, Need, Role};
use sluice_net::wire::{self, Welcome};
use sluice_net::{TcpOptions, TcpSink};
use sluice_runtime::{
    Graph, Node, NodeError, Ports, RunOptions, Scheduler, StopHandle, Work, WorkIo,
};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Commits one item (its index) each time `allowed` grows past what it sent.
struct OnDemand {
    allowed: Arc<AtomicU64>,
    next: u64,
}

impl Node for OnDemand {
    fn ports(&self) -> Ports {
        Ports::new().output::<u64>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if io.stop_requested() {
            return Ok(Work::Done);
        }
        if self.next >= self.allowed.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
            return Ok(Work::Progress);
        }
        let out = io.outputs.get::<u64>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        space[0] = self.next;
        out.commit(1);
        self.next += 1;
        Ok(Work::Progress)
    }
}

#[test]
fn new_items_go_out_while_earlier_ones_await_acknowledgement() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let allowed = Arc::new(AtomicU64::new(1));
    let got = Arc::new(AtomicU64::new(0));
    // The peer: welcomes with ample credit, then reads DATA frames and never sends an ACK.
    let peer = {
        let got = got.clone();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            let mut d = Decoder::new(Role::Receiver, "sink", 1 << 20, Some(("u64", 8)), 0);
            let mut payload = vec![0u8; 1 << 16];
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(20) {
                let n = match d.need() {
                    Need::Control(n) => match s.read(&mut d.control_space()[..n]) {
                        Ok(0) => return,
                        Ok(k) => {
                            if let Some(Event::Hello(_)) = d.control_filled(k).unwrap() {
                                s.write_all(&wire::welcome(&Welcome {
                                    resume: 0,
                                    credit: 1 << 40,
                                    max_items: 1 << 10,
                                    history: 0,
                                    heartbeat_ms: 1000,
                                    messages: None,
                                }))
                                .unwrap();
                            }
                            continue;
                        }
                        Err(_) => continue,
                    },
                    Need::Payload(n) => n.min(payload.len()),
                };
                match s.read(&mut payload[..n]) {
                    Ok(0) => return,
                    Ok(k) => {
                        if let Some(Event::DataEnd { offset, items }) =
                            d.payload_filled(&payload[..k]).unwrap()
                        {
                            got.store(offset + u64::from(items), Ordering::Release);
                        }
                    }
                    Err(_) => continue,
                }
            }
        })
    };
    let stop = StopHandle::new();
    let graph = {
        let mut g = Graph::new();
        let a = g
            .add(
                "src",
                OnDemand {
                    allowed: allowed.clone(),
                    next: 0,
                },
            )
            .unwrap();
        let opts = TcpOptions {
            resume_timeout: Duration::ZERO,
            ..TcpOptions::default()
        };
        let b = g
            .add(
                "tx",
                TcpSink::<u64>::new(&format!("tcp://{addr}"), opts).unwrap(),
            )
            .unwrap();
        g.connect(a, "out", b, "in").unwrap();
        g
    };
    let run = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            // One thread for both nodes, as a reflector or the probe runs them.
            graph.run(&RunOptions {
                scheduler: Scheduler::Pooled(1),
                stop: Some(stop),
                deadlock_timeout: Duration::from_secs(60),
                ..RunOptions::default()
            })
        })
    };
    // Item after item, each only once the previous one arrived: none is ever acknowledged.
    for k in 1..=20u64 {
        allowed.store(k, Ordering::Release);
        let start = Instant::now();
        while got.load(Ordering::Acquire) < k {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "item {} never left the sink while {} earlier ones await their ACK",
                k - 1,
                k - 1
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    stop.stop();
    drop(run);
    drop(peer);
}
