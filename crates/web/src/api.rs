//! The HTTP API: the routes, their JSON, and the streams (documented in `docs/console.md` and
//! `docs/console-openapi.json`).

use crate::http::{self, HttpError, Request};
use crate::server::Shared;
use crate::sse::{self, Stream};
use crate::views::{Framer, View};
use serde_json::{json, Value};
use sluice_runtime::control;
use std::io::Write;
use std::time::Duration;

/// How often a statistics stream sends.
const STATS_PERIOD: Duration = Duration::from_millis(250);

/// Answers `req` on `out`.
pub(crate) fn route(req: &Request, shared: &Shared, out: &mut impl Write) -> Result<(), HttpError> {
    shared.guard.check_host(req)?;
    let get = |body: Vec<u8>, ct: &str, out: &mut dyn Write| {
        let mut out = out;
        http::respond(&mut out, 200, ct, &body).map_err(|e| HttpError::new(500, e.to_string()))
    };
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/") => get(crate::page::HTML.as_bytes().to_vec(), "text/html; charset=utf-8", out),
        ("GET", "/console.js") => get(
            crate::page::JS.as_bytes().to_vec(),
            "text/javascript; charset=utf-8",
            out,
        ),
        ("GET", "/console.css") => get(
            crate::page::CSS.as_bytes().to_vec(),
            "text/css; charset=utf-8",
            out,
        ),
        ("GET", "/api/graph") => get(graph(shared).to_string().into_bytes(), "application/json", out),
        ("GET", "/api/stats") => get(stats(shared).to_string().into_bytes(), "application/json", out),
        ("GET", "/api/cluster") => {
            let body = cluster(shared)?;
            get(body.to_string().into_bytes(), "application/json", out)
        }
        ("GET", "/metrics") => get(
            crate::metrics::render(shared).into_bytes(),
            "text/plain; version=0.0.4; charset=utf-8",
            out,
        ),
        ("POST", "/api/set") => {
            shared.guard.check_change(req)?;
            let body = set(req, shared)?;
            get(body.to_string().into_bytes(), "application/json", out)
        }
        ("POST", "/api/stop") => {
            shared.guard.check_change(req)?;
            shared.handles.stop.stop();
            get(json!({"stopping": true}).to_string().into_bytes(), "application/json", out)
        }
        ("POST", "/api/stream") => {
            shared.guard.check_change(req)?;
            stream(req, shared, out)
        }
        (_, "/" | "/console.js" | "/console.css" | "/api/graph" | "/api/stats" | "/api/cluster" | "/metrics") => Err(HttpError::new(
            405,
            format!("{} is read with GET", req.path),
        )),
        (_, "/api/set" | "/api/stop" | "/api/stream") => Err(HttpError::new(
            405,
            format!("{} takes POST (with the token)", req.path),
        )),
        _ => Err(HttpError::new(
            404,
            "no such page; the API is /api/graph, /api/stats, /api/cluster, /api/set, /api/stop, /api/stream and /metrics",
        )),
    }
}

fn json_body(req: &Request) -> Result<Value, HttpError> {
    serde_json::from_slice(&req.body)
        .map_err(|e| HttpError::new(400, format!("the body must be a JSON object: {e}")))
}

