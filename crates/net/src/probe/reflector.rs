//! A probe reflector: the graph `tcp_source → tcp_sink` of bytes, exactly the blocks a
//! process between two others of a cluster runs, passing the probe's stream on unchanged.

use crate::{NetError, TcpOptions, TcpSink, TcpSource};
use sluice_runtime::{Graph, RunOptions, RunReport, RuntimeError, Scheduler};
use std::net::SocketAddr;

/// A reflector, its endpoints open (listeners bound) from [`Reflector::new`] on.
pub struct Reflector {
    graph: Graph,
    from: Option<SocketAddr>,
    to: Option<SocketAddr>,
}

impl std::fmt::Debug for Reflector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reflector")
            .field("from", &self.from)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

impl Reflector {
    /// Receives on `from` with `source` options and sends on `to` with `sink` options.
    pub fn new(
        from: &str,
        to: &str,
        source: TcpOptions,
        sink: TcpOptions,
    ) -> Result<Reflector, NetError> {
        let rx = TcpSource::<u8>::new(from, source)?;
        let tx = TcpSink::<u8>::new(to, sink)?;
        let (from, to) = (rx.local_addr(), tx.local_addr());
        let mut graph = Graph::new();
        let graph_err = |e: RuntimeError| NetError::Config(e.to_string());
        let a = graph.add("from", rx).map_err(graph_err)?;
        let b = graph.add("to", tx).map_err(graph_err)?;
        graph.connect(a, "out", b, "in").map_err(graph_err)?;
        Ok(Reflector { graph, from, to })
    }

    /// The address the incoming stream is listened for on, if `from` listens.
    pub fn from_addr(&self) -> Option<SocketAddr> {
        self.from
    }

    /// The address the outgoing stream is listened for on, if `to` listens.
    pub fn to_addr(&self) -> Option<SocketAddr> {
        self.to
    }

    /// Runs until the incoming stream ends and the outgoing one is acknowledged. With
    /// `one_thread`, both blocks share one thread (no hand-off between threads: the lowest
    /// latency); otherwise each has its own (the most throughput).
    pub fn run(self, one_thread: bool) -> Result<RunReport, RuntimeError> {
        let opts = RunOptions {
            scheduler: if one_thread {
                Scheduler::Pooled(1)
            } else {
                Scheduler::ThreadPerNode
            },
            // A reflector waits on its peers for as long as their timeouts allow.
            deadlock_timeout: std::time::Duration::from_secs(3600),
            ..RunOptions::default()
        };
        self.graph.run(&opts)
    }
}
