//! sluice-cluster: one graph file over several machines.
//!
//! A graph file declares its hosts (`[hosts.a] address = "10.0.0.1"`) and places each node with
//! `host = "a"`. [`placement`] splits such a graph into one graph per host, an edge between
//! hosts becoming a sluice-net stream (a `tcp_sink` on the producer's host, a `tcp_source` on
//! the consumer's) that carries the items, their tags and the stream metadata.
//!
//! The control plane lives in etcd ([`etcd`]: a client for its JSON gateway, and a way to run
//! it); workers register there ([`membership`]). A [`worker`] runs the partitions a controller
//! ([`control`]) sends it over an authenticated control connection ([`protocol`]). On one
//! machine, [`local`] makes a cluster's hosts from network namespaces. A host may have a hot
//! standby that runs a copy of its partition; which of the two is primary is a
//! [`lease`] in etcd.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod confine;
pub mod control;
pub mod etcd;
pub mod lease;
pub mod lease_check;
pub mod local;
pub mod membership;
pub mod placement;
pub mod protocol;
pub mod refuse;
pub mod running;
pub mod worker;
