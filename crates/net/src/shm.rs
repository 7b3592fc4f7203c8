//! `shm_sink` and `shm_source`: a stream between two processes on one machine through a ring in
//! shared memory ([`sluice_queue::ShmWriter`] / [`ShmReader`]).
//!
//! The two ends meet on a Unix stream socket (`unix:PATH` connects, `unix-listen:PATH` listens;
//! a path starting with `@` is in the abstract namespace and leaves no file behind). The sink
//! creates the ring and sends, in one `sendmsg`, a HELLO frame of the TCP wire
//! (`docs/net/wire.md`: item type, size, metadata) with the ring's memfd attached
//! (`SCM_RIGHTS`). The source checks the item type, attaches, and answers with a u32 length and
//! that many bytes of UTF-8: empty to accept, an error message to refuse. From then on the
//! items go through the ring; the socket carries only tag lists (a u32 length, then the TCP
//! wire's tag list encoding), each sent before the items it tags are committed, so a reader
//! that sees an item finds its tags already in the socket. The end of the stream is a flag in
//! the ring; a peer that dies is found by its pid (`SO_PEERCRED`, then a pidfd), a peer that
//! misbehaves by the ring's counter checks. `docs/net/shm.md` is the specification.
//!
//! Copies: the sink copies its input window into the ring, the source copies the ring into its
//! output queue, both in user space with no system call per item batch. (A program that writes
//! straight into an `ShmWriter` and reads straight from an `ShmReader` copies nothing:
//! `sluice bench shm` measures that path.)

use crate::accept::RateLog;
use crate::wire::{self, Hello};
use crate::{Decoder, Event, Need, NetError, Role};
use rustix::fd::{AsFd, OwnedFd};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use sluice_queue::{QueueError, RingReader, RingWriter, ShmReader, ShmWriter};
use sluice_runtime::{Item, ItemType, Node, NodeError, Ports, Tag, TagPolicy, Work, WorkIo};
use std::collections::VecDeque;
use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::marker::PhantomData;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long one `work` call may wait for the peer, for items or for room, before it returns to
/// the scheduler (which then looks at stop requests).
const TURN: Duration = Duration::from_millis(20);
/// The longest tag list message accepted.
const MAX_TAG_MESSAGE: u32 = wire::MAX_CONTROL as u32;

/// Where a shared-memory stream meets its peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShmEndpoint {
    /// `unix:PATH`: connect to a listening peer.
    Connect(String),
    /// `unix-listen:PATH`: listen for the peer.
    Listen(String),
}

impl ShmEndpoint {
    /// Parses `unix:PATH` or `unix-listen:PATH` (`@name` for the abstract namespace).
    pub fn parse(url: &str) -> Result<ShmEndpoint, NetError> {
        let (listen, path) = if let Some(p) = url.strip_prefix("unix-listen:") {
            (true, p)
        } else if let Some(p) = url.strip_prefix("unix:") {
            (false, p)
        } else {
            return Err(NetError::Config(format!(
                "'{url}' is not a shared-memory endpoint: use unix:PATH to connect or \
                 unix-listen:PATH to listen (@name for the abstract namespace)"
            )));
        };
        if path.is_empty() || path == "@" {
            return Err(NetError::Config(format!("'{url}' names no socket path")));
        }
        Ok(if listen {
            ShmEndpoint::Listen(path.to_string())
        } else {
            ShmEndpoint::Connect(path.to_string())
        })
    }

    fn path(&self) -> &str {
        match self {
            ShmEndpoint::Connect(p) | ShmEndpoint::Listen(p) => p,
        }
    }

    fn addr(&self) -> Result<SocketAddr, NetError> {
        let path = self.path();
        let made = match path.strip_prefix('@') {
            Some(name) => SocketAddr::from_abstract_name(name.as_bytes()),
            None => SocketAddr::from_pathname(path),
        };
        made.map_err(|e| NetError::Config(format!("socket address '{path}': {e}")))
    }
}

/// A listening socket, or a connection being looked for.
enum Meeting {
    Listening(UnixListener, Option<PathBuf>),
    Connecting,
}

