//! The console's server: connections come through the accept path every listener shares
//! ([`sluice_net::accept::Acceptor`]), which reads each one's TLS handshake and request
//! within a budget, capped overall and per source address, and passes over transient
//! `accept` errors (out of descriptors); a dispatcher thread then serves each parsed request
//! on a short-lived thread of its own (at most [`MAX_CONNECTIONS`] at once), with read and
//! write timeouts, and everything stops on drop. A flood of silent connections thus costs
//! the flooding address its own places, not the console.
//!
//! No graph thread ever waits on the web side: statistics are relaxed loads, taps are lossy
//! readers the writers never wait for, and a parameter change waits (on the connection's own
//! thread) for the node to apply it between two `work` calls, exactly as `sluice ctl set`.

use crate::guard::Guard;
use crate::http::{self, HttpError, Request};
use sluice_net::accept::{AcceptOptions, Acceptor, Admission, Prepare};
use sluice_runtime::{ControlHandle, Monitor, Progress, StopHandle};
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Connections served at once; more get a 503 at once.
pub const MAX_CONNECTIONS: usize = 32;
/// How long a closing console waits at most for its streams' last events.
const LAST_EVENTS: Duration = Duration::from_millis(500);
/// How long a read or a write of a connection being served may block.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the dispatcher looks whether the console is closing.
const DISPATCH_WAIT: Duration = Duration::from_millis(50);

/// The handles of a run that the console watches and steers.
#[derive(Debug, Clone)]
pub struct RunHandles {
    /// Run-time parameters (the same implementation `sluice ctl set` goes through).
    pub control: ControlHandle,
    /// Stops the run gracefully.
    pub stop: StopHandle,
    /// Live item counts and times per node (give it to `RunOptions::progress`).
    pub progress: Progress,
    /// The run's edges, for taps (give it to `RunOptions::monitor`).
    pub monitor: Monitor,
    /// The graph's name, for the page's title.
    pub title: String,
}

/// What a cluster console watches and steers (`sluice cluster run --http`).
#[derive(Debug, Clone)]
pub struct ClusterHandles {
    /// The hosts, filled by the controller's caller as counts arrive.
    pub view: crate::ClusterView,
    /// Stops the cluster run gracefully (every host stops its sources and drains).
    pub stop: StopHandle,
    /// The graph file's name, for the page's title.
    pub title: String,
}

/// What a console watches: one process's run, or a cluster run.
#[derive(Debug, Clone)]
pub enum Watched {
    /// A graph running in this process.
    Run(RunHandles),
    /// A graph spread over a cluster's hosts, run from this process.
    Cluster(ClusterHandles),
}

impl From<RunHandles> for Watched {
    fn from(h: RunHandles) -> Self {
        Watched::Run(h)
    }
}

impl From<ClusterHandles> for Watched {
    fn from(h: ClusterHandles) -> Self {
        Watched::Cluster(h)
    }
}

impl Watched {
    /// The run handles the routes read, and the cluster view: a cluster console's run
    /// handles watch no node of this process (its graph runs on the hosts), so its
    /// `/api/graph` and `/api/stats` list none, and its stop stops the cluster run.
    fn split(self) -> (RunHandles, Option<crate::ClusterView>) {
        match self {
            Watched::Run(h) => (h, None),
            Watched::Cluster(c) => (
                RunHandles {
                    control: sluice_runtime::Graph::new().control_handle(),
                    stop: c.stop,
                    progress: Progress::new(),
                    monitor: Monitor::new(),
                    title: c.title,
                },
                Some(c.view),
            ),
        }
    }
}

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// The address to listen on (port 0: any free port).
    pub bind: SocketAddr,
    /// The token changes and streams need; a fresh random one when `None`.
    pub token: Option<String>,
}

/// Why the console did not start.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// A non-loopback address without TLS.
    #[error(
        "the console serves plain HTTP on loopback only (asked for {0}); serve HTTPS there \
         (sluice run: --http-cert/--http-key, or a certificate made at start), or bind \
         127.0.0.1 and reach it through an SSH tunnel (ssh -L 8080:127.0.0.1:8080 host)"
    )]
    NotLoopback(SocketAddr),
    /// The TLS certificate could not be read or made.
    #[error("console on {addr}: TLS: {reason}")]
    Tls {
        /// The address asked for.
        addr: SocketAddr,
        /// What was wrong.
        reason: String,
    },
    /// The listener or the token could not be made.
    #[error("console on {addr}: {source}")]
    Io {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        source: std::io::Error,
    },
}

