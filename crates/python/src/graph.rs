//! `sluice.Graph`: a graph loaded from a file or text, or built in code, run blocking or in
//! the background. Building in code goes through the graph loader's own node checks
//! (`sluice_graph::build_node`) and the runtime's connection checks, so every mistake reads as
//! it would in a graph file.
//!
//! Rates follow the stream in a graph built in code as they do in a graph file, with the
//! loader's own code (`sluice_graph::follow_rates`): each node added by block type name is
//! remembered with its parameters as given, and each edge; every `connect` follows rates
//! through the graph so far (a rate given against the stream's, or a node whose inputs run at
//! different rates, is refused there, in the loader's words), and before the graph runs
//! (`run`, `start`, `check`) they are followed once more through the whole graph. A node whose
//! parameters that follow the stream (a filter's `sample_rate`) were filled in is built again
//! with them and put in place of the one built at `add`. A node that cannot be built at all
//! without its stream's rate (a `rotator`, a `fir` designed in Hz) waits for it: it is built
//! by the `connect` that brings the rate, and its edges are made then. Nodes added as Python
//! objects declare no rate: rates stop there, as at any node whose rate is known only when it
//! runs.

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
use sluice_graph::{
    build_node, follow_rates, CodeEdge, CodeNode, MistakeKind, NodeMistake, Override, Params,
    Registry,
};
use sluice_runtime::{Graph as RtGraph, Node, NodeId};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use toml::Value;

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
    /// The nodes added by block type name, in the order added: what rates are followed
    /// through, and what is built again once they are.
    recipes: Vec<Recipe>,
    /// Every edge made or waiting, for following rates.
    rate_edges: Vec<CodeEdge>,
    /// Edges to or from a node that waits for its stream's rate, made once it is built.
    waiting: Vec<WaitingEdge>,
}

/// A node added by block type name, as given.
struct Recipe {
    name: String,
    kind: String,
    params: Vec<(String, Value)>,
    /// The values its parameters that follow the stream were built with (in the order the
    /// block declares them); `None` while it waits for its stream's rate, not yet in the
    /// runtime graph.
    built_with: Option<Vec<Option<Value>>>,
}

/// An edge as `connect` was given it, waiting for a node to be built.
struct WaitingEdge {
    from: String,
    to: String,
    capacity: Option<usize>,
}

impl Built {
    /// Whether node `name` waits for its stream's rate.
    fn waits(&self, name: &str) -> bool {
        self.recipes
            .iter()
            .any(|r| r.name == name && r.built_with.is_none())
    }

    /// The node (and port, when named) of an end that names a node waiting for its rate.
    fn waiting_end(&self, text: &str) -> Option<(String, Option<String>)> {
        if self.waits(text) {
            return Some((text.to_string(), None));
        }
        match text.rsplit_once('.') {
            Some((n, p)) if !p.is_empty() && self.waits(n) => {
                Some((n.to_string(), Some(p.to_string())))
            }
            _ => None,
        }
    }

    /// The nodes added by type name with the rates followed through the edges (and `extra`)
    /// filled in, and the mistakes found doing so.
    fn follow(&self, extra: Option<&CodeEdge>) -> (Vec<CodeNode>, Vec<(String, NodeMistake)>) {
        let mut nodes: Vec<CodeNode> = self
            .recipes
            .iter()
            .map(|r| CodeNode {
                name: r.name.clone(),
                kind: r.kind.clone(),
                params: Params::from_values(r.params.clone()),
            })
            .collect();
        let mut edges = self.rate_edges.clone();
        edges.extend(extra.cloned());
        let (_, mistakes) = follow_rates(registry(), &mut nodes, &edges);
        (nodes, mistakes)
    }

