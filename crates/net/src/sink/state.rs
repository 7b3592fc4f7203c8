//! The states of a `tcp_sink` and the moves between them.
//!
//! * [`Connecting`](SinkState::Connecting): no receiver yet. A connection (its HELLO sent)
//!   makes it [`Greeting`](SinkState::Greeting); `connect_timeout` fails the node.
//! * `Greeting`: waiting for the receiver's WELCOME, which makes it
//!   [`Streaming`](SinkState::Streaming) (a fenced standby's: [`Standby`](SinkState::Standby)).
//!   A listening sink's peer that fails before its first frame is refused and the sink waits
//!   on as before; any other failure is a lost connection.
//! * `Streaming`: sends its input as credit allows; once all of it is sent (the input ended),
//!   the END makes it [`Draining`](SinkState::Draining).
//! * `Standby`: a fenced standby sends nothing and releases what the receiver acknowledges;
//!   promoted, it connects again as primary (`Connecting`).
//! * `Draining`: the END is out; the receiver's last ACK (or its close after it) makes it
//!   [`Closed`](SinkState::Closed): the stream is delivered.
//! * [`Resuming`](SinkState::Resuming): the connection was lost; the next one makes it
//!   `Greeting`; `resume_timeout` (or a stop of the graph) fails the node.
//! * [`Abandoned`](SinkState::Abandoned): a `replica` sink that lost its receiver consumes its
//!   input to the end (the other replica carries the stream).
//!
//! A fatal error (or any loss with `resume_timeout` 0) fails the node, after an ERROR frame
//! to the peer.

use super::send::Pending;
use super::{TcpSink, CONTROL_WAIT};
use crate::accept::Acceptor;
use crate::conn::{Conn, Endpoint};
use crate::decoder::Decoder;
use crate::wire;
use crate::NetError;
use sluice_runtime::{Item, NodeError, Work};
use std::time::{Duration, Instant};

/// A connection to the receiver, and where its stream stands.
#[derive(Debug)]
pub(super) struct Session {
    pub(super) conn: Conn,
    pub(super) decoder: Decoder,
    /// The peer's first frame was decoded (a failure before it is a refusal on a listening
    /// sink, see [`TcpSink::lose`]).
    pub(super) greeted: bool,
    /// The stream offset sent up to, and the credit the receiver gave.
    pub(super) sent: u64,
    pub(super) credit: u64,
    /// The most items a DATA frame may carry (the WELCOME says).
    pub(super) max_items: usize,
    /// The batch being sent.
    pub(super) pending: Option<Pending>,
    /// Bytes read from the receiver and not yet decoded: `rx_at..rx_len`.
    pub(super) rx: [u8; 256],
    pub(super) rx_at: usize,
    pub(super) rx_len: usize,
    /// When the socket was last read, and whether the node waited on it since.
    pub(super) rx_checked: Instant,
    pub(super) waited: bool,
    /// A standby's connection (HELLO revision 0): it sends nothing.
    pub(super) standby: bool,
    /// The sequence number of the next message to send on this connection.
    pub(super) msg_sent: u64,
}

/// A lost connection: when, and why.
#[derive(Debug)]
pub(super) struct Lost {
    pub(super) at: Instant,
    pub(super) cause: NetError,
}

/// What a sink without a receiver waits for: its first (since `since`), or one that resumes
/// after a loss.
#[derive(Debug)]
pub(super) enum Wait {
    First { since: Instant },
    Resume(Lost),
}

/// Where a `tcp_sink` stands (see the [module docs](self)).
#[derive(Debug)]
pub(super) enum SinkState {
    /// No receiver yet: one is awaited until `connect_timeout` after `since`.
    Connecting { since: Instant },
    /// Connected, HELLO sent: waiting for the receiver's WELCOME. `waited`: the wait this
    /// connection ends (until the WELCOME, the timeouts still count from it).
    Greeting { session: Session, waited: Wait },
    /// Welcomed as a fenced standby: sends nothing, releases what the receiver has.
    Standby { session: Session },
    /// Welcomed: sends its input.
    Streaming { session: Session },
    /// Everything and the END (at offset `end`) are sent: waiting for the last ACK.
    Draining { session: Session, end: u64 },
    /// The connection was lost: a receiver is awaited until `resume_timeout` after the loss.
    Resuming { lost: Lost },
    /// A `replica` sink gave its receiver up, having had `acked` acknowledged, for `why`.
    Abandoned { acked: u64, why: String },
    /// The stream was delivered, or the node stopped.
    Closed,
}

