//! Replacing a running node at an item offset (see the module docs of [`crate::live`]).
//!
//! The replacement happens on the node's own thread, between two `work` calls, in three steps:
//!
//! 0. *Ask* (on the caller's thread): hold the old node's stream inputs at `N − history`, so
//!    that the items the new node warms up on are still in the ring when the node's thread
//!    takes the request up (one `work` call may consume any number of items).
//! 1. *Begin* (when the node's thread takes the request): check the offset `N` against what
//!    the node has read and written; attach the new node's readers to each stream input's queue at
//!    `N − history` (or where the old node reads, if that is later, skipping ahead at the
//!    switch); hold the old node's and the new readers at `N`.
//! 2. The old node runs on until it asks for input it cannot see: everything before `N` is
//!    published and it has used what it could of it, so its output is complete up to `N`.
//! 3. *Switch*: stop the old node; give the new node the new readers and scratch outputs, call
//!    it until it has used the items before `N` (its warm-up; whatever it made of them is
//!    discarded); then give it the real outputs and lift the holds.

use super::{LiveError, LiveGraph};
use crate::control::ControlHandle;
use crate::graph::BuiltNode;
use crate::io::{ErasedInput, ErasedOutput, StreamInput, WorkIo};
use crate::node::{Node, TagPolicy, Work};
use crate::run::StopView;
use sluice_queue::ReadLimit;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The most `work` calls a new node may take to warm up on its history.
const WARM_UP_CALLS: usize = 100_000;

/// The request a node's thread picks up.
struct Request {
    node: Box<dyn Node>,
    at: u64,
    control: ControlHandle,
    reply: SyncSender<Result<u64, LiveError>>,
}

/// Where a replacement request waits for its node's thread.
pub(crate) struct SwapSlot {
    /// A request is waiting in `request` (the node's thread looks at this between calls).
    queued: AtomicBool,
    /// A request is waiting or under way.
    busy: AtomicBool,
    request: Mutex<Option<Request>>,
    /// The read limits of the node's stream inputs: the caller holds them back at the new
    /// node's history before the node's thread takes the request up. A switch puts the new
    /// readers' limits here.
    holds: Mutex<Vec<Arc<ReadLimit>>>,
}

impl SwapSlot {
    /// The slot of `node`, with a read limit on each of its stream inputs.
    pub(crate) fn new(node: &mut BuiltNode) -> Self {
        let stream = node.stream_inputs();
        let holds = stream
            .into_iter()
            .map(|i| stream_input(&mut node.inputs[i]).limit())
            .collect();
        SwapSlot {
            queued: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            request: Mutex::new(None),
            holds: Mutex::new(holds),
        }
    }

    /// Lets the node read on (a request refused or ended before its switch).
    fn lift_holds(&self) {
        for hold in self.holds().iter() {
            hold.lift();
        }
    }

    fn holds(&self) -> std::sync::MutexGuard<'_, Vec<Arc<ReadLimit>>> {
        self.holds.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A replacement under way.
struct UnderWay {
    request: Request,
    /// The new node's readers, one per stream input.
    fresh: Vec<Fresh>,
}

/// The new node's reader of one stream input.
struct Fresh {
    /// Which input.
    input: usize,
    reader: Box<dyn ErasedInput>,
    /// Items it skips at the switch (it was attached where the old node read, before the
    /// new node's history begins).
    skip: u64,
}

/// What a running node carries for replacements: inert outside [`Graph::run_live`](crate::Graph::run_live).
#[derive(Default)]
pub(crate) struct Swapper {
    slot: Option<Arc<SwapSlot>>,
    under_way: Option<UnderWay>,
}

impl Swapper {
    pub(crate) fn new(slot: Arc<SwapSlot>) -> Self {
        Swapper {
            slot: Some(slot),
            under_way: None,
        }
    }

    /// Whether a request waits to begin (one relaxed load: checked before every `work`).
    #[inline]
    pub(crate) fn requested(&self) -> bool {
        self.slot
            .as_ref()
            .is_some_and(|s| s.queued.load(Ordering::Relaxed))
    }

    /// Whether a replacement is under way (the old node runs on to the offset).
    #[inline]
    pub(crate) fn under_way(&self) -> bool {
        self.under_way.is_some()
    }

