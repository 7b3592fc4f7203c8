//! Building a graph: named nodes, typed connections, queue sizes.

use crate::control::{Board, ControlHandle, ControlPort};
use crate::io::{ErasedInput, ErasedOutput};
use crate::node::{Node, TagPolicy};
use crate::port::Ports;
use crate::run::{self, RunOptions};
use crate::stats::RunReport;
use crate::RuntimeError;
use sluice_queue::QueueOptions;
use std::sync::Arc;

/// Bytes of queue per edge unless an edge, a port's window or the graph asks for more: 256 KiB
/// (32768 complex samples). Measured on the development machine (2 cores, 2 MiB L2 each) with
/// a 10-copy chain (`sluice run` of the chain graph, 64 KiB to 1 MiB queues): 256 KiB was
/// fastest both with a thread per node (fewer wake-ups than smaller queues) and with two
/// pooled threads (chunks still pass through several nodes in L2); only a single pooled
/// thread preferred 64 KiB.
pub const DEFAULT_QUEUE_BYTES: usize = 256 * 1024;

/// A node's handle within its graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeId(pub usize);

pub(crate) struct NodeEntry {
    pub(crate) name: String,
    node: Box<dyn Node>,
    pub(crate) ports: Ports,
    control: ControlPort,
}

#[derive(Debug, Clone)]
pub(crate) struct Edge {
    pub(crate) from: (usize, usize),
    pub(crate) to: (usize, usize),
    capacity: Option<usize>,
}

/// How the ports `new` differ from `old` in what an edge was checked against (names, item
/// types, vector lengths, message kinds), in words; `None` when they do not.
pub(crate) fn ports_differ(old: &Ports, new: &Ports) -> Option<String> {
    let side = |kind: &str, old: &[crate::PortSpec], new: &[crate::PortSpec]| {
        let show = |list: &[crate::PortSpec]| {
            let all: Vec<String> = list
                .iter()
                .map(|p| match (&p.message, p.vlen) {
                    (Some(m), _) => format!("{}: {:?} messages", p.name, m.kind),
                    (None, 1) => format!("{}: {}", p.name, p.item.name()),
                    (None, n) => format!("{}: {}[{n}]", p.name, p.item.name()),
                })
                .collect();
            format!("({})", all.join(", "))
        };
        let same = old.len() == new.len()
            && old.iter().zip(new).all(|(a, b)| {
                a.name == b.name
                    && a.item == b.item
                    && a.vlen == b.vlen
                    && a.message.as_ref().map(|m| m.kind) == b.message.as_ref().map(|m| m.kind)
            });
        (!same).then(|| format!("{kind}s {} became {}", show(old), show(new)))
    };
    side("input", &old.inputs, &new.inputs).or_else(|| side("output", &old.outputs, &new.outputs))
}

/// A process network under construction. Add nodes, connect their ports, then run it.
pub struct Graph {
    pub(crate) nodes: Vec<NodeEntry>,
    edges: Vec<Edge>,
    queue_options: QueueOptions,
    default_queue_bytes: usize,
    /// The nodes' run-time parameters and mailboxes, shared with every [`ControlHandle`].
    board: Arc<Board>,
}

impl Default for Graph {
    fn default() -> Self {
        Graph::new()
    }
}

impl Graph {
    /// An empty graph with default queue options.
    pub fn new() -> Self {
        Graph {
            nodes: Vec::new(),
            edges: Vec::new(),
            queue_options: QueueOptions::default(),
            default_queue_bytes: DEFAULT_QUEUE_BYTES,
            board: Arc::new(Board::default()),
        }
    }

    /// Options for every queue of the graph (flavor, huge pages, staggering).
    pub fn set_queue_options(&mut self, opts: QueueOptions) {
        self.queue_options = opts;
    }

    /// Queue size in bytes for edges that name no capacity.
    pub fn set_default_queue_bytes(&mut self, bytes: usize) {
        self.default_queue_bytes = bytes.max(1);
    }

