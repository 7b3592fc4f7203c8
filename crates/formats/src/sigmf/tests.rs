//! Meta files: what is read, and the error each bad field gives.

use super::*;

const GOOD: &str = r#"{
  "global": {"core:datatype": "ci16_le", "core:version": "1.2.0", "core:sample_rate": 2048000,
             "core:description": "a test"},
  "captures": [
    {"core:sample_start": 0, "core:frequency": 100e6, "core:datetime": "2017-02-01T11:33:17.053240Z"},
    {"core:sample_start": 500, "core:frequency": 101e6}
  ],
  "annotations": [
    {"core:sample_start": 10, "core:sample_count": 20, "core:label": "burst", "core:freq_lower_edge": 99.9e6}
  ]
}"#;

#[test]
fn a_meta_file_gives_its_rate_captures_and_annotations() {
    let m = parse_meta(GOOD, Path::new("x.sigmf-meta")).unwrap();
    assert_eq!(m.datatype, Datatype::Ci16Le);
    assert_eq!(m.sample_rate, Some(2.048e6));
    assert_eq!(m.description.as_deref(), Some("a test"));
    assert_eq!(m.captures.len(), 2);
    assert_eq!(m.captures[0].frequency, Some(100e6));
    let (secs, frac) = m.captures[0].datetime.unwrap();
    assert_eq!(secs, 1_485_948_797);
    assert!((frac - 0.053240).abs() < 1e-9);
    assert_eq!(
        (m.captures[1].sample_start, m.captures[1].datetime),
        (500, None)
    );
    let a = &m.annotations[0];
    assert_eq!(a.sample_start, 10);
    assert!(a
        .fields
        .contains(&("core:sample_count".into(), Value::from(20u64))));
    assert!(a
        .fields
        .contains(&("core:label".into(), Value::from("burst"))));
    assert!(a
        .fields
        .contains(&("core:freq_lower_edge".into(), Value::from(99.9e6))));
}

#[test]
fn every_bad_field_is_named_with_its_file_and_path() {
    let cases = [
        ("{", "x.sigmf-meta: line 1, column 1: not valid JSON"),
        ("[]", "(top level): must be an object, not an array"),
        (
            r#"{"captures": []}"#,
            "x.sigmf-meta: global: is required but missing",
        ),
        (
            r#"{"global": {"core:version": "1.2.0"}}"#,
            "global.core:datatype: is required but missing",
        ),
        (
            r#"{"global": {"core:datatype": 7, "core:version": "1.2.0"}}"#,
            "global.core:datatype: must be a string, not a number",
        ),
        (
            r#"{"global": {"core:datatype": "rf32_le", "core:version": "1.2.0"}}"#,
            "global.core:datatype: 'rf32_le' is not supported (use cf32_le, ci16_le, cu8 or ci8)",
        ),
        (
            r#"{"global": {"core:datatype": "cu8"}}"#,
            "global.core:version: is required but missing",
        ),
        (
            r#"{"global": {"core:datatype": "cu8", "core:version": "1.2.0", "core:sample_rate": -5}}"#,
            "global.core:sample_rate: -5 is not a positive number",
        ),
        (
            r#"{"global": {"core:datatype": "cu8", "core:version": "1.2.0", "core:num_channels": 2}}"#,
            "global.core:num_channels: 2: only 1 channel is supported",
        ),
        (
            r#"{"global": {"core:datatype": "cu8", "core:version": "1.2.0"}, "captures": [{"core:frequency": 1}]}"#,
            "captures[0].core:sample_start: is required but missing",
        ),
        (
            r#"{"global": {"core:datatype": "cu8", "core:version": "1.2.0"}, "captures": [{"core:sample_start": 5}, {"core:sample_start": 2}]}"#,
            "captures[1].core:sample_start: 2 comes before the previous entry's 5",
        ),
        (
            r#"{"global": {"core:datatype": "cu8", "core:version": "1.2.0"}, "captures": [{"core:sample_start": 0, "core:datetime": "yesterday"}]}"#,
            "captures[0].core:datetime: \"yesterday\" is not an ISO 8601 UTC time",
        ),
        (
            r#"{"global": {"core:datatype": "cu8", "core:version": "1.2.0"}, "captures": [{"core:sample_start": 0, "core:header_bytes": 16}]}"#,
            "captures[0].core:header_bytes: header bytes inside the data are not supported",
        ),
        (
            r#"{"global": {"core:datatype": "cu8", "core:version": "1.2.0"}, "annotations": {}}"#,
            "annotations: must be an array, not an object",
        ),
        (
            r#"{"global": {"core:datatype": "cu8", "core:version": "1.2.0"}, "annotations": [{"core:sample_start": 1.5}]}"#,
            "annotations[0].core:sample_start: 1.5 is not a whole number of samples",
        ),
        (
            r#"{"global": {"core:datatype": "cu8", "core:version": "1.2.0"}, "annotations": [{"core:sample_start": 1, "core:sample_count": "many"}]}"#,
            "annotations[0].core:sample_count: \"many\" is not a whole number",
        ),
    ];
    for (text, want) in cases {
        let err = parse_meta(text, Path::new("x.sigmf-meta"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{text}\n  gave: {err}\n  want: {want}");
        assert!(err.starts_with("x.sigmf-meta: "), "{err}");
    }
}

#[test]
fn times_round_trip_and_paths_are_found_from_any_name() {
    assert_eq!(parse_datetime("1970-01-01T00:00:00Z"), Some((0, 0.0)));
    assert_eq!(
        parse_datetime("2000-02-29T23:59:59.5Z"),
        Some((951_868_799, 0.5))
    );
    assert_eq!(parse_datetime("2024-13-01T00:00:00Z"), None);
    assert_eq!(parse_datetime("2024-01-01 00:00:00Z"), None);
    assert_eq!(parse_datetime("2024-01-01T00:00:00"), None, "UTC only");
    for secs in [0u64, 951_868_799, 1_485_948_797, 4_102_444_800] {
        let text = format_datetime(secs, 0.25);
        assert_eq!(parse_datetime(&text), Some((secs, 0.25)), "{text}");
    }
    assert_eq!(
        format_datetime(1_485_948_797, 0.05324),
        "2017-02-01T11:33:17.053240Z"
    );
    let want = (
        PathBuf::from("d/rec.sigmf-meta"),
        PathBuf::from("d/rec.sigmf-data"),
    );
    for name in ["d/rec", "d/rec.sigmf-meta", "d/rec.sigmf-data"] {
        assert_eq!(paths(Path::new(name)), want, "{name}");
    }
}
