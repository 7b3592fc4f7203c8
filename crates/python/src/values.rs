//! Python values as graph-file parameters (TOML values) and as stream-tag values, and back.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;
use sluice_runtime::TagValue;
use toml::Value;

/// A parameter value as a graph file would write it: bool, int, float, str, list, dict.
pub fn to_toml(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Boolean(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Value::Integer(obj.extract()?));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Value::Float(obj.extract()?));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(Value::String(obj.extract()?));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, v) in d.iter() {
            t.insert(k.extract::<String>()?, to_toml(&v, what)?);
        }
        return Ok(Value::Table(t));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items: PyResult<Vec<Value>> = obj.try_iter()?.map(|v| to_toml(&v?, what)).collect();
        return Ok(Value::Array(items?));
    }
    // numpy scalars and arrays: their Python equivalents.
    if obj.hasattr("tolist")? {
        return to_toml(&obj.call_method0("tolist")?, what);
    }
    Err(PyTypeError::new_err(format!(
        "{what}: a {} is not a parameter value (use a bool, int, float, str, list or dict)",
        obj.get_type().name()?
    )))
}

/// A tag or control value from Python: None, bool, int, float, complex, str, tuple, list.
pub fn to_tag(obj: &Bound<'_, PyAny>) -> PyResult<TagValue> {
    if obj.is_none() {
        return Ok(TagValue::Null);
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(TagValue::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i64>() {
            Ok(i) => Ok(TagValue::I64(i)),
            Err(_) => Ok(TagValue::U64(obj.extract()?)),
        };
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(TagValue::F64(obj.extract()?));
    }
    if let Ok(c) = obj.cast::<PyComplex>() {
        return Ok(TagValue::Complex(num_complex::Complex64::new(
            c.real(),
            c.imag(),
        )));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(TagValue::Str(obj.extract::<String>()?.into()));
    }
    if obj.is_instance_of::<PyTuple>() {
        let items: PyResult<Vec<TagValue>> = obj.try_iter()?.map(|v| to_tag(&v?)).collect();
        return Ok(TagValue::Tuple(items?));
    }
    if obj.is_instance_of::<PyList>() {
        let items: PyResult<Vec<TagValue>> = obj.try_iter()?.map(|v| to_tag(&v?)).collect();
        return Ok(TagValue::Vector(items?));
    }
    if obj.hasattr("item")? {
        // A numpy scalar.
        return to_tag(&obj.call_method0("item")?);
    }
    Err(PyTypeError::new_err(format!(
        "a {} is not a tag value (use None, bool, int, float, complex, str, tuple or list)",
        obj.get_type().name()?
    )))
}

/// A tag value as Python sees it (a pair as a 2-tuple).
pub fn from_tag<'py>(py: Python<'py>, v: &TagValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        TagValue::Null => py.None().into_bound(py),
        TagValue::Bool(b) => b.into_bound_py_any(py)?,
        TagValue::I64(i) => i.into_bound_py_any(py)?,
        TagValue::U64(u) => u.into_bound_py_any(py)?,
        TagValue::F64(x) => x.into_bound_py_any(py)?,
        TagValue::Complex(c) => PyComplex::from_doubles(py, c.re, c.im).into_any(),
        TagValue::Str(s) => s.as_ref().into_bound_py_any(py)?,
        TagValue::Pair(p) => {
            PyTuple::new(py, [from_tag(py, &p.0)?, from_tag(py, &p.1)?])?.into_any()
        }
        TagValue::Tuple(items) => {
            let items: PyResult<Vec<_>> = items.iter().map(|v| from_tag(py, v)).collect();
            PyTuple::new(py, items?)?.into_any()
        }
        TagValue::Vector(items) => {
            let items: PyResult<Vec<_>> = items.iter().map(|v| from_tag(py, v)).collect();
            PyList::new(py, items?)?.into_any()
        }
        other => format!("{other:?}").into_bound_py_any(py)?,
    })
}

/// A stream tag for Python: `(index, key, value)` with the absolute item index.
pub fn tag_tuple<'py>(py: Python<'py>, tag: &sluice_runtime::Tag) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyTuple::new(
        py,
        [
            tag.index.into_bound_py_any(py)?,
            tag.key.as_ref().into_bound_py_any(py)?,
            from_tag(py, &tag.value)?,
        ],
    )?
    .into_any())
}
