//! Port declarations: names and item types, and the type-erased queue constructor each carries.

use crate::io::{ErasedInput, ErasedOutput, Input, Output};
use sluice_queue::{channel, Item, QueueError, QueueOptions};
use std::any::TypeId;
use std::marker::PhantomData;
use std::sync::Arc;

/// The two ends of a new queue, type-erased.
pub(crate) type QueueEnds = (Box<dyn ErasedOutput>, Box<dyn ErasedInput>);

/// Builds a queue of at least `capacity` items, labelled for error messages.
type MakeQueue = fn(usize, &QueueOptions, Arc<str>) -> Result<QueueEnds, QueueError>;

/// The item type a port carries, with what the runtime needs to build its queue.
#[derive(Clone, Copy)]
pub struct ItemType {
    id: TypeId,
    name: &'static str,
    size: usize,
    make: MakeQueue,
}

impl std::fmt::Debug for ItemType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for ItemType {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

fn make_queue<T: Item>(
    capacity: usize,
    opts: &QueueOptions,
    label: Arc<str>,
) -> Result<QueueEnds, QueueError> {
    let named = QueueOptions {
        name: Some(label.to_string()),
        ..opts.clone()
    };
    let (w, r) = channel::<T>(capacity, &named)?;
    Ok((
        Box::new(Output::new(w, label.clone())),
        Box::new(Input::new(r, label)),
    ))
}

impl ItemType {
    /// The item type `T`.
    pub fn of<T: Item>() -> Self {
        ItemType {
            id: TypeId::of::<T>(),
            name: short_type_name(std::any::type_name::<T>()),
            size: std::mem::size_of::<T>(),
            make: make_queue::<T>,
        }
    }

    /// The item type of message ports carrying `kind` (see [`crate::message`]), named as the
    /// kind is (`message`, `pdu`). Every message kind is the same item type; whether two kinds
    /// fit is checked by [`crate::message::MessageKind::feeds`].
    pub fn message(kind: crate::MessageKind) -> Self {
        ItemType {
            id: TypeId::of::<crate::message::MessageMarker>(),
            name: kind.name(),
            size: 1,
            make: crate::message::make_queue,
        }
    }

    /// Whether this is the item type of message ports.
    pub fn is_message(&self) -> bool {
        self.id == TypeId::of::<crate::message::MessageMarker>()
    }

    /// A short readable name, as graph files spell it: e.g. `f32` or `c32` (complex f32).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Bytes per item.
    pub fn size(&self) -> usize {
        self.size
    }

