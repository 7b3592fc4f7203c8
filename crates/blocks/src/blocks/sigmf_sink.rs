//! [`SigmfSink`]: a stream of complex samples as a SigMF recording, its metadata and tags in
//! the meta file (see [`crate::blocks::sigmf_tags`] for the mapping).
//!
//! Both files are written beside their destinations and moved onto them when the stream ends
//! (see [`PartialFile`]): a run that fails leaves an existing recording untouched. The data
//! streams to the disk as it is written ([`StreamingFile`]), so a recording runs at the disk's
//! pace from its start instead of filling the page cache and stalling. A change of
//! frequency, rate or gain starts a capture segment; a `gap` becomes a `gap` annotation with the
//! samples lost; a start tag and an end tag the user names (`burst_start..burst_end`) become one
//! annotation over the range; every other tag (an `rt_overflow`, a `set:gain` change) becomes an
//! annotation labelled with its key, its value in `core:comment`, so a recording keeps what
//! happened while it was made.

use super::fd_io::OVERFLOW;
use crate::blocks::sigmf_tags::{annotation_fields, to_json, ANNOTATION};
use num_complex::Complex32;
use serde_json::{json, Map, Value};
use sluice_formats::output_file::PartialFile;
use sluice_formats::sigmf::{
    self, format_datetime, Datatype, CAPTURE_GAIN, CAPTURE_RATE, EXTENSION, GAP_LABEL, GAP_LOST,
};
use sluice_formats::streaming_file::StreamingFile;
use sluice_kernels::c32_to_iq;
use sluice_runtime::metadata::{CENTER_FREQUENCY, GAIN, GAP, SAMPLE_RATE, TIME};
use sluice_runtime::{Node, NodeError, Ports, Tag, TagPolicy, TagValue, Work, WorkIo};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Samples converted per write for the integer types.
const CHUNK: usize = 1 << 14;

/// Writes a SigMF recording (see the module docs).
#[derive(Debug)]
pub struct SigmfSink {
    datatype: Datatype,
    meta_path: PathBuf,
    data: Option<(PartialFile, BufWriter<StreamingFile>)>,
    meta: Option<PartialFile>,
    sample_rate: Option<f64>,
    frequency: Option<f64>,
    description: Option<String>,
    written: u64,
    scratch: Vec<i16>,
    clipped: u64,
    /// The rate of the samples being written (the last `rx_rate`).
    current_rate: Option<f64>,
    /// `(sample, field, value)` of the captures, in sample order.
    captures: Vec<(u64, &'static str, Value)>,
    annotations: Vec<Value>,
    /// The ranges to record as annotations, and where each open one started (with the start
    /// tag's value).
    ranges: Vec<(Range, Option<(u64, TagValue)>)>,
    tags: Vec<Tag>,
    warnings: Vec<String>,
}

impl SigmfSink {
    /// Prepares the recording `path` names (`NAME` or `NAME.sigmf-*`) in `datatype`. Without
    /// `sample_rate` the stream's `rx_rate` is written; `frequency` is the first capture's
    /// centre frequency when the stream gives none at its start.
    pub fn create(
        path: &Path,
        datatype: Datatype,
        sample_rate: Option<f64>,
        frequency: Option<f64>,
        description: Option<String>,
    ) -> Result<Self, NodeError> {
        let (meta_path, data_path) = sigmf::paths(path);
        let data = PartialFile::new(&data_path);
        let file = std::fs::File::create(data.temporary())
            .map_err(|e| NodeError::caused(format!("cannot create {}", data_path.display()), e))?;
        let meta = PartialFile::new(&meta_path);
        let warnings = data
            .stale_warning()
            .into_iter()
            .chain(meta.stale_warning())
            .collect();
        Ok(SigmfSink {
            datatype,
            meta: Some(meta),
            meta_path,
            data: Some((
                data,
                BufWriter::with_capacity(1 << 16, StreamingFile::new(file)),
            )),
            sample_rate,
            frequency,
            description,
            written: 0,
            scratch: if datatype == Datatype::Cf32Le {
                Vec::new()
            } else {
                vec![0; 2 * CHUNK]
            },
            clipped: 0,
            current_rate: None,
            captures: Vec::new(),
            annotations: Vec::new(),
            ranges: Vec::new(),
            tags: Vec::new(),
            warnings,
        })
    }

