//! `sluice.Graph`: a graph loaded from a file or text, or built in code, run blocking or in
//! the background. Building in code goes through the graph loader's own node checks
//! (`sluice_graph::build_node`) and the runtime's connection checks, so every mistake reads as
//! it would in a graph file.

use crate::array_io::{ArraySink, ArraySource};
use crate::dtype::Dtype;
use crate::errors::{
    self, raise, EdgeError, GraphError, ParameterError, PortError, UnknownBlockError,
};
use crate::handle::{start, Handle, Tap};
use crate::pyblock::{PyBlockNode, PyErrors};
use crate::tap::{TapNode, TapShared};
use crate::values::to_toml;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use sluice_graph::{build_node, MistakeKind, Override, Params, Registry};
use sluice_runtime::{Graph as RtGraph, Node, NodeId};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

/// The standard registry, built once.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(sluice_registry::standard_registry)
}

/// What a graph holds until it runs.
pub struct Built {
    pub graph: RtGraph,
    /// Every node's name, in the order added.
    pub names: Vec<String>,
    /// Whether a node needs a thread of its own (Python blocks, taps, Python sources).
    pub needs_threads: bool,
    pub taps: BTreeMap<String, Tap>,
    pub py_errors: PyErrors,
    pub origin: String,
}

/// A node handle as `Graph.add` returns it: its name, usable wherever a node is named.
#[pyclass(module = "sluice", name = "NodeRef", frozen)]
pub struct NodeRef {
    /// The node's name.
    #[pyo3(get)]
    name: String,
}

#[pymethods]
impl NodeRef {
    fn __str__(&self) -> &str {
        &self.name
    }
    fn __repr__(&self) -> String {
        format!("NodeRef('{}')", self.name)
    }
    /// `node["port"]` is the text `"node.port"`, for `Graph.connect`.
    fn __getitem__(&self, port: &str) -> String {
        format!("{}.{port}", self.name)
    }
}

/// A sluice graph: nodes (blocks) and the edges between their ports.
///
/// Load one with `Graph.from_file(path, set={"node.param": value})` or `Graph.from_str(text)`,
/// or build one: `g = Graph()`, `lp = g.add("fir", name="lp", design="lowpass", ...)`,
/// `g.connect(src, lp)` or `g.connect("src.out", "lp.in")`. Run it with `g.run()` (blocking;
/// Ctrl-C stops it gracefully) or `g.start()` (returns a `Handle`). A graph runs once.
#[pyclass(module = "sluice", name = "Graph")]
pub struct Graph {
    inner: Mutex<Option<Built>>,
}

