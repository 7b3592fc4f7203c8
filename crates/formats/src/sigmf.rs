//! SigMF recordings (`NAME.sigmf-meta` + `NAME.sigmf-data`, specification 1.2): the
//! metadata as the `sigmf_source` and `sigmf_sink` blocks read and write it (how it maps to
//! stream metadata and tags is theirs: `sluice_blocks::blocks::sigmf_tags`).
//!
//! Datasets of type `cf32_le`, `ci16_le`, `cu8` and `ci8` (one channel) are supported. A
//! meta file that is not valid JSON, lacks a required field or holds one of the wrong kind is
//! an error that names the file and the field's JSON path (`captures[2].core:sample_start`).

use serde_json::{Map, Value};
use sluice_kernels::IqFormat;
use std::path::{Path, PathBuf};

/// The specification version written into new meta files.
pub const VERSION: &str = "1.2.0";

/// The namespace of the fields sluice adds where SigMF's core has none (declared in
/// `global.core:extensions` when a file uses them).
pub const EXTENSION: &str = "sluice";

/// A capture's sample rate when it differs from `global.core:sample_rate`: SigMF's core has one
/// rate per recording, so a rate that changed mid-stream is kept in this field of the capture
/// where it changed.
pub const CAPTURE_RATE: &str = "sluice:sample_rate";

/// A capture's receiver gain in dB (from the stream's `rx_gain` tag).
pub const CAPTURE_GAIN: &str = "sluice:gain";

/// The label of an annotation that marks a gap: samples lost just before its first sample.
pub const GAP_LABEL: &str = "gap";

/// A gap annotation's number of samples lost (0: unknown).
pub const GAP_LOST: &str = "sluice:lost";

/// A SigMF file that cannot be used: the file, where in it, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{}: {at}: {message}", file.display())]
pub struct SigmfError {
    /// The meta or data file.
    pub file: PathBuf,
    /// The JSON path of the field (`global.core:datatype`), a line and column, or `file`.
    pub at: String,
    /// What was expected.
    pub message: String,
}

/// The sample formats supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Datatype {
    /// Complex f32, little-endian.
    Cf32Le,
    /// Complex i16, little-endian (full scale 32768).
    Ci16Le,
    /// Complex u8 (offset 127.5, RTL-SDR).
    Cu8,
    /// Complex i8 (HackRF).
    Ci8,
}

impl Datatype {
    /// The datatype called `name` (`cf32_le`, `ci16_le`, `cu8`, `ci8`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "cf32_le" => Some(Datatype::Cf32Le),
            "ci16_le" => Some(Datatype::Ci16Le),
            "cu8" | "cu8_le" => Some(Datatype::Cu8),
            "ci8" | "ci8_le" => Some(Datatype::Ci8),
            _ => None,
        }
    }

    /// Its SigMF name.
    pub fn name(self) -> &'static str {
        match self {
            Datatype::Cf32Le => "cf32_le",
            Datatype::Ci16Le => "ci16_le",
            Datatype::Cu8 => "cu8",
            Datatype::Ci8 => "ci8",
        }
    }

    /// Bytes per (complex) sample.
    pub fn sample_bytes(self) -> usize {
        match self {
            Datatype::Cf32Le => 8,
            Datatype::Ci16Le => 4,
            Datatype::Cu8 | Datatype::Ci8 => 2,
        }
    }

    /// The integer IQ format, for the integer types.
    pub fn iq_format(self) -> Option<IqFormat> {
        match self {
            Datatype::Cf32Le => None,
            Datatype::Ci16Le => Some(IqFormat::Ci16),
            Datatype::Cu8 => Some(IqFormat::Cu8),
            Datatype::Ci8 => Some(IqFormat::Ci8),
        }
    }
}

/// One capture segment.
#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    /// Its first sample.
    pub sample_start: u64,
    /// The centre frequency from here on, Hz.
    pub frequency: Option<f64>,
    /// The time of its first sample: whole seconds since 1970 (UTC) and a fraction.
    pub datetime: Option<(u64, f64)>,
    /// The sample rate from here on when it differs from the global one ([`CAPTURE_RATE`]).
    pub sample_rate: Option<f64>,
    /// The receiver gain from here on, dB ([`CAPTURE_GAIN`]).
    pub gain: Option<f64>,
}

