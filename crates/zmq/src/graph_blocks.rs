//! gr-zeromq's six stream blocks and six message blocks as graph-file block types;
//! [`register`] adds them to a [`Registry`]. Parameters are gr-zeromq's: `address`
//! (`tcp://host:port`, `tcp://*:port` to bind every interface), `bind`, `item`, `pass_tags`,
//! `timeout` (ms), `hwm`, and `key` / `drop_on_hwm` for PUB/SUB; the message blocks take
//! `address`, `timeout` and `bind`, as GNU Radio's do. The other parameters are the limits
//! that keep a hostile peer from costing more than its own connection.

use crate::{SocketType, ZmqMsgSink, ZmqMsgSource, ZmqOptions, ZmqSink, ZmqSource};
use num_complex::Complex32;
use sluice_graph::{
    BlockType, Family, ItemDecl, Param, ParamDecl, ParamError, Params, PortDecl, Registry,
};
use sluice_runtime::{Item, Node};
use std::time::Duration;

fn param_address() -> ParamDecl {
    Param::text(
        "address",
        "tcp://host:port (tcp://*:port binds every interface); only tcp:// is supported",
    )
}
fn param_item() -> ParamDecl {
    Param::choice(
        "item",
        &["c32", "f32", "i32", "i16", "u8"],
        "item type: c32 (gr_complex), f32 (float), i32 (int), i16 (short), u8 (byte); vlen is 1",
    )
    .default("c32")
}
fn param_pass_tags() -> ParamDecl {
    Param::bool(
        "pass_tags",
        "messages carry gr-zeromq's tag header (both ends must agree)",
    )
    .default(false)
}
fn param_timeout() -> ParamDecl {
    Param::number(
        "timeout",
        "milliseconds one work call may wait on the socket",
    )
    .default(100.0)
}
fn param_hwm() -> ParamDecl {
    Param::number("hwm", "accepted for gr-zeromq compatibility; sluice queues no messages of its own (the block's input queue and the kernel's socket buffer hold them)").default(-1.0)
}
fn param_key() -> ParamDecl {
    Param::text("key", "PUB: a topic frame sent before each message; SUB: the topic subscribed to (its frame is dropped)").derived("\"\"")
}
fn param_drop() -> ParamDecl {
    Param::bool("drop_on_hwm", "PUB: a subscriber whose socket is full misses the message (counted and reported) instead of holding the graph back").default(true)
}
fn param_max_frame() -> ParamDecl {
    Param::integer(
        "max_frame",
        "frames longer than this many bytes are refused",
    )
    .default(268435456)
}
fn param_max_items() -> ParamDecl {
    Param::integer(
        "max_items",
        "the most items per message (0: as many as the input holds, as gr-zeromq does)",
    )
    .default(0)
}

fn param_handshake_ivl() -> ParamDecl {
    Param::integer("handshake_ivl", "milliseconds a connection may take for its ZeroMQ handshake before it is closed (libzmq's ZMQ_HANDSHAKE_IVL)").default(30000)
}
fn param_max_peers() -> ParamDecl {
    Param::integer(
        "max_peers",
        "binding sockets: the most connections at once (one beyond is closed at once)",
    )
    .default(1024)
}
fn param_max_pending_per_ip() -> ParamDecl {
    Param::integer(
        "max_pending_per_ip",
        "binding sockets: the most connections from one source address still at their ZeroMQ handshake (one beyond is closed at once)",
    )
    .default(8)
}
fn param_frame_timeout() -> ParamDecl {
    Param::integer("frame_timeout", "milliseconds a peer may stay silent in the middle of a message before it is closed (its partial message is dropped)").default(10000)
}
fn param_hwm_bytes() -> ParamDecl {
    Param::integer("hwm_bytes", "PUSH/REP: the most bytes queued for one peer beyond its socket buffer; PUSH skips a peer at this mark").default(262144)
}
fn param_max_subscriptions() -> ParamDecl {
    Param::integer("max_subscriptions", "PUB: the most distinct topics one subscriber may hold (repeats are counted, not stored); one beyond closes its connection").default(1024)
}