    /// Adds `node` under `name`, which must be unique.
    pub fn add(&mut self, name: &str, node: impl Node + 'static) -> Result<NodeId, RuntimeError> {
        self.add_boxed(name, Box::new(node))
    }

    /// Adds an already boxed node (as graph files do).
    pub fn add_boxed(
        &mut self,
        name: &str,
        mut node: Box<dyn Node>,
    ) -> Result<NodeId, RuntimeError> {
        if self.node_id(name).is_some() {
            return Err(RuntimeError::DuplicateNode(name.to_string()));
        }
        node.attach_control(self.control_handle());
        let ports = node.ports();
        let control = self.board.add(name, node.controls());
        self.nodes.push(NodeEntry {
            name: name.to_string(),
            node,
            ports,
            control,
        });
        Ok(NodeId(self.nodes.len() - 1))
    }

    /// Puts `node` in place of node `id` before the graph runs, keeping its name, its edges and
    /// its mailbox: for a node built again once more is known about it (a graph built in code
    /// learns its stream rates only when it is complete). Refused when `node`'s ports differ
    /// from the old node's in names, item types, vector lengths or message kinds, since the
    /// edges were checked against those; its queue sizes (windows) may differ.
    pub fn replace_boxed(
        &mut self,
        id: NodeId,
        mut node: Box<dyn Node>,
    ) -> Result<(), RuntimeError> {
        let handle = self.control_handle();
        let entry = self
            .nodes
            .get_mut(id.0)
            .ok_or(RuntimeError::NoSuchNode(id.0))?;
        let ports = node.ports();
        if let Some(difference) = ports_differ(&entry.ports, &ports) {
            return Err(RuntimeError::PortsChanged {
                node: entry.name.clone(),
                difference,
            });
        }
        node.attach_control(handle);
        self.board.set_controls(&entry.name, node.controls());
        entry.node = node;
        entry.ports = ports;
        Ok(())
    }

