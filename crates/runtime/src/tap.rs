//! Taps: lossy readers attached to any edge of a running graph, for live views.
//!
//! A [`Monitor`] given to [`RunOptions::monitor`](crate::RunOptions::monitor) fills in when the
//! run starts with one [`TapPoint`] per node output (an edge, whatever reads it). Any thread may
//! then [`TapPoint::attach`] a [`Tap`] and drop it again while the graph runs. A tap is a lossy
//! reader of the edge's queue (`sluice-queue`'s contract, "Lossy readers"): the node writing the
//! edge never waits for it, a tap that falls behind skips (and counts) items, and it copies
//! items out, so the graph's output is the same with or without taps.

use crate::port::ItemType;
use sluice_queue::{Item, LossyReader, TapRead};
use std::any::Any;
use std::sync::{Arc, OnceLock};

/// The type-erased tap point of one queue.
pub(crate) trait ErasedPoint: Send + Sync {
    fn attach(&self) -> Box<dyn ErasedLossy>;
    fn fill(&self) -> usize;
    fn capacity(&self) -> usize;
    fn items_written(&self) -> u64;
    fn taps(&self) -> usize;
}

/// The type-erased lossy reader of one queue.
pub(crate) trait ErasedLossy: Send {
    /// Reads into `out`, a `Vec<T>` of the queue's item type (its whole length), or `None`
    /// when `out` is of another type.
    fn read(&mut self, out: &mut dyn Any, latest: bool) -> Option<TapRead>;
    fn skipped(&self) -> u64;
}

impl<T: Item> ErasedPoint for sluice_queue::TapPoint<T> {
    fn attach(&self) -> Box<dyn ErasedLossy> {
        Box::new(sluice_queue::TapPoint::attach(self))
    }
    fn fill(&self) -> usize {
        sluice_queue::TapPoint::fill(self)
    }
    fn capacity(&self) -> usize {
        sluice_queue::TapPoint::capacity(self)
    }
    fn items_written(&self) -> u64 {
        sluice_queue::TapPoint::items_written(self)
    }
    fn taps(&self) -> usize {
        self.lossy_readers()
    }
}

impl<T: Item> ErasedLossy for LossyReader<T> {
    fn read(&mut self, out: &mut dyn Any, latest: bool) -> Option<TapRead> {
        let out = out.downcast_mut::<Vec<T>>()?;
        Some(if latest {
            self.read_latest(out)
        } else {
            LossyReader::read(self, out)
        })
    }
    fn skipped(&self) -> u64 {
        LossyReader::skipped(self)
    }
}

/// One edge of a running graph: a node's output port and the inputs it feeds.
#[derive(Clone)]
pub struct TapPoint {
    /// The writing node's name.
    pub node: String,
    /// The output port's name.
    pub port: String,
    /// The items on the edge.
    pub item: ItemType,
    /// The (node, input port) pairs that read the edge.
    pub readers: Vec<(String, String)>,
    inner: Arc<dyn ErasedPoint>,
}

impl std::fmt::Debug for TapPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TapPoint({}.{}: {})",
            self.node,
            self.port,
            self.item.name()
        )
    }
}

impl TapPoint {
    pub(crate) fn new(
        node: String,
        port: String,
        item: ItemType,
        readers: Vec<(String, String)>,
        inner: Arc<dyn ErasedPoint>,
    ) -> Self {
        TapPoint {
            node,
            port,
            item,
            readers,
            inner,
        }
    }

    /// Attaches a tap that sees the items written from now on (as many as it keeps up with).
    /// Dropping the tap detaches it.
    pub fn attach(&self) -> Tap {
        Tap {
            item: self.item,
            inner: self.inner.attach(),
        }
    }

    /// Items written and not yet read by the slowest of the edge's readers.
    pub fn fill(&self) -> usize {
        self.inner.fill()
    }

    /// The edge's queue capacity in items.
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// Items written to the edge so far.
    pub fn items_written(&self) -> u64 {
        self.inner.items_written()
    }

