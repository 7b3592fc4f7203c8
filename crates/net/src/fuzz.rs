//! The drivers the fuzz targets (`fuzz/fuzz_targets/net_receive.rs`, `net_send.rs`,
//! `secure_records.rs`, `shm_handshake.rs`, `secure_handshake.rs`, `net_source.rs`) and their
//! replay tests (`tests/fuzz_regressions.rs`, `tests/fuzz_handshakes.rs`, `tests/fuzz_corpus.rs`)
//! share, so that what the fuzzer checks and what `cargo test` replays cannot drift apart.

use crate::secure::{Got, Opener, Protection, RxBuf, Sealer};
use crate::{Decoder, Event, Need, NetError, Role};
use std::io::{IoSliceMut, Write};
use std::time::Duration;

mod source;

pub use source::{source, Delivered};

/// The frame limit of the fuzzed receiver.
pub const LIMIT: u32 = 1 << 20;

/// The whole receive state machine (c32 items, a 1 MiB frame limit, taking messages) fed `data` after its first
/// byte, in chunks of 1..=64 bytes that byte seeds (as reads of a socket might give), payload
/// into a buffer of exactly the frame's size; the events until the first error. Panics if the
/// decoder claims bytes beyond a frame or lets a frame above the limit through.
pub fn receive(data: &[u8]) -> Vec<Result<Event, NetError>> {
    let d = Decoder::new(Role::Receiver, "fuzz", LIMIT, Some(("c32", 8)), 0).with_messages(0);
    decode(d, data)
}

/// The sender's side of the stream protocol (what a `tcp_sink` reads from its receiver:
/// WELCOME, ACK, CREDIT, GAP, HEARTBEAT, ERROR), with messages asked for and 1,000 items
/// already acknowledged, fed as [`receive`] feeds the receiver's: the events until the first
/// error.
pub fn send(data: &[u8]) -> Vec<Result<Event, NetError>> {
    let d = Decoder::new(Role::Sender, "fuzz", 1 << 16, None, 1000).with_messages(0);
    decode(d, data)
}

fn decode(mut d: Decoder, data: &[u8]) -> Vec<Result<Event, NetError>> {
    let mut seen = Vec::new();
    let Some((&seed, mut rest)) = data.split_first() else {
        return seen;
    };
    let mut dest: Vec<u8> = Vec::new();
    let mut state = u32::from(seed) | 1;
    loop {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let chunk = 1 + (state % 64) as usize;
        if rest.is_empty() {
            let _ = d.eof();
            return seen;
        }
        let result = match d.need() {
            Need::Control(n) => {
                let k = n.min(chunk).min(rest.len());
                d.control_space()[..k].copy_from_slice(&rest[..k]);
                rest = &rest[k..];
                d.control_filled(k)
            }
            Need::Payload(n) => {
                let done = d.payload_done();
                assert!(done + n <= dest.len(), "payload beyond the reserved frame");
                let k = n.min(chunk).min(rest.len());
                dest[done..done + k].copy_from_slice(&rest[..k]);
                rest = &rest[k..];
                d.payload_filled(&dest[done..done + k])
            }
        };
        match result {
            Err(e) => {
                seen.push(Err(e));
                return seen;
            }
            Ok(Some(event)) => {
                if let Event::DataBegin { items, .. } = event {
                    let bytes = items as usize * 8;
                    assert!(
                        bytes <= LIMIT as usize,
                        "a frame above the limit got through"
                    );
                    dest.clear();
                    dest.resize(bytes, 0);
                }
                seen.push(Ok(event));
            }
            Ok(None) => {}
        }
    }
}

/// The key both ends of [`records`] use.
pub const RECORD_KEY: [u8; 32] = [0x5e; 32];

