//! The README's AMPS commands: `sluice amps generate`, `sluice amps bins` and
//! `examples/amps_receiver.toml` (here on two channels, with `--set`) make one WAV per channel.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sluice(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sluice {args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn generate_then_receive_two_channels() {
    let dir = TempDir(std::env::temp_dir().join(format!("sluice-amps-cli-{}", std::process::id())));
    // The example reads and writes in out/, as from the repository root.
    std::fs::create_dir_all(dir.0.join("out")).unwrap();
    let out = sluice(
        &dir.0,
        &[
            "amps",
            "generate",
            "out/amps_band",
            "--seconds",
            "0.05",
            "--channels",
            "5-6",
        ],
    );
    assert!(out.contains("2 channels"), "{out}");
    let bins = sluice(&dir.0, &["amps", "bins", "5", "6"]);
    assert_eq!(bins.trim(), "[350, 351]");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/amps_receiver.toml");
    let mut args = vec!["run".to_string(), example.display().to_string()];
    for set in [
        format!("bank.outputs={}", bins.trim()),
        "squelch.channels=2".into(),
        "demod.channels=2".into(),
        "deemph.channels=2".into(),
        "audio.channels=2".into(),
        "save.channels=2".into(),
        "save.labels=[5, 6]".into(),
    ] {
        args.push("--set".into());
        args.push(set);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sluice(&dir.0, &args);
    for n in ["005", "006"] {
        let wav = dir.0.join(format!("out/amps_ch{n}.wav"));
        let len = std::fs::metadata(&wav).unwrap().len();
        // 0.05 s at 12 kHz, 16-bit, less the filters' start-up.
        assert!(len > 44 + 2 * 500, "{}: {len} bytes", wav.display());
    }
}
