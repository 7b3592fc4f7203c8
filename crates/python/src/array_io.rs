//! numpy in and out of a graph: `ArraySource` streams an array (or an iterator of arrays) into
//! a graph, `ArraySink` collects a stream into an array. The source copies each chunk once,
//! into the queue's free space (a queue is where items live); the sink copies each window once,
//! into the array it grows.

use crate::dtype::{with_dtype, Dtype};
use crate::errors::{raise, GraphError, ItemTypeError};
use crate::values::{tag_tuple, to_tag};
use crate::view::contiguous;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use sluice_runtime::{Item, Node, NodeError, Ports, Tag, Work, WorkIo};
use std::sync::{Arc, Mutex, PoisonError};

/// Where a source's items come from.
enum Data {
    /// One contiguous array: its address and length in items, kept alive by `array`.
    Array {
        /// Held so that `address` stays valid.
        _array: Py<PyAny>,
        address: usize,
        items: usize,
    },
    /// An iterator of arrays; the current one as above, and how far it was sent.
    Iter {
        iter: Py<PyAny>,
        current: Option<(Py<PyAny>, usize, usize)>,
    },
}

/// What an `ArraySource` becomes when added to a graph.
pub struct SourceSpec {
    dtype: Dtype,
    vlen: usize,
    data: Data,
    tags: Vec<(u64, String, sluice_runtime::TagValue)>,
}

/// A source node streaming numpy data.
pub struct SourceNode {
    spec: SourceSpec,
    /// Items of the current array already sent.
    pos: usize,
}

impl SourceNode {
    pub fn new(spec: SourceSpec) -> Self {
        SourceNode { spec, pos: 0 }
    }

    /// The current array's address and length, fetching the next one from an iterator (with
    /// the GIL) when the current one is used up; `None` at the end.
    fn current(&mut self) -> Result<Option<(usize, usize)>, NodeError> {
        let dtype = self.spec.dtype;
        match &mut self.spec.data {
            Data::Array { address, items, .. } => {
                Ok((self.pos < *items).then_some((*address, *items)))
            }
            Data::Iter { iter, current } => {
                if let Some((_, address, items)) = current {
                    if self.pos < *items {
                        return Ok(Some((*address, *items)));
                    }
                }
                *current = None;
                self.pos = 0;
                Python::attach(|py| -> PyResult<()> {
                    let it = iter.bind(py);
                    loop {
                        match it.call_method0("__next__") {
                            Ok(next) => {
                                let (array, address, items) = contiguous(&next, dtype)?;
                                if items > 0 {
                                    *current = Some((array.unbind(), address, items));
                                    return Ok(());
                                }
                            }
                            Err(e) if e.is_instance_of::<pyo3::exceptions::PyStopIteration>(py) => {
                                return Ok(())
                            }
                            Err(e) => return Err(e),
                        }
                    }
                })
                .map_err(|e| NodeError::msg(crate::pyblock::describe_py_error(&e)))?;
                Ok(current.as_ref().map(|(_, a, n)| (*a, *n)))
            }
        }
    }

    fn send<T: Item>(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let vlen = self.spec.vlen;
        let Some((address, items)) = self.current()? else {
            return Ok(Work::Done);
        };
        let out = io.outputs.get::<T>(0)?;
        let first = out.items_written();
        let Some(space) = out.reserve(vlen)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: vlen,
            });
        };
        let mut n = space.len().min(items - self.pos);
        n -= n % vlen;
        // SAFETY: `address` is the first item of a C-contiguous array of `items` items of `T`
        // (numpy made it so in `contiguous`), kept alive by the reference this node holds;
        // `pos + n <= items`. The caller of ArraySource promises not to modify the array while
        // the graph runs (its docs say so).
        let chunk = unsafe { std::slice::from_raw_parts((address as *const T).add(self.pos), n) };
        space[..n].copy_from_slice(chunk);
        for (index, key, value) in &self.spec.tags {
            if (first..first + n as u64).contains(index) {
                out.add_tag(*index, key, value.clone());
            }
        }
        out.commit(n);
        self.pos += n;
        Ok(Work::Progress)
    }
}

impl Node for SourceNode {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        with_dtype!(self.spec.dtype, T => {
            ports.add_output_vectors::<T>("out", self.spec.vlen, self.spec.vlen);
        });
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        with_dtype!(self.spec.dtype, T => self.send::<T>(io))
    }

    fn length(&self) -> Option<u64> {
        match &self.spec.data {
            Data::Array { items, .. } => Some(*items as u64),
            Data::Iter { .. } => None,
        }
    }
}

/// Streams a numpy array, or an iterator of arrays, into a graph.
///
/// `ArraySource(data, dtype=None, vlen=1, tags=None)`: `data` is an array (any shape; its items
/// are sent in C order) or an iterable of arrays sent one after another; `dtype` (complex64,
/// float32, int16 or uint8, or sluice's c32, f32, i16, u8) defaults to the array's own;
/// `vlen > 1` makes the output carry vectors of that many items; `tags` is a list of
/// `(index, key, value)` put on the stream at those absolute item indices. Add it to a graph
/// with `Graph.add`. The array must not be modified while the graph runs (it is read in place).
#[pyclass(module = "sluice", name = "ArraySource")]
pub struct ArraySource {
    spec: Mutex<Option<SourceSpec>>,
    dtype: Dtype,
}