    pub(crate) fn make_queue(
        &self,
        capacity: usize,
        opts: &QueueOptions,
        label: Arc<str>,
    ) -> Result<QueueEnds, QueueError> {
        (self.make)(capacity, opts, label)
    }
}

/// The name users know a type by: graph files' names for the complex types (`c32`, `c64`), and
/// otherwise the type without its module path (`num_complex::Complex<i16>` → `Complex<i16>`).
fn short_type_name(full: &'static str) -> &'static str {
    match full {
        "num_complex::Complex<f32>" => return "c32",
        "num_complex::Complex<f64>" => return "c64",
        _ => {}
    }
    let generic_start = full.find('<').unwrap_or(full.len());
    match full[..generic_start].rfind("::") {
        Some(i) => &full[i + 2..],
        None => full,
    }
}

/// One declared port.
#[derive(Debug, Clone)]
pub struct PortSpec {
    /// The port's name, unique among the node's inputs (or outputs).
    pub name: String,
    /// Its item type.
    pub item: ItemType,
    /// The smallest queue (in items) the port works well with: the largest window or
    /// reservation its node asks for, times two so that one window can fill while another is
    /// processed. The graph sizes the queue to at least this.
    pub min_queue: usize,
    /// The queue size (in items) the node suggests for an output when the edge does not give
    /// one, in place of the graph's default (still at least `min_queue`); `None` takes the
    /// default. A node with hundreds of outputs that each get a little per call (a
    /// channelizer's channels) suggests small queues, so its memory stays near the caches.
    pub preferred_queue: Option<usize>,
    /// Items per vector: 1 for a plain stream; `n` when the port carries vectors of `n` items
    /// (an FFT frame, one sample of each of `n` channels), laid out one after another in the
    /// queue. Connected ports must agree on it; windows, reservations and item counts stay in
    /// items, and a node moves whole vectors.
    pub vlen: usize,
    /// `Some` for a message port (see [`crate::message`]): what it carries and, on an input,
    /// its inbox.
    pub message: Option<crate::message::MessageSpec>,
}

/// A typed handle on one of a node's input ports: its index and the item type it was declared
/// with. [`Ports::add_input`] hands it out when the node declares the port, so its `T` is the
/// declared type by construction; [`Inputs::port`](crate::Inputs::port) turns it into the
/// port's [`Input<T>`](crate::Input) with no type to get wrong. A node keeps its handles and
/// returns, from [`Node::ports`](crate::Node::ports), the declaration they came from.
pub struct InPort<T> {
    index: usize,
    _item: PhantomData<fn() -> T>,
}

/// A typed handle on one of a node's output ports; see [`InPort`]. [`Ports::add_output`] hands
/// it out, [`Outputs::port`](crate::Outputs::port) turns it into the port's
/// [`Output<T>`](crate::Output).
pub struct OutPort<T> {
    index: usize,
    _item: PhantomData<fn() -> T>,
}

impl<T> InPort<T> {
    /// The port's index among the node's declared inputs (what the index API and
    /// [`Work::NeedInput`](crate::Work::NeedInput) use).
    pub const fn index(self) -> usize {
        self.index
    }

    /// The outcome "cannot fire until this input holds `items` items":
    /// [`Work::NeedInput`](crate::Work::NeedInput) on this port.
    pub const fn need(self, items: usize) -> crate::Work {
        crate::Work::NeedInput {
            port: self.index,
            items,
        }
    }
}

// Handles are copied freely whatever `T` is, so these are written out rather than derived
// (a derive would ask `T: Copy`, `T: Debug`...).
impl<T> Clone for InPort<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for InPort<T> {}

impl<T> PartialEq for InPort<T> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}

impl<T> Eq for InPort<T> {}

impl<T> std::fmt::Debug for InPort<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let item = short_type_name(std::any::type_name::<T>());
        write!(f, "InPort<{item}>({})", self.index)
    }
}

impl<T> OutPort<T> {
    /// The port's index among the node's declared outputs (what the index API and
    /// [`Work::NeedOutput`](crate::Work::NeedOutput) use).
    pub const fn index(self) -> usize {
        self.index
    }

    /// The outcome "cannot fire until this output has room for `items` items":
    /// [`Work::NeedOutput`](crate::Work::NeedOutput) on this port.
    pub const fn need(self, items: usize) -> crate::Work {
        crate::Work::NeedOutput {
            port: self.index,
            items,
        }
    }
}

// Handles are copied freely whatever `T` is, so these are written out rather than derived
// (a derive would ask `T: Copy`, `T: Debug`...).
impl<T> Clone for OutPort<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for OutPort<T> {}

impl<T> PartialEq for OutPort<T> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}

impl<T> Eq for OutPort<T> {}

impl<T> std::fmt::Debug for OutPort<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let item = short_type_name(std::any::type_name::<T>());
        write!(f, "OutPort<{item}>({})", self.index)
    }
}

/// A node's declared inputs and outputs, in index order.
#[derive(Debug, Clone, Default)]
pub struct Ports {
    /// Input ports; index `i` is `io.inputs.get(i)`.
    pub inputs: Vec<PortSpec>,
    /// Output ports; index `i` is `io.outputs.get(i)`.
    pub outputs: Vec<PortSpec>,
}

impl Ports {
    /// No ports yet.
    pub fn new() -> Self {
        Ports::default()
    }

    /// Adds an input named `name` carrying `T`.
    pub fn input<T: Item>(self, name: &str) -> Self {
        self.input_window::<T>(name, 0)
    }

    /// Adds an input named `name` carrying `T` whose node asks for windows of up to `items`
    /// items; its queue gets room for at least two such windows.
    pub fn input_window<T: Item>(mut self, name: &str, items: usize) -> Self {
        self.add_input_window::<T>(name, items);
        self
    }

    /// Adds an output named `name` carrying `T`.
    pub fn output<T: Item>(self, name: &str) -> Self {
        self.output_window::<T>(name, 0)
    }

    /// Adds an output named `name` carrying `T` whose node reserves up to `items` items at a
    /// time; its queue gets room for at least two such reservations.
    pub fn output_window<T: Item>(mut self, name: &str, items: usize) -> Self {
        self.add_output_window::<T>(name, items);
        self
    }

