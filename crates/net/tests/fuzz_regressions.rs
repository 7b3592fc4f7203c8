//! The `net_receive` fuzz target's inputs as ordinary tests: every crash input found (under
//! `fuzz/regressions/net_receive/`) and the seed corpus (`fuzz/corpus/net_receive/`) replay
//! through the same driver as the target, and the cases behind the crashes are spelled out
//! with the encoders. `cargo test -p sluice-net --test fuzz_regressions -- --ignored` writes
//! the seed corpus again (after a wire format change).

use sluice_net::wire::{self, Hello, Kind, Welcome};
use sluice_net::{Decoder, Event, Need, NetError, Role};
use sluice_queue::{Tag, TagValue};
use std::path::{Path, PathBuf};

const LIMIT: u32 = 1 << 20;

/// `fuzz/fuzz_targets/net_receive.rs`'s body: the whole receive state machine (c32 items, a
/// 1 MiB frame limit) fed `data` after its first byte, in chunks that byte seeds.
fn drive(data: &[u8]) -> Vec<Result<Event, NetError>> {
    let mut seen = Vec::new();
    let Some((&seed, mut rest)) = data.split_first() else {
        return seen;
    };
    let mut d = Decoder::new(Role::Receiver, "fuzz", LIMIT, Some(("c32", 8)), 0);
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

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn hello(crc: bool) -> Vec<u8> {
    wire::hello(&Hello {
        item_name: "c32".into(),
        item_size: 8,
        vlen: 1,
        crc,
        heartbeat_ms: 100,
        metadata: vec![Tag::new(0, "rx_rate", TagValue::F64(48_000.0))],
        fence: None,
    })
    .unwrap()
}

/// A DATA frame of `items` c32 items at `offset` with `tags`.
fn data(offset: u64, items: u32, tags: &[Tag], crc: bool) -> Vec<u8> {
    let mut t = Vec::new();
    if !tags.is_empty() {
        wire::encode_tags(tags, &mut t).unwrap();
    }
    let payload: Vec<u8> = (0..items as usize * 8).map(|i| i as u8).collect();
    let head = wire::data_head(offset, items, t.len() as u32, payload.len(), crc).unwrap();
    let mut f = head.to_vec();
    f.extend_from_slice(&t);
    f.extend_from_slice(&payload);
    if crc {
        let c = crc32c::crc32c(&head[wire::HEADER_LEN..]);
        let c = crc32c::crc32c_append(c, &t);
        let c = crc32c::crc32c_append(c, &payload);
        f.extend_from_slice(&c.to_le_bytes());
    }
    f
}

fn input(seed: u8, frames: &[&[u8]]) -> Vec<u8> {
    let mut v = vec![seed];
    for f in frames {
        v.extend_from_slice(f);
    }
    v
}

/// The crash the fuzz target found: a GAP to just below `u64::MAX`, then a DATA frame whose
/// items would pass it (`frame.offset + items` overflowed in the decoder).
fn offset_overflow() -> Vec<u8> {
    let at = u64::MAX - 3;
    input(
        7,
        &[&hello(false), &wire::gap(0, at), &data(at, 8, &[], false)],
    )
}

#[test]
fn an_offset_that_would_overflow_is_a_protocol_error() {
    let seen = drive(&offset_overflow());
    assert!(
        matches!(seen.last(), Some(Err(NetError::Protocol { .. }))),
        "{seen:?}"
    );
    // Also at the very end of the offsets: a frame ending exactly at u64::MAX fits.
    let at = u64::MAX - 8;
    let seen = drive(&input(
        3,
        &[&hello(false), &wire::gap(0, at), &data(at, 8, &[], false)],
    ));
    assert!(
        matches!(seen.last(), Some(Ok(Event::DataEnd { .. }))),
        "{seen:?}"
    );
}

#[test]
fn a_gap_is_taken_only_right_after_the_hello() {
    let first = drive(&input(1, &[&hello(false), &wire::gap(0, 100)]));
    assert!(
        matches!(first.last(), Some(Ok(Event::Gap { from: 0, to: 100 }))),
        "{first:?}"
    );
    let twice = drive(&input(
        1,
        &[&hello(false), &wire::gap(0, 100), &wire::gap(100, 200)],
    ));
    assert!(matches!(twice.last(), Some(Err(_))), "{twice:?}");
    let late = drive(&input(
        1,
        &[&hello(false), &data(0, 4, &[], false), &wire::gap(4, 200)],
    ));
    assert!(matches!(late.last(), Some(Err(_))), "{late:?}");
    let unwelcome = drive(&input(1, &[&wire::gap(0, 100)]));
    assert!(matches!(unwelcome.last(), Some(Err(_))), "{unwelcome:?}");
}

fn replay(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in entries {
        let path = e.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let r = std::panic::catch_unwind(|| drive(&bytes));
        assert!(r.is_ok(), "{} panics the receiver", path.display());
        n += 1;
    }
    n
}

#[test]
fn every_regression_and_corpus_input_replays() {
    let regressions = replay(&root().join("regressions/net_receive"));
    let corpus = replay(&root().join("corpus/net_receive"));
    assert!(regressions >= 1, "no regression inputs found");
    assert!(corpus >= 10, "the seed corpus is missing ({corpus} inputs)");
}

/// Every message kind, generated by the encoders.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let tags = [
        Tag::new(0, "rx_freq", TagValue::F64(2.4e9)),
        Tag::new(3, "rx_time", TagValue::rx_time(1_700_000_000, 0.5)),
        Tag::with_source(5, "burst", TagValue::Bool(true), "src"),
    ];
    let welcome = wire::welcome(&Welcome {
        resume: 0,
        credit: 1 << 20,
        max_items: 4096,
        heartbeat_ms: 100,
        history: 0,
    });
    let fenced = wire::hello(&Hello {
        item_name: "c32".into(),
        item_size: 8,
        vlen: 4,
        crc: true,
        heartbeat_ms: 100,
        metadata: Vec::new(),
        fence: Some(3),
    })
    .unwrap();
    let h = hello(false);
    vec![
        ("hello", input(0, &[&h])),
        (
            "data_tags_end",
            input(
                1,
                &[
                    &h,
                    &data(0, 8, &tags, false),
                    &data(8, 1, &[], false),
                    &wire::offset_frame(Kind::End, 9),
                ],
            ),
        ),
        (
            "crc_data",
            input(2, &[&hello(true), &data(0, 8, &tags, true)]),
        ),
        (
            "gap_then_data",
            input(3, &[&h, &wire::gap(0, 1000), &data(1000, 4, &[], false)]),
        ),
        (
            "heartbeats",
            input(
                4,
                &[
                    &h,
                    &wire::heartbeat(),
                    &data(0, 2, &[], false),
                    &wire::heartbeat(),
                ],
            ),
        ),
        ("error", input(5, &[&h, &wire::error("the sender stopped")])),
        ("fenced_vector_hello", input(6, &[&fenced])),
        ("offset_overflow", offset_overflow()),
        (
            "sender_frames",
            input(
                8,
                &[
                    &h,
                    &welcome,
                    &wire::offset_frame(Kind::Ack, 1),
                    &wire::offset_frame(Kind::Credit, u64::MAX),
                ],
            ),
        ),
        (
            "end_early",
            input(9, &[&h, &wire::offset_frame(Kind::End, 0)]),
        ),
        (
            "big_chunks",
            input(
                0xff,
                &[
                    &h,
                    &data(0, 4000, &tags, false),
                    &data(4000, 4000, &[], false),
                ],
            ),
        ),
    ]
}

#[test]
#[ignore = "writes fuzz/corpus/net_receive and the regression input"]
fn write_seed_corpus() {
    let dir = root().join("corpus/net_receive");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in seeds() {
        std::fs::write(dir.join(format!("seed-{name}")), bytes).unwrap();
    }
    let dir = root().join("regressions/net_receive");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("offset-overflow-gap-then-data"), offset_overflow()).unwrap();
}
