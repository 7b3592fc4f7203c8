//! `tcp_sink`, `tcp_source`, `shm_sink` and `shm_source` as graph-file block types;
//! [`register`] adds them to a [`Registry`].

use crate::{RetentionFull, ShmOptions, ShmSink, ShmSource, TcpOptions, TcpSink, TcpSource};
use num_complex::Complex32;
use sluice_graph::{BlockType, ParamDoc, ParamError, Params, Registry};
use sluice_runtime::{Item, Node};
use std::time::Duration;

const COMMON: &[ParamDoc] = &[
    ParamDoc {
        name: "url",
        default: "required",
        help: "tcp://host:port to connect, tcp-listen://host:port to listen",
    },
    ParamDoc {
        name: "item",
        default: "c32",
        help: "item type: c32 (complex f32), f32, i16, u8",
    },
    ParamDoc {
        name: "frame_bytes",
        default: "1048576",
        help: "payload bytes per DATA frame (sender); sizes the receiver's queue",
    },
    ParamDoc {
        name: "heartbeat",
        default: "1.0",
        help: "seconds of silence after which a HEARTBEAT goes out",
    },
    ParamDoc {
        name: "peer_timeout",
        default: "10.0",
        help: "seconds without a byte from the peer before it is declared silent",
    },
    ParamDoc {
        name: "timeout",
        default: "60.0",
        help: "seconds to wait for the first connection before failing",
    },
    ParamDoc {
        name: "resume_timeout",
        default: "60.0",
        help: "seconds to wait for a new connection after a loss (0: fail at once, no resume)",
    },
];

const VLEN: ParamDoc = ParamDoc {
    name: "vlen",
    default: "1",
    help: "items per vector: the stream carries vectors of this many items (e.g. one sample of each of vlen channels); both ends must agree",
};

const KEY_FILE: ParamDoc = ParamDoc {
    name: "key_file",
    default: "none",
    help: "cluster key file (64 hex characters, mode 600): every connection authenticates with it (HMAC-SHA256 challenge-response) before the stream starts; peers without the key are refused and logged",
};

const AUTH_TIMEOUT: ParamDoc = ParamDoc {
    name: "auth_timeout",
    default: "5.0",
    help: "seconds one connection's authentication may take (with key_file)",
};

const SINK_PARAMS: &[ParamDoc] = &[
    COMMON[0],
    COMMON[1],
    COMMON[2],
    COMMON[3],
    COMMON[4],
    COMMON[5],
    COMMON[6],
    VLEN,
    KEY_FILE,
    AUTH_TIMEOUT,
    ParamDoc {
        name: "crc",
        default: "false",
        help: "append a CRC32C to every DATA frame",
    },
    ParamDoc {
        name: "retention_bytes",
        default: "8388608",
        help: "un-acknowledged bytes kept for resending after a reconnect",
    },
    ParamDoc {
        name: "retention_full",
        default: "block",
        help: "when retention is full while the peer is away: block (upstream waits) or drop_oldest (for real-time sources: drop, count, and mark the gap with a 'gap' tag)",
    },
    ParamDoc {
        name: "fence",
        default: "none",
        help: "name of the process's fence (a cluster partition with a hot standby): standby until the worker wins the partition's lease, then primary with the lease's revision in every HELLO",
    },
    ParamDoc {
        name: "replica",
        default: "false",
        help: "the receiver is one replica of a primary/standby pair: when its connection is lost, give it up at once with a warning (the other replica carries the stream)",
    },
    ParamDoc {
        name: "warm_decimation",
        default: "none",
        help: "with fence: the partition has a warm standby and this is its output; its input items per output item (the cluster sets it from the blocks' declared memory)",
    },
    ParamDoc {
        name: "warm_lag",
        default: "0",
        help: "with warm_decimation: outputs after which a fresh start of the partition is exact again",
    },
    ParamDoc {
        name: "flush_us",
        default: "50",
        help: "microseconds committed items may wait to batch into a larger frame (0: none)",
    },
];

