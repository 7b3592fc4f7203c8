//! What a node sees when it works: typed inputs and outputs that lend slices of queue memory.

use crate::port::{InPort, OutPort};
use crate::run::StopView;
use crate::NodeError;
use sluice_queue::{
    Item, QueueError, ReadLimit, Reader, RingReader, RingWriter, Tag, TagValue, Wait, Writer,
};
use std::any::Any;
use std::ops::Range;
use std::slice::GetDisjointMutError;
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

    /// The address range of the upstream queue's memory (see
    /// [`Reader::ring_memory`](sluice_queue::Reader::ring_memory)): with the default mirrored
    /// queue every window this input lends lies inside it. For tests and diagnostics that
    /// check the zero-copy path.
    pub fn queue_memory(&self) -> Range<usize> {
        self.reader.ring_memory()
    }

    /// Keeps the upstream queue's memory mapped while held, also after the graph ended: the
    /// owner of a foreign view of a window (a Python array) holds it.
    pub fn memory_guard(&self) -> sluice_queue::MemoryGuard {
        self.reader.memory_guard()
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

    /// Attaches `tag` (index, key, value and source as given) to the output stream.
    pub fn push_tag(&self, tag: Tag) {
        self.writer.add_tag(tag);
    }

    /// The queue's capacity in items: the largest reservation this output can ever give.
    pub fn capacity(&self) -> usize {
        self.writer.capacity()
    }

    /// The address range of the downstream queue's memory (see
    /// [`Writer::ring_memory`](sluice_queue::Writer::ring_memory)): with the default mirrored
    /// queue every reservation lies inside it.
    pub fn queue_memory(&self) -> Range<usize> {
        self.writer.ring_memory()
    }

    /// Keeps the downstream queue's memory mapped while held; see [`Input::memory_guard`].
    pub fn memory_guard(&self) -> sluice_queue::MemoryGuard {
        self.writer.memory_guard()
    }
}

