//! Recordings written by the sink and read back by the source, in every datatype, with their
//! metadata; and what a failed run or a bad recording does.

use super::*;
use crate::blocks::sigmf_tags::annotation_tag;
use crate::blocks::{SigmfSource, VectorSink, VectorSource};
use sluice_runtime::Graph;

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(name: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("sluice-sigmf-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Dir(d)
}

fn signal() -> Vec<Complex32> {
    (0..2000)
        .map(|n| Complex32::from_polar(0.9, n as f32 * 0.05) * (if n % 7 == 0 { 0.5 } else { 1.0 }))
        .collect()
}

fn tagged() -> VectorSource<Complex32> {
    let time = TagValue::Tuple(vec![TagValue::U64(1_700_000_000), TagValue::F64(0.5)]);
    let note = annotation_tag(&[
        ("core:sample_count".into(), TagValue::U64(40)),
        ("core:label".into(), TagValue::Str("burst".into())),
    ]);
    VectorSource::new(signal())
        .max_chunk(333)
        .with_tag(0, SAMPLE_RATE, TagValue::F64(250e3))
        .with_tag(0, CENTER_FREQUENCY, TagValue::F64(433.92e6))
        .with_tag(0, TIME, time)
        .with_tag(300, CENTER_FREQUENCY, TagValue::F64(434e6))
        .with_tag(700, ANNOTATION, note)
        .with_tag(900, OVERFLOW, TagValue::U64(12))
}

fn write(path: &Path, datatype: Datatype, src: VectorSource<Complex32>) -> Result<(), String> {
    let mut g = Graph::new();
    let src = g.add("src", src).unwrap();
    let sink = SigmfSink::create(path, datatype, None, None, Some("test".into())).unwrap();
    let sink = g.add("sink", sink).unwrap();
    g.connect(src, "out", sink, "in").unwrap();
    g.run_stepped().map(|_| ()).map_err(|e| e.to_string())
}

fn read(path: &Path) -> (Vec<Complex32>, Vec<Tag>) {
    let mut g = Graph::new();
    let src = g.add("src", SigmfSource::open(path).unwrap()).unwrap();
    let (sink, data) = VectorSink::<Complex32>::new();
    let sink = g.add("sink", sink).unwrap();
    g.connect(src, "out", sink, "in").unwrap();
    g.run_stepped().unwrap();
    (data.items(), data.tags())
}

#[test]
fn every_datatype_round_trips_with_its_metadata() {
    let d = dir("round");
    for (datatype, step) in [
        (Datatype::Cf32Le, 0.0),
        (Datatype::Ci16Le, 1.0 / 32768.0),
        (Datatype::Cu8, 1.0 / 127.5),
        (Datatype::Ci8, 1.0 / 128.0),
    ] {
        let path = d.0.join(datatype.name());
        write(&path, datatype, tagged()).unwrap();
        let (samples, tags) = read(&path);
        assert_eq!(samples.len(), 2000, "{datatype:?}");
        for (got, want) in samples.iter().zip(signal()) {
            let err = (got.re - want.re).abs().max((got.im - want.im).abs());
            assert!(err <= step * 0.5 + 1e-6, "{datatype:?}: {got} vs {want}");
        }
        let seen: Vec<(u64, &str)> = tags.iter().map(|t| (t.index, &*t.key)).collect();
        assert_eq!(
            seen,
            [
                (0, SAMPLE_RATE),
                (0, CENTER_FREQUENCY),
                (0, TIME),
                (300, CENTER_FREQUENCY),
                (700, ANNOTATION),
                (900, ANNOTATION),
            ],
            "{datatype:?}"
        );
        assert_eq!(tags[0].value, TagValue::F64(250e3));
        assert_eq!(tags[3].value, TagValue::F64(434e6));
        assert_eq!(
            tags[2].value,
            TagValue::Tuple(vec![TagValue::U64(1_700_000_000), TagValue::F64(0.5)])
        );
        let note = annotation_fields(&tags[4].value);
        assert!(note.contains(&("core:label".into(), TagValue::Str("burst".into()))));
        assert!(note.contains(&("core:sample_count".into(), TagValue::U64(40))));
        let gap = annotation_fields(&tags[5].value);
        assert!(
            gap.contains(&("core:label".into(), TagValue::Str(OVERFLOW.into()))),
            "{gap:?}"
        );
    }
}

#[test]
fn a_failed_run_leaves_an_existing_recording_untouched() {
    let d = dir("keep");
    let path = d.0.join("rec");
    write(&path, Datatype::Cu8, tagged()).unwrap();
    let (meta, data) = sigmf::paths(&path);
    let before = (std::fs::read(&meta).unwrap(), std::fs::read(&data).unwrap());
    // A stream that is not complex baseband at one rate is still written; a graph that fails
    // is not: NaN samples make no error, so fail the graph with a source that errors.
    struct Broken;
    impl Node for Broken {
        fn ports(&self) -> Ports {
            Ports::new().output::<Complex32>("out")
        }
        fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            let out = io.outputs.get::<Complex32>(0)?;
            if out.items_written() > 100 {
                return Err(NodeError::msg("broken"));
            }
            let Some(y) = out.reserve(1)? else {
                return Ok(Work::NeedOutput { port: 0, items: 1 });
            };
            y[0] = Complex32::new(0.1, 0.1);
            out.commit(1);
            Ok(Work::Progress)
        }
    }
    let mut g = Graph::new();
    let src = g.add("src", Broken).unwrap();
    let sink = SigmfSink::create(&path, Datatype::Cf32Le, Some(1e6), None, None).unwrap();
    let sink = g.add("sink", sink).unwrap();
    g.connect(src, "out", sink, "in").unwrap();
    assert!(g.run_stepped().is_err());
    assert_eq!(
        (std::fs::read(&meta).unwrap(), std::fs::read(&data).unwrap()),
        before
    );
    assert_eq!(
        std::fs::read_dir(&d.0).unwrap().count(),
        2,
        "no partial file left"
    );
}

