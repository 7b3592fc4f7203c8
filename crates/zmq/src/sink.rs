//! `zmq_push_sink`, `zmq_pub_sink`, `zmq_rep_sink`: gr-zeromq's sinks. Each message is one
//! frame (after the PUB key frame, if any): the tag header when `pass_tags` is on, then the
//! items, sent with one vectored write straight from the input queue's window. Items are
//! consumed once the whole message is in the kernel's socket buffer.

use crate::tag_header;
use crate::{Sent, Socket, SocketOptions, SocketType, ZmqError, ZmqOptions};
use sluice_runtime::{Item, Node, NodeError, Ports, Tag, TagPolicy, Work, WorkIo};
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
        let sopts = SocketOptions {
            max_frame: opts.max_frame,
            drop_on_hwm: opts.drop_on_hwm,
            ..SocketOptions::default()
        };
        Ok(ZmqSink {
            socket: Socket::new(kind, &opts.address, opts.bind, sopts)?,
            opts,
            header: Vec::new(),
            tags: Vec::new(),
            inflight: None,
            requested: None,
            messages: 0,
            _items: PhantomData,
        })
    }

    /// The bound address, for a sink that binds (its port when it asked for port 0).
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.socket.local_addr()
    }

    /// REP: the number of items the next request asks for, if one came.
    fn request(&mut self) -> Result<Option<u64>, ZmqError> {
        let Some(_) = self.socket.next_frame()? else {
            return Ok(None);
        };
        let body = self.socket.read_small(4, Duration::from_secs(1))?;
        // gr-zeromq's req_source sends a host-order u32; a shorter request asks for anything.
        Ok(Some(match body.get(..4) {
            Some(b) => u64::from(u32::from_le_bytes(b.try_into().expect("four bytes"))),
            None => u64::MAX,
        }))
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
        let input = io.inputs.get::<T>(0)?;
        let n = match self.inflight {
            Some(n) => n,
            None => {
                if self.socket.kind() == SocketType::Rep && self.requested.is_none() {
                    match self.request()? {
                        Some(r) => self.requested = Some(r),
                        None => {
                            if io.stop_requested() {
                                return Ok(Work::Done);
                            }
                            self.socket.wait(self.opts.slice(), false);
                            return Ok(Work::Progress);
                        }
                    }
                }
                let Some(window) = input.window(1)? else {
                    self.socket.poll()?;
                    return Ok(Work::NeedInput { port: 0, items: 1 });
                };
                if window.is_empty() {
                    return Ok(Work::Done);
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
                        .map_err(|e| NodeError::msg(format!("tag header: {e}")))?;
                }
                self.inflight = Some(n);
                n
            }
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
            Sent::Pending | Sent::NoPeer => {
                if io.stop_requested() && sent == Sent::NoPeer {
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
        let dropped = self.socket.dropped();
        if dropped == 0 {
            return Vec::new();
        }
        vec![format!(
            "{dropped} messages were not sent to a subscriber whose socket was full (drop_on_hwm); {} messages were sent",
            self.messages
        )]
    }
}