impl Graph {
    fn wrap(graph: RtGraph, names: Vec<String>, origin: String) -> Self {
        Graph {
            inner: Mutex::new(Some(Built {
                graph,
                names,
                needs_threads: false,
                taps: BTreeMap::new(),
                py_errors: PyErrors::default(),
                origin,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Built>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The graph, unless it already ran.
    fn with<R>(&self, f: impl FnOnce(&mut Built) -> PyResult<R>) -> PyResult<R> {
        let mut guard = self.lock();
        let built = guard.as_mut().ok_or_else(already_ran)?;
        f(built)
    }

    /// Takes the graph out to run it.
    pub fn take(&self) -> PyResult<Built> {
        self.lock().take().ok_or_else(already_ran)
    }

    fn load(text: &str, origin: &str, set: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut overrides = Vec::new();
        if let Some(set) = set {
            for (k, v) in set.iter() {
                let key: String = k.extract()?;
                let (node, param) = key
                    .rsplit_once('.')
                    .filter(|(n, p)| !n.is_empty() && !p.is_empty())
                    .ok_or_else(|| {
                        raise::<ParameterError>(
                            format!("set: '{key}' must name a node and a parameter as node.param"),
                            None,
                            None,
                            None,
                        )
                    })?;
                overrides.push(Override {
                    node: node.to_string(),
                    param: param.to_string(),
                    value: to_toml(&v, &format!("set['{key}']"))?,
                });
            }
        }
        let loaded = sluice_graph::load_with(text, origin, registry(), &overrides)
            .map_err(|e| errors::graph_file(&e))?;
        let names = loaded.source.node_lines.keys().cloned().collect();
        Ok(Graph::wrap(loaded.graph, names, origin.to_string()))
    }
}

fn already_ran() -> PyErr {
    raise::<GraphError>(
        "this graph has already been run (a graph runs once: build or load it again)".into(),
        None,
        None,
        None,
    )
}

/// A free name for a node of `base`: `base`, then `base1`, `base2`, ...
fn fresh_name(names: &[String], base: &str) -> String {
    if !names.iter().any(|n| n == base) {
        return base.to_string();
    }
    (1..)
        .map(|i| format!("{base}{i}"))
        .find(|n| !names.iter().any(|m| m == n))
        .unwrap_or_else(|| base.to_string())
}

/// One end of an edge: `node.port`, or a node (with one port on that side).
fn end_of(
    built: &Built,
    obj: &Bound<'_, PyAny>,
    output: bool,
) -> PyResult<(NodeId, String, String)> {
    let text: String = match obj.cast::<NodeRef>() {
        Ok(r) => r.get().name.clone(),
        Err(_) => obj.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(
                "connect: an end is a node (as add() returns it), a node name, or \"node.port\"",
            )
        })?,
    };
    let (node, port) = match built.graph.node_id(&text) {
        Some(_) => (text.as_str(), None),
        None => match text.rsplit_once('.') {
            Some((n, p)) if !n.is_empty() && !p.is_empty() => (n, Some(p)),
            _ => (text.as_str(), None),
        },
    };
    let id = built.graph.node_id(node).ok_or_else(|| {
        raise::<GraphError>(
            format!("no node named '{node}' (nodes: {})", built.names.join(", ")),
            Some(node),
            None,
            None,
        )
    })?;
    let port = match port {
        Some(p) => p.to_string(),
        None => {
            let ports = built.graph.ports(id).expect("the id was just found");
            let list = if output {
                &ports.outputs
            } else {
                &ports.inputs
            };
            let kind = if output { "output" } else { "input" };
            match list.as_slice() {
                [one] => one.name.clone(),
                _ => {
                    let names: Vec<&str> = list.iter().map(|p| p.name.as_str()).collect();
                    return Err(raise::<PortError>(
                        format!(
                            "node '{node}' has {} {kind}s ({}): name one as \"{node}.PORT\"",
                            list.len(),
                            if names.is_empty() {
                                "none".to_string()
                            } else {
                                names.join(", ")
                            }
                        ),
                        Some(node),
                        None,
                        None,
                    ));
                }
            }
        }
    };
    Ok((id, node.to_string(), port))
}

#[pymethods]
impl Graph {
    #[new]
    fn py_new() -> Self {
        Graph::wrap(RtGraph::new(), Vec::new(), "graph built in Python".into())
    }

    /// Loads the graph file at `path`; `set` overrides parameters (`{"src.frequency": 440}`),
    /// as `sluice run --set` does. Raises `GraphFileError` listing every mistake.
    #[staticmethod]
    #[pyo3(signature = (path, set=None))]
    fn from_file(path: std::path::PathBuf, set: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let text = sluice_graph::read(&path).map_err(|e| errors::graph_file(&e))?;
        Graph::load(&text, &path.display().to_string(), set)
    }

    /// Loads a graph from the text of a graph file; `origin` names it in errors.
    #[staticmethod]
    #[pyo3(signature = (text, origin="<string>", set=None))]
    fn from_str(text: &str, origin: &str, set: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Graph::load(text, origin, set)
    }

    /// Adds a node and returns it (a `NodeRef`). `block` is a block type's name (parameters as
    /// keywords: `g.add("fir", name="lp", design="lowpass", num_taps=63, cutoff=0.1)`), a
    /// `sluice.Block` instance, an `ArraySource` or an `ArraySink`. The name defaults to the
    /// type's (made unique). Raises `UnknownBlockError` or `ParameterError`.
    #[pyo3(signature = (block, name=None, **params))]
    fn add(
        &self,
        block: &Bound<'_, PyAny>,
        name: Option<String>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<NodeRef> {
        self.with(|built| {
            let base = if let Ok(kind) = block.cast::<PyString>() {
                kind.to_string()
            } else if block.is_instance_of::<ArraySource>() {
                "source".to_string()
            } else if block.is_instance_of::<ArraySink>() {
                "sink".to_string()
            } else {
                block.get_type().name()?.to_string().to_lowercase()
            };
            let name = name.unwrap_or_else(|| fresh_name(&built.names, &base));
            if built.graph.node_id(&name).is_some() {
                return Err(raise::<GraphError>(
                    format!("node '{name}': a node of that name is already added; names must be unique"),
                    Some(&name),
                    None,
                    None,
                ));
            }
            let has_params = params.is_some_and(|p| !p.is_empty());
            let node: Box<dyn Node> = if block.is_instance_of::<PyString>() {
                let mut values = Vec::new();
                if let Some(params) = params {
                    for (k, v) in params.iter() {
                        let k: String = k.extract()?;
                        let value = to_toml(&v, &format!("node '{name}': parameter '{k}'"))?;
                        values.push((k, value));
                    }
                }
                build_node(registry(), &name, &base, Params::from_values(values))
                    .map_err(|mistakes| node_error(&name, &mistakes))?
            } else if has_params {
                return Err(raise::<ParameterError>(
                    format!("node '{name}': parameters are given to a block type by name; a {base} takes none here"),
                    Some(&name),
                    None,
                    None,
                ));
            } else if let Ok(src) = block.cast::<ArraySource>() {
                built.needs_threads |= src.borrow().is_iterator();
                Box::new(src.borrow().take_node()?)
            } else if let Ok(sink) = block.cast::<ArraySink>() {
                Box::new(sink.get().node())
            } else if block.hasattr("_sluice_block")? {
                built.needs_threads = true;
                Box::new(PyBlockNode::new(&name, block, built.py_errors.clone())?)
            } else {
                return Err(raise::<UnknownBlockError>(
                    format!("node '{name}': a {base} is not a block (give a block type's name, a sluice.Block, an ArraySource or an ArraySink)"),
                    Some(&name),
                    None,
                    None,
                ));
            };
            built
                .graph
                .add_boxed(&name, node)
                .map_err(|e| errors::runtime(&e, ""))?;
            built.names.push(name.clone());
            Ok(NodeRef { name })
        })
    }

    /// Connects an output to an input: each end is `"node.port"`, or a node (a `NodeRef` or a
    /// name) whose only output (input) is meant. `capacity` sets the queue's size in items.
    /// Raises `PortError`, `ItemTypeError` or `EdgeError`, in the graph loader's words.
    #[pyo3(signature = (source, destination, capacity=None))]
    fn connect(
        &self,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
        capacity: Option<usize>,
    ) -> PyResult<()> {
        self.with(|built| {
            let (from, a, ap) = end_of(built, source, true)?;
            let (to, b, bp) = end_of(built, destination, false)?;
            let label = format!("edge {a}.{ap} -> {b}.{bp}: ");
            if capacity == Some(0) {
                return Err(raise::<EdgeError>(
                    format!("{label}capacity must be at least 1 item, not 0"),
                    None,
                    None,
                    None,
                ));
            }
            built
                .graph
                .connect_with(from, &ap, to, &bp, capacity)
                .map_err(|e| errors::runtime(&e, &label))
        })
    }

    /// Adds an `ArraySink` fed by output `port` (`"node.port"`, or a node with one output) and
    /// returns it: after the run, its `data` holds the stream.
    fn collect(&self, port: &Bound<'_, PyAny>) -> PyResult<Py<ArraySink>> {
        let py = port.py();
        let (dtype, vlen, from) = self.with(|built| output_type(built, port))?;
        let sink = Py::new(py, ArraySink::new(dtype, vlen))?;
        let node = self.add(
            sink.bind(py).as_any(),
            Some(format!("{from}:collect")),
            None,
        )?;
        self.connect(
            &PyString::new(py, &from),
            node.name.into_pyobject(py)?.as_any(),
            None,
        )?;
        Ok(sink)
    }

    /// Lets a running graph's output `port` be read with `Handle.read(port, items)`, in
    /// chunks of at most `max_items` items. The graph waits for the reader: read a tapped
    /// output to its end (or stop the graph).
    #[pyo3(signature = (port, max_items=65536))]
    fn tap(&self, port: &Bound<'_, PyAny>, max_items: usize) -> PyResult<()> {
        let py = port.py();
        let (dtype, vlen, from) = self.with(|built| output_type(built, port))?;
        let shared = Arc::new(TapShared::default());
        let name = format!("{from}:read");
        self.with(|built| {
            let node = TapNode {
                dtype,
                vlen,
                max_items: max_items.max(vlen),
                shared: Arc::clone(&shared),
            };
            built
                .graph
                .add_boxed(&name, Box::new(node))
                .map_err(|e| errors::runtime(&e, ""))?;
            built.names.push(name.clone());
            built.needs_threads = true;
            built.taps.insert(
                from.clone(),
                Tap {
                    shared: Arc::clone(&shared),
                    dtype,
                    vlen,
                    max_items: max_items.max(vlen),
                },
            );
            Ok(())
        })?;
        self.connect(&PyString::new(py, &from), &PyString::new(py, &name), None)
    }

    /// Runs the graph to its end and returns its statistics (one dict per node). Ctrl-C
    /// stops it gracefully (sources end, sinks finish their files) and then raises
    /// KeyboardInterrupt. A node's failure raises `NodeError` naming it (for a Python block,
    /// with its traceback, and the exception as `__cause__`).
    #[pyo3(signature = (scheduler=None))]
    fn run(&self, py: Python<'_>, scheduler: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let handle = start(self.take()?, scheduler)?;
        handle.wait_blocking(py, None)
    }

    /// Starts the graph in the background and returns its `Handle` (stop, wait, stats,
    /// progress, set, read). `read` names outputs to tap for `Handle.read` (see `tap`). Stop
    /// or wait for a started graph before the interpreter exits: its Python blocks need the
    /// interpreter to the end.
    #[pyo3(signature = (scheduler=None, read=None))]
    fn start(
        &self,
        scheduler: Option<&Bound<'_, PyAny>>,
        read: Option<Vec<Bound<'_, PyAny>>>,
    ) -> PyResult<Handle> {
        for port in read.unwrap_or_default() {
            self.tap(&port, 65536)?;
        }
        start(self.take()?, scheduler)
    }

    /// Checks the graph (unconnected ports, cycles, queues) without running it; the graph can
    /// still run afterwards only if it was built again, so this consumes it.
    fn check(&self) -> PyResult<()> {
        let built = self.take()?;
        built.graph.check().map_err(|e| errors::runtime(&e, ""))
    }

    /// The names of the nodes, in the order added (for a loaded graph, sorted).
    #[getter]
    fn nodes(&self) -> PyResult<Vec<String>> {
        self.with(|built| Ok(built.names.clone()))
    }

    fn __repr__(&self) -> String {
        match &*self.lock() {
            Some(b) => format!("Graph({}, {} nodes)", b.origin, b.names.len()),
            None => "Graph(already run)".to_string(),
        }
    }
}

/// The dtype, vector length and `node.port` text of an output.
fn output_type(built: &Built, port: &Bound<'_, PyAny>) -> PyResult<(Dtype, usize, String)> {
    let (id, node, name) = end_of(built, port, true)?;
    let ports = built.graph.ports(id).expect("the id was just found");
    let spec = ports
        .output_index(&name)
        .map(|i| &ports.outputs[i])
        .ok_or_else(|| {
            let names: Vec<&str> = ports.outputs.iter().map(|p| p.name.as_str()).collect();
            raise::<PortError>(
                format!(
                    "node '{node}' has no output port '{name}' (it has: {})",
                    names.join(", ")
                ),
                Some(&node),
                Some(&name),
                None,
            )
        })?;
    let dtype = Dtype::of_item(spec.item).ok_or_else(|| {
        raise::<crate::errors::ItemTypeError>(
            format!(
                "{node}.{name} carries {}, which numpy cannot take here (c32, f32, i16, u8)",
                spec.item.name()
            ),
            Some(&node),
            Some(&name),
            None,
        )
    })?;
    Ok((dtype, spec.vlen, format!("{node}.{name}")))
}

/// The first mistake of a node as the exception of its kind, the others in its message.
fn node_error(name: &str, mistakes: &[sluice_graph::NodeMistake]) -> PyErr {
    let message = mistakes
        .iter()
        .map(|m| m.message.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let first = &mistakes[0];
    match first.kind {
        MistakeKind::UnknownBlock => raise::<UnknownBlockError>(message, Some(name), None, None),
        MistakeKind::UnknownParam | MistakeKind::BadParam => {
            raise::<ParameterError>(message, Some(name), None, first.param.as_deref())
        }
    }
}