pub(crate) struct Shared {
    pub handles: RunHandles,
    /// Set for a cluster run's console: its hosts.
    pub cluster: Option<crate::ClusterView>,
    pub guard: Guard,
    pub started: Instant,
    pub closing: AtomicBool,
    /// The TLS server configuration when serving HTTPS.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The live warnings list (`troubles.rs`), filled when statistics are read.
    pub troubles: std::sync::Mutex<crate::troubles::TroubleLog>,
    /// Events dropped because their client read too slowly (`sse.rs`), over all streams.
    pub dropped_events: std::sync::atomic::AtomicU64,
    /// Event streams open now (`sse.rs`).
    pub open_streams: AtomicUsize,
}

/// A running console; dropping it stops the server (each open stream sends a last event and
/// ends; the drop waits up to 0.5 s for them).
pub struct Console {
    addr: SocketAddr,
    /// SHA-256 fingerprint and DER of the certificate when serving HTTPS.
    cert: Option<(String, Vec<u8>)>,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Console({})", self.addr)
    }
}

impl Console {
    /// Binds and starts serving `handles` (a run's [`RunHandles`] or a cluster run's
    /// [`ClusterHandles`]) over plain HTTP (refusing a non-loopback address).
    pub fn start(
        opts: ConsoleOptions,
        handles: impl Into<Watched>,
    ) -> Result<Console, ConsoleError> {
        Self::start_with_tls(opts, None, handles)
    }

    /// Binds and starts serving `handles`, over HTTPS with `tls` (any address), or plain HTTP
    /// without (loopback only), with the default limits of the accept path.
    pub fn start_with_tls(
        opts: ConsoleOptions,
        tls: Option<&crate::Tls>,
        handles: impl Into<Watched>,
    ) -> Result<Console, ConsoleError> {
        Self::start_with_limits(opts, tls, AcceptOptions::default(), handles)
    }