/// The graph: nodes with their settable parameters, and edges.
pub(crate) fn graph(shared: &Shared) -> Value {
    let h = &shared.handles;
    let controls: std::collections::HashMap<String, Vec<sluice_runtime::ControlSpec>> =
        h.control.controls().into_iter().collect();
    let nodes: Vec<Value> = h
        .progress
        .snapshot()
        .iter()
        .map(|n| {
            let c: Vec<Value> = controls
                .get(&n.name)
                .map(|specs| {
                    specs
                        .iter()
                        .map(|s| json!({"name": s.name, "expects": s.expects, "help": s.help}))
                        .collect()
                })
                .unwrap_or_default();
            json!({"name": n.name, "length": n.length, "controls": c})
        })
        .collect();
    let edges: Vec<Value> = h
        .monitor
        .edges()
        .iter()
        .map(|e| {
            json!({
                "node": e.node, "port": e.port, "type": e.item.name(),
                "capacity": e.capacity(),
                "readers": e.readers.iter().map(|(n, p)| json!({"node": n, "port": p})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mode = if shared.cluster.is_some() {
        "cluster"
    } else {
        "run"
    };
    json!({"title": h.title, "mode": mode, "nodes": nodes, "edges": edges})
}

/// A cluster run's hosts and failovers (`cluster.rs`), with the console's own time and
/// whether a stop was asked; a 404 naming the reason on the console of a single run.
pub(crate) fn cluster(shared: &Shared) -> Result<Value, HttpError> {
    let Some(view) = &shared.cluster else {
        return Err(HttpError::new(
            404,
            "this console watches a run in one process: /api/cluster is served by `sluice cluster run --http`",
        ));
    };
    let mut v = (*view.snapshot()).clone();
    if let Value::Object(m) = &mut v {
        m.insert("title".into(), shared.handles.title.clone().into());
        m.insert(
            "elapsed_s".into(),
            shared.started.elapsed().as_secs_f64().into(),
        );
        m.insert("stopping".into(), shared.handles.stop.is_stopped().into());
    }
    Ok(v)
}

/// Live statistics: per node and per edge.
pub(crate) fn stats(shared: &Shared) -> Value {
    let h = &shared.handles;
    let snapshot = h.progress.snapshot();
    let elapsed_s = shared.started.elapsed().as_secs_f64();
    let (warnings, errors) = {
        // Held for a few map lookups, only by console threads.
        let mut log = shared
            .troubles
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        log.update(elapsed_s, &snapshot);
        (log.to_json(), log.errors_json())
    };
    let nodes: Vec<Value> = snapshot
        .iter()
        .map(|n| {
            json!({
                "name": n.name, "items_in": n.items_in, "items_out": n.items_out,
                "work_calls": n.work_calls, "busy_s": n.busy.as_secs_f64(),
                "waiting_s": n.waiting.as_secs_f64(), "length": n.length,
                "fraction": n.fraction(), "late": n.troubles.late,
                "dropped": n.troubles.dropped, "underflow": n.troubles.underflow,
                "bytes_sent": n.bytes.sent, "bytes_received": n.bytes.received,
                "error": n.error,
            })
        })
        .collect();
    let edges: Vec<Value> = h
        .monitor
        .edges()
        .iter()
        .map(|e| {
            json!({
                "node": e.node, "port": e.port, "written": e.items_written(),
                "fill": e.fill(), "capacity": e.capacity(), "taps": e.taps(),
            })
        })
        .collect();
    json!({
        "elapsed_s": elapsed_s,
        "stopping": h.stop.is_stopped(),
        "nodes": nodes,
        "edges": edges,
        "warnings": warnings,
        "errors": errors,
    })
}

/// `POST /api/set {"node", "param", "value"}`: applied between two `work` calls of the node,
/// exactly as `sluice ctl set` (same parser, same handle); answers the item offset.
fn set(req: &Request, shared: &Shared) -> Result<Value, HttpError> {
    let body = json_body(req)?;
    let field = |k: &str| {
        body.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| HttpError::new(400, format!("'{k}' must be a string")))
    };
    let (node, param) = (field("node")?, field("param")?);
    let text = match body.get("value") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => {
            return Err(HttpError::new(
                400,
                "'value' must be a string, number or boolean",
            ))
        }
    };
    let value = control::parse_value(&text);
    match shared.handles.control.set(node, param, value.clone()) {
        Ok(at) => Ok(
            json!({"node": node, "param": param, "value": control::value_text(&value), "at": at}),
        ),
        Err(e) => {
            let status = match e {
                sluice_runtime::ControlError::NoSuchNode { .. }
                | sluice_runtime::ControlError::NoSuchParam { .. } => 404,
                sluice_runtime::ControlError::BadValue { .. }
                | sluice_runtime::ControlError::Rejected { .. } => 400,
                _ => 409,
            };
            Err(HttpError::new(status, e.to_string()))
        }
    }
}

/// `POST /api/stream`: server-sent events until the client goes away or the console closes
/// (`sse.rs`). `{"stats": true}` streams `stats` events; `{"tap": VIEW}` attaches a tap to the
/// edge and streams its `frame` events (the tap is detached when the stream ends).
fn stream(req: &Request, shared: &Shared, out: &mut impl Write) -> Result<(), HttpError> {
    let body = json_body(req)?;
    let events = |name, period| Stream {
        closing: &shared.closing,
        dropped: &shared.dropped_events,
        open: &shared.open_streams,
        name,
        period,
        keep_alive: sse::KEEP_ALIVE,
    };
    // (A stream whose client went away just ends: nobody is left to read an error.)
    if let Some(tap) = body.get("tap") {
        let view = View::from_json(tap)?;
        let Some(edge) = shared.handles.monitor.edge(&view.node, &view.port) else {
            return Err(HttpError::new(
                404,
                format!(
                    "no edge {}.{} (is the graph running? GET /api/graph lists its edges)",
                    view.node, view.port
                ),
            ));
        };
        let period = Duration::from_secs_f64(1.0 / f64::from(view.rate));
        let mut framer = Framer::new(view, edge.item)?;
        // Dropped with the producer when the stream ends, which detaches it.
        let mut tap = edge.attach();
        let _ = events("frame", period).serve(out, move || framer.frame(&mut tap));
        return Ok(());
    }
    if body.get("stats").and_then(Value::as_bool) == Some(true) {
        let Some(view) = &shared.cluster else {
            let _ = events("stats", STATS_PERIOD).serve(out, || Some(stats(shared)));
            return Ok(());
        };
        // A cluster console's stream: a `cluster` event whenever a host reported (or a stop
        // was asked), and the console's closing one; keep-alives between.
        let mut sent: Option<(u64, bool)> = None;
        let _ = events("cluster", STATS_PERIOD).serve_named(out, || {
            let now = (view.updates(), shared.handles.stop.is_stopped());
            let closing = shared.closing.load(std::sync::atomic::Ordering::Acquire);
            if sent == Some(now) && !closing {
                return None;
            }
            sent = Some(now);
            cluster(shared).ok().map(|v| ("cluster", v))
        });
        return Ok(());
    }
    Err(HttpError::new(
        400,
        "a stream request is {\"stats\": true} or {\"tap\": {\"node\", \"port\", \"view\", \"size\", \"rate\"}}",
    ))
}
