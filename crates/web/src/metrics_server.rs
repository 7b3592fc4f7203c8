//! A server of `/metrics` alone, for a process that runs graphs without a console (a cluster
//! worker and the partitions it runs). Same limits, `Host` check and escaping as the console;
//! loopback only, as the console's plain HTTP.

use crate::guard::Guard;
use crate::http::{self, HttpError};
use crate::metrics::WatchedRun;
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a metrics server shows: the runs of now, asked for at every scrape.
pub type RunsSource = Arc<dyn Fn() -> Vec<WatchedRun> + Send + Sync>;

/// How long a client may take to send its request, and a write may block.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// A running `/metrics` server; dropping it stops the server.
pub struct MetricsServer {
    addr: SocketAddr,
    closing: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetricsServer({})", self.addr)
    }
}

impl MetricsServer {
    /// Binds `bind` (loopback only) and serves the metrics of the runs `runs` answers.
    pub fn start(bind: SocketAddr, runs: RunsSource) -> Result<MetricsServer, crate::ConsoleError> {
        if !bind.ip().is_loopback() {
            return Err(crate::ConsoleError::NotLoopback(bind));
        }
        let io = |source| crate::ConsoleError::Io { addr: bind, source };
        let listener = TcpListener::bind(bind).map_err(io)?;
        let addr = listener.local_addr().map_err(io)?;
        listener.set_nonblocking(true).map_err(io)?;
        // Nothing here takes a token; the guard is for its Host check.
        let guard = Guard::new(addr, String::new());
        let closing = Arc::new(AtomicBool::new(false));
        let thread = {
            let closing = Arc::clone(&closing);
            std::thread::Builder::new()
                .name("metrics".into())
                .spawn(move || accept_loop(listener, guard, runs, closing))
                .map_err(io)?
        };
        Ok(MetricsServer {
            addr,
            closing,
            thread: Some(thread),
        })
    }

    /// The address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.closing.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: TcpListener, guard: Guard, runs: RunsSource, closing: Arc<AtomicBool>) {
    let active = Arc::new(AtomicUsize::new(0));
    let guard = Arc::new(guard);
    while !closing.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                if active.fetch_add(1, Ordering::AcqRel) >= crate::server::MAX_CONNECTIONS {
                    active.fetch_sub(1, Ordering::AcqRel);
                    let mut stream = stream;
                    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
                    let body = http::error_body("too many connections; try again");
                    let _ = http::respond(&mut stream, 503, "application/json", &body);
                    continue;
                }
                let (conn_guard, conn_runs, conn_active) =
                    (guard.clone(), runs.clone(), active.clone());
                let spawned = std::thread::Builder::new()
                    .name("metrics-conn".into())
                    .spawn(move || {
                        serve(stream, &conn_guard, &conn_runs);
                        conn_active.fetch_sub(1, Ordering::AcqRel);
                    });
                if spawned.is_err() {
                    active.fetch_sub(1, Ordering::AcqRel);
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn serve(stream: TcpStream, guard: &Guard, runs: &RunsSource) {
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut out = std::io::BufWriter::new(write_half);
    let mut reader = BufReader::new(stream);
    let result = http::parse_request(&mut reader).and_then(|req| {
        guard.check_host(&req)?;
        match (req.method.as_str(), req.path.as_str()) {
            ("GET", "/metrics") => {
                let page = crate::metrics::render_runs(&runs());
                http::respond(
                    &mut out,
                    200,
                    "text/plain; version=0.0.4; charset=utf-8",
                    page.as_bytes(),
                )
                .map_err(|e| HttpError::new(500, e.to_string()))
            }
            (_, "/metrics") => Err(HttpError::new(405, "/metrics is read with GET")),
            _ => Err(HttpError::new(
                404,
                "no such page; this server has only /metrics",
            )),
        }
    });
    if let Err(HttpError { status, reason }) = result {
        let _ = http::respond(
            &mut out,
            status,
            "application/json",
            &http::error_body(&reason),
        );
    }
    let _ = out.flush();
}
