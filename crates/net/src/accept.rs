//! The one accept path of every listener (a listening `tcp_source` or `tcp_sink`, a fenced
//! receiver, the cluster worker's control port): an [`Acceptor`] takes connections on a thread
//! of its own, runs each new connection's pre-authentication work (the secure handshake, then
//! its first frame when the caller asks for it) on a helper thread within a budget, and hands
//! the node only the connections that completed it, through a channel the node looks at with
//! a bounded wait. What an unauthenticated peer does therefore costs its own connection and a
//! bounded share of the listener, never the node's thread:
//!
//! * at most [`AcceptOptions::max_pending`] connections are pending (accepted, not yet taken
//!   by the node) at once, and at most [`AcceptOptions::max_pending_per_ip`] from one source
//!   address; a connection beyond either cap is closed at once and counted
//!   ([`AcceptCounts::over_cap`]);
//! * a connection that has not completed its work within [`AcceptOptions::budget`] is shut
//!   down by the acceptor thread (a peer that trickles bytes cannot stretch the budget);
//! * a failed handshake or a bad first frame refuses that connection only, counted
//!   ([`AcceptCounts::refused`]) and logged on stderr, escaped, at most once per
//!   [`AcceptOptions::log_interval`];
//! * `accept` errors (EMFILE, ENFILE, ENOBUFS, ENOMEM, ECONNABORTED, ...) are transient:
//!   counted ([`AcceptCounts::transient`]), logged at the same limited rate, and, for lack of
//!   a resource, accepting backs off (10 ms doubling to 1 s) while the listener lives on.

use crate::conn::wait_fd;
use rustix::event::PollFlags;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The acceptor thread looks at the pending connections' deadlines at least this often.
const SWEEP: Duration = Duration::from_millis(50);

/// The first pause after an `accept` that failed for lack of a resource (see [`Backoff`]).
pub const BACKOFF_FIRST: Duration = Duration::from_millis(10);
/// The longest pause after an `accept` that failed for lack of a resource.
pub const BACKOFF_CAP: Duration = Duration::from_secs(1);

/// The limits of an [`Acceptor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptOptions {
    /// The most one connection's pre-authentication work (handshake, first frame) may take;
    /// then the connection is closed and counted as refused. Default 5 s.
    pub budget: Duration,
    /// The most connections pending at once (accepted, not yet taken by the node). Default 64.
    pub max_pending: usize,
    /// The most pending connections from one source address. Default 8.
    pub max_pending_per_ip: usize,
    /// Refusals and accept errors are logged at most once per this interval (the lines in
    /// between are counted and the count told). Default 1 s.
    pub log_interval: Duration,
}

impl Default for AcceptOptions {
    fn default() -> Self {
        AcceptOptions {
            budget: Duration::from_secs(5),
            max_pending: 64,
            max_pending_per_ip: 8,
            log_interval: Duration::from_secs(1),
        }
    }
}

/// What an [`Acceptor`] counted since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcceptCounts {
    /// Connections that completed their pre-authentication work and were handed over (or wait
    /// to be taken).
    pub admitted: u64,
    /// Connections refused: a failed handshake, a bad first frame, the budget passed.
    pub refused: u64,
    /// Connections closed at once because a cap on pending connections was reached.
    pub over_cap: u64,
    /// `accept` calls that failed (out of descriptors, buffers or memory; a connection reset
    /// before it was taken) or a helper thread that could not start.
    pub transient: u64,
    /// Connections pending now.
    pub pending: usize,
}

/// A pending connection, as the caller's pre-authentication work sees it.
#[derive(Debug, Clone, Copy)]
pub struct Admission {
    /// The peer's address.
    pub peer: SocketAddr,
    /// When the budget ends (the acceptor shuts the connection down then).
    pub deadline: Instant,
}

