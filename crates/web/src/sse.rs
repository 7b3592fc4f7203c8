//! Server-sent events (`text/event-stream`): how the statistics and tap streams reach a
//! client.
//!
//! A stream runs on two threads: a producer (scoped, of its own) makes an event every period,
//! and the connection's thread writes them. Between the two is a queue of at most
//! [`QUEUE_EVENTS`] events, so a client that reads too slowly loses events instead of making
//! the console hold more for it: each loss is counted in the stream's next event (`dropped`)
//! and in `/metrics` (`sluice_console_dropped_events_total`). The producer never waits on the
//! client, and never on a graph thread either (statistics are relaxed loads, taps lossy
//! readers).

use serde_json::Value;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError, TrySendError};
use std::time::{Duration, Instant};

/// Events queued for one client at most; more are dropped (and counted) until it catches up.
pub(crate) const QUEUE_EVENTS: usize = 4;
/// A comment line goes out after this long without an event, so that proxies and the client
/// can tell a quiet stream (a tap on an edge that moves nothing) from a dead one.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(10);
/// How long a client should wait before reconnecting a stream that ended (the `retry:` field).
pub(crate) const RETRY_MS: u64 = 2000;
/// The longest the producer sleeps before looking whether the stream should end.
const POLL: Duration = Duration::from_millis(20);

/// Writes the head of an event stream, then the `retry:` field.
fn head(w: &mut impl Write) -> std::io::Result<()> {
    write!(
        w,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\
         Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
         X-Accel-Buffering: no\r\n\r\nretry: {RETRY_MS}\n\n"
    )?;
    w.flush()
}

/// One event: `event: NAME`, the data one `data:` line per line of it, and the blank line
/// that ends the event.
pub(crate) fn event(name: &str, data: &str) -> String {
    let mut s = format!("event: {name}\n");
    for line in data.split('\n') {
        s.push_str("data: ");
        s.push_str(line.strip_suffix('\r').unwrap_or(line));
        s.push('\n');
    }
    s.push('\n');
    s
}

/// What a stream needs from the console: when to end, and where to count drops.
pub(crate) struct Stream<'a> {
    /// Set when the console closes: the stream sends one last event and ends.
    pub closing: &'a AtomicBool,
    /// Events dropped for slow clients, over all streams (for `/metrics`).
    pub dropped: &'a AtomicU64,
    /// Streams open now: the console, closing, waits a little for them to send their last
    /// event.
    pub open: &'a AtomicUsize,
    /// The event's name (`stats`, `frame`), for [`serve`](Stream::serve).
    pub name: &'static str,
    /// Time between events.
    pub period: Duration,
    /// Time without an event after which a keep-alive comment goes out.
    pub keep_alive: Duration,
}