    /// Builds every node whose parameters that follow the stream now have other values than
    /// it was built with (one that waited for its rate is added, one built before is
    /// replaced), then makes the waiting edges whose nodes are all built. With `finally`
    /// (the graph is about to run) a node that still cannot be built is an error; before,
    /// one that waits for its rate goes on waiting.
    fn settle(&mut self, nodes: Vec<CodeNode>, finally: bool) -> PyResult<()> {
        for (recipe, node) in self.recipes.iter_mut().zip(nodes) {
            let now = stream_values(&recipe.kind, &node.params);
            if recipe.built_with.as_ref() == Some(&now) {
                continue;
            }
            let built = match build_node(registry(), &recipe.name, &recipe.kind, node.params) {
                Ok(built) => built,
                Err(m) if !finally && m[0].kind == MistakeKind::RateUnknown => continue,
                Err(m) => return Err(node_error(&recipe.name, &m)),
            };
            let placed = match self.graph.node_id(&recipe.name) {
                Some(id) => self.graph.replace_boxed(id, built),
                None => self.graph.add_boxed(&recipe.name, built).map(drop),
            };
            placed.map_err(|e| errors::runtime(&e, ""))?;
            recipe.built_with = Some(now);
        }
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|e| {
                self.waiting_end(&e.from).is_none() && self.waiting_end(&e.to).is_none()
            });
        self.waiting = waiting;
        for edge in ready {
            join(self, &edge.from, &edge.to, edge.capacity)?;
        }
        Ok(())
    }

    /// The error of a node that waits for its stream's rate: why it cannot be built yet.
    fn waiting_error(&self, name: &str) -> PyErr {
        let (nodes, _) = self.follow(None);
        let kind = self
            .recipes
            .iter()
            .find(|r| r.name == name)
            .map(|r| &r.kind);
        match (kind, nodes.into_iter().find(|n| n.name == name)) {
            (Some(kind), Some(node)) => match build_node(registry(), name, kind, node.params) {
                Err(m) => node_error(name, &m),
                Ok(_) => raise::<GraphError>(
                    format!("node '{name}' is built once its stream's rate is followed: connect its input first"),
                    Some(name),
                    None,
                    None,
                ),
            },
            _ => raise::<GraphError>(format!("no node named '{name}'"), Some(name), None, None),
        }
    }
}

/// The values of the parameters of block type `kind` that follow the stream, in `params`
/// (given or filled in), in the order the block declares them.
fn stream_values(kind: &str, params: &Params) -> Vec<Option<Value>> {
    registry()
        .find(kind)
        .map(|b| {
            b.params
                .iter()
                .filter(|d| d.follows_stream)
                .map(|d| params.value(&d.name).cloned())
                .collect()
        })
        .unwrap_or_default()
}

/// Connects the ends `from` and `to` (texts as `end_text` gives them), both built.
fn join(built: &mut Built, from: &str, to: &str, capacity: Option<usize>) -> PyResult<()> {
    let (from, a, ap) = end_of(built, from, true)?;
    let (to, b, bp) = end_of(built, to, false)?;
    let label = format!("edge {a}.{ap} -> {b}.{bp}: ");
    built
        .graph
        .connect_with(from, &ap, to, &bp, capacity)
        .map_err(|e| errors::runtime(&e, &label))
}

/// The first of the mistakes found following rates as the exception of its kind, the others
/// in its message.
fn rate_error(mistakes: &[(String, NodeMistake)]) -> PyErr {
    let (node, _) = &mistakes[0];
    let all: Vec<NodeMistake> = mistakes.iter().map(|(_, m)| m.clone()).collect();
    node_error(node, &all)
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
/// `g.connect(src, lp)` or `g.connect("src.out", "lp.in")`. Rates follow the stream as in a
/// graph file: a parameter that follows it (a filter's `sample_rate`) and is left out takes
/// the rate of the source before it, through every rate change. Run it with `g.run()`
/// (blocking; Ctrl-C stops it gracefully) or `g.start()` (returns a `Handle`). A graph runs
/// once.
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
                recipes: Vec::new(),
                rate_edges: Vec::new(),
                waiting: Vec::new(),
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

    /// Takes the graph out to run it, once rates are followed through it as a graph file's
    /// are: a rate mistake raises (`ParameterError` for a given rate that disagrees with the
    /// stream's, `GraphError` for a node whose inputs run at different rates), every node whose
    /// parameters that follow the stream were filled in is built again with them, and a node
    /// that still waits for its rate raises its build's `ParameterError`.
    pub fn take(&self) -> PyResult<Built> {
        let mut guard = self.lock();
        let built = guard.as_mut().ok_or_else(already_ran)?;
        let (nodes, mistakes) = built.follow(None);
        if !mistakes.is_empty() {
            return Err(rate_error(&mistakes));
        }
        built.settle(nodes, true)?;
        guard.take().ok_or_else(already_ran)
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

/// The text of one end of an edge: a node's name, or `node.port`.
fn end_text(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    match obj.cast::<NodeRef>() {
        Ok(r) => Ok(r.get().name.clone()),
        Err(_) => obj.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(
                "connect: an end is a node (as add() returns it), a node name, or \"node.port\"",
            )
        }),
    }
}

