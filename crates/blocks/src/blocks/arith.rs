//! Elementwise arithmetic on several streams: [`Binary`] (two inputs: `a + b` as [`Add`],
//! `a − b`, `a · b`) and [`Sum`] (N inputs).
//!
//! Both hold windows of all their inputs at once and write the result straight into the
//! output's reservation: no item is copied on the way in or out. They end when the shortest
//! input ends (after consuming what they used of the others), and carry tags 1:1 from every
//! input to the same index of the output.

use sluice_kernels::{Arith, BinaryOp, DspError, Summable};
use sluice_runtime::{InPort, Item, Node, NodeError, OutPort, Ports, Work, WorkIo};

/// How many inputs' windows [`Sum`] holds together; more are summed in rounds of this many
/// (adding to the partial sums in the reservation), so no allocation is needed for any N.
const HELD: usize = 8;

/// `out = a ∘ b`, elementwise, for `∘` one of [`BinaryOp`] (for `f32` and `Complex32`).
#[derive(Debug)]
pub struct Binary<T> {
    ports: Ports,
    a: InPort<T>,
    b: InPort<T>,
    out: OutPort<T>,
    op: BinaryOp,
    #[cfg(test)]
    witness: Option<witness::Witness>,
}

/// `out = a + b`: a [`Binary`] whose `new()` adds.
pub type Add<T> = Binary<T>;

impl<T: Item + Arith> Binary<T> {
    /// An adder with inputs `a` and `b` and output `out` (the `add` block).
    pub fn new() -> Self {
        Binary::with_op(BinaryOp::Add)
    }

    /// `out = a ∘ b` with inputs `a` and `b` and output `out`.
    pub fn with_op(op: BinaryOp) -> Self {
        let mut ports = Ports::new();
        let a = ports.add_input("a");
        let b = ports.add_input("b");
        let out = ports.add_output("out");
        Binary {
            ports,
            a,
            b,
            out,
            op,
            #[cfg(test)]
            witness: None,
        }
    }
}

impl<T: Item + Arith> Default for Binary<T> {
    fn default() -> Self {
        Binary::new()
    }
}

impl<T: Item + Arith> Node for Binary<T> {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let [a, b] = io.inputs.ports([self.a, self.b])?;
        let out = io.outputs.port(self.out);
        #[cfg(test)]
        let memory = [a.queue_memory(), b.queue_memory(), out.queue_memory()];
        let (x, y) = match (a.window(1)?, b.window(1)?) {
            (Some([]), _) | (_, Some([])) => return Ok(Work::Done),
            (None, _) => return Ok(self.a.need(1)),
            (_, None) => return Ok(self.b.need(1)),
            (Some(x), Some(y)) => (x, y),
        };
        let Some(z) = out.reserve(1)? else {
            return Ok(self.out.need(1));
        };
        #[cfg(test)]
        witness::see(&self.witness, &[x, y], z, &memory);
        let n = self.op.apply(x, y, z);
        a.consume(n);
        b.consume(n);
        out.commit(n);
        Ok(Work::Progress)
    }
}

/// `out = in0 + in1 + … + in(N−1)`, elementwise, for N ≥ 1 inputs chosen at construction
/// (for `f32`, `Complex32`, any [`Summable`] item). With one input it is a copy through the
/// same loop.
#[derive(Debug)]
pub struct Sum<T> {
    ports: Ports,
    out: OutPort<T>,
    #[cfg(test)]
    witness: Option<witness::Witness>,
}

impl<T: Item + Summable> Sum<T> {
    /// A sum of `inputs` inputs named `in0`, `in1`, …, with output `out`.
    pub fn new(inputs: usize) -> Result<Self, DspError> {
        if inputs == 0 {
            return Err(DspError::NoInputs(inputs));
        }
        let mut ports = Ports::new();
        for i in 0..inputs {
            ports.add_input::<T>(&format!("in{i}"));
        }
        let out = ports.add_output("out");
        Ok(Sum {
            ports,
            out,
            #[cfg(test)]
            witness: None,
        })
    }