impl Stream<'_> {
    /// Serves the stream on `out` until the client goes away or the console closes. `next`
    /// makes an event's JSON object (`None`: nothing new this period); it runs on the
    /// stream's own thread, and gets `dropped` added (events this client lost so far).
    pub(crate) fn serve<W: Write>(
        &self,
        out: &mut W,
        mut next: impl FnMut() -> Option<Value> + Send,
    ) -> std::io::Result<()> {
        let name = self.name;
        self.serve_named(out, move || next().map(|v| (name, v)))
    }

    /// As [`serve`](Stream::serve), for a stream of several kinds of event: `next` names
    /// each event it makes.
    pub(crate) fn serve_named<W: Write>(
        &self,
        out: &mut W,
        mut next: impl FnMut() -> Option<(&'static str, Value)> + Send,
    ) -> std::io::Result<()> {
        /// Counts the stream open until it ends, however it ends.
        struct Open<'a>(&'a AtomicUsize);
        impl Drop for Open<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.open.fetch_add(1, Ordering::AcqRel);
        let _open = Open(self.open);
        head(out)?;
        let (tx, rx) = sync_channel::<String>(QUEUE_EVENTS);
        let gone = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let (gone, closing, dropped_total) = (&gone, self.closing, self.dropped);
            let period = self.period;
            let producer = std::thread::Builder::new()
                .name("console-events".into())
                .spawn_scoped(scope, move || {
                    let mut dropped = 0u64;
                    let mut due = Instant::now();
                    loop {
                        // The last event goes out after the console began closing, so that the
                        // client sees the run's final state (a node's error, say).
                        let last = closing.load(Ordering::Acquire);
                        if let Some((name, mut v)) = next() {
                            if let Value::Object(m) = &mut v {
                                m.insert("dropped".into(), dropped.into());
                            }
                            match tx.try_send(event(name, &v.to_string())) {
                                Ok(()) => {}
                                Err(TrySendError::Full(_)) => {
                                    dropped += 1;
                                    dropped_total.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(TrySendError::Disconnected(_)) => return,
                            }
                        }
                        if last {
                            return;
                        }
                        // Behind (a slow frame): the next period starts from now.
                        due = (due + period).max(Instant::now());
                        loop {
                            if gone.load(Ordering::Acquire) {
                                return;
                            }
                            let now = Instant::now();
                            if closing.load(Ordering::Acquire) || now >= due {
                                break;
                            }
                            std::thread::sleep((due - now).min(POLL));
                        }
                    }
                });
            if producer.is_err() {
                // No thread for it: the stream ends at once and the client retries.
                return Ok(());
            }
            let result = self.write_events(out, &rx);
            gone.store(true, Ordering::Release);
            drop(rx);
            result
        })
    }

    /// The connection's side: writes what the producer queued, and a comment when it has
    /// been quiet for `keep_alive`; ends when the producer does or the client is gone.
    fn write_events<W: Write>(
        &self,
        out: &mut W,
        rx: &std::sync::mpsc::Receiver<String>,
    ) -> std::io::Result<()> {
        loop {
            match rx.recv_timeout(self.keep_alive) {
                Ok(ev) => {
                    out.write_all(ev.as_bytes())?;
                    out.flush()?;
                }
                Err(RecvTimeoutError::Timeout) => {
                    out.write_all(b": keep-alive\n\n")?;
                    out.flush()?;
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_lines_are_split_and_every_event_ends_with_a_blank_line() {
        assert_eq!(event("stats", "{}"), "event: stats\ndata: {}\n\n");
        assert_eq!(event("x", "a\r\nb"), "event: x\ndata: a\ndata: b\n\n");
    }

    #[test]
    fn a_quiet_stream_sends_keep_alives_and_a_closing_one_its_last_event() {
        let closing = AtomicBool::new(false);
        let (dropped, open) = (AtomicU64::new(0), AtomicUsize::new(0));
        let stream = Stream {
            closing: &closing,
            dropped: &dropped,
            open: &open,
            name: "frame",
            period: Duration::from_millis(5),
            keep_alive: Duration::from_millis(20),
        };
        let started = Instant::now();
        let mut out = Vec::new();
        stream
            .serve(&mut out, || {
                // Quiet for a while, then the console closes: the one event is the last.
                if started.elapsed() > Duration::from_millis(300) {
                    closing.store(true, Ordering::Release);
                    Some(json!({"n": 1}))
                } else {
                    None
                }
            })
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("Content-Type: text/event-stream"), "{text}");
        assert!(text.contains("\r\n\r\nretry: 2000\n\n"), "{text}");
        assert!(text.contains(": keep-alive\n\n"), "{text}");
        assert!(
            text.ends_with("event: frame\ndata: {\"dropped\":0,\"n\":1}\n\n"),
            "{text}"
        );
        assert_eq!(
            open.load(Ordering::Acquire),
            0,
            "the stream counts itself out"
        );
    }

    /// A client that takes nothing: its writes fail at once, as a full socket's do after the
    /// write timeout, and the stream ends; events the queue could not take are counted.
    #[test]
    fn a_client_that_reads_nothing_loses_events_and_ends_its_stream() {
        struct Stuck(std::sync::Arc<AtomicBool>);
        impl Write for Stuck {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                if self.0.load(Ordering::Acquire) {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
                // The head goes through; then the client stalls until released.
                if buf.starts_with(b"event:") {
                    while !self.0.load(Ordering::Acquire) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let closing = AtomicBool::new(false);
        let (dropped, open) = (AtomicU64::new(0), AtomicUsize::new(0));
        let stream = Stream {
            closing: &closing,
            dropped: &dropped,
            open: &open,
            name: "frame",
            period: Duration::from_millis(1),
            keep_alive: KEEP_ALIVE,
        };
        let release = std::sync::Arc::new(AtomicBool::new(false));
        let mut out = Stuck(release.clone());
        let deadline = Instant::now() + Duration::from_secs(5);
        let result = stream.serve(&mut out, || {
            if dropped.load(Ordering::Relaxed) >= 3 || Instant::now() > deadline {
                release.store(true, Ordering::Release);
            }
            Some(json!({}))
        });
        assert!(
            result.is_err(),
            "the stalled client's stream ends with its error"
        );
        assert!(dropped.load(Ordering::Relaxed) >= 3);
    }
}
