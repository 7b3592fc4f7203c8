//! Options of the gr-zeromq-compatible blocks, named as GNU Radio names them.

use crate::SocketOptions;
use std::time::Duration;

/// Options of a `zmq_*_sink` or `zmq_*_source` (GNU Radio's constructor arguments).
#[derive(Debug, Clone)]
pub struct ZmqOptions {
    /// `tcp://host:port` (`tcp://*:port` binds every interface).
    pub address: String,
    /// Bind (listen) instead of connecting. gr-zeromq's default: sinks bind, sources connect.
    pub bind: bool,
    /// Each message starts with gr-zeromq's tag header (see [`crate::tag_header`]).
    pub pass_tags: bool,
    /// How long one `work` call waits for the socket before returning to the scheduler
    /// (GNU Radio's `timeout`, milliseconds there; 100 ms by default).
    pub timeout: Duration,
    /// GNU Radio's high-water mark, accepted for compatibility. sluice keeps no message queue
    /// of its own to bound: messages go from the block's input queue straight into the
    /// kernel's socket buffer, so the input queue is the high-water mark. `-1`: default.
    pub hwm: i64,
    /// PUB/SUB: the topic. A PUB sink sends it as a first frame; a SUB source subscribes to it
    /// and drops that frame.
    pub key: Vec<u8>,
    /// PUB: a subscriber whose socket is full when a message starts misses it (counted and
    /// reported) instead of holding the graph back (GNU Radio's `drop_on_hwm`, on by default).
    pub drop_on_hwm: bool,
    /// Sources: frames longer than this many bytes are refused.
    pub max_frame: u64,
    /// Sinks: the most items per message (0: as many as the input holds, as gr-zeromq does).
    pub max_items: usize,
    /// A connection whose ZeroMQ handshake has not ended within this is closed (libzmq's
    /// `ZMQ_HANDSHAKE_IVL`, 30 s).
    pub handshake_ivl: Duration,
    /// Binding sockets: the most connections at once (1024).
    pub max_peers: usize,
    /// Binding sockets: the most connections from one source address whose handshake has not
    /// ended (8).
    pub max_pending_per_ip: usize,
    /// A peer silent for this long in the middle of a frame or message is closed and its
    /// partial message dropped (10 s).
    pub frame_timeout: Duration,
    /// PUSH, REQ, REP: the most bytes queued for one peer beyond its kernel socket buffer;
    /// PUSH skips a peer at this mark (256 KiB).
    pub hwm_bytes: usize,
    /// PUB: the most distinct topics one subscriber may hold (1024).
    pub max_subscriptions: usize,
}

impl ZmqOptions {
    /// gr-zeromq's defaults for `address`; `bind` as given.
    pub fn new(address: &str, bind: bool) -> Self {
        let d = SocketOptions::default();
        ZmqOptions {
            address: address.to_string(),
            bind,
            pass_tags: false,
            timeout: Duration::from_millis(100),
            hwm: -1,
            key: Vec::new(),
            drop_on_hwm: true,
            max_frame: 256 << 20,
            max_items: 0,
            handshake_ivl: d.handshake_ivl,
            max_peers: d.max_peers,
            max_pending_per_ip: d.max_pending_per_ip,
            frame_timeout: d.frame_timeout,
            hwm_bytes: d.hwm_bytes,
            max_subscriptions: d.max_subscriptions,
        }
    }

    /// The socket's options from these.
    pub(crate) fn socket_options(&self) -> SocketOptions {
        SocketOptions {
            max_frame: self.max_frame,
            drop_on_hwm: self.drop_on_hwm,
            handshake_ivl: self.handshake_ivl,
            max_peers: self.max_peers,
            max_pending_per_ip: self.max_pending_per_ip,
            frame_timeout: self.frame_timeout,
            hwm_bytes: self.hwm_bytes,
            max_subscriptions: self.max_subscriptions,
            ..SocketOptions::default()
        }
    }

    /// The longest a `work` call sleeps on the socket: the timeout, at most 20 ms so that a
    /// stop request is seen promptly.
    pub(crate) fn slice(&self) -> Duration {
        self.timeout.min(Duration::from_millis(20))
    }
}
