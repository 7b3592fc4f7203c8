//! One-to-one conversions and arithmetic with a constant: [`Map`] (an elementwise kernel
//! from one item type to another: conjugate, magnitude, real and imaginary parts),
//! [`AddConst`] and [`FloatToComplex`]. All fire at fixed rates, straight from queue memory,
//! and carry tags 1:1. The conversions between interleaved integer IQ and complex samples are
//! in [`super::iq`].

use num_complex::Complex32;
use sluice_kernels::Arith;
use sluice_runtime::{FixedRate, InputRate, Item, NodeError, Ports};

/// `out[j] = f(in[j])` for an elementwise kernel `f` (a function of slices that returns the
/// items done, such as [`sluice_kernels::magnitude`]). Run it as `Rated::new(Map::new(f))`.
#[derive(Debug)]
pub struct Map<I, O> {
    f: fn(&[I], &mut [O]) -> usize,
}

impl<I: Item, O: Item> Map<I, O> {
    /// A block that applies `f` to every item.
    pub fn new(f: fn(&[I], &mut [O]) -> usize) -> Self {
        Map { f }
    }
}

impl Map<Complex32, Complex32> {
    /// `conj(x)`.
    pub fn conjugate() -> Self {
        Map::new(sluice_kernels::conjugate)
    }
}

impl Map<Complex32, f32> {
    /// `|x|`.
    pub fn magnitude() -> Self {
        Map::new(sluice_kernels::magnitude)
    }
    /// `|x|²`.
    pub fn magnitude_squared() -> Self {
        Map::new(sluice_kernels::magnitude_squared)
    }
    /// `re(x)`.
    pub fn real_part() -> Self {
        Map::new(sluice_kernels::real_part)
    }
    /// `im(x)`.
    pub fn imag_part() -> Self {
        Map::new(sluice_kernels::imag_part)
    }
}

impl<I: Item, O: Item> FixedRate<1, 1> for Map<I, O> {
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
    fn fire(&mut self, _: usize, [x]: [&[I]; 1], [y]: [&mut [O]; 1]) -> Result<(), NodeError> {
        (self.f)(x, y);
        Ok(())
    }
}

/// `out = in + value`, elementwise. Run it as `Rated::new(AddConst::new(value))`.
#[derive(Debug)]
pub struct AddConst<T> {
    value: T,
}

impl<T: Item + Arith> AddConst<T> {
    /// Adds `value` to every item.
    pub fn new(value: T) -> Self {
        AddConst { value }
    }
}

impl<T: Item + Arith> FixedRate<1, 1> for AddConst<T> {
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
    fn fire(&mut self, _: usize, [x]: [&[T]; 1], [y]: [&mut [T]; 1]) -> Result<(), NodeError> {
        sluice_kernels::add_const(x, self.value, y);
        Ok(())
    }
}

/// `out = re + i·im` from two real streams (inputs `re` and `im`). Run it as
/// `Rated::new(FloatToComplex)`.
#[derive(Debug, Default)]
pub struct FloatToComplex;

