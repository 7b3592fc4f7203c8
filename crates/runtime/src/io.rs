//! What a node sees when it works: typed inputs and outputs that lend slices of queue memory.

use crate::NodeError;
use sluice_queue::{Item, QueueError, Reader, RingReader, RingWriter, Tag, TagValue, Wait, Writer};
use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

/// A typed input port: windows straight into the upstream queue's memory.
#[derive(Debug)]
pub struct Input<T> {
    reader: Reader<T>,
    queue: Arc<str>,
}

impl<T: Item> Input<T> {
    pub(crate) fn new(reader: Reader<T>, queue: Arc<str>) -> Self {
        Input { reader, queue }
    }

    /// At least `n` items if they are there now, without blocking; `None` means "not yet" (return
    /// [`Work::NeedInput`](crate::Work::NeedInput) and the scheduler waits). At end of stream the
    /// window may be shorter than `n`; it is empty once everything was consumed. The window may
    /// be longer than `n`. `n` larger than the queue is an error.
    #[inline]
    pub fn window(&mut self, n: usize) -> Result<Option<&[T]>, NodeError> {
        Ok(self.reader.try_window(n)?)
    }

    /// Releases the first `k` items of the last window. Reading more than you consume is how a
    /// node keeps history (FIR taps, overlap-save) without copying it.
    #[inline]
    pub fn consume(&mut self, k: usize) {
        self.reader.consume(k);
    }

    /// Absolute index of the next unconsumed item (items consumed so far).
    pub fn items_read(&self) -> u64 {
        self.reader.items_read()
    }

    /// The queue's capacity in items: the largest window this input can ever give.
    pub fn capacity(&self) -> usize {
        self.reader.capacity()
    }

    /// Moves the tags on items with absolute index below `before` to `out`. Tags a node takes
    /// here are not propagated by the runtime.
    pub fn take_tags(&self, before: u64, out: &mut Vec<Tag>) {
        self.reader.take_tags(before, out);
    }
}

/// A typed output port: reservations straight into the downstream queue's memory.
#[derive(Debug)]
pub struct Output<T> {
    writer: Writer<T>,
    queue: Arc<str>,
}

impl<T: Item> Output<T> {
    pub(crate) fn new(writer: Writer<T>, queue: Arc<str>) -> Self {
        Output { writer, queue }
    }

    /// Room for at least `n` items if there is some now, without blocking; `None` means "not
    /// yet" (return [`Work::NeedOutput`](crate::Work::NeedOutput)). The slice may be longer than
    /// `n`. When every reader has gone this is [`NodeError::OutputClosed`], which ends the node
    /// normally.
    #[inline]
    pub fn reserve(&mut self, n: usize) -> Result<Option<&mut [T]>, NodeError> {
        match self.writer.try_reserve(n) {
            Ok(space) => Ok(space),
            Err(QueueError::NoReaders) => Err(NodeError::OutputClosed {
                port: self.queue.to_string(),
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Commits the first `k` items of the last reservation (a reservation is committed once).
    /// Downstream nodes see them when this `work` call returns, after the runtime has attached
    /// the tags that travel with them, so a reader never sees an item before its tags.
    #[inline]
    pub fn commit(&mut self, k: usize) {
        self.writer.commit_unpublished(k);
    }

    /// Absolute index of the next item to be committed.
    pub fn items_written(&self) -> u64 {
        self.writer.items_written()
    }

    /// Tags output item `index` (absolute) with `key` = `value`.
    pub fn add_tag(&self, index: u64, key: &str, value: TagValue) {
        self.writer.add_tag(Tag::new(index, key, value));
    }

    /// The queue's capacity in items: the largest reservation this output can ever give.
    pub fn capacity(&self) -> usize {
        self.writer.capacity()
    }
}

/// A type-erased input, as the scheduler holds it.
pub(crate) trait ErasedInput: Send {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Waits until a window of `n` is available (or the stream ended): true if it is.
    fn wait(&mut self, n: usize, deadline: Instant) -> Result<bool, QueueError>;
    /// Whether a window of `n` (or the end of the stream) is there now.
    fn ready(&mut self, n: usize) -> Result<bool, QueueError>;
    fn items_read(&self) -> u64;
    fn items_written(&self) -> u64;
    fn take_tags(&self, out: &mut Vec<Tag>);
    fn queue(&self) -> &str;
    fn capacity(&self) -> usize;
}

impl<T: Item> ErasedInput for Input<T> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn wait(&mut self, n: usize, deadline: Instant) -> Result<bool, QueueError> {
        Ok(self.reader.window_with(n, Wait::Until(deadline))?.is_some())
    }
    fn ready(&mut self, n: usize) -> Result<bool, QueueError> {
        Ok(self.reader.window_with(n, Wait::Never)?.is_some())
    }
    fn items_read(&self) -> u64 {
        self.reader.items_read()
    }
    fn items_written(&self) -> u64 {
        self.reader.items_written()
    }
    fn take_tags(&self, out: &mut Vec<Tag>) {
        self.reader.take_tags(self.reader.items_read(), out);
    }
    fn queue(&self) -> &str {
        &self.queue
    }
    fn capacity(&self) -> usize {
        self.reader.capacity()
    }
}

/// A type-erased output, as the scheduler holds it.
pub(crate) trait ErasedOutput: Send {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Waits until `n` items of room are free: true if they are.
    fn wait(&mut self, n: usize, deadline: Instant) -> Result<bool, QueueError>;
    /// Whether `n` items of room are free now.
    fn ready(&mut self, n: usize) -> Result<bool, QueueError>;
    fn items_written(&self) -> u64;
    fn add_tag(&self, tag: Tag);
    /// Makes the items committed during the last `work` call visible downstream.
    fn publish(&mut self);
    fn add_reader(&self) -> Result<Box<dyn ErasedInput>, QueueError>;
    fn queue(&self) -> &str;
    fn capacity(&self) -> usize;
}

impl<T: Item> ErasedOutput for Output<T> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn wait(&mut self, n: usize, deadline: Instant) -> Result<bool, QueueError> {
        Ok(self
            .writer
            .reserve_with(n, Wait::Until(deadline))?
            .is_some())
    }
    fn ready(&mut self, n: usize) -> Result<bool, QueueError> {
        Ok(self.writer.reserve_with(n, Wait::Never)?.is_some())
    }
    fn items_written(&self) -> u64 {
        self.writer.items_written()
    }
    fn add_tag(&self, tag: Tag) {
        self.writer.add_tag(tag);
    }
    fn publish(&mut self) {
        self.writer.publish();
    }
    fn add_reader(&self) -> Result<Box<dyn ErasedInput>, QueueError> {
        Ok(Box::new(Input::new(
            self.writer.add_reader()?,
            self.queue.clone(),
        )))
    }
    fn queue(&self) -> &str {
        &self.queue
    }
    fn capacity(&self) -> usize {
        self.writer.capacity()
    }
}

/// A node's inputs during one `work` call.
pub struct Inputs<'a> {
    ports: &'a mut [Box<dyn ErasedInput>],
    names: &'a [crate::PortSpec],
}

/// A node's outputs during one `work` call.
pub struct Outputs<'a> {
    ports: &'a mut [Box<dyn ErasedOutput>],
    names: &'a [crate::PortSpec],
}