fn param_bind(sink: bool) -> ParamDecl {
    Param::bool("bind", "bind (listen) instead of connecting").default(sink)
}

fn push_params() -> Vec<ParamDecl> {
    vec![
        param_address(),
        param_item(),
        param_bind(true),
        param_pass_tags(),
        param_timeout(),
        param_hwm(),
        param_max_items(),
        param_handshake_ivl(),
        param_max_peers(),
        param_max_pending_per_ip(),
        param_frame_timeout(),
        param_hwm_bytes(),
    ]
}
fn pub_params() -> Vec<ParamDecl> {
    vec![
        param_address(),
        param_item(),
        param_bind(true),
        param_pass_tags(),
        param_timeout(),
        param_hwm(),
        param_key(),
        param_drop(),
        param_max_items(),
        param_handshake_ivl(),
        param_max_peers(),
        param_max_pending_per_ip(),
        param_frame_timeout(),
        param_max_subscriptions(),
    ]
}
fn rep_params() -> Vec<ParamDecl> {
    vec![
        param_address(),
        param_item(),
        param_bind(true),
        param_pass_tags(),
        param_timeout(),
        param_hwm(),
        param_max_items(),
        param_handshake_ivl(),
        param_max_peers(),
        param_max_pending_per_ip(),
        param_frame_timeout(),
        param_hwm_bytes(),
    ]
}
fn pull_params() -> Vec<ParamDecl> {
    vec![
        param_address(),
        param_item(),
        param_bind(false),
        param_pass_tags(),
        param_timeout(),
        param_hwm(),
        param_max_frame(),
        param_handshake_ivl(),
        param_max_peers(),
        param_max_pending_per_ip(),
        param_frame_timeout(),
    ]
}
fn sub_params() -> Vec<ParamDecl> {
    vec![
        param_address(),
        param_item(),
        param_bind(false),
        param_pass_tags(),
        param_timeout(),
        param_hwm(),
        param_key(),
        param_max_frame(),
        param_handshake_ivl(),
        param_max_peers(),
        param_max_pending_per_ip(),
        param_frame_timeout(),
    ]
}
fn req_params() -> Vec<ParamDecl> {
    vec![
        param_address(),
        param_item(),
        param_bind(false),
        param_pass_tags(),
        param_timeout(),
        param_hwm(),
        param_max_frame(),
        param_handshake_ivl(),
        param_max_peers(),
        param_max_pending_per_ip(),
        param_frame_timeout(),
    ]
}

/// The largest serialized message a message source takes by default (16 MiB): a message is
/// kept whole in memory before it is decoded, unlike a stream source's items.
const MAX_MESSAGE: u64 = 16 << 20;

fn param_max_message() -> ParamDecl {
    Param::integer(
        "max_frame",
        "the longest serialized message in bytes; a peer that sends a longer one is disconnected",
    )
    .default(MAX_MESSAGE as i64)
}

fn msg_sink_params(kind: SocketType) -> Vec<ParamDecl> {
    let mut v = vec![
        param_address(),
        param_timeout(),
        param_bind(true),
        param_handshake_ivl(),
        param_max_peers(),
        param_max_pending_per_ip(),
        param_frame_timeout(),
    ];
    v.push(if kind == SocketType::Pub {
        param_max_subscriptions()
    } else {
        param_hwm_bytes()
    });
    v
}

fn msg_source_params() -> Vec<ParamDecl> {
    vec![
        param_address(),
        param_timeout(),
        param_bind(false),
        param_max_message(),
        param_handshake_ivl(),
        param_max_peers(),
        param_max_pending_per_ip(),
        param_frame_timeout(),
    ]
}