/// One end of an edge: `node.port`, or a node (with one port on that side). A node that waits
/// for its stream's rate has no ports yet: that is its error.
fn end_of(built: &Built, text: &str, output: bool) -> PyResult<(NodeId, String, String)> {
    if let Some((node, _)) = built.waiting_end(text) {
        return Err(built.waiting_error(&node));
    }
    let (node, port) = match built.graph.node_id(text) {
        Some(_) => (text, None),
        None => match text.rsplit_once('.') {
            Some((n, p)) if !n.is_empty() && !p.is_empty() => (n, Some(p)),
            _ => (text, None),
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
    /// type's (made unique). Raises `UnknownBlockError` or `ParameterError`. A block type that
    /// cannot be built without its stream's rate (a `rotator`, a filter designed in Hz, with
    /// no `sample_rate`) is built by the `connect` that brings the rate; its other parameters
    /// are checked here all the same.
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
            if built.names.contains(&name) {
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
                let given = Params::from_values(values.clone());
                let mut recipe = Recipe {
                    name: name.clone(),
                    kind: base.clone(),
                    built_with: Some(stream_values(&base, &given)),
                    params: values,
                };
                match build_node(registry(), &name, &base, given) {
                    Ok(node) => {
                        built.recipes.push(recipe);
                        node
                    }
                    // Built by the connect that brings its rate (or refused when the graph
                    // runs): every other mistake was found by the declaration's checks.
                    Err(m) if m[0].kind == MistakeKind::RateUnknown => {
                        recipe.built_with = None;
                        built.recipes.push(recipe);
                        built.names.push(name.clone());
                        return Ok(NodeRef { name });
                    }
                    Err(m) => return Err(node_error(&name, &m)),
                }
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
    /// Rates are followed through the graph so far, as a graph file's are: the parameters that
    /// follow the stream (a filter's `sample_rate`) take the stream's rate where they were left
    /// out, and a node that waited for it is built. Raises `PortError`, `ItemTypeError` or
    /// `EdgeError`, and `ParameterError` for a given rate that disagrees with the stream's or
    /// `GraphError` for inputs at different rates, in the graph loader's words.
    #[pyo3(signature = (source, destination, capacity=None))]
    fn connect(
        &self,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
        capacity: Option<usize>,
    ) -> PyResult<()> {
        let (from, to) = (end_text(source)?, end_text(destination)?);
        self.with(|built| {
            // Each end's node, and port where it is known (a node that waits for its rate has
            // no ports yet).
            let end = |text: &str, output: bool| match built.waiting_end(text) {
                Some(end) => Ok(end),
                None => end_of(built, text, output).map(|(_, n, p)| (n, Some(p))),
            };
            let ((a, ap), (b, bp)) = (end(&from, true)?, end(&to, false)?);
            let show = |n: &str, p: &Option<String>| match p {
                Some(p) => format!("{n}.{p}"),
                None => n.to_string(),
            };
            if capacity == Some(0) {
                return Err(raise::<EdgeError>(
                    format!(
                        "edge {} -> {}: capacity must be at least 1 item, not 0",
                        show(&a, &ap),
                        show(&b, &bp)
                    ),
                    None,
                    None,
                    None,
                ));
            }
            let edge: CodeEdge = (a.clone(), ap, b.clone());
            let (nodes, mistakes) = built.follow(Some(&edge));
            if !mistakes.is_empty() {
                return Err(rate_error(&mistakes));
            }
            if built.waits(&a) || built.waits(&b) {
                built.waiting.push(WaitingEdge { from, to, capacity });
            } else {
                join(built, &from, &to, capacity)?;
            }
            built.rate_edges.push(edge);
            built.settle(nodes, false)
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
    /// with its traceback, and the exception as `__cause__`). Rates are followed through the
    /// whole graph first (see `connect`): a node still waiting for its stream's rate raises
    /// `ParameterError`.
    #[pyo3(signature = (scheduler=None))]
    fn run(&self, py: Python<'_>, scheduler: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let handle = start(self.take()?, scheduler, None)?;
        handle.wait_blocking(py, None)
    }

    /// Starts the graph in the background and returns its `Handle` (stop, wait, stats,
    /// progress, set, read). `read` names outputs to tap for `Handle.read` (see `tap`). Stop
    /// or wait for a started graph before the interpreter exits: its Python blocks need the
    /// interpreter to the end. `http="127.0.0.1:0"` serves the web console (as `sluice run
    /// --http`; loopback only, port 0 picks one): its address is printed and is
    /// `Handle.console_url`.
    #[pyo3(signature = (scheduler=None, read=None, http=None))]
    fn start(
        &self,
        scheduler: Option<&Bound<'_, PyAny>>,
        read: Option<Vec<Bound<'_, PyAny>>>,
        http: Option<&str>,
    ) -> PyResult<Handle> {
        for port in read.unwrap_or_default() {
            self.tap(&port, 65536)?;
        }
        start(self.take()?, scheduler, http)
    }

    /// Checks the graph (rates, unconnected ports, cycles, queues) without running it; the graph can
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
    let (id, node, name) = end_of(built, &end_text(port)?, true)?;
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
        MistakeKind::UnknownParam | MistakeKind::BadParam | MistakeKind::RateUnknown => {
            raise::<ParameterError>(message, Some(name), None, first.param.as_deref())
        }
        MistakeKind::InputRates => raise::<GraphError>(message, Some(name), None, None),
    }
}
