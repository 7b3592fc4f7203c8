//! The states of a `tcp_source` and the moves between them.
//!
//! * [`Connecting`](SourceState::Connecting): no sender yet. A connection makes it
//!   [`Greeting`](SourceState::Greeting) (a listener's comes with its HELLO and is welcomed
//!   at once: [`Streaming`](SourceState::Streaming)); `connect_timeout` makes it
//!   [`Draining`](SourceState::Draining).
//! * `Greeting`: connected (`tcp://`), the sender's HELLO not in yet. The HELLO, once the
//!   WELCOME went out, makes it `Streaming`; a lost connection `Resuming`.
//! * `Streaming`: the sender's frames come into the output queue. Its END makes it
//!   [`Closed`](SourceState::Closed), a lost connection `Resuming`; a fenced receiver's newer
//!   primary replaces the connection.
//! * [`Resuming`](SourceState::Resuming): the connection was lost; the next one makes it
//!   `Greeting` (or `Streaming`, as from `Connecting`); `resume_timeout` makes it `Draining`.
//! * `Draining`: failed (a fatal error, a timeout, any loss with `resume_timeout` 0):
//!   downstream takes what arrived, then the error is reported.

use super::receive::Session;
use super::{TcpSource, CONTROL_WAIT};
use crate::wire;
use crate::NetError;
use sluice_runtime::{Item, NodeError};
use std::time::{Instant, SystemTime};

/// A lost connection: when (and when by the wall clock, for a takeover's record), and why.
#[derive(Debug)]
pub(super) struct Lost {
    pub(super) at: Instant,
    pub(super) wall: SystemTime,
    pub(super) cause: NetError,
}

/// Where a `tcp_source` stands (see the [module docs](self)).
#[derive(Debug)]
pub(super) enum SourceState {
    /// No sender yet: one is awaited until `connect_timeout` after `since`.
    Connecting { since: Instant },
    /// Connected to the sender, its HELLO not in yet. `lost`: the loss this connection
    /// resumes from (until the HELLO, a failure still counts the resume timeout from there).
    Greeting {
        session: Session,
        lost: Option<Lost>,
    },
    /// The sender was welcomed: its frames come into the output queue.
    Streaming { session: Session },
    /// The connection was lost: a sender is awaited until `resume_timeout` after the loss.
    Resuming { lost: Lost },
    /// Failed: downstream takes every item received, then `error` is reported.
    Draining { error: NodeError },
    /// The stream ended (its END came), or the node stopped.
    Closed,
}

impl SourceState {
    /// Whether a sender is connected (greeting or streaming).
    pub(super) fn connected(&self) -> bool {
        matches!(
            self,
            SourceState::Greeting { .. } | SourceState::Streaming { .. }
        )
    }

    /// The connected sender's session.
    pub(super) fn session_mut(&mut self) -> Option<&mut Session> {
        match self {
            SourceState::Greeting { session, .. } | SourceState::Streaming { session } => {
                Some(session)
            }
            _ => None,
        }
    }

    /// A new connection (to a sender that is waited for, or one that displaces the connected
    /// sender): `Greeting` it, keeping the loss it resumes from. What it replaces is returned
    /// (a displaced session, to be told why).
    pub(super) fn connect(&mut self, session: Session) -> Option<Session> {
        let (old, lost) = match std::mem::replace(self, SourceState::Closed) {
            SourceState::Greeting { session, lost } => (Some(session), lost),
            SourceState::Streaming { session } => (Some(session), None),
            SourceState::Resuming { lost } => (None, Some(lost)),
            SourceState::Connecting { .. } | SourceState::Draining { .. } | SourceState::Closed => {
                (None, None)
            }
        };
        *self = SourceState::Greeting { session, lost };
        old
    }

    /// The sender's HELLO was answered: `Greeting` becomes `Streaming` (the loss is made good).
    pub(super) fn welcomed(&mut self) {
        *self = match std::mem::replace(self, SourceState::Closed) {
            SourceState::Greeting { session, .. } => SourceState::Streaming { session },
            other => other,
        };
    }

    /// The loss not yet made good: the one a resuming source waits on, or the one a greeting
    /// connection resumes from.
    pub(super) fn lost(&self) -> Option<&Lost> {
        match self {
            SourceState::Resuming { lost }
            | SourceState::Greeting {
                lost: Some(lost), ..
            } => Some(lost),
            _ => None,
        }
    }
}

impl<T: Item> TcpSource<T> {
    /// The connection is lost for `cause`: a fatal cause (or any, with `resume_timeout` 0)
    /// fails the node, after telling the peer in an ERROR frame; otherwise the source is
    /// `Resuming` (from the first loss not made good).
    pub(super) fn lose(&mut self, cause: NetError) -> Result<(), NodeError> {
        let lost = match std::mem::replace(&mut self.state, SourceState::Closed) {
            SourceState::Greeting { session, lost } => {
                self.hang_up(session, &cause);
                lost
            }
            SourceState::Streaming { session } => {
                self.hang_up(session, &cause);
                None
            }
            SourceState::Resuming { lost } => Some(lost),
            SourceState::Connecting { .. } => None,
            // (Nothing to lose.)
            ended @ (SourceState::Draining { .. } | SourceState::Closed) => {
                self.state = ended;
                return Ok(());
            }
        };
        if cause.is_fatal() || self.opts.resume_timeout.is_zero() {
            return Err(cause.into());
        }
        let lost = lost.unwrap_or_else(|| Lost {
            at: Instant::now(),
            wall: SystemTime::now(),
            cause,
        });
        self.state = SourceState::Resuming { lost };
        Ok(())
    }

    /// Closes a lost connection: a frame begun and not committed comes again from where the
    /// stream stands; a fatal cause is told to the peer, except by the input of a warm
    /// partition: its sender must wait for the standby that takes the partition over, and an
    /// ERROR would end the sender's stream (this replica failing, its own graph's output
    /// closed, is no fault of the stream's).
    fn hang_up(&mut self, session: Session, cause: &NetError) {
        self.ledger
            .tag_window
            .forget_after(session.decoder.offset());
        let replica = self.opts.warm_fence.is_some();
        if cause.is_fatal() && !matches!(cause, NetError::Remote { .. }) && !replica {
            let _ = session
                .conn
                .send_control(&wire::error(&cause.to_string()), CONTROL_WAIT);
        }
    }

    /// Waiting for a sender: the error once it waited too long (`connect_timeout` for the
    /// first, `resume_timeout` after a loss); `received` is where the stream stands.
    pub(super) fn check_timeout(&mut self, received: u64) -> Result<(), NodeError> {
        let (started, limit) = match &self.state {
            SourceState::Connecting { since } => (*since, self.opts.connect_timeout),
            SourceState::Resuming { lost } => (lost.at, self.opts.resume_timeout),
            _ => return Ok(()),
        };
        let elapsed = started.elapsed();
        if elapsed <= limit {
            return Ok(());
        }
        let secs = elapsed.as_secs_f64();
        Err(
            match std::mem::replace(&mut self.state, SourceState::Closed) {
                SourceState::Resuming { lost } => NetError::Lost {
                    cause: Box::new(lost.cause),
                    secs,
                },
                _ => crate::conn::no_connection(
                    &self.endpoint,
                    received,
                    elapsed,
                    self.refused
                        .clone()
                        .or_else(|| self.acceptor.as_ref().and_then(|a| a.last_refusal())),
                ),
            }
            .into(),
        )
    }
}
