//! Drives the whole receive state machine (sluice_net::Decoder, receiver role, c32 items, a
//! 1 MiB frame limit) with arbitrary bytes in arbitrary chunks: the first byte seeds the chunk
//! sizes. Payload goes into a destination buffer of exactly the frame's payload size, as the
//! tcp_source reserves it. No input may panic, hang or allocate beyond the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_net::{Decoder, Event, Need, Role};

const LIMIT: u32 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, mut rest)) = data.split_first() else { return };
    let mut d = Decoder::new(Role::Receiver, "fuzz", LIMIT, Some(("c32", 8)), 0);
    let mut dest: Vec<u8> = Vec::new();
    let mut state = u32::from(seed) | 1;
    loop {
        // A chunk of 1..=64 bytes (xorshift on the seed), as reads of a socket might give.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let chunk = 1 + (state % 64) as usize;
        if rest.is_empty() {
            let _ = d.eof();
            return;
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
            Err(_) => return,
            Ok(Some(Event::DataBegin { items, .. })) => {
                let bytes = items as usize * 8;
                assert!(bytes <= LIMIT as usize, "a frame above the limit got through");
                dest.clear();
                dest.resize(bytes, 0);
            }
            Ok(_) => {}
        }
    }
});