/// One annotation.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotation {
    /// Its first sample.
    pub sample_start: u64,
    /// Its other fields under their SigMF names (`core:sample_count`, `core:label`, …), as
    /// they stand in the meta file.
    pub fields: Vec<(String, Value)>,
}

/// What a meta file says.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// The sample format.
    pub datatype: Datatype,
    /// Samples per second.
    pub sample_rate: Option<f64>,
    /// `core:description`, if any.
    pub description: Option<String>,
    /// The capture segments, by sample.
    pub captures: Vec<Capture>,
    /// The annotations, by sample.
    pub annotations: Vec<Annotation>,
}

/// The meta and data files of the recording `path` names: `NAME.sigmf-meta`,
/// `NAME.sigmf-data`, or `NAME` (with or without either extension).
pub fn paths(path: &Path) -> (PathBuf, PathBuf) {
    let base = match path.extension().and_then(|e| e.to_str()) {
        Some("sigmf-meta" | "sigmf-data" | "sigmf") => path.with_extension(""),
        _ => path.to_path_buf(),
    };
    let with = |ext: &str| {
        let mut name = base.clone().into_os_string();
        name.push(ext);
        PathBuf::from(name)
    };
    (with(".sigmf-meta"), with(".sigmf-data"))
}

fn error(file: &Path, at: impl Into<String>, message: impl Into<String>) -> SigmfError {
    SigmfError {
        file: file.to_path_buf(),
        at: at.into(),
        message: message.into(),
    }
}

/// Reads and checks the meta file `file`.
pub fn read_meta(file: &Path) -> Result<Meta, SigmfError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| error(file, "file", format!("cannot read: {e}")))?;
    parse_meta(&text, file)
}

/// Parses meta-file text (read from `file`, named in errors).
pub fn parse_meta(text: &str, file: &Path) -> Result<Meta, SigmfError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        error(
            file,
            format!("line {}, column {}", e.line(), e.column()),
            format!("not valid JSON: {e}"),
        )
    })?;
    let root = object(&root, "(top level)", file)?;
    let global = object(field(root, "global", "", file)?, "global", file)?;
    let kind = string(
        field(global, "core:datatype", "global.", file)?,
        "global.core:datatype",
        file,
    )?;
    let datatype = Datatype::parse(kind).ok_or_else(|| {
        error(
            file,
            "global.core:datatype",
            format!("'{kind}' is not supported (use cf32_le, ci16_le, cu8 or ci8)"),
        )
    })?;
    string(
        field(global, "core:version", "global.", file)?,
        "global.core:version",
        file,
    )?;
    if let Some(v) = global.get("core:num_channels") {
        if v.as_u64() != Some(1) {
            return Err(error(
                file,
                "global.core:num_channels",
                format!("{v}: only 1 channel is supported"),
            ));
        }
    }
    let sample_rate = match global.get("core:sample_rate") {
        None => None,
        Some(v) => Some(v.as_f64().filter(|r| *r > 0.0).ok_or_else(|| {
            error(
                file,
                "global.core:sample_rate",
                format!("{v} is not a positive number"),
            )
        })?),
    };
    let description = global
        .get("core:description")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut captures = Vec::new();
    for (i, c) in array(root, "captures", file)?.iter().enumerate() {
        let at = format!("captures[{i}]");
        let c = object(c, &at, file)?;
        let sample_start = start(
            c,
            &at,
            file,
            captures.last().map(|p: &Capture| p.sample_start),
        )?;
        if let Some(h) = c.get("core:header_bytes") {
            if h.as_u64() != Some(0) {
                return Err(error(
                    file,
                    format!("{at}.core:header_bytes"),
                    "header bytes inside the data are not supported",
                ));
            }
        }
        let frequency = match c.get("core:frequency") {
            None => None,
            Some(v) => Some(v.as_f64().ok_or_else(|| {
                error(
                    file,
                    format!("{at}.core:frequency"),
                    format!("{v} is not a number"),
                )
            })?),
        };
        let datetime = match c.get("core:datetime") {
            None => None,
            Some(v) => Some(v.as_str().and_then(parse_datetime).ok_or_else(|| {
                error(
                    file,
                    format!("{at}.core:datetime"),
                    format!("{v} is not an ISO 8601 UTC time (2024-05-01T12:00:00.5Z)"),
                )
            })?),
        };
        let number = |name: &str| match c.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| error(file, format!("{at}.{name}"), format!("{v} is not a number"))),
        };
        let sample_rate = number(CAPTURE_RATE)?;
        if let Some(r) = sample_rate.filter(|r| *r <= 0.0 || !r.is_finite()) {
            return Err(error(
                file,
                format!("{at}.{CAPTURE_RATE}"),
                format!("{r} is not a positive number"),
            ));
        }
        captures.push(Capture {
            sample_start,
            frequency,
            datetime,
            sample_rate,
            gain: number(CAPTURE_GAIN)?,
        });
    }
    let mut annotations = Vec::new();
    for (i, a) in array(root, "annotations", file)?.iter().enumerate() {
        let at = format!("annotations[{i}]");
        let a = object(a, &at, file)?;
        let sample_start = start(
            a,
            &at,
            file,
            annotations.last().map(|p: &Annotation| p.sample_start),
        )?;
        if let Some(v) = a.get("core:sample_count") {
            v.as_u64().ok_or_else(|| {
                error(
                    file,
                    format!("{at}.core:sample_count"),
                    format!("{v} is not a whole number"),
                )
            })?;
        }
        let fields = a
            .iter()
            .filter(|(k, _)| *k != "core:sample_start")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        annotations.push(Annotation {
            sample_start,
            fields,
        });
    }
    Ok(Meta {
        datatype,
        sample_rate,
        description,
        captures,
        annotations,
    })
}