    /// Also records, as one annotation each, the ranges between a `start` tag and the next
    /// `end` tag (`burst_start..burst_end`): the annotation starts at the start tag's item,
    /// covers the end tag's item, is labelled `label` and keeps the start tag's value in
    /// `core:comment`.
    pub fn with_ranges(mut self, ranges: Vec<Range>) -> Self {
        self.ranges = ranges.into_iter().map(|r| (r, None)).collect();
        self
    }

    /// Records what the tags on the items just written say.
    fn read_tags(&mut self) {
        for tag in std::mem::take(&mut self.tags) {
            let at = tag.index;
            match (&*tag.key, &tag.value) {
                (SAMPLE_RATE, TagValue::F64(hz)) => self.rate_from(at, *hz),
                (CENTER_FREQUENCY, TagValue::F64(hz)) => {
                    self.captures.push((at, "core:frequency", json!(hz)));
                }
                (GAIN, TagValue::F64(db)) => self.captures.push((at, CAPTURE_GAIN, json!(db))),
                (TIME, TagValue::Tuple(t)) => {
                    if let (Some(TagValue::U64(s)), Some(TagValue::F64(f))) = (t.first(), t.get(1))
                    {
                        self.captures
                            .push((at, "core:datetime", json!(format_datetime(*s, *f))));
                    }
                }
                (GAP, TagValue::U64(lost)) => self.annotations.push(json!({
                    "core:sample_start": at,
                    "core:label": GAP_LABEL,
                    "core:comment": gap_comment(*lost),
                    GAP_LOST: lost,
                    "core:generator": "sluice",
                })),
                (ANNOTATION, value) => {
                    let mut a = Map::new();
                    a.insert("core:sample_start".into(), json!(at));
                    for (k, v) in annotation_fields(value) {
                        a.insert(k, to_json(&v));
                    }
                    self.annotations.push(Value::Object(a));
                }
                (key, value) if self.in_range(at, key, value) => {}
                (key, value) => {
                    let comment = match value {
                        TagValue::Str(s) => s.to_string(),
                        TagValue::U64(n) if key == OVERFLOW => {
                            format!("{n} samples lost before this one")
                        }
                        other => to_json(other).to_string(),
                    };
                    self.annotations.push(json!({
                        "core:sample_start": at,
                        "core:label": key,
                        "core:comment": comment,
                        "core:generator": "sluice",
                    }));
                }
            }
        }
    }

    /// A stream rate from sample `at`: the recording's rate when it is the first, a capture of
    /// its own when it changes (SigMF's core has one rate per recording).
    fn rate_from(&mut self, at: u64, hz: f64) {
        let current = self.current_rate.or(self.sample_rate);
        self.current_rate = Some(hz);
        match current {
            None => self.sample_rate = Some(hz),
            Some(rate) if rate == hz => {}
            Some(_) => {
                if !self.captures.iter().any(|(_, f, _)| *f == CAPTURE_RATE) {
                    self.warnings.push(format!(
                        "the stream's rate changes to {hz} Hz at sample {at}: the recording keeps it in the captures' {CAPTURE_RATE}, which readers of SigMF's core alone do not see"
                    ));
                }
                self.captures.push((at, CAPTURE_RATE, json!(hz)));
            }
        }
    }