impl Wait {
    /// The state of a sink that waits so.
    fn into_state(self) -> SinkState {
        match self {
            Wait::First { since } => SinkState::Connecting { since },
            Wait::Resume(lost) => SinkState::Resuming { lost },
        }
    }
}

impl SinkState {
    /// The receiver's connection, in the states that have one.
    pub(super) fn session(&self) -> Option<&Session> {
        match self {
            SinkState::Greeting { session, .. }
            | SinkState::Standby { session }
            | SinkState::Streaming { session }
            | SinkState::Draining { session, .. } => Some(session),
            _ => None,
        }
    }

    /// The receiver's connection, in the states that have one.
    pub(super) fn session_mut(&mut self) -> Option<&mut Session> {
        match self {
            SinkState::Greeting { session, .. }
            | SinkState::Standby { session }
            | SinkState::Streaming { session }
            | SinkState::Draining { session, .. } => Some(session),
            _ => None,
        }
    }

    /// A new connection, HELLO sent: a waiting sink is `Greeting` (any other state is left).
    pub(super) fn greet(&mut self, session: Session) {
        *self = match std::mem::replace(self, SinkState::Closed) {
            SinkState::Connecting { since } => SinkState::Greeting {
                session,
                waited: Wait::First { since },
            },
            SinkState::Resuming { lost } => SinkState::Greeting {
                session,
                waited: Wait::Resume(lost),
            },
            other => other,
        };
    }

    /// The receiver's WELCOME (a standby's: its first WELCOME or ACK) came: `Greeting`
    /// becomes `Streaming` (`Standby`), the loss it resumed from made good.
    pub(super) fn welcomed(&mut self) {
        *self = match std::mem::replace(self, SinkState::Closed) {
            SinkState::Greeting { session, .. } if session.standby => {
                SinkState::Standby { session }
            }
            SinkState::Greeting { session, .. } => SinkState::Streaming { session },
            other => other,
        };
    }

    /// The END at `end` is out: `Streaming` becomes `Draining`.
    pub(super) fn end_sent(&mut self, end: u64) {
        *self = match std::mem::replace(self, SinkState::Closed) {
            SinkState::Streaming { session } => SinkState::Draining { session, end },
            other => other,
        };
    }
}

impl<T: Item> TcpSink<T> {
    /// Drops the connection for `cause`. A fatal cause fails the node (after telling the peer
    /// in an ERROR frame); otherwise the sink waits for a new connection and resumes (a
    /// `replica` sink abandons its receiver instead).
    pub(super) fn lose(&mut self, cause: NetError) -> Result<(), NodeError> {
        let (session, lost) = match std::mem::replace(&mut self.state, SinkState::Closed) {
            SinkState::Greeting { session, waited } => {
                if !session.greeted && matches!(self.endpoint, Endpoint::Listen(_)) {
                    self.refuse(session, &cause);
                    self.state = waited.into_state();
                    return Ok(());
                }
                let lost = match waited {
                    Wait::Resume(lost) => Some(lost),
                    Wait::First { .. } => None,
                };
                (Some(session), lost)
            }
            SinkState::Standby { session }
            | SinkState::Streaming { session }
            | SinkState::Draining { session, .. } => (Some(session), None),
            SinkState::Connecting { .. } => (None, None),
            SinkState::Resuming { lost } => (None, Some(lost)),
            // (Nothing to lose.)
            ended @ (SinkState::Abandoned { .. } | SinkState::Closed) => {
                self.state = ended;
                return Ok(());
            }
        };
        if let Some(s) = session {
            if cause.is_fatal() && !matches!(cause, NetError::Remote { .. }) {
                let _ = s
                    .conn
                    .send_control(&wire::error(&cause.to_string()), CONTROL_WAIT);
            }
        }
        if self.opts.replica {
            // Waiting for the replica would hold up the other one's stream, and a replica that
            // missed items cannot be primary any more: it fails, and its partner goes on.
            self.state = SinkState::Abandoned {
                acked: self.acked,
                why: cause.to_string(),
            };
            return Ok(());
        }
        if cause.is_fatal() || self.opts.resume_timeout.is_zero() {
            return Err(cause.into());
        }
        let lost = lost.unwrap_or_else(|| Lost {
            at: Instant::now(),
            cause,
        });
        self.state = SinkState::Resuming { lost };
        Ok(())
    }