    /// The node called `name`.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name).map(NodeId)
    }

    /// A handle that changes the nodes' run-time parameters while the graph runs (see
    /// [`crate::control`]): take it before [`Graph::run`], use it from any thread. It knows
    /// every node added to this graph, also those added after it was taken.
    pub fn control_handle(&self) -> ControlHandle {
        ControlHandle::new(Arc::clone(&self.board))
    }

    /// The declared ports of `id`.
    pub fn ports(&self, id: NodeId) -> Option<&Ports> {
        self.nodes.get(id.0).map(|n| &n.ports)
    }

    /// Connects output `out` of `from` to input `inp` of `to` with the default queue size.
    pub fn connect(
        &mut self,
        from: NodeId,
        out: &str,
        to: NodeId,
        inp: &str,
    ) -> Result<(), RuntimeError> {
        self.connect_with(from, out, to, inp, None)
    }

    /// Connects like [`Graph::connect`], with a queue of at least `capacity` items if given. An
    /// output may feed several inputs (each reads the same items); an input takes one stream.
    pub fn connect_with(
        &mut self,
        from: NodeId,
        out: &str,
        to: NodeId,
        inp: &str,
        capacity: Option<usize>,
    ) -> Result<(), RuntimeError> {
        let src = self
            .nodes
            .get(from.0)
            .ok_or(RuntimeError::NoSuchNode(from.0))?;
        let dst = self.nodes.get(to.0).ok_or(RuntimeError::NoSuchNode(to.0))?;
        let out_index = src
            .ports
            .output_index(out)
            .ok_or_else(|| RuntimeError::NoSuchPort {
                node: src.name.clone(),
                kind: "output",
                port: out.to_string(),
                available: port_list(src.ports.outputs.iter().map(|p| p.name.as_str())),
            })?;
        let in_index = dst
            .ports
            .input_index(inp)
            .ok_or_else(|| RuntimeError::NoSuchPort {
                node: dst.name.clone(),
                kind: "input",
                port: inp.to_string(),
                available: port_list(dst.ports.inputs.iter().map(|p| p.name.as_str())),
            })?;
        crate::message::check_connection(
            &src.ports.outputs[out_index],
            format!("{}.{out}", src.name),
            &dst.ports.inputs[in_index],
            format!("{}.{inp}", dst.name),
        )?;
        let from_type = src.ports.outputs[out_index].item;
        let to_type = dst.ports.inputs[in_index].item;
        if from_type != to_type {
            return Err(RuntimeError::TypeMismatch {
                from: format!("{}.{out}", src.name),
                from_type: from_type.name(),
                to: format!("{}.{inp}", dst.name),
                to_type: to_type.name(),
            });
        }
        let (from_vlen, to_vlen) = (
            src.ports.outputs[out_index].vlen,
            dst.ports.inputs[in_index].vlen,
        );
        if from_vlen != to_vlen {
            return Err(RuntimeError::VlenMismatch {
                from: format!("{}.{out}", src.name),
                from_vlen,
                to: format!("{}.{inp}", dst.name),
                to_vlen,
                item: from_type.name(),
            });
        }
        if self.edges.iter().any(|e| e.to == (to.0, in_index)) {
            return Err(RuntimeError::InputTaken {
                node: dst.name.clone(),
                port: inp.to_string(),
            });
        }
        self.edges.push(Edge {
            from: (from.0, out_index),
            to: (to.0, in_index),
            capacity,
        });
        Ok(())
    }

    /// Runs the graph on threads (as `opts.scheduler` says) until every node is done, a node
    /// fails or panics (the error names it), or the graph deadlocks.
    pub fn run(self, opts: &RunOptions) -> Result<RunReport, RuntimeError> {
        run::threaded::run(self.build()?, opts)
    }

    /// Checks everything `run` would refuse before running (unconnected ports, cycles, queues
    /// that cannot be created) without running anything.
    pub fn check(self) -> Result<(), RuntimeError> {
        self.build().map(drop)
    }

    /// Runs the graph on the calling thread, calling each node's `work` in turn, in the order
    /// the nodes were added: deterministic, for tests and for hosts without threads.
    pub fn run_stepped(self) -> Result<RunReport, RuntimeError> {
        run::step::run(self.build()?, None)
    }

    /// [`Graph::run_stepped`] that can be asked to stop gracefully through `stop`.
    pub fn run_stepped_with(self, stop: &crate::StopHandle) -> Result<RunReport, RuntimeError> {
        run::step::run(self.build()?, Some(stop))
    }

    /// Each output's queue capacity in items: what its edges ask for (or the default), and at
    /// least the windows the writer and every reader declared.
    fn queue_capacity(&self, ni: usize, pi: usize) -> usize {
        let spec = &self.nodes[ni].ports.outputs[pi];
        let edges: Vec<&Edge> = self.edges.iter().filter(|e| e.from == (ni, pi)).collect();
        let default_items = spec
            .preferred_queue
            .unwrap_or((self.default_queue_bytes / spec.item.size()).max(1));
        let declared = edges
            .iter()
            .map(|e| self.nodes[e.to.0].ports.inputs[e.to.1].min_queue)
            .chain([spec.min_queue])
            .max()
            .unwrap_or(0);
        edges
            .iter()
            .map(|e| e.capacity.unwrap_or(default_items))
            .max()
            .unwrap_or(default_items)
            .max(declared)
    }

    /// Refuses queues that together need more memory than the machine has available (naming
    /// the largest), before any is mapped.
    fn check_queue_memory(&self) -> Result<(), RuntimeError> {
        let Some(available) = sluice_os::available_memory() else {
            return Ok(());
        };
        let mut total = 0u64;
        let mut largest: Option<(u64, usize, usize, &Edge)> = None;
        for (ni, node) in self.nodes.iter().enumerate() {
            for (pi, spec) in node.ports.outputs.iter().enumerate() {
                let Some(edge) = self.edges.iter().find(|e| e.from == (ni, pi)) else {
                    continue; // unconnected: reported by `build`
                };
                if spec.message.is_some() {
                    continue; // inboxes, bounded by their own declarations
                }
                let capacity = self.queue_capacity(ni, pi);
                let bytes = (capacity as u64).saturating_mul(spec.item.size() as u64);
                total = total.saturating_add(bytes);
                if largest.is_none_or(|(b, ..)| bytes > b) {
                    largest = Some((bytes, capacity, spec.item.size(), edge));
                }
            }
        }
        match largest {
            Some((bytes, capacity, item_bytes, edge)) if total > available => {
                Err(RuntimeError::QueueMemory {
                    edge: self.edge_label(edge),
                    capacity,
                    item_bytes,
                    bytes,
                    total,
                    available,
                })
            }
            _ => Ok(()),
        }
    }

    fn edge_label(&self, e: &Edge) -> String {
        let (a, b) = (&self.nodes[e.from.0], &self.nodes[e.to.0]);
        format!(
            "{}.{} -> {}.{}",
            a.name, a.ports.outputs[e.from.1].name, b.name, b.ports.inputs[e.to.1].name
        )
    }

    /// The first cycle among the connections, as the node indices along it (the first repeated
    /// at the end), found by a depth-first search.
    fn find_cycle(&self) -> Option<Vec<usize>> {
        const NEW: u8 = 0;
        const ON_PATH: u8 = 1;
        const DONE: u8 = 2;
        let n = self.nodes.len();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
        for e in &self.edges {
            // A message edge that drops when full never makes its sender wait.
            if !crate::message::breaks_cycles(&self.nodes[e.to.0].ports.inputs[e.to.1]) {
                next[e.from.0].push(e.to.0);
            }
        }
        let mut state = vec![NEW; n];
        for start in 0..n {
            if state[start] != NEW {
                continue;
            }
            // (node, index of its next successor to visit); `path` mirrors the stack.
            let mut stack = vec![(start, 0usize)];
            state[start] = ON_PATH;
            while let Some(&mut (node, ref mut i)) = stack.last_mut() {
                if let Some(&succ) = next[node].get(*i) {
                    *i += 1;
                    match state[succ] {
                        NEW => {
                            state[succ] = ON_PATH;
                            stack.push((succ, 0));
                        }
                        ON_PATH => {
                            let from = stack.iter().position(|&(v, _)| v == succ).unwrap_or(0);
                            let mut cycle: Vec<usize> =
                                stack[from..].iter().map(|&(v, _)| v).collect();
                            cycle.push(succ);
                            return Some(cycle);
                        }
                        _ => {}
                    }
                } else {
                    state[node] = DONE;
                    stack.pop();
                }
            }
        }
        None
    }

    /// Creates every queue and hands each node its ends.
    fn build(self) -> Result<Vec<BuiltNode>, RuntimeError> {
        self.build_with(Vec::new())
    }

    /// The node and input port called `node`.`port`, as an index pair, or why there is none.
    pub(crate) fn input_port(
        &self,
        node: &str,
        port: &str,
    ) -> Result<(usize, usize), RuntimeError> {
        let ni = self
            .node_id(node)
            .ok_or_else(|| RuntimeError::NoSuchNodeName(node.to_string()))?
            .0;
        let entry = &self.nodes[ni];
        let pi = entry
            .ports
            .input_index(port)
            .ok_or_else(|| RuntimeError::NoSuchPort {
                node: entry.name.clone(),
                kind: "input",
                port: port.to_string(),
                available: port_list(entry.ports.inputs.iter().map(|p| p.name.as_str())),
            })?;
        if self.edges.iter().any(|e| e.to == (ni, pi)) {
            return Err(RuntimeError::InputTaken {
                node: entry.name.clone(),
                port: port.to_string(),
            });
        }
        Ok((ni, pi))
    }

    /// The queue options and default queue size the graph was given, for a branch added to it
    /// while it runs.
    pub(crate) fn queue_settings(&self) -> (QueueOptions, usize) {
        (self.queue_options.clone(), self.default_queue_bytes)
    }

    /// Runs the graph as [`Graph::run`] does, able to change while it runs through `live` (see
    /// [`crate::live`]).
    pub fn run_live(
        self,
        opts: &RunOptions,
        live: &crate::live::LiveGraph,
    ) -> Result<RunReport, RuntimeError> {
        let control = self.control_handle();
        let settings = self.queue_settings();
        let mut built = self.build()?;
        live.begin(&mut built, control, settings);
        let report = run::threaded::run(built, opts);
        live.end();
        report
    }

    /// [`Graph::build`] with some inputs fed from outside the graph (a branch added to a
    /// running graph reads the running graph's queues).
    pub(crate) fn build_with(
        self,
        external: Vec<((usize, usize), Box<dyn ErasedInput>)>,
    ) -> Result<Vec<BuiltNode>, RuntimeError> {
        if let Some(cycle) = self.find_cycle() {
            let names: Vec<&str> = cycle.iter().map(|&i| self.nodes[i].name.as_str()).collect();
            return Err(RuntimeError::Cycle {
                path: names.join(" -> "),
            });
        }
        let mut inputs: Vec<Vec<Option<Box<dyn ErasedInput>>>> = self
            .nodes
            .iter()
            .map(|n| n.ports.inputs.iter().map(|_| None).collect())
            .collect();
        for ((ni, pi), input) in external {
            inputs[ni][pi] = Some(input);
        }
        self.check_queue_memory()?;
        let mut outputs: Vec<Vec<Box<dyn ErasedOutput>>> = Vec::with_capacity(self.nodes.len());
        for (ni, node) in self.nodes.iter().enumerate() {
            let mut outs = Vec::with_capacity(node.ports.outputs.len());
            for (pi, spec) in node.ports.outputs.iter().enumerate() {
                let edges: Vec<&Edge> = self.edges.iter().filter(|e| e.from == (ni, pi)).collect();
                if spec.message.is_some() {
                    let (out, ins) = crate::message::build_output(&self, ni, pi, &edges)?;
                    for (e, end) in edges.iter().zip(ins) {
                        inputs[e.to.0][e.to.1] = Some(end);
                    }
                    outs.push(out);
                    continue;
                }
                let Some(first) = edges.first() else {
                    return Err(RuntimeError::Unconnected {
                        kind: "output",
                        node: node.name.clone(),
                        port: spec.name.clone(),
                    });
                };
                let capacity = self.queue_capacity(ni, pi);
                let label: Arc<str> = self.edge_label(first).into();
                let queue_err = |source| RuntimeError::Queue {
                    edge: label.to_string(),
                    source,
                };
                let (writer, reader) = spec
                    .item
                    .make_queue(capacity, &self.queue_options, label.clone())
                    .map_err(queue_err)?;
                inputs[first.to.0][first.to.1] = Some(reader);
                for e in &edges[1..] {
                    let reader = writer.add_reader().map_err(|source| RuntimeError::Queue {
                        edge: self.edge_label(e),
                        source,
                    })?;
                    inputs[e.to.0][e.to.1] = Some(reader);
                }
                outs.push(writer);
            }
            outputs.push(outs);
        }
        let mut built = Vec::with_capacity(self.nodes.len());
        for ((entry, ins), outs) in self.nodes.into_iter().zip(inputs).zip(outputs) {
            let mut connected = Vec::with_capacity(ins.len());
            for (slot, spec) in ins.into_iter().zip(&entry.ports.inputs) {
                let slot = match slot {
                    None if spec.message.is_some() => {
                        Some(crate::message::unconnected_input(&entry.name, spec)?)
                    }
                    slot => slot,
                };
                connected.push(slot.ok_or_else(|| RuntimeError::Unconnected {
                    kind: "input",
                    node: entry.name.clone(),
                    port: spec.name.clone(),
                })?);
            }
            let read_before = connected.iter().map(|i| i.items_read()).sum();
            built.push(BuiltNode {
                input_peers: Vec::new(),
                output_peers: vec![Vec::new(); entry.ports.outputs.len()],
                policy: entry.node.tag_policy(),
                name: entry.name,
                control: entry.control,
                node: entry.node,
                ports: entry.ports,
                inputs: connected,
                outputs: outs,
                started: false,
                stopped: false,
                progress: None,
                swap: crate::live::Swapper::default(),
                read_before,
            });
        }
        for e in &self.edges {
            built[e.from.0].output_peers[e.from.1].push(e.to.0);
        }
        for node in built.iter_mut() {
            node.input_peers = vec![usize::MAX; node.inputs.len()];
        }
        for e in &self.edges {
            built[e.to.0].input_peers[e.to.1] = e.from.0;
        }
        Ok(built)
    }
}

