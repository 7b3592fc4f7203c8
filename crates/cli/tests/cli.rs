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
fn blocks_lists_every_block_with_parameters() {
    let (ok, stdout, _) = sluice(&["blocks"]);
    assert!(ok);
    for name in [
        "null_source",
        "head",
        "copy",
        "fir",
        "fft_filter",
        "wav_source",
        "probe",
    ] {
        assert!(
            stdout.lines().any(|l| l == name),
            "{name} missing from:\n{stdout}"
        );
    }
    assert!(stdout.contains("taps_file"));
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
            "sluice: error: {}:4: node 'src': parameter 'item' unknown item type 'c64' (use c32, f32, i16 or u8)",
            path.display()
        )
    );
    let (ok, _, stderr) = sluice(&["run", "/nonexistent/graph.toml"]);
    assert!(!ok);
    assert!(
        stderr.starts_with("sluice: error: cannot read /nonexistent/graph.toml"),
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
        stderr.contains("g.toml:4: node 'src': parameter 'path'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("is 12 bytes, not a whole number of 8-byte items"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