/// The secure channel's record layer (what every keyed connection reads after its handshake)
/// fed `data` after its first byte, in reads of 1..=4096 bytes that byte seeds, into buffers of
/// sizes it seeds too (received straight into them, as into a reservation, when its low bit is
/// set); bit 1 of the first byte picks authenticated records, else encrypted ones, under
/// [`RECORD_KEY`]. Returns the plaintext bytes opened before the first error or the end.
/// Panics if more comes out than went in.
pub fn records(data: &[u8]) -> usize {
    let Some((&seed, wire)) = data.split_first() else {
        return 0;
    };
    let mut rx = RxBuf::new(Opener::new(&RECORD_KEY, protection(seed)));
    let direct = seed & 1 == 1;
    let mut state = u32::from(seed) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let (mut at, mut total) = (0usize, 0usize);
    let mut buf = vec![0u8; 1 + (next() % (300 << 10)) as usize];
    loop {
        let step = 1 + (next() % 4096) as usize;
        let got = rx.recv(&mut [IoSliceMut::new(&mut buf)], direct, |iov| {
            let mut n = 0;
            for b in iov.iter_mut() {
                let k = b.len().min(step - n).min(wire.len() - at);
                b[..k].copy_from_slice(&wire[at..at + k]);
                (at, n) = (at + k, n + k);
            }
            Ok(Some(n))
        });
        match got {
            Ok(Got::Bytes(n)) => {
                total += n;
                assert!(total <= wire.len(), "more plaintext than ciphertext");
            }
            Ok(Got::WouldBlock) => {}
            Ok(Got::Eof) | Err(_) => return total,
        }
    }
}

/// Seals `plain` as the records [`records`] opens for a first byte of `seed`.
pub fn seal_records(seed: u8, plain: &[&[u8]]) -> Vec<u8> {
    let mut sealer = Sealer::new(&RECORD_KEY, protection(seed));
    let mut out = vec![seed];
    for p in plain {
        sealer.seal(p, &mut out).expect("fewer than 2^64 records");
    }
    out
}

fn protection(seed: u8) -> Protection {
    if seed & 2 == 2 {
        Protection::Authenticate
    } else {
        Protection::Encrypt
    }
}

// --- Handshakes: what a peer sends before the stream --------------------------------------

/// At most this many bytes of an input are written to a socket (the rest is dropped), so that
/// a write never waits for a reader that is not there.
const SOCKET_INPUT: usize = 64 << 10;

/// The shared-memory stream's handshake as each end parses it. The first byte picks what the
/// rest of `data` is: odd, the tag messages an `shm_source` reads after the HELLO; 2 modulo 4,
/// the source's answer to the HELLO, as the `shm_sink` reads it; else what the sink sent on
/// the Unix socket (its HELLO, read by [`crate::take_over`] over a real socket pair, without
/// the ring's descriptor). Returns the tags taken (zero for a HELLO, four for an accepting
/// answer), or the error that refused the peer. Panics if a ring is attached
/// although no descriptor came, or if more bytes are taken than came.
pub fn shm_handshake(data: &[u8]) -> Result<usize, NetError> {
    let Some((&mode, rest)) = data.split_first() else {
        return Ok(0);
    };
    if mode & 1 == 1 {
        let mut tags = Vec::new();
        let taken = crate::shm::split_tag_messages(rest, "fuzz", 0, &mut tags)?;
        assert!(
            taken <= rest.len(),
            "tag messages beyond the bytes that came"
        );
        return Ok(tags.len());
    }
    if mode & 2 == 2 {
        // The sink's side: the source's answer to its HELLO.
        let mut answer = rest;
        crate::shm::read_answer(&mut answer, "fuzz")?;
        return Ok(4);
    }
    let io = |e: std::io::Error| NetError::Config(format!("fuzz socket pair: {e}"));
    let (mut ours, mut theirs) = std::os::unix::net::UnixStream::pair().map_err(io)?;
    theirs
        .write_all(&rest[..rest.len().min(SOCKET_INPUT)])
        .and_then(|()| theirs.shutdown(std::net::Shutdown::Write))
        .map_err(io)?;
    match crate::take_over::<f32>(&mut ours, "fuzz", Duration::from_secs(1)) {
        Ok(_) => panic!("a ring attached though no descriptor came"),
        Err(e) => Err(e),
    }
}

/// The answer an `shm_source` gives to a HELLO (`reason` empty: accepted), as
/// [`shm_handshake`] takes it (first byte 2).
pub fn shm_answer(reason: &str) -> Vec<u8> {
    let mut out = vec![2u8];
    out.extend_from_slice(&(reason.len() as u32).to_le_bytes());
    out.extend_from_slice(reason.as_bytes());
    out
}

