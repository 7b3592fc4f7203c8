//! The standard registry: every block type of the workspace's crates, in one place. The
//! command line, the benchmarks, the Python package and the web console all load graphs with
//! it, so a graph file means the same thing wherever it runs.
//!
//! *Architecture invariant*: this crate only composes; a block's declaration lives beside the
//! block, in the crate that implements it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use sluice_graph::Registry;

/// Every block type: the standard blocks (sources, sinks, math, filters, resampling,
/// channelizers, radio, beamforming, analysis, files), the network endpoints (TCP, shared
/// memory), the gr-zeromq-compatible ZeroMQ blocks, the JACK blocks and the SoapySDR radio blocks.
pub fn standard_registry() -> Registry {
    let mut registry = sluice_blocks::graph_blocks::standard_registry();
    sluice_net::graph_blocks::register(&mut registry);
    sluice_audio::graph_blocks::register(&mut registry);
    sluice_zmq::graph_blocks::register(&mut registry);
    sluice_soapy::graph_blocks::register(&mut registry);
    registry
}
