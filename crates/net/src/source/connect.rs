//! How a waiting `tcp_source` gets its sender: it connects (`tcp://`), or takes the next
//! connection a listener's [`Acceptor`] prepared (`tcp-listen://`: the secure handshake and
//! the HELLO done on the acceptor's helper, within the admission's budget); and how it refuses
//! one.

use super::receive::Session;
use super::TcpSource;
use crate::accept::{Acceptor, Admission, Prepare};
use crate::conn::{io_err, Conn, Endpoint};
use crate::decoder::{Decoder, Event, Need, Role};
use crate::secure::Link;
use crate::wire::{self, Hello};
use crate::NetError;
use sluice_runtime::{Item, ItemType, NodeError, Output, Work};
use std::time::Duration;

/// How long one look for a new connection waits.
const CONNECT_WAIT: Duration = Duration::from_millis(20);

/// A connection that completed its handshake and HELLO on an acceptor's helper.
pub(super) struct Arrival {
    link: Link,
    /// The peer's address, for messages.
    peer: String,
    /// The HELLO frame's bytes, as received (at most a header and `MAX_CONTROL` bytes).
    raw: Vec<u8>,
}

impl<T: Item> TcpSource<T> {
    /// Connecting or resuming: gives up once the timeout passed, else waits a little for a
    /// sender, and receives at once from one that came.
    pub(super) fn wait(&mut self, out: &mut Output<T>) -> Result<Work, NodeError> {
        self.check_timeout(self.received(out))?;
        if !self.warm_started(out) {
            return Ok(Work::Progress);
        }
        if self.opts.fenced {
            self.accept_fenced(out, CONNECT_WAIT)?;
        } else if matches!(self.endpoint, Endpoint::Listen(_)) {
            self.accept_sender(out)?;
        } else {
            self.connect_sender(out)?;
        }
        if !self.state.connected() {
            return Ok(Work::Progress);
        }
        self.stream(out)
    }

    /// A listening source takes the next sender its acceptor prepared, and welcomes it.
    fn accept_sender(&mut self, out: &mut Output<T>) -> Result<(), NodeError> {
        let received = self.received(out);
        let Some((hello, decoder, link)) = self.arrival(CONNECT_WAIT, received)? else {
            return Ok(());
        };
        let conn = Conn::new(link, self.opts.heartbeat)
            .map_err(|e| io_err(&self.endpoint.describe(), received, "socket setup", &e))?;
        self.state.connect(Session::new(conn, decoder));
        if let Err(e) = self.welcome(hello, out) {
            self.lose(e)?;
        }
        Ok(())
    }

    /// A connecting source connects to its sender (and authenticates it); the HELLO comes in
    /// the receive loop.
    fn connect_sender(&mut self, out: &Output<T>) -> Result<(), NodeError> {
        let received = self.received(out);
        let Some(stream) = self.endpoint.establish(CONNECT_WAIT, received)? else {
            return Ok(());
        };
        let Some(link) = crate::auth::guard(&self.endpoint, stream, &self.opts, &mut self.refused)?
        else {
            return Ok(());
        };
        let conn = Conn::new(link, self.opts.heartbeat)
            .map_err(|e| io_err(&self.endpoint.describe(), received, "socket setup", &e))?;
        let decoder = self.decoder(&conn.peer, received);
        self.state.connect(Session::new(conn, decoder));
        Ok(())
    }

    /// A listening source's next sender that completed its handshake and HELLO (waiting at
    /// most `wait`): its HELLO, its decoder (past the HELLO, at `received`) and its link. The
    /// acceptor starts on the first call.
    pub(super) fn arrival(
        &mut self,
        wait: Duration,
        received: u64,
    ) -> Result<Option<(Hello, Decoder, Link)>, NetError> {
        if self.acceptor.is_none() {
            let Endpoint::Listen(listener) = &self.endpoint else {
                return Ok(None);
            };
            // A configuration error shows now, not as every peer's refusal.
            self.opts.credentials()?;
            let setup = |e: std::io::Error| {
                NetError::Config(format!(
                    "cannot accept on {}: {e}",
                    self.endpoint.describe()
                ))
            };
            let listener = listener.try_clone().map_err(setup)?;
            let prepare = self.prepare();
            let acceptor =
                Acceptor::start(listener, "tcp_source", self.opts.accept_options(), prepare)
                    .map_err(setup)?;
            self.acceptor = Some(acceptor);
        }
        let Some(acceptor) = &self.acceptor else {
            return Ok(None);
        };
        let Some(arrival) = acceptor.next(wait) else {
            return Ok(None);
        };
        // The HELLO again, through a decoder at this end's offset now (the acceptor's took it
        // at offset 0, before the node knew when it would take the connection).
        let mut decoder = self.decoder(&arrival.peer, received);
        match replay(&mut decoder, &arrival.raw) {
            Ok(hello) => Ok(Some((hello, decoder, arrival.link))),
            Err(e) => {
                refuse(arrival.link, &e.to_string(), Some(&arrival.peer));
                Ok(None)
            }
        }
    }

