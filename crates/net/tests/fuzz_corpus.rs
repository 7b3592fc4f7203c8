//! The `net_source` fuzz target's inputs as ordinary tests: every input of
//! `fuzz/corpus/net_source/` and `fuzz/regressions/net_source/` replays through the target's
//! driver (`sluice_net::fuzz::source`), the seeds are scripts written here (their frames are
//! the wire's encoders'), and what a few of them deliver is spelled out.
//! `SLUICE_WRITE_SEEDS=1 cargo test -p sluice-net --test fuzz_corpus` writes the seeds again.

#[path = "../../../fuzz/replay.rs"]
mod replay;

use sluice_net::fuzz::{source, Delivered};
use sluice_runtime::{metadata, TagValue};

/// The settings byte of a script (see `sluice_net::fuzz::source`).
const FENCED: u8 = 1;
const CRC: u8 = 2;
const SMALL_QUEUE: u8 = 4;
const SMALL_BUDGET: u8 = 8;
const MESSAGES: u8 = 16;
const START_1000: u8 = 32;

/// A script for `sluice_net::fuzz::source`.
struct Script(Vec<u8>);

impl Script {
    fn new(settings: u8) -> Script {
        Script(vec![settings])
    }

    fn op(mut self, bytes: &[u8]) -> Script {
        self.0.extend_from_slice(bytes);
        self
    }

    /// A DATA frame of `items` (1..=128) items with a tag on item `t` of it for each `t`.
    fn data(self, items: u8, tags: &[u8]) -> Script {
        let s = self.op(&[0, items - 1, tags.len() as u8]);
        s.op(tags)
    }

    /// A DATA frame one item past the sender's offset.
    fn data_past(self, items: u8) -> Script {
        self.op(&[0, 128 + items - 1, 0])
    }

    fn gap(self, lost: u8) -> Script {
        self.op(&[1, lost - 1])
    }

    fn heartbeat(self) -> Script {
        self.op(&[2])
    }

    fn end(self) -> Script {
        self.op(&[3, 0])
    }

    fn message(self) -> Script {
        self.op(&[4])
    }

    fn connect(self, fence: u8) -> Script {
        self.op(&[5, fence])
    }

    fn acks(self) -> Script {
        self.op(&[6])
    }

    fn cut(self) -> Script {
        self.op(&[7])
    }
}

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "plain",
            Script::new(0)
                .data(10, &[0, 5])
                .acks()
                .heartbeat()
                .data(5, &[])
                .acks()
                .end()
                .acks()
                .0,
        ),
        (
            "crc-start",
            Script::new(CRC | START_1000)
                .data(3, &[2])
                .data(4, &[0, 3])
                .end()
                .0,
        ),
        ("gap", Script::new(0).gap(50).data(4, &[1]).acks().end().0),
        (
            "reconnect",
            Script::new(CRC)
                .data(8, &[7])
                .acks()
                .cut()
                .connect(0)
                .data(8, &[0])
                .end()
                .0,
        ),
        (
            "fenced",
            Script::new(FENCED)
                .data(4, &[3])
                .connect(0)
                .acks()
                .connect(2)
                .data(4, &[0])
                .acks()
                .connect(1)
                .0,
        ),
        (
            "fenced-no-fence",
            Script::new(FENCED)
                .connect(200)
                .connect(3)
                .data(2, &[])
                .end()
                .0,
        ),
        (
            "fence-to-unfenced",
            Script::new(0)
                .cut()
                .connect(200)
                .connect(0)
                .data(2, &[])
                .end()
                .0,
        ),
        (
            "messages",
            Script::new(MESSAGES)
                .data(3, &[])
                .message()
                .data(2, &[])
                .message()
                .acks()
                .end()
                .0,
        ),
        (
            "tag-budget",
            Script::new(SMALL_BUDGET | SMALL_QUEUE)
                .data(3, &[0, 1, 2])
                .data(3, &[0, 1, 2])
                .data(3, &[0, 1, 2])
                .data(3, &[0, 1, 2])
                .0,
        ),
        ("offset-past", Script::new(0).data(2, &[]).data_past(2).0),
        ("gap-late", Script::new(0).data(2, &[]).gap(3).0),
    ]
}