/// Everything a node works with in one call. Inputs and outputs are separate fields so that a
/// node can hold a window and a reservation at once.
pub struct WorkIo<'a> {
    /// The node's inputs, by declared index.
    pub inputs: Inputs<'a>,
    /// The node's outputs, by declared index.
    pub outputs: Outputs<'a>,
}

impl<'a> WorkIo<'a> {
    pub(crate) fn new(
        inputs: &'a mut [Box<dyn ErasedInput>],
        input_specs: &'a [crate::PortSpec],
        outputs: &'a mut [Box<dyn ErasedOutput>],
        output_specs: &'a [crate::PortSpec],
    ) -> Self {
        WorkIo {
            inputs: Inputs {
                ports: inputs,
                names: input_specs,
            },
            outputs: Outputs {
                ports: outputs,
                names: output_specs,
            },
        }
    }
}

fn wrong_type<T>(spec: Option<&crate::PortSpec>, kind: &'static str, index: usize) -> NodeError {
    match spec {
        Some(spec) => NodeError::WrongType {
            port: spec.name.clone(),
            declared: spec.item.name(),
            requested: std::any::type_name::<T>(),
        },
        None => NodeError::NoSuchPort { kind, index },
    }
}

impl Inputs<'_> {
    /// Input `index` as carrying `T` (the type it declared).
    #[inline]
    pub fn get<T: Item>(&mut self, index: usize) -> Result<&mut Input<T>, NodeError> {
        let spec = self.names.get(index);
        self.ports
            .get_mut(index)
            .and_then(|p| p.as_any_mut().downcast_mut::<Input<T>>())
            .ok_or_else(|| wrong_type::<T>(spec, "input", index))
    }

    /// Number of inputs.
    pub fn len(&self) -> usize {
        self.ports.len()
    }

    /// Whether the node has no inputs.
    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }
}

impl Outputs<'_> {
    /// Output `index` as carrying `T` (the type it declared).
    #[inline]
    pub fn get<T: Item>(&mut self, index: usize) -> Result<&mut Output<T>, NodeError> {
        let spec = self.names.get(index);
        self.ports
            .get_mut(index)
            .and_then(|p| p.as_any_mut().downcast_mut::<Output<T>>())
            .ok_or_else(|| wrong_type::<T>(spec, "output", index))
    }

    /// Number of outputs.
    pub fn len(&self) -> usize {
        self.ports.len()
    }

    /// Whether the node has no outputs.
    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }
}
