//! `tcp_sink`, `tcp_source`, `shm_sink` and `shm_source` as graph-file block types;
//! [`register`] adds them to a [`Registry`].
//!
//! A cluster's partitions name their streams as typed endpoints
//! ([`StreamEndpoint`](sluice_graph::StreamEndpoint)); [`endpoint_node`] and
//! [`partition_graph`] turn those into the `tcp_sink` and `tcp_source` nodes declared here,
//! with the parameter names of [`param`], which the declarations and the builders use too: the
//! placement that makes endpoints never writes a block type's or a parameter's name.

use crate::{RetentionFull, ShmOptions, ShmSink, ShmSource, TcpOptions, TcpSink, TcpSource};
use num_complex::Complex32;
use param::*;
use sluice_graph::{
    BlockType, EdgeEntry, Family, GraphDoc, ItemDecl, NodeEntry, Param, ParamDecl, ParamError,
    Params, PartitionDoc, PortDecl, Registry, SecurityMode, StreamDirection, StreamEndpoint, Vlen,
};
use sluice_runtime::{Item, Node};
use std::collections::BTreeMap;
use std::time::Duration;
use toml::Value;

/// The block type that sends a stream over TCP.
pub const TCP_SINK: &str = "tcp_sink";
/// The block type that receives a stream over TCP.
pub const TCP_SOURCE: &str = "tcp_source";
/// `tcp_sink`'s input port.
pub const SINK_INPUT: &str = "in";
/// `tcp_source`'s output port.
pub const SOURCE_OUTPUT: &str = "out";

/// The names of the stream blocks' parameters that [`endpoint_node`] sets, as their
/// declarations and builders spell them.
pub mod param {
    /// `url`.
    pub const URL: &str = "url";
    /// `item`.
    pub const ITEM: &str = "item";
    /// `vlen`.
    pub const VLEN: &str = "vlen";
    /// `heartbeat`.
    pub const HEARTBEAT: &str = "heartbeat";
    /// `peer_timeout`.
    pub const PEER_TIMEOUT: &str = "peer_timeout";
    /// `resume_timeout`.
    pub const RESUME_TIMEOUT: &str = "resume_timeout";
    /// `key_file`.
    pub const KEY_FILE: &str = "key_file";
    /// `identity_file`.
    pub const IDENTITY_FILE: &str = "identity_file";
    /// `peers_file`.
    pub const PEERS_FILE: &str = "peers_file";
    /// `security`.
    pub const SECURITY: &str = "security";
    /// `fence` (sink).
    pub const FENCE: &str = "fence";
    /// `replica` (sink).
    pub const REPLICA: &str = "replica";
    /// `warm_decimation` (sink).
    pub const WARM_DECIMATION: &str = "warm_decimation";
    /// `warm_lag` (sink).
    pub const WARM_LAG: &str = "warm_lag";
    /// `history` (source).
    pub const HISTORY: &str = "history";
    /// `fenced` (source).
    pub const FENCED: &str = "fenced";
    /// `warm` (source).
    pub const WARM: &str = "warm";
    /// `fenced_by` (source).
    pub const FENCED_BY: &str = "fenced_by";
}

/// The block type an endpoint becomes: `tcp_sink` to send, `tcp_source` to receive.
pub fn endpoint_type(endpoint: &StreamEndpoint) -> &'static str {
    match endpoint.direction {
        StreamDirection::Send(_) => TCP_SINK,
        StreamDirection::Receive(_) => TCP_SOURCE,
    }
}

