//! The AMPS receiver example (`examples/amps_receiver.toml`) on a short generated band: four
//! channels of the raster, three occupied (two of them neighbours) and one empty between
//! occupied ones, at 25 dB C/N in 30 kHz. Every occupied channel's audio (300-3,000 Hz)
//! must reach 20 dB SNR and 0.95 correlation against its source after alignment; no
//! talker may be found in a neighbouring occupied channel above −40 dB of its own channel's
//! audio; the empty channel's audio (behind the example's squelch) must be at least 40 dB
//! weaker than every occupied channel's.

use sluice_amps::{self as amps, align_and_compare, projected_power, BandConfig};
use sluice_formats::wav::WavReader;
use sluice_graph::Override;
use sluice_runtime::RunOptions;
use std::path::PathBuf;

/// Removes the test's folder, also on failure.
struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const AUDIO_RATE: f64 = 12_000.0;
const VOICE: (f64, f64) = (300.0, 3000.0);
const SKIP_S: f64 = 0.03;

#[test]
fn every_channel_of_a_short_band_is_intelligible_and_alone() {
    let dir = TempDir(std::env::temp_dir().join(format!("sluice-amps-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let occupied = [100, 101, 103];
    let listened = [100, 101, 102, 103];
    let band = dir.0.join("band");
    let generator = amps::write_band(
        &band,
        BandConfig {
            channels: occupied.to_vec(),
            cn_db: Some(25.0),
            preemphasis: true,
            max_offset_hz: 300.0,
            amplitude: 0.05,
            seed: 3,
        },
        0.3,
    )
    .unwrap();

    let example =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/amps_receiver.toml");
    let text = std::fs::read_to_string(&example).unwrap();
    let k = listened.len();
    let list = |v: &[usize]| {
        format!(
            "[{}]",
            v.iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let pattern = dir.0.join("ch{}.wav").display().to_string();
    let sets = [
        format!("capture.path=\"{}\"", band.display()),
        format!("bank.outputs={}", list(&amps::bins(&listened))),
        format!("squelch.channels={k}"),
        format!("demod.channels={k}"),
        format!("deemph.channels={k}"),
        format!("audio.channels={k}"),
        format!("save.channels={k}"),
        format!("save.labels={}", list(&listened)),
        format!("save.path=\"{pattern}\""),
    ];
    run_receiver(&text, &sets);

    let audio: Vec<Vec<f32>> = listened
        .iter()
        .map(|&n| {
            let path = sluice_blocks::blocks::wav_files::channel_path(&pattern, n as u64);
            let mut r = WavReader::open(&path).unwrap();

            assert_eq!(r.info().sample_rate, 12_000);
            r.read_channels().unwrap().remove(0)
        })
        .collect();
    assert!(audio.iter().all(|a| a.len() > 3000), "{}", audio[0].len());

    // Each occupied channel against its own talker.
    let mut found = Vec::new();
    for (i, &n) in occupied.iter().enumerate() {
        let slot = listened.iter().position(|&m| m == n).unwrap();
        let reference = |t: f64| generator.audio(i, t);
        let c = align_and_compare(&audio[slot], AUDIO_RATE, &reference, SKIP_S, 0.05, VOICE);
        eprintln!("channel {n}: {c:?}");
        assert!(
            c.snr_db >= 20.0 && c.correlation >= 0.95,
            "channel {n}: SNR {:.1} dB, correlation {:.4} (want ≥ 20 dB, ≥ 0.95)",
            c.snr_db,
            c.correlation
        );
        found.push(c);
    }
    // The empty channel, squelched, against every occupied one (voice band power).
    let skip = (SKIP_S * AUDIO_RATE) as usize;
    let power = |a: &[f32]| {
        let a = &a[skip..];
        a.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / a.len() as f64
    };
    let empty = listened
        .iter()
        .position(|&m| !occupied.contains(&m))
        .unwrap();
    for &n in &occupied {
        let slot = listened.iter().position(|&m| m == n).unwrap();
        let db = 10.0 * (power(&audio[empty]) / power(&audio[slot])).log10();
        eprintln!(
            "empty channel {} against channel {n}: {db:.1} dB",
            listened[empty]
        );
        assert!(
            db <= -40.0,
            "the empty channel {} is only {db:.1} dB below channel {n} (want ≤ −40 dB)",
            listened[empty]
        );
    }
    // No talker in another occupied channel.
    let generator = &generator;
    for (i, &n) in occupied.iter().enumerate() {
        let other = |t: f64| generator.audio(i, t);
        for (slot, &m) in listened.iter().enumerate() {
            if m == n || !occupied.contains(&m) {
                continue;
            }
            let own_index = occupied.iter().position(|&o| o == m);
            let own_fn = own_index.map(|k| move |t: f64| generator.audio(k, t));
            let own = own_index
                .zip(own_fn.as_ref())
                .map(|(k, f)| (f as &dyn Fn(f64) -> f64, found[k].delay_s));
            let leak = projected_power(
                &audio[slot],
                AUDIO_RATE,
                (&other, found[i].delay_s),
                own,
                SKIP_S,
                VOICE,
            );
            let db = 10.0 * (leak / found[i].power).log10();
            eprintln!("talker of channel {n} in channel {m}: {db:.1} dB");
            assert!(
                db <= -40.0,
                "talker of channel {n} found in channel {m} at {db:.1} dB (want ≤ −40 dB)"
            );
        }
    }
}

/// FNV-1a (64 bits) of `bytes`, continuing from `h`.
fn fnv1a(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// The whole example graph (all 333 channels) on 50 ms of the default band (`sluice amps
/// generate --seconds 0.05`): its 333 WAV files, byte for byte in label order, must hash to
/// what the receiver wrote before its channelizer, WAV gathering and 16-bit encoding were made
/// faster, so those changes left the output the same to the bit. The digest was recorded on
/// a CPU whose kernels run at AVX-512 (as the benchmark machines' do); the other levels sum
/// some filters in another order (a few output codes differ in their last bit), so elsewhere
/// only the files' count and length are checked.
#[test]
fn the_whole_band_receiver_writes_the_same_files_as_before() {
    const RECORDED: u64 = 0x3710_ce7f_74f2_8074;
    let dir =
        TempDir(std::env::temp_dir().join(format!("sluice-amps-same-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let band = dir.0.join("band");
    amps::write_band(&band, BandConfig::default(), 0.05).unwrap();
    let example =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/amps_receiver.toml");
    let text = std::fs::read_to_string(&example).unwrap();
    let pattern = dir.0.join("amps_ch{}.wav").display().to_string();
    let sets = [
        format!("capture.path=\"{}\"", band.display()),
        format!("save.path=\"{pattern}\""),
    ];
    run_receiver(&text, &sets);
    let mut digest = 0xcbf2_9ce4_8422_2325;
    for n in 1..=amps::CHANNELS as u64 {
        let path = sluice_blocks::blocks::wav_files::channel_path(&pattern, n);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 1230, "{}", path.display());
        digest = fnv1a(digest, &bytes);
    }
    if sluice_kernels::SimdLevel::detect() == sluice_kernels::SimdLevel::Avx512 {
        assert_eq!(
            digest, RECORDED,
            "the receiver's output changed: {digest:#x}"
        );
    } else {
        eprintln!("not an AVX-512 CPU: the digest {digest:#x} is not compared");
    }
}

/// Runs the receiver graph `text` with the `--set` overrides `sets`.
fn run_receiver(text: &str, sets: &[String]) {
    let overrides: Vec<Override> = sets
        .iter()
        .map(|s| s.parse::<Override>().unwrap())
        .collect();
    let registry = sluice_blocks::graph_blocks::standard_registry();
    let loaded = sluice_graph::load_with(text, "amps_receiver.toml", &registry, &overrides)
        .unwrap_or_else(|e| panic!("{e}"));
    loaded.graph.run(&RunOptions::default()).unwrap();
}
