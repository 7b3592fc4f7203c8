//! A byte relay for the probe: passes a connection's bytes on both ways, unread, optionally
//! holding each chunk back for a set delay (this kernel has no `netem`). Put between two
//! processes of a loop it is the floor a hop can reach on the machine (a blocking
//! `read`/`write` loop, no framing); with `delay` it stands for a longer link.

use super::ProbeError;
use crate::conn::{io_err, Endpoint};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A relay, its endpoints open (listeners bound) from [`Relay::new`] on.
#[derive(Debug)]
pub struct Relay {
    from: Endpoint,
    to: Endpoint,
    delay: Duration,
    timeout: Duration,
}

/// What a relay passed: bytes each way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayStats {
    /// From `from` to `to`.
    pub forward: u64,
    /// From `to` back to `from`.
    pub back: u64,
}

impl Relay {
    /// Relays between `from` and `to` (each `tcp://…` or `tcp-listen://…`), holding every chunk
    /// back `delay`, waiting at most `timeout` for the connections.
    pub fn new(
        from: &str,
        to: &str,
        delay: Duration,
        timeout: Duration,
    ) -> Result<Relay, ProbeError> {
        Ok(Relay {
            from: Endpoint::parse(from)?,
            to: Endpoint::parse(to)?,
            delay,
            timeout,
        })
    }

    /// The address `from` listens on, if it listens.
    pub fn from_addr(&self) -> Option<SocketAddr> {
        self.from.local_addr()
    }

    /// The address `to` listens on, if it listens.
    pub fn to_addr(&self) -> Option<SocketAddr> {
        self.to.local_addr()
    }

    /// Connects both ends and relays until both directions ended.
    pub fn run(self) -> Result<RelayStats, ProbeError> {
        let a = connect(&self.from, "from", self.timeout)?;
        let b = connect(&self.to, "to", self.timeout)?;
        let (a2, b2) = (clone(&a)?, clone(&b)?);
        let delay = self.delay;
        let back = std::thread::Builder::new()
            .name("relay-back".into())
            .spawn(move || pass(b2, a2, delay))
            .map_err(|e| ProbeError::Config(format!("cannot start a thread: {e}")))?;
        let forward = pass(a, b, delay)?;
        let back = back
            .join()
            .map_err(|_| ProbeError::Config("a relay thread panicked".into()))??;
        Ok(RelayStats { forward, back })
    }
}

fn clone(s: &TcpStream) -> Result<TcpStream, ProbeError> {
    s.try_clone()
        .map_err(|e| ProbeError::Config(format!("cannot share a socket between threads: {e}")))
}

fn connect(ep: &Endpoint, what: &'static str, timeout: Duration) -> Result<TcpStream, ProbeError> {
    let start = Instant::now();
    loop {
        if let Some(s) = ep.establish(Duration::from_millis(50), 0)? {
            let peer = ep.describe();
            s.set_nonblocking(false)
                .and_then(|()| s.set_nodelay(true))
                .map_err(|e| io_err(&peer, 0, "socket setup", &e))?;
            return Ok(s);
        }
        if start.elapsed() > timeout {
            return Err(ProbeError::Connect {
                what,
                url: ep.describe(),
                secs: start.elapsed().as_secs_f64(),
            });
        }
    }
}

/// Copies `src` to `dst` until `src` ends (then ends `dst`'s writing side); with a delay, a
/// writer thread sends each chunk once it is `delay` old. Returns the bytes passed.
fn pass(mut src: TcpStream, mut dst: TcpStream, delay: Duration) -> Result<u64, ProbeError> {
    let peer = src
        .peer_addr()
        .map_or_else(|_| "(peer)".to_string(), |a| a.to_string());
    let mut buf = vec![0u8; 256 << 10];
    let mut total = 0u64;
    let (tx, writer) = if delay.is_zero() {
        (None, None)
    } else {
        let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
        let mut out = clone(&dst)?;
        let writer = std::thread::spawn(move || -> std::io::Result<()> {
            for (due, chunk) in rx {
                if let Some(left) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(left);
                }
                out.write_all(&chunk)?;
            }
            Ok(())
        });
        (Some(tx), Some(writer))
    };
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // The other direction's end may reset this one: the relay is over.
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => return Err(io_err(&peer, total, "relay read", &e).into()),
        };
        total += n as u64;
        match &tx {
            Some(tx) => {
                if tx
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
            None => {
                if let Err(e) = dst.write_all(&buf[..n]) {
                    return Err(io_err(&peer, total, "relay write", &e).into());
                }
            }
        }
    }
    drop(tx);
    if let Some(w) = writer {
        let _ = w.join();
    }
    let _ = dst.shutdown(Shutdown::Write);
    Ok(total)
}
