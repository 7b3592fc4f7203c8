//! One TCP connection: a non-blocking socket, vectored sends and plain receives through
//! rustix, bounded waits with `poll`, and a keeper thread that sends HEARTBEATs whenever the
//! node's thread has sent nothing for a heartbeat period (the node may be parked by the
//! scheduler, waiting on its queue, for any length of time).
//!
//! The bytes a node's thread sends and receives (plaintext, frame headers included) are
//! counted for the live display ([`sluice_runtime::count_bytes`], a thread-local add per
//! system call).

use crate::secure::{Got, Link, RxBuf, Sealer, MAX_PLAIN};

/// A slice of a vectored send at least this long is sealed in records of its own (a frame's
/// payload: the receiver takes them straight into its reservation); shorter ones around it are
/// gathered into one record.
const OWN_RECORD: usize = 4096;
use crate::wire;
use crate::NetError;
use rustix::event::{poll, PollFd, PollFlags};
use rustix::net::{RecvFlags, SendAncillaryBuffer, SendFlags};
use sluice_runtime::{count_bytes, Direction};
use std::io::{IoSlice, IoSliceMut};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where a block's connection comes from: it connects, or it listens and accepts.
#[derive(Debug)]
pub enum Endpoint {
    /// `tcp://host:port`: connect (and reconnect) to this address.
    Connect(String),
    /// `tcp-listen://host:port`: accept connections on this listener.
    Listen(TcpListener),
    /// A listener closed once its stream ended (its address, for messages): a sender that
    /// comes late is refused at once instead of waiting for an answer.
    Closed(String),
}

impl Endpoint {
    /// Parses `tcp://host:port` (connect) or `tcp-listen://host:port` (listen: binds now, so
    /// that port 0 gets its number at once; see [`Endpoint::local_addr`]).
    pub fn parse(url: &str) -> Result<Endpoint, NetError> {
        let bad = |why: &str| {
            NetError::Config(format!(
                "bad URL '{url}': {why} (use tcp://host:port to connect or tcp-listen://host:port to listen)"
            ))
        };
        if let Some(addr) = url.strip_prefix("tcp-listen://") {
            if addr.is_empty() {
                return Err(bad("no address"));
            }
            let listener = TcpListener::bind(addr).map_err(|e| {
                NetError::Config(format!("cannot listen on {addr} (from '{url}'): {e}"))
            })?;
            listener
                .set_nonblocking(true)
                .map_err(|e| NetError::Config(format!("cannot listen on {addr}: {e}")))?;
            Ok(Endpoint::Listen(listener))
        } else if let Some(addr) = url.strip_prefix("tcp://") {
            if !addr.contains(':') {
                return Err(bad("no port"));
            }
            Ok(Endpoint::Connect(addr.to_string()))
        } else {
            Err(bad("unknown scheme"))
        }
    }

