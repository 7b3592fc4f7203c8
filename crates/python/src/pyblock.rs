//! Python blocks: a subclass of `sluice.Block` run as a node. Its `work(inputs, outputs)` gets
//! numpy views of the queue windows and reservations (no copies); the GIL is taken only around
//! that call. A view of an output still referenced when `work` returns is an error naming the
//! node (the memory is the queue's, and the items are committed); an exception in `work`
//! stops the graph and comes back with its traceback.

use crate::dtype::Dtype;
use crate::ports_raw::{self as raw, Span};
use crate::thread_state::KeptThreadState;
use crate::values::{from_tag, to_tag};
use crate::view::{lend, Whole};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use sluice_runtime::{ControlSpec, Node, NodeError, Ports, Tag, TagPolicy, TagValue, Work, WorkIo};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The Python exceptions raised in blocks' `work`, by node, for `run()` to chain them.
pub type PyErrors = Arc<Mutex<BTreeMap<String, PyErr>>>;

/// How a block's items flow, per firing, in vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// One out per in.
    Sync,
    /// One out per `n` in.
    Decimate(usize),
    /// `n` out per in.
    Interpolate(usize),
    /// The block says what it consumed and produced.
    General,
}

impl Rate {
    /// Vectors consumed on each input and produced on each output per firing.
    fn per_firing(self) -> Option<(usize, usize)> {
        match self {
            Rate::Sync => Some((1, 1)),
            Rate::Decimate(n) => Some((n, 1)),
            Rate::Interpolate(n) => Some((1, n)),
            Rate::General => None,
        }
    }
}

/// A general block's (consumed, produced) per port, in vectors.
type Counts = (Vec<usize>, Vec<usize>);

/// What one call of `work` gave: the counts (`None`: the block is done; empty for the fixed
/// rates) and the tags it added, by output port.
type Outcome = (Option<Counts>, Vec<(usize, Tag)>);

/// A queue's memory guard and address range.
type Guarded = (sluice_runtime::MemoryGuard, std::ops::Range<usize>);

/// A declared port of a Python block.
#[derive(Debug, Clone)]
pub struct PortDef {
    pub name: String,
    pub dtype: Dtype,
    pub vlen: usize,
}

/// A Python block as a node.
pub struct PyBlockNode {
    kept: Option<KeptThreadState>,
    name: String,
    obj: Py<PyAny>,
    inputs: Vec<PortDef>,
    outputs: Vec<PortDef>,
    rate: Rate,
    /// The most vectors one call gets on each port.
    max_items: usize,
    propagate: bool,
    controls: Vec<ControlSpec>,
    /// Tags taken from each input and not yet consumed.
    pending: Vec<Vec<Tag>>,
    /// Each port's array over its whole queue (see `view::Whole`).
    in_whole: Vec<Option<Whole>>,
    out_whole: Vec<Option<Whole>>,
    errors: PyErrors,
}

/// The traceback of `e`, formatted as Python prints it.
pub fn describe_py_error(e: &PyErr) -> String {
    Python::attach(|py| {
        let formatted = py.import("traceback").and_then(|tb| {
            tb.getattr("format_exception")?
                .call1((e.get_type(py), e.value(py), e.traceback(py)))?
                .extract::<Vec<String>>()
        });
        match formatted {
            Ok(lines) => lines.concat().trim_end().to_string(),
            Err(_) => e.to_string(),
        }
    })
}

fn port_defs(obj: &Bound<'_, PyAny>, attr: &str) -> PyResult<Vec<PortDef>> {
    let mut defs: Vec<PortDef> = Vec::new();
    for entry in obj.getattr(attr)?.try_iter()? {
        let entry = entry?;
        let t = entry.cast::<PyTuple>().map_err(|_| {
            PyTypeError::new_err(format!(
                "{attr}: each port is a tuple (name, dtype) or (name, dtype, vlen), not {entry}"
            ))
        })?;
        let name: String = t.get_item(0)?.extract()?;
        let dtype = Dtype::extract(&t.get_item(1)?)?;
        let vlen: usize = if t.len() > 2 {
            t.get_item(2)?.extract()?
        } else {
            1
        };
        if defs.iter().any(|d| d.name == name) {
            return Err(PyValueError::new_err(format!(
                "{attr}: port '{name}' is declared twice"
            )));
        }
        defs.push(PortDef {
            name,
            dtype,
            vlen: vlen.max(1),
        });
    }
    Ok(defs)
}

