//! Streaming reads of a running graph: a tap node on an output lends each window of the queue
//! to Python as a read-only numpy view (no copy), and consumes it only when Python asks for the
//! next one. The view's base holds the queue's memory guard, so the mapping outlives the graph
//! if a view is kept; the items it shows are only guaranteed until the next iteration.

use crate::dtype::{with_dtype, Dtype};
use crate::values::tag_tuple;
use crate::view::view;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use sluice_runtime::{Item, MemoryGuard, Node, NodeError, Ports, Tag, Work, WorkIo};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// One window lent to the reader.
struct Lent {
    address: usize,
    items: usize,
    tags: Vec<Tag>,
    guard: Option<MemoryGuard>,
    queue: std::ops::Range<usize>,
}

#[derive(Default)]
struct State {
    /// Items per chunk the reader asked for; `None` until it starts reading.
    want: Option<usize>,
    /// The window lent now, until the reader releases it.
    lent: Option<Lent>,
    /// The reader has taken the lent window (and will release it when it asks for more).
    taken: bool,
    /// The reader has gone: consume everything.
    reader_gone: bool,
    /// The stream ended (or the graph stops): no more windows.
    ended: bool,
}

/// What the tap node and the reader share.
#[derive(Default)]
pub struct TapShared {
    state: Mutex<State>,
    changed: Condvar,
}

impl TapShared {
    /// Tells the reader that no more windows will come (the run is over).
    pub fn end(&self) {
        let mut s = self.lock();
        s.ended = true;
        s.lent = None;
        self.changed.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The tap node: an input that lends its windows to a reader.
pub struct TapNode {
    pub dtype: Dtype,
    pub vlen: usize,
    /// The largest chunk a reader may ask for (the queue is at least twice this).
    pub max_items: usize,
    pub shared: Arc<TapShared>,
}

/// How long the tap sleeps between looks at the graph's stop flag.
const SLICE: Duration = Duration::from_millis(20);

impl TapNode {
    fn lend<T: Item>(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let stop = io.stop_requested();
        let input = io.inputs.get::<T>(0)?;
        // Wait until the reader asks (or leaves).
        let want = {
            let mut s = self.shared.lock();
            loop {
                if s.reader_gone {
                    break None;
                }
                if let Some(w) = s.want {
                    break Some(w);
                }
                if stop {
                    s.ended = true;
                    self.shared.changed.notify_all();
                    return Ok(Work::Done);
                }
                s = self
                    .shared
                    .changed
                    .wait_timeout(s, SLICE)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                if !s.reader_gone && s.want.is_none() {
                    // Let the scheduler look at the stop flag between slices.
                    return Ok(Work::Progress);
                }
            }
        };
        let Some(want) = want else {
            return Ok(Work::Done); // nobody reads: detach, the writer stops waiting
        };
        let start = input.items_read();
        let Some(w) = input.window(want)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: want,
            });
        };
        let mut n = w.len().min(want);
        n -= n % self.vlen;
        if n == 0 {
            let mut s = self.shared.lock();
            s.ended = true;
            self.shared.changed.notify_all();
            return Ok(Work::Done);
        }
        let address = w.as_ptr() as usize;
        let mut tags = Vec::new();
        input.take_tags(start + n as u64, &mut tags);
        let guard = Some(input.memory_guard());
        let queue = input.queue_memory();
        {
            let mut s = self.shared.lock();
            s.lent = Some(Lent {
                address,
                items: n,
                tags,
                guard,
                queue,
            });
            s.taken = false;
            self.shared.changed.notify_all();
            // Wait until the reader asks for the next window (or leaves).
            while s.lent.is_some() && !s.reader_gone {
                s = self
                    .shared
                    .changed
                    .wait_timeout(s, SLICE)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            s.lent = None;
        }
        input.consume(n);
        Ok(Work::Progress)
    }
}

impl Node for TapNode {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        with_dtype!(self.dtype, T => {
            ports.add_input_vectors::<T>("in", self.vlen, self.max_items);
        });
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        with_dtype!(self.dtype, T => self.lend::<T>(io))
    }

    fn stop(&mut self) {
        let mut s = self.shared.lock();
        s.ended = true;
        s.lent = None;
        self.shared.changed.notify_all();
    }
}

/// Iterates over the windows of a tapped output: each item is `(array, tags)`, `array` a
/// read-only numpy view of the queue's memory (no copy) and `tags` the stream tags in it as
/// `(index, key, value)` with absolute indices. A window is released (and its items may be
/// overwritten) when the next one is asked for; copy an array to keep its values.
#[pyclass(module = "sluice", name = "Reader")]
pub struct Reader {
    shared: Arc<TapShared>,
    dtype: Dtype,
    vlen: usize,
    port: String,
}

impl Reader {
    pub fn new(
        shared: Arc<TapShared>,
        dtype: Dtype,
        vlen: usize,
        max_items: usize,
        items: usize,
        port: &str,
    ) -> PyResult<Self> {
        if items == 0 || items > max_items || !items.is_multiple_of(vlen.max(1)) {
            return Err(PyValueError::new_err(format!(
                "read('{port}', items={items}): items must be 1 to {max_items} (the tap's \
                 max_items) and whole vectors of {vlen}"
            )));
        }
        let mut s = shared.lock();
        if s.want.is_some() {
            return Err(PyValueError::new_err(format!(
                "'{port}' is already being read (one reader per tap)"
            )));
        }
        s.want = Some(items);
        shared.changed.notify_all();
        drop(s);
        Ok(Reader {
            shared,
            dtype,
            vlen,
            port: port.to_string(),
        })
    }
}

#[pymethods]
impl Reader {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let shared = Arc::clone(&self.shared);
        // Release the window taken last time, then wait for the next, without the GIL.
        let next = py.detach(move || {
            let mut s = shared.lock();
            if s.taken {
                s.lent = None;
                s.taken = false;
                shared.changed.notify_all();
            }
            loop {
                let taken = s.taken;
                if let Some(l) = s.lent.as_mut().filter(|_| !taken) {
                    let out = (
                        l.address,
                        l.items,
                        std::mem::take(&mut l.tags),
                        l.guard.take(),
                        l.queue.clone(),
                    );
                    s.taken = true;
                    return Some(out);
                }
                if s.ended {
                    return None;
                }
                s = shared
                    .changed
                    .wait_timeout(s, SLICE)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        });
        // Ctrl-C while iterating stops the iteration.
        py.check_signals()?;
        let Some((address, items, tags, guard, queue)) = next else {
            return Ok(None);
        };
        let array = view(
            py,
            address,
            items,
            self.dtype,
            self.vlen,
            true,
            guard,
            Some(queue),
        )?;
        let tags: PyResult<Vec<_>> = tags.iter().map(|t| tag_tuple(py, t)).collect();
        Ok(Some(PyTuple::new(
            py,
            [array, PyList::new(py, tags?)?.into_any()],
        )?))
    }

    /// The output this reader reads (`node.port`).
    #[getter]
    fn port(&self) -> &str {
        &self.port
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let mut s = self.shared.lock();
        s.reader_gone = true;
        s.lent = None;
        self.shared.changed.notify_all();
    }
}