const SOURCE_PARAMS: &[ParamDoc] = &[
    COMMON[0],
    COMMON[1],
    COMMON[2],
    COMMON[3],
    COMMON[4],
    COMMON[5],
    COMMON[6],
    VLEN,
    KEY_FILE,
    AUTH_TIMEOUT,
    ParamDoc {
        name: "max_frame",
        default: "67108864",
        help: "frames longer than this many bytes are refused",
    },
    ParamDoc {
        name: "history",
        default: "0",
        help: "items before its resume offset that the consumer needs to prime its state (an FIR's taps − 1); the sender keeps that many acknowledged items",
    },
    ParamDoc {
        name: "fenced",
        default: "false",
        help: "accept a primary and hot standbys (fenced senders): a newer lease revision displaces the primary, an older one is refused",
    },
    ParamDoc {
        name: "warm",
        default: "none",
        help: "name of the process's fence when this is the input of a partition with a warm standby: connect once the partition's output says where to start, start there, and acknowledge upstream only what the outputs' receiver acknowledged (the cluster sets it)",
    },
    ParamDoc {
        name: "spin_us",
        default: "0",
        help: "microseconds to busy-poll the socket after a frame before sleeping (0: no spin)",
    },
];

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
    let vlen = p.u64_or("vlen", 1)?;
    if !(1..=u64::from(crate::wire::MAX_VLEN)).contains(&vlen) {
        return Err(ParamError::new(
            "vlen",
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
        heartbeat: seconds(p, "heartbeat", d.heartbeat.as_secs_f64())?,
        peer_timeout: seconds(p, "peer_timeout", d.peer_timeout.as_secs_f64())?,
        connect_timeout: seconds(p, "timeout", d.connect_timeout.as_secs_f64())?,
        resume_timeout: seconds(p, "resume_timeout", d.resume_timeout.as_secs_f64())?,
        vlen: vlen(p)?,
        auth_timeout: seconds(p, "auth_timeout", d.auth_timeout.as_secs_f64())?,
        ..d
    };
    if let Some(path) = p.opt_str("key_file")? {
        let key = crate::auth::ClusterKey::load(std::path::Path::new(&path))
            .map_err(|e| ParamError::new("key_file", e.to_string()))?;
        o.key = Some(key);
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
        o.fence = p.opt_str("fence")?.map(|name| crate::Fence::named(&name));
        o.replica = p.bool_or("replica", false)?;
        if let Some(decimation) = p.opt_u64("warm_decimation")? {
            if decimation == 0 {
                return Err(ParamError::new("warm_decimation", "must be at least 1"));
            }
            let lag = p.u64_or("warm_lag", 0)?;
            o.warm = Some(crate::WarmMap { decimation, lag });
        }
    } else {
        o.history = p.u64_or("history", 0)?;
        if let Some(name) = p.opt_str("warm")? {
            let fence = crate::Fence::named(&name);
            o.ack = crate::Acknowledge::External(fence.input_acknowledged());
            o.warm_fence = Some(fence);
        }
        o.spin = micros(p, "spin_us", o.spin)?;
        o.fenced = p.bool_or("fenced", false)?;
        let max = p.u64_or("max_frame", u64::from(o.max_frame))?;
        o.max_frame = u32::try_from(max)
            .map_err(|_| ParamError::new("max_frame", format!("at most {}", u32::MAX)))?;
    }
    Ok(o)
}

fn build<T: Item>(p: &mut Params, sink: bool) -> Result<Box<dyn Node>, ParamError> {
    let url = p.str("url")?;
    let opts = options(p, sink)?;
    let err = |e: crate::NetError| ParamError::new("url", e.to_string());
    Ok(if sink {
        Box::new(TcpSink::<T>::new(&url, opts).map_err(err)?)
    } else {
        Box::new(TcpSource::<T>::new(&url, opts).map_err(err)?)
    })
}

const SHM_PARAMS: &[ParamDoc] = &[
    ParamDoc {
        name: "url",
        default: "required",
        help: "unix:PATH to connect, unix-listen:PATH to listen (@name: abstract socket, no file)",
    },
    COMMON[1],
    ParamDoc {
        name: "ring_bytes",
        default: "8388608",
        help: "bytes of shared ring the sink creates (rounded up to whole pages and items)",
    },
    COMMON[5],
];

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
    let item = p.opt_str("item")?.unwrap_or_else(|| "c32".to_string());
    match item.as_str() {
        "c32" => pick::<Complex32>(p, sink, shm),
        "f32" => pick::<f32>(p, sink, shm),
        "i16" => pick::<i16>(p, sink, shm),
        "u8" => pick::<u8>(p, sink, shm),
        other => Err(ParamError::new(
            "item",
            format!("unknown item type '{other}' (use c32, f32, i16 or u8)"),
        )),
    }
}

/// Adds `tcp_sink`, `tcp_source`, `shm_sink` and `shm_source` to `registry`.
pub fn register(registry: &mut Registry) {
    let types = [
        BlockType {
            name: "tcp_sink",
            help: "Sends its stream over TCP (sluice-net wire, docs/net/wire.md) with tags, resuming by offset after a reconnect.",
            ports: "in: item[vlen]",
            params: SINK_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "uplink"
type = "tcp_sink"
params = { item = "c32", url = "tcp://10.0.0.2:5000" }"#,
            build: |p| with_item(p, true),
            memory: None,
        },
        BlockType {
            name: "tcp_source",
            help: "Receives a stream over TCP (sluice-net wire, docs/net/wire.md) straight into its output queue, with tags.",
            ports: "out: item[vlen]",
            params: SOURCE_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "downlink"
type = "tcp_source"
params = { item = "c32", url = "tcp-listen://0.0.0.0:5000" }"#,
            build: |p| with_item(p, false),
            memory: None,
        },
        BlockType {
            name: "shm_sink",
            help: "Sends its stream to a shm_source in another process on this machine through a ring in shared memory (docs/net/shm.md), with tags.",
            ports: "in: item",
            params: SHM_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "to_demod"
type = "shm_sink"
params = { item = "c32", url = "unix-listen:@sluice-demo" }"#,
            build: |p| shm_with_item(p, true),
            memory: None,
        },
        BlockType {
            name: "shm_source",
            help: "Receives a stream from a shm_sink in another process on this machine through a ring in shared memory (docs/net/shm.md), with tags.",
            ports: "out: item",
            params: SHM_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "from_tuner"
type = "shm_source"
params = { item = "c32", url = "unix:@sluice-demo" }"#,
            build: |p| shm_with_item(p, false),
            memory: None,
        },
    ];
    for t in types {
        registry
            .add(t)
            .expect("the transport blocks are registered once");
    }
}
