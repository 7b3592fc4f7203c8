//! [`SigmfSource`]: a SigMF recording as a stream of complex samples, its metadata as tags
//! (see [`crate::blocks::sigmf_tags`] for the mapping).

use crate::blocks::sigmf_tags::{annotation_from_json, ANNOTATION};
use num_complex::Complex32;
use sluice_formats::sigmf::{self, Datatype, Meta};
use sluice_kernels::iq_to_c32;
use sluice_runtime::metadata::{self, CENTER_FREQUENCY, SAMPLE_RATE, TIME};
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
        }
        for a in &meta.annotations {
            tags.push(Tag::new(
                a.sample_start,
                ANNOTATION,
                annotation_from_json(&a.fields),
            ));
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
        })
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
        let left = (self.samples - self.sent).min(usize::MAX as u64) as usize;
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
        out.commit(n);
        Ok(Work::Progress)
    }
}
