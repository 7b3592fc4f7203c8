//! The nodes of `sluice bench chain`: a source that writes a known pattern into every item, a
//! Saxpy stage (y = a·x + b on f32), and a sink that checks every item it reads, so that no
//! variant can win by skipping work.

use num_complex::Complex32;
use sluice_runtime::{Item, Node, NodeError, Ports, Work, WorkIo};

/// Saxpy's constants: y = A·x + B.
pub const SAXPY_A: f32 = 1.0001;
/// See [`SAXPY_A`].
pub const SAXPY_B: f32 = 0.5;
/// The pattern repeats every this many items (a power of two).
const PERIOD: u64 = 1024;

/// Items the chain can carry: each knows its pattern value at index `i`.
pub trait Pattern: Item {
    /// The value the source writes at absolute index `i`.
    fn at(i: u64) -> Self;
}

impl Pattern for Complex32 {
    fn at(i: u64) -> Self {
        // The index's bits, so that a lost, repeated or reordered item is caught.
        Complex32::new(f32::from_bits(i as u32), f32::from_bits((i >> 32) as u32))
    }
}

impl Pattern for f32 {
    fn at(i: u64) -> Self {
        (i % PERIOD) as f32
    }
}

/// Writes `Pattern::at(i)` into every item i, forever (a `head` bounds it).
pub struct PatternSource<T> {
    next: u64,
    _items: std::marker::PhantomData<T>,
}

impl<T> PatternSource<T> {
    /// A source starting at index 0.
    pub fn new() -> Self {
        PatternSource {
            next: 0,
            _items: std::marker::PhantomData,
        }
    }
}

impl<T: Pattern> Node for PatternSource<T> {
    fn ports(&self) -> Ports {
        Ports::new().output::<T>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let out = io.outputs.get::<T>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        for (i, s) in space.iter_mut().enumerate() {
            *s = T::at(self.next + i as u64);
        }
        let n = space.len();
        out.commit(n);
        self.next += n as u64;
        Ok(Work::Progress)
    }
}

/// y = a·x + b on every item.
pub struct Saxpy;

impl Node for Saxpy {
    fn ports(&self) -> Ports {
        Ports::new().input::<f32>("in").output::<f32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<f32>(0)?;
        let output = io.outputs.get::<f32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = x.len().min(y.len());
        for (o, i) in y[..n].iter_mut().zip(&x[..n]) {
            *o = SAXPY_A * i + SAXPY_B;
        }
        input.consume(n);
        output.commit(n);
        Ok(Work::Progress)
    }
}

/// Reads every item and compares its bits with what the chain must deliver at that index. A
/// mismatch fails the run, naming the index. The comparison XOR-accumulates 32-bit words, which
/// the compiler vectorises, so the check costs a fraction of a copy.
pub struct CheckSink<T> {
    /// For Saxpy: the values expected at indices 0..PERIOD (the pattern repeats). For copies:
    /// empty (the expected value is the index itself).
    table: Vec<u32>,
    seen: u64,
    _items: std::marker::PhantomData<T>,
}

impl<T: Pattern> CheckSink<T> {
    /// A sink expecting the pattern passed through `stages` copies, or Saxpy stages (`saxpy`).
    pub fn new(stages: usize, saxpy: bool) -> Self {
        let table = if saxpy {
            (0..PERIOD)
                .map(|i| {
                    let mut x = f32::at(i);
                    for _ in 0..stages {
                        x = SAXPY_A * x + SAXPY_B;
                    }
                    x.to_bits()
                })
                .collect()
        } else {
            Vec::new()
        };
        CheckSink {
            table,
            seen: 0,
            _items: std::marker::PhantomData,
        }
    }

    /// Whether `items`, starting at absolute index `start`, are all as expected.
    fn all_expected(&self, start: u64, items: &[T]) -> bool {
        let words: &[u32] = bytemuck::cast_slice(items);
        if self.table.is_empty() {
            // Complex32 at index i holds the two halves of i.
            let diff = words.chunks_exact(2).enumerate().fold(0u32, |d, (k, w)| {
                let i = start + k as u64;
                d | (w[0] ^ i as u32) | (w[1] ^ (i >> 32) as u32)
            });
            diff == 0
        } else {
            let period = self.table.len();
            let mut diff = 0u32;
            let mut offset = (start % period as u64) as usize;
            for chunk in words.chunks(period) {
                let (head, tail) = chunk.split_at(chunk.len().min(period - offset));
                diff |= head
                    .iter()
                    .zip(&self.table[offset..])
                    .fold(0, |d, (a, b)| d | (a ^ b));
                diff |= tail
                    .iter()
                    .zip(&self.table)
                    .fold(0, |d, (a, b)| d | (a ^ b));
                offset = (offset + chunk.len()) % period;
            }
            diff == 0
        }
    }
}

impl<T: Pattern> Node for CheckSink<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        if !self.all_expected(self.seen, x) {
            let wrong = (0..x.len())
                .find(|&k| !self.all_expected(self.seen + k as u64, &x[k..k + 1]))
                .unwrap_or(0);
            return Err(NodeError::msg(format!(
                "item {} is not the pattern the source wrote",
                self.seen + wrong as u64
            )));
        }
        let n = x.len();
        input.consume(n);
        self.seen += n as u64;
        Ok(Work::Progress)
    }
}