/// The options of a message block: gr-zeromq's `address`, `timeout`, `bind`, and the limits.
fn msg_options(p: &mut Params, kind: SocketType, sink: bool) -> Result<ZmqOptions, ParamError> {
    let address = p.str("address")?;
    let mut o = ZmqOptions::new(&address, p.bool_or("bind", sink)?);
    let ms = p.f64_or("timeout", 100.0)?;
    o.timeout = Duration::try_from_secs_f64(ms / 1000.0)
        .map_err(|_| ParamError::new("timeout", format!("must be milliseconds ≥ 0, not {ms}")))?;
    o.handshake_ivl = millis(p, "handshake_ivl", o.handshake_ivl)?;
    o.frame_timeout = millis(p, "frame_timeout", o.frame_timeout)?;
    o.max_peers = count(p, "max_peers", o.max_peers)?;
    o.max_pending_per_ip = count(p, "max_pending_per_ip", o.max_pending_per_ip)?;
    match kind {
        SocketType::Push | SocketType::Rep => o.hwm_bytes = count(p, "hwm_bytes", o.hwm_bytes)?,
        SocketType::Pub => {
            o.max_subscriptions = count(p, "max_subscriptions", o.max_subscriptions)?
        }
        _ => {}
    }
    if !sink {
        o.max_frame = p.u64_or("max_frame", MAX_MESSAGE)?;
    }
    Ok(o)
}

fn build_msg(p: &mut Params, kind: SocketType, sink: bool) -> Result<Box<dyn Node>, ParamError> {
    let opts = msg_options(p, kind, sink)?;
    let err = |e: crate::ZmqError| ParamError::new("address", e.to_string());
    Ok(if sink {
        Box::new(ZmqMsgSink::new(kind, opts).map_err(err)?)
    } else {
        Box::new(ZmqMsgSource::new(kind, opts).map_err(err)?)
    })
}

fn options(p: &mut Params, kind: SocketType, sink: bool) -> Result<ZmqOptions, ParamError> {
    let address = p.str("address")?;
    let mut o = ZmqOptions::new(&address, p.bool_or("bind", sink)?);
    o.pass_tags = p.bool_or("pass_tags", false)?;
    let ms = p.f64_or("timeout", 100.0)?;
    o.timeout = Duration::try_from_secs_f64(ms / 1000.0)
        .map_err(|_| ParamError::new("timeout", format!("must be milliseconds ≥ 0, not {ms}")))?;
    let hwm = p.f64_or("hwm", -1.0)?;
    if hwm.fract() != 0.0 || hwm < -1.0 {
        return Err(ParamError::new(
            "hwm",
            format!("must be a whole number ≥ -1, not {hwm}"),
        ));
    }
    o.hwm = hwm as i64;
    if matches!(kind, SocketType::Pub | SocketType::Sub) {
        o.key = p.opt_str("key")?.unwrap_or_default().into_bytes();
    }
    if kind == SocketType::Pub {
        o.drop_on_hwm = p.bool_or("drop_on_hwm", true)?;
    }
    o.handshake_ivl = millis(p, "handshake_ivl", o.handshake_ivl)?;
    o.frame_timeout = millis(p, "frame_timeout", o.frame_timeout)?;
    o.max_peers = count(p, "max_peers", o.max_peers)?;
    o.max_pending_per_ip = count(p, "max_pending_per_ip", o.max_pending_per_ip)?;
    if matches!(kind, SocketType::Push | SocketType::Rep) {
        o.hwm_bytes = count(p, "hwm_bytes", o.hwm_bytes)?;
    }
    if kind == SocketType::Pub {
        o.max_subscriptions = count(p, "max_subscriptions", o.max_subscriptions)?;
    }
    if sink {
        o.max_items = p.u64_or("max_items", 0)? as usize;
    } else {
        o.max_frame = p.u64_or("max_frame", o.max_frame)?;
    }
    Ok(o)
}