    /// Taps attached to the edge now.
    pub fn taps(&self) -> usize {
        self.inner.taps()
    }

    /// `node.port`, as graph files and messages name an output.
    pub fn label(&self) -> String {
        format!("{}.{}", self.node, self.port)
    }
}

/// Why a tap could not read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the tap reads {edge_type} items, not {asked}")]
pub struct TapTypeError {
    /// The edge's item type.
    pub edge_type: &'static str,
    /// The type asked for.
    pub asked: &'static str,
}

/// A lossy reader on one edge of a running graph (see the module docs).
pub struct Tap {
    item: ItemType,
    inner: Box<dyn ErasedLossy>,
}

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tap({})", self.item.name())
    }
}

impl Tap {
    /// The edge's item type.
    pub fn item(&self) -> ItemType {
        self.item
    }

    /// Copies the oldest unread items (at most `out.len()`) to the start of `out`; see
    /// `sluice_queue::LossyReader::read`. `T` must be the edge's item type.
    pub fn read<T: Item>(&mut self, out: &mut Vec<T>) -> Result<TapRead, TapTypeError> {
        self.read_as(out, false)
    }

    /// Copies the newest items (at most `out.len()`) to the start of `out`, skipping older
    /// ones. `T` must be the edge's item type.
    pub fn read_latest<T: Item>(&mut self, out: &mut Vec<T>) -> Result<TapRead, TapTypeError> {
        self.read_as(out, true)
    }

    // A `Vec` because the type-erased reader downcasts `&mut dyn Any`, and a slice is unsized.
    #[allow(clippy::ptr_arg)]
    fn read_as<T: Item>(
        &mut self,
        out: &mut Vec<T>,
        latest: bool,
    ) -> Result<TapRead, TapTypeError> {
        self.inner.read(out, latest).ok_or(TapTypeError {
            edge_type: self.item.name(),
            asked: ItemType::of::<T>().name(),
        })
    }

    /// Items skipped since the tap was attached.
    pub fn skipped(&self) -> u64 {
        self.inner.skipped()
    }
}

/// The edges of a running graph, for taps; see the module docs. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Monitor(Arc<OnceLock<Vec<TapPoint>>>);

impl Monitor {
    /// A view that fills in when a run using it starts.
    pub fn new() -> Self {
        Monitor::default()
    }

    /// Every edge of the run, by writing node and port in the order the nodes were added;
    /// empty before the run started.
    pub fn edges(&self) -> &[TapPoint] {
        self.0.get().map_or(&[], Vec::as_slice)
    }

    /// The edge written by output `port` of `node`.
    pub fn edge(&self, node: &str, port: &str) -> Option<&TapPoint> {
        self.edges()
            .iter()
            .find(|e| e.node == node && e.port == port)
    }

    /// Registers the run's edges (once; a second run with the same view is not tracked).
    pub(crate) fn attach(&self, nodes: &[crate::graph::BuiltNode]) {
        let mut points = Vec::new();
        for (ni, n) in nodes.iter().enumerate() {
            for (pi, out) in n.outputs.iter().enumerate() {
                // Message outputs carry no items to tap.
                let Some(point) = out.tap_point() else {
                    continue;
                };
                let mut readers = Vec::new();
                for &peer in &n.output_peers[pi] {
                    let p = &nodes[peer];
                    for (ii, &from) in p.input_peers.iter().enumerate() {
                        if from == ni {
                            let entry = (p.name.clone(), p.ports.inputs[ii].name.clone());
                            if !readers.contains(&entry) {
                                readers.push(entry);
                            }
                        }
                    }
                }
                points.push(TapPoint::new(
                    n.name.clone(),
                    n.ports.outputs[pi].name.clone(),
                    n.ports.outputs[pi].item,
                    readers,
                    point,
                ));
            }
        }
        let _ = self.0.set(points);
    }
}
