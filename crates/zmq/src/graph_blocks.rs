//! The six gr-zeromq blocks as graph-file block types; [`register`] adds them to a
//! [`Registry`]. Parameters are gr-zeromq's: `address` (`tcp://host:port`, `tcp://*:port` to
//! bind every interface), `bind`, `item`, `pass_tags`, `timeout` (ms), `hwm`, and `key` /
//! `drop_on_hwm` for PUB/SUB.

use crate::{SocketType, ZmqOptions, ZmqSink, ZmqSource};
use num_complex::Complex32;
use sluice_graph::{BlockType, ParamDoc, ParamError, Params, Registry};
use sluice_runtime::{Item, Node};
use std::time::Duration;

const ADDRESS: ParamDoc = ParamDoc {
    name: "address",
    default: "required",
    help: "tcp://host:port (tcp://*:port binds every interface); only tcp:// is supported",
};
const ITEM: ParamDoc = ParamDoc {
    name: "item",
    default: "c32",
    help: "item type: c32 (gr_complex), f32 (float), i32 (int), i16 (short), u8 (byte); vlen is 1",
};
const PASS_TAGS: ParamDoc = ParamDoc {
    name: "pass_tags",
    default: "false",
    help: "messages carry gr-zeromq's tag header (both ends must agree)",
};
const TIMEOUT: ParamDoc = ParamDoc {
    name: "timeout",
    default: "100",
    help: "milliseconds one work call may wait on the socket",
};
const HWM: ParamDoc = ParamDoc {
    name: "hwm",
    default: "-1",
    help: "accepted for gr-zeromq compatibility; sluice queues no messages of its own (the block's input queue and the kernel's socket buffer hold them)",
};
const KEY: ParamDoc = ParamDoc {
    name: "key",
    default: "\"\"",
    help: "PUB: a topic frame sent before each message; SUB: the topic subscribed to (its frame is dropped)",
};
const DROP: ParamDoc = ParamDoc {
    name: "drop_on_hwm",
    default: "true",
    help: "PUB: a subscriber whose socket is full misses the message (counted and reported) instead of holding the graph back",
};
const MAX_FRAME: ParamDoc = ParamDoc {
    name: "max_frame",
    default: "268435456",
    help: "frames longer than this many bytes are refused",
};
const MAX_ITEMS: ParamDoc = ParamDoc {
    name: "max_items",
    default: "0",
    help: "the most items per message (0: as many as the input holds, as gr-zeromq does)",
};

const HANDSHAKE_IVL: ParamDoc = ParamDoc {
    name: "handshake_ivl",
    default: "30000",
    help: "milliseconds a connection may take for its ZeroMQ handshake before it is closed (libzmq's ZMQ_HANDSHAKE_IVL)",
};
const MAX_PEERS: ParamDoc = ParamDoc {
    name: "max_peers",
    default: "1024",
    help: "binding sockets: the most connections at once (one beyond is closed at once)",
};
const FRAME_TIMEOUT: ParamDoc = ParamDoc {
    name: "frame_timeout",
    default: "10000",
    help: "milliseconds a peer may stay silent in the middle of a message before it is closed (its partial message is dropped)",
};
const HWM_BYTES: ParamDoc = ParamDoc {
    name: "hwm_bytes",
    default: "262144",
    help: "PUSH/REP: the most bytes queued for one peer beyond its socket buffer; PUSH skips a peer at this mark",
};
const MAX_SUBSCRIPTIONS: ParamDoc = ParamDoc {
    name: "max_subscriptions",
    default: "1024",
    help: "PUB: the most distinct topics one subscriber may hold (repeats are counted, not stored); one beyond closes its connection",
};

const fn bind(sink: bool) -> ParamDoc {
    ParamDoc {
        name: "bind",
        default: if sink { "true" } else { "false" },
        help: "bind (listen) instead of connecting",
    }
}

