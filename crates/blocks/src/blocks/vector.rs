//! Vector source and sink: streams from and into memory, mainly for tests and examples.

use sluice_runtime::{Item, Node, NodeError, Ports, Tag, TagValue, Work, WorkIo};
use std::sync::{Arc, Mutex, PoisonError};

/// Streams the items of a vector (optionally repeated), with optional tags, then ends.
#[derive(Debug)]
pub struct VectorSource<T> {
    data: Vec<T>,
    tags: Vec<Tag>,
    repeat: u64,
    /// Items emitted so far.
    sent: u64,
    /// The most items handed out per `work` call (to exercise chunking in tests).
    max_chunk: usize,
}

impl<T: Item> VectorSource<T> {
    /// Streams `data` once.
    pub fn new(data: Vec<T>) -> Self {
        VectorSource {
            data,
            tags: Vec::new(),
            repeat: 1,
            sent: 0,
            max_chunk: usize::MAX,
        }
    }

    /// Streams `data` `times` times in a row.
    pub fn repeat(mut self, times: u64) -> Self {
        self.repeat = times;
        self
    }

    /// Attaches `key` = `value` to item `index` of the stream.
    pub fn with_tag(mut self, index: u64, key: &str, value: TagValue) -> Self {
        self.tags.push(Tag::new(index, key, value));
        self
    }

    /// Attaches `tags` as given (with their sources) to the stream.
    pub fn with_tags(mut self, tags: impl IntoIterator<Item = Tag>) -> Self {
        self.tags.extend(tags);
        self
    }

    /// Hands out at most `items` per work call.
    pub fn max_chunk(mut self, items: usize) -> Self {
        self.max_chunk = items.max(1);
        self
    }

    fn total(&self) -> u64 {
        self.data.len() as u64 * self.repeat
    }
}

impl<T: Item> Node for VectorSource<T> {
    fn ports(&self) -> Ports {
        Ports::new().output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let total = self.total();
        if self.sent >= total {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<T>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let len = self.data.len() as u64;
        let offset = (self.sent % len) as usize;
        let n = space
            .len()
            .min(self.data.len() - offset)
            .min(self.max_chunk)
            .min((total - self.sent) as usize);
        space[..n].copy_from_slice(&self.data[offset..offset + n]);
        let end = self.sent + n as u64;
        for tag in self
            .tags
            .iter()
            .filter(|t| t.index >= self.sent && t.index < end)
        {
            out.push_tag(tag.clone());
        }
        out.commit(n);
        self.sent = end;
        Ok(if self.sent >= total {
            Work::Done
        } else {
            Work::Progress
        })
    }
}

/// What a [`VectorSink`] collected; readable after (or during) the run.
#[derive(Debug, Clone)]
pub struct VectorSinkData<T> {
    items: Arc<Mutex<Vec<T>>>,
    tags: Arc<Mutex<Vec<Tag>>>,
}

impl<T: Clone> VectorSinkData<T> {
    /// A copy of every item received so far.
    pub fn items(&self) -> Vec<T> {
        self.items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every tag received so far, with absolute item indices.
    pub fn tags(&self) -> Vec<Tag> {
        self.tags
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Collects every item (and tag) it receives into memory.
#[derive(Debug)]
pub struct VectorSink<T> {
    data: VectorSinkData<T>,
    max_chunk: usize,
}

impl<T: Item> VectorSink<T> {
    /// A sink and the handle to read what it collects.
    pub fn new() -> (Self, VectorSinkData<T>) {
        let data = VectorSinkData {
            items: Arc::new(Mutex::new(Vec::new())),
            tags: Arc::new(Mutex::new(Vec::new())),
        };
        (
            VectorSink {
                data: data.clone(),
                max_chunk: usize::MAX,
            },
            data,
        )
    }

    /// Consumes at most `items` per work call (to exercise chunking in tests).
    pub fn max_chunk(mut self, items: usize) -> Self {
        self.max_chunk = items.max(1);
        self
    }
}

impl<T: Item> Node for VectorSink<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        let Some(window) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if window.is_empty() {
            return Ok(Work::Done);
        }
        let n = window.len().min(self.max_chunk);
        self.data
            .items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(&window[..n]);
        input.consume(n);
        let mut tags = self
            .data
            .tags
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        input.take_tags(input.items_read(), &mut tags);
        Ok(Work::Progress)
    }

    /// A sink keeps the tags it receives instead of passing them on.
    fn tag_policy(&self) -> sluice_runtime::TagPolicy {
        sluice_runtime::TagPolicy::Drop
    }
}
