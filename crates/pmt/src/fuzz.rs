//! The driver the `pmt_decode` fuzz target (`fuzz/fuzz_targets/pmt_decode.rs`) and its replay
//! test (`tests/fuzz_corpus.rs`) share, so that what the fuzzer checks and what `cargo test`
//! replays cannot drift apart.

use crate::{decode, encode};

/// Decodes `data` as one PMT value (the decoder a network peer feeds through tag headers) and,
/// when it decodes, checks that the value's encoding decodes to a value with the same
/// encoding: what sluice reads, it writes back byte for byte the same every time. Panics if
/// the decoder claims bytes it was not given or the round trip drifts.
pub fn decode_value(data: &[u8]) {
    let Ok((value, used)) = decode(data) else {
        return;
    };
    assert!(used <= data.len(), "claimed {used} of {} bytes", data.len());
    let mut first = Vec::new();
    if encode(&value, &mut first).is_err() {
        // A value sluice reads but cannot write (too long for a PMT length field): fine.
        return;
    }
    let (again, used) = decode(&first).expect("an encoding sluice wrote decodes");
    assert_eq!(used, first.len(), "the re-encoding is not one whole value");
    let mut second = Vec::new();
    encode(&again, &mut second).expect("a value decoded from sluice's encoding encodes");
    assert_eq!(first, second, "the encoding drifts on a round trip");
}