impl Admission {
    /// The budget left (zero once it is spent).
    pub fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// The pre-authentication work of one connection: `Ok` with what the node takes, or `Err`
/// with why the connection is refused (the acceptor escapes it before it is logged). It runs
/// on a helper thread, owns the connection, and should stay within `Admission::deadline`.
pub type Prepare<T> = dyn Fn(TcpStream, &Admission) -> Result<T, String> + Send + Sync;

/// At most one line per interval; the lines in between are counted and the count is told.
/// Every listener logs its refusals and accept errors through one of these.
#[derive(Debug)]
pub struct RateLog {
    /// What each line starts with: the crate that logs (`sluice-net`, `sluice-zmq`, ...).
    prefix: &'static str,
    next: Option<Instant>,
    suppressed: u64,
}

impl Default for RateLog {
    fn default() -> Self {
        RateLog::new()
    }
}

impl RateLog {
    /// A log of `sluice-net` that has printed nothing yet.
    pub const fn new() -> Self {
        RateLog::with_prefix("sluice-net")
    }

    /// A log whose lines start with `prefix` (the crate that logs), nothing printed yet.
    pub const fn with_prefix(prefix: &'static str) -> Self {
        RateLog {
            prefix,
            next: None,
            suppressed: 0,
        }
    }

    /// Prints `<prefix>: <line>` on stderr unless a line was printed less than `every` ago.
    pub fn line(&mut self, every: Duration, line: &str) {
        let now = Instant::now();
        if self.next.is_some_and(|t| now < t) {
            self.suppressed += 1;
            return;
        }
        self.next = Some(now + every);
        let prefix = self.prefix;
        match std::mem::take(&mut self.suppressed) {
            0 => eprintln!("{prefix}: {line}"),
            n => eprintln!("{prefix}: {line} ({n} more such lines not shown)"),
        }
    }

    /// Whether lines were held back and not told yet (see [`RateLog::flush`]).
    pub fn untold(&self) -> bool {
        self.suppressed > 0
    }

    /// Once the interval has passed, tells the count of the lines not shown since the last
    /// one (`what` names the listener), so that a burst's tail is never silent.
    pub fn flush(&mut self, what: &str) {
        if self.suppressed > 0 && self.next.is_none_or(|t| Instant::now() >= t) {
            let n = std::mem::take(&mut self.suppressed);
            self.next = None;
            eprintln!(
                "{}: {what}: {n} more refused connections or accept errors, not shown line by line",
                self.prefix
            );
        }
    }
}

/// How long accepting pauses after `accept` failed for lack of a resource: `first`, doubling
/// at each failure in a row up to [`BACKOFF_CAP`], back to `first` once a connection is taken.
/// A listener out of descriptors thus neither spins on `accept` nor stops for long once they
/// are free again.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    first: Duration,
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(BACKOFF_FIRST)
    }
}

impl Backoff {
    /// A backoff whose first pause is `first` (at most [`BACKOFF_CAP`]).
    pub fn new(first: Duration) -> Self {
        let first = first.min(BACKOFF_CAP);
        Backoff { first, next: first }
    }

    /// The pause due now; the next one is twice as long, up to the cap.
    pub fn pause(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(BACKOFF_CAP);
        now
    }

    /// A connection was taken: the next failure pauses for the first pause again.
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

/// The pending connections: how many in all and per address, and, for those still at their
/// work, a second handle on the socket and its deadline (to shut it down when it passes or the
/// acceptor ends).
#[derive(Debug, Default)]
struct Table {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
    working: HashMap<u64, (Option<TcpStream>, Instant)>,
    next_id: u64,
}

#[derive(Debug)]
struct Shared {
    /// The listener's address and the acceptor's name, for messages.
    what: String,
    opts: AcceptOptions,
    stop: AtomicBool,
    table: Mutex<Table>,
    counts: Mutex<AcceptCounts>,
    last_refusal: Mutex<Option<String>>,
    log: Mutex<RateLog>,
}

impl Shared {
    fn log(&self, line: &str) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .line(self.opts.log_interval, line);
    }

