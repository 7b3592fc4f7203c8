//! Blocks over vector items: packing a stream into vectors and back, and one FIR per channel
//! for many channels in one node.

use sluice_kernels::{ChannelFir, ChannelSample};
use sluice_runtime::{FixedRate, InputRate, Item, NodeError, Ports};
use std::marker::PhantomData;

/// Groups `vlen` items of a stream into one vector item (GNU Radio's `stream_to_vector`). A
/// partial vector left at the end of the stream is dropped. Run it as
/// [`Rated`](sluice_runtime::Rated)`::new(StreamToVector::new(n))`.
#[derive(Debug)]
pub struct StreamToVector<T> {
    vlen: usize,
    _items: PhantomData<T>,
}

/// Splits vector items of `vlen` back into a stream (GNU Radio's `vector_to_stream`).
#[derive(Debug)]
pub struct VectorToStream<T> {
    vlen: usize,
    _items: PhantomData<T>,
}

impl<T> StreamToVector<T> {
    /// Packs `vlen` (at least 1) items per vector.
    pub fn new(vlen: usize) -> Self {
        StreamToVector {
            vlen: vlen.max(1),
            _items: PhantomData,
        }
    }
}

impl<T> VectorToStream<T> {
    /// Unpacks vectors of `vlen` (at least 1) items.
    pub fn new(vlen: usize) -> Self {
        VectorToStream {
            vlen: vlen.max(1),
            _items: PhantomData,
        }
    }
}

/// A whole-vector copy: `vlen` items in and out per firing, the vector length declared on
/// one side only.
fn repack<T: Item>(x: &[T], y: &mut [T]) -> Result<(), NodeError> {
    y.copy_from_slice(x);
    Ok(())
}

impl<T: Item> FixedRate<1, 1> for StreamToVector<T> {
    type In = T;
    type Out = T;
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        ports.add_input::<T>("in");
        ports.add_output_vectors::<T>("out", self.vlen, 0);
        ports
    }
    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(self.vlen)]
    }
    fn output_rates(&self) -> [usize; 1] {
        [self.vlen]
    }
    fn fire(&mut self, _: usize, [x]: [&[T]; 1], [y]: [&mut [T]; 1]) -> Result<(), NodeError> {
        repack(x, y)
    }
}

impl<T: Item> FixedRate<1, 1> for VectorToStream<T> {
    type In = T;
    type Out = T;
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        ports.add_input_vectors::<T>("in", self.vlen, 0);
        ports.add_output::<T>("out");
        ports
    }
    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(self.vlen)]
    }
    fn output_rates(&self) -> [usize; 1] {
        [self.vlen]
    }
    fn fire(&mut self, _: usize, [x]: [&[T]; 1], [y]: [&mut [T]; 1]) -> Result<(), NodeError> {
        repack(x, y)
    }
}

/// Many channels in one node: vector items of `channels` samples (one per channel) in, each
/// channel filtered by the same real taps and decimated, vector items of `channels` out. One
/// thread and one queue each way, whatever the channel count. Run it as
/// [`Rated`](sluice_runtime::Rated)`::new(ChannelFirFilter::new(…))`.
#[derive(Debug)]
pub struct ChannelFirFilter<S> {
    fir: ChannelFir,
    _samples: PhantomData<S>,
}

impl<S> ChannelFirFilter<S> {
    /// The filter: see [`ChannelFir::new`].
    pub fn new(taps: &[f32], channels: usize, decimation: usize) -> Result<Self, NodeError> {
        Ok(ChannelFirFilter {
            fir: ChannelFir::new(taps, channels, decimation).map_err(NodeError::from_error)?,
            _samples: PhantomData,
        })
    }
}

impl<S: ChannelSample + Item> FixedRate<1, 1> for ChannelFirFilter<S> {
    type In = S;
    type Out = S;
    fn ports(&self) -> Ports {
        let c = self.fir.channels();
        let mut ports = Ports::new();
        ports.add_input_vectors::<S>("in", c, 0);
        ports.add_output_vectors::<S>("out", c, 0);
        ports
    }
    fn input_rates(&self) -> [InputRate; 1] {
        let c = self.fir.channels();
        [InputRate::sliding(
            self.fir.taps() * c,
            self.fir.decimation() * c,
        )]
    }
    fn output_rates(&self) -> [usize; 1] {
        [self.fir.channels()]
    }
    fn fire(&mut self, n: usize, [x]: [&[S]; 1], [y]: [&mut [S]; 1]) -> Result<(), NodeError> {
        self.fir.filter(n, x, y).map_err(NodeError::from_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{VectorSink, VectorSource};
    use num_complex::Complex32;
    use sluice_runtime::{Graph, Rated, RunOptions};

    /// 333 channels through one node in a threaded graph, each compared with the kernel run on
    /// that channel alone (1 channel): the node splits nothing and mixes no channels.
    #[test]
    fn a_333_channel_fir_node_filters_every_channel_as_a_single_channel_filter_would() {
        let (channels, frames, d) = (333, 600, 4);
        let taps: Vec<f32> = (0..24).map(|k| 1.0 / (k as f32 + 1.0)).collect();
        let x = crate::blocks::test_support::c32_noise(channels * frames, 3);
        let mut g = Graph::new();
        let src = g.add("src", VectorSource::new(x.clone())).unwrap();
        let pack = g
            .add(
                "pack",
                Rated::new(StreamToVector::<Complex32>::new(channels)),
            )
            .unwrap();
        let fir = g
            .add(
                "fir",
                Rated::new(ChannelFirFilter::<Complex32>::new(&taps, channels, d).unwrap()),
            )
            .unwrap();
        let unpack = g
            .add(
                "unpack",
                Rated::new(VectorToStream::<Complex32>::new(channels)),
            )
            .unwrap();
        let (sink, out) = VectorSink::<Complex32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", pack, "in").unwrap();
        g.connect(pack, "out", fir, "in").unwrap();
        g.connect(fir, "out", unpack, "in").unwrap();
        g.connect(unpack, "out", sink, "in").unwrap();
        g.run(&RunOptions::default()).unwrap();
        let y = out.items();
        let frames_out = (frames - taps.len()) / d + 1;
        assert_eq!(y.len(), frames_out * channels);
        let single = ChannelFir::new(&taps, 1, d).unwrap();
        for c in 0..channels {
            let xc: Vec<Complex32> = x.iter().skip(c).step_by(channels).copied().collect();
            let mut want = vec![Complex32::default(); frames_out];
            single.filter(frames_out, &xc, &mut want).unwrap();
            for (n, w) in want.iter().enumerate() {
                assert_eq!(y[n * channels + c], *w, "channel {c} frame {n}");
            }
        }
    }
}
