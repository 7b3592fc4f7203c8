//! Receiver blocks over N interleaved channels (vector items of `channels` samples, as the
//! multi-channel `fir` takes them): [`IirFilter`] (a biquad cascade: IIR designs, FM
//! de-emphasis, DC blocker), [`AgcBlock`] and [`AmDemodBlock`]. Each is a thin adapter of its
//! kernel, fired at fixed rates straight from queue memory; run them as `Rated::new(block)`.
//!
//! **All three have state with infinite memory** (an IIR's and a DC blocker's filter state,
//! an AGC's envelope): their output depends on everything since the start, so a replica
//! started later does not produce the same samples until that memory has faded.

use num_complex::Complex32;
use sluice_kernels::{Agc, AgcSample, AgcSettings, AmDemod, Biquad, BiquadCascade, IirSample};
use sluice_runtime::{FixedRate, InputRate, Item, NodeError, Ports};

fn node_error(e: sluice_kernels::DspError) -> NodeError {
    NodeError::from_error(e)
}

/// Ports `in` and `out` carrying `channels`-sample frames.
fn frame_ports<I: Item, O: Item>(channels: usize) -> Ports {
    let mut ports = Ports::new();
    ports.add_input_vectors::<I>("in", channels, 0);
    ports.add_output_vectors::<O>("out", channels, 0);
    ports
}

/// A biquad cascade per channel (see [`BiquadCascade`]; its state has infinite memory).
#[derive(Debug)]
pub struct IirFilter<S: IirSample> {
    cascade: BiquadCascade<S>,
}

impl<S: IirSample + Item> IirFilter<S> {
    /// Filters `channels` channels with `sections`.
    pub fn new(sections: &[Biquad], channels: usize) -> Result<Self, NodeError> {
        Ok(IirFilter {
            cascade: BiquadCascade::new(sections, channels).map_err(node_error)?,
        })
    }
}

impl<S: IirSample + Item> FixedRate<1, 1> for IirFilter<S> {
    type In = S;
    type Out = S;
    fn ports(&self) -> Ports {
        frame_ports::<S, S>(self.cascade.channels())
    }
    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(self.cascade.channels())]
    }
    fn output_rates(&self) -> [usize; 1] {
        [self.cascade.channels()]
    }
    fn fire(&mut self, _: usize, [x]: [&[S]; 1], [y]: [&mut [S]; 1]) -> Result<(), NodeError> {
        self.cascade.process(x, y);
        Ok(())
    }
}

/// Automatic gain control per channel (see [`Agc`]; its envelope has infinite memory).
#[derive(Debug)]
pub struct AgcBlock<S> {
    agc: Agc,
    _samples: std::marker::PhantomData<S>,
}

impl<S: AgcSample + Item> AgcBlock<S> {
    /// An AGC with `settings` on `channels` channels.
    pub fn new(settings: AgcSettings, channels: usize) -> Result<Self, NodeError> {
        Ok(AgcBlock {
            agc: Agc::new(settings, channels).map_err(node_error)?,
            _samples: std::marker::PhantomData,
        })
    }
}

impl<S: AgcSample + Item> FixedRate<1, 1> for AgcBlock<S> {
    type In = S;
    type Out = S;
    fn ports(&self) -> Ports {
        frame_ports::<S, S>(self.agc.channels())
    }
    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(self.agc.channels())]
    }
    fn output_rates(&self) -> [usize; 1] {
        [self.agc.channels()]
    }
    fn fire(&mut self, _: usize, [x]: [&[S]; 1], [y]: [&mut [S]; 1]) -> Result<(), NodeError> {
        self.agc.process(x, y);
        Ok(())
    }
}

/// Envelope AM demodulation per channel, complex in, real out (see [`AmDemod`]; its DC
/// blocker has infinite memory).
#[derive(Debug)]
pub struct AmDemodBlock {
    demod: AmDemod,
}

