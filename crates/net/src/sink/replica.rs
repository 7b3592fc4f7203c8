//! A `tcp_sink` as one replica of a partition with a hot standby (see [`fence`](crate::fence)):
//! a standby's connection (HELLO revision 0) sends nothing and releases what the receiver
//! says it has from the primary; promoted, the sink connects again as primary. A fenced sink
//! that never was primary is done once the receiver has everything it would send. A
//! `replica` sink abandons its receiver on a loss (see [`TcpSink::lose`]). A warm partition's
//! sender starts its fresh input where the first WELCOME says.

use super::acks::whole_vectors;
use super::retention::{available, ended};
use super::state::SinkState;
use super::TcpSink;
use crate::decoder::Event;
use crate::NetError;
use sluice_runtime::{Input, Item, NodeError};
use std::time::Instant;

impl<T: Item> TcpSink<T> {
    /// The fence's revision: `Some(0)` standby, `Some(r)` primary, `None` unfenced.
    pub(super) fn revision(&self) -> Option<u64> {
        self.opts.fence.as_ref().map(crate::Fence::revision)
    }

    /// A fenced sink: a standby that was promoted drops its connection to connect again as
    /// primary; true once the stream is delivered without this replica (the receiver has all
    /// it would send, and its END came from the other replica).
    pub(super) fn replica_done(&mut self, input: &mut Input<T>) -> Result<bool, NodeError> {
        let standby = self.state.session().is_some_and(|s| s.standby);
        if standby && self.revision() > Some(0) {
            // Promoted: the standby's connection makes way for a primary's.
            self.state = SinkState::Connecting {
                since: Instant::now(),
            };
        }
        let end = self.read_offset(input) + available(input)? as u64;
        if !self.was_primary && self.acked >= end && ended(input)? {
            self.take_session();
            return Ok(true);
        }
        Ok(false)
    }

    /// A standby hears the receiver: its WELCOME and ACKs say what the receiver has from the
    /// primary, and the standby releases as much of its own copy of the stream.
    pub(super) fn standby_heard(&mut self, event: Event, peer: &str) -> Result<(), NetError> {
        let has = match event {
            Event::Welcome(w) => Some(w.resume),
            Event::Ack(a) => Some(a),
            _ => None,
        };
        if let Some(a) = has {
            whole_vectors(a, self.opts.vlen() as u64, peer, self.acked)?;
            self.acked = self.acked.max(a);
            self.state.welcomed();
        }
        Ok(())
    }

    /// A warm partition starts its input far enough back that its fresh nodes are exact again
    /// at `resume` (the first WELCOME's), and drops the outputs before.
    pub(super) fn warm_origin(&mut self, resume: u64) {
        if let (Some(map), None) = (self.opts.warm, self.warm_resume) {
            let (input, output) = map.start_for(resume);
            self.origin = output;
            self.warm_resume = Some(resume);
            if let Some(fence) = &self.opts.fence {
                fence.set_start(input);
            }
        }
    }

    /// A warm partition's input is acknowledged as far as its acknowledged outputs reflect.
    pub(super) fn warm_acknowledged(&self) {
        if let (Some(map), Some(fence)) = (self.opts.warm, &self.opts.fence) {
            fence
                .input_acknowledged()
                .advance(map.input_for(self.acked));
        }
    }

    /// The warnings of an abandoned replica and of a warm start.
    pub(super) fn replica_warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if let SinkState::Abandoned { acked, why } = &self.state {
            warnings.push(format!(
                "gave its receiver {} up at offset {acked} ({why}): it is one replica of a primary/standby pair, and the other carries the stream",
                self.endpoint.describe()
            ));
        }
        if let (Some(map), Some(start)) = (self.opts.warm, self.warm_resume) {
            if start > 0 {
                warnings.push(format!(
                    "warm start: the receiver stood at offset {start}, so the partition started afresh at input offset {} and its first {} outputs (offsets {}..{start}, the fresh blocks' warm-up) were released unsent",
                    self.origin * map.decimation,
                    start - self.origin,
                    self.origin
                ));
            }
        }
        warnings
    }
}
