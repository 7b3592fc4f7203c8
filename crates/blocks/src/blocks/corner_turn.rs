//! Corner turn: each `rows × cols` matrix of the stream (row-major) leaves transposed
//! (`cols × rows`), the layout change between a channelizer's per-time spectra and per-channel
//! time series, or a beamformer's per-sensor and per-beam orders. The transpose runs on the
//! copy engine's cache-blocked kernel, straight from the input window into the output
//! reservation (on the caller below the engine's break-even size, on an engine worker
//! above it).

use sluice_copy::{Channel, ItemSize, Op, Plane, Transform};
use sluice_runtime::{Item, Node, NodeError, Ports, Work, WorkIo};
use std::marker::PhantomData;

use crate::queue_copy::shared_channel;

/// Transposes every `rows × cols` matrix of the stream.
pub struct CornerTurn<T> {
    rows: usize,
    cols: usize,
    op: Op,
    channel: Channel,
    _items: PhantomData<T>,
}

impl<T> std::fmt::Debug for CornerTurn<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CornerTurn")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .finish()
    }
}

impl<T: Item> CornerTurn<T> {
    /// A corner turn of `rows × cols` matrices of `T` (1, 2, 4, 8 or 16 bytes).
    pub fn new(rows: usize, cols: usize) -> Result<Self, NodeError> {
        if rows == 0 || cols == 0 {
            return Err(NodeError::msg(
                "corner turn needs rows and cols of at least 1",
            ));
        }
        let item = ItemSize::from_bytes(std::mem::size_of::<T>())
            .map_err(|e| NodeError::caused("corner turn", e))?;
        let b = item.bytes();
        let op = Op::Rotate {
            src: Plane {
                offset: 0,
                stride: cols * b,
            },
            dst: Plane {
                offset: 0,
                stride: rows * b,
            },
            width: cols,
            height: rows,
            item,
            transform: Transform::TRANSPOSE,
        };
        let channel = shared_channel().map_err(|e| NodeError::caused("corner turn", e))?;
        Ok(CornerTurn {
            rows,
            cols,
            op,
            channel,
            _items: PhantomData,
        })
    }

    fn matrix(&self) -> usize {
        self.rows * self.cols
    }
}

impl<T: Item> Node for CornerTurn<T> {
    fn ports(&self) -> Ports {
        Ports::new()
            .input_window::<T>("in", self.matrix())
            .output_window::<T>("out", self.matrix())
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let m = self.matrix();
        let input = io.inputs.get::<T>(0)?;
        let output = io.outputs.get::<T>(0)?;
        let Some(x) = input.window(m)? else {
            return Ok(Work::NeedInput { port: 0, items: m });
        };
        if x.len() < m {
            // End of stream: a partial matrix is dropped.
            let rest = x.len();
            input.consume(rest);
            return Ok(Work::Done);
        }
        let Some(y) = output.reserve(m)? else {
            return Ok(Work::NeedOutput { port: 0, items: m });
        };
        let k = (x.len() / m).min(y.len() / m);
        for j in 0..k {
            let src: &[u8] = bytemuck::cast_slice(&x[j * m..(j + 1) * m]);
            let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut y[j * m..(j + 1) * m]);
            self.channel
                .run_slices(self.op.clone(), src, dst)
                .map_err(|e| NodeError::caused("corner turn", e))?;
        }
        input.consume(k * m);
        output.commit(k * m);
        Ok(Work::Progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::vector::{VectorSink, VectorSource};
    use num_complex::Complex32;
    use sluice_runtime::{Graph, RunOptions};

    fn run<T: Item + PartialEq + std::fmt::Debug>(
        x: Vec<T>,
        rows: usize,
        cols: usize,
        chunk: usize,
    ) -> Vec<T> {
        let mut g = Graph::new();
        let src = g.add("src", VectorSource::new(x).max_chunk(chunk)).unwrap();
        let ct = g
            .add("ct", CornerTurn::<T>::new(rows, cols).unwrap())
            .unwrap();
        let (sink, data) = VectorSink::<T>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", ct, "in").unwrap();
        g.connect(ct, "out", sink, "in").unwrap();
        g.run(&RunOptions::default()).unwrap();
        data.items()
    }

    fn reference<T: Copy>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
        let m = rows * cols;
        let mut out = Vec::new();
        for mat in x.chunks_exact(m) {
            for c in 0..cols {
                for r in 0..rows {
                    out.push(mat[r * cols + c]);
                }
            }
        }
        out
    }

    #[test]
    fn transposes_every_matrix_and_drops_a_partial_one() {
        let (rows, cols) = (48, 80);
        let x: Vec<Complex32> = (0..rows * cols * 5 + 7)
            .map(|i| Complex32::new(i as f32, -(i as f32)))
            .collect();
        let got = run(x.clone(), rows, cols, 1000);
        assert_eq!(got, reference(&x, rows, cols));
        // Big matrices go through an engine worker (above break-even).
        let x: Vec<u32> = (0..512 * 384 * 2).collect();
        assert_eq!(run(x.clone(), 512, 384, 100_000), reference(&x, 512, 384));
    }

    #[test]
    fn bad_shapes_and_items_are_errors() {
        assert!(CornerTurn::<f32>::new(0, 4).is_err());
        assert!(CornerTurn::<[u8; 3]>::new(2, 2).is_err());
    }
}
