//! A server of `/metrics` alone, for a process that runs graphs without a console (a cluster
//! worker and the partitions it runs). Same accept path, limits, `Host` check and escaping as
//! the console; loopback only, as the console's plain HTTP.

use crate::guard::Guard;
use crate::http::{self, HttpError, Request};
use crate::metrics::WatchedRun;
use crate::server::{accept_requests, dispatch, Conn};
use sluice_net::accept::AcceptOptions;
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a metrics server shows: the runs of now, asked for at every scrape.
pub type RunsSource = Arc<dyn Fn() -> Vec<WatchedRun> + Send + Sync>;

/// How long a write of an answer may block.
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
    /// Binds `bind` (loopback only) and serves the metrics of the runs `runs` answers, with
    /// the console's accept limits ([`crate::Console::start`]'s).
    pub fn start(bind: SocketAddr, runs: RunsSource) -> Result<MetricsServer, crate::ConsoleError> {
        Self::start_with_limits(bind, AcceptOptions::default(), runs)
    }

    /// As [`MetricsServer::start`], with the accept path's budget and caps given.
    pub fn start_with_limits(
        bind: SocketAddr,
        limits: AcceptOptions,
        runs: RunsSource,
    ) -> Result<MetricsServer, crate::ConsoleError> {
        if !bind.ip().is_loopback() {
            return Err(crate::ConsoleError::NotLoopback(bind));
        }
        let io = |source| crate::ConsoleError::Io { addr: bind, source };
        let listener = TcpListener::bind(bind).map_err(io)?;
        let addr = listener.local_addr().map_err(io)?;
        let acceptor = accept_requests(listener, "metrics", limits, None).map_err(io)?;
        // Nothing here takes a token; the guard is for its Host check.
        let guard = Arc::new(Guard::new(addr, String::new()));
        let closing = Arc::new(AtomicBool::new(false));
        let thread = {
            let closing = Arc::clone(&closing);
            std::thread::Builder::new()
                .name("metrics".into())
                .spawn(move || {
                    dispatch(&acceptor, &closing, "metrics server", move |conn, req| {
                        serve(conn, req, &guard, &runs)
                    })
                })
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

fn serve(mut conn: Conn, req: &Request, guard: &Guard, runs: &RunsSource) {
    let _ = conn.tcp().set_write_timeout(Some(IO_TIMEOUT));
    let mut out = std::io::BufWriter::new(&mut conn);
    if let Err(HttpError { status, reason }) = answer(req, guard, runs, &mut out) {
        let _ = http::respond(
            &mut out,
            status,
            "application/json",
            &http::error_body(&reason),
        );
    }
    let _ = out.flush();
}

fn answer(
    req: &Request,
    guard: &Guard,
    runs: &RunsSource,
    out: &mut impl Write,
) -> Result<(), HttpError> {
    guard.check_host(req)?;
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/metrics") => {
            let page = crate::metrics::render_runs(&runs());
            http::respond(
                out,
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
}