/// The `tcp_sink` or `tcp_source` node of a partition's stream endpoint: the one place that
/// maps an endpoint's typed fields to the block's parameters.
pub fn endpoint_node(endpoint: &StreamEndpoint) -> NodeEntry {
    let mut params = BTreeMap::new();
    let mut set = |name: &str, value: Value| {
        params.insert(name.to_string(), value);
    };
    let text = |s: &str| Value::String(s.to_string());
    let int = |n: u64| Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    set(URL, text(&endpoint.url));
    set(ITEM, text(&endpoint.item));
    if endpoint.vlen > 1 {
        set(VLEN, int(endpoint.vlen as u64));
    }
    let t = &endpoint.timing;
    for (name, seconds) in [
        (HEARTBEAT, t.heartbeat_s),
        (PEER_TIMEOUT, t.peer_timeout_s),
        (RESUME_TIMEOUT, t.resume_timeout_s),
    ] {
        if let Some(s) = seconds {
            set(name, Value::Float(s));
        }
    }
    let c = &endpoint.security;
    for (name, file) in [
        (KEY_FILE, &c.key_file),
        (IDENTITY_FILE, &c.identity_file),
        (PEERS_FILE, &c.peers_file),
    ] {
        if let Some(f) = file {
            set(name, text(f));
        }
    }
    if let Some(mode) = c.mode {
        set(
            SECURITY,
            text(match mode {
                SecurityMode::Encrypt => "encrypt",
                SecurityMode::Authenticate => "authenticate",
                SecurityMode::Plaintext => "none",
            }),
        );
    }
    match &endpoint.direction {
        StreamDirection::Send(send) => {
            if let Some(fence) = &send.fence {
                set(FENCE, text(fence));
            }
            if send.replica {
                set(REPLICA, Value::Boolean(true));
            }
            if let Some(w) = send.warm {
                set(WARM_DECIMATION, int(w.decimation));
                set(WARM_LAG, int(w.lag));
            }
        }
        StreamDirection::Receive(receive) => {
            if receive.fenced {
                set(FENCED, Value::Boolean(true));
            }
            if let Some(fence) = &receive.fenced_by {
                set(FENCED_BY, text(fence));
            }
            if let Some(w) = &receive.warm {
                set(WARM, text(&w.fence));
                set(HISTORY, int(w.history));
            }
        }
    }
    NodeEntry {
        name: endpoint.name.clone(),
        kind: endpoint_type(endpoint).to_string(),
        host: None,
        params,
    }
}

/// The edges that connect an endpoint's block to the nodes it serves.
pub fn endpoint_edges(endpoint: &StreamEndpoint) -> Vec<EdgeEntry> {
    match &endpoint.direction {
        StreamDirection::Send(send) => vec![EdgeEntry::new(
            send.from.to_string(),
            format!("{}.{SINK_INPUT}", endpoint.name),
        )],
        StreamDirection::Receive(receive) => receive
            .to
            .iter()
            .map(|to| EdgeEntry {
                from: format!("{}.{SOURCE_OUTPUT}", endpoint.name),
                to: to.input.to_string(),
                capacity: to.capacity,
            })
            .collect(),
    }
}

/// A partition as the graph a worker loads: its own nodes and edges, then a stream block per
/// endpoint, connected to the nodes it serves.
pub fn partition_graph(partition: &PartitionDoc) -> GraphDoc {
    let mut graph = partition.graph.clone();
    for endpoint in &partition.streams {
        graph.nodes.push(endpoint_node(endpoint));
        graph.edges.extend(endpoint_edges(endpoint));
    }
    graph
}

fn common() -> Vec<ParamDecl> {
    vec![
        Param::text(
            URL,
            "tcp://host:port to connect, tcp-listen://host:port to listen",
        ),
        Param::choice(
            ITEM,
            &["c32", "f32", "i16", "u8"],
            "item type: c32 (complex f32), f32, i16, u8",
        )
        .default("c32"),
        Param::integer(
            "frame_bytes",
            "payload bytes per DATA frame (sender); sizes the receiver's queue",
        )
        .default(1048576),
        Param::number(
            HEARTBEAT,
            "seconds of silence after which a HEARTBEAT goes out",
        )
        .default(1.0),
        Param::number(
            PEER_TIMEOUT,
            "seconds without a byte from the peer before it is declared silent",
        )
        .default(10.0),
        Param::number(
            "timeout",
            "seconds to wait for the first connection before failing",
        )
        .derived("60.0"),
        Param::number(
            RESUME_TIMEOUT,
            "seconds to wait for a new connection after a loss (0: fail at once, no resume)",
        )
        .default(60.0),
    ]
}

fn param_vlen() -> ParamDecl {
    Param::integer(VLEN, "items per vector: the stream carries vectors of this many items (e.g. one sample of each of vlen channels); both ends must agree").default(1)
}