impl FixedRate<2, 1> for FloatToComplex {
    type In = f32;
    type Out = Complex32;
    fn ports(&self) -> Ports {
        Ports::new()
            .input::<f32>("re")
            .input::<f32>("im")
            .output::<Complex32>("out")
    }
    fn input_rates(&self) -> [InputRate; 2] {
        [InputRate::each(1); 2]
    }
    fn output_rates(&self) -> [usize; 1] {
        [1]
    }
    fn fire(
        &mut self,
        _: usize,
        [re, im]: [&[f32]; 2],
        [y]: [&mut [Complex32]; 1],
    ) -> Result<(), NodeError> {
        sluice_kernels::to_complex(re, im, y);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{Binary, VectorSink, VectorSource};
    use sluice_kernels::BinaryOp;
    use sluice_runtime::{Graph, Rated, TagValue};

    /// `x` through `block` (stepped) with a tag on item 3; the output and the tag indices.
    fn through<O: Item + Clone>(
        block: impl sluice_runtime::Node + 'static,
        x: Vec<Complex32>,
    ) -> (Vec<O>, Vec<u64>) {
        let mut g = Graph::new();
        let src = VectorSource::new(x)
            .max_chunk(13)
            .with_tag(3, "k", TagValue::U64(1));
        let src = g.add("src", src).unwrap();
        let node = g.add("node", block).unwrap();
        let (sink, data) = VectorSink::<O>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", node, "in").unwrap();
        g.connect(node, "out", sink, "in").unwrap();
        g.run_stepped().unwrap();
        (data.items(), data.tags().iter().map(|t| t.index).collect())
    }

    #[test]
    fn parts_conjugate_and_constants_run_in_graphs_with_their_tags() {
        let x: Vec<Complex32> = (0..100).map(|i| Complex32::new(i as f32, -2.0)).collect();
        let (m, tags) = through::<f32>(Rated::new(Map::magnitude()), x.clone());
        assert_eq!(tags, [3]);
        assert_eq!(m.len(), 100);
        assert_eq!(m[7], (49.0f32 + 4.0).sqrt());
        let (p, _) = through::<f32>(Rated::new(Map::magnitude_squared()), x.clone());
        assert_eq!(p[7], 53.0);
        let (re, _) = through::<f32>(Rated::new(Map::real_part()), x.clone());
        let (im, _) = through::<f32>(Rated::new(Map::imag_part()), x.clone());
        assert_eq!((re[9], im[9]), (9.0, -2.0));
        let (c, _) = through::<Complex32>(Rated::new(Map::conjugate()), x.clone());
        assert_eq!(c[5], Complex32::new(5.0, 2.0));
        let offset = Complex32::new(0.5, 1.0);
        let (a, tags) = through::<Complex32>(Rated::new(AddConst::new(offset)), x.clone());
        assert_eq!((a[4], tags), (x[4] + offset, vec![3]));
    }

    #[test]
    fn two_stream_operations_and_float_to_complex() {
        let a: Vec<f32> = (0..500).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..480).map(|i| 3.0 - i as f32).collect();
        for op in [BinaryOp::Subtract, BinaryOp::Multiply] {
            let mut g = Graph::new();
            let sa = g
                .add("a", VectorSource::new(a.clone()).max_chunk(77))
                .unwrap();
            let sb = g
                .add("b", VectorSource::new(b.clone()).max_chunk(31))
                .unwrap();
            let node = g.add("op", Binary::<f32>::with_op(op)).unwrap();
            let (sink, data) = VectorSink::<f32>::new();
            let sink = g.add("sink", sink).unwrap();
            g.connect(sa, "out", node, "a").unwrap();
            g.connect(sb, "out", node, "b").unwrap();
            g.connect(node, "out", sink, "in").unwrap();
            g.run_stepped().unwrap();
            let want: Vec<f32> = a
                .iter()
                .zip(&b)
                .map(|(x, y)| {
                    if op == BinaryOp::Subtract {
                        x - y
                    } else {
                        x * y
                    }
                })
                .collect();
            assert_eq!(data.items(), want, "{op:?}");
        }
        let mut g = Graph::new();
        let sa = g.add("re", VectorSource::new(a.clone())).unwrap();
        let sb = g.add("im", VectorSource::new(b.clone())).unwrap();
        let node = g.add("c", Rated::new(FloatToComplex)).unwrap();
        let (sink, data) = VectorSink::<Complex32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(sa, "out", node, "re").unwrap();
        g.connect(sb, "out", node, "im").unwrap();
        g.connect(node, "out", sink, "in").unwrap();
        g.run_stepped().unwrap();
        let got = data.items();
        assert_eq!(got.len(), 480);
        assert_eq!(got[10], Complex32::new(5.0, -7.0));
    }
}