/// The HELLO an `shm_sink` of `item` sends (its descriptor aside), as [`shm_handshake`] takes
/// it (first byte 0).
pub fn shm_hello(item_name: &str, item_size: u32) -> Vec<u8> {
    let hello = crate::wire::hello(&crate::wire::Hello {
        item_name: item_name.to_string(),
        item_size,
        vlen: 1,
        crc: false,
        heartbeat_ms: 0,
        metadata: Vec::new(),
        fence: None,
        messages: false,
    })
    .expect("a short item name encodes");
    [&[0u8][..], &hello].concat()
}

/// The tag messages an `shm_sink` sends for `tags`, as [`shm_handshake`] takes them (first
/// byte 1).
pub fn shm_tags(tags: &[sluice_runtime::Tag]) -> Vec<u8> {
    let mut out = vec![1u8];
    crate::shm::send_tags(&mut out, tags, &mut Vec::new()).expect("tags that encode");
    out
}

/// The secure channel's handshake (`secure::accept` with the first byte even, the responder;
/// `secure::connect` odd, the initiator) against a peer that sends `data` after the first
/// byte and nothing else, over a real loopback TCP connection, with a stream's credentials
/// under [`RECORD_KEY`] (bit 1 of the first byte: authenticated records). Returns the error
/// that refused the peer. Panics if a handshake completes: bytes that hold neither this
/// run's ephemeral keys nor the cluster key cannot be a peer's.
pub fn secure_handshake(data: &[u8]) -> Result<(), NetError> {
    use std::sync::OnceLock;
    static LISTENER: OnceLock<Result<std::net::TcpListener, String>> = OnceLock::new();
    static IDENTITY: OnceLock<Result<std::sync::Arc<crate::secure::Identity>, String>> =
        OnceLock::new();
    let Some((&mode, rest)) = data.split_first() else {
        return Ok(());
    };
    let setup = |e: String| NetError::Config(format!("fuzz set-up: {e}"));
    let listener = LISTENER
        .get_or_init(|| std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| setup(e.clone()))?;
    let identity = IDENTITY
        .get_or_init(|| {
            crate::secure::Identity::generate()
                .map(std::sync::Arc::new)
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| setup(e.clone()))?;
    let io = |e: std::io::Error| setup(e.to_string());
    let addr = listener.local_addr().map_err(io)?;
    let mut theirs = std::net::TcpStream::connect(addr).map_err(io)?;
    let (mut ours, _) = listener.accept().map_err(io)?;
    // Closed with a reset, not FIN: thousands of runs a second leave no TIME_WAIT behind.
    for s in [&ours, &theirs] {
        let _ = rustix::net::sockopt::set_socket_linger(s, Some(Duration::ZERO));
    }
    theirs
        .write_all(&rest[..rest.len().min(SOCKET_INPUT)])
        .and_then(|()| theirs.shutdown(std::net::Shutdown::Write))
        .map_err(io)?;
    let creds = crate::secure::Credentials {
        identity: identity.clone(),
        psk: Some(crate::auth::ClusterKey::from_bytes(RECORD_KEY)),
        peers: None,
        purpose: crate::secure::Purpose::Stream,
        protection: protection(mode),
    };
    let wait = Duration::from_secs(1);
    let session = if mode & 1 == 0 {
        crate::secure::accept(&mut ours, &creds, wait)
    } else {
        crate::secure::connect(&mut ours, &creds, wait)
    };
    match session {
        Ok(_) => panic!("a secure handshake completed with a peer that holds no key"),
        Err(e) => Err(e),
    }
}

/// What a peer sends in the secure handshake, as [`secure_handshake`] takes it: the first
/// byte (`mode`), the preface of a stream with `mode`'s protection, then each message with
/// its big-endian u16 length.
pub fn secure_messages(mode: u8, messages: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![mode];
    out.extend_from_slice(&crate::secure::preface(
        crate::secure::Purpose::Stream,
        protection(mode),
    ));
    for m in messages {
        let len = u16::try_from(m.len()).expect("a handshake message fits in 64 KiB");
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(m);
    }
    out
}
