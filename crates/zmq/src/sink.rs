//! `zmq_push_sink`, `zmq_pub_sink`, `zmq_rep_sink`: gr-zeromq's sinks. Each message is one
//! frame (after the PUB key frame, if any): the tag header when `pass_tags` is on, then the
//! items, sent with one vectored write straight from the input queue's window. Items are
//! consumed once the whole message is in the kernel's socket buffer.

use crate::tag_header;
use crate::{Sent, Socket, SocketType, ZmqError, ZmqOptions};
use sluice_runtime::{Input, Item, Node, NodeError, Ports, Tag, TagPolicy, Work, WorkIo};
use std::marker::PhantomData;
use std::time::Duration;

/// A gr-zeromq-compatible sink of `T` items over a PUSH, PUB or REP socket.
#[derive(Debug)]
pub struct ZmqSink<T> {
    socket: Socket,
    opts: ZmqOptions,
    /// The tag header of the message in flight.
    header: Vec<u8>,
    tags: Vec<Tag>,
    /// Items of the message being sent (unconsumed until it is all out).
    inflight: Option<usize>,
    /// REP: items the current request asked for.
    requested: Option<u64>,
    /// REP: the first bytes of a request whose body is coming.
    request_body: Option<Vec<u8>>,
    /// REP: replies not sent because their requester left (their items went to the next).
    orphaned: u64,
    messages: u64,
    _items: PhantomData<T>,
}

impl<T: Item> ZmqSink<T> {
    /// A sink on a socket of `kind` (PUSH, PUB or REP) with `opts`.
    pub fn new(kind: SocketType, opts: ZmqOptions) -> Result<Self, ZmqError> {
        if !matches!(kind, SocketType::Push | SocketType::Pub | SocketType::Rep) {
            return Err(ZmqError::Config(format!(
                "a sink needs a PUSH, PUB or REP socket, not {}",
                kind.name()
            )));
        }
        let sopts = opts.socket_options();
        Ok(ZmqSink {
            socket: Socket::new(kind, &opts.address, opts.bind, sopts)?,
            opts,
            header: Vec::new(),
            tags: Vec::new(),
            inflight: None,
            requested: None,
            request_body: None,
            orphaned: 0,
            messages: 0,
            _items: PhantomData,
        })
    }

    /// The bound address, for a sink that binds (its port when it asked for port 0).
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.socket.local_addr()
    }

    /// REP: the number of items the next request asks for, once it came whole. Never waits:
    /// a request's body that is slow to come is taken over several calls (and a requester
    /// that stops in the middle is closed by the socket's frame timeout, its request dropped).
    fn request(&mut self) -> Result<Option<u64>, ZmqError> {
        if self.request_body.is_none() {
            let Some(_) = self.socket.next_frame()? else {
                return Ok(None);
            };
            self.request_body = Some(Vec::with_capacity(4));
        }
        let body = self.request_body.as_mut().expect("a request is coming");
        loop {
            let mut b = [0u8; 4];
            let room = 4usize.saturating_sub(body.len());
            let step = if room > 0 {
                self.socket.read_into(&mut b[..room]).map(|k| k as u64)
            } else {
                self.socket.skip(self.socket.remaining())
            };
            let got = match step {
                Ok(k) => {
                    body.extend_from_slice(&b[..(k as usize).min(room)]);
                    k
                }
                Err(e) if e.is_peer() => {
                    // The requester left or was closed mid-request: nothing to answer.
                    self.request_body = None;
                    return Ok(None);
                }
                Err(e) => return Err(e),
            };
            if self.socket.remaining() == 0 {
                break;
            }
            if got == 0 {
                return Ok(None);
            }
        }
        let body = self.request_body.take().unwrap_or_default();
        // gr-zeromq's req_source sends a host-order u32; a shorter request asks for anything.
        Ok(Some(match body.get(..4) {
            Some(b) => u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            None => u64::MAX,
        }))
    }
}