    /// A listening sink's peer that failed before its first frame decoded (an HTTP probe,
    /// garbage, silence, an ERROR: a receiver that refused this stream) costs that connection
    /// only: anyone may connect to a listener, so no such peer may end the stream. The sink
    /// waits on (its timeout's error names the last refusal). What a valid WELCOME asks (a
    /// resume beyond retention) still fails as before.
    fn refuse(&mut self, session: Session, cause: &NetError) {
        if !matches!(cause, NetError::Remote { .. }) {
            let _ = session
                .conn
                .send_control(&wire::error(&cause.to_string()), Duration::from_millis(100));
        }
        let line = format!(
            "{}: {}",
            crate::escape::text(&session.conn.peer),
            crate::escape::text(&cause.to_string())
        );
        self.refusals
            .line(Duration::from_secs(1), &format!("tcp_sink: refused {line}"));
        self.refused = Some(line);
    }

    /// Waiting for a receiver: the error once it waited too long (`connect_timeout` for the
    /// first, `resume_timeout` after a loss).
    pub(super) fn check_timeout(&mut self) -> Result<(), NodeError> {
        let (started, limit) = match &self.state {
            SinkState::Connecting { since } => (*since, self.opts.connect_timeout),
            SinkState::Resuming { lost } => (lost.at, self.opts.resume_timeout),
            _ => return Ok(()),
        };
        let elapsed = started.elapsed();
        if elapsed <= limit {
            return Ok(());
        }
        Err(
            match std::mem::replace(&mut self.state, SinkState::Closed) {
                SinkState::Resuming { lost } => NetError::Lost {
                    cause: Box::new(lost.cause),
                    secs: elapsed.as_secs_f64(),
                },
                _ => crate::conn::no_connection(
                    &self.endpoint,
                    self.acked,
                    elapsed,
                    self.refused
                        .clone()
                        .or_else(|| self.acceptor.as_ref().and_then(Acceptor::last_refusal)),
                ),
            }
            .into(),
        )
    }

    /// The graph is stopping (another host failed, or a stop while this end was away): a lost
    /// receiver is not waited for.
    pub(super) fn give_up_lost(&mut self) -> Result<(), NodeError> {
        let state = std::mem::replace(&mut self.state, SinkState::Closed);
        let SinkState::Resuming { lost } = state else {
            self.state = state;
            return Ok(());
        };
        Err(NodeError::msg(format!(
            "{}; the graph is stopping, so the stream from offset {} on is not delivered",
            lost.cause, self.acked
        )))
    }

    /// The stream is delivered: the sink is done (and a warm partition's input is all
    /// reflected in acknowledged outputs).
    pub(super) fn delivered(&mut self) -> Work {
        if let Some(s) = self.take_session() {
            s.conn.close_after_peer(Duration::from_millis(200));
        }
        if let (Some(_), Some(fence)) = (self.opts.warm, &self.opts.fence) {
            fence.input_acknowledged().advance(u64::MAX);
        }
        Work::Done
    }

    /// Ends the connection, if there is one: the sink is `Closed`.
    pub(super) fn take_session(&mut self) -> Option<Session> {
        match std::mem::replace(&mut self.state, SinkState::Closed) {
            SinkState::Greeting { session, .. }
            | SinkState::Standby { session }
            | SinkState::Streaming { session }
            | SinkState::Draining { session, .. } => Some(session),
            other => {
                self.state = other;
                None
            }
        }
    }
}
