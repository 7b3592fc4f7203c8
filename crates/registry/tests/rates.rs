//! Rates follow the stream with the standard blocks: a receiver's rate parameters are taken
//! from its source through every rate change, and a rate given against the stream's is refused
//! when the graph loads, naming both nodes and both rates.

use sluice_graph::{load_with, LoadedGraph};
use sluice_registry::standard_registry;

fn load(text: &str) -> Result<LoadedGraph, String> {
    load_with(text, "rx.toml", &standard_registry(), &[]).map_err(|e| e.to_string())
}

fn error_of(text: &str) -> String {
    match load(text) {
        Ok(_) => panic!("the graph loaded"),
        Err(e) => e,
    }
}

/// A 480 k samples/s complex stream, decimated by 10 to 48 k, demodulated and de-emphasised;
/// `RATES` are the receiver's own rate parameters.
fn receiver(rates: [&str; 3]) -> String {
    format!(
        r#"
connect = ["src -> rot -> dec -> fm -> de -> snk"]

[[node]]
name = "src"
type = "signal_source"
params = {{ item = "c32", sample_rate = 480000 }}

[[node]]
name = "rot"
type = "rotator"
params = {{ frequency = 1000.0{} }}

[[node]]
name = "dec"
type = "fir"
params = {{ item = "c32", design = "lowpass", num_taps = 63, cutoff = 0.05, decimation = 10 }}

[[node]]
name = "fm"
type = "fm_demod"
params = {{ deviation = 5000.0{} }}

[[node]]
name = "de"
type = "deemphasis"
params = {{ tau = 75e-6{} }}

[[node]]
name = "snk"
type = "null_sink"
params = {{ item = "f32" }}
"#,
        rates[0], rates[1], rates[2]
    )
}

#[test]
fn rates_are_taken_from_the_stream() {
    let loaded = load(&receiver(["", "", ""])).unwrap();
    let rate = |n: &str| loaded.source.rates[n].hz;
    assert_eq!(
        (
            rate("src"),
            rate("rot"),
            rate("dec"),
            rate("fm"),
            rate("de")
        ),
        (480e3, 480e3, 48e3, 48e3, 48e3)
    );
    assert_eq!(loaded.source.rates["de"].origin, "dec");
    let dot = loaded.to_dot();
    assert!(
        dot.contains("\"dec\" -> \"fm\" [label=\"out → in\\nc32, 48 kHz\"]"),
        "{dot}"
    );
    assert!(
        dot.contains("\"fm\" -> \"de\" [label=\"out → in\\nf32, 48 kHz\"]"),
        "{dot}"
    );
}

#[test]
fn the_same_rates_given_are_accepted() {
    load(&receiver([
        ", sample_rate = 480000.0",
        ", sample_rate = 48000.0",
        ", sample_rate = 48000",
    ]))
    .unwrap();
}

#[test]
fn wrong_rates_are_refused_naming_both_nodes() {
    let e = error_of(&receiver([
        ", sample_rate = 48000.0",
        ", sample_rate = 480000.0",
        ", sample_rate = 44100",
    ]));
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines,
        [
            "rx.toml:12:46: node 'rot': parameter 'sample_rate' = 48 kHz disagrees with the stream's rate, 480 kHz (set by 'src', line 5): leave it out to follow the stream",
            "rx.toml:22:46: node 'fm': parameter 'sample_rate' = 480 kHz disagrees with the stream's rate, 48 kHz (set by 'dec', line 15): leave it out to follow the stream",
            "rx.toml:27:39: node 'de': parameter 'sample_rate' = 44.1 kHz disagrees with the stream's rate, 48 kHz (set by 'dec', line 15): leave it out to follow the stream",
        ],
        "{e}"
    );
}

#[test]
fn inputs_at_different_rates_are_refused() {
    let text = r#"
connect = ["a -> sum.a", "b -> sum.b", "sum -> snk"]

[[node]]
name = "a"
type = "signal_source"
params = { item = "f32", sample_rate = 48000 }

[[node]]
name = "b"
type = "signal_source"
params = { item = "f32", sample_rate = 44100 }

[[node]]
name = "sum"
type = "add"
params = { item = "f32" }

[[node]]
name = "snk"
type = "null_sink"
params = { item = "f32" }
"#;
    assert_eq!(
        error_of(text),
        "rx.toml:14:1: node 'sum': its inputs run at different rates: 48 kHz (from 'a', line 5) and 44.1 kHz (from 'b', line 10)"
    );
}

#[test]
fn a_rate_nothing_upstream_knows_must_be_given() {
    let text = r#"
connect = ["src -> rot -> snk"]

[[node]]
name = "src"
type = "null_source"
params = { item = "c32" }

[[node]]
name = "rot"
type = "rotator"
params = { frequency = 10.0 }

[[node]]
name = "snk"
type = "null_sink"
params = { item = "c32" }
"#;
    assert_eq!(
        error_of(text),
        "rx.toml:9:1: node 'rot': parameter 'sample_rate' is required here: the stream's rate is not known before the graph runs (no node upstream declares it), so give it"
    );
}

#[test]
fn a_wav_file_gives_its_rate_to_the_graph() {
    let dir = std::env::temp_dir().join(format!("sluice-rates-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.wav");
    let mut w = sluice_formats::wav::WavWriter::create(
        &input,
        1,
        Some(22050),
        sluice_formats::wav::Encoding::Int(16),
    )
    .unwrap();
    w.write(&[0.0; 100]).unwrap();
    w.finish().unwrap();
    let text = format!(
        r#"
connect = ["in -> out"]

[[node]]
name = "in"
type = "wav_source"
params = {{ path = "{}" }}

[[node]]
name = "out"
type = "wav_sink"
params = {{ path = "{}" }}
"#,
        input.display(),
        dir.join("out.wav").display()
    );
    let loaded = load(&text).unwrap();
    assert_eq!(loaded.source.rates["in"].hz, 22050.0);
    loaded
        .graph
        .run(&sluice_runtime::RunOptions::default())
        .unwrap();
    let out = sluice_formats::wav::WavReader::open(&dir.join("out.wav")).unwrap();
    assert_eq!(out.info().sample_rate, 22050);
    std::fs::remove_dir_all(&dir).unwrap();
}
