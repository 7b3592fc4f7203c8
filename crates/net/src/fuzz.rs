//! The drivers the fuzz targets (`fuzz/fuzz_targets/net_receive.rs`, `net_send.rs`,
//! `secure_records.rs`, `net_source.rs`) and their replay tests (`tests/fuzz_regressions.rs`,
//! `tests/fuzz_corpus.rs`) share, so that what the fuzzer checks and what `cargo test` replays
//! cannot drift apart.

use crate::secure::{Got, Opener, Protection, RxBuf, Sealer};
use crate::{Decoder, Event, Need, NetError, Role};
use std::io::IoSliceMut;

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
