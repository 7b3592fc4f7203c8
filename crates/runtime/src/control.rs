//! Run-time parameters: changing a node's parameter while its graph runs (retune an oscillator,
//! change a gain or a beam angle), from Rust through a [`ControlHandle`] or from the command
//! line through `sluice run --control`.
//!
//! A node declares what can be changed ([`Node::controls`](crate::Node::controls)) and applies a
//! change in [`Node::set_control`](crate::Node::set_control). A change is delivered to the node's
//! mailbox and applied by the runtime on the node's own thread **between two `work` calls**, so
//! it takes effect at a known item offset: the index of the first item the node produces after
//! it (of its first output; for a sink, of the first item it consumes after it). The runtime
//! records the change as a stream tag at that offset on every output, with key
//! `set:<param>` ([`tag_key`]), the new value, and the node's name as the tag's source, so that
//! downstream nodes and files see exactly where it took effect; and it returns the offset to
//! the caller.
//!
//! A node applies pending changes each time it is about to fire. A node parked on a queue is
//! woken within a wait slice (tens of milliseconds) to apply them; a node that never fires
//! again (its graph ended, it ended, it blocks inside `work`) cannot apply them, and
//! [`ControlHandle::set`] then returns an error instead of waiting forever.
//!
//! ```
//! use sluice_runtime::{ControlSpec, Graph, Node, NodeError, Ports, TagValue, Work, WorkIo};
//! use sluice_runtime::control;
//!
//! /// Multiplies by a gain that can be changed while running.
//! struct Gain { gain: f32 }
//!
//! impl Node for Gain {
//!     fn ports(&self) -> Ports { Ports::new().input::<f32>("in").output::<f32>("out") }
//!     fn controls(&self) -> Vec<ControlSpec> {
//!         vec![ControlSpec { name: "gain", expects: "a number", help: "linear gain" }]
//!     }
//!     fn set_control(&mut self, name: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
//!         match name {
//!             "gain" => self.gain = control::number(value, "a number")? as f32,
//!             _ => unreachable!("the runtime only delivers declared controls"),
//!         }
//!         Ok(())
//!     }
//!     fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
//!         # let _ = io; Ok(Work::Done)
//!     }
//! }
//!
//! let mut graph = Graph::new();
//! graph.add("g", Gain { gain: 1.0 }).unwrap();
//! let handle = graph.control_handle();
//! // On another thread, while `graph.run(..)` runs: `handle.set("g", "gain", 2.0.into())`,
//! // which returns the item offset where the new gain starts.
//! let err = handle.set("g", "gian", TagValue::F64(2.0)).unwrap_err();
//! assert_eq!(err.to_string(), "node 'g' has no run-time parameter 'gian' (it has: gain)");
//! ```

use crate::NodeError;
use sluice_queue::TagValue;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;
use thiserror::Error;

/// The prefix of the tag key that records a change: a change of `gain` is tagged `set:gain`.
pub const TAG_PREFIX: &str = "set:";

/// The key of the tag that records a change of `param`: `set:<param>`.
pub fn tag_key(param: &str) -> String {
    format!("{TAG_PREFIX}{param}")
}

/// How long [`ControlHandle::set`] waits for the node to apply a change, unless
/// [`ControlHandle::with_timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// One parameter a node lets users change while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlSpec {
    /// Its name (as in the graph file, e.g. `frequency`).
    pub name: &'static str,
    /// The values it takes, in words, for error messages: e.g. `"a number of Hz"`.
    pub expects: &'static str,
    /// What it does.
    pub help: &'static str,
}