#[test]
fn a_bad_recording_is_an_error_naming_the_file() {
    let d = dir("bad");
    let path = d.0.join("rec");
    let (meta, data) = sigmf::paths(&path);
    std::fs::write(
        &meta,
        r#"{"global": {"core:datatype": "ci16_le", "core:version": "1.2.0"}}"#,
    )
    .unwrap();
    std::fs::write(&data, [0u8; 6]).unwrap();
    let err = SigmfSource::open(&path).unwrap_err().to_string();
    assert!(
        err.ends_with("rec.sigmf-data is 6 bytes, not a whole number of 4-byte ci16_le samples"),
        "{err}"
    );
    std::fs::write(&meta, r#"{"global": {"core:datatype": "ci16_le"}}"#).unwrap();
    let err = SigmfSource::open(&path).unwrap_err().to_string();
    assert!(
        err.ends_with("rec.sigmf-meta: global.core:version: is required but missing"),
        "{err}"
    );
    std::fs::remove_file(&data).unwrap();
    std::fs::write(
        &meta,
        r#"{"global": {"core:datatype": "ci16_le", "core:version": "1.2.0"}}"#,
    )
    .unwrap();
    let err = SigmfSource::open(&path).unwrap_err().to_string();
    assert!(
        err.contains("cannot open") && err.contains("rec.sigmf-data"),
        "{err}"
    );
}

#[test]
fn a_hand_written_ci16_recording_reads_as_the_f64_formula_says() {
    // Bytes written here, not by the sink: I then Q, little-endian i16, value / 32768.
    let d = dir("hand");
    let path = d.0.join("rec");
    let (meta, data) = sigmf::paths(&path);
    std::fs::write(
        &meta,
        r#"{"global": {"core:datatype": "ci16_le", "core:version": "1.2.0", "core:sample_rate": 1e6},
            "captures": [{"core:sample_start": 0, "core:frequency": 915e6},
                         {"core:sample_start": 3, "core:frequency": 916e6}],
            "annotations": []}"#,
    )
    .unwrap();
    let raw: [i16; 10] = [0, -1, 32767, -32768, 100, -200, 1, 2, -3, 4];
    let bytes: Vec<u8> = raw.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&data, bytes).unwrap();
    let (samples, tags) = read(&path);
    let want: Vec<(f64, f64)> = raw
        .chunks(2)
        .map(|p| (f64::from(p[0]) / 32768.0, f64::from(p[1]) / 32768.0))
        .collect();
    assert_eq!(samples.len(), want.len());
    for (got, (re, im)) in samples.iter().zip(want) {
        assert!(
            (f64::from(got.re) - re).abs() < 1e-9 && (f64::from(got.im) - im).abs() < 1e-9,
            "{got}"
        );
    }
    let seen: Vec<(u64, &str, TagValue)> = tags
        .iter()
        .map(|t| (t.index, &*t.key, t.value.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (0, SAMPLE_RATE, TagValue::F64(1e6)),
            (0, CENTER_FREQUENCY, TagValue::F64(915e6)),
            (3, CENTER_FREQUENCY, TagValue::F64(916e6)),
        ]
    );
}