    /// What an acceptor's helper does with a new connection: the secure handshake (with
    /// credentials), then the HELLO, all within the budget (`auth_timeout`). A HELLO this
    /// source cannot take (another item type, vector length or fence) refuses the connection.
    fn prepare(&self) -> std::sync::Arc<Prepare<Arrival>> {
        let opts = self.opts.clone();
        let item = ItemType::of::<T>();
        let (name, size) = (item.name().to_string(), item.size() as u32);
        std::sync::Arc::new(move |stream, admission: &Admission| {
            let peer = admission.peer.to_string();
            let mut link = crate::auth::admit(stream, &opts, admission)?;
            let mut decoder = Decoder::new(
                Role::Receiver,
                &peer,
                opts.max_frame,
                Some((&name, size)),
                0,
            )
            .with_vlen(opts.vlen() as u32);
            if opts.messages {
                decoder = decoder.with_messages(0);
            }
            // (The acceptor logs why.)
            let refused = |link: Link, why: String| {
                refuse(link, &why, None);
                why
            };
            let (hello, raw) = match read_first_hello(&mut link, &mut decoder, admission) {
                Ok(got) => got,
                Err(e) => return Err(refused(link, e.to_string())),
            };
            if hello.fence.is_some() != opts.fenced {
                let why = if opts.fenced {
                    "this receiver takes fenced senders only (the replicas of a partition with a standby): the sender has no fence"
                } else {
                    "a fenced sender (one replica of a partition with a standby) needs a receiver with fenced = true"
                };
                return Err(refused(link, why.to_string()));
            }
            Ok(Arrival { link, peer, raw })
        })
    }
}

/// Refuses a connection: an ERROR frame to the peer (best effort). With `log_as` (the peer's
/// address) a line on stderr says why, at most a line a second (a peer that reconnects in a
/// loop must not flood the log); without, the caller has it logged (an acceptor's helper
/// returns why to the acceptor, which logs it).
pub(super) fn refuse(mut link: Link, why: &str, log_as: Option<&str>) {
    if let Some(peer) = log_as {
        static REFUSALS: std::sync::Mutex<crate::accept::RateLog> =
            std::sync::Mutex::new(crate::accept::RateLog::new());
        REFUSALS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .line(
                Duration::from_secs(1),
                &format!("refused {peer}: {}", crate::escape::text(why)),
            );
    }
    let _ = link
        .stream
        .set_write_timeout(Some(Duration::from_millis(100)));
    let _ = link.write_all(&wire::error(why));
}

/// Reads a new connection's first frame, which must be a HELLO, within the admission's budget
/// (blocking: this runs on an acceptor's helper): the HELLO and its bytes.
fn read_first_hello(
    link: &mut Link,
    decoder: &mut Decoder,
    admission: &Admission,
) -> Result<(Hello, Vec<u8>), NetError> {
    let peer = admission.peer.to_string();
    link.stream
        .set_nonblocking(false)
        .map_err(|e| io_err(&peer, 0, "socket setup", &e))?;
    let mut raw = Vec::new();
    loop {
        let Need::Control(n) = decoder.need() else {
            unreachable!("a connection starts with control frames");
        };
        // Each read waits at most for what is left of the budget; the acceptor shuts the
        // socket down when the budget ends, so a trickle of bytes cannot stretch it.
        let left = admission.left();
        if left.is_zero() {
            return Err(io_err(
                &peer,
                0,
                "read HELLO",
                &std::io::ErrorKind::TimedOut.into(),
            ));
        }
        link.stream
            .set_read_timeout(Some(left))
            .map_err(|e| io_err(&peer, 0, "socket setup", &e))?;
        let space = decoder.control_space();
        link.read_exact(space)
            .map_err(|e| io_err(&peer, 0, "read HELLO", &e))?;
        raw.extend_from_slice(space);
        match decoder.control_filled(n)? {
            None => {}
            Some(Event::Hello(h)) => return Ok((h, raw)),
            Some(other) => {
                return Err(NetError::Protocol {
                    peer,
                    offset: 0,
                    kind: "HELLO",
                    what: format!("expected HELLO first, got {other:?}"),
                })
            }
        }
    }
}

/// Feeds a HELLO's bytes (from [`read_first_hello`]) through `decoder`.
fn replay(decoder: &mut Decoder, mut raw: &[u8]) -> Result<Hello, NetError> {
    while let Need::Control(n) = decoder.need() {
        if raw.len() < n {
            break;
        }
        decoder.control_space().copy_from_slice(&raw[..n]);
        raw = &raw[n..];
        if let Some(Event::Hello(h)) = decoder.control_filled(n)? {
            return Ok(h);
        }
    }
    Err(NetError::Config(
        "a HELLO taken by the acceptor did not decode again (a bug)".into(),
    ))
}
