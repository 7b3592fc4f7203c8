//! numpy arrays over memory sluice owns (queue windows), without copying: an object exposing
//! numpy's array interface (`__array_interface__`, version 3) that `numpy.asarray` turns into a
//! view whose `base` is that object, so the object (and the queue mapping it holds) lives as
//! long as any view of it. This needs no numpy C API, so it works with the stable ABI (abi3).

use crate::dtype::Dtype;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use sluice_runtime::MemoryGuard;

/// The memory behind numpy views of a queue window: its address, shape and item type, and a
/// guard that keeps the queue's mapping alive while any view exists.
#[pyclass(module = "sluice", frozen)]
pub struct QueueMemory {
    address: usize,
    shape: Vec<usize>,
    dtype: Dtype,
    readonly: bool,
    /// The address range of the queue the memory belongs to.
    queue: Option<(usize, usize)>,
    _guard: Option<MemoryGuard>,
}

#[pymethods]
impl QueueMemory {
    /// numpy's array interface (version 3): shape, type string and address of the memory.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", self.dtype.typestr())?;
        d.set_item("data", (self.address, self.readonly))?;
        Ok(d)
    }

    /// The address of the first item (to check that a view lies in queue memory).
    #[getter]
    fn address(&self) -> usize {
        self.address
    }

    /// `(start, end)` addresses of the whole queue's memory (with the mirrored queue, both
    /// mappings of its ring): every window lies inside.
    #[getter]
    fn queue(&self) -> Option<(usize, usize)> {
        self.queue
    }

    fn __repr__(&self) -> String {
        format!(
            "QueueMemory({} {} at {:#x}{})",
            self.shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join("x"),
            self.dtype.name(),
            self.address,
            if self.readonly { ", read-only" } else { "" }
        )
    }
}

/// `numpy.asarray`, looked up once.
fn asarray(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static ASARRAY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    ASARRAY.import(py, "numpy", "asarray")
}

/// A numpy array of `items` items of `dtype` at `address`, shaped `(items / vlen, vlen)` when
/// `vlen > 1`. The caller promises that the memory stays mapped while `guard` is held (or, with
/// no guard, for as long as the array may be used) and, for a writable view, that nothing else
/// touches it while Python may write. `queue` is the queue's address range, for checks.
#[allow(clippy::too_many_arguments)]
pub fn view<'py>(
    py: Python<'py>,
    address: usize,
    items: usize,
    dtype: Dtype,
    vlen: usize,
    readonly: bool,
    guard: Option<MemoryGuard>,
    queue: Option<std::ops::Range<usize>>,
) -> PyResult<Bound<'py, PyAny>> {
    let shape = if vlen > 1 {
        vec![items / vlen, vlen]
    } else {
        vec![items]
    };
    let memory = Bound::new(
        py,
        QueueMemory {
            // numpy refuses a null address even for an empty array.
            address: address.max(dtype.size()),
            shape,
            dtype,
            readonly,
            queue: queue.map(|r| (r.start, r.end)),
            _guard: guard,
        },
    )?;
    asarray(py)?.call1((memory,))
}

/// A C-contiguous array of `dtype` with `obj`'s items (converted only if it is not one
/// already), and its address and item count. The array must stay referenced while the
/// address is used.
pub fn contiguous<'py>(
    obj: &Bound<'py, PyAny>,
    dtype: Dtype,
) -> PyResult<(Bound<'py, PyAny>, usize, usize)> {
    let py = obj.py();
    let np = py.import("numpy")?;
    let array = np
        .getattr("ascontiguousarray")?
        .call1((obj, dtype.numpy()))?;
    let interface = array.getattr("__array_interface__")?;
    let data: (usize, bool) = interface.get_item("data")?.extract()?;
    let size: usize = array.getattr("size")?.extract()?;
    Ok((array, data.0, size))
}

/// A numpy array over a whole queue's memory, made once per port of a Python block: each
/// call's view is a slice of it, which costs less than a new array from the array interface.
/// numpy collapses chains of views to the last array before a base of another type, so every
/// slice (and every slice of a slice) has this array as its base, and the array has the
/// `QueueMemory` as its own: the array's reference count tells whether any view is still held.
pub struct Whole {
    start: usize,
    end: usize,
    array: Py<PyAny>,
}

/// A view lent for one call, and how to tell afterwards whether Python kept it.
pub enum Lent<'py> {
    /// A slice of the port's whole-queue array (the second): kept if that array has more
    /// references than the cache's and ours.
    Slice(Bound<'py, PyAny>, Bound<'py, PyAny>),
    /// A view of its own (memory outside the ring: a copying queue's staging buffer): kept if
    /// the array has more references than ours.
    Own(Bound<'py, PyAny>),
}

impl<'py> Lent<'py> {
    /// The array to hand to Python.
    pub fn array(&self) -> &Bound<'py, PyAny> {
        match self {
            Lent::Slice(a, _) | Lent::Own(a) => a,
        }
    }

    /// Whether Python still holds the view (or a view of it), once our own references to
    /// the view but this one are dropped.
    pub fn kept(self) -> bool {
        match self {
            Lent::Slice(array, whole) => {
                drop(array);
                // SAFETY: `whole` is a live object (we hold a reference to it).
                let refs = unsafe { pyo3::ffi::Py_REFCNT(whole.as_ptr()) };
                // The cache's reference and `whole` here; any more is a view still held.
                refs > 2
            }
            Lent::Own(array) => {
                // SAFETY: `array` is a live object (we hold a reference to it).
                unsafe { pyo3::ffi::Py_REFCNT(array.as_ptr()) > 1 }
            }
        }
    }
}

/// Lends `items` items at `address` of a queue whose memory is `queue`, as a slice of the
/// port's whole-queue array (made on first use, or again if the queue is another).
#[allow(clippy::too_many_arguments)]
pub fn lend<'py>(
    py: Python<'py>,
    cache: &mut Option<Whole>,
    address: usize,
    items: usize,
    dtype: Dtype,
    vlen: usize,
    readonly: bool,
    guard: MemoryGuard,
    queue: std::ops::Range<usize>,
) -> PyResult<Lent<'py>> {
    let size = dtype.size();
    let inside = |start: usize, end: usize| start <= address && address + items * size <= end;
    if !inside(queue.start, queue.end) {
        let own = view(
            py,
            address,
            items,
            dtype,
            vlen,
            readonly,
            Some(guard),
            Some(queue),
        )?;
        return Ok(Lent::Own(own));
    }
    let whole = match cache {
        Some(w) if w.start == queue.start && w.end == queue.end => w,
        _ => {
            let (start, end) = (queue.start, queue.end);
            let array = view(
                py,
                start,
                (end - start) / size,
                dtype,
                1,
                readonly,
                Some(guard),
                Some(queue),
            )?;
            cache.insert(Whole {
                start,
                end,
                array: array.unbind(),
            })
        }
    };
    let first = (address - whole.start) / size;
    let slice = pyo3::types::PySlice::new(py, first as isize, (first + items) as isize, 1);
    let mut array = whole.array.bind(py).get_item(slice)?;
    if vlen > 1 {
        array = array.call_method1("reshape", ((items / vlen, vlen),))?;
    }
    Ok(Lent::Slice(array, whole.array.bind(py).clone()))
}
