//! The package's exceptions: one type per kind of mistake, all under `sluice.SluiceError`, with
//! the node, port and parameter they concern as attributes (None where it does not apply). The
//! messages are the graph loader's and the runtime's own, word for word.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sluice_graph::GraphFileError as FileError;
use sluice_runtime::{ControlError as RefusedChange, RuntimeError};

create_exception!(
    sluice,
    SluiceError,
    PyException,
    "Base class of every error sluice raises."
);
create_exception!(
    sluice,
    GraphFileError,
    SluiceError,
    "A graph file (or text) that could not be loaded: `errors` lists every mistake as dicts of \
     origin, line, column, node and message."
);
create_exception!(
    sluice,
    UnknownBlockError,
    SluiceError,
    "A block type that no registry declares (`sluice.blocks()` lists them)."
);
create_exception!(
    sluice,
    ParameterError,
    SluiceError,
    "A parameter a block does not declare, of the wrong kind, out of range, or missing."
);
create_exception!(
    sluice,
    PortError,
    SluiceError,
    "A port a node does not have, or a `node.port` that does not name one."
);
create_exception!(
    sluice,
    ItemTypeError,
    SluiceError,
    "Two ports that carry different item types or vector lengths, or an array of another dtype."
);
create_exception!(
    sluice,
    EdgeError,
    SluiceError,
    "An edge that cannot be made: an input already fed, a capacity of 0."
);
create_exception!(
    sluice,
    GraphError,
    SluiceError,
    "A graph that cannot run: a node name used twice, an unconnected port, a cycle, a graph \
     already run."
);
create_exception!(
    sluice,
    NodeError,
    SluiceError,
    "A node failed while the graph ran; `node` names it. For a Python block the message holds \
     the Python traceback."
);
create_exception!(
    sluice,
    ControlError,
    SluiceError,
    "A run-time parameter change that was refused (no such node or parameter, a bad value, a \
     graph that ended)."
);

/// An exception of type `E` with `message` and the attributes `node`, `port` and `param`.
pub fn raise<E: pyo3::PyTypeInfo>(
    message: String,
    node: Option<&str>,
    port: Option<&str>,
    param: Option<&str>,
) -> PyErr {
    Python::attach(|py| {
        let err = PyErr::from_type(py.get_type::<E>(), message);
        let value = err.value(py);
        let _ = value.setattr("node", node);
        let _ = value.setattr("port", port);
        let _ = value.setattr("param", param);
        err
    })
}

/// A graph-file error as `GraphFileError`, with every mistake in `errors`.
pub fn graph_file(e: &FileError) -> PyErr {
    Python::attach(|py| {
        let err = PyErr::from_type(py.get_type::<GraphFileError>(), e.to_string());
        let list: Vec<Bound<'_, PyDict>> = std::iter::once(e)
            .chain(e.more.iter())
            .map(|m| {
                let d = PyDict::new(py);
                let _ = d.set_item("origin", &m.origin);
                let _ = d.set_item("line", m.line);
                let _ = d.set_item("column", m.column);
                let _ = d.set_item("node", m.node.as_deref());
                let _ = d.set_item("message", &m.message);
                d
            })
            .collect();
        let value = err.value(py);
        let _ = value.setattr("errors", list);
        let _ = value.setattr("node", e.node.as_deref());
        let _ = value.setattr("line", e.line);
        err
    })
}

/// A runtime error (building or running a graph) as the exception of its kind.
pub fn runtime(e: &RuntimeError, context: &str) -> PyErr {
    let message = format!("{context}{e}");
    match e {
        RuntimeError::NoSuchPort { node, port, .. } => {
            raise::<PortError>(message, Some(node), Some(port), None)
        }
        RuntimeError::TypeMismatch { .. } | RuntimeError::VlenMismatch { .. } => {
            raise::<ItemTypeError>(message, None, None, None)
        }
        RuntimeError::InputTaken { node, port } => {
            raise::<EdgeError>(message, Some(node), Some(port), None)
        }
        RuntimeError::NodeFailed { node, .. }
        | RuntimeError::NodePanicked { node, .. }
        | RuntimeError::Spawn { node, .. } => raise::<NodeError>(message, Some(node), None, None),
        RuntimeError::Unconnected { node, port, .. } => {
            raise::<GraphError>(message, Some(node), Some(port), None)
        }
        RuntimeError::DuplicateNode(node) => raise::<GraphError>(message, Some(node), None, None),
        _ => raise::<GraphError>(message, None, None, None),
    }
}

/// A refused run-time change as `ControlError`.
pub fn control(e: &RefusedChange, node: &str, param: &str) -> PyErr {
    raise::<ControlError>(e.to_string(), Some(node), None, Some(param))
}

/// Registers the exceptions in the module, under their public names.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SluiceError", py.get_type::<SluiceError>())?;
    m.add("GraphFileError", py.get_type::<GraphFileError>())?;
    m.add("UnknownBlockError", py.get_type::<UnknownBlockError>())?;
    m.add("ParameterError", py.get_type::<ParameterError>())?;
    m.add("PortError", py.get_type::<PortError>())?;
    m.add("ItemTypeError", py.get_type::<ItemTypeError>())?;
    m.add("EdgeError", py.get_type::<EdgeError>())?;
    m.add("GraphError", py.get_type::<GraphError>())?;
    m.add("NodeError", py.get_type::<NodeError>())?;
    m.add("ControlError", py.get_type::<ControlError>())?;
    Ok(())
}