    fn take_request(&mut self) -> Option<Request> {
        let slot = self.slot.as_ref()?;
        slot.queued.store(false, Ordering::Relaxed);
        slot.request
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Ends a replacement: answers its caller and frees the slot for the next.
    fn finish(
        &mut self,
        reply: SyncSender<Result<u64, LiveError>>,
        outcome: Result<u64, LiveError>,
    ) {
        // Free first: a caller told the outcome may ask again at once.
        if let Some(slot) = &self.slot {
            if outcome.is_err() {
                slot.lift_holds();
            }
            slot.busy.store(false, Ordering::Release);
        }
        let _ = reply.send(outcome);
    }
}

/// A replacement asked for; [`Replacement::wait`] gives its outcome.
#[derive(Debug)]
pub struct Replacement {
    node: String,
    at: u64,
    reply: Receiver<Result<u64, LiveError>>,
}

impl Replacement {
    /// Waits up to `timeout` for the switch. On success, the index of the first output item
    /// the new node made (for a node without outputs, the input offset).
    pub fn wait(self, timeout: Duration) -> Result<u64, LiveError> {
        match self.reply.recv_timeout(timeout) {
            Ok(outcome) => outcome,
            Err(RecvTimeoutError::Timeout) => Err(LiveError::Timeout {
                node: self.node,
                asked: self.at,
                waited: timeout,
            }),
            // The node's thread ended (its stream ended or the graph stopped) with the
            // request unanswered.
            Err(RecvTimeoutError::Disconnected) => Err(LiveError::Ended {
                node: self.node,
                asked: self.at,
            }),
        }
    }
}

impl LiveGraph {
    /// Puts `new` in place of the running node `node` from item `at` of its stream inputs (see
    /// the module docs). `new` must have the same ports; it keeps the node's name, edges and
    /// run-time parameter mailbox. Returns at once; the switch happens when the old node has
    /// reached `at`.
    pub fn replace(
        &self,
        node: &str,
        mut new: Box<dyn Node>,
        at: u64,
    ) -> Result<Replacement, LiveError> {
        let running = self.running()?;
        let live = running
            .nodes
            .iter()
            .find(|n| n.name == node)
            .ok_or_else(|| LiveError::NoSuchNode(node.to_string()))?;
        if let Some(difference) = crate::graph::ports_differ(&live.ports, &new.ports()) {
            return Err(LiveError::PortsChanged {
                node: node.to_string(),
                difference,
            });
        }
        if live.ports.inputs.iter().all(|p| p.message.is_some()) {
            return Err(LiveError::NoStreamInput(node.to_string()));
        }
        if live.slot.busy.swap(true, Ordering::AcqRel) {
            return Err(LiveError::Busy(node.to_string()));
        }
        new.attach_control(running.control.clone());
        // Before the request is visible: the node's thread moves these holds on to `at`
        // when it takes the request up, and must not find them moved back after that.
        let history_from = at.saturating_sub(new.history());
        for hold in live.slot.holds().iter() {
            hold.hold_at(history_from);
        }
        let (reply, answer) = sync_channel(1);
        *live
            .slot
            .request
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Request {
            node: new,
            at,
            control: running.control.clone(),
            reply,
        });
        live.slot.queued.store(true, Ordering::Release);
        Ok(Replacement {
            node: node.to_string(),
            at,
            reply: answer,
        })
    }
}

/// A stream input, as the declarations promise for every input not declared a message port.
fn stream_input(input: &mut Box<dyn ErasedInput>) -> &mut dyn StreamInput {
    input
        .as_stream()
        .expect("an input declared as a stream is a stream input")
}

impl BuiltNode {
    /// The indices of the stream (not message) inputs.
    fn stream_inputs(&self) -> Vec<usize> {
        let specs = self.ports.inputs.iter().enumerate();
        specs
            .filter(|(_, s)| s.message.is_none())
            .map(|(i, _)| i)
            .collect()
    }

    /// Begins the replacement asked for, or answers why it cannot be.
    pub(crate) fn swap_begin(&mut self) {
        let Some(request) = self.swap.take_request() else {
            return;
        };
        match self.swap_prepare(&request) {
            Ok(fresh) => self.swap.under_way = Some(UnderWay { request, fresh }),
            Err(e) => self.swap.finish(request.reply, Err(e)),
        }
    }

