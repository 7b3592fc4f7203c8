//! The drivers the fuzz targets (`fuzz/fuzz_targets/net_receive.rs`) and their replay tests
//! (`tests/fuzz_regressions.rs`) share, so that what the fuzzer checks and what `cargo test`
//! replays cannot drift apart.

use crate::{Decoder, Event, Need, NetError, Role};

/// The frame limit of the fuzzed receiver.
pub const LIMIT: u32 = 1 << 20;

/// The whole receive state machine (c32 items, a 1 MiB frame limit, taking messages) fed `data` after its first
/// byte, in chunks of 1..=64 bytes that byte seeds (as reads of a socket might give), payload
/// into a buffer of exactly the frame's size; the events until the first error. Panics if the
/// decoder claims bytes beyond a frame or lets a frame above the limit through.
pub fn receive(data: &[u8]) -> Vec<Result<Event, NetError>> {
    let mut seen = Vec::new();
    let Some((&seed, mut rest)) = data.split_first() else {
        return seen;
    };
    let mut d = Decoder::new(Role::Receiver, "fuzz", LIMIT, Some(("c32", 8)), 0).with_messages(0);
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
