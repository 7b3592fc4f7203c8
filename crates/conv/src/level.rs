//! One FDL level for all channels: FFT plans, frequency-domain delay lines, IR spectra, and
//! the block computation split into tasks (so the cooperative scheduler can slice it).

use rustfft::FftPlanner;

use crate::handshake::RaceBuf;
use crate::kernel::Mac;
use crate::rfft::SplitRealFft;
use crate::IrMatrix;

/// Partitions per MAC task (the cooperative scheduler's slicing grain).
const MAC_CHUNK: usize = 8;

/// One matrix path (input -> output) inside a level.
struct Path {
    /// Index into the level's active inputs.
    slot: usize,
    /// Non-zero partitions of this path in this level (<= level count).
    parts: usize,
    /// Packed split IR spectra, `parts * size` each, scaled by 1/(2*size).
    re: Vec<f32>,
    im: Vec<f32>,
}

/// A unit of work of one block.
#[derive(Clone, Copy, Debug)]
enum Task {
    /// Forward FFT of active input `slot` into its FDL.
    Fft { slot: usize },
    /// MAC of partitions `k0..k1` of path `path` of output `out` (zeroes the accumulator first
    /// when `first`).
    Mac {
        out: usize,
        path: usize,
        k0: usize,
        k1: usize,
        first: bool,
    },
    /// Inverse FFT of the accumulator into output slot of `out`.
    Ifft { out: usize },
}

/// Per-level data shared with the callback: output slots.
pub(crate) struct LevelOut {
    pub size: usize,
    pub nslots: usize,
    /// `outputs * nslots * size` samples: slot `s` of output `o` at `(o * nslots + s) * size`.
    pub buf: RaceBuf,
    /// Whether output `o` has any path in this level.
    pub active: Vec<bool>,
}

impl LevelOut {
    pub(crate) fn index(&self, out: usize, block: u64) -> usize {
        (out * self.nslots + (block % self.nslots as u64) as usize) * self.size
    }
}

/// The state of one level; owned by exactly one thread at a time.
pub(crate) struct LevelCore {
    pub size: usize,
    pub count: usize,
    fft: SplitRealFft,
    active_inputs: Vec<usize>,
    /// Per active input: `count` packed split spectra.
    fdl_re: Vec<f32>,
    fdl_im: Vec<f32>,
    /// Paths per output.
    paths: Vec<Vec<Path>>,
    acc_re: Vec<f32>,
    acc_im: Vec<f32>,
    tasks: Vec<Task>,
    /// Cumulative relative cost after each task.
    cum: Vec<f64>,
    mac: Mac,
}

impl LevelCore {
    /// Builds the level covering IR samples `[offset, offset + count * size)` of every path.
    pub(crate) fn new(
        planner: &mut FftPlanner<f32>,
        size: usize,
        count: usize,
        offset: usize,
        irs: &IrMatrix,
    ) -> Self {
        let mut fft = SplitRealFft::new(planner, size);
        let mut time = vec![0.0f32; 2 * size];
        let scale = 1.0 / (2 * size) as f32;

        let mut active_inputs = Vec::new();
        let mut paths: Vec<Vec<Path>> = (0..irs.outputs()).map(|_| Vec::new()).collect();
        for i in 0..irs.inputs() {
            for (o, out_paths) in paths.iter_mut().enumerate() {
                let Some(ir) = irs.get(i, o) else { continue };
                if ir.len() <= offset {
                    continue;
                }
                let seg = &ir[offset..ir.len().min(offset + count * size)];
                let parts = seg.len().div_ceil(size);
                // Skip all-zero trailing partitions.
                let mut parts_nz = 0;
                for k in 0..parts {
                    let p = &seg[k * size..seg.len().min((k + 1) * size)];
                    if p.iter().any(|&x| x != 0.0) {
                        parts_nz = k + 1;
                    }
                }
                if parts_nz == 0 {
                    continue;
                }
                let slot = match active_inputs.iter().position(|&a| a == i) {
                    Some(s) => s,
                    None => {
                        active_inputs.push(i);
                        active_inputs.len() - 1
                    }
                };
                let mut re = vec![0.0f32; parts_nz * size];
                let mut im = vec![0.0f32; parts_nz * size];
                for k in 0..parts_nz {
                    let p = &seg[k * size..seg.len().min((k + 1) * size)];
                    time.fill(0.0);
                    time[..p.len()].copy_from_slice(p);
                    let (re, im) = (
                        &mut re[k * size..(k + 1) * size],
                        &mut im[k * size..(k + 1) * size],
                    );
                    fft.forward(&time, &[], re, im);
                    re.iter_mut().chain(im.iter_mut()).for_each(|v| *v *= scale);
                }
                out_paths.push(Path {
                    slot,
                    parts: parts_nz,
                    re,
                    im,
                });
            }
        }
        let fdl_len = active_inputs.len() * count * size;
        let mut core = Self {
            size,
            count,
            fft,
            active_inputs,
            fdl_re: resident_zeros(fdl_len),
            fdl_im: resident_zeros(fdl_len),
            paths,
            acc_re: vec![0.0; size],
            acc_im: vec![0.0; size],
            tasks: Vec::new(),
            cum: Vec::new(),
            mac: Mac::detect(),
        };
        core.build_tasks();
        core
    }