fn param_messages() -> ParamDecl {
    Param::choice(
        "messages",
        &["off", "on"],
        "on: messages beside the stream (a message port `msg`), each bound to the stream position at which the sink took it, resumed by offset after a reconnect like the items (docs/messages.md); off: the wire of peers without messages",
    )
    .default("off")
}

fn param_key_file() -> ParamDecl {
    Param::text(KEY_FILE, "cluster key file (64 hex characters, mode 600, owned by the user): every connection runs the secure channel (Noise XXpsk3, the key as PSK; every byte encrypted and authenticated); peers without the key are refused and logged").derived("none")
}

fn param_identity_file() -> ParamDecl {
    Param::text(IDENTITY_FILE, "this end's key pair for the secure channel (`sluice key new --identity`; mode 600); without it a fresh one per connection").derived("none")
}

fn param_peers_file() -> ParamDecl {
    Param::text(PEERS_FILE, "public keys of the peers this end accepts, one `HEX [name]` a line: a peer whose key is not listed is refused, cluster key or not").derived("none")
}

fn param_security() -> ParamDecl {
    Param::choice(SECURITY, &["encrypt", "authenticate", "none"], "encrypt (the default: with key_file or peers_file every byte is encrypted and authenticated, and without them the stream may listen on loopback only), authenticate (as encrypt, but the bytes travel readable, each record integrity-protected: for links that must not be encrypted; costs more CPU than encrypt) or none (plaintext, anyone may connect: needed to listen beyond loopback without credentials; warns)").derived("encrypt")
}

fn param_auth_timeout() -> ParamDecl {
    Param::number(
        "auth_timeout",
        "seconds one connection's authentication may take (with key_file)",
    )
    .default(5.0)
}

fn param_max_pending() -> ParamDecl {
    Param::integer(
        "max_pending",
        "listening: the most new connections at once still in their handshake (or HELLO) or not yet taken; one beyond is closed at once and counted",
    )
    .default(64)
}

fn param_max_pending_per_ip() -> ParamDecl {
    Param::integer(
        "max_pending_per_ip",
        "listening: the most such pending connections from one source address",
    )
    .default(8)
}

/// A count of at least 1 (a cap of 0 would refuse every connection).
fn count(p: &mut Params, name: &str, default: usize) -> Result<usize, ParamError> {
    let n = p.u64_or(name, default as u64)?;
    if n == 0 || n > 1 << 20 {
        return Err(ParamError::new(
            name,
            format!("must be between 1 and 1048576, not {n}"),
        ));
    }
    Ok(n as usize)
}

fn sink_params() -> Vec<ParamDecl> {
    [common(), vec![
        param_vlen(),
        param_messages(),
        param_key_file(),
        param_identity_file(),
        param_peers_file(),
        param_security(),
        param_auth_timeout(),
        param_max_pending(),
        param_max_pending_per_ip(),
        Param::bool("crc", "append a CRC32C to every DATA frame").default(false),
        Param::integer("retention_bytes", "un-acknowledged bytes kept for resending after a reconnect").default(8388608),
        Param::text("retention_full", "when retention is full while the peer is away: block (upstream waits) or drop_oldest (for real-time sources: drop, count, and mark the gap with a 'gap' tag)").derived("block"),
        Param::text(FENCE, "name of the process's fence (a cluster partition with a hot standby): standby until the worker wins the partition's lease, then primary with the lease's revision in every HELLO").derived("none"),
        Param::bool(REPLICA, "the receiver is one replica of a primary/standby pair: when its connection is lost, give it up at once with a warning (the other replica carries the stream)").default(false),
        Param::integer(WARM_DECIMATION, "with fence: the partition has a warm standby and this is its output; its input items per output item (the cluster sets it from the blocks' declared memory)").derived("none"),
        Param::integer(WARM_LAG, "with warm_decimation: outputs after which a fresh start of the partition is exact again").default(0),
        Param::integer("flush_us", "microseconds committed items may wait to batch into a larger frame (0: none)").default(50).max(1e6),
    ]].concat()
}