#[pymethods]
impl ArraySource {
    #[new]
    #[pyo3(signature = (data, dtype=None, vlen=1, tags=None))]
    fn new(
        data: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        vlen: usize,
        tags: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let py = data.py();
        let is_array = data.hasattr("__array_interface__")?;
        let dtype = match dtype {
            Some(d) => Dtype::extract(d)?,
            None if is_array => Dtype::extract(&data.getattr("dtype")?)?,
            None => {
                return Err(raise::<ItemTypeError>(
                    "ArraySource: give a dtype for an iterator of arrays".into(),
                    None,
                    None,
                    None,
                ))
            }
        };
        let vlen = vlen.max(1);
        let data = if is_array {
            let (array, address, items) = contiguous(data, dtype)?;
            if !items.is_multiple_of(vlen) {
                return Err(raise::<ItemTypeError>(
                    format!("ArraySource: {items} items are not whole vectors of {vlen}"),
                    None,
                    None,
                    None,
                ));
            }
            Data::Array {
                _array: array.unbind(),
                address,
                items,
            }
        } else {
            Data::Iter {
                iter: data.try_iter()?.into_any().unbind(),
                current: None,
            }
        };
        let mut list = Vec::new();
        if let Some(tags) = tags {
            for t in tags.try_iter()? {
                let (index, key, value): (u64, String, Bound<'_, PyAny>) = t?.extract()?;
                list.push((index, key, to_tag(&value)?));
            }
        }
        let _ = py;
        Ok(ArraySource {
            spec: Mutex::new(Some(SourceSpec {
                dtype,
                vlen,
                data,
                tags: list,
            })),
            dtype,
        })
    }

    /// The item type it sends (sluice's name: c32, f32, i16 or u8).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }
}

impl ArraySource {
    /// Whether it reads an iterator (which takes the GIL in `work`).
    pub fn is_iterator(&self) -> bool {
        let spec = self.spec.lock().unwrap_or_else(PoisonError::into_inner);
        matches!(spec.as_ref().map(|s| &s.data), Some(Data::Iter { .. }))
    }

    /// Its node, once: a source is added to one graph.
    pub fn take_node(&self) -> PyResult<SourceNode> {
        let spec = self
            .spec
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| {
                raise::<GraphError>(
                    "this ArraySource was already added to a graph (make one per graph)".into(),
                    None,
                    None,
                    None,
                )
            })?;
        Ok(SourceNode::new(spec))
    }
}

/// What a sink collected.
#[derive(Default)]
pub struct Collected {
    bytes: Vec<u8>,
    tags: Vec<Tag>,
}

/// The node of an `ArraySink`.
pub struct SinkNode {
    dtype: Dtype,
    vlen: usize,
    into: Arc<Mutex<Collected>>,
    tags: Vec<Tag>,
}

impl SinkNode {
    fn take<T: Item>(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        let start = input.items_read();
        let Some(w) = input.window(self.vlen)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: self.vlen,
            });
        };
        let n = w.len() - w.len() % self.vlen;
        if n == 0 {
            return Ok(Work::Done);
        }
        let bytes: &[u8] = bytemuck::cast_slice(&w[..n]);
        let mut into = self.into.lock().unwrap_or_else(PoisonError::into_inner);
        into.bytes.extend_from_slice(bytes);
        self.tags.clear();
        input.take_tags(start + n as u64, &mut self.tags);
        into.tags.append(&mut self.tags);
        drop(into);
        input.consume(n);
        Ok(Work::Progress)
    }
}

impl Node for SinkNode {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        with_dtype!(self.dtype, T => {
            ports.add_input_vectors::<T>("in", self.vlen, self.vlen);
        });
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        with_dtype!(self.dtype, T => self.take::<T>(io))
    }
}

/// Collects a stream into a numpy array.
///
/// `ArraySink(dtype, vlen=1)`: add it to a graph with `Graph.add` (or let `Graph.collect`
/// make one for an output); after the run, `data` is everything it received (shape
/// `(n, vlen)` when `vlen > 1`) and `tags` the stream's tags as `(index, key, value)`.
#[pyclass(module = "sluice", name = "ArraySink", frozen)]
pub struct ArraySink {
    dtype: Dtype,
    vlen: usize,
    collected: Arc<Mutex<Collected>>,
}

#[pymethods]
impl ArraySink {
    #[new]
    #[pyo3(signature = (dtype, vlen=1))]
    fn py_new(dtype: &Bound<'_, PyAny>, vlen: usize) -> PyResult<Self> {
        Ok(ArraySink::new(Dtype::extract(dtype)?, vlen))
    }

    /// Everything received so far, as a new numpy array of the sink's dtype.
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let bytes = {
            let c = self
                .collected
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            PyBytes::new(py, &c.bytes)
        };
        let np = py.import("numpy")?;
        // frombuffer over bytes is read-only; copy() gives the caller an array of its own.
        let array = np
            .getattr("frombuffer")?
            .call1((bytes, self.dtype.numpy()))?
            .call_method0("copy")?;
        if self.vlen > 1 {
            array.call_method1("reshape", ((-1i64, self.vlen as i64),))
        } else {
            Ok(array)
        }
    }

    /// The tags received, as `(index, key, value)` with absolute item indices.
    #[getter]
    fn tags<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let c = self
            .collected
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let items: PyResult<Vec<_>> = c.tags.iter().map(|t| tag_tuple(py, t)).collect();
        PyList::new(py, items?)
    }

    /// The item type it collects (c32, f32, i16 or u8).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    fn __len__(&self) -> usize {
        let c = self
            .collected
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        c.bytes.len() / self.dtype.size() / self.vlen
    }
}

impl ArraySink {
    /// A sink of `dtype` vectors of `vlen`.
    pub fn new(dtype: Dtype, vlen: usize) -> Self {
        ArraySink {
            dtype,
            vlen: vlen.max(1),
            collected: Arc::default(),
        }
    }

    /// A node that collects into this sink.
    pub fn node(&self) -> SinkNode {
        SinkNode {
            dtype: self.dtype,
            vlen: self.vlen,
            into: Arc::clone(&self.collected),
            tags: Vec::new(),
        }
    }
}
