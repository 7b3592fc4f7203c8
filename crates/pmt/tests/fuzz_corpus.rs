//! The `pmt_decode` fuzz target's corpus replays as an ordinary test through the same driver
//! as the target ([`sluice_pmt::fuzz::decode_value`]); its seeds are the encodings of a value
//! of every PMT kind, made by the encoder.

#[path = "../../../fuzz/replay.rs"]
mod replay;

use num_complex::{Complex32, Complex64};
use sluice_queue::{TagValue, Uniform};

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let s = |t: &str| TagValue::Str(t.into());
    let values = vec![
        ("true", TagValue::Bool(true)),
        ("false", TagValue::Bool(false)),
        ("symbol", s("rx_freq")),
        ("int32", TagValue::I64(-7)),
        ("int64", TagValue::I64(i64::MIN)),
        ("uint64", TagValue::U64(u64::MAX)),
        ("real", TagValue::F64(2.4e9)),
        ("complex", TagValue::Complex(Complex64::new(1.5, -0.25))),
        ("nil", TagValue::Null),
        ("pair", TagValue::Pair(Box::new((s("a"), TagValue::I64(1))))),
        ("vector", TagValue::Vector(vec![TagValue::I64(1), s("two")])),
        (
            "tuple",
            TagValue::Tuple(vec![TagValue::U64(1_700_000_000), TagValue::F64(0.25)]),
        ),
        (
            "dict",
            TagValue::Dict(vec![(s("a"), TagValue::I64(1)), (s("b"), TagValue::Null)]),
        ),
        ("u8", TagValue::Uniform(Uniform::from(vec![0u8, 255]))),
        ("s8", TagValue::Uniform(Uniform::from(vec![-128i8, 127]))),
        (
            "u16",
            TagValue::Uniform(Uniform::from(vec![0u16, u16::MAX])),
        ),
        ("s16", TagValue::Uniform(Uniform::from(vec![i16::MIN, 1]))),
        ("u32", TagValue::Uniform(Uniform::from(vec![u32::MAX]))),
        ("s32", TagValue::Uniform(Uniform::from(vec![i32::MIN]))),
        ("u64s", TagValue::Uniform(Uniform::from(vec![u64::MAX, 0]))),
        ("s64", TagValue::Uniform(Uniform::from(vec![i64::MIN]))),
        (
            "f32",
            TagValue::Uniform(Uniform::from(vec![1.0f32, f32::NAN])),
        ),
        ("f64", TagValue::Uniform(Uniform::from(vec![f64::INFINITY]))),
        (
            "c32",
            TagValue::Uniform(Uniform::from(vec![Complex32::new(1.0, 2.0)])),
        ),
        (
            "c64",
            TagValue::Uniform(Uniform::from(vec![Complex64::new(-1.0, 0.5)])),
        ),
        (
            "nested",
            TagValue::Vector(vec![TagValue::Dict(vec![(
                s("k"),
                TagValue::Tuple(vec![TagValue::Pair(Box::new((TagValue::Null, s(""))))]),
            )])]),
        ),
    ];
    values
        .into_iter()
        .map(|(name, v)| (name, sluice_pmt::to_bytes(&v).unwrap()))
        .collect()
}

#[test]
fn every_corpus_input_replays() {
    let n = replay::replay("pmt_decode", sluice_pmt::fuzz::decode_value);
    assert!(
        n >= seeds().len(),
        "the seed corpus is missing ({n} inputs)"
    );
}

#[test]
fn the_corpus_holds_every_kind_the_encoder_writes() {
    let seeds = seeds();
    for (_, bytes) in &seeds {
        sluice_pmt::fuzz::decode_value(bytes);
    }
    replay::check_seeds("pmt_decode", &seeds);
}
