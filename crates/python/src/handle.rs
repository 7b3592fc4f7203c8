//! `sluice.Handle`: a graph running in the background. The graph runs on threads of its own,
//! without the GIL; the handle stops it, waits for it (Ctrl-C included), reports progress and
//! statistics, changes run-time parameters and lends windows of tapped outputs.

use crate::dtype::Dtype;
use crate::errors::{self, raise, ControlError, GraphError};
use crate::graph::Built;
use crate::pyblock::PyErrors;
use crate::tap::{Reader, TapShared};
use crate::values::to_tag;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use sluice_runtime::{
    ControlHandle, Progress, RunOptions, RunReport, RuntimeError, Scheduler, StopHandle,
};
use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A tapped output (see `Graph.tap`).
pub struct Tap {
    pub shared: Arc<TapShared>,
    pub dtype: Dtype,
    pub vlen: usize,
    pub max_items: usize,
}

type Outcome = Result<RunReport, RuntimeError>;

/// The run's end, once it came.
enum State {
    Running(Mutex<Receiver<Outcome>>),
    Ended(Outcome),
}

/// A running graph (`Graph.start()` returns one).
#[pyclass(module = "sluice", name = "Handle")]
pub struct Handle {
    stop: StopHandle,
    control: ControlHandle,
    progress: Progress,
    state: Mutex<State>,
    taps: BTreeMap<String, Tap>,
    py_errors: PyErrors,
    /// The web console serving this run (`start(http=...)`); it stops with the handle.
    console: Option<sluice_web::Console>,
}

/// The scheduler a `scheduler=` argument names.
fn scheduler_of(obj: Option<&Bound<'_, PyAny>>, needs_threads: bool) -> PyResult<Scheduler> {
    let Some(obj) = obj else {
        // Python blocks and taps wait inside work (for the GIL, for the reader): a thread each.
        return Ok(if needs_threads {
            Scheduler::ThreadPerNode
        } else {
            Scheduler::Auto
        });
    };
    if let Ok(n) = obj.extract::<usize>() {
        return Ok(Scheduler::Pooled(n.max(1)));
    }
    match obj.extract::<String>()?.as_str() {
        "auto" => Ok(Scheduler::Auto),
        "thread_per_node" => Ok(Scheduler::ThreadPerNode),
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "scheduler '{other}': use \"auto\", \"thread_per_node\" or a number of threads"
        ))),
    }
}

/// Starts `built` on a thread of its own, with the web console on `http` (a loopback
/// `address:port`; port 0 picks a free one) when given.
pub fn start(
    built: Built,
    scheduler: Option<&Bound<'_, PyAny>>,
    http: Option<&str>,
) -> PyResult<Handle> {
    let scheduler = scheduler_of(scheduler, built.needs_threads)?;
    let stop = StopHandle::new();
    let progress = Progress::new();
    let control = built.graph.control_handle();
    let monitor = sluice_runtime::Monitor::new();
    let console = match http {
        Some(text) => {
            let bind: std::net::SocketAddr = text.parse().map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "http='{}': expected a loopback address and port, e.g. \"127.0.0.1:0\"",
                    text.escape_default()
                ))
            })?;
            let console = sluice_web::Console::start(
                sluice_web::ConsoleOptions { bind, token: None },
                sluice_web::RunHandles {
                    control: control.clone(),
                    stop: stop.clone(),
                    progress: progress.clone(),
                    monitor: monitor.clone(),
                    title: built.origin.clone(),
                },
            )
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
            // As `sluice run --http` does: the address to open, token in the fragment.
            eprintln!("sluice: console at {}", console.url());
            Some(console)
        }
        None => None,
    };
    let opts = RunOptions {
        scheduler,
        pin_cores: false,
        realtime_priority: None,
        deadlock_timeout: Duration::from_secs(1),
        stop: Some(stop.clone()),
        progress: Some(progress.clone()),
        monitor: console.is_some().then_some(monitor),
        spared_by_stop: Vec::new(),
    };
    let (tx, rx) = mpsc::channel();
    let graph = built.graph;
    let taps: Vec<Arc<TapShared>> = built.taps.values().map(|t| Arc::clone(&t.shared)).collect();
    std::thread::Builder::new()
        .name("sluice-graph".into())
        .spawn(move || {
            let outcome = graph.run(&opts);
            // A reader waiting on a tap whose node never ran must learn the run is over.
            for tap in taps {
                tap.end();
            }
            let _ = tx.send(outcome);
        })
        .map_err(|e| {
            raise::<GraphError>(
                format!("cannot start the graph's thread: {e}"),
                None,
                None,
                None,
            )
        })?;
    Ok(Handle {
        stop,
        control,
        progress,
        state: Mutex::new(State::Running(Mutex::new(rx))),
        taps: built.taps,
        py_errors: built.py_errors,
        console,
    })
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl Handle {
    /// Waits for the end (at most `timeout` seconds), without the GIL, stopping the graph on
    /// Ctrl-C; returns the statistics or raises the run's error.
    pub fn wait_blocking(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        let deadline = timeout.map(|t| Instant::now() + Duration::from_secs_f64(t.max(0.0)));
        let mut interrupted: Option<PyErr> = None;
        loop {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if let State::Running(rx) = &*state {
                let got = py.detach(|| {
                    rx.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .recv_timeout(Duration::from_millis(50))
                });
                match got {
                    Ok(outcome) => *state = State::Ended(outcome),
                    Err(RecvTimeoutError::Disconnected) => {
                        *state = State::Ended(Err(RuntimeError::Deadlock {
                            waits: "the graph's thread ended without a result".into(),
                        }))
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        drop(state);
                        if let Err(e) = py.check_signals() {
                            // Ctrl-C: stop gracefully, let the graph drain, then re-raise.
                            self.stop.stop();
                            interrupted.get_or_insert(e);
                        }
                        if deadline.is_some_and(|d| Instant::now() >= d) && interrupted.is_none() {
                            return Ok(py.None());
                        }
                        continue;
                    }
                }
            }
            if let Some(e) = interrupted {
                return Err(e);
            }
            let State::Ended(outcome) = &*state else {
                unreachable!("set just above")
            };
            return match outcome {
                Ok(report) => Ok(report_stats(py, report)?.into_any().unbind()),
                Err(e) => Err(self.run_error(py, e)),
            };
        }
    }

    fn run_error(&self, py: Python<'_>, e: &RuntimeError) -> PyErr {
        let err = errors::runtime(e, "");
        if let RuntimeError::NodeFailed { node, .. } = e {
            let errors = self
                .py_errors
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(cause) = errors.get(node) {
                err.set_cause(py, Some(cause.clone_ref(py)));
            }
        }
        err
    }
}