/// A port the node's view can downcast to its typed `Input<T>` or `Output<T>`.
pub(crate) trait AnyPort: Send {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// A type-erased input, as the scheduler holds it.
pub(crate) trait ErasedInput: AnyPort {
    /// Waits until a window of `n` is available (or the stream ended): true if it is.
    fn wait(&mut self, n: usize, deadline: Instant) -> Result<bool, QueueError>;
    /// Whether a window of `n` (or the end of the stream) is there now.
    fn ready(&mut self, n: usize) -> Result<bool, QueueError>;
    fn items_read(&self) -> u64;
    fn items_written(&self) -> u64;
    /// Moves the tags on items before absolute index `before` to `out`.
    fn take_tags(&self, before: u64, out: &mut Vec<Tag>);
    fn queue(&self) -> &str;
    fn capacity(&self) -> usize;
    /// Ends a message input: closes its inbox and says how many messages were left unread,
    /// by connection (stream inputs have none).
    fn end_messages(&mut self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// Consumes whatever is there now (a replacement's discarded warm-up output); how much.
    fn skip_available(&mut self) -> Result<u64, QueueError>;
    /// This input as a stream input; `None` for a message input.
    fn as_stream(&mut self) -> Option<&mut dyn StreamInput> {
        None
    }
}

/// What replacing a running node needs of a stream input, whatever its item type.
pub(crate) trait StreamInput {
    /// The reader's limit handle (see `sluice_queue::ReadLimit`).
    fn limit(&mut self) -> Arc<ReadLimit>;
    /// A new reader of the same queue at absolute item `at` (see
    /// `sluice_queue::ReaderPoint::attach`).
    fn attach_at(&self, at: u64) -> Result<Box<dyn ErasedInput>, QueueError>;
    /// Consumes the next `n` items, which must be readable now.
    fn skip(&mut self, n: u64) -> Result<(), QueueError>;
}

impl<T: Item> AnyPort for Input<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl<T: Item> ErasedInput for Input<T> {
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
    fn take_tags(&self, before: u64, out: &mut Vec<Tag>) {
        self.reader.take_tags(before, out);
    }
    fn queue(&self) -> &str {
        &self.queue
    }
    fn capacity(&self) -> usize {
        self.reader.capacity()
    }
    fn skip_available(&mut self) -> Result<u64, QueueError> {
        let n = match self.reader.window_with(1, Wait::Never)? {
            Some(window) => window.len(),
            None => 0,
        };
        self.reader.consume(n);
        Ok(n as u64)
    }
    fn as_stream(&mut self) -> Option<&mut dyn StreamInput> {
        Some(self)
    }
}

impl<T: Item> StreamInput for Input<T> {
    fn limit(&mut self) -> Arc<ReadLimit> {
        self.reader.limit()
    }
    fn attach_at(&self, at: u64) -> Result<Box<dyn ErasedInput>, QueueError> {
        Ok(Box::new(Input::new(
            self.reader.reader_point().attach(Some(at))?,
            Arc::clone(&self.queue),
        )))
    }
    fn skip(&mut self, n: u64) -> Result<(), QueueError> {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        match self.reader.window_with(n, Wait::Never)? {
            Some(window) if window.len() >= n => {
                self.reader.consume(n);
                Ok(())
            }
            _ => Err(QueueError::NotInRing {
                asked: self.reader.items_read() + n as u64,
                oldest: self.reader.items_read(),
                newest: self.reader.items_written(),
            }),
        }
    }
}

/// A type-erased output, as the scheduler holds it.
pub(crate) trait ErasedOutput: AnyPort {
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
    /// Whether the output's queue copies wrapped windows ([`sluice_queue::Flavor::Copying`]):
    /// the same graph then moves its items at another cost.
    fn copying(&self) -> bool {
        false
    }
    /// Messages a message output dropped, by connection (stream outputs drop none).
    fn messages_dropped(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// What the messages a message output sent weigh, in bytes (as an inbox counts them:
    /// their numbers, text and vectors); 0 for a stream output.
    fn message_bytes_sent(&self) -> u64 {
        0
    }
    /// A handle that attaches taps (lossy readers) to this output's queue from any thread;
    /// `None` for an output that has no queue of items (a message output).
    fn tap_point(&self) -> Option<std::sync::Arc<dyn crate::tap::ErasedPoint>> {
        None
    }
    /// A handle that attaches lossless readers to this output's queue from any thread; `None`
    /// for a message output.
    fn reader_point(&self) -> Option<Arc<dyn crate::live::ErasedReaderPoint>> {
        None
    }
}

impl<T: Item> AnyPort for Output<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl<T: Item> ErasedOutput for Output<T> {
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
    fn tap_point(&self) -> Option<std::sync::Arc<dyn crate::tap::ErasedPoint>> {
        Some(std::sync::Arc::new(self.writer.tap_point()))
    }
    fn reader_point(&self) -> Option<Arc<dyn crate::live::ErasedReaderPoint>> {
        Some(Arc::new((
            self.writer.reader_point(),
            Arc::clone(&self.queue),
        )))
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
    fn copying(&self) -> bool {
        self.writer.flavor() == sluice_queue::Flavor::Copying
    }
}

/// A node's inputs during one `work` call.
///
/// Each method lends typed [`Input`]s for as long as the `Inputs` is borrowed: one by index
/// ([`Inputs::get`]) or by handle ([`Inputs::port`]), several at once by index
/// ([`Inputs::get_many`]) or handle ([`Inputs::ports`]), or all of them ([`Inputs::all`]), so
/// that a node can hold windows of several inputs together, all straight in queue memory.
pub struct Inputs<'a>(Lent<'a, dyn ErasedInput>);

/// A node's outputs during one `work` call; lends typed [`Output`]s as [`Inputs`] lends inputs.
pub struct Outputs<'a>(Lent<'a, dyn ErasedOutput>);

/// Everything a node works with in one call. Inputs and outputs are separate fields so that a
/// node can hold windows and reservations at once:
///
/// ```ignore
/// let [a, b] = io.inputs.ports([self.a, self.b])?;
/// let out = io.outputs.port(self.out);
/// // windows of `a` and `b` and a reservation of `out`, together
/// ```
pub struct WorkIo<'a> {
    /// The node's inputs, by declared index.
    pub inputs: Inputs<'a>,
    /// The node's outputs, by declared index.
    pub outputs: Outputs<'a>,
    stop: StopView<'a>,
}

impl<'a> WorkIo<'a> {
    pub(crate) fn new(
        inputs: &'a mut [Box<dyn ErasedInput>],
        input_specs: &'a [crate::PortSpec],
        outputs: &'a mut [Box<dyn ErasedOutput>],
        output_specs: &'a [crate::PortSpec],
        stop: StopView<'a>,
    ) -> Self {
        WorkIo {
            stop,
            inputs: Inputs(Lent {
                ports: inputs,
                specs: input_specs,
                kind: "input",
            }),
            outputs: Outputs(Lent {
                ports: outputs,
                specs: output_specs,
                kind: "output",
            }),
        }
    }
}

impl WorkIo<'_> {
    /// Whether the graph is stopping: a [`StopHandle`](crate::StopHandle) asked for a graceful
    /// stop, or another node failed. Cheap (two atomic loads): a node that waits inside `work`
    /// (on a socket, a device) should look at it at least every few tens of milliseconds and
    /// return when it is set; a source then returns [`Work::Done`](crate::Work::Done) (the
    /// runtime would end it anyway), while other nodes usually go on draining what they get.
    #[inline]
    pub fn stop_requested(&self) -> bool {
        self.stop.is_set()
    }
}

