//! The `examples/` tour: every graph there is documented in its header and runs to completion,
//! producing what its header promises.

use std::path::{Path, PathBuf};
use std::process::Command;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Runs `sluice run EXAMPLE --stats` in `dir`; returns stdout and stderr.
fn run_example(name: &str, dir: &Path) -> (String, String) {
    let path = examples_dir().join(format!("{name}.toml"));
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", "--stats"])
        .arg(&path)
        .current_dir(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name}: {stderr}");
    (stdout, stderr)
}

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `rms -7.2 dBFS` in a probe's summary line labelled `label`.
fn probe_rms(stderr: &str, label: &str) -> f64 {
    let line = stderr
        .lines()
        .find(|l| l.starts_with(&format!("probe {label}:")))
        .unwrap_or_else(|| panic!("no probe '{label}' in:\n{stderr}"));
    let rms = line.split("rms ").nth(1).unwrap();
    rms.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn every_example_is_documented_and_listed_here() {
    let mut names: Vec<String> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "amps_cluster",
            "amps_receiver",
            "beamform_4",
            "beamform_6x2_partial",
            "beamform_cluster",
            // Run on a capture of known bursts in tests/bursts.rs.
            "bursts",
            "channels",
            // Runs until stopped: served and stopped below (the console's own tests are in
            // crates/web).
            "console",
            "corner_turn",
            "decimate",
            "default",
            "failover",
            "failover_warm",
            "first_receiver",
            "lowpass_to_file",
            // Run against the SoapySDR test device in tests/soapy.rs.
            "radio_record",
            "radio_replay",
            "radio_toolbox",
            // Run against the SoapySDR test device in tests/soapy.rs.
            "rtlsdr_fm",
            "throttled",
            "tone_cluster",
            "tone_to_wav",
            "wav_filter"
        ],
        "a new example needs a test below"
    );
    for name in &names {
        let text = std::fs::read_to_string(examples_dir().join(format!("{name}.toml"))).unwrap();
        let header = text.lines().take_while(|l| l.starts_with('#')).count();
        assert!(header >= 3, "{name}.toml: document it in a header comment");
        assert!(
            text.contains(&format!("sluice run examples/{name}.toml")),
            "{name}.toml: the header shows how to run it"
        );
    }
}

