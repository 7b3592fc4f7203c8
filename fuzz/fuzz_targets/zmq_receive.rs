//! Drives sluice-zmq's ZMTP receive state machine (sluice_zmq::Decoder, a PULL socket, a 1 MiB
//! frame limit) with arbitrary bytes in arbitrary chunks, and parses every data frame's body
//! as a gr-zeromq tag header (the PMT decoder). The first byte seeds the chunk sizes; when its
//! top bit is set a valid greeting and READY come first, so that the fuzzer reaches the frame
//! and command states at once. No input may panic, hang or allocate beyond the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_zmq::{tag_header, zmtp, Decoder, Event, SocketType};

const LIMIT: u64 = 1 << 20;
/// Bytes of a data frame kept for the tag header parser.
const KEEP: usize = 64 << 10;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, rest)) = data.split_first() else { return };
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
});