fn object<'a>(v: &'a Value, at: &str, file: &Path) -> Result<&'a Map<String, Value>, SigmfError> {
    v.as_object()
        .ok_or_else(|| error(file, at, format!("must be an object, not {}", kind(v))))
}

fn field<'a>(
    m: &'a Map<String, Value>,
    name: &str,
    prefix: &str,
    file: &Path,
) -> Result<&'a Value, SigmfError> {
    m.get(name)
        .ok_or_else(|| error(file, format!("{prefix}{name}"), "is required but missing"))
}

fn string<'a>(v: &'a Value, at: &str, file: &Path) -> Result<&'a str, SigmfError> {
    v.as_str()
        .ok_or_else(|| error(file, at, format!("must be a string, not {}", kind(v))))
}

fn array<'a>(
    root: &'a Map<String, Value>,
    name: &str,
    file: &Path,
) -> Result<&'a [Value], SigmfError> {
    match root.get(name) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(v) => Err(error(
            file,
            name,
            format!("must be an array, not {}", kind(v)),
        )),
    }
}

/// `core:sample_start` of an entry: required, a whole number, not before `previous`.
fn start(
    m: &Map<String, Value>,
    at: &str,
    file: &Path,
    previous: Option<u64>,
) -> Result<u64, SigmfError> {
    let at = format!("{at}.core:sample_start");
    let v = m
        .get("core:sample_start")
        .ok_or_else(|| error(file, &at, "is required but missing"))?;
    let s = v
        .as_u64()
        .ok_or_else(|| error(file, &at, format!("{v} is not a whole number of samples")))?;
    match previous {
        Some(p) if s < p => Err(error(
            file,
            &at,
            format!("{s} comes before the previous entry's {p} (entries must be in sample order)"),
        )),
        _ => Ok(s),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (the inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z` as (seconds since 1970, fraction); `None` if malformed or
/// before 1970.
pub fn parse_datetime(s: &str) -> Option<(u64, f64)> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.splitn(3, '-').map(str::parse::<u32>);
    let (y, mo, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':').map(str::parse::<u32>);
    let (h, mi, sec) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&day) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let fraction = if frac.is_empty() {
        0.0
    } else if frac.bytes().all(|b| b.is_ascii_digit()) {
        format!("0.{frac}").parse().ok()?
    } else {
        return None;
    };
    let days = days_from_civil(i64::from(y), mo, day);
    let secs = days * 86400 + i64::from(h * 3600 + mi * 60 + sec);
    Some((u64::try_from(secs).ok()?, fraction))
}

/// (seconds since 1970, fraction) as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (to the nearest microsecond).
pub fn format_datetime(secs: u64, fraction: f64) -> String {
    let micros = ((fraction.clamp(0.0, 1.0) * 1e6).round() as u64).min(999_999);
    let (days, rest) = ((secs / 86400) as i64, secs % 86400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests;
