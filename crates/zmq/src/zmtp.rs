//! ZMTP 3.1 wire format (rfc.zeromq.org/spec/23): the greeting, frame headers and the
//! commands sluice sends. Parsing lives in [`crate::decoder`].
//!
//! * Greeting, 64 bytes: signature `FF 00 00 00 00 00 00 00 01 7F`, version major `03`, minor
//!   `01`, mechanism `"NULL"` padded with zeros to 20 bytes, as-server `00`, 31 zero bytes.
//! * Frame: flags byte (bit 0 MORE, bit 1 LONG, bit 2 COMMAND, other bits zero), then the size as
//!   one byte (short) or eight bytes big-endian (LONG), then the body.
//! * Command body: name length (one byte), name, data. READY's data is properties: name length
//!   (one byte), name, value length (four bytes big-endian), value.

use crate::ZmqError;

/// Length of the greeting.
pub const GREETING_LEN: usize = 64;
/// Frame flag: more frames of this message follow.
pub const MORE: u8 = 0x01;
/// Frame flag: the size is eight bytes.
pub const LONG: u8 = 0x02;
/// Frame flag: the frame is a command.
pub const COMMAND: u8 = 0x04;
/// The longest frame header: flags and an eight-byte size.
pub const MAX_HEADER: usize = 9;

/// The ZeroMQ socket types sluice speaks, and those it accepts as peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketType {
    /// Publisher: sends every message to each subscriber whose subscription prefixes it.
    Pub,
    /// Subscriber: receives what it subscribed to.
    Sub,
    /// Pipeline sender: round-robin over its peers.
    Push,
    /// Pipeline receiver: fair-queued from its peers.
    Pull,
    /// Requester: sends a request, waits for its reply.
    Req,
    /// Replier: answers each request.
    Rep,
}

impl SocketType {
    /// The name READY's Socket-Type property carries.
    pub fn name(self) -> &'static str {
        match self {
            SocketType::Pub => "PUB",
            SocketType::Sub => "SUB",
            SocketType::Push => "PUSH",
            SocketType::Pull => "PULL",
            SocketType::Req => "REQ",
            SocketType::Rep => "REP",
        }
    }

    /// Peer types that may talk to this one (ZMTP 3.1, "socket type compatibility").
    pub fn peers(self) -> &'static [&'static str] {
        match self {
            SocketType::Pub => &["SUB", "XSUB"],
            SocketType::Sub => &["PUB", "XPUB"],
            SocketType::Push => &["PULL"],
            SocketType::Pull => &["PUSH"],
            SocketType::Req => &["REP", "ROUTER"],
            SocketType::Rep => &["REQ", "DEALER"],
        }
    }

    /// [`SocketType::peers`] as one phrase, for messages.
    pub fn peers_phrase(self) -> &'static str {
        match self {
            SocketType::Pub => "SUB or XSUB",
            SocketType::Sub => "PUB or XPUB",
            SocketType::Push => "PULL",
            SocketType::Pull => "PUSH",
            SocketType::Req => "REP or ROUTER",
            SocketType::Rep => "REQ or DEALER",
        }
    }
}

/// The greeting sluice sends: ZMTP 3.1, NULL mechanism, as-server 0.
pub fn greeting() -> [u8; GREETING_LEN] {
    let mut g = [0u8; GREETING_LEN];
    g[0] = 0xff;
    g[8] = 0x01;
    g[9] = 0x7f;
    g[10] = 3;
    g[11] = 1;
    g[12..16].copy_from_slice(b"NULL");
    g
}

/// The header of a frame of `len` bytes, and its length.
pub fn frame_header(len: u64, flags: u8) -> ([u8; MAX_HEADER], usize) {
    let mut h = [0u8; MAX_HEADER];
    if len <= 255 {
        h[0] = flags & !LONG;
        h[1] = len as u8;
        (h, 2)
    } else {
        h[0] = flags | LONG;
        h[1..9].copy_from_slice(&len.to_be_bytes());
        (h, 9)
    }
}

