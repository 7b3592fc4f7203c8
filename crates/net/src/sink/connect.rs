//! How a waiting `tcp_sink` gets its receiver: it connects (`tcp://`), or takes the next
//! connection its listener's [`Acceptor`] authenticated (`tcp-listen://`); then it sends its
//! HELLO (item type, vector length, CRC, metadata, fence) and waits for the WELCOME.

use super::state::Session;
use super::{TcpSink, CONTROL_WAIT};
use crate::accept::{Acceptor, Prepare};
use crate::conn::{io_err, Conn, Endpoint};
use crate::decoder::{Decoder, Role};
use crate::secure::Link;
use crate::wire::{self, Hello};
use crate::NetError;
use sluice_runtime::{Input, Item, ItemType, NodeError, Work};
use std::sync::Arc;
use std::time::{Duration, Instant};

impl<T: Item> TcpSink<T> {
    /// Connecting or resuming: gives up once the timeout passed, else tries to connect (or
    /// accept), waiting a little, and serves a receiver that came at once.
    pub(super) fn wait(&mut self, input: &mut Input<T>) -> Result<Work, NodeError> {
        self.check_timeout()?;
        if !self.connect()? {
            return Ok(Work::Progress);
        }
        self.serve(input)
    }

    /// A new connection, its HELLO sent: true once the sink is greeting its receiver.
    fn connect(&mut self) -> Result<bool, NodeError> {
        let Some(link) = self.link()? else {
            return Ok(false);
        };
        let conn = Conn::new(link, self.opts.heartbeat)
            .map_err(|e| io_err(&self.endpoint.describe(), self.acked, "socket setup", &e))?;
        let item = ItemType::of::<T>();
        let fence = self.revision();
        let hello = wire::hello(&Hello {
            item_name: item.name().to_string(),
            item_size: item.size() as u32,
            vlen: self.opts.vlen() as u32,
            crc: self.opts.crc,
            heartbeat_ms: self.opts.heartbeat.as_millis().min(u32::MAX as u128) as u32,
            metadata: self.metadata.clone(),
            fence,
            messages: self.opts.messages,
        })
        .map_err(|e| NodeError::caused("encoding HELLO metadata", e))?;
        if let Err(e) = conn.send_control(&hello, CONTROL_WAIT) {
            let cause = io_err(&conn.peer, self.acked, "send HELLO", &e);
            self.lose(cause)?;
            return Ok(false);
        }
        let mut decoder = Decoder::new(Role::Sender, &conn.peer, 1 << 16, None, self.acked);
        if self.opts.messages {
            decoder = decoder.with_messages(0);
        }
        self.state.greet(Session {
            conn,
            decoder,
            greeted: false,
            sent: self.acked,
            credit: self.acked,
            max_items: 1,
            pending: None,
            rx: [0; 256],
            rx_at: 0,
            rx_len: 0,
            rx_checked: Instant::now(),
            waited: false,
            standby: fence == Some(0),
            msg_sent: 0,
        });
        Ok(true)
    }

    /// A new connection, waiting a little: a listening sink's next one that completed its
    /// handshake on the acceptor (started on the first call), or one made to the peer.
    fn link(&mut self) -> Result<Option<Link>, NetError> {
        let wait = Duration::from_millis(20);
        let Endpoint::Listen(listener) = &self.endpoint else {
            let Some(stream) = self.endpoint.establish(wait, self.acked)? else {
                return Ok(None);
            };
            return crate::auth::guard(&self.endpoint, stream, &self.opts, &mut self.refused);
        };
        if self.acceptor.is_none() {
            // A configuration error shows now, not as every peer's refusal.
            self.opts.credentials()?;
            let setup = |e: std::io::Error| {
                NetError::Config(format!(
                    "cannot accept on {}: {e}",
                    self.endpoint.describe()
                ))
            };
            let listener = listener.try_clone().map_err(setup)?;
            let opts = self.opts.clone();
            let prepare: Arc<Prepare<Link>> =
                Arc::new(move |stream, admission| crate::auth::admit(stream, &opts, admission));
            let acceptor =
                Acceptor::start(listener, "tcp_sink", self.opts.accept_options(), prepare)
                    .map_err(setup)?;
            self.acceptor = Some(acceptor);
        }
        Ok(self.acceptor.as_ref().and_then(|a| a.next(wait)))
    }
}