fn source_params() -> Vec<ParamDecl> {
    [common(), vec![
        param_vlen(),
        param_messages(),
        param_key_file(),
        param_identity_file(),
        param_peers_file(),
        param_security(),
        param_auth_timeout(),
        param_max_pending(),
        param_max_pending_per_ip(),
        Param::integer("max_frame", "frames longer than this many bytes are refused").default(67108864),
        Param::integer("max_tags_per_frame", "a frame with more tags is refused (the connection ends and the stream resumes)").default(1024).min(1.0).max(1e6),
        Param::integer("tag_budget", "the most tags the frames within any queue's worth of items may carry together; more ends the connection with the reason").default(65536).min(1.0),
        Param::integer("tag_budget_bytes", "the most bytes of tags (as sent) within any queue's worth of items").default(16777216).min(1.0),
        Param::integer(HISTORY, "items before its resume offset that the consumer needs to prime its state (an FIR's taps − 1); the sender keeps that many acknowledged items").default(0),
        Param::bool(FENCED, "accept a primary and hot standbys (fenced senders): a newer lease revision displaces the primary, an older one is refused").default(false),
        Param::text(FENCED_BY, "with fenced: the fence the senders name (the cluster sets it to the protected host); a raised lease revision is then confirmed by the process's revision check (a cluster worker reads the lease back from etcd) before the primary is displaced").derived("none"),
        Param::text(WARM, "name of the process's fence when this is the input of a partition with a warm standby: connect once the partition's output says where to start, start there, and acknowledge upstream only what the outputs' receiver acknowledged (the cluster sets it)").derived("none"),
        Param::integer("spin_us", "microseconds to busy-poll the socket after a frame before sleeping (0: no spin)").default(0).max(1e6),
    ]].concat()
}

fn seconds(p: &mut Params, name: &str, default: f64) -> Result<Duration, ParamError> {
    let s = p.f64_or(name, default)?;
    Duration::try_from_secs_f64(s)
        .map_err(|_| ParamError::new(name, format!("must be a number of seconds ≥ 0, not {s}")))
}

/// A whole number of microseconds, at most one second.
fn micros(p: &mut Params, name: &str, default: Duration) -> Result<Duration, ParamError> {
    let us = p.u64_or(name, default.as_micros() as u64)?;
    if us > 1_000_000 {
        return Err(ParamError::new(
            name,
            format!("must be at most 1000000 µs (one second), not {us}"),
        ));
    }
    Ok(Duration::from_micros(us))
}

/// The `vlen` parameter (default 1), checked.
fn vlen(p: &mut Params) -> Result<usize, ParamError> {
    let vlen = p.u64_or(VLEN, 1)?;
    if !(1..=u64::from(crate::wire::MAX_VLEN)).contains(&vlen) {
        return Err(ParamError::new(
            VLEN,
            format!(
                "must be between 1 and {}, not {vlen}",
                crate::wire::MAX_VLEN
            ),
        ));
    }
    Ok(vlen as usize)
}

