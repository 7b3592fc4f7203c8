//! Declarative firing rules: a node that says "each firing reads a window of `w` items and
//! consumes `c` on every input, and produces `p` items on every output" and leaves the waiting,
//! end-of-stream handling and bookkeeping to the runtime.
//!
//! Most blocks fire at fixed rates (filters, decimators, vector packing, per-channel kernels);
//! they implement [`FixedRate`] and are added to a graph as [`Rated`]`(block)`. A block whose
//! behaviour does not fit (data-dependent rates, an end of stream that still emits) implements
//! [`Node`] directly.

use crate::{ControlSpec, Item, Node, NodeError, Ports, TagPolicy, TagValue, Work, WorkIo};

/// One input's firing rule: a firing reads `window` items and then consumes `consume` of them
/// (`window − consume` items are history the next firing reads again, as a FIR's taps − 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputRate {
    /// Items one firing reads.
    pub window: usize,
    /// Items one firing consumes (at least 1, at most `window`).
    pub consume: usize,
}

impl InputRate {
    /// Reads and consumes `items` per firing (no history).
    pub const fn each(items: usize) -> Self {
        InputRate {
            window: items,
            consume: items,
        }
    }

    /// Reads `window` items per firing and consumes `consume` of them.
    pub const fn sliding(window: usize, consume: usize) -> Self {
        InputRate { window, consume }
    }
}

/// A block with `I` inputs carrying [`FixedRate::In`] and `O` outputs carrying
/// [`FixedRate::Out`] that fires at declared rates.
///
/// For `n` firings, [`FixedRate::fire`] gets on input `i` a window of
/// `(n − 1)·consume_i + window_i` items and on output `o` room for exactly `n·produce_o` items,
/// all straight in queue memory, and must fill that room. The runtime then consumes
/// `n·consume_i` items of each input and commits `n·produce_o` items of each output. It picks
/// `n` as large as the windows and the free space allow, waits when not even one firing is
/// possible, and ends the node when an input ends with less than one window left.
pub trait FixedRate<const I: usize, const O: usize>: Send {
    /// Item type of every input.
    type In: Item;
    /// Item type of every output.
    type Out: Item;

    /// The ports: `I` inputs of `In` and `O` outputs of `Out`, in that order (with their
    /// vector lengths, see [`PortSpec::vlen`](crate::PortSpec::vlen)). Queue sizes follow from
    /// the rates; there is no need to declare windows here.
    fn ports(&self) -> Ports;

    /// Each input's window and consumption per firing.
    fn input_rates(&self) -> [InputRate; I];

    /// Items each output produces per firing.
    fn output_rates(&self) -> [usize; O];

    /// Runs `firings` firings over `inputs` and fills every item of `outputs` (see the trait
    /// docs for their lengths).
    fn fire(
        &mut self,
        firings: usize,
        inputs: [&[Self::In]; I],
        outputs: [&mut [Self::Out]; O],
    ) -> Result<(), NodeError>;

    /// The parameters that can be changed while the block runs; see
    /// [`Node::controls`]. By default none.
    fn controls(&self) -> Vec<ControlSpec> {
        Vec::new()
    }

    /// Applies a change of run-time parameter `name`, between two calls of
    /// [`FixedRate::fire`]; see [`Node::set_control`]. The default refuses everything.
    fn set_control(&mut self, name: &str, value: &TagValue, at_item: u64) -> Result<(), NodeError> {
        let _ = (value, at_item);
        Err(NodeError::msg(format!(
            "it has no run-time parameter '{name}'"
        )))
    }

    /// How tags travel: by default a tag on input item `i` goes to output item
    /// `i · produce₀ / consume₀`, the rates of the first input and output.
    fn tag_policy(&self) -> TagPolicy {
        match (self.input_rates().first(), self.output_rates().first()) {
            (Some(rate), Some(&produce)) if produce > 0 => TagPolicy::Ratio {
                interpolation: produce as u64,
                decimation: rate.consume as u64,
            },
            _ => TagPolicy::Drop,
        }
    }
}

/// A [`FixedRate`] block as a [`Node`]: add `Rated::new(block)` to a graph.
#[derive(Debug)]
pub struct Rated<F, const I: usize, const O: usize> {
    block: F,
    inputs: [InputRate; I],
    outputs: [usize; O],
}

