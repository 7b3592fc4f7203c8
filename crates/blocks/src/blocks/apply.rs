//! [`Apply`]: a one-to-one block made of a kernel over slices and the state it reads, with an
//! optional parameter that can change while the graph runs. The shortest way to a new block:
//! `multiply_const` is one `Apply` and its declaration.

use sluice_runtime::{ControlSpec, FixedRate, InputRate, Item, NodeError, Ports, TagValue};

/// Applies a new value of a settable number to the state `S`.
pub type SetFn<S> = fn(&mut S, f64);

/// `out = kernel(state, in)`, item for item, from `in` to `out` (the kernel returns the items it
/// wrote: all of them). Run it as
/// `Rated::new(Apply::new(state, kernel))`.
pub struct Apply<I, O, S> {
    state: S,
    kernel: fn(&S, &[I], &mut [O]) -> usize,
    control: Option<(ControlSpec, SetFn<S>)>,
}

impl<I: Item, O: Item, S: Send> Apply<I, O, S> {
    /// A block that fills each output window with `kernel(&state, input window, output)`.
    pub fn new(state: S, kernel: fn(&S, &[I], &mut [O]) -> usize) -> Self {
        Apply {
            state,
            kernel,
            control: None,
        }
    }

    /// Lets the number `spec` change while the graph runs (any finite value), applied to the
    /// state by `set`.
    pub fn settable(mut self, spec: ControlSpec, set: SetFn<S>) -> Self {
        self.control = Some((spec, set));
        self
    }
}

impl<I: Item, O: Item, S: Send> FixedRate<1, 1> for Apply<I, O, S> {
    type In = I;
    type Out = O;

    fn ports(&self) -> Ports {
        Ports::new().input::<I>("in").output::<O>("out")
    }

    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(1)]
    }

    fn output_rates(&self) -> [usize; 1] {
        [1]
    }

    fn fire(&mut self, _: usize, [x]: [&[I]; 1], [out]: [&mut [O]; 1]) -> Result<(), NodeError> {
        let done = (self.kernel)(&self.state, x, out);
        debug_assert_eq!(done, out.len(), "a kernel of Apply fills its whole output");
        Ok(())
    }

    fn controls(&self) -> Vec<ControlSpec> {
        self.control.iter().map(|(spec, _)| *spec).collect()
    }

    fn set_control(&mut self, name: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        match &self.control {
            Some((spec, set)) if spec.name == name => {
                set(&mut self.state, finite(value, spec.expects)?);
                Ok(())
            }
            _ => Err(NodeError::msg(format!(
                "it has no run-time parameter '{name}'"
            ))),
        }
    }
}

/// A finite number, as a settable parameter takes it.
fn finite(value: &TagValue, expects: &str) -> Result<f64, NodeError> {
    match sluice_runtime::control::number(value, expects)? {
        x if x.is_finite() => Ok(x),
        _ => Err(NodeError::BadValue {
            expected: expects.to_string(),
        }),
    }
}
