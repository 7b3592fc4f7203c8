//! Polyphase filter-bank channelizer block: one complex stream in, the chosen channels out as
//! one stream per channel or as one stream of vectors (one sample per channel per item).

use num_complex::Complex32;
use sluice_kernels::Channelizer;
use sluice_runtime::{Node, NodeError, Outputs, Ports, TagPolicy, Work, WorkIo};

/// How the channels leave the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelOutputs {
    /// One output port per chosen channel, `out0`, `out1`, … (GNU Radio's layout).
    Streams,
    /// One port `out` of vectors, one sample per chosen channel per vector (what the
    /// multi-channel blocks, e.g. `fm_demod` with `channels`, take).
    Vectors,
}

/// Frames computed per work call at most (with per-channel streams, the scratch holds this
/// many frames of every chosen channel before they are copied to their ports).
const FRAMES: usize = 256;

/// The channelizer as a node (see [`Channelizer`] for what it computes). Tags and `rx_rate`
/// are rescaled by `1/D`, `D` input samples per frame.
#[derive(Debug)]
pub struct ChannelizerBlock {
    kernel: Channelizer,
    layout: ChannelOutputs,
    scratch: Vec<Complex32>,
}

impl ChannelizerBlock {
    /// The block around `kernel`, with its chosen channels laid out as `layout` says.
    pub fn new(kernel: Channelizer, layout: ChannelOutputs) -> Self {
        let k = kernel.outputs().len();
        ChannelizerBlock {
            kernel,
            layout,
            // The vector layout writes straight into its queue.
            scratch: match layout {
                ChannelOutputs::Streams => vec![Complex32::default(); FRAMES * k],
                ChannelOutputs::Vectors => Vec::new(),
            },
        }
    }

    /// Input samples one call reads: a whole batch of frames and the history before it.
    fn window(&self) -> usize {
        self.kernel.window_len() - 1 + FRAMES * self.kernel.decimation()
    }
}

/// Queue per channel stream (items) unless the graph gives one: four calls' worth.
const CHANNEL_QUEUE: usize = 4 * FRAMES;

/// Channels per tile of the scatter: a tile reads whole cache lines of the frame-major scratch.
const TILE: usize = 8;

fn vanished() -> NodeError {
    NodeError::msg("internal error: reserved space vanished")
}

impl ChannelizerBlock {
    /// Copies `frames` frames from the scratch to the channels' ports, `TILE` ports at a time
    /// so each frame's slice of the tile is one contiguous read.
    fn scatter(&mut self, outputs: &mut Outputs<'_>, frames: usize) -> Result<(), NodeError> {
        let k = self.kernel.outputs().len();
        let mut c = 0;
        while c + TILE <= k {
            let mut outs = outputs.get_many::<Complex32, TILE>(std::array::from_fn(|i| c + i))?;
            let mut ys: [&mut [Complex32]; TILE] = Default::default();
            for (y, out) in ys.iter_mut().zip(outs.iter_mut()) {
                *y = out.reserve(frames)?.ok_or_else(vanished)?;
            }
            for (f, frame) in self.scratch[..frames * k].chunks_exact(k).enumerate() {
                for (y, &v) in ys.iter_mut().zip(&frame[c..c + TILE]) {
                    y[f] = v;
                }
            }
            for out in outs.iter_mut() {
                out.commit(frames);
            }
            c += TILE;
        }
        for c in c..k {
            let out = outputs.get::<Complex32>(c)?;
            let y = out.reserve(frames)?.ok_or_else(vanished)?;
            for (dst, frame) in y[..frames].iter_mut().zip(self.scratch.chunks_exact(k)) {
                *dst = frame[c];
            }
            out.commit(frames);
        }
        Ok(())
    }
}