fn rate_of(obj: &Bound<'_, PyAny>) -> PyResult<Rate> {
    let rate = obj.getattr("rate")?;
    if let Ok(s) = rate.extract::<String>() {
        return match s.as_str() {
            "sync" => Ok(Rate::Sync),
            "general" => Ok(Rate::General),
            _ => Err(PyValueError::new_err(format!(
                "rate '{s}': use \"sync\", \"general\", (\"decimate\", n) or (\"interpolate\", n)"
            ))),
        };
    }
    let (kind, n): (String, usize) = rate.extract()?;
    match (kind.as_str(), n) {
        (_, 0) => Err(PyValueError::new_err("rate: the factor must be at least 1")),
        ("decimate", n) => Ok(Rate::Decimate(n)),
        ("interpolate", n) => Ok(Rate::Interpolate(n)),
        _ => Err(PyValueError::new_err(format!(
            "rate ('{kind}', {n}): use (\"decimate\", n) or (\"interpolate\", n)"
        ))),
    }
}

/// A `&'static str` for a control's declaration (a block declares its controls once).
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

impl PyBlockNode {
    /// The node of block object `obj` named `name`, from its declared attributes.
    pub fn new(name: &str, obj: &Bound<'_, PyAny>, errors: PyErrors) -> PyResult<Self> {
        let inputs = port_defs(obj, "inputs")?;
        let outputs = port_defs(obj, "outputs")?;
        let rate = rate_of(obj)?;
        if rate != Rate::General && inputs.is_empty() {
            return Err(PyValueError::new_err(format!(
                "block '{name}': a block without inputs must have rate \"general\" (it says \
                 itself how much it produced)"
            )));
        }
        let max_items: Option<usize> = obj.getattr("items_per_call")?.extract()?;
        let propagate: bool = obj.getattr("propagate_tags")?.extract()?;
        let mut controls = Vec::new();
        let settable = obj.getattr("settable")?;
        for item in settable.call_method0("items")?.try_iter()? {
            let (param, help): (String, String) = item?.extract()?;
            controls.push(ControlSpec {
                name: leak(param),
                expects: "a value the block's attribute takes",
                help: leak(help),
            });
        }
        Ok(PyBlockNode {
            name: name.to_string(),
            obj: obj.clone().unbind(),
            kept: None,
            pending: vec![Vec::new(); inputs.len()],
            in_whole: inputs.iter().map(|_| None).collect(),
            out_whole: outputs.iter().map(|_| None).collect(),
            inputs,
            outputs,
            rate,
            max_items: max_items.unwrap_or(usize::MAX).max(1),
            propagate,
            controls,
            errors,
        })
    }

