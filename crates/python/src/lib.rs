//! The `sluice` Python package's native part, `sluice._sluice`: graphs (loaded or built in
//! code) run from Python, numpy sources, sinks and zero-copy reads, Python blocks, and the
//! engines (convolution, filter design) over numpy arrays. The Python part
//! (`python/sluice/__init__.py`) adds the `Block` base class and re-exports all of this.
//!
//! numpy is reached through its Python API and the array interface only (no numpy C API), so
//! the one abi3 wheel works with every CPython from 3.9.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod array_io;
mod dtype;
mod engines;
mod errors;
mod graph;
mod handle;
mod ports_raw;
mod pyblock;
mod tap;
mod thread_state;
mod values;
mod view;

use pyo3::prelude::*;

/// Every block type as JSON (ports, parameters, help), from the declarations.
#[pyfunction]
fn blocks_json() -> String {
    graph::registry().to_json()
}

/// One block type described in full (as `sluice blocks NAME`), or None.
#[pyfunction]
fn describe_block(name: &str) -> Option<String> {
    graph::registry().describe_one(name)
}

#[pymodule]
fn _sluice(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<graph::Graph>()?;
    m.add_class::<graph::NodeRef>()?;
    m.add_class::<handle::Handle>()?;
    m.add_class::<tap::Reader>()?;
    m.add_class::<view::QueueMemory>()?;
    m.add_class::<array_io::ArraySource>()?;
    m.add_class::<array_io::ArraySink>()?;
    m.add_class::<engines::PyConvolver>()?;
    m.add_function(wrap_pyfunction!(engines::convolve, m)?)?;
    m.add_function(wrap_pyfunction!(engines::firwin, m)?)?;
    m.add_function(wrap_pyfunction!(blocks_json, m)?)?;
    m.add_function(wrap_pyfunction!(describe_block, m)?)?;
    m.add("DONE", -1)?;
    Ok(())
}