fn options(p: &mut Params, sink: bool) -> Result<TcpOptions, ParamError> {
    let d = TcpOptions::default();
    let frame_bytes = p.u64_or("frame_bytes", d.frame_bytes as u64)?;
    if frame_bytes == 0 || frame_bytes > u64::from(crate::wire::DEFAULT_MAX_FRAME) {
        return Err(ParamError::new(
            "frame_bytes",
            format!(
                "must be between 1 and {}, not {frame_bytes}",
                crate::wire::DEFAULT_MAX_FRAME
            ),
        ));
    }
    let mut o = TcpOptions {
        frame_bytes: frame_bytes as usize,
        heartbeat: seconds(p, HEARTBEAT, d.heartbeat.as_secs_f64())?,
        peer_timeout: seconds(p, PEER_TIMEOUT, d.peer_timeout.as_secs_f64())?,
        connect_timeout: seconds(p, "timeout", d.connect_timeout.as_secs_f64())?,
        resume_timeout: seconds(p, RESUME_TIMEOUT, d.resume_timeout.as_secs_f64())?,
        vlen: vlen(p)?,
        auth_timeout: seconds(p, "auth_timeout", d.auth_timeout.as_secs_f64())?,
        max_pending: count(p, "max_pending", d.max_pending)?,
        max_pending_per_ip: count(p, "max_pending_per_ip", d.max_pending_per_ip)?,
        messages: match p.opt_str("messages")?.as_deref() {
            None | Some("off") => false,
            Some("on") => true,
            Some(other) => {
                return Err(ParamError::new(
                    "messages",
                    format!("must be on or off, not '{other}'"),
                ))
            }
        },
        ..d
    };
    if let Some(path) = p.opt_str(KEY_FILE)? {
        let key = crate::auth::ClusterKey::load(std::path::Path::new(&path))
            .map_err(|e| ParamError::new(KEY_FILE, e.to_string()))?;
        o.key = Some(key);
    }
    if let Some(path) = p.opt_str(IDENTITY_FILE)? {
        let id = crate::secure::Identity::load(std::path::Path::new(&path))
            .map_err(|e| ParamError::new(IDENTITY_FILE, e.to_string()))?;
        o.identity = Some(std::sync::Arc::new(id));
    }
    if let Some(path) = p.opt_str(PEERS_FILE)? {
        let peers = crate::secure::Peers::load(std::path::Path::new(&path))
            .map_err(|e| ParamError::new(PEERS_FILE, e.to_string()))?;
        o.peers = Some(std::sync::Arc::new(peers));
    }
    if let Some(text) = p.opt_str(SECURITY)? {
        o.security = crate::Security::parse(&text).ok_or_else(|| {
            ParamError::new(
                SECURITY,
                format!("must be \"encrypt\", \"authenticate\" or \"none\", not {text:?}"),
            )
        })?;
    }
    if sink {
        o.crc = p.bool_or("crc", false)?;
        o.retention_bytes = p.u64_or("retention_bytes", o.retention_bytes as u64)? as usize;
        o.retention_full = match p.opt_str("retention_full")?.as_deref() {
            None | Some("block") => RetentionFull::Block,
            Some("drop_oldest") => RetentionFull::DropOldest,
            Some(other) => {
                return Err(ParamError::new(
                    "retention_full",
                    format!("must be block or drop_oldest, not '{other}'"),
                ))
            }
        };
        o.flush = micros(p, "flush_us", o.flush)?;
        o.fence = p.opt_str(FENCE)?.map(|name| crate::Fence::named(&name));
        o.replica = p.bool_or(REPLICA, false)?;
        if let Some(decimation) = p.opt_u64(WARM_DECIMATION)? {
            if decimation == 0 {
                return Err(ParamError::new(WARM_DECIMATION, "must be at least 1"));
            }
            let lag = p.u64_or(WARM_LAG, 0)?;
            o.warm = Some(crate::WarmMap { decimation, lag });
        }
    } else {
        o.history = p.u64_or(HISTORY, 0)?;
        if let Some(name) = p.opt_str(WARM)? {
            let fence = crate::Fence::named(&name);
            o.ack = crate::Acknowledge::External(fence.input_acknowledged());
            o.warm_fence = Some(fence);
        }
        o.spin = micros(p, "spin_us", o.spin)?;
        o.fenced = p.bool_or(FENCED, false)?;
        let tags = p.u64_or("max_tags_per_frame", u64::from(o.max_tags_per_frame))?;
        o.max_tags_per_frame = u32::try_from(tags)
            .map_err(|_| ParamError::new("max_tags_per_frame", format!("at most {}", u32::MAX)))?;
        let usize_of = |name: &str, v: u64| {
            usize::try_from(v).map_err(|_| ParamError::new(name, "too large for this machine"))
        };
        o.tag_budget = usize_of("tag_budget", p.u64_or("tag_budget", o.tag_budget as u64)?)?;
        o.tag_budget_bytes = usize_of(
            "tag_budget_bytes",
            p.u64_or("tag_budget_bytes", o.tag_budget_bytes as u64)?,
        )?;
        o.fenced_by = p.opt_str(FENCED_BY)?;
        if o.fenced_by.is_some() && !o.fenced {
            return Err(ParamError::new(FENCED_BY, "only with fenced = true"));
        }
        let max = p.u64_or("max_frame", u64::from(o.max_frame))?;
        o.max_frame = u32::try_from(max)
            .map_err(|_| ParamError::new("max_frame", format!("at most {}", u32::MAX)))?;
    }
    Ok(o)
}