impl Node for ChannelizerBlock {
    fn ports(&self) -> Ports {
        let k = self.kernel.outputs().len();
        let mut ports = Ports::new();
        // Room for a whole batch of frames in one window: fewer, larger calls amortise the
        // per-port work over the many outputs.
        ports.add_input_window::<Complex32>("in", self.window());
        match self.layout {
            ChannelOutputs::Vectors => {
                // Its queue holds two whole batches (the default 256 KiB held fewer than one
                // for hundreds of channels, and the two threads took turns).
                ports.add_output_vectors::<Complex32>("out", k, FRAMES * k);
            }
            ChannelOutputs::Streams => {
                // Each channel gets FRAMES samples a call: queues of a few calls keep the
                // readers busy, and hundreds of them still fit near the caches (the default
                // 256 KiB each would spread 512 channels over 128 MiB).
                for c in 0..k {
                    let port = ports.add_output::<Complex32>(&format!("out{c}"));
                    ports.prefer_output_queue(port, CHANNEL_QUEUE);
                }
            }
        }
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let k = self.kernel.outputs().len();
        let input = io.inputs.get::<Complex32>(0)?;
        // A whole batch per call (fewer calls here and at every channel's reader), read in
        // place with the history before it; the window is shorter only at the end of the stream.
        let batch = self.window();
        let Some(x) = input.window(batch)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: batch,
            });
        };
        let end = x.len() < batch;
        let (room, fullest, consumed, produced) = match self.layout {
            // Straight into the output queue: one vector per frame.
            ChannelOutputs::Vectors => {
                let out = io.outputs.get::<Complex32>(0)?;
                let y = out.reserve(k)?.unwrap_or_default();
                let room = (y.len() / k).min(FRAMES);
                let (consumed, produced) = self.kernel.process_window(x, end, &mut y[..room * k]);
                out.commit(produced);
                (room, 0, consumed, produced)
            }
            // Into the scratch, then to each channel's port.
            ChannelOutputs::Streams => {
                let (mut room, mut fullest) = (FRAMES, 0);
                for (o, out) in io.outputs.all::<Complex32>()?.enumerate() {
                    let free = out.reserve(1)?.map_or(0, |s| s.len());
                    if free < room {
                        (room, fullest) = (free, o);
                    }
                }
                let (consumed, produced) =
                    self.kernel
                        .process_window(x, end, &mut self.scratch[..room * k]);
                if produced > 0 {
                    self.scatter(&mut io.outputs, produced / k)?;
                }
                (room, fullest, consumed, produced)
            }
        };
        input.consume(consumed);
        if end && produced == 0 && room > 0 {
            return Ok(Work::Done);
        }
        if consumed == 0 && produced == 0 {
            let unit = if self.layout == ChannelOutputs::Vectors {
                k
            } else {
                1
            };
            return Ok(Work::NeedOutput {
                port: fullest,
                items: unit,
            });
        }
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Ratio {
            interpolation: 1,
            decimation: self.kernel.decimation() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::test_support::c32_noise;
    use crate::blocks::{VectorSink, VectorSource, VectorToStream};
    use sluice_runtime::{Graph, Rated, RunOptions};

    /// Both layouts in threaded graphs, small queues: every channel's stream equals the
    /// kernel's output for that channel.
    #[test]
    fn streams_and_vectors_carry_the_kernels_channels() {
        let (m, d) = (12, 6);
        let taps = Channelizer::prototype(m, 4).unwrap();
        // Eleven channels: one tile of eight ports and three single ones.
        let chosen = [5, 0, 11, 1, 2, 3, 4, 6, 7, 8, 9];
        let k = chosen.len();
        let x = c32_noise(6000, 9);
        let mut kernel = Channelizer::new(m, d, &taps, Some(&chosen)).unwrap();
        let mut want = vec![Complex32::default(); k * x.len()];
        let (_, p) = kernel.process(&x, &mut want);
        want.truncate(p);
        for layout in [ChannelOutputs::Streams, ChannelOutputs::Vectors] {
            let mut g = Graph::new();
            let src = g
                .add("src", VectorSource::new(x.clone()).max_chunk(500))
                .unwrap();
            let block = ChannelizerBlock::new(
                Channelizer::new(m, d, &taps, Some(&chosen)).unwrap(),
                layout,
            );
            let ch = g.add("ch", block).unwrap();
            g.connect_with(src, "out", ch, "in", Some(1024)).unwrap();
            let mut sinks = Vec::new();
            let ports: Vec<String> = match layout {
                ChannelOutputs::Streams => (0..k).map(|c| format!("out{c}")).collect(),
                ChannelOutputs::Vectors => vec!["out".into()],
            };
            for (i, port) in ports.iter().enumerate() {
                let (sink, data) = VectorSink::<Complex32>::new();
                let sink = g.add(&format!("sink{i}"), sink).unwrap();
                if layout == ChannelOutputs::Vectors {
                    let unpack = Rated::new(VectorToStream::<Complex32>::new(k));
                    let unpack = g.add("unpack", unpack).unwrap();
                    g.connect_with(ch, port, unpack, "in", Some(96)).unwrap();
                    g.connect(unpack, "out", sink, "in").unwrap();
                } else {
                    g.connect_with(ch, port, sink, "in", Some(96)).unwrap();
                }
                sinks.push(data);
            }
            g.run(&RunOptions::default()).unwrap();
            match layout {
                ChannelOutputs::Vectors => assert_eq!(sinks[0].items(), want),
                ChannelOutputs::Streams => {
                    for (slot, data) in sinks.iter().enumerate() {
                        let column: Vec<Complex32> =
                            want.iter().skip(slot).step_by(k).copied().collect();
                        assert_eq!(data.items(), column, "channel {}", chosen[slot]);
                    }
                }
            }
        }
    }
}
