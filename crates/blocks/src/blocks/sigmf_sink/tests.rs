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