/// Why a change was not applied. Every variant names the node and the parameter.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ControlError {
    /// No node has this name.
    #[error("no node named '{node}' in the graph (nodes with run-time parameters: {available})")]
    NoSuchNode {
        /// The name asked for.
        node: String,
        /// The nodes that have run-time parameters, comma-separated (or "none").
        available: String,
    },
    /// The node has no run-time parameter of this name.
    #[error(
        "node '{node}' has no run-time parameter '{param}' ({})",
        it_has(available)
    )]
    NoSuchParam {
        /// The node.
        node: String,
        /// The parameter asked for.
        param: String,
        /// Its run-time parameters, comma-separated (empty: none).
        available: String,
    },
    /// The node refused the value.
    #[error("node '{node}': parameter '{param}' must be {expected}, not {value}")]
    BadValue {
        /// The node.
        node: String,
        /// The parameter.
        param: String,
        /// What it takes, in words.
        expected: String,
        /// The value given, as text.
        value: String,
    },
    /// The node failed to apply the value for another reason.
    #[error("node '{node}' could not set '{param}': {message}")]
    Rejected {
        /// The node.
        node: String,
        /// The parameter.
        param: String,
        /// Why.
        message: String,
    },
    /// The node is not running: it has ended, or its graph has finished or was never run.
    #[error("node '{node}' is not running (it has ended, or its graph has finished): '{param}' was not set")]
    NotRunning {
        /// The node.
        node: String,
        /// The parameter.
        param: String,
    },
    /// The node did not fire within the timeout, so the change was withdrawn, not applied.
    #[error("node '{node}' has not fired for {timeout:?} (it waits for input, or blocks inside work): '{param}' was not set")]
    Timeout {
        /// The node.
        node: String,
        /// The parameter.
        param: String,
        /// How long the caller waited.
        timeout: Duration,
    },
}

fn it_has(available: &str) -> String {
    if available.is_empty() {
        "it has none".to_string()
    } else {
        format!("it has: {available}")
    }
}

/// A number from a control value (integers are accepted too), or
/// [`NodeError::BadValue`] saying what was `expected`: the usual first line of a
/// [`Node::set_control`](crate::Node::set_control).
pub fn number(value: &TagValue, expected: &str) -> Result<f64, NodeError> {
    match value {
        TagValue::F64(x) => Ok(*x),
        TagValue::I64(i) => Ok(*i as f64),
        TagValue::U64(u) => Ok(*u as f64),
        _ => Err(NodeError::BadValue {
            expected: expected.to_string(),
        }),
    }
}

/// A control value from text, as the command line gives it: a whole number becomes
/// [`TagValue::I64`], another number [`TagValue::F64`], `true`/`false` a [`TagValue::Bool`], a
/// `"quoted"` text the text inside the quotes, and anything else the text itself.
pub fn parse_value(text: &str) -> TagValue {
    let text = text.trim();
    let plain = text.replace('_', "");
    if let Ok(i) = plain.parse::<i64>() {
        return TagValue::I64(i);
    }
    if let Ok(x) = plain.parse::<f64>() {
        return TagValue::F64(x);
    }
    match text {
        "true" => TagValue::Bool(true),
        "false" => TagValue::Bool(false),
        _ => {
            let unquoted = text
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .unwrap_or(text);
            TagValue::Str(unquoted.into())
        }
    }
}

/// A value as users write it, for error messages.
pub fn value_text(value: &TagValue) -> String {
    match value {
        TagValue::Null => "nothing".to_string(),
        TagValue::Bool(b) => b.to_string(),
        TagValue::I64(i) => i.to_string(),
        TagValue::U64(u) => u.to_string(),
        TagValue::F64(x) => x.to_string(),
        TagValue::Str(s) => format!("'{s}'"),
        other => format!("{other:?}"),
    }
}

/// A change posted by [`ControlHandle::post`], not necessarily applied yet.
#[derive(Debug)]
pub struct PendingChange {
    answer: mpsc::Receiver<Result<u64, ControlError>>,
    node: String,
    param: String,
}

impl PendingChange {
    /// `None` while the node has not applied the change; then the item offset where it took
    /// effect, or why it did not (refused, or the node ended first).
    pub fn outcome(&self) -> Option<Result<u64, ControlError>> {
        match self.answer.try_recv() {
            Ok(outcome) => Some(outcome),
            Err(mpsc::TryRecvError::Empty) => None,
            Err(mpsc::TryRecvError::Disconnected) => Some(Err(ControlError::NotRunning {
                node: self.node.clone(),
                param: self.param.clone(),
            })),
        }
    }
}

