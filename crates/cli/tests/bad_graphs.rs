//! The corpus of bad graph files in `crates/graph/tests/bad/`: each is run with `sluice run` in a
//! fresh directory holding files a user already had (an input, an existing output, a WAV), and
//! must exit with the status its header states (1 unless `# exit:` says otherwise), print the
//! errors its `# expect:` lines state (each a part of one of the error lines: a file's mistakes
//! are reported one per line) and change no file.
//!
//! A file's header:
//!
//! ```toml
//! # What is wrong, in words.
//! # expect: g.toml:12:34: node 'head': parameter 'items' must not be negative (-3)
//! ```
//!
//! The graph is copied into the directory as `g.toml`, so the expected error names that file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../graph/tests/bad");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// The header's expectations: the error's parts and the exit status.
fn expectations(text: &str, file: &Path) -> (Vec<String>, i32) {
    let mut parts = Vec::new();
    let mut exit = 1;
    for line in text.lines().take_while(|l| l.starts_with('#')) {
        if let Some(part) = line.strip_prefix("# expect: ") {
            parts.push(part.to_string());
        } else if let Some(code) = line.strip_prefix("# exit: ") {
            exit = code.trim().parse().expect("# exit: takes a number");
        }
    }
    assert!(!parts.is_empty(), "{}: no '# expect:' line", file.display());
    (parts, exit)
}

/// Files a user already had, by name and contents.
fn existing_files() -> BTreeMap<&'static str, Vec<u8>> {
    let mut wav = Vec::new();
    {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: 8000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::new(std::io::Cursor::new(&mut wav), spec).unwrap();
        for i in 0..100 {
            w.write_sample(i as i16).unwrap();
        }
        w.finalize().unwrap();
    }
    BTreeMap::from([
        ("in.c32", (0..64u8).collect()),
        ("keep.c32", b"yesterday's capture".to_vec()),
        ("odd.c32", vec![7u8; 12]),
        ("keep.wav", wav),
    ])
}

/// Everything in `dir`, by name and contents.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_bad_graph_is_refused_by_name_and_changes_nothing() {
    let files = corpus();
    assert!(
        files.len() >= 40,
        "the corpus holds {} files, fewer than 40",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(file).unwrap();
        let (parts, exit) = expectations(&text, file);
        let dir = std::env::temp_dir().join(format!("sluice-bad-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (path, contents) in existing_files() {
            std::fs::write(dir.join(path), contents).unwrap();
        }
        std::fs::write(dir.join("g.toml"), &text).unwrap();
        let before = snapshot(&dir);
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["run", "g.toml"])
            .current_dir(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let error_lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("sluice: error: "))
            .collect();
        let after = snapshot(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        let mut wrong = Vec::new();
        if out.status.code() != Some(exit) {
            wrong.push(format!(
                "exit status {:?}, expected {exit}",
                out.status.code()
            ));
        }
        if error_lines.is_empty() {
            wrong.push("no error line".to_string());
        }
        for part in &parts {
            if !error_lines.iter().any(|l| l.contains(part.as_str())) {
                wrong.push(format!("the error does not say: {part}"));
            }
        }
        if after != before {
            let changed: Vec<&String> = after
                .keys()
                .chain(before.keys())
                .filter(|k| after.get(*k) != before.get(*k))
                .collect();
            wrong.push(format!("files changed, created or removed: {changed:?}"));
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "{name}.toml: {}\n  stderr: {stderr}",
                wrong.join("; ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} bad graphs misbehaved:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