impl AmDemodBlock {
    /// A demodulator on `channels` channels whose DC blocker has its pole at `dc_pole`.
    pub fn new(dc_pole: f64, channels: usize) -> Result<Self, NodeError> {
        Ok(AmDemodBlock {
            demod: AmDemod::new(dc_pole, channels).map_err(node_error)?,
        })
    }
}

impl FixedRate<1, 1> for AmDemodBlock {
    type In = Complex32;
    type Out = f32;
    fn ports(&self) -> Ports {
        frame_ports::<Complex32, f32>(self.demod.channels())
    }
    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(self.demod.channels())]
    }
    fn output_rates(&self) -> [usize; 1] {
        [self.demod.channels()]
    }
    fn fire(
        &mut self,
        _: usize,
        [x]: [&[Complex32]; 1],
        [y]: [&mut [f32]; 1],
    ) -> Result<(), NodeError> {
        self.demod.process(x, y);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{StreamToVector, VectorSink, VectorSource, VectorToStream};
    use sluice_kernels::{butterworth, deemphasis, Butterworth};
    use sluice_runtime::{Graph, Node, Rated, RunOptions};

    /// `x` (interleaved frames of `channels`) through `block` between stream_to_vector and
    /// vector_to_stream, threaded, in odd chunks.
    fn run_frames<I: Item, O: Item>(
        block: impl Node + 'static,
        x: Vec<I>,
        channels: usize,
    ) -> Vec<O> {
        let mut g = Graph::new();
        let src = g.add("src", VectorSource::new(x).max_chunk(1001)).unwrap();
        let pack = g
            .add("pack", Rated::new(StreamToVector::<I>::new(channels)))
            .unwrap();
        let node = g.add("node", block).unwrap();
        let unpack = g
            .add("unpack", Rated::new(VectorToStream::<O>::new(channels)))
            .unwrap();
        let (sink, data) = VectorSink::<O>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", pack, "in").unwrap();
        g.connect(pack, "out", node, "in").unwrap();
        g.connect(node, "out", unpack, "in").unwrap();
        g.connect(unpack, "out", sink, "in").unwrap();
        g.run(&RunOptions::default()).unwrap();
        data.items()
    }

    /// 40 channels through each block in a graph give what each kernel gives on its own.
    #[test]
    fn forty_channel_blocks_match_their_kernels_run_on_whole_signals() {
        let channels = 40;
        let x = crate::blocks::test_support::c32_noise(channels * 2000, 11);
        let mut sections = vec![deemphasis(75e-6, 48000.0).unwrap()];
        sections.extend(butterworth(Butterworth::Lowpass { cutoff: 0.06 }, 4).unwrap());
        let block = IirFilter::<Complex32>::new(&sections, channels).unwrap();
        let got: Vec<Complex32> = run_frames(Rated::new(block), x.clone(), channels);
        let mut want = vec![Complex32::default(); x.len()];
        BiquadCascade::<Complex32>::new(&sections, channels)
            .unwrap()
            .process(&x, &mut want);
        assert_eq!(got, want);

        let s = AgcSettings::default();
        let got: Vec<Complex32> = run_frames(
            Rated::new(AgcBlock::<Complex32>::new(s, channels).unwrap()),
            x.clone(),
            channels,
        );
        Agc::new(s, channels).unwrap().process(&x, &mut want);
        assert_eq!(got, want);

        let got: Vec<f32> = run_frames(
            Rated::new(AmDemodBlock::new(0.995, channels).unwrap()),
            x.clone(),
            channels,
        );
        let mut want = vec![0.0f32; x.len()];
        AmDemod::new(0.995, channels)
            .unwrap()
            .process(&x, &mut want);
        assert_eq!(got, want);
        assert!(IirFilter::<f32>::new(&sections, 0).is_err());
        assert!(AgcBlock::<f32>::new(s, 0).is_err());
        assert!(AmDemodBlock::new(2.0, 1).is_err());
    }
}
