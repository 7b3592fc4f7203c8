//! A fenced receiver: the one `tcp_source` of a partition that runs as primary and hot
//! standby (see [`fence`](crate::fence)). It keeps accepting while a primary sends: a
//! standby's connection (HELLO revision 0) is kept and told what was received, a primary's
//! displaces the current one if its lease revision is at least as new (and, with `fenced_by`,
//! confirmed by the process's revision check), and an older one is refused. Each change of
//! primary is recorded for the warnings. A warm partition's receiver starts where its sender
//! says.

use super::connect::refuse;
use super::ledger::welcome_for;
use super::receive::Session;
use super::{TcpSource, CONTROL_WAIT};
use crate::conn::{io_err, Conn, Recv};
use crate::decoder::Decoder;
use crate::options::TcpOptions;
use crate::secure::Link;
use crate::wire::{self, Hello};
use sluice_runtime::{Item, NodeError, Output};
use std::time::{Duration, Instant, SystemTime};

/// A fenced receiver that has a primary looks for new connections (a standby, a newer primary)
/// at most this often: takeovers take a second, and the receive loop runs per frame.
const ACCEPT_EVERY: Duration = Duration::from_millis(5);

/// A fenced receiver's replicas.
#[derive(Debug)]
pub(super) struct Fenced {
    /// The current primary's lease revision (0 before the first).
    revision: u64,
    /// The static key the current revision's holder proved, when the revision check bound it
    /// to one.
    bound_key: Option<[u8; 32]>,
    /// The standbys' connections.
    pub(super) standbys: Vec<Conn>,
    /// Every change of primary.
    takeovers: Vec<Takeover>,
    /// When the listener was last looked at while a primary sent.
    last_accept: Instant,
}

impl Default for Fenced {
    fn default() -> Self {
        Fenced {
            revision: 0,
            bound_key: None,
            standbys: Vec::new(),
            takeovers: Vec::new(),
            last_accept: Instant::now(),
        }
    }
}

/// A fenced receiver's change of primary.
#[derive(Debug)]
struct Takeover {
    /// The stream offset at which the new primary resumed.
    offset: u64,
    /// The old and the new primary's lease revisions.
    from: u64,
    to: u64,
    /// When and why the old primary was declared lost (`None`: the new one displaced a
    /// connected one), and when the new one was welcomed.
    lost: Option<(SystemTime, String)>,
    resumed: SystemTime,
    /// When the new primary's first item came (a warm standby connects before its fresh
    /// partition has produced anything).
    first_item: Option<SystemTime>,
    /// Its number in the process's journal ([`crate::takeovers`]), read live by a worker.
    journal: u64,
}

impl<T: Item> TcpSource<T> {
    /// Fenced, while a primary sends: looks for new connections (a standby, a newer primary)
    /// at most every [`ACCEPT_EVERY`].
    pub(super) fn look_for_replicas(&mut self, out: &mut Output<T>) -> Result<(), NodeError> {
        if self.opts.fenced && self.fenced.last_accept.elapsed() >= ACCEPT_EVERY {
            self.fenced.last_accept = Instant::now();
            self.accept_fenced(out, Duration::ZERO)?;
        }
        Ok(())
    }

    /// Fenced: takes the connections waiting on the listener (waiting up to `wait` for one):
    /// standbys join the list, a primary at least as new as the current one replaces it, an
    /// older one or an unfenced sender is refused (and logged), and so is a bad HELLO: the
    /// stream goes on either way.
    pub(super) fn accept_fenced(
        &mut self,
        out: &mut Output<T>,
        wait: Duration,
    ) -> Result<(), NodeError> {
        let mut wait = wait;
        loop {
            let received = self.received(out);
            let Some((hello, decoder, link)) = self.arrival(wait, received)? else {
                return Ok(());
            };
            // Take whatever else is ready, without waiting.
            wait = Duration::ZERO;
            let peer = link
                .stream
                .peer_addr()
                .map_or_else(|_| "(unknown peer)".to_string(), |a| a.to_string());
            let (revision, bound) = match self.fenced.admit(&self.opts, &hello, &link, &peer) {
                Ok(admitted) => admitted,
                Err(why) => {
                    refuse(link, &why, Some(&peer));
                    continue;
                }
            };
            let conn = Conn::new(link, self.opts.heartbeat)
                .map_err(|e| io_err(&peer, received, "socket setup", &e))?;
            if revision == 0 {
                self.add_standby(conn, received, out.capacity())?;
            } else {
                self.take_primary(conn, decoder, hello, (revision, bound), out)?;
            }
        }
    }

