//! File source and sink in GNU Radio's raw format: items back to back, little-endian, no header
//! (what `blocks.file_source`/`file_sink` read and write on x86).

use sluice_formats::output_file::PartialFile;
use sluice_formats::streaming_file::StreamingFile;
use sluice_runtime::{Item, Node, NodeError, Ports, TagPolicy, Work, WorkIo};
use std::fs::File;
use std::io::{Read, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

#[cfg(target_endian = "big")]
compile_error!("the raw file blocks assume a little-endian host (items are written as in memory)");

/// Reads items from a raw file straight into the output queue (no staging buffer).
#[derive(Debug)]
pub struct FileSource<T> {
    path: PathBuf,
    file: File,
    repeat: bool,
    /// Bytes of a partial item carried between reads (a read may stop mid-item).
    carry: Vec<u8>,
    read_any: bool,
    _items: PhantomData<T>,
}

impl<T: Item> FileSource<T> {
    /// Opens `path`; with `repeat`, starts over at the end forever. A file whose size is not a
    /// whole number of items is an error that names it.
    pub fn open(path: &Path, repeat: bool) -> Result<Self, NodeError> {
        let file = File::open(path)
            .map_err(|e| NodeError::caused(format!("cannot open {}", path.display()), e))?;
        let len = file.metadata()?.len();
        let size = std::mem::size_of::<T>() as u64;
        if !len.is_multiple_of(size) {
            return Err(NodeError::msg(format!(
                "{} is {len} bytes, not a whole number of {size}-byte items",
                path.display()
            )));
        }
        if repeat && len == 0 {
            return Err(NodeError::msg(format!(
                "{} is empty and cannot be repeated",
                path.display()
            )));
        }
        Ok(FileSource {
            path: path.to_path_buf(),
            file,
            repeat,
            carry: Vec::with_capacity(std::mem::size_of::<T>()),
            read_any: false,
            _items: PhantomData,
        })
    }
}

impl<T: Item> Node for FileSource<T> {
    fn ports(&self) -> Ports {
        Ports::new().output::<T>("out")
    }

    fn length(&self) -> Option<u64> {
        let bytes = self.file.metadata().ok()?.len();
        (!self.repeat).then(|| bytes / std::mem::size_of::<T>() as u64)
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let out = io.outputs.get::<T>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(space);
        let partial = self.carry.len();
        bytes[..partial].copy_from_slice(&self.carry);
        self.carry.clear();
        let got = self.file.read(&mut bytes[partial..])?;
        if got == 0 {
            if self.repeat && self.read_any && partial == 0 {
                use std::io::Seek;
                self.file.rewind()?;
                return Ok(Work::Progress);
            }
            if partial != 0 {
                return Err(NodeError::msg(format!(
                    "{} ended inside an item (it changed while being read?)",
                    self.path.display()
                )));
            }
            return Ok(Work::Done);
        }
        self.read_any = true;
        let filled = partial + got;
        let size = std::mem::size_of::<T>();
        let whole = filled / size * size;
        self.carry.extend_from_slice(&bytes[whole..filled]);
        out.commit(filled / size);
        Ok(Work::Progress)
    }
}

/// Writes every item to a raw file, straight from the input queue's window. The file is written
/// under a temporary name and moved onto `path` at end of stream: an existing file there is
/// untouched unless the graph finishes (see [`PartialFile`]), and it streams to the disk as it
/// grows (see [`StreamingFile`]).
#[derive(Debug)]
pub struct FileSink<T> {
    path: PathBuf,
    file: StreamingFile,
    partial: Option<PartialFile>,
    /// Stale partial files of earlier runs found beside the destination (see
    /// [`PartialFile::stale`]), said once.
    warnings: Vec<String>,
    _items: PhantomData<T>,
}

impl<T: Item> FileSink<T> {
    /// Prepares to write `path` (replaced only when the stream ends).
    pub fn create(path: &Path) -> Result<Self, NodeError> {
        let partial = PartialFile::new(path);
        let file = File::create(partial.temporary())
            .map_err(|e| NodeError::caused(format!("cannot create {}", path.display()), e))?;
        Ok(FileSink {
            path: path.to_path_buf(),
            file: StreamingFile::new(file),
            warnings: partial.stale_warning().into_iter().collect(),
            partial: Some(partial),
            _items: PhantomData,
        })
    }
}

impl<T: Item> Node for FileSink<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in")
    }

    fn warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        let Some(window) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if window.is_empty() {
            // On the disk before it takes the destination's name (see `PartialFile`).
            self.file
                .sync()
                .map_err(|e| NodeError::caused(format!("writing {}", self.path.display()), e))?;
            if let Some(partial) = self.partial.take() {
                partial.commit().map_err(|e| {
                    NodeError::msg(format!(
                        "cannot move the output into {}: {e}",
                        self.path.display()
                    ))
                })?;
            }
            return Ok(Work::Done);
        }
        self.file
            .write_all(bytemuck::cast_slice(window))
            .map_err(|e| NodeError::caused(format!("writing {}", self.path.display()), e))?;
        let n = window.len();
        input.consume(n);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::vector::{VectorSink, VectorSource};
    use num_complex::Complex32;
    use sluice_runtime::Graph;

    #[test]
    fn raw_round_trip_of_complex_items() {
        let dir = std::env::temp_dir().join(format!("sluice-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("iq.c32");
        let data: Vec<Complex32> = (0..100_000)
            .map(|i| Complex32::new(i as f32, -(i as f32)))
            .collect();
        let mut g = Graph::new();
        let src = g.add("src", VectorSource::new(data.clone())).unwrap();
        let sink = g
            .add("sink", FileSink::<Complex32>::create(&path).unwrap())
            .unwrap();
        g.connect(src, "out", sink, "in").unwrap();
        g.run_stepped().unwrap();
        // The raw format is exactly the little-endian f32 pairs.
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 800_000);
        assert_eq!(&bytes[8..16], &[0, 0, 128, 63, 0, 0, 128, 191]);

        let mut g = Graph::new();
        let src = g
            .add("src", FileSource::<Complex32>::open(&path, false).unwrap())
            .unwrap();
        let (sink, out) = VectorSink::<Complex32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", sink, "in").unwrap();
        g.run_stepped().unwrap();
        assert_eq!(out.items(), data);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Passes items until `fail_after`, then fails (a graph that breaks mid-run).
    struct FailAfter(u64);

    impl Node for FailAfter {
        fn ports(&self) -> Ports {
            Ports::new().input::<u32>("in").output::<u32>("out")
        }
        fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            let input = io.inputs.get::<u32>(0)?;
            if input.items_read() >= self.0 {
                return Err(NodeError::msg("broken"));
            }
            let output = io.outputs.get::<u32>(0)?;
            let Some(x) = input.window(1)? else {
                return Ok(Work::NeedInput { port: 0, items: 1 });
            };
            let Some(y) = output.reserve(1)? else {
                return Ok(Work::NeedOutput { port: 0, items: 1 });
            };
            let n = x.len().min(y.len()).min(100);
            y[..n].copy_from_slice(&x[..n]);
            input.consume(n);
            output.commit(n);
            Ok(Work::Progress)
        }
    }

    #[test]
    fn a_graph_that_fails_leaves_an_existing_output_untouched() {
        let dir = std::env::temp_dir().join(format!("sluice-file-keep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("precious.u32");
        std::fs::write(&path, b"what the user had").unwrap();
        let mut g = Graph::new();
        let src = g
            .add("src", VectorSource::new((0..10_000u32).collect()))
            .unwrap();
        let mid = g.add("mid", FailAfter(5_000)).unwrap();
        let sink = g
            .add("sink", FileSink::<u32>::create(&path).unwrap())
            .unwrap();
        g.connect(src, "out", mid, "in").unwrap();
        g.connect(mid, "out", sink, "in").unwrap();
        let err = g.run_stepped().unwrap_err().to_string();
        assert_eq!(err, "node 'mid' failed: broken");
        assert_eq!(std::fs::read(&path).unwrap(), b"what the user had");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "a partial file was left behind: {left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_of_partial_items_is_an_error_naming_it() {
        let path = std::env::temp_dir().join(format!("sluice-odd-{}.raw", std::process::id()));
        std::fs::write(&path, [0u8; 10]).unwrap();
        let err = FileSource::<f32>::open(&path, false)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("is 10 bytes, not a whole number of 4-byte items"),
            "{err}"
        );
        assert!(err.contains(&path.display().to_string()));
        std::fs::remove_file(&path).unwrap();
        let err = FileSource::<f32>::open(Path::new("/nonexistent/x.raw"), false).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("cannot open /nonexistent/x.raw"));
    }
}