fn build<T: Item>(p: &mut Params, sink: bool) -> Result<Box<dyn Node>, ParamError> {
    let url = p.str(URL)?;
    let opts = options(p, sink)?;
    let err = |e: crate::NetError| ParamError::new(URL, e.to_string());
    Ok(if sink {
        Box::new(TcpSink::<T>::new(&url, opts).map_err(err)?)
    } else {
        Box::new(TcpSource::<T>::new(&url, opts).map_err(err)?)
    })
}

fn shm_params() -> Vec<ParamDecl> {
    [
        vec![Param::text(
            "url",
            "unix:PATH to connect, unix-listen:PATH to listen (@name: abstract socket, no file)",
        )],
        common()[1..=1].to_vec(),
        vec![Param::integer(
            "ring_bytes",
            "bytes of shared ring the sink creates (rounded up to whole pages and items)",
        )
        .default(8388608)],
        common()[5..=5].to_vec(),
    ]
    .concat()
}

fn build_shm<T: Item>(p: &mut Params, sink: bool) -> Result<Box<dyn Node>, ParamError> {
    let url = p.str("url")?;
    let d = ShmOptions::default();
    let ring_bytes = p.u64_or("ring_bytes", d.ring_bytes as u64)?;
    if ring_bytes == 0 || ring_bytes > 1 << 34 {
        return Err(ParamError::new(
            "ring_bytes",
            format!("must be between 1 and 17179869184 (16 GiB), not {ring_bytes}"),
        ));
    }
    let opts = ShmOptions {
        ring_bytes: ring_bytes as usize,
        connect_timeout: seconds(p, "timeout", d.connect_timeout.as_secs_f64())?,
    };
    let err = |e: crate::NetError| ParamError::new("url", e.to_string());
    Ok(if sink {
        Box::new(ShmSink::<T>::new(&url, opts).map_err(err)?)
    } else {
        Box::new(ShmSource::<T>::new(&url, opts).map_err(err)?)
    })
}

fn with_item(p: &mut Params, sink: bool) -> Result<Box<dyn Node>, ParamError> {
    with_item_of(p, sink, false)
}

fn shm_with_item(p: &mut Params, sink: bool) -> Result<Box<dyn Node>, ParamError> {
    with_item_of(p, sink, true)
}

fn with_item_of(p: &mut Params, sink: bool, shm: bool) -> Result<Box<dyn Node>, ParamError> {
    fn pick<T: Item>(p: &mut Params, sink: bool, shm: bool) -> Result<Box<dyn Node>, ParamError> {
        if shm {
            build_shm::<T>(p, sink)
        } else {
            build::<T>(p, sink)
        }
    }
    let item = p.opt_str(ITEM)?.unwrap_or_else(|| "c32".to_string());
    match item.as_str() {
        "c32" => pick::<Complex32>(p, sink, shm),
        "f32" => pick::<f32>(p, sink, shm),
        "i16" => pick::<i16>(p, sink, shm),
        "u8" => pick::<u8>(p, sink, shm),
        other => Err(ParamError::new(
            ITEM,
            format!("unknown item type '{other}' (use c32, f32, i16 or u8)"),
        )),
    }
}