/// A whole command frame: `name` and `data`.
pub fn command(name: &str, data: &[u8]) -> Vec<u8> {
    let body = 1 + name.len() + data.len();
    let (h, n) = frame_header(body as u64, COMMAND);
    let mut out = Vec::with_capacity(n + body);
    out.extend_from_slice(&h[..n]);
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(data);
    out
}

/// The READY command for `socket_type`, with an empty Identity for REQ and REP.
pub fn ready(socket_type: SocketType) -> Vec<u8> {
    let mut props = Vec::new();
    let mut prop = |name: &str, value: &[u8]| {
        props.push(name.len() as u8);
        props.extend_from_slice(name.as_bytes());
        props.extend_from_slice(&(value.len() as u32).to_be_bytes());
        props.extend_from_slice(value);
    };
    prop("Socket-Type", socket_type.name().as_bytes());
    if matches!(socket_type, SocketType::Req | SocketType::Rep) {
        prop("Identity", b"");
    }
    command("READY", &props)
}

/// The ERROR command with `reason` (cut to 255 bytes).
pub fn error(reason: &str) -> Vec<u8> {
    let mut r = reason.as_bytes();
    if r.len() > 255 {
        r = &r[..255];
    }
    let mut data = vec![r.len() as u8];
    data.extend_from_slice(r);
    command("ERROR", &data)
}

/// A subscription for `topic` as ZMTP 3.0's message (`01` + topic), understood by every
/// ZMTP 3 peer; `subscribe` false gives the cancel (`00` + topic).
pub fn subscription_message(topic: &[u8], subscribe: bool) -> Vec<u8> {
    let (h, n) = frame_header(1 + topic.len() as u64, 0);
    let mut out = h[..n].to_vec();
    out.push(u8::from(subscribe));
    out.extend_from_slice(topic);
    out
}

/// A subscription as ZMTP 3.1's SUBSCRIBE (or CANCEL) command.
pub fn subscription_command(topic: &[u8], subscribe: bool) -> Vec<u8> {
    command(if subscribe { "SUBSCRIBE" } else { "CANCEL" }, topic)
}

/// The PONG answering a PING with `context`.
pub fn pong(context: &[u8]) -> Vec<u8> {
    command("PONG", context)
}

/// A READY property: name and value.
pub type Property<'a> = (&'a [u8], &'a [u8]);

/// Parses READY's properties into (name, value) pairs.
pub fn properties<'a>(peer: &str, mut data: &'a [u8]) -> Result<Vec<Property<'a>>, ZmqError> {
    let bad = |what: &str| ZmqError::Protocol {
        peer: peer.to_string(),
        what: format!("malformed READY properties: {what}"),
    };
    let mut out = Vec::new();
    while !data.is_empty() {
        let n = data[0] as usize;
        if data.len() < 1 + n + 4 {
            return Err(bad("property name or value length cut short"));
        }
        let name = &data[1..1 + n];
        let len = u32::from_be_bytes(data[1 + n..5 + n].try_into().expect("four bytes")) as usize;
        let rest = &data[5 + n..];
        if rest.len() < len {
            return Err(bad("property value cut short"));
        }
        out.push((name, &rest[..len]));
        data = &rest[len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greeting_is_libzmq_compatible() {
        let g = greeting();
        assert_eq!(&g[..12], &[0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 1]);
        assert_eq!(&g[12..16], b"NULL");
        assert!(g[16..].iter().all(|&b| b == 0));
    }

    #[test]
    fn headers_short_and_long() {
        assert_eq!(frame_header(5, MORE).0[..2], [MORE, 5]);
        let (h, n) = frame_header(256, 0);
        assert_eq!(n, 9);
        assert_eq!(h[0], LONG);
        assert_eq!(&h[1..9], &256u64.to_be_bytes());
    }

    #[test]
    fn ready_properties_round_trip() {
        let r = ready(SocketType::Req);
        assert_eq!(r[0], COMMAND);
        let body = &r[2..];
        assert_eq!(&body[..6], b"\x05READY");
        let props = properties("p", &body[6..]).unwrap();
        assert_eq!(props[0], (&b"Socket-Type"[..], &b"REQ"[..]));
        assert_eq!(props[1], (&b"Identity"[..], &b""[..]));
        assert!(properties("p", &[5, b'a']).is_err());
    }
}