    /// The address a listening endpoint is bound to (its port, when it asked for port 0).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match self {
            Endpoint::Listen(l) => l.local_addr().ok(),
            Endpoint::Connect(_) | Endpoint::Closed(_) => None,
        }
    }

    /// Closes a listener (see [`Endpoint::Closed`]); a connecting endpoint stays as it is.
    pub fn close(&mut self) {
        if matches!(self, Endpoint::Listen(_)) {
            *self = Endpoint::Closed(self.describe());
        }
    }

    /// The peer's address as messages name it before a connection exists.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Connect(a) => a.clone(),
            Endpoint::Listen(l) => match l.local_addr() {
                Ok(a) => format!("(listening on {a})"),
                Err(_) => "(listening)".to_string(),
            },
            Endpoint::Closed(what) => what.clone(),
        }
    }

    /// Tries to get a connection, waiting at most `wait`: `Ok(None)` if none came. (The
    /// stream blocks take a listener's connections through an
    /// [`Acceptor`](crate::accept::Acceptor) instead; the probe's plaintext ends use this.)
    /// A failed `accept` is transient, as on every listener: logged (rate-limited), and, for
    /// lack of a resource (out of descriptors), a pause of `wait` before `Ok(None)`.
    pub fn establish(&self, wait: Duration, offset: u64) -> Result<Option<TcpStream>, NetError> {
        match self {
            Endpoint::Listen(l) => {
                match l.accept() {
                    Ok((s, _)) => return Ok(Some(s)),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && wait.is_zero() => {
                        return Ok(None)
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Ok(self.accept_failed(&e, wait)),
                }
                wait_fd(l, PollFlags::IN, wait);
                match l.accept() {
                    Ok((s, _)) => Ok(Some(s)),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
                    Err(e) => Ok(self.accept_failed(&e, wait)),
                }
            }
            Endpoint::Closed(_) => {
                std::thread::sleep(wait);
                Ok(None)
            }
            Endpoint::Connect(addr) => {
                let start = Instant::now();
                let addrs: Vec<SocketAddr> = match addr.to_socket_addrs() {
                    Ok(a) => a.collect(),
                    Err(e) => return Err(io_err(addr, offset, "resolve", &e)),
                };
                for a in addrs {
                    match TcpStream::connect_timeout(&a, wait.max(Duration::from_millis(10))) {
                        Ok(s) => return Ok(Some(s)),
                        Err(_) => continue,
                    }
                }
                // Refused or unreachable: the peer is not there yet. Do not retry in a loop.
                if let Some(rest) = wait.checked_sub(start.elapsed()) {
                    std::thread::sleep(rest.min(Duration::from_millis(20)));
                }
                Ok(None)
            }
        }
    }
}

impl Endpoint {
    /// `accept` failed with `e`: the listener lives on (see [`crate::accept::scarce`]). The
    /// caller's polling interval `wait` is the pause, so that a listener out of descriptors
    /// does not spin; the connection waits in the backlog meanwhile.
    fn accept_failed(&self, e: &std::io::Error, wait: Duration) -> Option<TcpStream> {
        /// One log for every such listener of the process (a probe has two at most).
        static LOG: Mutex<crate::accept::RateLog> = Mutex::new(crate::accept::RateLog::new());
        let scarce = crate::accept::scarce(e);
        let line = if scarce {
            format!(
                "{}: accept failed ({e}); accepting again in {wait:?}",
                self.describe()
            )
        } else {
            format!("{}: accept failed ({e})", self.describe())
        };
        LOG.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .line(Duration::from_secs(1), &line);
        if scarce {
            std::thread::sleep(wait);
        }
        None
    }
}

/// The error of a stream end that got no connection on `endpoint` within `elapsed` (its
/// connect timeout); `refused`: the last peer refused meanwhile, and why.
pub(crate) fn no_connection(
    endpoint: &Endpoint,
    offset: u64,
    elapsed: Duration,
    refused: Option<String>,
) -> NetError {
    let secs = elapsed.as_secs_f64();
    NetError::Io {
        peer: endpoint.describe(),
        offset,
        what: "connect",
        message: match refused {
            Some(r) => format!("no connection within {secs:.1} s (the last peer was refused: {r})"),
            None => format!("no connection within {secs:.1} s"),
        },
    }
}

pub(crate) fn io_err(peer: &str, offset: u64, what: &'static str, e: &std::io::Error) -> NetError {
    NetError::Io {
        peer: peer.to_string(),
        offset,
        what,
        message: e.to_string(),
    }
}