const PUSH_PARAMS: &[ParamDoc] = &[
    ADDRESS,
    ITEM,
    bind(true),
    PASS_TAGS,
    TIMEOUT,
    HWM,
    MAX_ITEMS,
    HANDSHAKE_IVL,
    MAX_PEERS,
    FRAME_TIMEOUT,
    HWM_BYTES,
];
const PUB_PARAMS: &[ParamDoc] = &[
    ADDRESS,
    ITEM,
    bind(true),
    PASS_TAGS,
    TIMEOUT,
    HWM,
    KEY,
    DROP,
    MAX_ITEMS,
    HANDSHAKE_IVL,
    MAX_PEERS,
    FRAME_TIMEOUT,
    MAX_SUBSCRIPTIONS,
];
const REP_PARAMS: &[ParamDoc] = &[
    ADDRESS,
    ITEM,
    bind(true),
    PASS_TAGS,
    TIMEOUT,
    HWM,
    MAX_ITEMS,
    HANDSHAKE_IVL,
    MAX_PEERS,
    FRAME_TIMEOUT,
    HWM_BYTES,
];
const PULL_PARAMS: &[ParamDoc] = &[
    ADDRESS,
    ITEM,
    bind(false),
    PASS_TAGS,
    TIMEOUT,
    HWM,
    MAX_FRAME,
    HANDSHAKE_IVL,
    MAX_PEERS,
    FRAME_TIMEOUT,
];
const SUB_PARAMS: &[ParamDoc] = &[
    ADDRESS,
    ITEM,
    bind(false),
    PASS_TAGS,
    TIMEOUT,
    HWM,
    KEY,
    MAX_FRAME,
    HANDSHAKE_IVL,
    MAX_PEERS,
    FRAME_TIMEOUT,
];
const REQ_PARAMS: &[ParamDoc] = &[
    ADDRESS,
    ITEM,
    bind(false),
    PASS_TAGS,
    TIMEOUT,
    HWM,
    MAX_FRAME,
    HANDSHAKE_IVL,
    MAX_PEERS,
    FRAME_TIMEOUT,
];

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
/// `zmq_rep_sink` and `zmq_req_source` to `registry`.
pub fn register(registry: &mut Registry) {
    let types = [
        BlockType {
            name: "zmq_push_sink",
            help: "gr-zeromq push_sink: sends its stream as ZeroMQ PUSH messages (one frame per message, tag header when pass_tags), straight from the input queue.",
            ports: "in: item",
            params: PUSH_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "to_gnuradio"
type = "zmq_push_sink"
params = { item = "c32", address = "tcp://*:5555", pass_tags = true }"#,
            build: |p| with_item(p, SocketType::Push, true),
            memory: None,
        },
        BlockType {
            name: "zmq_pull_source",
            help: "gr-zeromq pull_source: receives ZeroMQ PULL messages straight into its output queue (tags from the header when pass_tags).",
            ports: "out: item",
            params: PULL_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "from_gnuradio"
type = "zmq_pull_source"
params = { item = "c32", address = "tcp://127.0.0.1:5555", pass_tags = true }"#,
            build: |p| with_item(p, SocketType::Pull, false),
            memory: None,
        },
        BlockType {
            name: "zmq_pub_sink",
            help: "gr-zeromq pub_sink: publishes its stream to every subscriber (optional key frame); drops for full subscribers are counted.",
            ports: "in: item",
            params: PUB_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "publish"
type = "zmq_pub_sink"
params = { item = "f32", address = "tcp://*:5556", key = "audio" }"#,
            build: |p| with_item(p, SocketType::Pub, true),
            memory: None,
        },
        BlockType {
            name: "zmq_sub_source",
            help: "gr-zeromq sub_source: subscribes to a publisher (optional key) and receives straight into its output queue; items missed between messages are tagged 'gap'.",
            ports: "out: item",
            params: SUB_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "subscribe"
type = "zmq_sub_source"
params = { item = "f32", address = "tcp://127.0.0.1:5556", key = "audio" }"#,
            build: |p| with_item(p, SocketType::Sub, false),
            memory: None,
        },
        BlockType {
            name: "zmq_rep_sink",
            help: "gr-zeromq rep_sink: answers each request (a u32 item count) with up to that many items.",
            ports: "in: item",
            params: REP_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "serve"
type = "zmq_rep_sink"
params = { item = "c32", address = "tcp://*:5557" }"#,
            build: |p| with_item(p, SocketType::Rep, true),
            memory: None,
        },
        BlockType {
            name: "zmq_req_source",
            help: "gr-zeromq req_source: asks for as many items as its output has room for and receives the reply straight into the queue.",
            ports: "out: item",
            params: REQ_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "ask"
type = "zmq_req_source"
params = { item = "c32", address = "tcp://127.0.0.1:5557" }"#,
            build: |p| with_item(p, SocketType::Req, false),
            memory: None,
        },
    ];
    for t in types {
        registry.add(t).expect("the zmq blocks are registered once");
    }
}