    /// The call of `work` with the GIL: views, tags in and out, the outcome.
    fn call(
        &mut self,
        ins: &[Span],
        in_lens: &[usize],
        outs: &[Span],
        out_lens: &[usize],
        guards: (Vec<Guarded>, Vec<Guarded>),
    ) -> Result<Outcome, NodeError> {
        let name = self.name.clone();
        Python::attach(|py| -> Result<_, NodeError> {
            let fail = |e: PyErr| {
                let text = describe_py_error(&e);
                self.errors
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(name.clone(), e);
                NodeError::msg(format!(
                    "Python block raised an exception in work():\n{text}"
                ))
            };
            let obj = self.obj.bind(py);
            let (in_guards, out_guards) = guards;
            let mut in_arrays = Vec::with_capacity(ins.len());
            let mut in_tags = Vec::with_capacity(ins.len());
            for (i, (((span, &len), port), guard)) in ins
                .iter()
                .zip(in_lens)
                .zip(&self.inputs)
                .zip(in_guards)
                .enumerate()
            {
                let lent = lend(
                    py,
                    &mut self.in_whole[i],
                    span.address,
                    len,
                    port.dtype,
                    port.vlen,
                    true,
                    guard.0,
                    guard.1,
                )
                .map_err(fail)?;
                in_arrays.push(lent.array().clone());
            }
            for ((span, &len), (port, pending)) in ins
                .iter()
                .zip(in_lens)
                .zip(self.inputs.iter().zip(&self.pending))
            {
                let end = span.first + len as u64;
                let mut list = Vec::new();
                for t in pending.iter().filter(|t| t.index < end) {
                    let offset = (t.index.saturating_sub(span.first)) as usize / port.vlen;
                    list.push((
                        offset,
                        t.key.as_ref(),
                        from_tag(py, &t.value).map_err(fail)?,
                    ));
                }
                in_tags.push(PyList::new(py, list).map_err(fail)?);
            }
            let mut out_lent = Vec::with_capacity(outs.len());
            for (o, (((span, &len), port), guard)) in outs
                .iter()
                .zip(out_lens)
                .zip(&self.outputs)
                .zip(out_guards)
                .enumerate()
            {
                out_lent.push(
                    lend(
                        py,
                        &mut self.out_whole[o],
                        span.address,
                        len,
                        port.dtype,
                        port.vlen,
                        false,
                        guard.0,
                        guard.1,
                    )
                    .map_err(fail)?,
                );
            }
            let out_arrays: Vec<Bound<'_, PyAny>> =
                out_lent.iter().map(|l| l.array().clone()).collect();
            let out_tags = PyList::empty(py);
            obj.setattr("_sluice_in_tags", PyList::new(py, in_tags).map_err(fail)?)
                .map_err(fail)?;
            obj.setattr("_sluice_out_tags", &out_tags).map_err(fail)?;
            let in_list = PyList::new(py, &in_arrays).map_err(fail)?;
            let out_list = PyList::new(py, &out_arrays).map_err(fail)?;
            let result = obj.call_method1("work", (&in_list, &out_list));
            drop((in_list, out_list, in_arrays, out_arrays));
            let _ = obj.setattr("_sluice_in_tags", py.None());
            let result = result.map_err(fail)?;
            for (lent, port) in out_lent.into_iter().zip(&self.outputs) {
                if lent.kept() {
                    return Err(NodeError::msg(format!(
                        "Python block '{}': a view of output '{}' is still referenced after \
                         work() returned; the view is queue memory lent for the call only \
                         (keep `out.copy()` instead)",
                        self.name, port.name
                    )));
                }
            }
            let tags = self.added_tags(&out_tags, outs, out_lens).map_err(fail)?;
            let counts = if self.rate == Rate::General {
                self.counts(&result, in_lens, out_lens).map_err(fail)?
            } else {
                Some((Vec::new(), Vec::new()))
            };
            Ok((counts, tags))
        })
    }