/// One dict per node: name, items in and out, work calls, busy and waiting seconds, warnings.
fn report_stats<'py>(py: Python<'py>, report: &RunReport) -> PyResult<Bound<'py, PyList>> {
    let mut nodes = Vec::new();
    for n in &report.nodes {
        let d = PyDict::new(py);
        d.set_item("name", &n.name)?;
        d.set_item("items_in", n.items_in)?;
        d.set_item("items_out", n.items_out)?;
        d.set_item("work_calls", n.work_calls)?;
        d.set_item("busy_s", seconds(n.busy))?;
        d.set_item("waiting_s", seconds(n.waiting))?;
        d.set_item("warnings", &n.warnings)?;
        nodes.push(d);
    }
    PyList::new(py, nodes)
}

#[pymethods]
impl Handle {
    /// Asks the graph to stop gracefully: sources end, the rest drains, sinks finish.
    fn stop(&self) {
        self.stop.stop();
    }

    /// Waits for the graph to end (at most `timeout` seconds: None if it is still running
    /// then) and returns its statistics; raises the run's error. Ctrl-C stops the graph.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        self.wait_blocking(py, timeout)
    }

    /// The web console's address with its token in the fragment (open it in a browser), or
    /// `None` when the graph was started without `http=`.
    #[getter]
    fn console_url(&self) -> Option<String> {
        self.console.as_ref().map(sluice_web::Console::url)
    }

    /// Whether the graph is still running.
    #[getter]
    fn running(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let State::Running(rx) = &*state {
            let got = rx.lock().unwrap_or_else(PoisonError::into_inner).try_recv();
            match got {
                Ok(outcome) => *state = State::Ended(outcome),
                Err(mpsc::TryRecvError::Empty) => return true,
                Err(mpsc::TryRecvError::Disconnected) => return false,
            }
        }
        false
    }

    /// Per-node counts: while running, items in and out so far; once ended, the full
    /// statistics as `wait()` returns them.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let _ = self.running();
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let State::Ended(Ok(report)) = &*state {
            return report_stats(py, report);
        }
        let mut nodes = Vec::new();
        for n in self.progress.snapshot() {
            let d = PyDict::new(py);
            d.set_item("name", &n.name)?;
            d.set_item("items_in", n.items_in)?;
            d.set_item("items_out", n.items_out)?;
            d.set_item("length", n.length)?;
            nodes.push(d);
        }
        PyList::new(py, nodes)
    }

    /// How far the run has come, 0 to 1, by its furthest bounded node (a file's end, a
    /// `head`); None for a graph that runs until stopped.
    #[getter]
    fn progress(&self) -> Option<f64> {
        self.progress.leading().map(|(_, f)| f)
    }

    /// Changes run-time parameter `"node.param"` (one its block marks settable) to `value`
    /// and returns the item offset where the change took effect, as `sluice ctl` does.
    /// Raises `ControlError`.
    fn set(&self, py: Python<'_>, target: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
        let (node, param) = target
            .rsplit_once('.')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty())
            .ok_or_else(|| {
                raise::<ControlError>(
                    format!("set('{target}'): name a node and a parameter as \"node.param\""),
                    None,
                    None,
                    None,
                )
            })?;
        let value = to_tag(value)?;
        let control = self.control.clone();
        let (n, p) = (node.to_string(), param.to_string());
        py.detach(move || control.set(&n, &p, value))
            .map_err(|e| errors::control(&e, node, param))
    }

    /// Iterates over output `port` (tapped with `Graph.tap` or `start(read=[...])`) in chunks
    /// of `items` items: each is `(array, tags)`, a read-only numpy view of queue memory (no
    /// copy) and the tags in it. A chunk is valid until the next iteration, which releases
    /// it; copy what you keep.
    #[pyo3(signature = (port, items=4096))]
    fn read(&self, port: &str, items: usize) -> PyResult<Reader> {
        let tap = self.taps.get(port).ok_or_else(|| {
            let tapped: Vec<&str> = self.taps.keys().map(String::as_str).collect();
            raise::<crate::errors::PortError>(
                format!(
                    "'{port}' is not tapped (tapped: {}): start the graph with \
                     start(read=[\"{port}\"]) or call Graph.tap(\"{port}\") first",
                    if tapped.is_empty() {
                        "none".to_string()
                    } else {
                        tapped.join(", ")
                    }
                ),
                None,
                Some(port),
                None,
            )
        })?;
        Reader::new(
            Arc::clone(&tap.shared),
            tap.dtype,
            tap.vlen,
            tap.max_items,
            items,
            port,
        )
    }

    fn __repr__(&self) -> String {
        format!("Handle(running={})", self.running())
    }
}