/// One side's ports (inputs or outputs) with their declarations; the typed lending shared by
/// [`Inputs`] and [`Outputs`]. `P` below is `Input<T>` or `Output<T>`.
struct Lent<'a, E: ?Sized> {
    ports: &'a mut [Box<E>],
    specs: &'a [crate::PortSpec],
    kind: &'static str,
}

impl<E: AnyPort + ?Sized> Lent<'_, E> {
    /// Why port `index` is not a `P` carrying `item`, if it is not.
    fn check<P: 'static>(&self, index: usize, item: &'static str) -> Result<(), NodeError> {
        match (self.ports.get(index), self.specs.get(index)) {
            (Some(port), _) if port.as_any().is::<P>() => Ok(()),
            (_, Some(spec)) => Err(NodeError::WrongType {
                port: spec.name.clone(),
                declared: spec.item.name(),
                requested: item,
            }),
            (_, None) => Err(NodeError::NoSuchPort {
                kind: self.kind,
                index,
            }),
        }
    }

    fn one<P: 'static>(&mut self, index: usize, item: &'static str) -> Result<&mut P, NodeError> {
        self.check::<P>(index, item)?;
        Ok(downcast(&mut self.ports[index]))
    }

    fn many<P: 'static, const N: usize>(
        &mut self,
        indices: [usize; N],
        item: &'static str,
    ) -> Result<[&mut P; N], NodeError> {
        for index in indices {
            self.check::<P>(index, item)?;
        }
        match self.ports.get_disjoint_mut(indices) {
            Ok(ports) => Ok(ports.map(|port| downcast(port))),
            Err(GetDisjointMutError::OverlappingIndices) => {
                let twice = (1..N)
                    .find(|&k| indices[..k].contains(&indices[k]))
                    .map_or(0, |k| indices[k]);
                Err(NodeError::RepeatedPort {
                    kind: self.kind,
                    port: self.specs[twice].name.clone(),
                })
            }
            // Every index was checked above.
            Err(GetDisjointMutError::IndexOutOfBounds) => Err(NodeError::NoSuchPort {
                kind: self.kind,
                index: indices.into_iter().max().unwrap_or(0),
            }),
        }
    }

    fn all<P: 'static>(
        &mut self,
        item: &'static str,
    ) -> Result<impl ExactSizeIterator<Item = &mut P> + '_, NodeError> {
        for index in 0..self.ports.len() {
            self.check::<P>(index, item)?;
        }
        Ok(self.ports.iter_mut().map(|port| downcast(port)))
    }

    /// Port `index` as the `P` a handle promises; a handle from another declaration panics.
    fn handle<P: 'static>(&mut self, index: usize, handle: &dyn std::fmt::Debug) -> &mut P {
        let kind = self.kind;
        match self.ports.get_mut(index) {
            Some(port) if port.as_any().is::<P>() => downcast(port),
            _ => panic!(
                "{handle:?} is not one of this node's {kind}s (declared: {}): a handle must come \
                 from the Ports that the node's ports() returns",
                port_list(self.specs)
            ),
        }
    }
}

/// `port` as the `P` it was checked to be.
fn downcast<P: 'static, E: AnyPort + ?Sized>(port: &mut Box<E>) -> &mut P {
    match port.as_any_mut().downcast_mut::<P>() {
        Some(port) => port,
        None => unreachable!("the port's type was checked before it was lent"),
    }
}

fn port_list(specs: &[crate::PortSpec]) -> String {
    let names: Vec<String> = specs
        .iter()
        .map(|s| format!("{}: {}", s.name, s.item.name()))
        .collect();
    names.join(", ")
}

