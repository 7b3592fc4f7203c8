//! Whole streams through a [`Convolver`]: input in chunks of any length, output with the
//! engine's latency removed (output frame `n` is the convolution at time `n`), and the tail
//! (`longest IR − 1` frames) after [`StreamConvolver::finish`].
//!
//! This is the loop behind [`convolve_offline`](crate::convolve_offline) and the `convolve`
//! graph block of `sluice-blocks`: chunks are gathered into blocks of the configured size (the
//! last one padded with zeros), and whole blocks that arrive aligned are handed to the engine
//! straight from the caller's slices, with no copy.

use crate::{ConvError, Convolver, ConvolverConfig, IrMatrix};

/// A [`Convolver`] over whole streams; see the module docs.
pub struct StreamConvolver {
    conv: Convolver,
    block: usize,
    /// One block per input, filled up to `fill`.
    in_buf: Vec<Vec<f32>>,
    fill: usize,
    /// One block per output, frames `out_at..out_len` not yet handed out.
    out_buf: Vec<Vec<f32>>,
    out_at: usize,
    out_len: usize,
    /// Latency frames still to drop from the engine's output.
    skip: usize,
    frames_in: u64,
    frames_out: u64,
    tail: u64,
    ending: bool,
}

impl std::fmt::Debug for StreamConvolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamConvolver")
            .field("block", &self.block)
            .field("frames_in", &self.frames_in)
            .field("frames_out", &self.frames_out)
            .finish_non_exhaustive()
    }
}

impl StreamConvolver {
    /// A convolver with `config` and `irs` (see [`Convolver::new`]).
    pub fn new(config: ConvolverConfig, irs: &IrMatrix) -> Result<Self, ConvError> {
        let conv = Convolver::new(config, irs)?;
        let block = conv.config().block_size;
        Ok(StreamConvolver {
            block,
            in_buf: vec![vec![0.0; block]; irs.inputs()],
            fill: 0,
            out_buf: vec![vec![0.0; block]; irs.outputs()],
            out_at: 0,
            out_len: 0,
            skip: conv.latency(),
            frames_in: 0,
            frames_out: 0,
            tail: irs.max_len().saturating_sub(1) as u64,
            ending: false,
            conv,
        })
    }

    /// The engine.
    pub fn convolver(&self) -> &Convolver {
        &self.conv
    }

    /// No more input: from now on [`StreamConvolver::process`] takes none and gives the tail.
    pub fn finish(&mut self) {
        self.ending = true;
    }

    /// Whether every frame, tail included, has been handed out (after
    /// [`StreamConvolver::finish`]).
    pub fn is_done(&self) -> bool {
        self.ending && self.frames_out >= self.frames_in + self.tail
    }

    /// Takes frames from `inputs` (one slice per input channel, all the same length; ignored
    /// after [`StreamConvolver::finish`]) and writes frames into `outputs` (one per output
    /// channel, all the same length), as many as both allow; returns `(consumed, produced)`.
    pub fn process(
        &mut self,
        inputs: &[&[f32]],
        outputs: &mut [&mut [f32]],
    ) -> Result<(usize, usize), ConvError> {
        let n_in = same_length("input", inputs.iter().map(|x| x.len()), self.in_buf.len())?;
        let n_out = same_length(
            "output",
            outputs.iter().map(|y| y.len()),
            self.out_buf.len(),
        )?;
        let n_in = if self.ending { 0 } else { n_in };
        let (b, mut consumed, mut produced) = (self.block, 0, 0);
        loop {
            if self.out_at < self.out_len {
                let left = if self.ending {
                    self.frames_in + self.tail - self.frames_out
                } else {
                    u64::MAX
                };
                let k = (self.out_len - self.out_at)
                    .min(n_out - produced)
                    .min(left.min(usize::MAX as u64) as usize);
                if left == 0 {
                    self.out_at = self.out_len; // engine output past the tail
                    continue;
                }
                if k == 0 {
                    break; // no room
                }
                for (y, buf) in outputs.iter_mut().zip(&self.out_buf) {
                    y[produced..produced + k].copy_from_slice(&buf[self.out_at..self.out_at + k]);
                }
                (self.out_at, produced) = (self.out_at + k, produced + k);
                self.frames_out += k as u64;
                continue;
            }
            if self.is_done() {
                break;
            }
            let aligned = self.fill == 0 && self.skip == 0 && !self.ending;
            if aligned && n_in - consumed >= b && n_out - produced >= b {
                // A whole block straight from the caller's slices into the caller's.
                self.conv.process_at(inputs, consumed, outputs, produced)?;
                (consumed, produced) = (consumed + b, produced + b);
                self.frames_in += b as u64;
                self.frames_out += b as u64;
                continue;
            }
            if self.ending {
                for buf in &mut self.in_buf {
                    buf[self.fill..].fill(0.0);
                }
            } else {
                let k = (b - self.fill).min(n_in - consumed);
                for (buf, x) in self.in_buf.iter_mut().zip(inputs) {
                    buf[self.fill..self.fill + k].copy_from_slice(&x[consumed..consumed + k]);
                }
                (self.fill, consumed) = (self.fill + k, consumed + k);
                self.frames_in += k as u64;
                if self.fill < b {
                    break; // needs more input
                }
            }
            self.fill = 0;
            self.conv
                .process_at(&self.in_buf, 0, &mut self.out_buf, 0)?;
            let dropped = self.skip.min(b);
            self.skip -= dropped;
            (self.out_at, self.out_len) = (dropped, b);
        }
        Ok((consumed, produced))
    }
}

