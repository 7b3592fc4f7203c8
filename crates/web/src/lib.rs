//! The web console of a running graph: a page served from the binary itself (the graph, live
//! statistics, run-time parameters, a stop button, live views of any edge), a JSON HTTP API
//! with server-sent event streams of statistics and tap data, and Prometheus metrics.
//!
//! `sluice run GRAPH --http 127.0.0.1:8080` starts it beside the run ([`Console::start`]);
//! `sluice cluster run GRAPH --http …` starts it beside the controller, watching every host
//! ([`ClusterHandles`], [`ClusterView`]).
//! The HTTP server is a small bounded one on std (`http.rs`): a console serves one person and
//! a scraper, and a hand-written parser with hard limits builds in no time and is easy to
//! reason about. What it trusts and refuses is in `guard.rs` and `docs/console.md`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod api;
mod cluster;
mod guard;
mod http;
mod metrics;
mod metrics_server;
mod page;
mod server;
mod sse;
mod tls;
mod troubles;
mod views;

pub use cluster::{
    ClusterView, HostReport, HostState, NodeReport, PartnerLink, PromotionReport, TakeoverReport,
    MAX_FAILOVERS,
};
pub use guard::{new_token, Guard};
pub use http::{parse_request, HttpError, Request, MAX_BODY, MAX_HEADERS, MAX_HEAD_BYTES};
pub use metrics::WatchedRun;
pub use metrics_server::{MetricsServer, RunsSource};
pub use server::{ClusterHandles, Console, ConsoleError, ConsoleOptions, RunHandles, Watched};
pub use tls::Tls;
pub use views::{View, ViewKind};