impl Inputs<'_> {
    /// Message input `index` (see [`crate::message`]).
    pub fn message(&mut self, index: usize) -> Result<&mut crate::MessageInput, NodeError> {
        self.0.one::<crate::MessageInput>(index, "message")
    }

    /// Input `index` as carrying `T` (the type it declared).
    #[inline]
    pub fn get<T: Item>(&mut self, index: usize) -> Result<&mut Input<T>, NodeError> {
        self.0.one::<Input<T>>(index, std::any::type_name::<T>())
    }

    /// Inputs `indices`, all carrying `T`, lent together: a node can hold a window of each at
    /// once. An index given twice is [`NodeError::RepeatedPort`]; a wrong type or index is
    /// the error [`Inputs::get`] gives.
    ///
    /// ```ignore
    /// let [a, b] = io.inputs.get_many::<f32, 2>([0, 1])?;
    /// let (Some(x), Some(y)) = (a.window(1)?, b.window(1)?) else { ... };
    /// ```
    #[inline]
    pub fn get_many<T: Item, const N: usize>(
        &mut self,
        indices: [usize; N],
    ) -> Result<[&mut Input<T>; N], NodeError> {
        self.0
            .many::<Input<T>, N>(indices, std::any::type_name::<T>())
    }

    /// Every input, in index order, all carrying `T`, lent together (for a number of inputs
    /// chosen at run time, e.g. an N-input sum). Allocates nothing; `.collect()` the iterator
    /// to index it. Fails, before lending any, if some input does not carry `T`.
    #[inline]
    pub fn all<T: Item>(
        &mut self,
    ) -> Result<impl ExactSizeIterator<Item = &mut Input<T>> + '_, NodeError> {
        self.0.all::<Input<T>>(std::any::type_name::<T>())
    }

    /// The input a typed handle names. Its type is the one the port was declared with, so
    /// this cannot fail for the node's own handles; a handle from another declaration is a
    /// programming error and panics naming the node's inputs.
    #[inline]
    pub fn port<T: Item>(&mut self, port: InPort<T>) -> &mut Input<T> {
        self.0.handle::<Input<T>>(port.index(), &port)
    }

    /// The inputs several typed handles name, lent together (see [`Inputs::port`]). A handle
    /// given twice is [`NodeError::RepeatedPort`].
    #[inline]
    pub fn ports<T: Item, const N: usize>(
        &mut self,
        ports: [InPort<T>; N],
    ) -> Result<[&mut Input<T>; N], NodeError> {
        for port in ports {
            self.port(port); // panics on a handle from another declaration
        }
        self.get_many(ports.map(InPort::index))
    }

    /// Number of inputs.
    pub fn len(&self) -> usize {
        self.0.ports.len()
    }

    /// Whether the node has no inputs.
    pub fn is_empty(&self) -> bool {
        self.0.ports.is_empty()
    }
}

impl Outputs<'_> {
    /// Message output `index` (see [`crate::message`]).
    pub fn message(&mut self, index: usize) -> Result<&mut crate::MessageOutput, NodeError> {
        self.0.one::<crate::MessageOutput>(index, "message")
    }

    /// Output `index` as carrying `T` (the type it declared).
    #[inline]
    pub fn get<T: Item>(&mut self, index: usize) -> Result<&mut Output<T>, NodeError> {
        self.0.one::<Output<T>>(index, std::any::type_name::<T>())
    }

    /// Outputs `indices`, all carrying `T`, lent together: a node can hold a reservation on
    /// each at once. Errors as [`Inputs::get_many`].
    #[inline]
    pub fn get_many<T: Item, const N: usize>(
        &mut self,
        indices: [usize; N],
    ) -> Result<[&mut Output<T>; N], NodeError> {
        self.0
            .many::<Output<T>, N>(indices, std::any::type_name::<T>())
    }

    /// Every output, in index order, all carrying `T`, lent together; see [`Inputs::all`].
    #[inline]
    pub fn all<T: Item>(
        &mut self,
    ) -> Result<impl ExactSizeIterator<Item = &mut Output<T>> + '_, NodeError> {
        self.0.all::<Output<T>>(std::any::type_name::<T>())
    }

    /// The output a typed handle names; see [`Inputs::port`].
    #[inline]
    pub fn port<T: Item>(&mut self, port: OutPort<T>) -> &mut Output<T> {
        self.0.handle::<Output<T>>(port.index(), &port)
    }

    /// The outputs several typed handles name, lent together; see [`Inputs::ports`].
    #[inline]
    pub fn ports<T: Item, const N: usize>(
        &mut self,
        ports: [OutPort<T>; N],
    ) -> Result<[&mut Output<T>; N], NodeError> {
        for port in ports {
            self.port(port); // panics on a handle from another declaration
        }
        self.get_many(ports.map(OutPort::index))
    }

    /// Number of outputs.
    pub fn len(&self) -> usize {
        self.0.ports.len()
    }

    /// Whether the node has no outputs.
    pub fn is_empty(&self) -> bool {
        self.0.ports.is_empty()
    }
}