/// Makes a connection whose peer vanished (a host that lost power, a cable pulled, a link
/// that drops everything) fail within about `within` instead of hanging: TCP keepalive
/// probes from `within / 2` of silence on, every `within / 6`, three of them; and
/// `TCP_USER_TIMEOUT`, so that bytes written and not acknowledged for `within` end the
/// connection too. A peer that is there but says nothing is not affected (its kernel answers
/// the probes): bound those waits with the protocol's own deadlines.
pub fn detect_dead_peer(stream: &TcpStream, within: Duration) -> std::io::Result<()> {
    use rustix::net::sockopt;
    let within = within.max(Duration::from_secs(1));
    sockopt::set_socket_keepalive(stream, true)?;
    sockopt::set_tcp_keepidle(stream, (within / 2).max(Duration::from_secs(1)))?;
    sockopt::set_tcp_keepintvl(stream, (within / 6).max(Duration::from_secs(1)))?;
    sockopt::set_tcp_keepcnt(stream, 3)?;
    sockopt::set_tcp_user_timeout(stream, within.as_millis().min(u32::MAX as u128) as u32)?;
    Ok(())
}

/// Waits until `fd` is ready for `flags` or `wait` passes.
pub(crate) fn wait_fd(fd: impl std::os::fd::AsFd, flags: PollFlags, wait: Duration) {
    let mut fds = [PollFd::new(&fd, flags)];
    let ts = rustix::time::Timespec {
        tv_sec: wait.as_secs() as i64,
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    // An interrupted or failed poll only ends the wait early; the caller looks again.
    let _ = poll(&mut fds, Some(&ts));
}

/// What the node's thread and the keeper share about sending.
#[derive(Debug)]
struct Tx {
    /// A frame is partly written: nothing else may go out until it is complete.
    mid_frame: bool,
    /// When bytes last went out.
    last: Instant,
    /// On a secure connection: the sealer, the records sealed and not all sent (`out[out_at..]`)
    /// and how many plaintext bytes of the caller's frame they hold.
    sealer: Option<Sealer>,
    out: Vec<u8>,
    out_at: usize,
    out_plain: usize,
    /// Short slices gathered into one record.
    gather: Vec<u8>,
}

impl Tx {
    /// Sends what it can of the sealed records, without blocking: true once all went out.
    fn flush(&mut self, stream: &TcpStream) -> std::io::Result<bool> {
        while self.out_at < self.out.len() {
            match rustix::net::send(
                stream,
                &self.out[self.out_at..],
                SendFlags::NOSIGNAL | SendFlags::DONTWAIT,
            ) {
                Ok(n) => {
                    self.out_at += n;
                    self.last = Instant::now();
                }
                Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
        self.out.clear();
        self.out_at = 0;
        Ok(true)
    }

    /// Seals `frame` and sends it whole, waiting for room until `deadline`.
    fn seal_and_send(
        &mut self,
        stream: &TcpStream,
        frame: &[u8],
        deadline: Instant,
    ) -> std::io::Result<()> {
        let mut sealed = Vec::with_capacity(frame.len() + 64);
        self.sealer
            .as_mut()
            .expect("a secure connection")
            .seal(frame, &mut sealed)?;
        send_all(stream, &sealed, deadline)
    }
}

/// A live connection.
#[derive(Debug)]
pub(crate) struct Conn {
    stream: Arc<TcpStream>,
    /// On a secure connection: what was received and not yet opened or taken.
    rx: Option<RxBuf>,
    /// The peer's address, for messages.
    pub peer: String,
    tx: Arc<Mutex<Tx>>,
    keeper_stop: Arc<AtomicBool>,
    keeper: Option<JoinHandle<()>>,
    /// When bytes last came in.
    pub last_rx: Instant,
}

/// The result of a non-blocking receive.
pub(crate) enum Recv {
    /// This many bytes arrived.
    Got(usize),
    /// None now.
    WouldBlock,
    /// The peer closed its side.
    Eof,
}

impl Conn {
    /// Sets up the link's socket (non-blocking, no Nagle delay) and starts its heartbeat
    /// keeper; on a secure link every byte each way goes through its channel.
    pub fn new(link: Link, heartbeat: Duration) -> std::io::Result<Conn> {
        let Link {
            stream, channel, ..
        } = link;
        let (sealer, rx) = match channel {
            Some((s, r)) => (Some(s), Some(r)),
            None => (None, None),
        };
        stream.set_nonblocking(true)?;
        stream.set_nodelay(true)?;
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "(unknown peer)".to_string());
        let stream = Arc::new(stream);
        let tx = Arc::new(Mutex::new(Tx {
            mid_frame: false,
            last: Instant::now(),
            sealer,
            out: Vec::new(),
            out_at: 0,
            out_plain: 0,
            gather: Vec::new(),
        }));
        let keeper_stop = Arc::new(AtomicBool::new(false));
        let keeper = {
            let (stream, tx, stop) = (stream.clone(), tx.clone(), keeper_stop.clone());
            std::thread::Builder::new()
                .name("sluice-net-heartbeat".into())
                .spawn(move || keep(&stream, &tx, &stop, heartbeat))?
        };
        Ok(Conn {
            stream,
            rx,
            peer,
            tx,
            keeper_stop,
            keeper: Some(keeper),
            last_rx: Instant::now(),
        })
    }

    /// Receives into `buf` without blocking.
    pub fn recv(&mut self, buf: &mut [u8]) -> std::io::Result<Recv> {
        if self.rx.is_some() {
            return self.recv_secure(&mut [IoSliceMut::new(buf)], false);
        }
        let len = buf.len();
        match rustix::net::recv(&*self.stream, buf, RecvFlags::DONTWAIT) {
            Ok((0, _)) if len > 0 => Ok(Recv::Eof),
            Ok((n, _)) => {
                self.last_rx = Instant::now();
                count_bytes(Direction::Received, n as u64);
                Ok(Recv::Got(n))
            }
            Err(rustix::io::Errno::AGAIN) => Ok(Recv::WouldBlock),
            Err(rustix::io::Errno::INTR) => Ok(Recv::WouldBlock),
            Err(e) => Err(e.into()),
        }
    }

    /// Receives into several buffers at once (`readv`) without blocking. On a secure
    /// connection a record may be received straight into the first buffer over several calls:
    /// until a call returns bytes, the next passes the same first buffer (the reservation).
    pub fn recv_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> std::io::Result<Recv> {
        if self.rx.is_some() {
            return self.recv_secure(bufs, true);
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        match rustix::io::readv(&*self.stream, bufs) {
            Ok(0) if total > 0 => Ok(Recv::Eof),
            Ok(n) => {
                self.last_rx = Instant::now();
                count_bytes(Direction::Received, n as u64);
                Ok(Recv::Got(n))
            }
            Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => Ok(Recv::WouldBlock),
            Err(e) => Err(e.into()),
        }
    }

    /// Receives plaintext through the channel: a whole record that fits the first buffer is
    /// opened straight into it (the queue's reservation), others through its buffer.
    fn recv_secure(&mut self, bufs: &mut [IoSliceMut<'_>], direct: bool) -> std::io::Result<Recv> {
        let rx = self.rx.as_mut().expect("a secure connection");
        let stream = &*self.stream;
        let mut got_any = false;
        let got = rx.recv(bufs, direct, |iov| {
            // (The socket is non-blocking.)
            match rustix::io::readv(stream, iov) {
                Ok(n) => {
                    got_any |= n > 0;
                    Ok(Some(n))
                }
                Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => Ok(None),
                Err(e) => Err(e.into()),
            }
        })?;
        if got_any {
            self.last_rx = Instant::now();
        }
        Ok(match got {
            Got::Bytes(n) => {
                count_bytes(Direction::Received, n as u64);
                Recv::Got(n)
            }
            Got::WouldBlock => Recv::WouldBlock,
            Got::Eof => Recv::Eof,
        })
    }

    /// Whether plaintext is waiting in the channel (the socket's readiness does not show it).
    fn buffered(&self) -> bool {
        self.rx.as_ref().is_some_and(RxBuf::ready)
    }

    /// Sends what it can of `iov` (one `sendmsg`, no SIGPIPE) without blocking: the bytes
    /// sent (0 if the socket is full). `frame_done_at` is the total of `iov`: when all of it
    /// went out the frame is complete; otherwise the keeper holds its heartbeats back.
    pub fn send_vectored(&self, iov: &[IoSlice<'_>]) -> std::io::Result<usize> {
        let total: usize = iov.iter().map(|s| s.len()).sum();
        let mut tx = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
        if tx.sealer.is_some() {
            let sent = send_sealed(&mut tx, &self.stream, iov, total)?;
            count_bytes(Direction::Sent, sent as u64);
            return Ok(sent);
        }
        let mut control = SendAncillaryBuffer::default();
        let sent = match rustix::net::sendmsg(
            &*self.stream,
            iov,
            &mut control,
            SendFlags::NOSIGNAL | SendFlags::DONTWAIT,
        ) {
            Ok(n) => n,
            Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => 0,
            Err(e) => return Err(e.into()),
        };
        if sent > 0 {
            tx.last = Instant::now();
            count_bytes(Direction::Sent, sent as u64);
        }
        tx.mid_frame = sent < total;
        Ok(sent)
    }

    /// Sends a whole small control frame, waiting (at most `limit`) for room if the socket is
    /// full. Must not be called while a frame of [`Conn::send_vectored`] is incomplete.
    pub fn send_control(&self, frame: &[u8], limit: Duration) -> std::io::Result<()> {
        let deadline = Instant::now() + limit;
        let mut tx = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
        if tx.sealer.is_some() {
            tx.seal_and_send(&self.stream, frame, deadline)?;
        } else {
            send_all(&self.stream, frame, deadline)?;
        }
        tx.last = Instant::now();
        count_bytes(Direction::Sent, frame.len() as u64);
        Ok(())
    }

    /// Looks whether the socket is readable, without blocking, again and again for up to
    /// `spin` (one `poll` with a zero timeout per look): true as soon as it is.
    pub fn spin_readable(&self, spin: Duration) -> bool {
        if self.buffered() {
            return true;
        }
        let start = Instant::now();
        let zero = rustix::time::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        loop {
            let mut fds = [PollFd::new(&*self.stream, PollFlags::IN)];
            if matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0) {
                return true;
            }
            if start.elapsed() >= spin {
                return false;
            }
            std::hint::spin_loop();
        }
    }

    /// Waits until the socket is readable (or writable too, with `write`), at most `wait`.
    pub fn wait(&self, write: bool, wait: Duration) {
        if self.buffered() {
            return;
        }
        let flags = if write {
            PollFlags::IN | PollFlags::OUT
        } else {
            PollFlags::IN
        };
        wait_fd(&*self.stream, flags, wait);
    }
}

impl Conn {
    /// Ends a connection whose stream is complete without destroying what the peer has yet
    /// to read: this end stops sending (a FIN after everything sent), then reads and drops
    /// what the peer still sends until it closes too or `within` passes. Closing with unread
    /// bytes would reset the connection, and a reset can discard the peer's unread END and
    /// fail its next ACK, leaving it waiting for a resume that never comes.
    pub(crate) fn close_after_peer(self, within: Duration) {
        self.keeper_stop.store(true, Ordering::Release);
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        let deadline = Instant::now() + within;
        let mut scratch = [0u8; 4096];
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            wait_fd(&self.stream, PollFlags::IN, left);
            match rustix::net::recv(&self.stream, &mut scratch, RecvFlags::DONTWAIT) {
                Ok((0, _)) => break,
                Ok(_) | Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => break,
            }
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.keeper_stop.store(true, Ordering::Release);
        if let Some(k) = self.keeper.take() {
            // Woken, the keeper sees the flag and ends at once. It is not waited for: a join
            // waits for a thread's exit (a few hundred µs on a loaded machine), which would
            // hold back whatever this thread does next (a reflector's last frames).
            k.thread().unpark();
        }
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// [`Conn::send_vectored`] on a secure connection: seals `iov` in records and sends them.
/// A plaintext byte counts as sent once its whole record went out; a record sealed but not
/// all sent stays (its plaintext is the front of the caller's next `iov`, which resends the
/// rest of the same frame) and goes out first on the next call.
fn send_sealed(
    tx: &mut Tx,
    stream: &TcpStream,
    iov: &[IoSlice<'_>],
    total: usize,
) -> std::io::Result<usize> {
    let mut counted = 0;
    loop {
        if !tx.out.is_empty() {
            if !tx.flush(stream)? {
                break;
            }
            counted += std::mem::take(&mut tx.out_plain);
        }
        if counted >= total {
            break;
        }
        // The next record's plaintext, from byte `counted` of iov (always a record's start):
        // a long slice's part on its own, sealed from where it lies (split at MAX_PLAIN), or
        // the short slices before the next long one, gathered.
        let Tx {
            sealer,
            out,
            out_plain,
            gather,
            ..
        } = &mut *tx;
        let mut skip = counted;
        let mut own: Option<&[u8]> = None;
        gather.clear();
        for s in iov {
            if skip >= s.len() {
                skip -= s.len();
                continue;
            }
            let part = &s[skip..];
            skip = 0;
            if part.len() >= OWN_RECORD {
                if gather.is_empty() {
                    own = Some(&part[..part.len().min(MAX_PLAIN)]);
                }
                break;
            }
            if gather.len() + part.len() > MAX_PLAIN {
                break;
            }
            gather.extend_from_slice(part);
        }
        let plain = own.unwrap_or(gather);
        sealer
            .as_mut()
            .expect("a secure connection")
            .seal(plain, out)?;
        *out_plain = plain.len();
    }
    tx.mid_frame = counted < total;
    Ok(counted)
}

/// Writes all of `bytes`, polling for room until `deadline`.
fn send_all(stream: &TcpStream, mut bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match rustix::net::send(stream, bytes, SendFlags::NOSIGNAL | SendFlags::DONTWAIT) {
            Ok(n) => bytes = &bytes[n..],
            Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => {
                let now = Instant::now();
                if now >= deadline {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the peer takes no bytes (send buffer full)",
                    ));
                }
                wait_fd(stream, PollFlags::OUT, deadline - now);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The keeper: every quarter period, if nothing went out for a whole period and no frame is
/// half-written, sends a HEARTBEAT. A heartbeat that cannot go out within a period (the peer
/// takes nothing) ends the connection: the node's next call sees the error.
fn keep(stream: &TcpStream, tx: &Mutex<Tx>, stop: &AtomicBool, period: Duration) {
    let tick = (period / 4).max(Duration::from_millis(5));
    let beat = wire::heartbeat();
    while !stop.load(Ordering::Acquire) {
        std::thread::park_timeout(tick);
        if stop.load(Ordering::Acquire) {
            return;
        }
        let mut tx = tx.lock().unwrap_or_else(PoisonError::into_inner);
        if tx.mid_frame || !tx.out.is_empty() || tx.last.elapsed() < period {
            continue;
        }
        if tx.sealer.is_some() {
            if tx
                .seal_and_send(stream, &beat, Instant::now() + period)
                .is_err()
            {
                let _ = stream.shutdown(std::net::Shutdown::Both);
                return;
            }
            tx.last = Instant::now();
            continue;
        }
        // A heartbeat that does not even start to go out is simply skipped (the socket is
        // full, so the peer hears our data); one that started must be completed.
        match rustix::net::send(stream, &beat, SendFlags::NOSIGNAL | SendFlags::DONTWAIT) {
            Ok(n) if n == beat.len() => tx.last = Instant::now(),
            Ok(n) => {
                if send_all(stream, &beat[n..], Instant::now() + period).is_err() {
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    return;
                }
                tx.last = Instant::now();
            }
            Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
    }
}