impl Drop for Meeting {
    fn drop(&mut self) {
        if let Meeting::Listening(_, Some(path)) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Opens the meeting point: binds a listener (replacing a stale socket file nobody listens on,
/// never any other file), or nothing yet for a connecting end.
fn meet(endpoint: &ShmEndpoint) -> Result<Meeting, NetError> {
    let ShmEndpoint::Listen(path) = endpoint else {
        return Ok(Meeting::Connecting);
    };
    let addr = endpoint.addr()?;
    let file = (!path.starts_with('@')).then(|| PathBuf::from(path));
    if let Some(file) = &file {
        if let Ok(meta) = std::fs::symlink_metadata(file) {
            use std::os::unix::fs::FileTypeExt;
            let stale = meta.file_type().is_socket() && UnixStream::connect(file).is_err();
            if !stale {
                return Err(NetError::Config(format!(
                    "cannot listen on {path}: {} already exists{}",
                    if meta.file_type().is_socket() {
                        "a socket with a listener"
                    } else {
                        "a file that is not a socket"
                    },
                    " (it was left alone)"
                )));
            }
            let _ = std::fs::remove_file(file);
        }
    }
    let listener = UnixListener::bind_addr(&addr)
        .map_err(|e| NetError::Config(format!("cannot listen on {path}: {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| NetError::Config(format!("{path}: {e}")))?;
    Ok(Meeting::Listening(listener, file))
}

impl Meeting {
    /// A connection if one can be made within `wait`.
    fn connection(
        &mut self,
        endpoint: &ShmEndpoint,
        wait: Duration,
        log: &mut RateLog,
    ) -> Result<Option<UnixStream>, NetError> {
        let until = Instant::now() + wait;
        loop {
            let got = match self {
                Meeting::Listening(listener, _) => match listener.accept() {
                    Ok((s, _)) => Some(s),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
                    Err(e) => {
                        // Transient, as on every listener: out of descriptors (the peer
                        // waits in the backlog until one is free) or one connection that
                        // failed. The meeting goes on until its timeout.
                        let line =
                            format!("{}: accept failed ({e}); still waiting", endpoint.path());
                        log.line(Duration::from_secs(1), &line);
                        None
                    }
                },
                Meeting::Connecting => UnixStream::connect_addr(&endpoint.addr()?).ok(),
            };
            // Only a process of this user is met: an abstract name has no file mode, so
            // anyone could otherwise feed (or read) this end's stream.
            if let Some(stream) = got.filter(|s| same_user(s, endpoint)) {
                stream
                    .set_nonblocking(false)
                    .map_err(|e| NetError::Config(format!("{}: {e}", endpoint.path())))?;
                return Ok(Some(stream));
            }
            if Instant::now() >= until {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Where and until when one end looks for its peer: the endpoint, the listener while it is
/// open, and when the looking began.
struct Rendezvous {
    endpoint: ShmEndpoint,
    timeout: Duration,
    meeting: Option<Meeting>,
    started: Option<Instant>,
    /// Failed accepts, at most a line a second.
    log: RateLog,
}

impl Rendezvous {
    fn new(url: &str, timeout: Duration) -> Result<Self, NetError> {
        Ok(Rendezvous {
            endpoint: ShmEndpoint::parse(url)?,
            timeout,
            meeting: None,
            started: None,
            log: RateLog::new(),
        })
    }

    /// The connection and the peer's name once the peer is met (the listener is closed then);
    /// `Ok(None)` while it is not met yet; an error once `timeout` has passed without it.
    fn try_meet(&mut self) -> Result<Option<(UnixStream, String)>, NetError> {
        let started = *self.started.get_or_insert_with(Instant::now);
        if self.meeting.is_none() {
            self.meeting = Some(meet(&self.endpoint)?);
        }
        let meeting = self.meeting.as_mut().expect("opened above");
        let Some(stream) = meeting.connection(&self.endpoint, TURN, &mut self.log)? else {
            if started.elapsed() > self.timeout {
                return Err(NetError::Config(format!(
                    "no shared-memory peer met at {} within {:.1} s",
                    self.endpoint.path(),
                    self.timeout.as_secs_f64()
                )));
            }
            return Ok(None);
        };
        self.meeting = None;
        let peer = peer_name(self.endpoint.path(), peer_pid(&stream));
        Ok(Some((stream, peer)))
    }

    /// Stops looking: closes (and removes) the listener.
    fn close(&mut self) {
        self.meeting = None;
    }
}

/// Whether the peer runs as this process's user (`SO_PEERCRED`); another is logged and
/// dropped, and the meeting goes on.
fn same_user(stream: &UnixStream, endpoint: &ShmEndpoint) -> bool {
    let me = rustix::process::geteuid().as_raw();
    match rustix::net::sockopt::socket_peercred(stream) {
        Ok(c) if c.uid.as_raw() == me => true,
        Ok(c) => {
            eprintln!(
                "sluice-net: {}: refused a peer of uid {} (pid {}): only uid {me} may meet this end",
                endpoint.path(),
                c.uid.as_raw(),
                c.pid.as_raw_nonzero().get()
            );
            false
        }
        Err(e) => {
            eprintln!(
                "sluice-net: {}: refused a peer without credentials: {e}",
                endpoint.path()
            );
            false
        }
    }
}

/// The peer's process id, from the kernel (`SO_PEERCRED`), for messages and the pidfd watch.
fn peer_pid(stream: &UnixStream) -> Option<i32> {
    rustix::net::sockopt::socket_peercred(stream)
        .ok()
        .map(|c| c.pid.as_raw_nonzero().get())
}

fn peer_name(path: &str, pid: Option<i32>) -> String {
    match pid {
        Some(pid) => format!("{path} (pid {pid})"),
        None => path.to_string(),
    }
}

fn io_error(peer: &str, what: &str, e: impl std::fmt::Display) -> NetError {
    NetError::Config(format!("shared-memory peer {peer}: {what}: {e}"))
}

fn queue_error(peer: &str, e: QueueError) -> NetError {
    NetError::Config(format!("shared-memory stream with {peer}: {e}"))
}

/// Options of both shared-memory blocks.
#[derive(Debug, Clone)]
pub struct ShmOptions {
    /// Bytes of ring the sink creates (rounded up to whole pages and items).
    pub ring_bytes: usize,
    /// How long to wait for the peer to meet before failing.
    pub connect_timeout: Duration,
}

impl Default for ShmOptions {
    fn default() -> Self {
        ShmOptions {
            ring_bytes: 8 << 20,
            connect_timeout: Duration::from_secs(60),
        }
    }
}

/// The connected state of a sink.
struct SinkSession<T: Item> {
    stream: UnixStream,
    ring: ShmWriter<T>,
    peer: String,
}

/// Sends its input stream to an [`ShmSource`] in another process through a shared ring.
pub struct ShmSink<T: Item> {
    rendezvous: Rendezvous,
    opts: ShmOptions,
    session: Option<SinkSession<T>>,
    tags: Vec<Tag>,
    tag_bytes: Vec<u8>,
}

impl<T: Item> ShmSink<T> {
    /// A sink for `url` (`unix:PATH` or `unix-listen:PATH`).
    pub fn new(url: &str, opts: ShmOptions) -> Result<Self, NetError> {
        Ok(ShmSink {
            rendezvous: Rendezvous::new(url, opts.connect_timeout)?,
            opts,
            session: None,
            tags: Vec::new(),
            tag_bytes: Vec::new(),
        })
    }

    /// Meets the peer, creates the ring and hands it over. `Ok(false)`: not yet.
    fn establish(&mut self) -> Result<bool, NetError> {
        let Some((mut stream, peer)) = self.rendezvous.try_meet()? else {
            return Ok(false);
        };
        let size = std::mem::size_of::<T>();
        let ring = ShmWriter::<T>::create(self.opts.ring_bytes.div_ceil(size).max(1))
            .map_err(|e| queue_error(&peer, e))?;
        let ring = hand_over(&mut stream, ring, &peer, self.opts.connect_timeout)?;
        self.session = Some(SinkSession { stream, ring, peer });
        Ok(true)
    }
}

/// Hands `ring` to the process at the other end of `stream` (an [`ShmSource`], or
/// [`take_over`]): sends the HELLO with the memfd, waits up to `wait` for the answer, and
/// watches the peer's pid. `peer` names it in errors.
pub fn hand_over<T: Item>(
    stream: &mut UnixStream,
    mut ring: ShmWriter<T>,
    peer: &str,
    wait: Duration,
) -> Result<ShmWriter<T>, NetError> {
    if let Some(pid) = peer_pid(stream) {
        ring.watch_peer(pid).map_err(|e| queue_error(peer, e))?;
    }
    let item = ItemType::of::<T>();
    let hello = wire::hello(&Hello {
        item_name: item.name().to_string(),
        item_size: std::mem::size_of::<T>() as u32,
        vlen: 1,
        crc: false,
        heartbeat_ms: 0,
        metadata: Vec::new(),
        fence: None,
        messages: false,
    })
    .map_err(|e| NetError::Config(format!("HELLO: {e}")))?;
    let fds = [ring.fd()];
    let mut space = [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    let sent = rustix::net::sendmsg(
        &*stream,
        &[IoSlice::new(&hello)],
        &mut control,
        SendFlags::NOSIGNAL,
    )
    .map_err(|e| io_error(peer, "sending HELLO with the ring", e))?;
    if sent != hello.len() {
        stream
            .write_all(&hello[sent..])
            .map_err(|e| io_error(peer, "sending HELLO", e))?;
    }
    stream
        .set_read_timeout(Some(wait))
        .map_err(|e| io_error(peer, "socket", e))?;
    read_answer(stream, peer)?;
    Ok(ring)
}

/// Reads the source's answer to the HELLO: a little-endian `u32` length, then that many bytes
/// of why it refused (none: accepted). At most [`MAX_TAG_MESSAGE`] bytes of the reason are read
/// and it is shown escaped: the peer wrote it.
pub(crate) fn read_answer(stream: &mut impl Read, peer: &str) -> Result<(), NetError> {
    let mut len = [0u8; 4];
    stream
        .read_exact(&mut len)
        .map_err(|e| io_error(peer, "waiting for the answer to HELLO", e))?;
    let len = u32::from_le_bytes(len);
    if len == 0 {
        return Ok(());
    }
    let mut message = Vec::new();
    // What came of it: a reason cut short is still shown.
    let _ = stream
        .take(u64::from(len.min(MAX_TAG_MESSAGE)))
        .read_to_end(&mut message);
    Err(NetError::Remote {
        peer: peer.to_string(),
        offset: 0,
        message: crate::escape::bytes(&message),
    })
}

impl<T: Item> Node for ShmSink<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in")
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        if self.session.is_none() && !self.establish()? {
            return Ok(Work::Progress);
        }
        let s = self.session.as_mut().expect("established above");
        let Some(window) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if window.is_empty() {
            s.ring.finish();
            return Ok(Work::Done);
        }
        let avail = window.len();
        let Some(space) = s
            .ring
            .reserve_timeout(1, TURN)
            .map_err(|e| queue_error(&s.peer, e))?
        else {
            return Ok(Work::Progress);
        };
        let k = avail.min(space.len());
        space[..k].copy_from_slice(&window[..k]);
        // Tags first: the peer must find them in the socket once it sees their items.
        let read = input.items_read();
        self.tags.clear();
        input.take_tags(read + k as u64, &mut self.tags);
        if !self.tags.is_empty() {
            send_tags(&mut s.stream, &self.tags, &mut self.tag_bytes)
                .map_err(|e| io_error(&s.peer, "sending tags", e))?;
        }
        s.ring.commit(k);
        input.consume(k);
        // The items' bytes went into the shared ring (the tags' through the socket).
        sluice_runtime::count_bytes(
            sluice_runtime::Direction::Sent,
            (k * std::mem::size_of::<T>()) as u64,
        );
        Ok(Work::Progress)
    }

    fn stop(&mut self) {
        self.session = None;
        self.rendezvous.close();
    }
}

/// Sends `tags` as tag list messages of at most [`MAX_TAG_MESSAGE`] bytes.
/// Writes `tags` to `stream` as tag messages (each a u32 length and the tags in the wire's
/// encoding, at most [`MAX_TAG_MESSAGE`] bytes), what [`split_tag_messages`] takes apart.
pub(crate) fn send_tags(
    stream: &mut impl Write,
    tags: &[Tag],
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    let mut at = 0;
    while at < tags.len() {
        // Grow a message tag by tag while it fits (a single tag larger than the limit is an
        // error the encoder reports).
        let mut end = at + 1;
        loop {
            buf.clear();
            buf.extend_from_slice(&[0; 4]);
            wire::encode_tags(&tags[at..end], buf)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            if buf.len() - 4 > MAX_TAG_MESSAGE as usize {
                if end == at + 1 {
                    return Err(std::io::Error::other(format!(
                        "tag '{}' encodes to more than {MAX_TAG_MESSAGE} bytes",
                        tags[at].key
                    )));
                }
                end -= 1;
                continue;
            }
            if end == tags.len() || buf.len() > MAX_TAG_MESSAGE as usize / 2 {
                break;
            }
            end += 1;
        }
        buf.clear();
        buf.extend_from_slice(&[0; 4]);
        wire::encode_tags(&tags[at..end], buf).map_err(|e| std::io::Error::other(e.to_string()))?;
        let len = (buf.len() - 4) as u32;
        buf[..4].copy_from_slice(&len.to_le_bytes());
        stream.write_all(buf)?;
        at = end;
    }
    Ok(())
}

/// The connected state of a source.
struct SourceSession<T: Item> {
    stream: UnixStream,
    ring: ShmReader<T>,
    peer: String,
    /// Bytes of tag messages received but not yet whole.
    partial: Vec<u8>,
    /// Tags received, in order, not yet put on the output.
    tags: VecDeque<Tag>,
}

impl<T: Item> SourceSession<T> {
    /// Reads the tag messages already in the socket, without waiting.
    fn drain_tags(&mut self) -> Result<(), NetError> {
        let mut chunk = [0u8; 4096];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => self.partial.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // A reset socket: the ring says whether the stream ended well.
                Err(_) => break,
            }
        }
        let at = split_tag_messages(
            &self.partial,
            &self.peer,
            self.ring.position(),
            &mut self.tags,
        )?;
        self.partial.drain(..at);
        Ok(())
    }
}

/// Takes the whole tag messages at the start of `partial` (each a u32 length, then the tags
/// in the wire's encoding, at most [`MAX_TAG_MESSAGE`] bytes) into `tags`, and returns how
/// many bytes they held; a partial message at the end waits for its rest. `peer` and
/// `position` (the ring's item) are for messages.
pub(crate) fn split_tag_messages(
    partial: &[u8],
    peer: &str,
    position: u64,
    tags: &mut impl Extend<Tag>,
) -> Result<usize, NetError> {
    let mut at = 0;
    while let Some(head) = partial.get(at..at + 4) {
        let len = u32::from_le_bytes(head.try_into().expect("4 bytes"));
        if len > MAX_TAG_MESSAGE {
            return Err(NetError::Config(format!(
                "shared-memory peer {peer}: a tag message of {len} bytes, above the limit of \
                 {MAX_TAG_MESSAGE}"
            )));
        }
        let Some(body) = partial.get(at + 4..at + 4 + len as usize) else {
            break;
        };
        let got = wire::decode_tags(body).map_err(|e| {
            NetError::Config(format!(
                "shared-memory peer {peer}: bad tag message at item {position}: {e}"
            ))
        })?;
        tags.extend(got);
        at += 4 + len as usize;
    }
    Ok(at)
}

/// Receives a stream from an [`ShmSink`] in another process through a shared ring.
pub struct ShmSource<T: Item> {
    rendezvous: Rendezvous,
    opts: ShmOptions,
    session: Option<SourceSession<T>>,
    _items: PhantomData<T>,
}

impl<T: Item> ShmSource<T> {
    /// A source for `url` (`unix:PATH` or `unix-listen:PATH`).
    pub fn new(url: &str, opts: ShmOptions) -> Result<Self, NetError> {
        Ok(ShmSource {
            rendezvous: Rendezvous::new(url, opts.connect_timeout)?,
            opts,
            session: None,
            _items: PhantomData,
        })
    }

    /// Meets the peer and attaches to its ring. `Ok(false)`: not yet.
    fn establish(&mut self) -> Result<bool, NetError> {
        let Some((mut stream, peer)) = self.rendezvous.try_meet()? else {
            return Ok(false);
        };
        let ring = take_over::<T>(&mut stream, &peer, self.opts.connect_timeout)?;
        stream
            .set_nonblocking(true)
            .map_err(|e| io_error(&peer, "socket", e))?;
        self.session = Some(SourceSession {
            stream,
            ring,
            peer,
            partial: Vec::new(),
            tags: VecDeque::new(),
        });
        Ok(true)
    }
}

/// Takes over the ring the process at the other end of `stream` hands over (an [`ShmSink`],
/// or [`hand_over`]): receives the HELLO and the memfd within `wait`, checks the item type,
/// attaches, answers (with the reason when it refuses), and watches the peer's pid. `peer`
/// names it in errors.
pub fn take_over<T: Item>(
    stream: &mut UnixStream,
    peer: &str,
    wait: Duration,
) -> Result<ShmReader<T>, NetError> {
    stream
        .set_read_timeout(Some(wait))
        .map_err(|e| io_error(peer, "socket", e))?;
    let (hello, fd) = receive_hello(stream, peer)?;
    let ours = ItemType::of::<T>();
    let refusal = if hello.item_size as usize != ours.size() || hello.item_name != ours.name() {
        Some(
            NetError::ItemMismatch {
                peer: peer.to_string(),
                offset: 0,
                their_name: hello.item_name.clone(),
                their_size: hello.item_size,
                our_name: ours.name().to_string(),
                our_size: ours.size() as u32,
            }
            .to_string(),
        )
    } else {
        None
    };
    let attached = match (&refusal, fd) {
        (Some(_), _) => None,
        (None, None) => {
            return Err(NetError::Config(format!(
                "shared-memory peer {peer}: its HELLO came without the ring's descriptor"
            )))
        }
        (None, Some(fd)) => Some(ShmReader::<T>::attach(fd)),
    };
    let answer = match (&refusal, &attached) {
        (Some(r), _) => r.clone(),
        (None, Some(Err(e))) => e.to_string(),
        _ => String::new(),
    };
    let mut reply = (answer.len() as u32).to_le_bytes().to_vec();
    reply.extend_from_slice(answer.as_bytes());
    let _ = stream.write_all(&reply);
    if let Some(r) = refusal {
        return Err(NetError::Config(r));
    }
    let mut ring = attached
        .expect("attached when not refused")
        .map_err(|e| queue_error(peer, e))?;
    if let Some(pid) = peer_pid(stream) {
        ring.watch_peer(pid).map_err(|e| queue_error(peer, e))?;
    }
    Ok(ring)
}

/// Receives the sink's HELLO frame and the descriptor that came with it.
fn receive_hello(stream: &UnixStream, peer: &str) -> Result<(Hello, Option<OwnedFd>), NetError> {
    let mut decoder = Decoder::new(Role::Receiver, peer, wire::MAX_CONTROL as u32, None, 0);
    let mut fd = None;
    loop {
        if !matches!(decoder.need(), Need::Control(_)) {
            return Err(NetError::Config(format!(
                "shared-memory peer {peer}: a HELLO frame was expected, not a payload"
            )));
        }
        let mut space = [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = rustix::net::recvmsg(
            stream.as_fd(),
            &mut [IoSliceMut::new(decoder.control_space())],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )
        .map_err(|e| io_error(peer, "receiving HELLO", e))?;
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = message {
                for received in fds {
                    // Only the first descriptor is the ring; extras are closed on drop.
                    if fd.is_none() {
                        fd = Some(received);
                    }
                }
            }
        }
        if got.bytes == 0 {
            return Err(NetError::Config(format!(
                "shared-memory peer {peer} closed the socket before its HELLO was whole"
            )));
        }
        match decoder.control_filled(got.bytes)? {
            None => {}
            Some(Event::Hello(hello)) => return Ok((hello, fd)),
            Some(other) => {
                return Err(NetError::Config(format!(
                    "shared-memory peer {peer}: expected HELLO, got {other:?}"
                )))
            }
        }
    }
}

impl<T: Item> Node for ShmSource<T> {
    fn ports(&self) -> Ports {
        Ports::new().output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let out = io.outputs.get::<T>(0)?;
        if self.session.is_none() && !self.establish()? {
            return Ok(Work::Progress);
        }
        let s = self.session.as_mut().expect("established above");
        let Some(window) = s
            .ring
            .window_timeout(1, TURN)
            .map_err(|e| queue_error(&s.peer, e))?
        else {
            return Ok(Work::Progress);
        };
        if window.is_empty() {
            return Ok(Work::Done);
        }
        let avail = window.len();
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let k = avail.min(space.len());
        space[..k].copy_from_slice(&window[..k]);
        let read = s.ring.position();
        // The window was read after the tags of its items were sent: they are in the socket.
        s.drain_tags()?;
        let first = out.items_written();
        while s.tags.front().is_some_and(|t| t.index < read + k as u64) {
            let mut tag = s.tags.pop_front().expect("checked");
            // The output queue counts from 0 as the stream does; a tag before our start (none
            // in one session) lands on the first item.
            tag.index = first + tag.index.saturating_sub(read);
            out.push_tag(tag);
        }
        out.commit(k);
        s.ring.consume(k);
        sluice_runtime::count_bytes(
            sluice_runtime::Direction::Received,
            (k * std::mem::size_of::<T>()) as u64,
        );
        Ok(Work::Progress)
    }

    fn stop(&mut self) {
        self.session = None;
        self.rendezvous.close();
    }
}