/// A radio's stream: a retune, a gain change, two overflows (one counted, one not), a rate
/// change, and two bursts marked by start and end tags (the second still open at the end).
fn radio() -> VectorSource<Complex32> {
    VectorSource::new(signal())
        .max_chunk(250)
        .with_tag(0, SAMPLE_RATE, TagValue::F64(1e6))
        .with_tag(0, GAIN, TagValue::F64(20.0))
        .with_tag(100, "burst_start", TagValue::F64(-12.5))
        .with_tag(149, "burst_end", TagValue::Bool(true))
        .with_tag(120, "note", TagValue::Str("inside".into()))
        .with_tag(400, GAP, TagValue::U64(4096))
        .with_tag(500, GAIN, TagValue::F64(30.0))
        .with_tag(600, GAP, TagValue::U64(0))
        .with_tag(1000, SAMPLE_RATE, TagValue::F64(2e6))
        .with_tag(1000, CENTER_FREQUENCY, TagValue::F64(100e6))
        .with_tag(1900, "burst_start", TagValue::F64(-3.0))
}

fn write_radio(path: &Path) -> Vec<String> {
    let mut g = Graph::new();
    let src = g.add("src", radio()).unwrap();
    let sink = SigmfSink::create(path, Datatype::Ci16Le, None, None, None)
        .unwrap()
        .with_ranges(vec![Range::parse("burst_start..burst_end").unwrap()]);
    let sink = g.add("sink", sink).unwrap();
    g.connect(src, "out", sink, "in").unwrap();
    let report = g.run_stepped().unwrap();
    report.node("sink").unwrap().warnings.clone()
}

#[test]
fn captures_follow_rate_frequency_and_gain_and_gaps_and_ranges_are_annotated() {
    let d = dir("radio");
    let path = d.0.join("rec");
    let warnings = write_radio(&path);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("changes to 2000000 Hz at sample 1000")),
        "{warnings:?}"
    );
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(sigmf::paths(&path).0).unwrap()).unwrap();
    assert_eq!(meta["global"]["core:sample_rate"], json!(1e6));
    assert_eq!(
        meta["global"]["core:extensions"][0]["name"],
        json!("sluice")
    );
    // (first sample, frequency, rate, gain)
    type CaptureFields = (u64, Option<f64>, Option<f64>, Option<f64>);
    let captures: Vec<CaptureFields> = meta["captures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["core:sample_start"].as_u64().unwrap(),
                c["core:frequency"].as_f64(),
                c[CAPTURE_RATE].as_f64(),
                c[CAPTURE_GAIN].as_f64(),
            )
        })
        .collect();
    assert_eq!(
        captures,
        [
            (0, None, None, Some(20.0)),
            (500, None, None, Some(30.0)),
            (1000, Some(100e6), Some(2e6), None),
        ]
    );
    let notes: Vec<(u64, Option<u64>, &str, &str)> = meta["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["core:sample_start"].as_u64().unwrap(),
                a["core:sample_count"].as_u64(),
                a["core:label"].as_str().unwrap(),
                a["core:comment"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        notes,
        [
            (100, Some(50), "burst", "burst_start: -12.5"),
            (120, None, "note", "inside"),
            (400, None, "gap", "4096 samples lost before this one"),
            (
                600,
                None,
                "gap",
                "samples lost before this one (how many is not known)"
            ),
            (
                1900,
                Some(100),
                "burst",
                "burst_start: -3.0 (still open when the recording ended)"
            ),
        ]
    );
}