    fn count(&self, f: impl FnOnce(&mut AcceptCounts)) {
        f(&mut self.counts.lock().unwrap_or_else(PoisonError::into_inner));
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A pending connection's place under the caps, given back when it is dropped (refused,
/// or taken by the node).
#[derive(Debug)]
struct Slot {
    shared: Arc<Shared>,
    ip: IpAddr,
    id: u64,
}

impl Slot {
    /// The work is done: the deadline no longer applies (the connection still counts as
    /// pending until the node takes it).
    fn worked(&self) {
        self.shared.table().working.remove(&self.id);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut t = self.shared.table();
        t.working.remove(&self.id);
        t.total = t.total.saturating_sub(1);
        if let Some(n) = t.per_ip.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                t.per_ip.remove(&self.ip);
            }
        }
    }
}

/// Accepts a listener's connections off the node's thread (see the module's docs). Dropping
/// it closes the listener and every connection not yet taken.
pub struct Acceptor<T> {
    shared: Arc<Shared>,
    listener: Arc<TcpListener>,
    ready: Receiver<(T, Slot)>,
    thread: Option<JoinHandle<()>>,
}

impl<T> std::fmt::Debug for Acceptor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acceptor")
            .field("listener", &self.shared.what)
            .field("counts", &self.counts())
            .finish()
    }
}

impl<T: Send + 'static> Acceptor<T> {
    /// Starts accepting on `listener` (`name` says whose it is, in messages); each new
    /// connection runs `prepare` on a helper thread.
    pub fn start(
        listener: TcpListener,
        name: &str,
        opts: AcceptOptions,
        prepare: Arc<Prepare<T>>,
    ) -> std::io::Result<Self> {
        listener.set_nonblocking(true)?;
        let what = match listener.local_addr() {
            Ok(a) => format!("{name} on {a}"),
            Err(_) => name.to_string(),
        };
        let shared = Arc::new(Shared {
            what,
            opts,
            stop: AtomicBool::new(false),
            table: Mutex::default(),
            counts: Mutex::default(),
            last_refusal: Mutex::default(),
            log: Mutex::new(RateLog::new()),
        });
        let listener = Arc::new(listener);
        let (tx, ready) = mpsc::channel();
        let thread = {
            let (shared, listener) = (shared.clone(), listener.clone());
            std::thread::Builder::new()
                .name("sluice-accept".into())
                .spawn(move || accept_loop(&shared, &listener, &tx, &prepare))?
        };
        Ok(Acceptor {
            shared,
            listener,
            ready,
            thread: Some(thread),
        })
    }
}

impl<T> Acceptor<T> {
    /// The next connection that completed its work, waiting at most `wait` for one.
    pub fn next(&self, wait: Duration) -> Option<T> {
        let got = if wait.is_zero() {
            self.ready.try_recv().ok()
        } else {
            self.ready.recv_timeout(wait).ok()
        };
        // Dropping the slot gives its place under the caps back.
        got.map(|(item, _slot)| item)
    }

    /// What was counted so far.
    pub fn counts(&self) -> AcceptCounts {
        let mut counts = *self
            .shared
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        counts.pending = self.shared.table().total;
        counts
    }