    /// A standby joins: its WELCOME says what was received (and gives no credit).
    fn add_standby(&mut self, conn: Conn, received: u64, capacity: usize) -> Result<(), NodeError> {
        let size = std::mem::size_of::<T>();
        let welcome = wire::welcome(&welcome_for(&self.opts, received, capacity, size, false)?);
        if conn.send_control(&welcome, CONTROL_WAIT).is_ok() {
            self.fenced.standbys.push(conn);
        }
        Ok(())
    }

    /// A primary of lease revision `revision` (its key `bound` by the revision check) takes
    /// the stream: it displaces the connected primary (telling it why, when it is newer), a
    /// raise is recorded as a takeover, and it is welcomed.
    fn take_primary(
        &mut self,
        conn: Conn,
        decoder: Decoder,
        hello: Hello,
        (revision, bound): (u64, Option<[u8; 32]>),
        out: &mut Output<T>,
    ) -> Result<(), NodeError> {
        let received = self.received(out);
        let current = self.fenced.revision;
        if let Some(old) = self.state.connect(Session::new(conn, decoder)) {
            if revision > current {
                let _ = old.conn.send_control(
                    &wire::error(&format!(
                        "fenced: displaced by the primary of lease revision {revision} (this one has {current})"
                    )),
                    Duration::from_millis(10),
                );
            }
        }
        if revision > current && current > 0 {
            let lost = self
                .state
                .lost()
                .map(|lost| (lost.wall, lost.cause.to_string()));
            let resumed = SystemTime::now();
            let journal = crate::takeovers::record(crate::takeovers::Takeover {
                fence: self.opts.fenced_by.clone(),
                offset: received,
                from_revision: current,
                to_revision: revision,
                lost_at: lost.as_ref().map(|(at, _)| *at),
                lost_cause: lost.as_ref().map(|(_, cause)| cause.clone()),
                resumed_at: resumed,
                first_item_at: None,
            });
            self.fenced.takeovers.push(Takeover {
                offset: received,
                from: current,
                to: revision,
                lost,
                resumed,
                first_item: None,
                journal,
            });
        }
        self.fenced.revision = revision;
        self.fenced.bound_key = bound;
        if let Err(e) = self.welcome(hello, out) {
            self.lose(e)?;
        }
        Ok(())
    }

    /// The input of a warm partition starts where the partition's sender says (see
    /// [`fence`](crate::fence)): false until it has said so. Others have started.
    pub(super) fn warm_started(&mut self, out: &Output<T>) -> bool {
        let Some(fence) = &self.opts.warm_fence else {
            return true;
        };
        if self.state.connected() || out.items_written() > 0 {
            return true;
        }
        let Some(start) = fence.start() else {
            // (Not long: the partition's sender connects within milliseconds.)
            std::thread::sleep(Duration::from_millis(1));
            return false;
        };
        let ledger = &mut self.ledger;
        (ledger.acked, ledger.credited, ledger.skipped) = (start, start, start);
        true
    }
}