#[test]
fn a_replayed_recording_gives_the_radio_tags_back_and_records_the_same_again() {
    let d = dir("replay");
    let first = d.0.join("first");
    write_radio(&first);
    let (samples, tags) = read(&first);
    assert_eq!(samples.len(), 2000);
    let seen: Vec<(u64, &str, TagValue)> = tags
        .iter()
        .filter(|t| t.key.as_ref() != ANNOTATION)
        .map(|t| (t.index, &*t.key, t.value.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (0, SAMPLE_RATE, TagValue::F64(1e6)),
            (0, GAIN, TagValue::F64(20.0)),
            (400, GAP, TagValue::U64(4096)),
            (500, GAIN, TagValue::F64(30.0)),
            (600, GAP, TagValue::U64(0)),
            (1000, CENTER_FREQUENCY, TagValue::F64(100e6)),
            (1000, SAMPLE_RATE, TagValue::F64(2e6)),
        ]
    );
    // Recording the replay again gives the same meta file.
    let second = d.0.join("second");
    let mut g = Graph::new();
    let src = g.add("src", SigmfSource::open(&first).unwrap()).unwrap();
    let sink = SigmfSink::create(&second, Datatype::Ci16Le, None, None, None).unwrap();
    let sink = g.add("sink", sink).unwrap();
    g.connect(src, "out", sink, "in").unwrap();
    g.run_stepped().unwrap();
    let meta = |p: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(sigmf::paths(p).0).unwrap()).unwrap()
    };
    assert_eq!(meta(&second), meta(&first));
    assert_eq!(
        std::fs::read(sigmf::paths(&second).1).unwrap(),
        std::fs::read(sigmf::paths(&first).1).unwrap()
    );
}

#[test]
fn a_paced_replay_takes_the_recorded_time_at_each_rate() {
    let d = dir("paced");
    let path = d.0.join("rec");
    // 2000 samples: 1000 at 20 kHz (50 ms), then 1000 at 10 kHz (100 ms).
    let src = VectorSource::new(signal())
        .with_tag(0, SAMPLE_RATE, TagValue::F64(20e3))
        .with_tag(1000, SAMPLE_RATE, TagValue::F64(10e3));
    write(&path, Datatype::Cf32Le, src).unwrap();
    let mut g = Graph::new();
    let src = g
        .add("src", SigmfSource::open(&path).unwrap().paced().unwrap())
        .unwrap();
    let (sink, data) = VectorSink::<Complex32>::new();
    let sink = g.add("sink", sink).unwrap();
    g.connect(src, "out", sink, "in").unwrap();
    let report = g.run(&sluice_runtime::RunOptions::default()).unwrap();
    assert_eq!(data.items(), signal());
    // 150 ms of stream, less one 5 ms batch per rate; unpaced it takes well under 10 ms. Only
    // a lower bound: a loaded machine may take longer, never shorter.
    assert!(
        report.wall >= std::time::Duration::from_millis(135),
        "{:?}",
        report.wall
    );
}

#[test]
fn a_recording_without_a_rate_cannot_be_paced_and_bad_ranges_are_explained() {
    let d = dir("norate");
    let path = d.0.join("rec");
    write(&path, Datatype::Cf32Le, VectorSource::new(signal())).unwrap();
    let err = SigmfSource::open(&path)
        .unwrap()
        .paced()
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with(
            "rec.sigmf-data has no core:sample_rate, so it cannot be replayed at its recorded rate"
        ),
        "{err}"
    );
    assert_eq!(
        Range::parse("burst_start").unwrap_err(),
        "\"burst_start\" is not a range of tags: write START..END, e.g. \"burst_start..burst_end\""
    );
    assert_eq!(
        Range::parse("a..a").unwrap_err(),
        "\"a..a\": a range needs two different tag keys"
    );
    assert_eq!(Range::parse(" rx_sob .. rx_eob ").unwrap().label, "rx_sob");
}