    /// The number of inputs.
    pub fn inputs(&self) -> usize {
        self.ports.inputs.len()
    }
}

impl<T: Item + Summable> Node for Sum<T> {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        // What every input holds now: the end of any one ends the sum.
        let mut n = usize::MAX;
        let mut waiting = None;
        for (port, input) in io.inputs.all::<T>()?.enumerate() {
            match input.window(1)? {
                Some([]) => return Ok(Work::Done),
                Some(x) => n = n.min(x.len()),
                None => {
                    waiting.get_or_insert(port);
                }
            }
        }
        if let Some(port) = waiting {
            return Ok(Work::NeedInput { port, items: 1 });
        }
        let out = io.outputs.port(self.out);
        #[cfg(test)]
        let out_memory = out.queue_memory();
        let Some(space) = out.reserve(1)? else {
            return Ok(self.out.need(1));
        };
        let n = n.min(space.len());
        let space = &mut space[..n];
        // Windows of (up to HELD) inputs at once, summed straight into the reservation.
        let mut inputs = io.inputs.all::<T>()?.enumerate();
        let mut first = true;
        while inputs.len() > 0 {
            let mut held: [&[T]; HELD] = [&[]; HELD];
            let mut k = 0;
            #[cfg(test)]
            let mut memory = Vec::new();
            for (port, input) in inputs.by_ref().take(HELD) {
                #[cfg(test)]
                memory.push(input.queue_memory());
                // Every input held n items a moment ago, so this window holds them still.
                let Some(x) = input.window(n)? else {
                    return Ok(Work::NeedInput { port, items: n });
                };
                held[k] = &x[..n];
                k += 1;
            }
            #[cfg(test)]
            {
                memory.push(out_memory.clone());
                witness::see(&self.witness, &held[..k], space, &memory);
            }
            if first {
                sluice_kernels::sum(&held[..k], space);
            } else {
                sluice_kernels::sum_accumulate(&held[..k], space);
            }
            first = false;
        }
        drop(inputs); // (an opaque iterator may borrow until it is dropped)
        for input in io.inputs.all::<T>()? {
            input.consume(n);
        }
        out.commit(n);
        Ok(Work::Progress)
    }
}

/// A record, for tests, of where the windows and reservations a block hands its kernel lie.
#[cfg(test)]
pub(crate) mod witness {
    use std::ops::Range;
    use std::sync::{Arc, Mutex};

    /// One slice handed to a kernel, and the queue mapping it must lie in.
    #[derive(Debug, Clone)]
    pub struct Seen {
        /// 0.. for the inputs in order, then the output.
        pub port: usize,
        /// The slice's addresses.
        pub slice: Range<usize>,
        /// The queue's mapping.
        pub queue: Range<usize>,
    }

    /// Shared between a block and its test.
    pub type Witness = Arc<Mutex<Vec<Seen>>>;

    /// Records `inputs` then `output`, with `queues` in the same order.
    pub fn see<T>(
        witness: &Option<Witness>,
        inputs: &[&[T]],
        output: &[T],
        queues: &[Range<usize>],
    ) {
        let Some(witness) = witness else { return };
        let mut seen = witness.lock().unwrap();
        let slices = inputs.iter().copied().chain([output]);
        for (port, (slice, queue)) in slices.zip(queues).enumerate() {
            let range = slice.as_ptr_range();
            seen.push(Seen {
                port,
                slice: range.start as usize..range.end as usize,
                queue: queue.clone(),
            });
        }
    }

    impl<T> super::Add<T> {
        /// Records every slice the adder hands its kernel in `witness`.
        pub fn witnessed(mut self, witness: &Witness) -> Self {
            self.witness = Some(witness.clone());
            self
        }
    }

    impl<T> super::Sum<T> {
        /// Records every slice the sum hands its kernel in `witness`.
        pub fn witnessed(mut self, witness: &Witness) -> Self {
            self.witness = Some(witness.clone());
            self
        }
    }
}

#[cfg(test)]
mod tests;