fn port_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let list: Vec<&str> = names.collect();
    if list.is_empty() {
        "none".to_string()
    } else {
        list.join(", ")
    }
}

/// A node with its queue ends, ready to run.
pub(crate) struct BuiltNode {
    pub name: String,
    pub node: Box<dyn Node>,
    pub ports: Ports,
    pub inputs: Vec<Box<dyn ErasedInput>>,
    pub outputs: Vec<Box<dyn ErasedOutput>>,
    pub policy: TagPolicy,
    /// The node feeding each input (index in the graph).
    pub input_peers: Vec<usize>,
    /// The nodes each output feeds.
    pub output_peers: Vec<Vec<usize>>,
    /// Whether [`Node::init`] has run (and so [`Node::stop`] is owed), and whether `stop` has.
    pub started: bool,
    pub stopped: bool,
    /// Where the node's live counts go, when someone watches the run.
    pub progress: Option<std::sync::Arc<crate::progress::NodeProgress>>,
    /// The node's mailbox of run-time parameter changes (closed when this is dropped).
    pub control: ControlPort,
    /// Where a replacement of the node arrives while the graph runs, and its progress.
    pub swap: crate::live::Swapper,
    /// Where its inputs stood when it was built (not 0 for a branch of a running graph).
    pub read_before: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NodeError, Work, WorkIo};

    /// A node of the given ports that ends at once, with a run-time parameter named `knob`.
    struct Shape(Ports, &'static str);

    impl Node for Shape {
        fn ports(&self) -> Ports {
            self.0.clone()
        }
        fn work(&mut self, _io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            Ok(Work::Done)
        }
        fn controls(&self) -> Vec<crate::ControlSpec> {
            vec![crate::ControlSpec {
                name: self.1,
                expects: "a number",
                help: "a parameter the test looks for",
            }]
        }
    }

    #[test]
    fn a_node_is_replaced_by_one_of_the_same_ports_keeping_its_edges() {
        let mut graph = Graph::new();
        let a = graph
            .add("a", Shape(Ports::new().output::<f32>("out"), "gain"))
            .unwrap();
        let b = graph
            .add("b", Shape(Ports::new().input::<f32>("in"), "gain"))
            .unwrap();
        graph.connect(a, "out", b, "in").unwrap();
        graph
            .replace_boxed(
                a,
                Box::new(Shape(Ports::new().output::<f32>("out"), "rate")),
            )
            .unwrap();
        assert_eq!(graph.node_id("a"), Some(a));
        // The new node's run-time parameters are the ones the board knows.
        let controls = graph.control_handle().controls();
        let of_a = &controls.iter().find(|(n, _)| n == "a").unwrap().1;
        assert_eq!(of_a.iter().map(|c| c.name).collect::<Vec<_>>(), ["rate"]);
        graph.check().expect("the edge still joins a to b");
    }

    #[test]
    fn a_node_of_other_ports_is_refused_naming_the_node_and_the_ports() {
        let mut graph = Graph::new();
        let a = graph
            .add("a", Shape(Ports::new().output::<f32>("out"), "gain"))
            .unwrap();
        let e = graph
            .replace_boxed(
                a,
                Box::new(Shape(Ports::new().output::<i16>("out"), "gain")),
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "node 'a': cannot be replaced by a node of other ports: outputs (out: f32) became (out: i16)"
        );
        let e = graph
            .replace_boxed(NodeId(7), Box::new(Shape(Ports::new(), "gain")))
            .unwrap_err();
        assert!(matches!(e, RuntimeError::NoSuchNode(7)), "{e}");
    }
}
