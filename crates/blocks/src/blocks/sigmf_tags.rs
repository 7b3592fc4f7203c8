//! How a SigMF recording maps to stream metadata and tags (the meta file itself is
//! `sluice_formats::sigmf`'s).
//!
//! | SigMF | stream |
//! |---|---|
//! | `global.core:sample_rate` | `rx_rate` on item 0 |
//! | `captures[i].core:frequency` | `rx_freq` on item `core:sample_start` |
//! | `captures[i].core:datetime` | `rx_time` (seconds, fraction) on item `core:sample_start` |
//! | `captures[i].sluice:sample_rate` | `rx_rate` on item `core:sample_start` (a rate that changed mid-stream: SigMF's core has one rate per recording) |
//! | `captures[i].sluice:gain` | `rx_gain` on item `core:sample_start` |
//! | an annotation labelled `gap` with `sluice:lost` | `gap` (samples lost) on item `core:sample_start` |
//! | an annotation of a range the sink was told to record (`ranges = ["burst_start..burst_end"]`) | written from a start tag and an end tag; read back as any other annotation |
//! | `annotations[i]` (any other) | a [`ANNOTATION`] tag on item `core:sample_start`, a dictionary of the annotation's other fields (`core:sample_count`, `core:label`, `core:comment`, `core:freq_lower_edge`, …, under their SigMF names) |

use serde_json::Value;
use sluice_formats::sigmf::{GAP_LABEL, GAP_LOST};
use sluice_runtime::TagValue;

/// The tag key of a SigMF annotation (value: a dictionary of its fields).
pub const ANNOTATION: &str = "sigmf:annotation";

/// The samples lost before a gap annotation (0: an unknown number), or `None` if the
/// annotation is not a gap's.
pub fn gap_of(fields: &[(String, Value)]) -> Option<u64> {
    let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    if field("core:label")?.as_str()? != GAP_LABEL {
        return None;
    }
    field(GAP_LOST)?.as_u64()
}

/// A JSON value as a tag value (numbers as `U64`, `I64` or `F64`; arrays and objects as text).
pub fn to_tag(v: &Value) -> TagValue {
    match v {
        Value::Bool(b) => TagValue::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => TagValue::U64(u),
            (_, Some(i)) => TagValue::I64(i),
            _ => TagValue::F64(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => TagValue::Str(s.as_str().into()),
        other => TagValue::Str(other.to_string().into()),
    }
}

/// A tag value as JSON (the inverse of the reading side; anything else as its debug text).
pub fn to_json(v: &TagValue) -> Value {
    match v {
        TagValue::Bool(b) => Value::Bool(*b),
        TagValue::U64(u) => Value::from(*u),
        TagValue::I64(i) => Value::from(*i),
        TagValue::F64(f) => Value::from(*f),
        TagValue::Str(s) => Value::String(s.to_string()),
        other => Value::String(format!("{other:?}")),
    }
}

/// The fields of an [`ANNOTATION`] tag's dictionary.
pub fn annotation_fields(v: &TagValue) -> Vec<(String, TagValue)> {
    match v {
        TagValue::Dict(entries) => entries
            .iter()
            .filter_map(|(k, v)| match k {
                TagValue::Str(k) => Some((k.to_string(), v.clone())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// An annotation's fields as an [`ANNOTATION`] tag value.
pub fn annotation_tag(fields: &[(String, TagValue)]) -> TagValue {
    TagValue::Dict(
        fields
            .iter()
            .map(|(k, v)| (TagValue::Str(k.as_str().into()), v.clone()))
            .collect(),
    )
}

/// The fields of an annotation of a meta file as an [`ANNOTATION`] tag value.
pub fn annotation_from_json(fields: &[(String, Value)]) -> TagValue {
    let fields: Vec<(String, TagValue)> =
        fields.iter().map(|(k, v)| (k.clone(), to_tag(v))).collect();
    annotation_tag(&fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_formats::sigmf::parse_meta;
    use std::path::Path;

    #[test]
    fn annotation_fields_become_tag_values_and_back() {
        let text = r#"{"global": {"core:datatype": "ci16_le", "core:version": "1.2.0"},
            "captures": [], "annotations": [{"core:sample_start": 10, "core:sample_count": 20,
            "core:label": "burst", "core:freq_lower_edge": 99.9e6, "x:neg": -3}]}"#;
        let m = parse_meta(text, Path::new("x.sigmf-meta")).unwrap();
        let tag = annotation_from_json(&m.annotations[0].fields);
        let fields = annotation_fields(&tag);
        assert!(fields.contains(&("core:sample_count".into(), TagValue::U64(20))));
        assert!(fields.contains(&("core:label".into(), TagValue::Str("burst".into()))));
        assert!(fields.contains(&("core:freq_lower_edge".into(), TagValue::F64(99.9e6))));
        assert!(fields.contains(&("x:neg".into(), TagValue::I64(-3))));
        assert_eq!(annotation_fields(&annotation_tag(&fields)), fields);
    }
}