    /// Opens or closes a range if `key` starts or ends one; whether it did.
    fn in_range(&mut self, at: u64, key: &str, value: &TagValue) -> bool {
        let Some((range, open)) = self
            .ranges
            .iter_mut()
            .find(|(r, _)| r.start == key || r.end == key)
        else {
            return false;
        };
        if range.start == key {
            if let Some((start, value)) = open.replace((at, value.clone())) {
                // A second start before an end: the first range ends just before it.
                self.annotations
                    .push(range.annotation(start, at - start, &value, "no end tag"));
            }
            true
        } else if let Some((start, value)) = open.take() {
            self.annotations
                .push(range.annotation(start, at + 1 - start, &value, ""));
            true
        } else {
            false // an end without a start is recorded as any other tag
        }
    }

    /// The meta file's JSON.
    fn meta_json(&self) -> Value {
        let mut global = Map::new();
        global.insert("core:datatype".into(), json!(self.datatype.name()));
        global.insert("core:version".into(), json!(sigmf::VERSION));
        global.insert("core:recorder".into(), json!("sluice"));
        if let Some(rate) = self.sample_rate {
            global.insert("core:sample_rate".into(), json!(rate));
        }
        if let Some(d) = &self.description {
            global.insert("core:description".into(), json!(d));
        }
        let mut captures: Vec<Map<String, Value>> = Vec::new();
        for (at, field, value) in &self.captures {
            if captures
                .last()
                .and_then(|c| c["core:sample_start"].as_u64())
                != Some(*at)
            {
                let mut c = Map::new();
                c.insert("core:sample_start".into(), json!(at));
                captures.push(c);
            }
            if let Some(c) = captures.last_mut() {
                c.insert(field.to_string(), value.clone());
            }
        }
        if captures
            .first()
            .and_then(|c| c["core:sample_start"].as_u64())
            != Some(0)
        {
            captures.insert(0, Map::from_iter([("core:sample_start".into(), json!(0))]));
        }
        if let (Some(hz), false) = (self.frequency, captures[0].contains_key("core:frequency")) {
            captures[0].insert("core:frequency".into(), json!(hz));
        }
        let mut annotations = self.annotations.clone();
        // Ranges are written when they end, so after point annotations inside them.
        annotations.sort_by_key(|a| a["core:sample_start"].as_u64());
        let extended = |v: &Value| {
            v.as_object()
                .is_some_and(|o| o.keys().any(|k| k.starts_with(EXTENSION)))
        };
        if captures
            .iter()
            .any(|c| c.keys().any(|k| k.starts_with(EXTENSION)))
            || annotations.iter().any(extended)
        {
            global.insert(
                "core:extensions".into(),
                json!([{ "name": EXTENSION, "version": "1.0.0", "optional": true }]),
            );
        }
        json!({ "global": global, "captures": captures, "annotations": annotations })
    }