/// A duration parameter in milliseconds (at least 1).
fn millis(p: &mut Params, name: &str, default: Duration) -> Result<Duration, ParamError> {
    let ms = p.f64_or(name, default.as_secs_f64() * 1000.0)?;
    if ms.is_nan() || ms < 1.0 {
        return Err(ParamError::new(
            name,
            format!("must be milliseconds ≥ 1, not {ms}"),
        ));
    }
    Duration::try_from_secs_f64(ms / 1000.0)
        .map_err(|_| ParamError::new(name, format!("must be milliseconds ≥ 1, not {ms}")))
}

/// A count parameter (at least 1).
fn count(p: &mut Params, name: &str, default: usize) -> Result<usize, ParamError> {
    let n = p.u64_or(name, default as u64)?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| ParamError::new(name, format!("must be a whole number ≥ 1, not {n}")))
}

fn build<T: Item>(
    p: &mut Params,
    kind: SocketType,
    sink: bool,
) -> Result<Box<dyn Node>, ParamError> {
    let opts = options(p, kind, sink)?;
    let err = |e: crate::ZmqError| ParamError::new("address", e.to_string());
    Ok(if sink {
        Box::new(ZmqSink::<T>::new(kind, opts).map_err(err)?)
    } else {
        Box::new(ZmqSource::<T>::new(kind, opts).map_err(err)?)
    })
}

fn with_item(p: &mut Params, kind: SocketType, sink: bool) -> Result<Box<dyn Node>, ParamError> {
    let item = p.opt_str("item")?.unwrap_or_else(|| "c32".to_string());
    match item.as_str() {
        "c32" => build::<Complex32>(p, kind, sink),
        "f32" => build::<f32>(p, kind, sink),
        "i32" => build::<i32>(p, kind, sink),
        "i16" => build::<i16>(p, kind, sink),
        "u8" => build::<u8>(p, kind, sink),
        other => Err(ParamError::new(
            "item",
            format!("unknown item type '{other}' (use c32, f32, i32, i16 or u8)"),
        )),
    }
}

