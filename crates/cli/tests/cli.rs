//! The `sluice` command end to end: the quick start's default graph, graph files, and the
//! one-line errors a user sees.

use std::process::Command;

fn sluice(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .expect("run sluice");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn default_graph_runs_and_says_what_it_did() {
    let (ok, stdout, stderr) = sluice(&["run", "--stats"]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("running built-in default graph"),
        "{stderr}"
    );
    assert!(
        stderr.contains("probe lowpass output: 20000000 items"),
        "{stderr}"
    );
    assert!(
        stdout.contains("lowpass") && stdout.contains("wall time"),
        "{stdout}"
    );
}

#[test]
fn blocks_lists_every_block_by_family_and_one_in_full() {
    let (ok, stdout, _) = sluice(&["blocks"]);
    assert!(ok);
    for (family, name) in [
        ("sources:", "null_source"),
        ("plumbing:", "head"),
        ("plumbing:", "copy"),
        ("filters:", "fir"),
        ("filters:", "fft_filter"),
        ("files:", "wav_source"),
        ("analysis:", "probe"),
    ] {
        let section = stdout.split(family).nth(1).unwrap_or_default();
        let section = section.split("\n\n").next().unwrap_or_default();
        assert!(
            section
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{name} "))),
            "{name} missing from {family} in:\n{stdout}"
        );
    }
    let (ok, fir, _) = sluice(&["blocks", "fir"]);
    assert!(ok);
    assert!(fir.contains("taps_file"), "{fir}");
    let (ok, json, _) = sluice(&["blocks", "--json"]);
    assert!(ok);
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(parsed.as_array().unwrap().len() > 60);
}

#[test]
fn a_bad_graph_file_is_one_line_naming_file_line_and_node() {
    let dir = std::env::temp_dir().join(format!("sluice-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(
        &path,
        "[[node]]\nname = \"src\"\ntype = \"null_source\"\nparams = { item = \"c64\" }\n",
    )
    .unwrap();
    let (ok, _, stderr) = sluice(&["run", path.to_str().unwrap()]);
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        format!(
            "sluice: error: {}:4:19: node 'src': parameter 'item' must be one of c32, f32, i16, u8, not 'c64'",
            path.display()
        )
    );
    let (ok, _, stderr) = sluice(&["run", "/nonexistent/graph.toml"]);
    assert!(!ok);
    assert!(
        stderr.starts_with(
            "sluice: error: /nonexistent/graph.toml: cannot read the graph file: No such file"
        ),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_node_failure_at_run_time_names_the_node() {
    let dir = std::env::temp_dir().join(format!("sluice-cli-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let raw = dir.join("odd.raw");
    std::fs::write(&raw, [0u8; 12]).unwrap();
    let graph = dir.join("g.toml");
    std::fs::write(
        &graph,
        format!(
            "[[node]]\nname = \"src\"\ntype = \"file_source\"\nparams = {{ path = \"{}\" }}\n\n\
             [[node]]\nname = \"sink\"\ntype = \"null_sink\"\n\n\
             [[edge]]\nfrom = \"src.out\"\nto = \"sink.in\"\n",
            raw.display()
        ),
    )
    .unwrap();
    let (ok, _, stderr) = sluice(&["run", graph.to_str().unwrap()]);
    assert!(!ok);
    // 12 bytes are not a whole number of 8-byte complex items: refused when the graph loads.
    assert!(
        stderr.contains("g.toml:4:19: node 'src': parameter 'path': "),
        "{stderr}"
    );
    assert!(
        stderr.contains("is 12 bytes, not a whole number of 8-byte items"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fresh directory for one test, removed when dropped (also when the test fails).
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let d = std::env::temp_dir().join(format!("sluice-cli-{tag}-{}", std::process::id()));
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

/// A typo at the end of a graph file used to be found only after the sinks earlier in the file
/// had truncated their outputs.
#[test]
fn a_bad_graph_file_leaves_existing_outputs_untouched() {
    let dir = TempDir::new("typo");
    let out = dir.0.join("capture.c32");
    std::fs::write(&out, b"yesterday's capture").unwrap();
    let graph = dir.0.join("g.toml");
    std::fs::write(
        &graph,
        format!(
            "[[node]]\nname = \"sink\"\ntype = \"file_sink\"\nparams = {{ path = \"{}\" }}\n\n\
             [[node]]\nname = \"head\"\ntype = \"head\"\nparams = {{ itmes = 10 }}\n",
            out.display()
        ),
    )
    .unwrap();
    let (ok, _, stderr) = sluice(&["run", graph.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains(
            "g.toml:6:1: node 'head': parameter 'items' is required (the node gives 'itmes': a misspelling?)"
        ),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"yesterday's capture");
    assert_eq!(
        std::fs::read_dir(&dir.0).unwrap().count(),
        2,
        "no partial file left"
    );
}

/// `file_source` and `file_sink` on one path used to destroy the input and exit 0.
#[test]
fn a_sink_writing_the_file_a_source_reads_is_refused() {
    let dir = TempDir::new("same");
    let data = dir.0.join("iq.c32");
    std::fs::write(&data, [0u8; 64]).unwrap();
    let graph = dir.0.join("g.toml");
    std::fs::write(
        &graph,
        format!(
            "[[node]]\nname = \"src\"\ntype = \"file_source\"\nparams = {{ path = \"{0}\" }}\n\n\
             [[node]]\nname = \"sink\"\ntype = \"file_sink\"\nparams = {{ path = \"{1}/./iq.c32\" }}\n\n\
             [[edge]]\nfrom = \"src.out\"\nto = \"sink.in\"\n",
            data.display(),
            dir.0.display()
        ),
    )
    .unwrap();
    let (ok, _, stderr) = sluice(&["run", graph.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains("g.toml:9:19: node 'sink': writes")
            && stderr.contains("which node 'src' reads"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&data).unwrap(), [0u8; 64]);
}

/// `sluice convolve IN IN` used to overwrite its input.
#[test]
fn convolve_refuses_to_overwrite_its_input() {
    let dir = TempDir::new("convolve-same");
    let wav = dir.0.join("take.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(&wav, spec).unwrap();
    for i in 0..480 {
        w.write_sample((i % 100) as i16).unwrap();
    }
    w.finalize().unwrap();
    let before = std::fs::read(&wav).unwrap();
    let p = wav.to_str().unwrap();
    for args in [["convolve", p, p, p], ["convolve", p, "/dev/null", p]] {
        let (ok, _, stderr) = sluice(&args);
        assert!(!ok);
        assert!(
            stderr.contains("the output would overwrite the"),
            "{stderr}"
        );
    }
    assert_eq!(std::fs::read(&wav).unwrap(), before);
}

/// Bad numbers in graph files are errors that blame the right parameter, never a panic or an
/// abort on allocation.
#[test]
fn bad_numbers_are_errors_naming_the_parameter() {
    let dir = TempDir::new("numbers");
    let out = dir.0.join("out.wav");
    let cases = [
        (
            "type = \"wav_sink\"\nparams = { path = \"OUT\", sample_rate = 0 }",
            "node 'n': parameter 'sample_rate' must be a whole number of Hz between 1 and 4294967295 (a WAV file's), not 0",
        ),
        (
            "type = \"wav_sink\"\nparams = { path = \"OUT\", channels = 0 }",
            "node 'n': parameter 'channels' must be between 1 and 65535 (a WAV file's limit), not 0",
        ),
        (
            "type = \"fir\"\nparams = { design = \"lowpass\", num_taps = 1000000000000, cutoff = 0.1 }",
            "node 'n': parameter 'num_taps' must be between 1 and 16777216, not 1000000000000",
        ),
        (
            "type = \"fir\"\nparams = { design = \"lowpass\", num_taps = 0, cutoff = 0.1 }",
            "node 'n': parameter 'num_taps' must be between 1 and 16777216, not 0",
        ),
        (
            "type = \"fir\"\nparams = { design = \"bandpass\", low = 0.3, high = 0.2 }",
            "node 'n': parameter 'low'",
        ),
    ];
    for (i, (node, expected)) in cases.iter().enumerate() {
        let graph = dir.0.join(format!("g{i}.toml"));
        let node = node.replace("OUT", out.to_str().unwrap());
        std::fs::write(&graph, format!("[[node]]\nname = \"n\"\n{node}\n")).unwrap();
        let (ok, _, stderr) = sluice(&["run", graph.to_str().unwrap()]);
        assert!(!ok, "{node}");
        assert!(stderr.contains(expected), "{node}\n{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(!out.exists());
}

/// Ctrl-C used to leave a WAV with zero sizes in its header and print no statistics. Now the
/// graph stops gracefully: the WAV is finished and readable, the statistics are printed, and
/// the exit status is 130 (128 + SIGINT).
#[test]
fn ctrl_c_finishes_the_files_prints_the_statistics_and_exits_130() {
    let dir = TempDir::new("sigint");
    let wav = dir.0.join("endless.wav");
    let graph = dir.0.join("g.toml");
    std::fs::write(
        &graph,
        format!(
            "[[node]]\nname = \"src\"\ntype = \"signal_source\"\nparams = {{ item = \"f32\", waveform = \"tone\", frequency = 440.0, sample_rate = 48000 }}\n\n\
             [[node]]\nname = \"pace\"\ntype = \"throttle\"\nparams = {{ item = \"f32\", rate = 48000.0 }}\n\n\
             [[node]]\nname = \"wav\"\ntype = \"wav_sink\"\nparams = {{ path = \"{}\", sample_rate = 48000 }}\n\n\
             [[edge]]\nfrom = \"src.out\"\nto = \"pace.in\"\n\n\
             [[edge]]\nfrom = \"pace.out\"\nto = \"wav.in0\"\n",
            wav.display()
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", graph.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let it write for a while (paced to real time, it runs until stopped), then press Ctrl-C.
    std::thread::sleep(std::time::Duration::from_millis(700));
    // SAFETY: kill(2) on our own child's pid with a valid signal number.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stopped by SIGINT"), "{stderr}");
    assert!(
        stdout.contains("wall time") && stdout.contains("stopped on request"),
        "{stdout}"
    );
    let reader = hound::WavReader::open(&wav).expect("a finished, readable WAV");
    assert_eq!(reader.spec().sample_rate, 48000);
    assert!(reader.len() > 0, "the header counts the samples written");
    let samples = reader.into_samples::<f32>().count();
    assert!(samples > 0);
}

/// `sluice run --check` validates without running: nothing is written, and what `run` would
/// refuse (here an unconnected input) is refused.
#[test]
fn check_validates_without_running_or_writing() {
    let dir = TempDir::new("check");
    let out = dir.0.join("out.c32");
    let graph = dir.0.join("g.toml");
    let text = format!(
        "[[node]]\nname = \"src\"\ntype = \"null_source\"\n\n\
         [[node]]\nname = \"head\"\ntype = \"head\"\nparams = {{ items = 1000 }}\n\n\
         [[node]]\nname = \"sink\"\ntype = \"file_sink\"\nparams = {{ path = \"{}\" }}\n\n\
         [[edge]]\nfrom = \"src.out\"\nto = \"head.in\"\n",
        out.display()
    );
    std::fs::write(
        &graph,
        format!("{text}\n[[edge]]\nfrom = \"head.out\"\nto = \"sink.in\"\n"),
    )
    .unwrap();
    let (ok, _, stderr) = sluice(&["run", "--check", graph.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("the graph is valid"), "{stderr}");
    assert!(!out.exists(), "--check wrote the output");
    assert_eq!(
        std::fs::read_dir(&dir.0).unwrap().count(),
        1,
        "no partial file left"
    );

    std::fs::write(&graph, &text).unwrap();
    let (ok, _, stderr) = sluice(&["run", "--check", graph.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains("g.toml:6: node 'head': output port 'out' is not connected"),
        "{stderr}"
    );
}

/// `sluice convolve` used to reject valid WAVs that hound cannot read: an odd-sized LIST chunk,
/// a streaming writer's 0xFFFFFFFF sizes, 64-bit float data. One input with all three.
#[test]
fn convolve_reads_wavs_with_odd_chunks_streaming_sizes_and_f64_data() {
    let dir = TempDir::new("convolve-quirks");
    let samples: Vec<f64> = (0..4800).map(|i| (i as f64 * 0.05).sin() * 0.5).collect();
    let data: Vec<u8> = samples.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut wav = b"RIFF".to_vec();
    wav.extend_from_slice(&u32::MAX.to_le_bytes());
    wav.extend_from_slice(b"WAVE");
    wav.extend_from_slice(b"fmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    for v in [3u16, 1] {
        wav.extend_from_slice(&v.to_le_bytes()); // IEEE float, mono
    }
    wav.extend_from_slice(&48000u32.to_le_bytes());
    wav.extend_from_slice(&(48000u32 * 8).to_le_bytes());
    for v in [8u16, 64] {
        wav.extend_from_slice(&v.to_le_bytes()); // block align, bits
    }
    wav.extend_from_slice(b"LIST");
    wav.extend_from_slice(&5u32.to_le_bytes());
    wav.extend_from_slice(b"INFOx\0"); // 5 bytes and the pad byte
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&u32::MAX.to_le_bytes());
    wav.extend(data);
    let input = dir.0.join("in.wav");
    std::fs::write(&input, wav).unwrap();
    let ir = dir.0.join("ir.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(&ir, spec).unwrap();
    for i in 0..64 {
        w.write_sample(if i == 0 { 1.0f32 } else { 0.0 }).unwrap();
    }
    w.finalize().unwrap();
    let out = dir.0.join("out.wav");
    let (ok, _, stderr) = sluice(&[
        "convolve",
        input.to_str().unwrap(),
        ir.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    // A unit impulse: the output is the input (written as 32-bit float), plus the IR's tail.
    let back: Vec<f32> = hound::WavReader::open(&out)
        .unwrap()
        .into_samples::<f32>()
        .map(Result::unwrap)
        .collect();
    assert_eq!(back.len(), 4800 + 63);
    let err = back
        .iter()
        .zip(&samples)
        .map(|(a, b)| (f64::from(*a) - b).abs())
        .fold(0.0, f64::max);
    assert!(err < 1e-6, "{err}");
}

/// Every list option's default in `--help` is written as it must be typed: comma-separated.
#[test]
fn help_shows_list_defaults_as_they_are_typed() {
    for bench in [
        "chain",
        "sum",
        "fir-crossover",
        "overlap-save",
        "copy",
        "convolve",
    ] {
        let (ok, stdout, stderr) = sluice(&["bench", bench, "--help"]);
        assert!(ok, "{stderr}");
        for line in stdout.lines().filter(|l| l.contains("[default: ")) {
            let default = line
                .split("[default: ")
                .nth(1)
                .unwrap()
                .trim_end_matches(']');
            // A list clap printed itself: plain values separated by single spaces. (Defaults
            // described in words, "1 GiB; 64 MiB with --quick", are prose.)
            let tokens: Vec<&str> = default.split(' ').collect();
            let plain = |t: &str| {
                !t.is_empty()
                    && t.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
            };
            assert!(
                tokens.len() == 1 || !tokens.iter().all(|t| plain(t)),
                "bench {bench}: a list default shown with spaces cannot be typed back: {line}"
            );
        }
    }
}

/// A WAV sink that clipped samples says so once the run ends, naming the node and its line; the
/// run still succeeds and the file is written.
#[test]
fn node_warnings_are_reported_with_the_node_and_its_line() {
    let dir = TempDir::new("warnings");
    let graph = dir.0.join("g.toml");
    std::fs::write(
        &graph,
        "[[node]]\nname = \"loud\"\ntype = \"signal_source\"\n\
         params = { item = \"f32\", amplitude = 2.0, sample_rate = 8000 }\n\n\
         [[node]]\nname = \"head\"\ntype = \"head\"\nparams = { item = \"f32\", items = 8000 }\n\n\
         [[node]]\nname = \"save\"\ntype = \"wav_sink\"\nparams = { path = \"loud.wav\", format = \"i16\" }\n\n\
         [[edge]]\nfrom = \"loud.out\"\nto = \"head.in\"\n\n\
         [[edge]]\nfrom = \"head.out\"\nto = \"save.in0\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", "g.toml"])
        .current_dir(&dir.0)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let warning = stderr
        .lines()
        .find(|l| l.starts_with("sluice: warning: g.toml:12: node 'save': "))
        .unwrap_or_else(|| panic!("no warning naming the node: {stderr}"));
    assert!(
        warning.contains("samples were beyond full scale"),
        "{warning}"
    );
    assert!(dir.0.join("loud.wav").exists());
}