    /// The tags `work` added with `add_tag(port, offset, key, value)`.
    fn added_tags(
        &self,
        list: &Bound<'_, PyList>,
        outs: &[Span],
        out_lens: &[usize],
    ) -> PyResult<Vec<(usize, Tag)>> {
        let mut tags = Vec::new();
        for entry in list.iter() {
            let (port, offset, key, value): (usize, usize, String, Bound<'_, PyAny>) =
                entry.extract()?;
            let (Some(span), Some(def)) = (outs.get(port), self.outputs.get(port)) else {
                return Err(PyValueError::new_err(format!(
                    "add_tag: block '{}' has no output {port}",
                    self.name
                )));
            };
            if offset * def.vlen >= out_lens[port] {
                return Err(PyValueError::new_err(format!(
                    "add_tag: offset {offset} is outside output '{}' of this call",
                    def.name
                )));
            }
            let mut tag = Tag::new(
                span.first + (offset * def.vlen) as u64,
                &key,
                to_tag(&value)?,
            );
            tag.source = Some(self.name.as_str().into());
            tags.push((port, tag));
        }
        Ok(tags)
    }

    /// A general block's `(consumed, produced)`, in vectors, checked; `None` for `DONE`.
    fn counts(
        &self,
        result: &Bound<'_, PyAny>,
        in_lens: &[usize],
        out_lens: &[usize],
    ) -> PyResult<Option<Counts>> {
        if result.extract::<i64>().is_ok_and(|v| v == -1) {
            return Ok(None);
        }
        let (consumed, produced): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
            result.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "general block '{}': work() must return (consumed, produced) or sluice.DONE",
                    self.name
                ))
            })?;
        let per_port = |v: &Bound<'_, PyAny>, ports: &[PortDef], lens: &[usize], what: &str| {
            let list: Vec<usize> = match v.extract::<usize>() {
                Ok(n) => vec![n; ports.len()],
                Err(_) => v.extract()?,
            };
            if list.len() != ports.len() {
                return Err(PyValueError::new_err(format!(
                    "general block '{}': {what} has {} counts for {} ports",
                    self.name,
                    list.len(),
                    ports.len()
                )));
            }
            for ((n, port), len) in list.iter().zip(ports).zip(lens) {
                if n * port.vlen > *len {
                    return Err(PyValueError::new_err(format!(
                        "general block '{}': {what} {n} on '{}', which had {}",
                        self.name,
                        port.name,
                        len / port.vlen
                    )));
                }
            }
            Ok(list)
        };
        Ok(Some((
            per_port(&consumed, &self.inputs, in_lens, "consumed")?,
            per_port(&produced, &self.outputs, out_lens, "produced")?,
        )))
    }
}