impl<F: FixedRate<I, O>, const I: usize, const O: usize> Rated<F, I, O> {
    /// Wraps `block`. Its rates are read once, here.
    ///
    /// # Panics
    /// If `block.ports()` does not declare `I` inputs of `In` and `O` outputs of `Out`, or an
    /// input rate consumes nothing or more than its window: programming errors in the block,
    /// found when the graph is built rather than while it runs.
    pub fn new(block: F) -> Self {
        let ports = block.ports();
        let in_type = crate::ItemType::of::<F::In>();
        let out_type = crate::ItemType::of::<F::Out>();
        let name = std::any::type_name::<F>();
        assert!(
            ports.inputs.len() == I && ports.inputs.iter().all(|p| p.item == in_type),
            "{name} declares inputs {:?} but fires on {I} inputs of {}",
            ports.inputs,
            in_type.name()
        );
        assert!(
            ports.outputs.len() == O && ports.outputs.iter().all(|p| p.item == out_type),
            "{name} declares outputs {:?} but fires on {O} outputs of {}",
            ports.outputs,
            out_type.name()
        );
        let inputs = block.input_rates();
        for rate in &inputs {
            assert!(
                rate.consume >= 1 && rate.consume <= rate.window,
                "{name}: an input consumes {} of a {}-item window per firing; it must consume \
                 between 1 and the window",
                rate.consume,
                rate.window
            );
        }
        let outputs = block.output_rates();
        Rated {
            block,
            inputs,
            outputs,
        }
    }

    /// The wrapped block.
    pub fn block(&self) -> &F {
        &self.block
    }

    /// The wrapped block, mutably.
    pub fn block_mut(&mut self) -> &mut F {
        &mut self.block
    }
}

impl<F: FixedRate<I, O>, const I: usize, const O: usize> Node for Rated<F, I, O> {
    fn ports(&self) -> Ports {
        let mut ports = self.block.ports();
        // Room for two windows (or reservations) so one can fill while the other is used.
        for (spec, rate) in ports.inputs.iter_mut().zip(&self.inputs) {
            spec.min_queue = spec.min_queue.max(rate.window.saturating_mul(2));
        }
        for (spec, &produce) in ports.outputs.iter_mut().zip(&self.outputs) {
            spec.min_queue = spec.min_queue.max(produce.saturating_mul(2));
        }
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let mut inputs = io.inputs.get_many::<F::In, I>(std::array::from_fn(|i| i))?;
        let mut outputs = io
            .outputs
            .get_many::<F::Out, O>(std::array::from_fn(|o| o))?;

        let mut firings = usize::MAX;
        let mut windows: [&[F::In]; I] = [&[]; I];
        for (i, (input, window)) in inputs.iter_mut().zip(&mut windows).enumerate() {
            let rate = self.inputs[i];
            match input.window(rate.window)? {
                None => {
                    return Ok(Work::NeedInput {
                        port: i,
                        items: rate.window,
                    })
                }
                // End of stream with less than one window left: nothing more can fire.
                Some(w) if w.len() < rate.window => return Ok(Work::Done),
                Some(w) => {
                    firings = firings.min((w.len() - rate.window) / rate.consume + 1);
                    *window = w;
                }
            }
        }
        let mut room: [&mut [F::Out]; O] = std::array::from_fn(|_| <&mut [F::Out]>::default());
        for (o, (output, slot)) in outputs.iter_mut().zip(&mut room).enumerate() {
            let produce = self.outputs[o];
            if produce == 0 {
                continue;
            }
            let Some(space) = output.reserve(produce)? else {
                return Ok(Work::NeedOutput {
                    port: o,
                    items: produce,
                });
            };
            firings = firings.min(space.len() / produce);
            *slot = space;
        }
        if firings == usize::MAX {
            firings = 1; // no input and nothing produced: one firing per call
        }

        for (window, rate) in windows.iter_mut().zip(&self.inputs) {
            *window = &window[..(firings - 1) * rate.consume + rate.window];
        }
        for (slot, &produce) in room.iter_mut().zip(&self.outputs) {
            let space = std::mem::take(slot);
            *slot = &mut space[..firings * produce];
        }
        self.block.fire(firings, windows, room)?;

        for (input, rate) in inputs.iter_mut().zip(&self.inputs) {
            input.consume(firings * rate.consume);
        }
        for (output, &produce) in outputs.iter_mut().zip(&self.outputs) {
            output.commit(firings * produce);
        }
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        self.block.tag_policy()
    }

    fn controls(&self) -> Vec<ControlSpec> {
        self.block.controls()
    }

    fn set_control(&mut self, name: &str, value: &TagValue, at_item: u64) -> Result<(), NodeError> {
        self.block.set_control(name, value, at_item)
    }
}
