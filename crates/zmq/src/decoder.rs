//! The ZMTP receive state machine: greeting, frame headers and commands pass through it;
//! data frame bodies do not (the caller reads them wherever it wants them: a queue's
//! reservation).
//!
//! Feed it any chunking of the bytes with [`Decoder::feed`]; it returns how many it took and at
//! most one [`Event`]. After [`Event::Message`] it is in the payload state: it takes no bytes
//! until the caller has accounted for the body with [`Decoder::payload_done`]. The fuzz target
//! `zmq_receive` drives it with arbitrary chunks.

use crate::zmtp::{self, SocketType, COMMAND, GREETING_LEN, LONG, MORE};
use crate::ZmqError;

/// The longest command body accepted (READY with its properties, SUBSCRIBE with its topic).
pub const MAX_COMMAND: u64 = 64 << 10;

/// What the decoder recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The peer's greeting was valid (signature, version 3.x, NULL mechanism).
    Greeting {
        /// The peer's ZMTP minor version (0 or 1).
        minor: u8,
    },
    /// The peer's READY: its socket type fits ours.
    Ready {
        /// Its Socket-Type.
        socket_type: String,
        /// Its Identity (empty if none).
        identity: Vec<u8>,
    },
    /// A data frame of `len` bytes starts; its body follows (see [`Decoder::payload_done`]).
    Message {
        /// Body length.
        len: u64,
        /// More frames of the same message follow.
        more: bool,
    },
    /// ZMTP 3.1 SUBSCRIBE command.
    Subscribe(Vec<u8>),
    /// ZMTP 3.1 CANCEL command.
    Cancel(Vec<u8>),
    /// PING: answer with PONG carrying `context`.
    Ping {
        /// The context to echo.
        context: Vec<u8>,
    },
    /// PONG (an answer to a PING; sluice sends none, so nothing to do).
    Pong,
    /// A command sluice does not know (ignored, as the spec allows).
    Unknown(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Greeting,
    Flags,
    Size { flags: u8 },
    Command { len: usize },
    Payload { remaining: u64 },
}

/// The receive state machine of one connection (see the module docs).
#[derive(Debug)]
pub struct Decoder {
    ours: SocketType,
    peer: String,
    max_frame: u64,
    state: State,
    buf: Vec<u8>,
    ready: bool,
}

impl Decoder {
    /// A decoder for a connection of our `ours` socket with `peer`, refusing data frames over
    /// `max_frame` bytes.
    pub fn new(ours: SocketType, peer: &str, max_frame: u64) -> Self {
        Decoder {
            ours,
            peer: peer.to_string(),
            max_frame,
            state: State::Greeting,
            buf: Vec::with_capacity(GREETING_LEN),
            ready: false,
        }
    }

    /// The peer this decoder reads from.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// Whether the peer's greeting came.
    pub fn greeted(&self) -> bool {
        self.state != State::Greeting
    }

    /// Whether the peer sent at least a ZMTP signature (it is a ZeroMQ peer).
    pub fn signed(&self) -> bool {
        self.state != State::Greeting || self.buf.len() >= 10
    }

    /// Whether the peer's READY came.
    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// Body bytes of the current data frame still to come, when in the payload state.
    pub fn payload_remaining(&self) -> Option<u64> {
        match self.state {
            State::Payload { remaining } => Some(remaining),
            _ => None,
        }
    }

    /// Whether the decoder is between frames (nothing of a header buffered).
    pub fn between_frames(&self) -> bool {
        self.state == State::Flags && self.buf.is_empty()
    }

    /// Header bytes the current step still needs (0 in the payload state): a caller may read
    /// exactly this many to take no byte of a following body.
    pub fn header_wanted(&self) -> usize {
        let total = match self.state {
            State::Greeting => GREETING_LEN,
            State::Flags => 1,
            State::Size { flags } => {
                if flags & LONG != 0 {
                    8
                } else {
                    1
                }
            }
            State::Command { len } => len,
            State::Payload { .. } => return 0,
        };
        total - self.buf.len()
    }

    /// Accounts for `k` body bytes of the current data frame the caller took.
    ///
    /// # Panics
    /// If not in the payload state or `k` exceeds what remains (a caller bug).
    pub fn payload_done(&mut self, k: u64) {
        match &mut self.state {
            State::Payload { remaining } if *remaining >= k => {
                *remaining -= k;
                if *remaining == 0 {
                    self.state = State::Flags;
                }
            }
            other => panic!(
                "payload_done({k}) in state {other:?} for peer {}",
                self.peer
            ),
        }
    }

    fn protocol(&self, what: impl Into<String>) -> ZmqError {
        ZmqError::Protocol {
            peer: self.peer.clone(),
            what: what.into(),
        }
    }