    /// The last refusal: `<peer address>: <why>` (escaped).
    pub fn last_refusal(&self) -> Option<String> {
        self.shared
            .last_refusal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A line for a block's warnings when connections were refused, closed over a cap, or
    /// `accept` failed (`None` when none was).
    pub fn warning(&self) -> Option<String> {
        let c = self.counts();
        if c.refused == 0 && c.over_cap == 0 && c.transient == 0 {
            return None;
        }
        let mut line = format!(
            "{}: {} connections refused before the stream (handshake or first frame), {} closed at once over a cap on pending connections, {} accept errors passed over",
            self.shared.what, c.refused, c.over_cap, c.transient
        );
        if let Some(last) = self.last_refusal() {
            line.push_str(&format!("; the last refused: {last}"));
        }
        Some(line)
    }

    /// The listener's address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

impl<T> Drop for Acceptor<T> {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        // Shutting a listening socket down makes it refuse new connections at once and wakes
        // the acceptor's poll (Linux); the pending ones are shut down so their helpers end.
        let _ = rustix::net::shutdown(&*self.listener, rustix::net::Shutdown::Both);
        for (stream, _) in self.shared.table().working.values() {
            if let Some(s) = stream {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// Whether an `accept` error says a resource ran out (EMFILE, ENFILE, ENOBUFS, ENOMEM: then
/// accepting pauses, see [`Backoff`]); any other error (ECONNABORTED, ...) concerns the one
/// connection that failed, and the next is taken at once. Either way the listener lives on.
pub fn scarce(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    let Some(code) = e.raw_os_error() else {
        return false;
    };
    let errno = Errno::from_raw_os_error(code);
    [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM].contains(&errno)
}

fn accept_loop<T: Send + 'static>(
    shared: &Arc<Shared>,
    listener: &TcpListener,
    tx: &Sender<(T, Slot)>,
    prepare: &Arc<Prepare<T>>,
) {
    let mut backoff = Backoff::default();
    while !shared.stop.load(Ordering::Acquire) {
        sweep(shared);
        shared
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flush(&shared.what);
        wait_fd(listener, PollFlags::IN, SWEEP);
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        // A bounded batch per turn, so that the deadlines are looked at during a flood.
        for _ in 0..64 {
            match listener.accept() {
                Ok((stream, peer)) => {
                    backoff.reset();
                    admit(shared, stream, peer, tx, prepare);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if shared.stop.load(Ordering::Acquire) {
                        return;
                    }
                    shared.count(|c| c.transient += 1);
                    if scarce(&e) {
                        let pause = backoff.pause();
                        shared.log(&format!(
                            "{}: accept failed ({e}); accepting again in {pause:?}, the connections taken are served meanwhile",
                            shared.what
                        ));
                        // Woken early when the acceptor is dropped.
                        std::thread::park_timeout(pause);
                    } else {
                        // A connection reset before it was taken (ECONNABORTED) and the like:
                        // that connection is gone, the next is fine.
                        shared.log(&format!("{}: accept failed ({e})", shared.what));
                    }
                    break;
                }
            }
        }
    }
}

/// Shuts down the pending connections whose budget passed: their helper's reads fail at once.
fn sweep(shared: &Shared) {
    let now = Instant::now();
    for (stream, deadline) in shared.table().working.values_mut() {
        if *deadline <= now {
            if let Some(s) = stream.take() {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

/// Takes a new connection under the caps and starts its helper.
fn admit<T: Send + 'static>(
    shared: &Arc<Shared>,
    stream: TcpStream,
    peer: SocketAddr,
    tx: &Sender<(T, Slot)>,
    prepare: &Arc<Prepare<T>>,
) {
    let opts = &shared.opts;
    let deadline = Instant::now() + opts.budget;
    let slot = {
        let mut t = shared.table();
        let from_ip = t.per_ip.get(&peer.ip()).copied().unwrap_or(0);
        let over = if t.total >= opts.max_pending {
            Some(format!(
                "already {} connections pending (max_pending)",
                t.total
            ))
        } else if from_ip >= opts.max_pending_per_ip {
            Some(format!(
                "already {from_ip} connections pending from {} (max_pending_per_ip)",
                peer.ip()
            ))
        } else {
            None
        };
        if let Some(why) = over {
            drop(t);
            shared.count(|c| c.over_cap += 1);
            shared.log(&format!("{}: closed {peer} at once: {why}", shared.what));
            return; // dropping the stream closes it
        }
        t.total += 1;
        *t.per_ip.entry(peer.ip()).or_insert(0) += 1;
        let id = t.next_id;
        t.next_id += 1;
        // Without a second handle (out of descriptors) the deadline is the work's own.
        t.working.insert(id, (stream.try_clone().ok(), deadline));
        Slot {
            shared: shared.clone(),
            ip: peer.ip(),
            id,
        }
    };
    let (tx, prepare, helper_shared) = (tx.clone(), prepare.clone(), shared.clone());
    let spawned = std::thread::Builder::new()
        .name("sluice-admit".into())
        .spawn(move || {
            let admission = Admission { peer, deadline };
            match prepare(stream, &admission) {
                Ok(item) => {
                    slot.worked();
                    helper_shared.count(|c| c.admitted += 1);
                    // A send fails only when the acceptor is gone: the connection closes.
                    let _ = tx.send((item, slot));
                }
                Err(why) => {
                    let why = if admission.left().is_zero() {
                        format!(
                            "{why} (its budget of {:?} passed)",
                            helper_shared.opts.budget
                        )
                    } else {
                        why
                    };
                    let line = format!("{peer}: {}", crate::escape::text(&why));
                    helper_shared.count(|c| c.refused += 1);
                    helper_shared.log(&format!("{}: refused {line}", helper_shared.what));
                    *helper_shared
                        .last_refusal
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(line);
                }
            }
        });
    if let Err(e) = spawned {
        // The closure (the stream and the slot with it) was dropped: the connection is closed.
        shared.count(|c| c.transient += 1);
        shared.log(&format!(
            "{}: no thread for {peer}'s handshake ({e}); closed it",
            shared.what
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn echo_first_byte(budget: Duration, max: usize, per_ip: usize) -> Acceptor<(TcpStream, u8)> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let prepare: Arc<Prepare<(TcpStream, u8)>> = Arc::new(|mut s: TcpStream, a: &Admission| {
            s.set_read_timeout(Some(a.left().max(Duration::from_millis(1))))
                .map_err(|e| e.to_string())?;
            let mut b = [0u8; 1];
            s.read_exact(&mut b).map_err(|e| e.to_string())?;
            if b[0] == b'!' {
                return Err("a bang\x1b[2J".into());
            }
            Ok((s, b[0]))
        });
        let opts = AcceptOptions {
            budget,
            max_pending: max,
            max_pending_per_ip: per_ip,
            log_interval: Duration::from_millis(100),
        };
        Acceptor::start(listener, "test", opts, prepare).unwrap()
    }

    fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
        let start = Instant::now();
        while !f() {
            assert!(start.elapsed() < Duration::from_secs(5), "{what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn silent_peers_do_not_delay_a_talking_one_and_are_closed_after_the_budget() {
        let a = echo_first_byte(Duration::from_millis(300), 16, 16);
        let addr = a.local_addr().unwrap();
        let silent: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let mut talker = TcpStream::connect(addr).unwrap();
        talker.write_all(b"x").unwrap();
        let (_, byte) = a.next(Duration::from_secs(5)).expect("the talker first");
        assert_eq!(byte, b'x');
        wait_for("the silent ones refused after the budget", || {
            a.counts().refused == 10
        });
        for mut s in silent {
            s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
            assert_eq!(s.read(&mut [0u8; 1]).unwrap(), 0, "closed");
        }
        let c = a.counts();
        assert_eq!((c.admitted, c.pending, c.over_cap), (1, 0, 0), "{c:?}");
    }

    #[test]
    fn connections_beyond_the_caps_are_closed_at_once_and_a_refusal_is_escaped() {
        let a = echo_first_byte(Duration::from_secs(1), 4, 2);
        let addr = a.local_addr().unwrap();
        let held: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
        wait_for("one over the per-address cap", || a.counts().over_cap == 1);
        let mut held = held;
        let mut third = held.pop().unwrap();
        third
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        assert_eq!(third.read(&mut [0u8; 1]).unwrap(), 0, "closed at once");
        // The two held ones give their places back when they close (refused: no byte came).
        drop(held);
        wait_for("the held ones refused", || a.counts().refused == 2);
        let mut bang = TcpStream::connect(addr).unwrap();
        bang.write_all(b"!").unwrap();
        wait_for("the bang refused", || a.counts().refused == 3);
        let last = a.last_refusal().unwrap_or_default();
        assert!(!last.chars().any(char::is_control), "{last:?}");
    }

    #[test]
    fn dropping_it_closes_the_listener() {
        let a = echo_first_byte(Duration::from_secs(1), 4, 4);
        let addr = a.local_addr().unwrap();
        drop(a);
        assert!(TcpStream::connect(addr).is_err(), "refused once dropped");
    }
}
