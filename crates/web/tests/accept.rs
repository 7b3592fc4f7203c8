//! The console's accept path: a flood of silent connections from one address beyond the cap
//! per address does not keep a request from another address from being answered. Every
//! limit is set to at most 1 s; every wait is bounded.

use sluice_net::accept::AcceptOptions;
use sluice_runtime::{Graph, Monitor, Progress, StopHandle};
use sluice_web::{Console, ConsoleOptions, RunHandles};
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::time::Duration;

/// A connection to `to` from `source` (any address of 127/8: Linux routes them all to the
/// loopback interface), as a host other than 127.0.0.1 would make it.
fn connect_from(source: Ipv4Addr, to: SocketAddr) -> TcpStream {
    use rustix::net::{bind, connect, socket, AddressFamily, SocketType};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    bind(&fd, &SocketAddrV4::new(source, 0)).unwrap();
    connect(&fd, &to).unwrap();
    TcpStream::from(fd)
}

/// The accept limits of these tests: a 1 s budget, 4 pending connections per address.
fn limits() -> AcceptOptions {
    AcceptOptions {
        budget: Duration::from_secs(1),
        max_pending: 64,
        max_pending_per_ip: 4,
        log_interval: Duration::from_millis(100),
    }
}

/// 48 silent connections from 127.0.0.2: more than a server serves at once
/// (`MAX_CONNECTIONS`, 32), so that were each given a place, a request would find none.
fn flood(addr: SocketAddr) -> Vec<TcpStream> {
    (0..48)
        .map(|_| connect_from(Ipv4Addr::new(127, 0, 0, 2), addr))
        .collect()
}

/// `GET path` from 127.0.0.1: the whole answer, which must be a 200.
fn get_ok(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "{:?}",
        &text[..text.len().min(200)]
    );
    text
}

#[test]
fn silent_connections_from_one_address_do_not_keep_the_console_from_answering() {
    let g = Graph::new();
    let handles = RunHandles {
        control: g.control_handle(),
        stop: StopHandle::new(),
        progress: Progress::new(),
        monitor: Monitor::new(),
        title: "flooded".into(),
    };
    let console = Console::start_with_limits(
        ConsoleOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            token: None,
        },
        None,
        limits(),
        handles,
    )
    .unwrap();
    let addr = console.addr();
    let flood = flood(addr);
    let text = get_ok(addr, "/");
    assert!(text.contains("<script src=\"/console.js\"></script>"));
    // Every silent connection is closed: at once over the cap, or when its budget passed
    // (after a 408 when the console still could write it).
    for mut c in flood {
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut told = Vec::new();
        if let Err(e) = c.read_to_end(&mut told) {
            assert!(
                !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
                "a silent connection still open: {e}"
            );
        }
    }
}

/// The same for the `/metrics` server of `sluice worker --metrics`: it shares the console's
/// accept path.
#[test]
fn silent_connections_from_one_address_do_not_keep_the_metrics_server_from_answering() {
    let runs: sluice_web::RunsSource = std::sync::Arc::new(Vec::new);
    let server = sluice_web::MetricsServer::start_with_limits(
        "127.0.0.1:0".parse().unwrap(),
        limits(),
        runs,
    )
    .unwrap();
    let addr = server.addr();
    // Each used to take a place and wait 5 s for its request.
    let _flood = flood(addr);
    get_ok(addr, "/metrics");
}