fn offsets(d: &Delivered) -> Vec<u64> {
    d.items.clone()
}

fn k_tags(d: &Delivered) -> Vec<(u64, TagValue)> {
    d.tags
        .iter()
        .filter(|t| &*t.key == "k")
        .map(|t| (t.index, t.value.clone()))
        .collect()
}

#[test]
fn the_net_source_corpus_replays_and_holds_its_seeds() {
    replay::check_seeds("net_source", &seeds());
    let corpus = replay::replay("net_source", |bytes| {
        source(bytes);
    });
    assert!(corpus >= seeds().len(), "the seed corpus is missing");
}

#[test]
fn a_plain_stream_arrives_whole_with_its_tags() {
    let d = source(&seeds()[0].1);
    assert_eq!(d.error, None);
    assert_eq!(offsets(&d), (0..15).collect::<Vec<_>>());
    assert_eq!(
        k_tags(&d),
        vec![(0, TagValue::U64(0)), (5, TagValue::U64(5))]
    );
}

#[test]
fn tags_are_rebased_past_the_start_and_a_gap() {
    let d = source(&seeds()[1].1);
    assert_eq!(d.error, None);
    assert_eq!(offsets(&d), (1000..1007).collect::<Vec<_>>());
    assert_eq!(
        k_tags(&d),
        vec![
            (2, TagValue::U64(1002)),
            (3, TagValue::U64(1003)),
            (6, TagValue::U64(1006))
        ]
    );
    let d = source(&seeds()[2].1);
    assert_eq!(d.error, None);
    assert_eq!(offsets(&d), (50..54).collect::<Vec<_>>());
    assert!(d
        .tags
        .iter()
        .any(|t| t.index == 0 && &*t.key == metadata::GAP && t.value == TagValue::U64(50)));
    assert_eq!(k_tags(&d), vec![(1, TagValue::U64(51))]);
}

#[test]
fn a_reconnect_resumes_where_the_receiver_stands() {
    let d = source(&seeds()[3].1);
    assert_eq!(d.error, None);
    assert_eq!(offsets(&d), (0..16).collect::<Vec<_>>());
    assert_eq!(
        k_tags(&d),
        vec![(7, TagValue::U64(7)), (8, TagValue::U64(8))]
    );
}

#[test]
fn a_newer_primary_takes_over_and_an_older_one_is_refused() {
    let d = source(&seeds()[4].1);
    assert_eq!(d.error, None, "{d:?}");
    assert_eq!(offsets(&d), (0..8).collect::<Vec<_>>());
    assert_eq!(
        k_tags(&d),
        vec![(3, TagValue::U64(3)), (4, TagValue::U64(4))]
    );
    // A fenced receiver refuses a sender without a fence (and an unfenced one, a fenced
    // sender) and takes the next.
    for seed in [&seeds()[5].1, &seeds()[6].1] {
        let d = source(seed);
        assert_eq!(d.error, None, "{d:?}");
        assert_eq!(offsets(&d), vec![0, 1]);
    }
}

#[test]
fn messages_come_in_order() {
    let d = source(&seeds()[7].1);
    assert_eq!(d.error, None);
    assert_eq!(offsets(&d), (0..5).collect::<Vec<_>>());
    assert_eq!(d.messages, vec![TagValue::U64(0), TagValue::U64(1)]);
}

#[test]
fn tags_beyond_the_budget_cost_the_connection_and_bad_frames_the_stream() {
    let d = source(&seeds()[8].1);
    assert_eq!(d.error, None, "{d:?}");
    assert_eq!(offsets(&d), (0..6).collect::<Vec<_>>());
    for (name, bytes) in &seeds()[9..] {
        let d = source(bytes);
        let error = d.error.unwrap_or_default();
        let expected = match *name {
            "offset-past" => "expected offset 2",
            _ => "a GAP may only follow the WELCOME",
        };
        assert!(error.contains(expected), "{name}: {error:?}");
        assert_eq!(d.items, vec![0, 1], "{name}");
    }
}