/// A change waiting in a node's mailbox.
struct Request {
    id: u64,
    param: String,
    value: TagValue,
    reply: SyncSender<Result<u64, ControlError>>,
}

#[derive(Default)]
struct Inbox {
    requests: VecDeque<Request>,
    closed: bool,
    next_id: u64,
}

/// A node's mailbox: filled by [`ControlHandle`]s on any thread, drained on the node's thread.
pub(crate) struct Mailbox {
    node: String,
    /// Whether `inbox` holds requests: one relaxed load per firing when it does not.
    has_mail: AtomicBool,
    inbox: Mutex<Inbox>,
}

impl Mailbox {
    fn new(node: &str) -> Self {
        Mailbox {
            node: node.to_string(),
            has_mail: AtomicBool::new(false),
            inbox: Mutex::new(Inbox::default()),
        }
    }

    /// Whether changes are waiting.
    #[inline]
    pub(crate) fn has_mail(&self) -> bool {
        self.has_mail.load(Ordering::Acquire)
    }

    /// Queues a change; its id, or an error when the node is not running.
    fn post(
        &self,
        param: &str,
        value: TagValue,
        reply: SyncSender<Result<u64, ControlError>>,
    ) -> Result<u64, ControlError> {
        let mut inbox = self.inbox.lock().unwrap_or_else(PoisonError::into_inner);
        if inbox.closed {
            return Err(ControlError::NotRunning {
                node: self.node.clone(),
                param: param.to_string(),
            });
        }
        let id = inbox.next_id;
        inbox.next_id += 1;
        inbox.requests.push_back(Request {
            id,
            param: param.to_string(),
            value,
            reply,
        });
        self.has_mail.store(true, Ordering::Release);
        Ok(id)
    }

    /// Takes back request `id` if the node has not picked it up yet: true if it was withdrawn.
    fn withdraw(&self, id: u64) -> bool {
        let mut inbox = self.inbox.lock().unwrap_or_else(PoisonError::into_inner);
        let before = inbox.requests.len();
        inbox.requests.retain(|r| r.id != id);
        if inbox.requests.is_empty() {
            self.has_mail.store(false, Ordering::Release);
        }
        inbox.requests.len() < before
    }

    /// Applies every waiting change through `apply` (on the node's thread), replying to each
    /// caller. Does nothing if a caller holds the lock right now (the changes wait for the next
    /// firing). Returns the first error `apply` reports as fatal for the node.
    pub(crate) fn drain<E>(
        &self,
        mut apply: impl FnMut(&str, &TagValue) -> Result<Result<u64, ControlError>, E>,
    ) -> Result<(), E> {
        let Ok(mut inbox) = self.inbox.try_lock() else {
            return Ok(());
        };
        while let Some(request) = inbox.requests.pop_front() {
            match apply(&request.param, &request.value) {
                Ok(outcome) => {
                    // The caller may have given up waiting; then nobody needs the answer.
                    let _ = request.reply.try_send(outcome);
                }
                Err(fatal) => {
                    let _ = request.reply.try_send(Err(ControlError::Rejected {
                        node: self.node.clone(),
                        param: request.param.clone(),
                        message: "the node failed while applying it".to_string(),
                    }));
                    if inbox.requests.is_empty() {
                        self.has_mail.store(false, Ordering::Release);
                    }
                    return Err(fatal);
                }
            }
        }
        self.has_mail.store(false, Ordering::Release);
        Ok(())
    }

    /// Refuses every waiting and future change: the node has ended.
    pub(crate) fn close(&self) {
        let mut inbox = self.inbox.lock().unwrap_or_else(PoisonError::into_inner);
        inbox.closed = true;
        for request in inbox.requests.drain(..) {
            let _ = request.reply.try_send(Err(ControlError::NotRunning {
                node: self.node.clone(),
                param: request.param,
            }));
        }
        self.has_mail.store(false, Ordering::Release);
    }
}