impl<T: Item> ZmqSink<T> {
    /// Starts the next message: the items it takes from `input` (its tag header encoded), or
    /// the outcome of `work` while there is none to send.
    fn next_message(
        &mut self,
        input: &mut Input<T>,
        stop: bool,
    ) -> Result<Result<usize, Work>, NodeError> {
        if self.socket.kind() == SocketType::Rep && self.requested.is_none() {
            match self.request()? {
                Some(r) => self.requested = Some(r),
                None => {
                    if stop {
                        return Ok(Err(Work::Done));
                    }
                    self.socket.wait(self.opts.slice(), false);
                    return Ok(Err(Work::Progress));
                }
            }
        }
        let Some(window) = input.window(1)? else {
            self.socket.poll()?;
            return Ok(Err(Work::NeedInput { port: 0, items: 1 }));
        };
        if window.is_empty() {
            return Ok(Err(Work::Done));
        }
        let mut n = window.len();
        if self.opts.max_items > 0 {
            n = n.min(self.opts.max_items);
        }
        if let Some(r) = self.requested {
            n = n.min(usize::try_from(r).unwrap_or(usize::MAX));
        }
        self.header.clear();
        if self.opts.pass_tags {
            let start = input.items_read();
            self.tags.clear();
            input.take_tags(start + n as u64, &mut self.tags);
            tag_header::encode(start, &self.tags, &mut self.header)
                .map_err(|e| NodeError::caused("tag header", e))?;
        }
        self.inflight = Some(n);
        Ok(Ok(n))
    }
}

impl<T: Item> Node for ZmqSink<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in")
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let stop = io.stop_requested();
        let input = io.inputs.get::<T>(0)?;
        let n = match self.inflight {
            Some(n) => n,
            None => match self.next_message(input, stop)? {
                Ok(n) => n,
                Err(outcome) => return Ok(outcome),
            },
        };
        let window = input
            .window(n)?
            .expect("the message's items stay in the window until it is sent");
        let payload: &[u8] = bytemuck::cast_slice(&window[..n]);
        let key: [&[u8]; 1] = [&self.opts.key];
        let body: [&[u8]; 2] = [&self.header, payload];
        let sent = if self.socket.kind() == SocketType::Pub && !self.opts.key.is_empty() {
            self.socket.send(&[&key, &body])?
        } else {
            self.socket.send(&[&body])?
        };
        match sent {
            Sent::Done => {
                input.consume(n);
                self.inflight = None;
                self.requested = None;
                self.messages += 1;
            }
            Sent::NoPeer if self.socket.kind() == SocketType::Rep => {
                // The requester left before its reply went out: the items stay for the next
                // request (libzmq drops such a reply; here nothing of the stream is lost).
                self.inflight = None;
                self.requested = None;
                self.orphaned += 1;
            }
            Sent::Pending | Sent::NoPeer => {
                if stop && sent == Sent::NoPeer {
                    return Ok(Work::Done);
                }
                self.socket.wait(self.opts.slice(), true);
            }
        }
        Ok(Work::Progress)
    }

    fn stop(&mut self) {
        self.socket.linger(Duration::from_secs(1));
    }

    fn warnings(&mut self) -> Vec<String> {
        let mut w = Vec::new();
        let dropped = self.socket.dropped();
        if dropped > 0 {
            w.push(format!(
                "{dropped} messages were not sent to a subscriber whose socket was full (drop_on_hwm); {} messages were sent",
                self.messages
            ));
        }
        if self.orphaned > 0 {
            w.push(format!(
                "{} replies were not sent because their requester left (their items went to the next request)",
                self.orphaned
            ));
        }
        w.extend(refusals(&self.socket));
        w
    }
}

/// The warning about refused connections and failed accepts, if any.
pub(crate) fn refusals(socket: &Socket) -> Option<String> {
    let (refused, failed) = (socket.refused(), socket.accept_failures());
    (refused + failed > 0).then(|| {
        format!(
            "{refused} connections were closed for the peer's misbehaviour and accept failed {failed} times; the last: {}",
            socket.last_refusal().unwrap_or("-")
        )
    })
}
