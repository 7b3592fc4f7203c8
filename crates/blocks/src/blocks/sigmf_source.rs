//! [`SigmfSource`]: a SigMF recording as a stream of complex samples, its metadata as tags
//! (see [`crate::blocks::sigmf_tags`] for the mapping), at full speed or paced at the recorded
//! rate so that a recording can stand in for its radio.

use crate::blocks::pace::Pace;
use crate::blocks::sigmf_tags::{annotation_from_json, gap_of, ANNOTATION};
use num_complex::Complex32;
use sluice_formats::sigmf::{self, Datatype, Meta};
use sluice_kernels::iq_to_c32;
use sluice_runtime::metadata::{self, CENTER_FREQUENCY, GAIN, GAP, SAMPLE_RATE, TIME};
use sluice_runtime::{Node, NodeError, Ports, Tag, TagValue, Work, WorkIo};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Samples converted per read for the integer types.
const CHUNK: usize = 1 << 14;

/// Reads a SigMF recording (`cf32_le`, `ci16_le`, `cu8`, `ci8`) as `Complex32`.
#[derive(Debug)]
pub struct SigmfSource {
    meta: Meta,
    data_path: PathBuf,
    file: File,
    samples: u64,
    sent: u64,
    /// Tags not yet attached, by index.
    tags: Vec<Tag>,
    next_tag: usize,
    /// Raw integer samples before conversion.
    scratch: Vec<i16>,
    /// When paced: the pace, and the rate changes still ahead `(first sample, rate)`.
    pace: Option<(Pace, Vec<(u64, f64)>)>,
}

impl SigmfSource {
    /// Opens the recording `path` names (`NAME`, `NAME.sigmf-meta` or `NAME.sigmf-data`).
    /// A bad meta file is an error naming it and the field; a data file that is not a whole
    /// number of samples, one naming it.
    pub fn open(path: &Path) -> Result<Self, NodeError> {
        let (meta_path, data_path) = sigmf::paths(path);
        let meta = sigmf::read_meta(&meta_path).map_err(NodeError::from_error)?;
        let file = File::open(&data_path)
            .map_err(|e| NodeError::caused(format!("cannot open {}", data_path.display()), e))?;
        let bytes = file.metadata()?.len();
        let size = meta.datatype.sample_bytes() as u64;
        if !bytes.is_multiple_of(size) {
            return Err(NodeError::msg(format!(
                "{} is {bytes} bytes, not a whole number of {size}-byte {} samples",
                data_path.display(),
                meta.datatype.name()
            )));
        }
        let mut tags = Vec::new();
        if let Some(rate) = meta.sample_rate {
            tags.push(Tag::new(0, SAMPLE_RATE, metadata::sample_rate(rate)));
        }
        for c in &meta.captures {
            if let Some(hz) = c.frequency {
                tags.push(Tag::new(
                    c.sample_start,
                    CENTER_FREQUENCY,
                    TagValue::F64(hz),
                ));
            }
            if let Some((secs, frac)) = c.datetime {
                let time = TagValue::Tuple(vec![TagValue::U64(secs), TagValue::F64(frac)]);
                tags.push(Tag::new(c.sample_start, TIME, time));
            }
            if let Some(hz) = c.sample_rate {
                tags.push(Tag::new(
                    c.sample_start,
                    SAMPLE_RATE,
                    metadata::sample_rate(hz),
                ));
            }
            if let Some(db) = c.gain {
                tags.push(Tag::new(c.sample_start, GAIN, TagValue::F64(db)));
            }
        }
        for a in &meta.annotations {
            let tag = match gap_of(&a.fields) {
                Some(lost) => Tag::new(a.sample_start, GAP, TagValue::U64(lost)),
                None => Tag::new(a.sample_start, ANNOTATION, annotation_from_json(&a.fields)),
            };
            tags.push(tag);
        }
        tags.sort_by_key(|t| t.index); // stable: captures before annotations at one sample
        let integer = meta.datatype != Datatype::Cf32Le;
        Ok(SigmfSource {
            samples: bytes / size,
            meta,
            data_path,
            file,
            sent: 0,
            tags,
            next_tag: 0,
            scratch: if integer {
                vec![0; 2 * CHUNK]
            } else {
                Vec::new()
            },
            pace: None,
        })
    }

    /// Replays in real time: at the recorded `core:sample_rate`, and from each capture that
    /// changes it at that capture's rate. A recording without a rate cannot be paced.
    pub fn paced(mut self) -> Result<Self, NodeError> {
        let rate = self.meta.sample_rate.ok_or_else(|| {
            NodeError::msg(format!(
                "{} has no core:sample_rate, so it cannot be replayed at its recorded rate",
                self.data_path.display()
            ))
        })?;
        let mut changes: Vec<(u64, f64)> = self
            .meta
            .captures
            .iter()
            .filter_map(|c| Some((c.sample_start, c.sample_rate?)))
            .collect();
        changes.reverse(); // popped from the end, earliest first
        self.pace = Some((Pace::new(rate)?, changes));
        Ok(self)
    }

    /// The recording's metadata.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }
}

impl Node for SigmfSource {
    fn ports(&self) -> Ports {
        Ports::new().output::<Complex32>("out")
    }

    fn length(&self) -> Option<u64> {
        Some(self.samples)
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.sent == self.samples {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<Complex32>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let mut left = (self.samples - self.sent).min(usize::MAX as u64) as usize;
        if let Some((pace, changes)) = &mut self.pace {
            while let Some(&(_, rate)) = changes.last().filter(|(at, _)| *at <= self.sent) {
                pace.set_rate(rate);
                changes.pop();
            }
            // Up to the next rate change, at most what the pace allows now.
            let next = changes.last().map_or(u64::MAX, |(at, _)| *at);
            let allowed = pace.allowed().min(next - self.sent);
            if allowed == 0 {
                return Ok(Work::Progress);
            }
            left = left.min(allowed.min(usize::MAX as u64) as usize);
        }
        let datatype = self.meta.datatype;
        let read = match datatype.iq_format() {
            None => {
                let n = space.len().min(left);
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut space[..n]);
                self.file.read_exact(bytes).map(|()| n)
            }
            Some(format) => {
                let n = space.len().min(left).min(CHUNK);
                let raw = &mut self.scratch[..2 * n];
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(raw);
                let got = self
                    .file
                    .read_exact(&mut bytes[..n * datatype.sample_bytes()]);
                got.map(|()| match datatype {
                    Datatype::Ci16Le => iq_to_c32(format, &raw[..2 * n], space),
                    _ => iq_to_c32(
                        format,
                        &bytemuck::cast_slice::<i16, u8>(raw)[..2 * n],
                        space,
                    ),
                })
            }
        };
        let n = read
            .map_err(|e| NodeError::caused(format!("reading {}", self.data_path.display()), e))?;
        let end = self.sent + n as u64;
        while let Some(tag) = self.tags.get(self.next_tag).filter(|t| t.index < end) {
            out.push_tag(tag.clone());
            self.next_tag += 1;
        }
        self.sent = end;
        if let Some((pace, _)) = &mut self.pace {
            pace.advance(n as u64);
        }
        out.commit(n);
        Ok(Work::Progress)
    }
}