/// The common length of a set of channel slices, or the error naming the first that differs.
fn same_length(
    what: &'static str,
    mut lengths: impl Iterator<Item = usize>,
    expected: usize,
) -> Result<usize, ConvError> {
    let first = lengths.next();
    let mut count = usize::from(first.is_some());
    let len = first.unwrap_or(0);
    for (channel, l) in lengths.enumerate() {
        count += 1;
        if l != len {
            return Err(ConvError::BufferLength {
                what,
                channel: channel + 1,
                expected: len,
                got: l,
            });
        }
    }
    if count != expected {
        return Err(ConvError::ChannelCount {
            what,
            expected,
            got: count,
        });
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{convolve_offline, Scheduling};
    use rand::{Rng, SeedableRng};

    fn direct(x: &[f32], h: &[f32]) -> Vec<f64> {
        let mut y = vec![0.0f64; x.len() + h.len() - 1];
        for (i, &a) in x.iter().enumerate() {
            for (j, &b) in h.iter().enumerate() {
                y[i + j] += f64::from(a) * f64::from(b);
            }
        }
        y
    }

    /// Random chunks in and random room out give the offline result bit for bit, which is the
    /// direct convolution: for a zero-latency block and for one the engine buffers (latency).
    #[test]
    fn any_chunking_gives_the_offline_result_and_the_full_tail() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let x: Vec<f32> = (0..3000).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let h: Vec<f32> = (0..700)
            .map(|k| (-(k as f32) / 90.0).exp() * if k % 3 == 0 { -1.0 } else { 0.5 })
            .collect();
        let irs = IrMatrix::mono_per_channel(1, &h);
        for block in [64, 100] {
            let config = ConvolverConfig {
                block_size: block,
                scheduling: Scheduling::SingleThread,
                ..Default::default()
            };
            let offline = convolve_offline(&irs, &[&x], &config).unwrap().remove(0);
            let want = direct(&x, &h);
            assert_eq!(offline.len(), want.len());
            for (g, w) in offline.iter().zip(&want) {
                assert!((f64::from(*g) - w).abs() < 1e-4, "block {block}");
            }
            let mut s = StreamConvolver::new(config, &irs).unwrap();
            let (mut read, mut out) = (0, Vec::new());
            let mut room = vec![0.0f32; 500];
            while !s.is_done() {
                let end = (read + rng.gen_range(0..300)).min(x.len());
                if read == x.len() {
                    s.finish();
                }
                let n = rng.gen_range(0..room.len());
                let (c, p) = s.process(&[&x[read..end]], &mut [&mut room[..n]]).unwrap();
                read += c;
                out.extend_from_slice(&room[..p]);
            }
            assert_eq!(out, offline, "block {block}");
        }
        let mut s = StreamConvolver::new(ConvolverConfig::default(), &irs).unwrap();
        let err = s
            .process(&[&x[..3], &x[..3]], &mut [&mut room_of(3)])
            .unwrap_err();
        assert!(err.to_string().contains("input"), "{err}");
    }

    fn room_of(n: usize) -> Vec<f32> {
        vec![0.0; n]
    }
}
