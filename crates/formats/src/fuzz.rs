//! The drivers the `wav_read` and `sigmf_meta` fuzz targets (`fuzz/fuzz_targets/`) and their
//! replay tests (`tests/fuzz_corpus.rs`) share, so that what the fuzzer checks and what
//! `cargo test` replays cannot drift apart.

use crate::{sigmf, wav};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Reads `data` as a WAV file through [`wav::WavReader`], as `wav_source` does: the header,
/// then every frame. The bytes go into a temporary file (the reader reads paths) that is
/// removed once opened. Panics if the reader returns more frames than the header announces,
/// a sample that is not finite, or a partial frame.
pub fn wav_file(data: &[u8]) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "sluice-fuzz-{}-{}.wav",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, data).expect("the temporary directory is writable");
    let opened = wav::WavReader::open(&path);
    std::fs::remove_file(&path).expect("the temporary file can be removed");
    let Ok(mut reader) = opened else {
        return;
    };
    let info = reader.info();
    let mut out = Vec::new();
    let mut frames = 0u64;
    loop {
        out.clear();
        match reader.read_frames(&mut out, 4096) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                assert_eq!(out.len(), n * info.channels, "a partial frame");
                frames += n as u64;
            }
        }
        if let wav::Encoding::Int(_) = info.encoding {
            assert!(
                out.iter().all(|x| (-1.0..=1.0).contains(x)),
                "beyond full scale"
            );
        }
    }
    if let Some(announced) = info.frames {
        assert!(
            frames <= announced,
            "{frames} frames of {announced} announced"
        );
    }
    assert!(frames * (info.channels * info.encoding.bytes()) as u64 <= data.len() as u64);
}

/// Parses `data` (as UTF-8, invalid sequences replaced) as a SigMF meta file, and each
/// capture's time back from the text [`sigmf::format_datetime`] makes of it. Panics if that
/// text does not read back as the same second.
pub fn sigmf_meta(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some((secs, fraction)) = sigmf::parse_datetime(text.trim()) {
        round_trip(secs, fraction);
    }
    let Ok(meta) = sigmf::parse_meta(&text, Path::new("fuzz.sigmf-meta")) else {
        return;
    };
    for c in &meta.captures {
        if let Some((secs, fraction)) = c.datetime {
            round_trip(secs, fraction);
        }
    }
}

fn round_trip(secs: u64, fraction: f64) {
    let text = sigmf::format_datetime(secs, fraction);
    let back = sigmf::parse_datetime(&text).map(|(s, _)| s);
    assert_eq!(
        back,
        Some(secs),
        "{text} does not read back as second {secs}"
    );
}
