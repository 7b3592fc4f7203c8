//! Heartbeats keep an idle connection alive; a silent peer is detected. Bounds are generous
//! and nothing here asserts a duration.

mod common;

use common::*;
use sluice_net::wire::{self, Hello, Kind, Welcome};
use sluice_net::TcpOptions;
use sluice_runtime::{Node, NodeError, Ports, Work, WorkIo};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Sends 1000 items, then nothing until `open`, then 1000 more.
struct Gated {
    open: Arc<AtomicBool>,
    next: u32,
}

impl Node for Gated {
    fn ports(&self) -> Ports {
        Ports::new().output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next == 2000 {
            return Ok(Work::Done);
        }
        if self.next == 1000 && !self.open.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(5));
            return Ok(Work::Progress);
        }
        let out = io.outputs.get::<u32>(0)?;
        let Some(space) = out.reserve(1000)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: 1000,
            });
        };
        for (k, x) in space[..1000].iter_mut().enumerate() {
            *x = self.next + k as u32;
        }
        out.commit(1000);
        self.next += 1000;
        Ok(Work::Progress)
    }
}

fn quick() -> TcpOptions {
    TcpOptions {
        heartbeat: Duration::from_millis(50),
        peer_timeout: Duration::from_millis(400),
        resume_timeout: Duration::ZERO, // a silence would fail the graph
        ..TcpOptions::default()
    }
}

#[test]
fn heartbeats_keep_an_idle_connection_alive() {
    let (rx, addr, seen) = receiver::<u32>(|i| i as u32, quick());
    let open = Arc::new(AtomicBool::new(false));
    let mut g = sluice_runtime::Graph::new();
    let a = g
        .add(
            "gated",
            Gated {
                open: open.clone(),
                next: 0,
            },
        )
        .unwrap();
    let b = g
        .add(
            "tx",
            sluice_net::TcpSink::<u32>::new(&format!("tcp://{addr}"), quick()).unwrap(),
        )
        .unwrap();
    g.connect(a, "out", b, "in").unwrap();
    let rx = spawn(rx);
    let tx = spawn(g);
    // Idle for many peer timeouts: only heartbeats cross.
    std::thread::sleep(Duration::from_secs(2));
    open.store(true, Ordering::Release);
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!((seen.items, seen.first_bad), (2000, None));
}

#[test]
fn a_silent_sender_is_detected_by_the_receiver() {
    let (rx, addr, _seen) = receiver::<u32>(|i| i as u32, quick());
    let rx = spawn(rx);
    let mut s = TcpStream::connect(addr).unwrap();
    let hello = wire::hello(&Hello {
        item_name: "u32".into(),
        item_size: 4,
        vlen: 1,
        crc: false,
        heartbeat_ms: 50,
        metadata: vec![],
        fence: None,
        messages: false,
    })
    .unwrap();
    s.write_all(&hello).unwrap();
    // Then nothing, with the connection open.
    let e = rx.join().unwrap().unwrap_err().to_string();
    assert!(e.contains("silent for"), "{e}");
    assert!(
        e.contains("(no frame, no heartbeat) at stream offset 0"),
        "{e}"
    );
    drop(s);
}

#[test]
fn a_silent_receiver_is_detected_by_the_sender() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut hello = [0u8; 12];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(hello[5], Kind::Hello as u8);
        let len = u32::from_le_bytes(hello[8..12].try_into().unwrap()) as usize;
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).unwrap();
        s.write_all(&wire::welcome(&Welcome {
            resume: 0,
            credit: 1 << 40,
            max_items: 1 << 16,
            heartbeat_ms: 50,
            history: 0,
            messages: None,
        }))
        .unwrap();
        // Keep the connection open, read nothing more, say nothing more.
        std::thread::sleep(Duration::from_secs(30));
        drop(s);
    });
    let tx = sender(
        Counter::new(100_000, |i| i as u32, vec![]),
        &format!("tcp://{addr}"),
        quick(),
    );
    let e = tx.run(&Default::default()).unwrap_err().to_string();
    assert!(e.contains("silent for"), "{e}");
    assert!(e.contains(&addr.to_string()), "{e}");
    drop(peer);
}
