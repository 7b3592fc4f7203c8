//! `message_debug`: prints every message it receives on one escaped line, and counts them
//! (GNU Radio's `blocks.message_debug`).

use sluice_runtime::message::message_text;
use sluice_runtime::{
    Inbox, Message, MessageIn, MessageKind, Node, NodeError, Ports, Recv, Work, WorkIo,
};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What a [`MessageDebug`] saw, readable from any thread while and after it runs.
#[derive(Debug, Default, Clone)]
pub struct MessageLog {
    count: Arc<AtomicU64>,
    kept: Arc<Mutex<Vec<Message>>>,
}

impl MessageLog {
    /// Messages received so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Acquire)
    }

    /// The messages received so far, if the block keeps them.
    pub fn messages(&self) -> Vec<Message> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Takes every message of its input `in`; prints each to standard output (as
/// [`message_text`] writes it, escaped, one line each) if asked, keeps them if asked, counts.
pub struct MessageDebug {
    print: bool,
    keep: bool,
    log: MessageLog,
    inp: MessageIn,
    ports: Ports,
}

impl MessageDebug {
    /// A debug sink that prints (`print`) and keeps (`keep`) what it receives; the log reads
    /// its count and kept messages.
    pub fn new(print: bool, keep: bool) -> (Self, MessageLog) {
        let mut ports = Ports::new();
        let inp = ports.add_message_input("in", MessageKind::Any, Inbox::DEFAULT);
        let log = MessageLog::default();
        let node = MessageDebug {
            print,
            keep,
            log: log.clone(),
            inp,
            ports,
        };
        (node, log)
    }
}

impl Node for MessageDebug {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.message(self.inp.index())?;
        let stdout = std::io::stdout();
        loop {
            match input.recv()? {
                Recv::Message(msg) => {
                    if self.print {
                        // A closed standard output (a pager quit) is no reason to fail.
                        let _ = writeln!(stdout.lock(), "{}", message_text(&msg));
                    }
                    if self.keep {
                        self.log
                            .kept
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(msg);
                    }
                    self.log.count.fetch_add(1, Ordering::AcqRel);
                }
                Recv::Empty => return Ok(self.inp.need()),
                Recv::Ended => return Ok(Work::Done),
            }
        }
    }
}