    /// As [`Console::start_with_tls`], with the accept path's limits given: `accept.budget`
    /// is how long a client may take for its TLS handshake and its request (5 s by
    /// default), `accept.max_pending` and `accept.max_pending_per_ip` how many connections
    /// may be at that stage at once, in all and from one address (64 and 8).
    pub fn start_with_limits(
        opts: ConsoleOptions,
        tls: Option<&crate::Tls>,
        accept: AcceptOptions,
        handles: impl Into<Watched>,
    ) -> Result<Console, ConsoleError> {
        let (handles, cluster) = handles.into().split();
        if tls.is_none() && !opts.bind.ip().is_loopback() {
            return Err(ConsoleError::NotLoopback(opts.bind));
        }
        let io = |source| ConsoleError::Io {
            addr: opts.bind,
            source,
        };
        let listener = TcpListener::bind(opts.bind).map_err(io)?;
        let addr = listener.local_addr().map_err(io)?;
        listener.set_nonblocking(true).map_err(io)?;
        let setup = match tls {
            Some(t) => Some(
                crate::tls::setup(t, addr).map_err(|reason| ConsoleError::Tls {
                    addr: opts.bind,
                    reason,
                })?,
            ),
            None => None,
        };
        let token = match opts.token {
            Some(t) => t,
            None => crate::guard::new_token().map_err(io)?,
        };
        let shared = Arc::new(Shared {
            handles,
            cluster,
            guard: Guard::with_scheme(addr, token, setup.is_some()),
            started: Instant::now(),
            closing: AtomicBool::new(false),
            tls: setup.as_ref().map(|s| Arc::clone(&s.config)),
            troubles: Default::default(),
            dropped_events: Default::default(),
            open_streams: AtomicUsize::new(0),
        });
        let acceptor =
            accept_requests(listener, "console", accept, shared.tls.clone()).map_err(io)?;
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("console".into())
                .spawn(move || {
                    let serving = Arc::clone(&shared);
                    dispatch(&acceptor, &shared.closing, "console", move |conn, req| {
                        serve(conn, req, &serving)
                    })
                })
                .map_err(io)?
        };
        Ok(Console {
            addr,
            cert: setup.map(|s| (s.fingerprint, s.cert_der)),
            shared,
            thread: Some(thread),
        })
    }

    /// The address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The token changes and streams need.
    pub fn token(&self) -> &str {
        self.shared.guard.token()
    }

    /// The page's address with the token in the fragment (never sent to the server, never
    /// in logs), as printed at start.
    pub fn url(&self) -> String {
        let scheme = if self.cert.is_some() { "https" } else { "http" };
        format!("{scheme}://{}/#token={}", self.addr, self.token())
    }

    /// The SHA-256 fingerprint of the certificate served (hex bytes joined by colons), when
    /// serving HTTPS: compare it with what the browser shows.
    pub fn fingerprint(&self) -> Option<&str> {
        self.cert.as_ref().map(|(f, _)| f.as_str())
    }

    /// The certificate served (DER), when serving HTTPS: for a client that pins it.
    pub fn certificate_der(&self) -> Option<&[u8]> {
        self.cert.as_ref().map(|(_, d)| d.as_slice())
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The open streams send a last event (the run's final state: a node's error, say)
        // and end; wait for them a little, so that a process exiting next does not cut it.
        let deadline = Instant::now() + LAST_EVENTS;
        while self.shared.open_streams.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The accept path of a web listener: each new connection's TLS handshake (when `tls` is
/// given) and request are read within the acceptor's budget, under its caps.
pub(crate) fn accept_requests(
    listener: TcpListener,
    name: &str,
    limits: AcceptOptions,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> std::io::Result<Acceptor<(Conn, Request)>> {
    let prepare: Arc<Prepare<(Conn, Request)>> =
        Arc::new(move |stream, admission: &Admission| read_request(stream, admission, &tls));
    Acceptor::start(listener, name, limits, prepare)
}

/// Serves each connection whose request came with `handle`, on a thread of its own (at most
/// [`MAX_CONNECTIONS`] at once; one more gets a 503), until `closing` is set (dropping the
/// acceptor then closes the listener and the connections not taken).
pub(crate) fn dispatch(
    acceptor: &Acceptor<(Conn, Request)>,
    closing: &AtomicBool,
    what: &str,
    handle: impl Fn(Conn, &Request) + Clone + Send + 'static,
) {
    let active = Arc::new(AtomicUsize::new(0));
    while !closing.load(Ordering::Acquire) {
        let Some((conn, req)) = acceptor.next(DISPATCH_WAIT) else {
            continue;
        };
        if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::AcqRel);
            refuse_busy(conn, what);
            continue;
        }
        let (handle, conn_active) = (handle.clone(), Arc::clone(&active));
        let spawned = std::thread::Builder::new()
            .name(format!("{what}-conn"))
            .spawn(move || {
                handle(conn, &req);
                conn_active.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            // The closure (and its count) never ran.
            active.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// A new connection's work before it is served, within its budget: the TLS handshake (on
/// the first read) and the request. A bad request is answered with its status here; either
/// way the acceptor counts and logs the refusal.
fn read_request(
    stream: TcpStream,
    admission: &Admission,
    tls: &Option<Arc<rustls::ServerConfig>>,
) -> Result<(Conn, Request), String> {
    // The acceptor shuts the socket down when the budget passes; the timeouts end each
    // blocking call by then too (zero would mean none).
    let left = admission.left().max(Duration::from_millis(1));
    stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(Some(left)))
        .and_then(|()| stream.set_write_timeout(Some(left)))
        .map_err(|e| format!("socket setup: {e}"))?;
    let conn = match tls {
        None => Conn::Plain(stream),
        Some(config) => match rustls::ServerConnection::new(Arc::clone(config)) {
            Ok(c) => Conn::Tls(Box::new(rustls::StreamOwned::new(c, stream))),
            Err(e) => return Err(format!("TLS: {e}")),
        },
    };
    let mut reader = BufReader::new(conn);
    match http::parse_request(&mut reader) {
        Ok(req) => Ok((reader.into_inner(), req)),
        Err(HttpError { status, reason }) => {
            let out = reader.get_mut();
            let _ = http::respond(out, status, "application/json", &http::error_body(&reason));
            let _ = out.flush();
            Err(format!("no request ({status}: {reason})"))
        }
    }
}

fn refuse_busy(mut conn: Conn, what: &str) {
    let _ = conn
        .tcp()
        .set_write_timeout(Some(Duration::from_millis(200)));
    let body = http::error_body(&format!("too many connections to the {what}; try again"));
    let _ = http::respond(&mut conn, 503, "application/json", &body);
    let _ = conn.flush();
}

/// A connection, plain or TLS (whose handshake runs, bounded by the socket's timeouts, on the
/// first read).
pub(crate) enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

impl Conn {
    /// The TCP connection beneath.
    pub(crate) fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(s) => s,
            Conn::Tls(s) => &s.sock,
        }
    }
}

impl std::io::Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

fn serve(conn: Conn, req: &Request, shared: &Shared) {
    let _ = conn.tcp().set_read_timeout(Some(IO_TIMEOUT));
    let _ = conn.tcp().set_write_timeout(Some(IO_TIMEOUT));
    let mut conn = conn;
    let mut out = std::io::BufWriter::new(&mut conn);
    let result = crate::api::route(req, shared, &mut out);
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