    /// Takes header bytes from `bytes`: returns how many it took and the event they completed,
    /// if any. Takes nothing in the payload state.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(usize, Option<Event>), ZmqError> {
        let want = self.header_wanted();
        if want == 0 {
            return Ok((0, None));
        }
        let k = want.min(bytes.len());
        self.buf.extend_from_slice(&bytes[..k]);
        if self.state == State::Greeting {
            self.check_greeting_prefix()?;
        }
        if k < want {
            return Ok((k, None));
        }
        let event = self.step()?;
        Ok((k, event))
    }

    /// Checks as much of the greeting as has come, so a wrong peer is named early.
    fn check_greeting_prefix(&self) -> Result<(), ZmqError> {
        let g = &self.buf;
        for (at, expected) in [(0usize, 0xffu8), (9, 0x7f)] {
            if let Some(&byte) = g.get(at) {
                if byte != expected {
                    return Err(ZmqError::Signature {
                        peer: self.peer.clone(),
                        at,
                        byte,
                        expected,
                    });
                }
            }
        }
        if let Some(&major) = g.get(10) {
            if major < 3 {
                return Err(ZmqError::Version {
                    peer: self.peer.clone(),
                    major,
                    minor: g.get(11).copied().unwrap_or(0),
                });
            }
        }
        if g.len() >= 32 {
            let mech = &g[12..32];
            let name: Vec<u8> = mech.iter().copied().take_while(|&b| b != 0).collect();
            if name != b"NULL" || mech[name.len()..].iter().any(|&b| b != 0) {
                return Err(ZmqError::Mechanism {
                    peer: self.peer.clone(),
                    mechanism: name.escape_ascii().to_string(),
                });
            }
        }
        Ok(())
    }

    fn step(&mut self) -> Result<Option<Event>, ZmqError> {
        match self.state {
            State::Greeting => {
                let minor = self.buf[11];
                self.buf.clear();
                self.state = State::Flags;
                Ok(Some(Event::Greeting { minor }))
            }
            State::Flags => {
                let flags = self.buf[0];
                self.buf.clear();
                if flags & !(MORE | LONG | COMMAND) != 0 {
                    return Err(
                        self.protocol(format!("frame flags 0x{flags:02x} set reserved bits"))
                    );
                }
                if flags & COMMAND != 0 && flags & MORE != 0 {
                    return Err(self.protocol("a command frame with the MORE flag"));
                }
                self.state = State::Size { flags };
                Ok(None)
            }
            State::Size { flags } => {
                let len = if flags & LONG != 0 {
                    u64::from_be_bytes(self.buf[..8].try_into().expect("eight bytes"))
                } else {
                    u64::from(self.buf[0])
                };
                self.buf.clear();
                if flags & COMMAND != 0 {
                    if len > MAX_COMMAND {
                        return Err(ZmqError::TooLarge {
                            peer: self.peer.clone(),
                            len,
                            limit: MAX_COMMAND,
                        });
                    }
                    if len == 0 {
                        return Err(self.protocol("an empty command frame"));
                    }
                    self.state = State::Command { len: len as usize };
                    return Ok(None);
                }
                if !self.ready {
                    return Err(self.protocol("a data frame before READY"));
                }
                if len > self.max_frame {
                    return Err(ZmqError::TooLarge {
                        peer: self.peer.clone(),
                        len,
                        limit: self.max_frame,
                    });
                }
                self.state = if len == 0 {
                    State::Flags
                } else {
                    State::Payload { remaining: len }
                };
                Ok(Some(Event::Message {
                    len,
                    more: flags & MORE != 0,
                }))
            }
            State::Command { .. } => {
                let body = std::mem::take(&mut self.buf);
                self.state = State::Flags;
                let event = self.command(&body);
                self.buf = body;
                self.buf.clear();
                event.map(Some)
            }
            State::Payload { .. } => Ok(None),
        }
    }

    fn command(&mut self, body: &[u8]) -> Result<Event, ZmqError> {
        let n = body[0] as usize;
        if body.len() < 1 + n {
            return Err(self.protocol("command name longer than its frame"));
        }
        let name = &body[1..1 + n];
        let data = &body[1 + n..];
        if name == b"READY" {
            if self.ready {
                return Err(self.protocol("a second READY"));
            }
            let mut socket_type = None;
            let mut identity = Vec::new();
            for (k, v) in zmtp::properties(&self.peer, data)? {
                if k.eq_ignore_ascii_case(b"Socket-Type") {
                    socket_type = Some(v.escape_ascii().to_string());
                } else if k.eq_ignore_ascii_case(b"Identity") {
                    identity = v.to_vec();
                }
            }
            let Some(socket_type) = socket_type else {
                return Err(self.protocol("READY without a Socket-Type property"));
            };
            if !self.ours.peers().contains(&socket_type.as_str()) {
                return Err(ZmqError::SocketType {
                    peer: self.peer.clone(),
                    theirs: socket_type,
                    ours: self.ours.name(),
                    expected: self.ours.peers_phrase(),
                });
            }
            self.ready = true;
            return Ok(Event::Ready {
                socket_type,
                identity,
            });
        }
        if !self.ready {
            return Err(self.protocol(format!("command '{}' before READY", name.escape_ascii())));
        }
        Ok(match name {
            b"SUBSCRIBE" => Event::Subscribe(data.to_vec()),
            b"CANCEL" => Event::Cancel(data.to_vec()),
            b"PING" => {
                if data.len() < 2 || data.len() > 2 + 16 {
                    return Err(self.protocol("PING with a bad TTL or context length"));
                }
                Event::Ping {
                    context: data[2..].to_vec(),
                }
            }
            b"PONG" => Event::Pong,
            b"ERROR" => {
                let reason = match data.split_first() {
                    Some((&n, rest)) if rest.len() >= n as usize => {
                        rest[..n as usize].escape_ascii().to_string()
                    }
                    _ => data.escape_ascii().to_string(),
                };
                return Err(ZmqError::Remote {
                    peer: self.peer.clone(),
                    reason,
                });
            }
            other => Event::Unknown(other.escape_ascii().to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zmtp::{command, frame_header, greeting, ready};

    fn stream(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    /// Feeds `bytes` in chunks of `chunk`, skipping payloads, collecting events.
    fn run(d: &mut Decoder, bytes: &[u8], chunk: usize) -> Result<Vec<Event>, ZmqError> {
        let mut events = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            if let Some(r) = d.payload_remaining() {
                let k = (r as usize).min(bytes.len() - at).min(chunk);
                d.payload_done(k as u64);
                at += k;
                continue;
            }
            let end = (at + chunk).min(bytes.len());
            let (k, e) = d.feed(&bytes[at..end])?;
            at += k;
            events.extend(e);
        }
        Ok(events)
    }

    #[test]
    fn a_session_in_any_chunking() {
        let (h, n) = frame_header(300, MORE);
        let body = vec![7u8; 300];
        let bytes = stream(&[
            &greeting(),
            &ready(SocketType::Push),
            &h[..n],
            &body,
            &frame_header(3, 0).0[..2],
            b"abc",
            &command("PING", b"\x00\x0ahi"),
            &command("SUBSCRIBE", b"t"),
        ]);
        for chunk in [1, 2, 3, 7, 64, 1000] {
            let mut d = Decoder::new(SocketType::Pull, "peer", 1 << 20);
            let ev = run(&mut d, &bytes, chunk).unwrap();
            assert_eq!(ev[0], Event::Greeting { minor: 1 });
            assert!(matches!(&ev[1], Event::Ready { socket_type, .. } if socket_type == "PUSH"));
            assert_eq!(
                ev[2],
                Event::Message {
                    len: 300,
                    more: true
                }
            );
            assert_eq!(
                ev[3],
                Event::Message {
                    len: 3,
                    more: false
                }
            );
            assert_eq!(
                ev[4],
                Event::Ping {
                    context: b"hi".to_vec()
                }
            );
            assert_eq!(ev[5], Event::Subscribe(b"t".to_vec()));
        }
    }

    #[test]
    fn wrong_peers_are_named() {
        let mut d = Decoder::new(SocketType::Pull, "10.0.0.1:5", 100);
        let e = d.feed(b"GET / HTTP/1.1").unwrap_err();
        assert!(
            e.to_string().contains("10.0.0.1:5") && e.to_string().contains("not a ZeroMQ peer"),
            "{e}"
        );
        let mut g = greeting();
        g[10] = 2;
        let e = Decoder::new(SocketType::Pull, "p", 100)
            .feed(&g)
            .unwrap_err();
        assert!(matches!(e, ZmqError::Version { major: 2, .. }), "{e}");
        let mut g = greeting();
        g[12..17].copy_from_slice(b"CURVE");
        let e = Decoder::new(SocketType::Pull, "p", 100)
            .feed(&g)
            .unwrap_err();
        assert!(e.to_string().contains("CURVE"), "{e}");
        let bytes = stream(&[&greeting(), &ready(SocketType::Pub)]);
        let e = run(&mut Decoder::new(SocketType::Pull, "p", 100), &bytes, 5).unwrap_err();
        assert!(
            e.to_string().contains("PUB socket") && e.to_string().contains("PULL"),
            "{e}"
        );
    }

    #[test]
    fn limits_and_order_are_enforced() {
        let (h, n) = frame_header(101, 0);
        let bytes = stream(&[&greeting(), &ready(SocketType::Push), &h[..n]]);
        let e = run(&mut Decoder::new(SocketType::Pull, "p", 100), &bytes, 9).unwrap_err();
        assert!(matches!(e, ZmqError::TooLarge { len: 101, .. }), "{e}");
        let bytes = stream(&[&greeting(), &frame_header(1, 0).0[..2], b"x"]);
        let e = run(&mut Decoder::new(SocketType::Pull, "p", 100), &bytes, 9).unwrap_err();
        assert!(e.to_string().contains("before READY"), "{e}");
        let bytes = stream(&[&greeting(), &ready(SocketType::Push), &[0x08, 1, 0]]);
        let e = run(&mut Decoder::new(SocketType::Pull, "p", 100), &bytes, 9).unwrap_err();
        assert!(e.to_string().contains("reserved"), "{e}");
        let bytes = stream(&[
            &greeting(),
            &ready(SocketType::Push),
            &crate::zmtp::error("go away"),
        ]);
        let e = run(&mut Decoder::new(SocketType::Pull, "p", 100), &bytes, 9).unwrap_err();
        assert!(e.to_string().contains("go away"), "{e}");
    }
}
