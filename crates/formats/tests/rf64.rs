//! Recordings past the 4 GiB a WAV header describes: RF64 files (EBU Tech 3306) and split plain
//! WAV files, read back by sluice's reader, sox and Python's soundfile (libsndfile), with the
//! plain-WAV limit made small so that the tests write kilobytes, not gigabytes. The real limit
//! has its own test behind `--ignored` (it writes 4.2 GiB).

use sluice_formats::wav::{split_path, Beyond4Gib, Encoding, WavReader, WavWriter};
use std::path::{Path, PathBuf};
use std::process::Command;

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let d = std::env::temp_dir().join(format!("sluice-rf64-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A stereo test signal: two tones, interleaved, well inside full scale.
fn signal(frames: usize) -> Vec<f32> {
    (0..frames)
        .flat_map(|n| {
            let t = n as f32;
            [(t * 0.031).sin() * 0.8, (t * 0.0071).cos() * -0.6]
        })
        .collect()
}

/// `samples` as the file stores them (quantised for integer encodings), as f32.
fn stored(samples: &[f32], encoding: Encoding) -> Vec<f32> {
    match encoding {
        Encoding::Float(_) => samples.to_vec(),
        Encoding::Int(bits) => samples
            .iter()
            .map(|&x| {
                let (q, _) = sluice_formats::wav::quantize(x, u32::from(bits));
                (f64::from(q) / f64::from(1u32 << (bits - 1))) as f32
            })
            .collect(),
    }
}

fn write(
    path: &Path,
    encoding: Encoding,
    samples: &[f32],
    limit: u64,
    beyond: Beyond4Gib,
) -> Vec<PathBuf> {
    let mut w = WavWriter::create(path, 2, Some(48_000), encoding)
        .unwrap()
        .beyond_4gib(beyond)
        .with_data_limit(limit);
    // Odd chunk sizes, so that the limit falls inside a write.
    for chunk in samples.chunks(2 * 777) {
        w.write(chunk).unwrap();
    }
    w.finish().unwrap();
    w.files().to_vec()
}

fn read_ours(path: &Path) -> Vec<f32> {
    let mut r = WavReader::open(path).unwrap();
    let mut out = Vec::new();
    while r.read_frames(&mut out, 4096).unwrap() > 0 {}
    out
}

fn sox(args: &[&str]) -> std::process::Output {
    Command::new("sox")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run sox ({e}): install Debian's sox (scripts/setup.sh)"))
}

/// sox's reading, as interleaved f32 (sox converts through 32-bit integers).
fn read_sox(path: &Path) -> Vec<f32> {
    let out = sox(&[
        &path.display().to_string(),
        "-t",
        "raw",
        "-e",
        "floating-point",
        "-b",
        "32",
        "-",
    ]);
    assert!(
        out.status.success(),
        "sox: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "sox warned: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// soundfile's (libsndfile's) reading, as interleaved f32, and the format it names.
fn read_soundfile(path: &Path) -> (String, Vec<f32>) {
    let script = "import soundfile, sys\n\
                  d, r = soundfile.read(sys.argv[1], dtype='float32', always_2d=True)\n\
                  i = soundfile.info(sys.argv[1])\n\
                  sys.stderr.write(i.format + ' ' + str(r) + ' ' + str(i.channels))\n\
                  sys.stdout.buffer.write(d.tobytes())\n";
    let out = Command::new("/usr/bin/python3")
        .args(["-c", script, &path.display().to_string()])
        .output()
        .expect("run /usr/bin/python3");
    assert!(
        out.status.success(),
        "python3 soundfile failed (install Debian's python3-soundfile, scripts/setup.sh): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples = out
        .stdout
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    (String::from_utf8_lossy(&out.stderr).into_owned(), samples)
}

fn assert_close(what: &str, got: &[f32], want: &[f32], tolerance: f32) {
    assert_eq!(got.len(), want.len(), "{what}: sample count");
    let err = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(err <= tolerance, "{what}: largest difference {err}");
}

#[test]
fn past_the_limit_a_recording_becomes_rf64_and_every_reader_reads_it_whole() {
    let dir = TempDir::new("rf64");
    let x = signal(20_000);
    for encoding in [Encoding::Float(32), Encoding::Int(16), Encoding::Int(24)] {
        let path = dir.0.join(format!("rec-{encoding:?}.wav"));
        // 50 kB of samples at most in a plain file: these hold 80 to 160 kB.
        let files = write(&path, encoding, &x, 50_000, Beyond4Gib::Rf64);
        assert_eq!(files, vec![path.clone()]);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[0..4], b"RF64", "{encoding:?}");
        assert_eq!(&bytes[12..16], b"ds64", "the JUNK placeholder became ds64");
        let data = u64::from_le_bytes(bytes[28..36].try_into().unwrap());
        assert_eq!(data, (x.len() * encoding.bytes()) as u64);
        let want = stored(&x, encoding);
        assert_close("sluice's reader", &read_ours(&path), &want, 0.0);
        let (format, soundfile) = read_soundfile(&path);
        assert!(
            format.starts_with("RF64 48000 2"),
            "soundfile says {format}"
        );
        assert_close("soundfile", &soundfile, &want, 0.0);
        assert_close("sox", &read_sox(&path), &want, 1.0 / (1 << 23) as f32);
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".partial-"))
        .collect();
    assert!(leftovers.is_empty(), "partial files left: {leftovers:?}");
}

#[test]
fn within_the_limit_a_file_is_plain_wav_and_sox_reads_its_float_header_without_warning() {
    let dir = TempDir::new("plain");
    let x = signal(5000);
    for (encoding, tag) in [
        (Encoding::Float(32), 3u16),
        (Encoding::Int(16), 1),
        (Encoding::Int(24), 0xFFFE),
    ] {
        let path = dir.0.join(format!("rec-{encoding:?}.wav"));
        write(&path, encoding, &x, u64::MAX, Beyond4Gib::Rf64);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[0..4], b"RIFF");
        assert_eq!(&bytes[12..16], b"JUNK", "room kept for ds64");
        assert_eq!(
            u16::from_le_bytes([bytes[56], bytes[57]]),
            tag,
            "{encoding:?}: format tag"
        );
        let riff = u32::from_le_bytes(bytes[4..8].try_into().unwrap());
        assert_eq!(u64::from(riff), bytes.len() as u64 - 8);
        let info = sox(&["--i", &path.display().to_string()]);
        assert!(info.status.success());
        assert!(
            info.stderr.is_empty(),
            "sox --i warned: {}",
            String::from_utf8_lossy(&info.stderr)
        );
        let text = String::from_utf8_lossy(&info.stdout);
        assert!(text.contains("5000 samples"), "{text}");
        assert_close(
            "sox",
            &read_sox(&path),
            &stored(&x, encoding),
            1.0 / (1 << 23) as f32,
        );
        assert_close(
            "soundfile",
            &read_soundfile(&path).1,
            &stored(&x, encoding),
            0.0,
        );
    }
}

#[test]
fn asked_for_plain_wav_a_recording_goes_on_in_the_next_file_and_nothing_is_lost() {
    let dir = TempDir::new("split");
    let path = dir.0.join("rec.wav");
    let x = signal(10_001);
    // 16-bit stereo: 4 bytes a frame; 15 000 bytes (3750 frames) a file: three files.
    let files = write(&path, Encoding::Int(16), &x, 15_000, Beyond4Gib::Split);
    assert_eq!(
        files,
        vec![path.clone(), split_path(&path, 2), split_path(&path, 3)]
    );
    assert!(files[2].ends_with("rec.3.wav"));
    let mut all = Vec::new();
    for (n, f) in files.iter().enumerate() {
        let bytes = std::fs::read(f).unwrap();
        assert_eq!(&bytes[0..4], b"RIFF", "{}", f.display());
        let part = read_ours(f);
        assert_eq!(
            part.len(),
            if n < 2 { 3750 * 2 } else { (10_001 - 7500) * 2 }
        );
        assert_close("soundfile", &read_soundfile(f).1, &part, 0.0);
        all.extend(part);
    }
    assert_close(
        "the parts together",
        &all,
        &stored(&x, Encoding::Int(16)),
        0.0,
    );
}

/// The real limit: 4.2 GiB of float samples into a file in a temporary directory (it needs
/// that much free disk and a minute). `cargo test -p sluice-formats --test rf64 -- --ignored`
#[test]
#[ignore]
fn a_real_4_2_gib_recording_is_rf64_and_sox_and_soundfile_count_it_whole() {
    let dir = TempDir::new("real");
    let path = dir.0.join("big.wav");
    let mut w = WavWriter::create(&path, 2, Some(2_000_000), Encoding::Float(32)).unwrap();
    let chunk: Vec<f32> = signal(1 << 20);
    // 4.2 GiB (4.5 GB) of samples: past the 4 GiB a RIFF header counts.
    let chunks = (42u64 << 30) / 10 / (chunk.len() as u64 * 4) + 1;
    for _ in 0..chunks {
        w.write(&chunk).unwrap();
    }
    w.finish().unwrap();
    let frames = chunks * (1 << 20);
    let mut head = [0u8; 4];
    std::io::Read::read_exact(&mut std::fs::File::open(&path).unwrap(), &mut head).unwrap();
    assert_eq!(&head, b"RF64");
    let info = sox(&["--i", "-s", &path.display().to_string()]);
    assert!(
        info.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&info.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&info.stdout).trim(),
        frames.to_string()
    );
    let out = Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import soundfile, sys; print(soundfile.info(sys.argv[1]).frames)",
            &path.display().to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        frames.to_string()
    );
    let mut r = WavReader::open(&path).unwrap();
    assert_eq!(r.info().frames, Some(frames));
    // The last chunk reads back as written.
    let mut tail = Vec::new();
    let mut skipped = 0;
    while skipped < frames - (1 << 20) {
        tail.clear();
        skipped += r
            .read_frames(
                &mut tail,
                ((frames - (1 << 20) - skipped) as usize).min(1 << 20),
            )
            .unwrap() as u64;
    }
    tail.clear();
    while r.read_frames(&mut tail, 1 << 20).unwrap() > 0 {}
    assert_eq!(tail, chunk);
}
