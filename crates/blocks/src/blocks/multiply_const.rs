//! Multiply by a constant whose value can be changed while the graph runs.

use sluice_kernels::Scalable;
use sluice_runtime::{
    control, ControlSpec, FixedRate, InputRate, Item, NodeError, Ports, TagValue,
};
use std::marker::PhantomData;

/// The run-time parameter `gain`.
const GAIN: ControlSpec = ControlSpec {
    name: "gain",
    expects: "a finite number",
    help: "the factor every sample is multiplied by",
};

/// `out = gain · in`, item by item, for `f32` or `Complex32` samples (a real gain). The gain
/// can be changed while running (`gain`): it applies from the output item whose offset the
/// change returns. Add it to a graph as `Rated::new(MultiplyConst::new(gain)?)`.
#[derive(Debug)]
pub struct MultiplyConst<T> {
    gain: f32,
    _items: PhantomData<T>,
}

impl<T: Item + Scalable> MultiplyConst<T> {
    /// A multiplier by `gain` (must be finite).
    pub fn new(gain: f64) -> Result<Self, NodeError> {
        let mut block = MultiplyConst {
            gain: 1.0,
            _items: PhantomData,
        };
        block.set_gain(gain)?;
        Ok(block)
    }

    /// The gain now.
    pub fn gain(&self) -> f32 {
        self.gain
    }

    /// Changes the gain from the next item on; an error if it is not finite.
    pub fn set_gain(&mut self, gain: f64) -> Result<(), NodeError> {
        if !gain.is_finite() {
            return Err(NodeError::BadValue {
                expected: GAIN.expects.to_string(),
            });
        }
        self.gain = gain as f32;
        Ok(())
    }
}

impl<T: Item + Scalable> FixedRate<1, 1> for MultiplyConst<T> {
    type In = T;
    type Out = T;

    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in").output::<T>("out")
    }

    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(1)]
    }

    fn output_rates(&self) -> [usize; 1] {
        [1]
    }

    fn fire(&mut self, _: usize, [x]: [&[T]; 1], [out]: [&mut [T]; 1]) -> Result<(), NodeError> {
        sluice_kernels::scale(x, self.gain, out);
        Ok(())
    }

    fn controls(&self) -> Vec<ControlSpec> {
        vec![GAIN]
    }

    fn set_control(&mut self, _: &str, value: &TagValue, _at: u64) -> Result<(), NodeError> {
        self.set_gain(control::number(value, GAIN.expects)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{test_support::wait_for_items, Throttle, VectorSink, VectorSource};
    use num_complex::Complex32;
    use sluice_runtime::{Graph, Rated, RunOptions, StopHandle};

    #[test]
    fn multiplies_real_and_complex_streams() {
        let mut g = Graph::new();
        let src = g
            .add("src", VectorSource::new(vec![Complex32::new(1.0, -1.0); 3]))
            .unwrap();
        let mul = g
            .add(
                "mul",
                Rated::new(MultiplyConst::<Complex32>::new(-2.0).unwrap()),
            )
            .unwrap();
        let (sink, data) = VectorSink::<Complex32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", mul, "in").unwrap();
        g.connect(mul, "out", sink, "in").unwrap();
        g.run_stepped().unwrap();
        assert_eq!(data.items(), vec![Complex32::new(-2.0, 2.0); 3]);
        assert!(MultiplyConst::<f32>::new(f64::INFINITY).is_err());
    }

    #[test]
    fn a_gain_change_applies_from_the_returned_offset() {
        let mut g = Graph::new();
        let src = g
            .add("src", VectorSource::new(vec![1.0f32; 1000]).repeat(100_000))
            .unwrap();
        let pace = g.add("pace", Throttle::<f32>::new(1e6).unwrap()).unwrap();
        let mul = g
            .add("gain", Rated::new(MultiplyConst::<f32>::new(1.0).unwrap()))
            .unwrap();
        let (sink, data) = VectorSink::<f32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", pace, "in").unwrap();
        g.connect(pace, "out", mul, "in").unwrap();
        g.connect(mul, "out", sink, "in").unwrap();
        let control = g.control_handle();
        let stop = StopHandle::new();
        let opts = RunOptions {
            stop: Some(stop.clone()),
            ..RunOptions::default()
        };
        let running = std::thread::spawn(move || g.run(&opts));
        let at = control.set("gain", "gain", TagValue::F64(0.25)).unwrap();
        let err = control
            .set("gain", "gain", TagValue::Str("loud".into()))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "node 'gain': parameter 'gain' must be a finite number, not 'loud'"
        );
        wait_for_items(&data, at + 1000);
        stop.stop();
        running.join().unwrap().unwrap();
        let items = data.items();
        assert!(
            items.len() as u64 >= at + 1000,
            "{} items, change at {at}",
            items.len()
        );
        for (n, &v) in items.iter().enumerate() {
            let expected = if (n as u64) < at { 1.0 } else { 0.25 };
            assert_eq!(v, expected, "item {n}, change at {at}");
        }
        let tags: Vec<_> = data
            .tags()
            .into_iter()
            .filter(|t| &*t.key == "set:gain")
            .collect();
        assert_eq!(tags.len(), 1);
        assert_eq!((tags[0].index, &tags[0].value), (at, &TagValue::F64(0.25)));
    }
}
