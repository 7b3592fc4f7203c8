//! The `wav_read` and `sigmf_meta` fuzz targets' corpora replay as ordinary tests through the
//! same drivers as the targets ([`sluice_formats::fuzz`]). The WAV seeds are files the writer
//! makes in every encoding it writes (plain and RF64), with the variants other writers leave
//! (a streaming header's unknown sizes, 64-bit float, a missing pad byte); the SigMF seeds are
//! meta files with every field the reader looks at, serialized by serde_json.

#[path = "../../../fuzz/replay.rs"]
mod replay;

use serde_json::json;
use sluice_formats::fuzz;
use sluice_formats::wav::{Encoding, WavWriter};

/// A file `WavWriter` makes: `channels` channels of a short ramp, `limit` bytes of plain WAV
/// data before it turns RF64.
fn written(encoding: Encoding, channels: usize, limit: u64) -> Vec<u8> {
    let path = std::env::temp_dir().join(format!(
        "sluice-fuzz-seed-{}-{encoding:?}-{channels}-{limit}.wav",
        std::process::id()
    ));
    let mut w = WavWriter::create(&path, channels, Some(48_000), encoding)
        .unwrap()
        .with_data_limit(limit);
    let samples: Vec<f32> = (0..channels * 6).map(|k| k as f32 / 40.0 - 0.5).collect();
    w.write(&samples).unwrap();
    w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

/// The offset of chunk `id`'s header in a RIFF file.
fn chunk(bytes: &[u8], id: &[u8; 4]) -> usize {
    bytes.windows(4).position(|w| w == id).unwrap()
}

fn wav_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let i16 = written(Encoding::Int(16), 2, 1 << 20);
    // A streaming writer's header: RIFF and data sizes unknown.
    let mut streaming = i16.clone();
    streaming[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    let d = chunk(&streaming, b"data");
    streaming[d + 4..d + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    // 64-bit float, which sluice reads but does not write.
    let mut f64 = written(Encoding::Float(32), 1, 1 << 20);
    let f = chunk(&f64, b"fmt ");
    f64[f + 8 + 14..f + 8 + 16].copy_from_slice(&64u16.to_le_bytes());
    // An odd-sized chunk without its pad byte before the data chunk.
    let mut unpadded = i16[..12].to_vec();
    unpadded.extend_from_slice(b"LIST\x03\x00\x00\x00abc");
    unpadded.extend_from_slice(&i16[12..]);
    vec![
        ("u8", written(Encoding::Int(8), 1, 1 << 20)),
        ("i16_stereo", i16),
        ("i24", written(Encoding::Int(24), 3, 1 << 20)),
        ("i32", written(Encoding::Int(32), 1, 1 << 20)),
        ("f32", written(Encoding::Float(32), 2, 1 << 20)),
        ("rf64", written(Encoding::Int(16), 2, 8)),
        ("streaming", streaming),
        ("f64", f64),
        ("unpadded", unpadded),
    ]
}

fn sigmf_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let full = json!({
        "global": {
            "core:datatype": "cf32_le", "core:version": "1.2.0", "core:sample_rate": 2.048e6,
            "core:num_channels": 1, "core:description": "every field"
        },
        "captures": [
            {"core:sample_start": 0, "core:frequency": 100e6,
             "core:datetime": "2017-02-01T11:33:17.053240Z", "core:header_bytes": 0},
            {"core:sample_start": 500, "core:frequency": 101e6}
        ],
        "annotations": [
            {"core:sample_start": 10, "core:sample_count": 20, "core:label": "burst",
             "core:freq_lower_edge": 99.9e6, "core:freq_upper_edge": 100.1e6},
            {"core:sample_start": 18446744073709551615u64}
        ]
    });
    let mut seeds = vec![("full", serde_json::to_vec_pretty(&full).unwrap())];
    for (name, datatype) in [("ci16", "ci16_le"), ("cu8", "cu8"), ("ci8", "ci8")] {
        let meta = json!({
            "global": {"core:datatype": datatype, "core:version": "1.0.0"},
            "captures": [{"core:sample_start": 0}], "annotations": []
        });
        seeds.push((name, serde_json::to_vec(&meta).unwrap()));
    }
    seeds.push(("datetime", b"1970-01-01T00:00:00.000001Z".to_vec()));
    seeds
}

#[test]
fn every_wav_corpus_input_replays() {
    let n = replay::replay("wav_read", fuzz::wav_file);
    assert!(
        n >= wav_seeds().len(),
        "the seed corpus is missing ({n} inputs)"
    );
}

#[test]
fn the_wav_corpus_holds_every_encoding_the_writer_writes() {
    let seeds = wav_seeds();
    for (_, bytes) in &seeds {
        fuzz::wav_file(bytes);
    }
    replay::check_seeds("wav_read", &seeds);
}

#[test]
fn every_sigmf_corpus_input_replays() {
    let n = replay::replay("sigmf_meta", fuzz::sigmf_meta);
    assert!(
        n >= sigmf_seeds().len(),
        "the seed corpus is missing ({n} inputs)"
    );
}

#[test]
fn the_sigmf_corpus_holds_every_field_the_reader_reads() {
    let seeds = sigmf_seeds();
    for (_, bytes) in &seeds {
        fuzz::sigmf_meta(bytes);
    }
    replay::check_seeds("sigmf_meta", &seeds);
}