/// Adds `zmq_push_sink`, `zmq_pull_source`, `zmq_pub_sink`, `zmq_sub_source`,
/// `zmq_rep_sink`, `zmq_req_source`, `zmq_pub_msg_sink`, `zmq_sub_msg_source`,
/// `zmq_push_msg_sink`, `zmq_pull_msg_source`, `zmq_rep_msg_sink` and `zmq_req_msg_source` to
/// `registry`.
pub fn register(registry: &mut Registry) {
    let types = [
        BlockType::new("zmq_push_sink", Family::Network, "gr-zeromq push_sink: sends its stream as ZeroMQ PUSH messages (one frame per message, tag header when pass_tags), straight from the input queue.")
            .gnuradio(&["push_sink"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .params(push_params())
            .example(r#"item = "c32", address = "tcp://*:5555", pass_tags = true"#)
            .build(|p| with_item(p, SocketType::Push, true)),
        BlockType::new("zmq_pull_source", Family::Network, "gr-zeromq pull_source: receives ZeroMQ PULL messages straight into its output queue (tags from the header when pass_tags).")
            .gnuradio(&["pull_source"])
            .port(PortDecl::output("out", ItemDecl::item()))
            .params(pull_params())
            .example(r#"item = "c32", address = "tcp://127.0.0.1:5555", pass_tags = true"#)
            .build(|p| with_item(p, SocketType::Pull, false)),
        BlockType::new("zmq_pub_sink", Family::Network, "gr-zeromq pub_sink: publishes its stream to every subscriber (optional key frame); drops for full subscribers are counted.")
            .gnuradio(&["pub_sink"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .params(pub_params())
            .example(r#"item = "f32", address = "tcp://*:5556", key = "audio""#)
            .build(|p| with_item(p, SocketType::Pub, true)),
        BlockType::new("zmq_sub_source", Family::Network, "gr-zeromq sub_source: subscribes to a publisher (optional key) and receives straight into its output queue; items missed between messages are tagged 'gap'.")
            .gnuradio(&["sub_source"])
            .port(PortDecl::output("out", ItemDecl::item()))
            .params(sub_params())
            .example(r#"item = "f32", address = "tcp://127.0.0.1:5556", key = "audio""#)
            .build(|p| with_item(p, SocketType::Sub, false)),
        BlockType::new("zmq_rep_sink", Family::Network, "gr-zeromq rep_sink: answers each request (a u32 item count) with up to that many items.")
            .gnuradio(&["rep_sink"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .params(rep_params())
            .example(r#"item = "c32", address = "tcp://*:5557""#)
            .build(|p| with_item(p, SocketType::Rep, true)),
        BlockType::new("zmq_req_source", Family::Network, "gr-zeromq req_source: asks for as many items as its output has room for and receives the reply straight into the queue.")
            .gnuradio(&["req_source"])
            .port(PortDecl::output("out", ItemDecl::item()))
            .params(req_params())
            .example(r#"item = "c32", address = "tcp://127.0.0.1:5557""#)
            .build(|p| with_item(p, SocketType::Req, false)),
        BlockType::new("zmq_pub_msg_sink", Family::Network, "gr-zeromq pub_msg_sink: publishes each message of its input to every subscriber as one frame of its PMT serialization (a full subscriber misses it, counted).")
            .gnuradio(&["pub_msg_sink"])
            .port(PortDecl::message_input("in", "message"))
            .params(msg_sink_params(SocketType::Pub))
            .example(r#"address = "tcp://*:5560""#)
            .build(|p| build_msg(p, SocketType::Pub, true)),
        BlockType::new("zmq_sub_msg_source", Family::Network, "gr-zeromq sub_msg_source: subscribes to everything a publisher sends and decodes each frame as a PMT message; frames that are not PMTs are dropped and reported with their peer.")
            .gnuradio(&["sub_msg_source"])
            .port(PortDecl::message_output("out", "message"))
            .params(msg_source_params())
            .example(r#"address = "tcp://127.0.0.1:5560""#)
            .build(|p| build_msg(p, SocketType::Sub, false)),
        BlockType::new("zmq_push_msg_sink", Family::Network, "gr-zeromq push_msg_sink: sends each message of its input to the next puller as one frame of its PMT serialization, waiting while no puller has room.")
            .gnuradio(&["push_msg_sink"])
            .port(PortDecl::message_input("in", "message"))
            .params(msg_sink_params(SocketType::Push))
            .example(r#"address = "tcp://*:5561""#)
            .build(|p| build_msg(p, SocketType::Push, true)),
        BlockType::new("zmq_pull_msg_source", Family::Network, "gr-zeromq pull_msg_source: receives frames from pushers and decodes each as a PMT message; frames that are not PMTs are dropped and reported with their peer.")
            .gnuradio(&["pull_msg_source"])
            .port(PortDecl::message_output("out", "message"))
            .params(msg_source_params())
            .example(r#"address = "tcp://127.0.0.1:5561""#)
            .build(|p| build_msg(p, SocketType::Pull, false)),
        BlockType::new("zmq_rep_msg_sink", Family::Network, "gr-zeromq rep_msg_sink: answers each request with the next message of its input, as one frame of its PMT serialization.")
            .gnuradio(&["rep_msg_sink"])
            .port(PortDecl::message_input("in", "message"))
            .params(msg_sink_params(SocketType::Rep))
            .example(r#"address = "tcp://*:5562""#)
            .build(|p| build_msg(p, SocketType::Rep, true)),
        BlockType::new("zmq_req_msg_source", Family::Network, "gr-zeromq req_msg_source: asks a replier for one message at a time, whenever its output has room, and decodes each answer as a PMT message; answers that are not PMTs are dropped and reported with their peer.")
            .gnuradio(&["req_msg_source"])
            .port(PortDecl::message_output("out", "message"))
            .params(msg_source_params())
            .example(r#"address = "tcp://127.0.0.1:5562""#)
            .build(|p| build_msg(p, SocketType::Req, false)),
    ];
    for t in types {
        registry.add(t).expect("the zmq blocks are registered once");
    }
}
