//! Options of the gr-zeromq-compatible blocks, named as GNU Radio names them.

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
}

impl ZmqOptions {
    /// gr-zeromq's defaults for `address`; `bind` as given.
    pub fn new(address: &str, bind: bool) -> Self {
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
        }
    }

    /// The longest a `work` call sleeps on the socket: the timeout, at most 20 ms so that a
    /// stop request is seen promptly.
    pub(crate) fn slice(&self) -> Duration {
        self.timeout.min(Duration::from_millis(20))
    }
}