    /// Adds an input named `name` carrying vectors of `vlen` items of `T` (see
    /// [`PortSpec::vlen`]) whose node asks for windows of up to `items` items, and returns its
    /// typed handle. `vlen` 0 is taken as 1.
    pub fn add_input_vectors<T: Item>(
        &mut self,
        name: &str,
        vlen: usize,
        items: usize,
    ) -> InPort<T> {
        let port = self.add_input_window(name, items);
        self.inputs[port.index].vlen = vlen.max(1);
        port
    }

    /// Adds an output named `name` carrying vectors of `vlen` items of `T` (see
    /// [`PortSpec::vlen`]) whose node reserves up to `items` items at a time, and returns its
    /// typed handle. `vlen` 0 is taken as 1.
    pub fn add_output_vectors<T: Item>(
        &mut self,
        name: &str,
        vlen: usize,
        items: usize,
    ) -> OutPort<T> {
        let port = self.add_output_window(name, items);
        self.outputs[port.index].vlen = vlen.max(1);
        port
    }

    /// Adds an input named `name` carrying `T` and returns its typed handle.
    pub fn add_input<T: Item>(&mut self, name: &str) -> InPort<T> {
        self.add_input_window(name, 0)
    }

    /// Adds an input like [`Ports::input_window`] and returns its typed handle.
    pub fn add_input_window<T: Item>(&mut self, name: &str, items: usize) -> InPort<T> {
        let index = self.inputs.len();
        self.inputs.push(PortSpec {
            name: name.to_string(),
            item: ItemType::of::<T>(),
            min_queue: items.saturating_mul(2),
            preferred_queue: None,
            vlen: 1,
            message: None,
        });
        InPort {
            index,
            _item: PhantomData,
        }
    }

    /// Adds an output named `name` carrying `T` and returns its typed handle.
    pub fn add_output<T: Item>(&mut self, name: &str) -> OutPort<T> {
        self.add_output_window(name, 0)
    }

    /// Adds an output like [`Ports::output_window`] and returns its typed handle.
    pub fn add_output_window<T: Item>(&mut self, name: &str, items: usize) -> OutPort<T> {
        let index = self.outputs.len();
        self.outputs.push(PortSpec {
            name: name.to_string(),
            item: ItemType::of::<T>(),
            min_queue: items.saturating_mul(2),
            preferred_queue: None,
            vlen: 1,
            message: None,
        });
        OutPort {
            index,
            _item: PhantomData,
        }
    }

    /// Suggests a queue of `items` items for `port` when its edge does not give one (see
    /// [`PortSpec::preferred_queue`]).
    pub fn prefer_output_queue<T>(&mut self, port: OutPort<T>, items: usize) {
        self.outputs[port.index].preferred_queue = Some(items.max(1));
    }

    /// Index of the input called `name`.
    pub fn input_index(&self, name: &str) -> Option<usize> {
        self.inputs.iter().position(|p| p.name == name)
    }

    /// Index of the output called `name`.
    pub fn output_index(&self, name: &str) -> Option<usize> {
        self.outputs.iter().position(|p| p.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_short() {
        assert_eq!(ItemType::of::<f32>().name(), "f32");
        assert_eq!(short_type_name("num_complex::Complex<f32>"), "c32");
        assert_eq!(short_type_name("num_complex::Complex<i16>"), "Complex<i16>");
        assert_eq!(ItemType::of::<[u8; 3]>().size(), 3);
    }

    #[test]
    fn handles_carry_the_declared_index() {
        let mut ports = Ports::new().input::<u8>("first");
        let a = ports.add_input::<f32>("a");
        let out = ports.add_output_window::<f32>("out", 64);
        assert_eq!((a.index(), out.index()), (1, 0));
        assert_eq!(ports.inputs[1].item, ItemType::of::<f32>());
        assert_eq!(ports.outputs[0].min_queue, 128);
        assert_eq!(format!("{a:?}"), "InPort<f32>(1)");
        assert_eq!(out.need(5), crate::Work::NeedOutput { port: 0, items: 5 });
        assert_eq!(ports.inputs[1].vlen, 1);
        let frames = ports.add_output_vectors::<f32>("frames", 1024, 2048);
        assert_eq!(ports.outputs[frames.index()].vlen, 1024);
        assert_eq!(ports.outputs[frames.index()].min_queue, 4096);
    }
}