/// The node's end of its mailbox, owned by the graph and then by the running node; dropping it
/// (the node ended, or the graph was dropped without running) closes the mailbox.
pub(crate) struct ControlPort(pub(crate) Arc<Mailbox>);

impl Drop for ControlPort {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// A node as the control board knows it.
struct Entry {
    name: String,
    controls: Vec<ControlSpec>,
    mailbox: Arc<Mailbox>,
}

/// Every node of a graph with its run-time parameters and mailbox; shared by the graph and its
/// handles.
#[derive(Default)]
pub(crate) struct Board {
    nodes: RwLock<Vec<Entry>>,
}

impl Board {
    /// Registers a node; returns its end of the new mailbox.
    pub(crate) fn add(&self, name: &str, controls: Vec<ControlSpec>) -> ControlPort {
        let mailbox = Arc::new(Mailbox::new(name));
        self.nodes
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Entry {
                name: name.to_string(),
                controls,
                mailbox: Arc::clone(&mailbox),
            });
        ControlPort(mailbox)
    }

    /// The run-time parameters of node `name` are now `controls` (its node was replaced before
    /// the graph ran); its mailbox stays.
    pub(crate) fn set_controls(&self, name: &str, controls: Vec<ControlSpec>) {
        let mut nodes = self.nodes.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = nodes.iter_mut().find(|e| e.name == name) {
            entry.controls = controls;
        }
    }
}

/// Changes run-time parameters of a graph's nodes, from any thread, while the graph runs.
/// Obtained from [`Graph::control_handle`](crate::Graph::control_handle) before the graph is
/// run; cheap to clone; [`Send`] and [`Sync`].
#[derive(Clone)]
pub struct ControlHandle {
    board: Arc<Board>,
    timeout: Duration,
}