/// Adds `tcp_sink`, `tcp_source`, `shm_sink` and `shm_source` to `registry`.
pub fn register(registry: &mut Registry) {
    let types = [
        BlockType::new(TCP_SINK, Family::Network, "Sends its stream over TCP (sluice-net wire, docs/net/wire.md) with tags, resuming by offset after a reconnect.")
            .gnuradio(&["tcp_server_sink"])
            .port(PortDecl::input(SINK_INPUT, ItemDecl::item()).vlen(Vlen::param(VLEN)))
            .port(PortDecl::message_input("msg", "message").when("messages", "on"))
            .params(sink_params())
            .example(r#"item = "c32", url = "tcp://10.0.0.2:5000""#)
            .build(|p| with_item(p, true)),
        BlockType::new(TCP_SOURCE, Family::Network, "Receives a stream over TCP (sluice-net wire, docs/net/wire.md) straight into its output queue, with tags.")
            .gnuradio(&["tcp_source"])
            .port(PortDecl::output(SOURCE_OUTPUT, ItemDecl::item()).vlen(Vlen::param(VLEN)))
            .port(PortDecl::message_output("msg", "message").when("messages", "on"))
            .params(source_params())
            .example(r#"item = "c32", url = "tcp-listen://127.0.0.1:5000""#)
            .build(|p| with_item(p, false)),
        BlockType::new("shm_sink", Family::Network, "Sends its stream to a shm_source in another process on this machine through a ring in shared memory (docs/net/shm.md), with tags.")
            .port(PortDecl::input("in", ItemDecl::item()))
            .params(shm_params())
            .example(r#"item = "c32", url = "unix-listen:@sluice-demo""#)
            .build(|p| shm_with_item(p, true)),
        BlockType::new("shm_source", Family::Network, "Receives a stream from a shm_sink in another process on this machine through a ring in shared memory (docs/net/shm.md), with tags.")
            .port(PortDecl::output("out", ItemDecl::item()))
            .params(shm_params())
            .example(r#"item = "c32", url = "unix:@sluice-demo""#)
            .build(|p| shm_with_item(p, false)),
    ];
    for t in types {
        registry
            .add(t)
            .expect("the transport blocks are registered once");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_graph::{
        Consumer, PortRef, ReceiveEnd, SendEnd, StreamSecurity, StreamTiming, WarmInput, WarmMap,
    };

    fn endpoint(direction: StreamDirection) -> StreamEndpoint {
        StreamEndpoint {
            name: "e".into(),
            direction,
            url: "tcp://10.0.0.1:7400".into(),
            item: "f32".into(),
            vlen: 4,
            timing: StreamTiming {
                heartbeat_s: Some(0.1),
                peer_timeout_s: Some(0.4),
                resume_timeout_s: Some(0.5),
            },
            security: StreamSecurity {
                key_file: Some("k.key".into()),
                identity_file: Some("id.key".into()),
                peers_file: Some("peers".into()),
                mode: Some(SecurityMode::Plaintext),
            },
        }
    }

    /// Every field of an endpoint becomes a parameter its block declares, with a value the
    /// declaration accepts: a renamed parameter fails here, not on a cluster's worker.
    #[test]
    fn every_endpoint_field_is_a_declared_parameter() {
        let mut registry = Registry::new();
        register(&mut registry);
        let send = endpoint(StreamDirection::Send(SendEnd {
            from: PortRef::new("fir", "out"),
            fence: Some("b".into()),
            replica: true,
            warm: Some(WarmMap {
                decimation: 2,
                lag: 14,
            }),
        }));
        let receive = endpoint(StreamDirection::Receive(ReceiveEnd {
            to: ["sink", "other"]
                .map(|n| Consumer {
                    input: PortRef::new(n, "in"),
                    capacity: Some(64),
                })
                .into(),
            fenced: true,
            fenced_by: Some("a".into()),
            warm: Some(WarmInput {
                fence: "b".into(),
                history: 28,
            }),
        }));
        for (e, count) in [(&send, 14), (&receive, 14)] {
            let node = endpoint_node(e);
            let decl = registry.find(&node.kind).expect("a stream block");
            assert_eq!(node.params.len(), count, "{:?}", node.params);
            for (name, value) in &node.params {
                let p = decl
                    .params
                    .iter()
                    .find(|p| p.name == name.as_str())
                    .unwrap_or_else(|| panic!("{} declares no parameter {name}", node.kind));
                assert_eq!(p.check(value), None, "{name} = {value}");
            }
            // The edges name the block's declared ports.
            for edge in endpoint_edges(e) {
                let (n, port) = if edge.from_node() == "e" {
                    (&edge.from, SOURCE_OUTPUT)
                } else {
                    (&edge.to, SINK_INPUT)
                };
                assert_eq!(n, &format!("e.{port}"));
                assert!(decl.ports.iter().any(|p| p.name == port));
            }
        }
        assert_eq!(endpoint_edges(&receive).len(), 2);
        assert_eq!(endpoint_edges(&receive)[1].capacity, Some(64));
        assert_eq!(endpoint_edges(&send)[0].from, "fir.out");
    }
}
