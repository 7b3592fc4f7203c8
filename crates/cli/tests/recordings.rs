//! What happens to output files on every way a run can end, as the README states it: Ctrl-C
//! finishes each file with what was recorded (replacing an older one); a second Ctrl-C exits at
//! once, leaving older files as they were and no partial file; a partial file that a killed run
//! left is named by the next run; `sluice convolve` stops as gracefully as `sluice run` and has
//! a gain; sample formats have one spelling (and sox's as an alias).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A fresh directory, removed when dropped (also when the test fails).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let d = std::env::temp_dir().join(format!("sluice-rec-{tag}-{}", std::process::id()));
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

fn sluice(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn partials(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial-"))
        .collect()
}

/// Waits (bounded) until `dir` holds a partial file: the sink has created its output.
fn wait_for_partial(dir: &Path, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while partials(dir).is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "sluice ended before writing"
        );
        assert!(Instant::now() < deadline, "no partial file after 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn interrupt(child: &Child) {
    // SAFETY: kill sends SIGINT to the child we started (still running: not yet waited for).
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
}

/// Waits (bounded) for the child's end.
fn finish(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("sluice did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// An endless tone, paced by a throttle, into `rec.wav` (an older one is there).
fn endless_graph(dir: &Path, rate: u32, queue_bytes: u32) {
    let g = format!(
        r#"
[options]
queue_bytes = {queue_bytes}

[[node]]
name = "tone"
type = "signal_source"
params = {{ item = "f32", waveform = "tone", frequency = 440.0, amplitude = 0.5, sample_rate = 48000 }}

[[node]]
name = "pace"
type = "throttle"
params = {{ item = "f32", rate = {rate} }}

[[node]]
name = "wav"
type = "wav_sink"
params = {{ path = "rec.wav", format = "i16" }}

[[edge]]
from = "tone.out"
to = "pace.in"

[[edge]]
from = "pace.out"
to = "wav.in0"
"#
    );
    std::fs::write(dir.join("g.toml"), g).unwrap();
    std::fs::write(dir.join("rec.wav"), b"an older recording").unwrap();
}

#[test]
fn ctrl_c_finishes_the_file_with_what_was_recorded() {
    let dir = TempDir::new("ctrl-c");
    endless_graph(&dir.0, 48_000, 4096);
    let mut child = sluice(&dir.0, &["run", "g.toml", "--quiet"])
        .spawn()
        .unwrap();
    wait_for_partial(&dir.0, &mut child);
    std::thread::sleep(Duration::from_millis(300));
    interrupt(&child);
    let out = finish(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stopped by SIGINT"), "{stderr}");
    let mut r = sluice_formats::wav::WavReader::open(&dir.0.join("rec.wav")).unwrap();
    let frames = r.info().frames.unwrap();
    assert!(
        frames > 0,
        "the recording until the stop replaced the older file"
    );
    assert_eq!(r.read_channels().unwrap()[0].len() as u64, frames);
    assert!(partials(&dir.0).is_empty(), "{:?}", partials(&dir.0));
}

#[test]
fn a_second_ctrl_c_exits_at_once_leaving_the_older_file_and_no_partial() {
    let dir = TempDir::new("ctrl-c-twice");
    // A queue of a million items ahead of a 1000 items/s throttle: the graceful stop would
    // drain for minutes, so the user presses Ctrl-C again.
    endless_graph(&dir.0, 1000, 4 << 20);
    let mut child = sluice(&dir.0, &["run", "g.toml", "--quiet"])
        .spawn()
        .unwrap();
    wait_for_partial(&dir.0, &mut child);
    std::thread::sleep(Duration::from_millis(300));
    interrupt(&child);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "still draining after the first Ctrl-C"
    );
    interrupt(&child);
    let out = finish(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("second SIGINT: exiting at once; 1 unfinished output file(s) removed"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(dir.0.join("rec.wav")).unwrap(),
        b"an older recording"
    );
    assert!(partials(&dir.0).is_empty(), "{:?}", partials(&dir.0));
}

#[test]
fn a_partial_file_left_by_a_killed_run_is_named_by_the_next() {
    let dir = TempDir::new("stale");
    // A process that has ended: a child that ran and was waited for.
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let stale = format!(".tone.wav.partial-{pid}-0");
    std::fs::write(dir.0.join(&stale), b"what a killed run wrote").unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tone_to_wav.toml");
    let out = sluice(
        &dir.0,
        &[
            "run",
            &example.display().to_string(),
            "--quiet",
            "--set",
            "wav.path=tone.wav",
        ],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("found ./{stale} left by an earlier run"))
            || stderr.contains(&format!("found {stale} left by an earlier run")),
        "{stderr}"
    );
    assert!(dir.0.join(&stale).exists(), "it may hold a recording: kept");
}

fn write_wav(path: &Path, rate: u32, samples: &[f32]) {
    let mut w = sluice_formats::wav::WavWriter::create(
        path,
        1,
        Some(rate),
        sluice_formats::wav::Encoding::Float(32),
    )
    .unwrap();
    w.write(samples).unwrap();
    w.finish().unwrap();
}

fn read_wav(path: &Path) -> (sluice_formats::wav::WavInfo, Vec<f32>) {
    let mut r = sluice_formats::wav::WavReader::open(path).unwrap();
    (r.info(), r.read_channels().unwrap().remove(0))
}

#[test]
fn convolve_takes_a_gain_in_db_and_sox_s_format_names() {
    let dir = TempDir::new("convolve-gain");
    let x: Vec<f32> = (0..4800)
        .map(|n| ((n * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    write_wav(&dir.0.join("in.wav"), 48_000, &x);
    write_wav(&dir.0.join("ir.wav"), 48_000, &[1.0, 0.0, 0.5]);
    let out = sluice(
        &dir.0,
        &[
            "convolve", "in.wav", "ir.wav", "out.wav", "--gain", "-6", "--format", "f32", "--quiet",
        ],
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, y) = read_wav(&dir.0.join("out.wav"));
    let g = 10f32.powf(-6.0 / 20.0);
    assert_eq!(y.len(), x.len() + 2);
    for (n, &v) in y.iter().enumerate() {
        let want = g
            * (x.get(n).copied().unwrap_or(0.0)
                + 0.5
                    * n.checked_sub(2)
                        .and_then(|k| x.get(k))
                        .copied()
                        .unwrap_or(0.0));
        assert!((v - want).abs() < 1e-5, "n {n}: {v} vs {want}");
    }
    for name in ["i24", "s24"] {
        let out = sluice(
            &dir.0,
            &[
                "convolve",
                "in.wav",
                "ir.wav",
                &format!("{name}.wav"),
                "--format",
                name,
                "--quiet",
            ],
        )
        .output()
        .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (info, _) = read_wav(&dir.0.join(format!("{name}.wav")));
        assert_eq!(info.encoding, sluice_formats::wav::Encoding::Int(24));
    }
}

#[test]
fn convolve_stops_gracefully_on_ctrl_c_with_a_valid_shorter_output() {
    let dir = TempDir::new("convolve-stop");
    // 20 minutes at 8 kHz through an IR of 65536 frames in uniform blocks of 64 (1024
    // partitions): long enough to be interrupted on any machine.
    let len: usize = 20 * 60 * 8000;
    let x: Vec<f32> = (0..len)
        .map(|n| ((n * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let mut h = vec![0.0f32; 65536];
    h[0] = 1.0;
    h[65535] = 0.5;
    write_wav(&dir.0.join("in.wav"), 8000, &x);
    write_wav(&dir.0.join("ir.wav"), 8000, &h);
    let child = sluice(
        &dir.0,
        &[
            "convolve",
            "in.wav",
            "ir.wav",
            "out.wav",
            "--block",
            "64",
            "--partitioning",
            "uniform",
            "--quiet",
        ],
    )
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&child);
    let out = finish(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stopped by SIGINT: the first"), "{stderr}");
    let (_, y) = read_wav(&dir.0.join("out.wav"));
    let read = y.len() + 1 - h.len();
    assert!(
        read > 0 && read < x.len(),
        "{read} of {} input frames",
        x.len()
    );
    // The part read, convolved with the whole IR (tail included).
    for (n, &v) in y.iter().enumerate() {
        let at = |k: usize| if k < read { x[k] } else { 0.0 };
        let want = at(n) + 0.5 * n.checked_sub(65535).map_or(0.0, at);
        assert!((v - want).abs() < 1e-5, "n {n}: {v} vs {want}");
    }
    assert!(partials(&dir.0).is_empty());
}