#[test]
fn the_examples_run_and_make_what_they_promise() {
    let dir = TempDir(std::env::temp_dir().join(format!("sluice-examples-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    // Every example writes into out/ (and reads what another wrote there), as from the
    // repository root, where out/ exists and git ignores it.
    std::fs::create_dir_all(dir.0.join("out")).unwrap();

    run_example("tone_to_wav", &dir.0);
    let tone = hound::WavReader::open(dir.0.join("out/tone.wav")).unwrap();
    assert_eq!(tone.spec().sample_rate, 44100);
    assert_eq!(tone.spec().bits_per_sample, 16);
    assert_eq!(tone.len(), 44100);

    // Reads tone.wav: the 440 Hz tone is inside the telephone band and passes.
    run_example("wav_filter", &dir.0);
    let filtered = hound::WavReader::open(dir.0.join("out/filtered.wav")).unwrap();
    assert_eq!(filtered.spec().sample_format, hound::SampleFormat::Float);
    // Neither WAV sink was given a rate: both took the stream's.
    assert_eq!(filtered.spec().sample_rate, 44100);
    let samples: Vec<f32> = filtered.into_samples::<f32>().map(Result::unwrap).collect();
    assert_eq!(samples.len(), 44100);
    let late_peak = samples[4410..].iter().fold(0f32, |m, s| m.max(s.abs()));
    assert!((0.4..0.6).contains(&late_peak), "{late_peak}");

    // The beamformers write their beams and draw the arrays' beam patterns.
    run_example("beamform_4", &dir.0);
    run_example("beamform_6x2_partial", &dir.0);
    // The five-host layout of the same beamformer, run on one machine (placement ignored).
    run_example("beamform_cluster", &dir.0);
    for (file, bytes) in [
        ("beam.c32", 1_600_000),
        ("beam0.c32", 1_600_000),
        ("beam1.c32", 1_600_000),
        ("cluster_beam0.c32", 16_000_000),
        ("cluster_beam1.c32", 16_000_000),
    ] {
        assert_eq!(
            std::fs::metadata(dir.0.join("out").join(file))
                .unwrap()
                .len(),
            bytes,
            "{file}"
        );
    }
    for png in ["beamform_4.png", "beamform_6x2.png"] {
        let head = std::fs::read(dir.0.join("out").join(png)).unwrap();
        assert!(head.starts_with(b"\x89PNG"), "{png}");
    }

    // The failover demonstration on one machine (placement and the standby ignored): 3 s of
    // paced noise through FIR, channelizer (1 of 8 channels), FM demodulator and IIR.
    run_example("failover", &dir.0);
    let bytes = std::fs::metadata(dir.0.join("out/failover.f32"))
        .unwrap()
        .len();
    assert_eq!(bytes, 3_000_000 / 8 * 4);
    // The same chain with a warm standby for h2 (its FIR in direct form, the IIR on h4).
    run_example("failover_warm", &dir.0);
    let bytes = std::fs::metadata(dir.0.join("out/failover_warm.f32"))
        .unwrap()
        .len();
    assert_eq!(bytes, 3_000_000 / 8 * 4);

    // The three-host pipeline on one machine: the 1 kHz tone (0.5) passes, 9 kHz (0.4) does not.
    run_example("tone_cluster", &dir.0);
    let trio = hound::WavReader::open(dir.0.join("out/tone_cluster.wav")).unwrap();
    assert_eq!(trio.spec().sample_rate, 48000);
    let samples: Vec<i16> = trio.into_samples::<i16>().map(Result::unwrap).collect();
    assert_eq!(samples.len(), 96000);
    let peak = samples[4800..]
        .iter()
        .map(|s| s.unsigned_abs())
        .max()
        .unwrap();
    assert!((15_500..17_300).contains(&peak), "{peak}");

    run_example("lowpass_to_file", &dir.0);
    let bytes = std::fs::metadata(dir.0.join("out/lowpass.c32"))
        .unwrap()
        .len();
    assert_eq!(bytes, 1_000_000 * 8);

    let (_, stderr) = run_example("decimate", &dir.0);
    let rms = probe_rms(&stderr, "decimated by 4");
    assert!((-8.0..-6.4).contains(&rms), "{rms} dBFS");
    assert!(stderr.contains("1000000 items"), "{stderr}");

    let (stdout, stderr) = run_example("throttled", &dir.0);
    assert!(stderr.contains("probe paced tone: 12000 items"), "{stderr}");
    assert!(stdout.contains("pace"), "{stdout}");

    let (_, stderr) = run_example("corner_turn", &dir.0);
    assert!(
        stderr.contains("probe transposed: 13107200 items"),
        "{stderr}"
    );

    let (_, stderr) = run_example("channels", &dir.0);
    assert!(
        stderr.contains("probe 333 channels: 329670 items"),
        "{stderr}"
    );
    let rms = probe_rms(&stderr, "333 channels");
    assert!((-8.0..-6.4).contains(&rms), "{rms} dBFS");

    run_example("radio_toolbox", &dir.0);
    let meta = std::fs::read_to_string(dir.0.join("out/tone.sigmf-meta")).unwrap();
    assert!(meta.contains("\"core:sample_rate\": 48000.0"), "{meta}");
    assert!(meta.contains("\"core:datatype\": \"ci16_le\""), "{meta}");
    let data = std::fs::read(dir.0.join("out/tone.sigmf-data")).unwrap();
    assert_eq!(data.len(), 480_000 * 4);
    // After the DC blocker settles, every sample is the 0.8 tone within cu8's quantisation.
    for iq in data[4 * 4800..].chunks_exact(4) {
        let re = f64::from(i16::from_le_bytes([iq[0], iq[1]])) / 32768.0;
        let im = f64::from(i16::from_le_bytes([iq[2], iq[3]])) / 32768.0;
        let m = re.hypot(im);
        assert!((0.79..0.81).contains(&m), "|x| = {m}");
    }
    let png = std::fs::read(dir.0.join("out/waterfall.png")).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "waterfall.png is a PNG file"
    );

    let (_, stderr) = run_example("default", &dir.0);
    let rms = probe_rms(&stderr, "lowpass output");
    assert!((-8.0..-6.4).contains(&rms), "{rms} dBFS");

    // Nothing landed beside out/: following the examples leaves the checkout clean.
    let top: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(top, ["out"], "the examples wrote outside out/");
}

/// The first receiver gets its station's tone back: 1 kHz at 48 k samples/s, though no node
/// but the source names a rate.
#[test]
fn the_first_receiver_hears_its_station() {
    let dir = TempDir(std::env::temp_dir().join(format!("sluice-first-rx-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(dir.0.join("out")).unwrap();
    run_example("first_receiver", &dir.0);
    let wav = hound::WavReader::open(dir.0.join("out/first_receiver.wav")).unwrap();
    assert_eq!(wav.spec().sample_rate, 48000);
    let x: Vec<f64> = wav
        .into_samples::<f32>()
        .map(|s| f64::from(s.unwrap()))
        .skip(4800)
        .collect();
    assert_eq!(x.len(), 96000 - 4800);
    // The power at 1 kHz (one DFT bin: 1 kHz is a whole number of cycles in the window) is
    // nearly all the power: the tone, de-emphasised, with the channel's noise far below.
    let n = x.len() as f64;
    let (re, im) = x.iter().enumerate().fold((0.0, 0.0), |(re, im), (k, v)| {
        let w = std::f64::consts::TAU * 1000.0 * k as f64 / 48000.0;
        (re + v * w.cos(), im - v * w.sin())
    });
    let tone = 2.0 * (re * re + im * im) / (n * n);
    let total = x.iter().map(|v| v * v).sum::<f64>() / n;
    assert!(tone / total > 0.99, "tone {tone}, total {total}");
    // 0.8 peak, de-emphasised at 1 kHz by 1/sqrt(1 + (1000/2122)²): RMS 0.512.
    assert!((total.sqrt() - 0.512).abs() < 0.01, "rms {}", total.sqrt());
}

/// The README shows the graph of `examples/lowpass_to_file.toml`; they must not drift apart.
#[test]
fn the_readme_graph_is_the_example() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let example = std::fs::read_to_string(examples_dir().join("lowpass_to_file.toml")).unwrap();
    let graph: String = example
        .lines()
        .skip_while(|l| l.starts_with('#') || l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        readme.contains(&graph),
        "README.md must show examples/lowpass_to_file.toml's graph verbatim"
    );
}

/// The first graph of the README runs as the README says.
#[test]
fn the_readme_first_graph_runs() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let graph = readme
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    assert!(graph.starts_with("connect = ["), "{graph}");
    let dir = TempDir(std::env::temp_dir().join(format!("sluice-readme-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    std::fs::write(dir.0.join("tone.toml"), graph).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", "tone.toml"])
        .current_dir(&dir.0)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("sluice: 5 nodes finished in"), "{stderr}");
    let wav = hound::WavReader::open(dir.0.join("tone.wav")).unwrap();
    assert_eq!((wav.spec().sample_rate, wav.len()), (48000, 48000));
    let x: Vec<f64> = wav
        .into_samples::<f32>()
        .map(|s| f64::from(s.unwrap()))
        .collect();
    let rms = (x[100..].iter().map(|v| v * v).sum::<f64>() / (x.len() - 100) as f64).sqrt();
    assert!((rms - 0.3536).abs() < 0.002, "rms {rms}");
}

#[test]
fn the_console_example_serves_its_graph_until_stopped() {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", "--http", "127.0.0.1:0"])
        .arg(examples_dir().join("console.toml"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    // "sluice: console at http://127.0.0.1:PORT/#token=…"
    let url = lines.by_ref().map_while(Result::ok).take(20).find_map(|l| {
        l.split_once("console at http://")
            .map(|(_, u)| u.to_string())
    });
    let Some(url) = url else {
        let _ = child.kill();
        panic!("the console's address was not printed");
    };
    let host = url.split('/').next().unwrap().to_string();
    let mut http = std::net::TcpStream::connect(&host).unwrap();
    http.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        http,
        "GET /api/graph HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    let _ = http.read_to_string(&mut reply);
    let _ = child.kill();
    let _ = child.wait();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    for node in ["tone", "noise", "mix", "pace", "gain"] {
        assert!(
            reply.contains(&format!("\"{node}\"")),
            "{node} missing: {reply}"
        );
    }
}