impl Node for PyBlockNode {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        let window = |p: &PortDef| {
            if self.max_items == usize::MAX {
                p.vlen
            } else {
                self.max_items.saturating_mul(p.vlen)
            }
        };
        for p in &self.inputs {
            crate::dtype::with_dtype!(p.dtype, T => {
                ports.add_input_vectors::<T>(&p.name, p.vlen, window(p));
            });
        }
        for p in &self.outputs {
            crate::dtype::with_dtype!(p.dtype, T => {
                ports.add_output_vectors::<T>(&p.name, p.vlen, window(p));
            });
        }
        ports
    }

    fn init(&mut self) -> Result<(), NodeError> {
        self.kept = Some(KeptThreadState::keep());
        Ok(())
    }

    fn stop(&mut self) {
        if let Some(kept) = self.kept.take() {
            kept.release();
        }
    }

    fn tag_policy(&self) -> TagPolicy {
        // Tags are taken from the inputs and placed on the outputs here (see `work`).
        TagPolicy::Drop
    }

    fn controls(&self) -> Vec<ControlSpec> {
        self.controls.clone()
    }

    fn set_control(&mut self, name: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        Python::attach(|py| {
            let v = from_tag(py, value)?;
            self.obj.bind(py).setattr(name, v)
        })
        .map_err(|e| NodeError::msg(describe_py_error(&e)))
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let per = self.rate.per_firing();
        let (c, p) = per.unwrap_or((1, 1));
        let mut ins = Vec::with_capacity(self.inputs.len());
        for (i, port) in self.inputs.iter().enumerate() {
            let need = c * port.vlen;
            let Some(span) = raw::window(io, i, port.dtype, need)? else {
                return Ok(Work::NeedInput {
                    port: i,
                    items: need,
                });
            };
            if per.is_some() && span.items < need {
                return Ok(Work::Done); // end of stream with less than one firing left
            }
            ins.push(span);
        }
        if per.is_none() && !ins.is_empty() && ins.iter().all(|s| s.items == 0) {
            return Ok(Work::Done);
        }
        let mut firings = ins
            .iter()
            .zip(&self.inputs)
            .map(|(s, port)| s.items / port.vlen / c)
            .min()
            .unwrap_or(usize::MAX)
            .min((self.max_items / c).max(1));
        let mut outs = Vec::with_capacity(self.outputs.len());
        for (o, port) in self.outputs.iter().enumerate() {
            let need = p * port.vlen;
            let Some(span) = raw::reserve(io, o, port.dtype, need)? else {
                return Ok(Work::NeedOutput {
                    port: o,
                    items: need,
                });
            };
            firings = firings.min(span.items / port.vlen / p);
            outs.push(span);
        }
        let cap = |len: usize, vlen: usize| (len / vlen).min(self.max_items) * vlen;
        let (in_lens, out_lens): (Vec<usize>, Vec<usize>) = if per.is_some() {
            (
                self.inputs
                    .iter()
                    .map(|port| firings * c * port.vlen)
                    .collect(),
                self.outputs
                    .iter()
                    .map(|port| firings * p * port.vlen)
                    .collect(),
            )
        } else {
            (
                ins.iter()
                    .zip(&self.inputs)
                    .map(|(s, port)| cap(s.items, port.vlen))
                    .collect(),
                outs.iter()
                    .zip(&self.outputs)
                    .map(|(s, port)| cap(s.items, port.vlen))
                    .collect(),
            )
        };
        for (i, (span, port)) in ins.iter().zip(&self.inputs).enumerate() {
            let pending = &mut self.pending[i];
            raw::take_tags(io, i, port.dtype, span.first + in_lens[i] as u64, pending)?;
        }
        let mut in_guards = Vec::with_capacity(ins.len());
        for (i, port) in self.inputs.iter().enumerate() {
            in_guards.push(raw::input_guard(io, i, port.dtype)?);
        }
        let mut out_guards = Vec::with_capacity(outs.len());
        for (o, port) in self.outputs.iter().enumerate() {
            out_guards.push(raw::output_guard(io, o, port.dtype)?);
        }
        let (counts, added) =
            self.call(&ins, &in_lens, &outs, &out_lens, (in_guards, out_guards))?;
        let Some((consumed, produced)) = counts else {
            return Ok(Work::Done);
        };
        let (consumed, produced): (Vec<usize>, Vec<usize>) = if per.is_some() {
            (in_lens.clone(), out_lens.clone())
        } else {
            (
                consumed
                    .iter()
                    .zip(&self.inputs)
                    .map(|(n, port)| n * port.vlen)
                    .collect(),
                produced
                    .iter()
                    .zip(&self.outputs)
                    .map(|(n, port)| n * port.vlen)
                    .collect(),
            )
        };
        for (port, tag) in added {
            let def = &self.outputs[port];
            if tag.index < outs[port].first + produced[port] as u64 {
                raw::push_tag(io, port, def.dtype, tag)?;
            }
        }
        for (i, (span, port)) in ins.iter().zip(&self.inputs).enumerate() {
            let end = span.first + consumed[i] as u64;
            let taken: Vec<Tag> = {
                let pending = &mut self.pending[i];
                let (done, keep): (Vec<Tag>, Vec<Tag>) =
                    pending.drain(..).partition(|t| t.index < end);
                *pending = keep;
                done
            };
            if self.propagate && per.is_some() {
                for tag in taken {
                    let vector = (tag.index - span.first) / port.vlen as u64;
                    for (o, (out, def)) in outs.iter().zip(&self.outputs).enumerate() {
                        let at = vector * p as u64 / c as u64 * def.vlen as u64;
                        let mut t = tag.clone();
                        t.index = out.first + at;
                        raw::push_tag(io, o, def.dtype, t)?;
                    }
                }
            }
            raw::consume(io, i, port.dtype, consumed[i])?;
        }
        for (o, port) in self.outputs.iter().enumerate() {
            raw::commit(io, o, port.dtype, produced[o])?;
        }
        Ok(Work::Progress)
    }
}
