//! The drivers the fuzz targets (`fuzz/fuzz_targets/zmq_receive.rs`, `zmq_socket.rs`) and
//! their replay tests (`tests/fuzz_corpus.rs`) share, so that what the fuzzer checks and what
//! `cargo test` replays cannot drift apart.

use crate::{tag_header, zmtp, Decoder, Event, SocketType};

mod socket;
pub use socket::{socket, Record};

/// The frame limit of the fuzzed socket.
pub const LIMIT: u64 = 1 << 20;
/// Bytes of a data frame kept for the tag header parser.
const KEEP: usize = 64 << 10;

/// A PULL socket's ZMTP receive state machine fed `data` after its first byte, in chunks of
/// 1..=64 bytes that byte seeds; when its top bit is set a valid greeting and READY come first,
/// so that the frame and command states are reached at once. Every data frame's body is parsed
/// as a gr-zeromq tag header. Panics if the decoder claims bytes it was not given, lets a frame
/// above the limit through or makes no progress.
pub fn receive(data: &[u8]) {
    let Some((&seed, rest)) = data.split_first() else {
        return;
    };
    let mut input = Vec::new();
    if seed & 0x80 != 0 {
        input.extend_from_slice(&zmtp::greeting());
        input.extend_from_slice(&zmtp::ready(SocketType::Push));
    }
    input.extend_from_slice(rest);
    let mut rest = &input[..];
    let mut d = Decoder::new(SocketType::Pull, "fuzz", LIMIT);
    let mut body: Vec<u8> = Vec::new();
    let mut state = u32::from(seed) | 1;
    while !rest.is_empty() {
        // A chunk of 1..=64 bytes (xorshift on the seed), as reads of a socket might give.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let chunk = 1 + (state % 64) as usize;
        if let Some(remaining) = d.payload_remaining() {
            let k = (remaining as usize).min(chunk).min(rest.len());
            if body.len() < KEEP {
                let keep = k.min(KEEP - body.len());
                body.extend_from_slice(&rest[..keep]);
            }
            rest = &rest[k..];
            d.payload_done(k as u64);
            if d.payload_remaining().is_none() {
                let _ = tag_header::decode(&body);
                body.clear();
            }
            continue;
        }
        let k = chunk.min(rest.len());
        match d.feed(&rest[..k]) {
            Err(_) => return,
            Ok((taken, event)) => {
                assert!(taken <= k, "took more bytes than given");
                rest = &rest[taken..];
                if let Some(Event::Message { len, .. }) = event {
                    assert!(len <= LIMIT, "a frame above the limit got through");
                    body.clear();
                    if len == 0 {
                        let _ = tag_header::decode(&body);
                    }
                }
                if taken == 0 && event.is_none() && d.payload_remaining().is_none() {
                    panic!("the decoder made no progress on {k} bytes");
                }
            }
        }
    }
}