    fn swap_prepare(&mut self, request: &Request) -> Result<Vec<Fresh>, LiveError> {
        let (at, name) = (request.at, &self.name);
        let passed = |what, done| LiveError::OffsetPassed {
            node: name.clone(),
            asked: at,
            what,
            done,
        };
        // A node of fixed rate has written for input `at` once its first output reaches this.
        let first_output = self.ports.outputs.iter().position(|p| p.message.is_none());
        if let (
            TagPolicy::Ratio {
                interpolation,
                decimation,
            },
            Some(o),
        ) = (self.policy, first_output)
        {
            let due = at.saturating_mul(interpolation) / decimation.max(1);
            let made = self.outputs[o].items_written();
            if made > due {
                return Err(passed("written", made));
            }
        }
        let stream = self.stream_inputs();
        for &i in &stream {
            let input = &self.inputs[i];
            let read = input.items_read();
            if read > at {
                return Err(passed("read", read));
            }
            if at - read > input.capacity() as u64 {
                return Err(LiveError::OffsetTooFar {
                    node: name.clone(),
                    asked: at,
                    capacity: input.capacity(),
                    read,
                });
            }
        }
        let start = at.saturating_sub(request.node.history());
        let mut fresh = Vec::with_capacity(stream.len());
        for &i in &stream {
            let read = self.inputs[i].items_read();
            let queue = self.inputs[i].queue().to_string();
            let input = stream_input(&mut self.inputs[i]);
            let from = start.min(read);
            let mut reader = input
                .attach_at(from)
                .map_err(|source| LiveError::NotInRing {
                    output: queue,
                    at: from,
                    source,
                })?;
            stream_input(&mut reader).limit().hold_at(at);
            fresh.push(Fresh {
                input: i,
                reader,
                skip: start - from,
            });
        }
        for &i in &stream {
            stream_input(&mut self.inputs[i]).limit().hold_at(at);
        }
        Ok(fresh)
    }

    /// After the old node's `work` returned `work`: whether it has reached the offset, and if
    /// so, the switch to the new node (then `Ok(true)`). A node that ended before the offset
    /// answers its caller so.
    pub(crate) fn swap_check(&mut self, work: Work) -> Result<bool, crate::RuntimeError> {
        let Some(under_way) = &self.swap.under_way else {
            return Ok(false);
        };
        let at = under_way.request.at;
        match work {
            Work::NeedInput { port, .. }
                if self
                    .ports
                    .inputs
                    .get(port)
                    .is_some_and(|p| p.message.is_none())
                    && self.inputs[port].items_written() >= at =>
            {
                self.switch()?;
                Ok(true)
            }
            Work::Done => {
                let under_way = self.swap.under_way.take().expect("checked above");
                let error = LiveError::Ended {
                    node: self.name.clone(),
                    asked: at,
                };
                self.swap.finish(under_way.request.reply, Err(error));
                Ok(false)
            }
            _ => Ok(false),
        }
    }