    /// Writes the meta file and moves both files into place.
    fn finish(&mut self) -> Result<(), NodeError> {
        for (range, open) in &mut self.ranges {
            if let Some((start, value)) = open.take() {
                let a = range.annotation(
                    start,
                    self.written - start,
                    &value,
                    "still open when the recording ended",
                );
                self.annotations.push(a);
            }
        }
        let (Some((data, mut file)), Some(meta)) = (self.data.take(), self.meta.take()) else {
            return Ok(());
        };
        if self.sample_rate.is_none() {
            self.warnings.push(
                "neither the graph nor the stream gives a sample rate; the recording has none"
                    .into(),
            );
        }
        let text =
            serde_json::to_string_pretty(&self.meta_json()).map_err(NodeError::from_error)?;
        let name = |p: &Path| p.display().to_string();
        // On the disk before it takes the destination's name: a crash after the rename must not
        // leave a recording that reads as complete but is not.
        file.flush()
            .and_then(|()| file.get_mut().sync())
            .map_err(|e| NodeError::caused(format!("writing {}", name(data.destination())), e))?;
        std::fs::write(meta.temporary(), text + "\n")
            .map_err(|e| NodeError::caused(format!("writing {}", self.meta_path.display()), e))?;
        let dest = name(data.destination());
        data.commit()
            .map_err(|e| NodeError::caused(format!("cannot move the data into {dest}"), e))?;
        meta.commit().map_err(|e| {
            NodeError::msg(format!(
                "cannot move the metadata into {}: {e}",
                self.meta_path.display()
            ))
        })
    }
}

impl Node for SigmfSink {
    fn ports(&self) -> Ports {
        Ports::new().input::<Complex32>("in")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<Complex32>(0)?;
        let read = input.items_read();
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            self.finish()?;
            return Ok(Work::Done);
        }
        let Some((data, file)) = &mut self.data else {
            return Ok(Work::Done);
        };
        let n = match self.datatype.iq_format() {
            None => file.write_all(bytemuck::cast_slice(x)).map(|()| x.len()),
            Some(format) => {
                let n = x.len().min(CHUNK);
                let raw = &mut self.scratch[..2 * n];
                let clipped = if self.datatype == Datatype::Ci16Le {
                    c32_to_iq(format, &x[..n], raw).1
                } else {
                    c32_to_iq(
                        format,
                        &x[..n],
                        &mut bytemuck::cast_slice_mut::<i16, u8>(raw)[..2 * n],
                    )
                    .1
                };
                self.clipped += clipped;
                let bytes: &[u8] = bytemuck::cast_slice(raw);
                file.write_all(&bytes[..n * self.datatype.sample_bytes()])
                    .map(|()| n)
            }
        }
        .map_err(|e| NodeError::caused(format!("writing {}", data.destination().display()), e))?;
        input.take_tags(read + n as u64, &mut self.tags);
        input.consume(n);
        self.written += n as u64;
        self.read_tags();
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn warnings(&mut self) -> Vec<String> {
        if self.clipped > 0 {
            self.warnings.push(format!(
                "{} values clipped to the {} range",
                self.clipped,
                self.datatype.name()
            ));
        }
        std::mem::take(&mut self.warnings)
    }
}

/// A range of the stream to record as one annotation: from an item tagged `start` to the next
/// item tagged `end` (`burst_start..burst_end`).
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    /// The key of the tag that opens a range.
    pub start: String,
    /// The key of the tag on a range's last item.
    pub end: String,
    /// The annotation's `core:label`: the start key without its `_start` suffix.
    pub label: String,
}

impl Range {
    /// `START..END` (e.g. `burst_start..burst_end`), or what is wrong with it.
    pub fn parse(text: &str) -> Result<Range, String> {
        let (start, end) = text
            .split_once("..")
            .filter(|(s, e)| !s.trim().is_empty() && !e.trim().is_empty())
            .ok_or_else(|| {
                format!("{text:?} is not a range of tags: write START..END, e.g. \"burst_start..burst_end\"")
            })?;
        let (start, end) = (start.trim(), end.trim());
        if start == end {
            return Err(format!("{text:?}: a range needs two different tag keys"));
        }
        Ok(Range {
            start: start.into(),
            end: end.into(),
            label: start.strip_suffix("_start").unwrap_or(start).into(),
        })
    }

    fn annotation(&self, start: u64, count: u64, value: &TagValue, note: &str) -> Value {
        let value = match value {
            TagValue::Str(s) => s.to_string(),
            other => to_json(other).to_string(),
        };
        let comment = match note {
            "" => format!("{}: {value}", self.start),
            note => format!("{}: {value} ({note})", self.start),
        };
        json!({
            "core:sample_start": start,
            "core:sample_count": count,
            "core:label": self.label,
            "core:comment": comment,
            "core:generator": "sluice",
        })
    }
}

fn gap_comment(lost: u64) -> String {
    match lost {
        0 => "samples lost before this one (how many is not known)".into(),
        n => format!("{n} samples lost before this one"),
    }
}

#[cfg(test)]
mod tests;
