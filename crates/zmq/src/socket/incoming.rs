//! What a peer sends, up to the start of a data frame for the caller: the handshake (its
//! greeting, then our READY, then its READY), commands (PING, SUBSCRIBE, CANCEL, ERROR),
//! ZMTP 3.0 subscription messages and REQ/REP envelopes.

use super::{Frame, Socket, READ_AHEAD, SMALL_FRAME, SMALL_LIMIT};
use crate::decoder::Event;
use crate::zmtp::{self, SocketType};
use crate::ZmqError;

impl Socket {
    /// Runs peer `i`'s decoder until a data frame for the caller starts (`Some`), or it needs
    /// bytes that have not come (`None`). A lost peer is an `Err` with `is_peer()`; the caller
    /// drops it.
    pub(super) fn pump(&mut self, i: usize, until_ready: bool) -> Result<Option<Frame>, PumpError> {
        match self.pump_inner(i, until_ready) {
            Err(PumpError::Lost) if self.left_in_handshake(i) => {
                Err(PumpError::Zmq(self.handshake_error(i)))
            }
            other => other,
        }
    }

    /// Whether peer `i` left during the handshake after it showed itself a ZeroMQ peer (its
    /// signature came) or reset the connection on our greeting and READY.
    pub(super) fn left_in_handshake(&self, i: usize) -> bool {
        let p = &self.peers[i];
        (p.dec.signed() || p.reset) && !p.dec.is_ready()
    }

    pub(super) fn handshake_error(&self, i: usize) -> ZmqError {
        ZmqError::Protocol {
            peer: self.peers[i].name.clone(),
            what: format!(
                "the peer closed the connection during the handshake, before its READY: it probably refused this {} socket (a peer must be {})",
                self.kind.name(),
                self.kind.peers_phrase()
            ),
        }
    }

    pub(super) fn pump_inner(
        &mut self,
        i: usize,
        until_ready: bool,
    ) -> Result<Option<Frame>, PumpError> {
        loop {
            let p = &mut self.peers[i];
            if until_ready && p.dec.is_ready() {
                return Ok(None);
            }
            if let Some(remaining) = p.dec.payload_remaining() {
                if p.body.is_some() {
                    // An internal frame: collect it.
                    if p.at == p.len {
                        match self.fill(i, READ_AHEAD)? {
                            None => return Err(PumpError::Lost),
                            Some(0) => return Ok(None),
                            Some(_) => {}
                        }
                    }
                    let p = &mut self.peers[i];
                    let k = (remaining as usize).min(p.len - p.at);
                    p.body
                        .as_mut()
                        .expect("collecting")
                        .extend_from_slice(&p.stash[p.at..p.at + k]);
                    p.at += k;
                    p.dec.payload_done(k as u64);
                    if p.dec.payload_remaining().is_none() {
                        let body = p.body.take().expect("collecting");
                        self.internal(i, body)?;
                    }
                    continue;
                }
                return Ok(None);
            }
            if p.at == p.len {
                let ahead = if p.small || !p.dec.is_ready() {
                    READ_AHEAD
                } else {
                    p.dec.header_wanted()
                };
                match self.fill(i, ahead)? {
                    None => return Err(PumpError::Lost),
                    Some(0) => return Ok(None),
                    Some(_) => continue,
                }
            }
            let p = &mut self.peers[i];
            let (k, event) = p.dec.feed(&p.stash[p.at..p.len])?;
            p.at += k;
            let Some(event) = event else { continue };
            match event {
                Event::Greeting { minor } => {
                    let ready = zmtp::ready(self.kind);
                    self.peers[i].out.extend_from_slice(&ready);
                    if self.kind == SocketType::Sub {
                        let topic = self.opts.subscribe.clone();
                        let sub = if minor >= 1 && self.opts.subscribe_command {
                            zmtp::subscription_command(&topic, true)
                        } else {
                            zmtp::subscription_message(&topic, true)
                        };
                        // After our READY, before any data.
                        self.peers[i].out.extend_from_slice(&sub);
                    }
                }
                Event::Ready { .. } => {}
                Event::Subscribe(t) => self.subscribe(i, &t, true)?,
                Event::Cancel(t) => self.subscribe(i, &t, false)?,
                Event::Ping { context } => {
                    self.peers[i].out.extend_from_slice(&zmtp::pong(&context))
                }
                Event::Pong | Event::Unknown(_) => {}
                Event::Message { len, more } => {
                    let p = &mut self.peers[i];
                    p.small = len <= SMALL_FRAME;
                    let first = !p.in_message;
                    let envelope =
                        matches!(self.kind, SocketType::Req | SocketType::Rep) && !p.enveloped;
                    if !envelope {
                        p.in_message = more;
                    }
                    if !more {
                        p.enveloped = false;
                    }
                    let internal =
                        matches!(self.kind, SocketType::Pub | SocketType::Push) || envelope;
                    if internal {
                        if len > SMALL_LIMIT {
                            return Err(PumpError::Zmq(ZmqError::Protocol {
                                peer: p.name.clone(),
                                what: format!("a {len}-byte frame where a {} socket expects a subscription or an envelope", self.kind.name()),
                            }));
                        }
                        if envelope && len == 0 && more {
                            p.enveloped = true;
                        } else if envelope {
                            return Err(PumpError::Zmq(ZmqError::Protocol {
                                peer: p.name.clone(),
                                what: "a REQ/REP message without the empty delimiter frame".into(),
                            }));
                        } else if len == 0 {
                            self.internal(i, Vec::new())?;
                        } else {
                            p.body = Some(Vec::with_capacity(len as usize));
                        }
                        continue;
                    }
                    return Ok(Some(Frame { len, more, first }));
                }
            }
        }
    }

    fn subscribe(&mut self, i: usize, topic: &[u8], on: bool) -> Result<(), ZmqError> {
        let p = &mut self.peers[i];
        if !on {
            p.subs.cancel(topic);
        } else if p
            .subs
            .subscribe(topic, self.opts.max_subscriptions)
            .is_err()
        {
            return Err(ZmqError::Protocol {
                peer: p.name.clone(),
                what: format!(
                    "more than {} distinct subscriptions (max_subscriptions)",
                    self.opts.max_subscriptions
                ),
            });
        }
        Ok(())
    }

    /// A whole internal frame (PUB: a subscription message).
    fn internal(&mut self, i: usize, body: Vec<u8>) -> Result<(), ZmqError> {
        if self.kind == SocketType::Pub {
            match body.split_first() {
                Some((1, t)) => self.subscribe(i, t, true)?,
                Some((0, t)) => self.subscribe(i, t, false)?,
                _ => {} // XPUB/XSUB user messages: nothing for a PUB to do.
            }
        }
        Ok(())
    }
}

#[derive(Debug)]
pub(super) enum PumpError {
    Lost,
    Zmq(ZmqError),
}

impl From<ZmqError> for PumpError {
    fn from(e: ZmqError) -> Self {
        PumpError::Zmq(e)
    }
}