impl std::fmt::Debug for ControlHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlHandle")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ControlHandle {
    pub(crate) fn new(board: Arc<Board>) -> Self {
        ControlHandle {
            board,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Puts `controls` in place of node `name`'s (a node replaced while the graph runs).
    pub(crate) fn set_controls(&self, name: &str, controls: Vec<ControlSpec>) {
        self.board.set_controls(name, controls);
    }

    /// The same handle, waiting at most `timeout` for each change to be applied.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets `param` of node `node` to `value` and waits until the node has applied it
    /// (at most the handle's timeout, [`DEFAULT_TIMEOUT`] unless changed). Returns the item
    /// offset at which the change took effect: the index of the first item the node produced
    /// after it on its first output (for a node without outputs, the first item it consumed
    /// after it), where a `set:<param>` tag now sits on every output.
    ///
    /// Errors name the node and parameter: an unknown node or parameter, a value the node
    /// refuses, a node that is not running, or one that did not fire in time (the change is
    /// then withdrawn, never applied later).
    pub fn set(&self, node: &str, param: &str, value: TagValue) -> Result<u64, ControlError> {
        let mailbox = self.mailbox(node, param)?;
        let (reply, answer) = mpsc::sync_channel(1);
        let id = mailbox.post(param, value, reply)?;
        let not_running = || ControlError::NotRunning {
            node: node.to_string(),
            param: param.to_string(),
        };
        match answer.recv_timeout(self.timeout) {
            Ok(outcome) => outcome,
            Err(RecvTimeoutError::Disconnected) => Err(not_running()),
            Err(RecvTimeoutError::Timeout) => {
                if mailbox.withdraw(id) {
                    return Err(ControlError::Timeout {
                        node: node.to_string(),
                        param: param.to_string(),
                        timeout: self.timeout,
                    });
                }
                // The node took it just now: its answer is on the way (or the node ended).
                answer.recv().unwrap_or_else(|_| Err(not_running()))
            }
        }
    }

    /// Posts the change [`ControlHandle::set`] makes without waiting for it: for a node that
    /// must not block in its `work` (`message_to_param`). The change is applied as `set`'s is,
    /// at the target's next firing; [`PendingChange::outcome`] says when it was, and at which
    /// item.
    pub fn post(
        &self,
        node: &str,
        param: &str,
        value: TagValue,
    ) -> Result<PendingChange, ControlError> {
        let mailbox = self.mailbox(node, param)?;
        let (reply, answer) = mpsc::sync_channel(1);
        mailbox.post(param, value, reply)?;
        Ok(PendingChange {
            answer,
            node: node.to_string(),
            param: param.to_string(),
        })
    }

    /// The mailbox of `node`, which must have the run-time parameter `param`.
    fn mailbox(&self, node: &str, param: &str) -> Result<Arc<Mailbox>, ControlError> {
        Ok({
            let nodes = self
                .board
                .nodes
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            let Some(entry) = nodes.iter().find(|e| e.name == node) else {
                let with: Vec<&str> = nodes
                    .iter()
                    .filter(|e| !e.controls.is_empty())
                    .map(|e| e.name.as_str())
                    .collect();
                return Err(ControlError::NoSuchNode {
                    node: node.to_string(),
                    available: if with.is_empty() {
                        "none".to_string()
                    } else {
                        with.join(", ")
                    },
                });
            };
            if !entry.controls.iter().any(|c| c.name == param) {
                let names: Vec<&str> = entry.controls.iter().map(|c| c.name).collect();
                return Err(ControlError::NoSuchParam {
                    node: node.to_string(),
                    param: param.to_string(),
                    available: names.join(", "),
                });
            }
            Arc::clone(&entry.mailbox)
        })
    }

    /// Every node that has run-time parameters, with them, in the order the nodes were added.
    pub fn controls(&self) -> Vec<(String, Vec<ControlSpec>)> {
        self.board
            .nodes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|e| !e.controls.is_empty())
            .map(|e| (e.name.clone(), e.controls.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_as_the_command_line_writes_them() {
        assert_eq!(parse_value("440"), TagValue::I64(440));
        assert_eq!(parse_value(" 1_000 "), TagValue::I64(1000));
        assert_eq!(parse_value("-2.5e3"), TagValue::F64(-2500.0));
        assert_eq!(parse_value("true"), TagValue::Bool(true));
        assert_eq!(parse_value("\"c32\""), TagValue::Str("c32".into()));
        assert_eq!(parse_value("hann"), TagValue::Str("hann".into()));
        assert_eq!(number(&TagValue::I64(3), "x").unwrap(), 3.0);
        assert_eq!(
            number(&TagValue::Str("a".into()), "a gain")
                .unwrap_err()
                .to_string(),
            "must be a gain"
        );
    }

    #[test]
    fn a_closed_mailbox_refuses_and_answers_what_waited() {
        let board = Arc::new(Board::default());
        let port = board.add("n", Vec::new());
        let (tx, rx) = mpsc::sync_channel(1);
        port.0.post("p", TagValue::I64(1), tx).unwrap();
        assert!(port.0.has_mail());
        let mailbox = Arc::clone(&port.0);
        drop(port);
        assert!(!mailbox.has_mail());
        assert_eq!(
            rx.recv().unwrap().unwrap_err().to_string(),
            "node 'n' is not running (it has ended, or its graph has finished): 'p' was not set"
        );
        let (tx, _rx) = mpsc::sync_channel(1);
        assert!(matches!(
            mailbox.post("p", TagValue::I64(1), tx),
            Err(ControlError::NotRunning { .. })
        ));
    }

    #[test]
    fn a_withdrawn_request_is_never_applied() {
        let board = Arc::new(Board::default());
        let port = board.add("n", Vec::new());
        let (tx, _rx) = mpsc::sync_channel(1);
        let id = port.0.post("p", TagValue::I64(1), tx).unwrap();
        assert!(port.0.withdraw(id));
        assert!(!port.0.has_mail());
        let mut applied = 0;
        port.0
            .drain(|_, _| -> Result<_, ()> {
                applied += 1;
                Ok(Ok(0))
            })
            .unwrap();
        assert_eq!(applied, 0);
    }
}
