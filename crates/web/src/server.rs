//! The console's server: a listener thread, one short-lived thread per connection (at most
//! [`MAX_CONNECTIONS`] at once), read and write timeouts, and shutdown on drop.
//!
//! No graph thread ever waits on the web side: statistics are relaxed loads, taps are lossy
//! readers the writers never wait for, and a parameter change waits (on the connection's own
//! thread) for the node to apply it between two `work` calls, exactly as `sluice ctl set`.

use crate::guard::Guard;
use crate::http::{self, HttpError};
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
/// How long a client may take to send its request, and a write may block.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// Binds and starts serving `handles` over plain HTTP (refusing a non-loopback address).
    pub fn start(opts: ConsoleOptions, handles: RunHandles) -> Result<Console, ConsoleError> {
        Self::start_with_tls(opts, None, handles)
    }

    /// Binds and starts serving `handles`, over HTTPS with `tls` (any address), or plain HTTP
    /// without (loopback only).
    pub fn start_with_tls(
        opts: ConsoleOptions,
        tls: Option<&crate::Tls>,
        handles: RunHandles,
    ) -> Result<Console, ConsoleError> {
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
            guard: Guard::with_scheme(addr, token, setup.is_some()),
            started: Instant::now(),
            closing: AtomicBool::new(false),
            tls: setup.as_ref().map(|s| Arc::clone(&s.config)),
            troubles: Default::default(),
            dropped_events: Default::default(),
            open_streams: AtomicUsize::new(0),
        });
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("console".into())
                .spawn(move || accept_loop(listener, shared))
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

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let active = Arc::new(AtomicUsize::new(0));
    while !shared.closing.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
                    active.fetch_sub(1, Ordering::AcqRel);
                    // Over TLS a plain answer would be garbage to the client: just close.
                    if shared.tls.is_none() {
                        refuse_busy(stream);
                    }
                    continue;
                }
                let (conn_shared, conn_active) = (Arc::clone(&shared), Arc::clone(&active));
                let spawned = std::thread::Builder::new()
                    .name("console-conn".into())
                    .spawn(move || {
                        serve(stream, &conn_shared);
                        conn_active.fetch_sub(1, Ordering::AcqRel);
                    });
                if spawned.is_err() {
                    // The closure (and its count) never ran.
                    active.fetch_sub(1, Ordering::AcqRel);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn refuse_busy(mut stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    let body = http::error_body("too many connections to the console; try again");
    let _ = http::respond(&mut stream, 503, "application/json", &body);
}

/// A connection, plain or TLS (whose handshake runs, bounded by the socket's timeouts, on the
/// first read).
enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
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

fn serve(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let conn = match &shared.tls {
        None => Conn::Plain(stream),
        Some(config) => match rustls::ServerConnection::new(Arc::clone(config)) {
            Ok(c) => Conn::Tls(Box::new(rustls::StreamOwned::new(c, stream))),
            Err(_) => return,
        },
    };
    let mut reader = BufReader::new(conn);
    let parsed = http::parse_request(&mut reader);
    let mut out = std::io::BufWriter::new(reader.get_mut());
    let result = parsed.and_then(|req| crate::api::route(&req, shared, &mut out));
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
