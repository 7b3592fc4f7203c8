//! `examples/bursts.toml` on a SigMF capture of synthetic bursts at known places and powers:
//! every burst is found, none is invented, each starts and ends within a stated tolerance and
//! has its power, and the first burst's measured offset retunes the rotator so that the later
//! bursts demodulate at 0 Hz.

use std::path::{Path, PathBuf};
use std::process::Command;

const RATE: f64 = 48_000.0;
/// The bursts' carrier offset in the capture.
const OFFSET_HZ: f64 = 2_000.0;
/// (first sample, samples, amplitude): powers 0, -6, -12 and -3 dB, noise at -40 dB.
const BURSTS: [(usize, usize, f64); 4] = [
    (10_000, 1_000, 1.0),
    (40_000, 600, 0.5),
    (70_000, 2_000, 0.25),
    (100_000, 300, 0.707),
];
const LEN: usize = 120_000;
/// Start and end within a quarter of the detector's 32-sample window.
const TOLERANCE: i64 = 8;

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The capture: noise, and the bursts as tones at `OFFSET_HZ`.
fn write_capture(out: &Path) {
    let mut state = 99u32;
    let mut uniform = move || {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) as f64 / (1u32 << 24) as f64 - 0.5
    };
    let sigma = (1e-4f64 * 6.0).sqrt(); // -40 dB of |x|² from two uniform parts
    let mut x: Vec<(f64, f64)> = (0..LEN)
        .map(|_| (uniform() * sigma, uniform() * sigma))
        .collect();
    for (start, n, a) in BURSTS {
        for k in 0..n {
            let ph = 2.0 * std::f64::consts::PI * OFFSET_HZ * k as f64 / RATE;
            x[start + k].0 += a * ph.cos();
            x[start + k].1 += a * ph.sin();
        }
    }
    let bytes: Vec<u8> = x
        .iter()
        .flat_map(|&(re, im)| [(re as f32).to_le_bytes(), (im as f32).to_le_bytes()].concat())
        .collect();
    std::fs::write(out.join("bursts.sigmf-data"), bytes).unwrap();
    let meta = serde_json::json!({
        "global": { "core:datatype": "cf32_le", "core:sample_rate": RATE, "core:version": "1.2.0" },
        "captures": [ { "core:sample_start": 0 } ],
        "annotations": []
    });
    std::fs::write(out.join("bursts.sigmf-meta"), meta.to_string()).unwrap();
}

#[test]
fn every_burst_is_found_in_place_and_the_decoder_retunes_the_receiver() {
    let dir = TempDir(std::env::temp_dir().join(format!("sluice-bursts-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(dir.0.join("out")).unwrap();
    write_capture(&dir.0.join("out"));
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bursts.toml");
    let run = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", "--stats"])
        .arg(&example)
        .current_dir(&dir.0)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");

    let text = std::fs::read_to_string(dir.0.join("out/bursts.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), BURSTS.len(), "found:\n{text}");
    let mut offset = 0u64;
    for (i, (r, &(start, n, a))) in records.iter().zip(&BURSTS).enumerate() {
        let meta = &r["meta"];
        let found = meta["burst_item"].as_u64().unwrap() as i64;
        // The demodulator gives one sample fewer than the burst had.
        let items = r["items"].as_u64().unwrap() as i64 + 1;
        let end = found + items - 1;
        let true_end = (start + n - 1) as i64;
        assert!(
            (found - start as i64).abs() <= TOLERANCE,
            "burst {i}: starts at {found}, not {start}"
        );
        assert!(
            (end - true_end).abs() <= TOLERANCE,
            "burst {i}: ends at {end}, not {true_end}"
        );
        let db = 20.0 * a.log10();
        let power = meta["burst_start"].as_f64().unwrap();
        assert!((power - db).abs() < 0.5, "burst {i}: {power} dB, not {db}");
        assert_eq!(meta["burst_end"].as_f64(), Some(power));
        assert_eq!(r["type"], "f32");
        assert_eq!(r["offset"].as_u64(), Some(offset));
        offset += r["items"].as_u64().unwrap() * 4;
        // The first burst is heard at the capture's offset; it retunes the rotator, which
        // changes at an item between it and the next burst, so the rest arrive at 0 Hz.
        let mean = meta["fm_mean"].as_f64().unwrap();
        let expected = if i == 0 { OFFSET_HZ } else { 0.0 };
        assert!(
            (mean - expected).abs() < 20.0,
            "burst {i}: demodulated mean {mean} Hz, not {expected}"
        );
    }
    let data = std::fs::metadata(dir.0.join("out/bursts.jsonl.data")).unwrap();
    assert_eq!(data.len(), offset);
}