    fn build_tasks(&mut self) {
        let n = (2 * self.size) as f64;
        let fft_cost = 1.5 * n * n.log2().max(1.0) / 2.0;
        let mac_cost = self.size as f64;
        let mut total = 0.0;
        for slot in 0..self.active_inputs.len() {
            self.tasks.push(Task::Fft { slot });
            total += fft_cost;
            self.cum.push(total);
        }
        for (out, paths) in self.paths.iter().enumerate() {
            if paths.is_empty() {
                continue;
            }
            let mut first = true;
            for (pi, p) in paths.iter().enumerate() {
                let mut k0 = 0;
                while k0 < p.parts {
                    let k1 = (k0 + MAC_CHUNK).min(p.parts);
                    self.tasks.push(Task::Mac {
                        out,
                        path: pi,
                        k0,
                        k1,
                        first,
                    });
                    first = false;
                    total += mac_cost * (k1 - k0) as f64;
                    self.cum.push(total);
                    k0 = k1;
                }
            }
            self.tasks.push(Task::Ifft { out });
            total += fft_cost;
            self.cum.push(total);
        }
    }

    /// Whether output `o` gets anything from this level.
    pub(crate) fn output_active(&self, o: usize) -> bool {
        !self.paths[o].is_empty()
    }

    /// Index of the first task not to run in slice `c` of `of` (cost-balanced).
    pub(crate) fn slice_end(&self, c: usize, of: usize) -> usize {
        if c + 1 >= of {
            return self.tasks.len();
        }
        let total = self.cum.last().copied().unwrap_or(0.0);
        let target = total * (c + 1) as f64 / of as f64;
        self.cum.partition_point(|&x| x <= target)
    }

    /// Clears the delay lines (after `reset`).
    pub(crate) fn clear(&mut self) {
        self.fdl_re.fill(0.0);
        self.fdl_im.fill(0.0);
    }

    /// Runs the whole of block `j`.
    ///
    /// # Safety
    /// See [`LevelCore::run_tasks`].
    pub(crate) unsafe fn run_block(&mut self, j: u64, input: &[RaceBuf], out: &LevelOut) {
        // SAFETY: forwarded caller contract.
        unsafe { self.run_tasks(j, 0, self.tasks.len(), input, out) }
    }

    /// Runs tasks `from..to` of block `j`: reads input ring samples `[(j-1)S, (j+1)S)` and
    /// writes output slot `j % nslots`.
    ///
    /// # Safety
    /// Under the protocol of [`crate::handshake`]: nobody writes those input samples, and nobody
    /// reads or writes that output slot, while this runs.
    pub(crate) unsafe fn run_tasks(
        &mut self,
        j: u64,
        from: usize,
        to: usize,
        input: &[RaceBuf],
        out: &LevelOut,
    ) {
        let s = self.size;
        let fdl_slot = (j % self.count as u64) as usize;
        for t in from..to {
            match self.tasks[t] {
                Task::Fft { slot } => {
                    let ring = &input[self.active_inputs[slot]];
                    let r = ring.len();
                    let start = ((j as i64 - 1) * s as i64).rem_euclid(r as i64) as usize;
                    let first = (r - start).min(2 * s);
                    let base = (slot * self.count + fdl_slot) * s;
                    let (fft, re, im) = (&mut self.fft, &mut self.fdl_re, &mut self.fdl_im);
                    // SAFETY: the caller guarantees these ring samples are not being written.
                    unsafe {
                        ring.read(start, first, |head| {
                            ring.read(0, 2 * s - first, |tail| {
                                fft.forward(
                                    head,
                                    tail,
                                    &mut re[base..base + s],
                                    &mut im[base..base + s],
                                )
                            })
                        })
                    };
                }
                Task::Mac {
                    out: o,
                    path,
                    k0,
                    k1,
                    first,
                } => {
                    if first {
                        self.acc_re.fill(0.0);
                        self.acc_im.fill(0.0);
                    }
                    let p = &self.paths[o][path];
                    let count = self.count;
                    let xbase = p.slot * count * s;
                    let x_at = |k: usize| {
                        let fs = (fdl_slot + count - k % count) % count;
                        xbase + fs * s
                    };
                    let (fr, fi) = (&self.fdl_re, &self.fdl_im);
                    let mut k = k0;
                    while k + 4 <= k1 {
                        let xs = [x_at(k), x_at(k + 1), x_at(k + 2), x_at(k + 3)];
                        let hs = [k * s, (k + 1) * s, (k + 2) * s, (k + 3) * s];
                        self.mac.run::<4>(
                            &mut self.acc_re,
                            &mut self.acc_im,
                            xs.map(|x| &fr[x..x + s]),
                            xs.map(|x| &fi[x..x + s]),
                            hs.map(|h| &p.re[h..h + s]),
                            hs.map(|h| &p.im[h..h + s]),
                        );
                        k += 4;
                    }
                    while k < k1 {
                        let x = x_at(k);
                        let h = k * s;
                        self.mac.run::<1>(
                            &mut self.acc_re,
                            &mut self.acc_im,
                            [&fr[x..x + s]],
                            [&fi[x..x + s]],
                            [&p.re[h..h + s]],
                            [&p.im[h..h + s]],
                        );
                        k += 1;
                    }
                }
                Task::Ifft { out: o } => {
                    let idx = out.index(o, j);
                    let (fft, re, im) = (&mut self.fft, &self.acc_re, &self.acc_im);
                    // SAFETY: the caller guarantees exclusive access to this output slot.
                    unsafe { out.buf.write(idx, s, |dst| fft.inverse_tail(re, im, dst)) };
                }
            }
        }
    }
}

/// `n` zeros written one by one, so every page is mapped now rather than faulted in later by
/// the real-time threads (`vec![0.0; n]` gets lazily mapped pages from `calloc`/`mmap`).
fn resident_zeros(n: usize) -> Vec<f32> {
    let mut v = Vec::with_capacity(n);
    v.resize(n, 0.0);
    v
}