    /// Stops the old node, warms the new one up and puts it in place.
    fn switch(&mut self) -> Result<(), crate::RuntimeError> {
        let UnderWay { request, fresh } = self.swap.under_way.take().expect("under way");
        let at = request.at;
        let old_stopped = catch_unwind(AssertUnwindSafe(|| self.node.stop()));
        let mut old_inputs = Vec::with_capacity(fresh.len());
        // Where each old reader stood: the old node propagated the tags of the items before.
        let mut old_read = Vec::with_capacity(fresh.len());
        let mut holds: Vec<std::sync::Arc<ReadLimit>> = Vec::with_capacity(fresh.len());
        for Fresh {
            input: i,
            mut reader,
            skip,
        } in fresh
        {
            let queue = reader.queue().to_string();
            let stream = stream_input(&mut reader);
            if skip > 0 {
                stream
                    .skip(skip)
                    .map_err(|source| crate::RuntimeError::Queue {
                        edge: queue,
                        source,
                    })?;
            }
            holds.push(stream.limit());
            old_read.push((i, self.inputs[i].items_read()));
            old_inputs.push(std::mem::replace(&mut self.inputs[i], reader));
        }
        let Request {
            node,
            control,
            reply,
            ..
        } = request;
        let old = std::mem::replace(&mut self.node, node);
        drop(old);
        let outcome = match old_stopped {
            Ok(()) => self.warm_up(at),
            Err(panic) => Err(format!(
                "the old node panicked in stop: {}",
                crate::run::panic_message(panic.as_ref())
            )),
        };
        // The old node's output carries the tags of the items it consumed; those of the items
        // it kept (its history) go out with the new node's, from the next `work` on.
        let mut discarded = Vec::new();
        for (i, read) in old_read {
            self.inputs[i].take_tags(read, &mut discarded);
        }
        for hold in &holds {
            hold.lift();
        }
        if let Some(slot) = &self.swap.slot {
            *slot.holds() = holds;
        }
        drop(old_inputs); // their readers detach: the writers stop waiting for them
        self.policy = self.node.tag_policy();
        control.set_controls(&self.name, self.node.controls());
        let first_output = self.ports.outputs.iter().position(|p| p.message.is_none());
        let since = first_output.map_or(at, |o| self.outputs[o].items_written());
        match outcome {
            Ok(()) => {
                self.swap.finish(reply, Ok(since));
                Ok(())
            }
            Err(message) => {
                let error = LiveError::WarmUp {
                    node: self.name.clone(),
                    message: message.clone(),
                };
                self.swap.finish(reply, Err(error));
                Err(crate::RuntimeError::NodeFailed {
                    node: self.name.clone(),
                    source: crate::NodeError::msg(format!(
                        "its replacement did not warm up: {message}"
                    )),
                })
            }
        }
    }

    /// Runs the new node on the items before `at` with its outputs going to scratch queues
    /// that are emptied after every call, until it asks for input beyond `at`.
    fn warm_up(&mut self, at: u64) -> Result<(), String> {
        self.node.init().map_err(|e| format!("init failed: {e}"))?;
        let mut scratch_ins = Vec::with_capacity(self.outputs.len());
        let mut scratch_outs: Vec<Box<dyn ErasedOutput>> = Vec::with_capacity(self.outputs.len());
        for (spec, out) in self.ports.outputs.iter().zip(&self.outputs) {
            let label: std::sync::Arc<str> =
                format!("{}.{} (warm-up)", self.name, spec.name).into();
            let (w, r) = spec
                .item
                .make_queue(out.capacity(), &Default::default(), label)
                .map_err(|e| format!("no scratch queue: {e}"))?;
            scratch_outs.push(w);
            scratch_ins.push(r);
        }
        let mut real = std::mem::replace(&mut self.outputs, scratch_outs);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut result = Err(format!("still working after {WARM_UP_CALLS} calls"));
        for _ in 0..WARM_UP_CALLS {
            let work = catch_unwind(AssertUnwindSafe(|| {
                let mut io = WorkIo::new(
                    &mut self.inputs,
                    &self.ports.inputs,
                    &mut self.outputs,
                    &self.ports.outputs,
                    StopView::default(),
                );
                self.node.work(&mut io)
            }));
            for (w, r) in self.outputs.iter_mut().zip(&mut scratch_ins) {
                w.publish();
                let _ = r.skip_available();
            }
            match work {
                Ok(Ok(Work::NeedInput { port, .. }))
                    if self
                        .inputs
                        .get(port)
                        .is_some_and(|i| i.items_written() >= at) =>
                {
                    result = Ok(());
                    break;
                }
                Ok(Ok(Work::Done)) => {
                    result = Err("it ended on its history".to_string());
                    break;
                }
                Ok(Ok(_)) if Instant::now() < deadline => {}
                Ok(Ok(_)) => {
                    result = Err("still working after 10 s".to_string());
                    break;
                }
                Ok(Err(e)) => {
                    result = Err(e.to_string());
                    break;
                }
                Err(panic) => {
                    result = Err(format!(
                        "it panicked: {}",
                        crate::run::panic_message(panic.as_ref())
                    ));
                    break;
                }
            }
        }
        std::mem::swap(&mut self.outputs, &mut real);
        result
    }
}