impl Fenced {
    /// Whether the sender of `hello` on `link` may join: its lease revision (0: a standby)
    /// and the key the revision check bound it to; or why it is refused (no fence, an older
    /// revision than the current primary's, a raise the check does not confirm, the current
    /// revision from another key than the one bound to it).
    fn admit(
        &self,
        opts: &TcpOptions,
        hello: &Hello,
        link: &Link,
        peer: &str,
    ) -> Result<(u64, Option<[u8; 32]>), String> {
        let revision = match hello.fence {
            None => return Err("this receiver takes fenced senders only (the replicas of a partition with a standby): the sender has no fence".into()),
            Some(r) if r > 0 && r < self.revision => return Err(format!(
                "fenced: lease revision {r} is older than the current primary's {}; this sender's partition was taken over by its standby",
                self.revision
            )),
            Some(r) => r,
        };
        // A raise (the first primary included) displaces whoever sends now: the revision is
        // checked first where a check can be had. A revision already accepted (the primary
        // reconnecting) is not asked about again.
        let bound = if revision > self.revision {
            check_raise(opts, revision, link, peer).map_err(|why| {
                format!(
                    "fenced: lease revision {revision} of {} not confirmed: {why}; the current primary (revision {}) keeps the stream",
                    opts.fenced_by.as_deref().unwrap_or(""),
                    self.revision
                )
            })?
        } else {
            self.bound_key
        };
        // The same revision again (the primary reconnecting): where the check bound it to its
        // holder's key, only that key may send under it.
        if revision > 0 && revision == self.revision {
            if let Some(key) = self.bound_key.filter(|k| link.peer_key != Some(*k)) {
                return Err(format!(
                    "fenced: lease revision {revision} belongs to the host of identity {}; this sender proved another",
                    crate::secure::keys::hex32(&key)
                ));
            }
        }
        Ok((revision, bound))
    }

    /// Tells the standbys a frame (an ACK), reading and dropping what they sent (heartbeats);
    /// a standby that closed or does not take the frame at once is dropped.
    pub(super) fn tell_standbys(&mut self, frame: &[u8]) {
        let mut scratch = [0u8; 256];
        self.standbys.retain_mut(|c| {
            for _ in 0..16 {
                match c.recv(&mut scratch) {
                    Ok(Recv::Got(_)) => {}
                    Ok(Recv::WouldBlock) => break,
                    Ok(Recv::Eof) | Err(_) => return false,
                }
            }
            c.send_control(frame, Duration::from_millis(10)).is_ok()
        });
    }

    /// A frame's items came: the first after a takeover is recorded.
    pub(super) fn items_came(&mut self) {
        if let Some(t) = self.takeovers.last_mut().filter(|t| t.first_item.is_none()) {
            let now = SystemTime::now();
            t.first_item = Some(now);
            crate::takeovers::first_item(t.journal, now);
        }
    }

    /// A warning for each change of primary.
    pub(super) fn failovers(&self) -> Vec<String> {
        let unix = |t: SystemTime| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64())
        };
        let mut warnings = Vec::new();
        for t in &self.takeovers {
            let how = match &t.lost {
                Some((at, cause)) => format!(
                    "{:.0} ms after the primary was lost at unix time {:.3} s: {cause}",
                    t.resumed
                        .duration_since(*at)
                        .unwrap_or_default()
                        .as_secs_f64()
                        * 1e3,
                    unix(*at)
                ),
                None => "displacing the connected primary".to_string(),
            };
            let first = t.first_item.map_or(String::new(), |f| {
                format!(", its first new item at unix time {:.3} s", unix(f))
            });
            warnings.push(format!(
                "failover at offset {}: the primary of lease revision {} took over from revision {} at unix time {:.3} s ({how}); the stream resumed at the offset it stood at{first}",
                t.offset,
                t.to,
                t.from,
                unix(t.resumed)
            ));
        }
        warnings
    }
}

/// Fenced with `fenced_by`: asks the process's revision check whether `revision`, claimed by
/// the sender on `link`, is the lease's (see [`fence`](crate::fence)); `Ok` without a
/// `fenced_by` or a check (the revision is believed).
fn check_raise(
    opts: &TcpOptions,
    revision: u64,
    link: &Link,
    peer: &str,
) -> Result<Option<[u8; 32]>, String> {
    let (Some(fence), Some(check)) = (&opts.fenced_by, crate::fence::revision_check()) else {
        return Ok(None);
    };
    let claim = crate::fence::RevisionClaim {
        fence: fence.clone(),
        revision,
        peer_key: link.peer_key,
        peer: peer.to_string(),
    };
    crate::fence::verify(check, &claim, crate::fence::CHECK_TIMEOUT)
}
