//! Polyphase filter-bank channelizer (analysis): `M` channels centred on `k·fs/M`, for any
//! `M` (the FFT is rustfft's, any size), one output frame every `D` input samples (`D = M`:
//! critically sampled; `D = M/2`: 2× oversampled; any `D ≤ M` works), only the chosen
//! channels written. Channel `k`, frame `n`, with prototype low-pass `h` of `L = P·M` taps:
//!
//! `y_k[n] = Σ_i h[i] · x[nD − i] · e^{−j2πk(nD − i)/M}`, `x[n] = 0` for `n < 0`:
//!
//! channel `k` shifted to 0 Hz, low-passed by `h`, decimated by `D` (the f64 reference of the
//! tests computes exactly this). Splitting `i = qM + r` gives the polyphase form: with the
//! window `w` of the `L` samples ending at `nD`,
//! `u[r] = Σ_j H[j][r] · w[jM + r]` (`H[j][r] = h[(P−1−j)M + M−1−r]`, one multiply-add per tap
//! across all branches: [`super::pfb_mac`]), then `y_k[n] = e^{−j2πk(nD+1)/M} · FFT(u)[k]`.
//! Sixteen frames share each tap load and go through the FFT together. History lives in an
//! internal buffer (zeros before the first sample).

use super::pfb_mac::{mac, FRAMES};
use super::{DspError, FftPlanCache};
use num_complex::Complex32;
use rustfft::Fft;
use std::f64::consts::TAU;
use std::sync::Arc;

/// Input samples buffered per round (beyond the history), at least; the buffer also holds four
/// times the history, so moving the history to the front costs little per sample.
const ROUND: usize = 8192;

/// A channelizer; see the module docs.
pub struct Channelizer {
    m: usize,
    decimation: usize,
    /// `H`, `P × 2M` floats (each tap twice).
    h: Vec<f32>,
    /// The channels written, in output order.
    channels: Vec<usize>,
    fft: Arc<dyn Fft<f32>>,
    /// `FRAMES` FFT inputs of `M` points, and the FFT's scratch.
    frames: Vec<Complex32>,
    scratch: Vec<Complex32>,
    /// `e^{−j2πm/M}` for `m < M`.
    turns: Vec<Complex32>,
    /// Input samples; `buf[0]` is the first sample of the next frame's window.
    buf: Vec<Complex32>,
    filled: usize,
    /// [`Channelizer::process_window`]'s position: zeros still ahead of the next frame's window
    /// (the frames before the stream's start), then where in the next window that frame's
    /// window starts.
    lead: usize,
    skip: usize,
    /// Per chosen channel `c`: `c·(nD + 1) mod M` for the next frame `n` (the index of its
    /// phase turn), and how much it grows per frame (`c·D mod M`).
    turn: Vec<usize>,
    turn_step: Vec<usize>,
    /// The phase factors repeat every `M / gcd(D, M)` frames: row `r` holds the chosen
    /// channels' factors for frames `n ≡ r` (empty when that table would be too large, and
    /// `turn` is used instead); `row` is the next frame's.
    rows: Vec<Complex32>,
    row: usize,
    /// The chosen channels as runs of consecutive bins, `(first output, first bin, length)`:
    /// each run's factors multiply a slice of the spectrum with the SIMD complex multiply (all
    /// channels in order are one run; a band of channels that wraps past bin `M − 1`, as the
    /// AMPS receiver's, two).
    runs: Vec<(usize, usize, usize)>,
}

/// Largest phase-factor table kept (entries); small in tests so the fallback runs too.
const MAX_ROWS: usize = if cfg!(test) { 64 } else { 1 << 20 };

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl std::fmt::Debug for Channelizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channelizer")
            .field("channels", &self.m)
            .field("decimation", &self.decimation)
            .field("taps_per_branch", &self.taps_per_branch())
            .field("outputs", &self.channels.len())
            .finish()
    }
}

impl Channelizer {
    /// `m` channels, one frame per `decimation` samples (1 ≤ `decimation` ≤ `m`), prototype
    /// `taps` (zero-padded to a multiple of `m`), writing `outputs` (channel indices, each
    /// below `m`, no repeats; `None` for all, in order).
    pub fn new(
        m: usize,
        decimation: usize,
        taps: &[f32],
        outputs: Option<&[usize]>,
    ) -> Result<Self, DspError> {
        let invalid = |name, value: String, expected| DspError::InvalidDesign {
            name,
            value,
            expected,
        };
        if m < 2 {
            return Err(invalid("channels", m.to_string(), "at least 2"));
        }
        if decimation == 0 || decimation > m {
            return Err(invalid(
                "decimation",
                decimation.to_string(),
                "between 1 and the number of channels",
            ));
        }
        if taps.is_empty() {
            return Err(DspError::EmptyTaps);
        }
        let channels: Vec<usize> = outputs.map_or_else(|| (0..m).collect(), <[usize]>::to_vec);
        for (i, &c) in channels.iter().enumerate() {
            if c >= m || channels[..i].contains(&c) {
                return Err(invalid(
                    "outputs",
                    format!("{channels:?}"),
                    "distinct channel indices below the number of channels",
                ));
            }
        }
        if channels.is_empty() {
            return Err(invalid("outputs", "[]".into(), "at least one channel"));
        }
        let p = taps.len().div_ceil(m);
        let tap = |i: usize| taps.get(i).copied().unwrap_or(0.0);
        let h = (0..p)
            .flat_map(|j| (0..m).map(move |r| tap((p - 1 - j) * m + m - 1 - r)))
            .flat_map(|t| [t, t])
            .collect();
        let fft = FftPlanCache::global().forward(m);
        let scratch = vec![Complex32::default(); fft.get_inplace_scratch_len()];
        let turns: Vec<Complex32> = (0..m)
            .map(|i| {
                let (s, c) = (-TAU * i as f64 / m as f64).sin_cos();
                Complex32::new(c as f32, s as f32)
            })
            .collect();
        let history = p * m - 1;
        let turn_step = channels.iter().map(|&c| (c * decimation) % m).collect();
        let period = m / gcd(decimation, m);
        let rows = if period * channels.len() <= MAX_ROWS {
            (0..period)
                .flat_map(|r| {
                    channels
                        .iter()
                        .map(move |&c| (c * (r * decimation + 1)) % m)
                })
                .map(|i| turns[i])
                .collect()
        } else {
            Vec::new()
        };
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        for (slot, &c) in channels.iter().enumerate() {
            match runs.last_mut() {
                Some((_, first, len)) if *first + *len == c => *len += 1,
                _ => runs.push((slot, c, 1)),
            }
        }
        Ok(Channelizer {
            m,
            decimation,
            h,
            fft,
            frames: vec![Complex32::default(); FRAMES * m],
            scratch,
            turns,
            buf: vec![Complex32::default(); history + ROUND.max(4 * history)],
            filled: history,
            lead: history,
            skip: 0,
            turn: channels.clone(),
            turn_step,
            rows,
            row: 0,
            runs,
            channels,
        })
    }

    /// The default prototype for `m` channels with `taps_per_branch` taps per branch: a
    /// Kaiser-windowed (β = 9) low-pass of `m·taps_per_branch` taps cutting off at the channel
    /// edge (`0.5/m` cycles/sample, −6 dB), unit gain at 0 Hz. With 18 taps per branch its
    /// stop band starts about `0.66/m` from a channel's centre, more than 90 dB down, so a
    /// tone at one channel's centre leaks into no other channel above −90 dB (the tests check
    /// 60 dB).
    pub fn prototype(m: usize, taps_per_branch: usize) -> Result<Vec<f32>, DspError> {
        if m < 2 || taps_per_branch == 0 {
            return Err(DspError::InvalidDesign {
                name: "taps_per_branch",
                value: format!("{taps_per_branch} (with {m} channels)"),
                expected: "at least 1, with at least 2 channels",
            });
        }
        super::lowpass(
            m * taps_per_branch,
            0.5 / m as f64,
            super::Window::Kaiser { beta: 9.0 },
        )
    }

    /// Number of channels `M`.
    pub fn channels(&self) -> usize {
        self.m
    }

    /// Input samples per output frame `D`.
    pub fn decimation(&self) -> usize {
        self.decimation
    }

    /// Prototype taps per branch `P`.
    pub fn taps_per_branch(&self) -> usize {
        self.h.len() / (2 * self.m)
    }

    /// The channels written, in output order (each frame holds one sample of each).
    pub fn outputs(&self) -> &[usize] {
        &self.channels
    }

    /// Back to the initial state (zero history).
    pub fn reset(&mut self) {
        self.buf.fill(Complex32::default());
        self.filled = self.taps_per_branch() * self.m - 1;
        (self.lead, self.skip) = (self.filled, 0);
        self.turn.copy_from_slice(&self.channels);
        self.row = 0;
    }

    /// Consumes input (all of it, unless `output` fills up first) and writes the frames it
    /// completes, each one sample per chosen channel in [`Channelizer::outputs`] order;
    /// returns `(consumed, produced)` (`produced` in samples: frames × chosen channels).
    pub fn process(&mut self, input: &[Complex32], output: &mut [Complex32]) -> (usize, usize) {
        let (len, d, k) = (
            self.taps_per_branch() * self.m,
            self.decimation,
            self.channels.len(),
        );
        let room = output.len() / k;
        let (mut consumed, mut frames) = (0, 0);
        loop {
            let ready = if self.filled >= len {
                (self.filled - len) / d + 1
            } else {
                0
            };
            let n = ready.min(room - frames);
            let mut done = 0;
            while done < n {
                let batch = FRAMES.min(n - done);
                self.run(done * d, batch, &mut output[(frames + done) * k..]);
                done += batch;
            }
            frames += n;
            self.buf.copy_within(n * d..self.filled, 0);
            self.filled -= n * d;
            let take = (self.buf.len() - self.filled).min(input.len() - consumed);
            if take == 0 || n < ready {
                return (consumed, frames * k);
            }
            self.buf[self.filled..self.filled + take]
                .copy_from_slice(&input[consumed..consumed + take]);
            self.filled += take;
            consumed += take;
        }
    }

    /// Input samples one frame's window spans (`P·M`): the history a caller of
    /// [`Channelizer::process_window`] keeps is one less.
    pub fn window_len(&self) -> usize {
        self.taps_per_branch() * self.m
    }

    /// Like [`Channelizer::process`], but reading the input where it lies, for a caller whose
    /// queue keeps the history: `window` starts at the first sample not yet consumed (the
    /// stream's first sample on the first call) and, unless `end` says the stream is over,
    /// the caller keeps the samples it is not told to consume, so the next window starts with
    /// them. Returns `(consume, produced)` like `process`. The frames whose windows reach back
    /// before the stream's start (zeros there) go through the internal buffer; every later
    /// one is computed straight from `window`. Do not mix with `process` on one stream.
    pub fn process_window(
        &mut self,
        window: &[Complex32],
        end: bool,
        output: &mut [Complex32],
    ) -> (usize, usize) {
        let (len, d, k) = (self.window_len(), self.decimation, self.channels.len());
        let room = output.len() / k;
        let mut frames = 0;
        // The first frames: their windows begin `lead` zeros before the stream.
        while self.lead > 0 && frames < room {
            let have = window
                .len()
                .min(len - 1 + FRAMES * d)
                .min(self.buf.len() - self.lead);
            let ready = if self.lead + have >= len {
                ((self.lead + have - len) / d + 1).min(self.lead.div_ceil(d))
            } else {
                0
            };
            let batch = ready.min(room - frames).min(FRAMES);
            if batch == 0 {
                // Too little input for the next frame: at the end, there is no more.
                let consume = if end { window.len() } else { 0 };
                return (consume, frames * k);
            }
            self.buf[..self.lead].fill(Complex32::default());
            self.buf[self.lead..self.lead + have].copy_from_slice(&window[..have]);
            self.filled = self.lead + have;
            self.run(0, batch, &mut output[frames * k..]);
            frames += batch;
            // The next frame's window starts `batch·D` samples later: fewer zeros, or
            // (once past them) that many samples into the stream.
            if batch * d >= self.lead {
                self.skip = batch * d - self.lead;
                self.lead = 0;
            } else {
                self.lead -= batch * d;
            }
        }
        if self.lead > 0 {
            return (0, frames * k);
        }
        // Straight from the window: the next frame's window starts at `skip`.
        let mut start = self.skip;
        while frames < room && start + len <= window.len() {
            let batch = ((window.len() - start - len) / d + 1)
                .min(room - frames)
                .min(FRAMES);
            self.run_on(window, start, batch, &mut output[frames * k..]);
            frames += batch;
            start += batch * d;
        }
        // At the end, once no frame is left, the rest is consumed too.
        let consume = if end && start + len > window.len() {
            window.len()
        } else {
            start
        };
        self.skip = start.saturating_sub(consume);
        (consume, frames * k)
    }

    /// `batch` frames whose windows start at `buf[first]`, `buf[first + D]`, … of the internal
    /// buffer.
    fn run(&mut self, first: usize, batch: usize, out: &mut [Complex32]) {
        let buf = std::mem::take(&mut self.buf);
        self.run_on(&buf[..self.filled], first, batch, out);
        self.buf = buf;
    }

    /// `batch` frames whose windows start at `x[first]`, `x[first + D]`, …
    fn run_on(&mut self, x: &[Complex32], first: usize, batch: usize, out: &mut [Complex32]) {
        let (m, d, k) = (self.m, self.decimation, self.channels.len());
        let x: &[f32] = bytemuck::cast_slice(x);
        let starts: [usize; FRAMES] = std::array::from_fn(|f| first + f * d);
        let frames: &mut [f32] = bytemuck::cast_slice_mut(&mut self.frames[..batch * m]);
        let mut rows = frames.chunks_exact_mut(2 * m);
        let mut views: [&mut [f32]; FRAMES] =
            std::array::from_fn(|_| rows.next().unwrap_or_default());
        mac(&self.h, m, x, &starts[..batch], &mut views[..batch]);
        self.fft
            .process_with_scratch(&mut self.frames[..batch * m], &mut self.scratch);
        for (f, spectrum) in self.frames[..batch * m].chunks_exact(m).enumerate() {
            let out = &mut out[f * k..(f + 1) * k];
            if self.rows.is_empty() {
                let turns = self.turn.iter_mut().zip(&self.turn_step);
                for ((y, &c), (turn, &step)) in out.iter_mut().zip(&self.channels).zip(turns) {
                    *y = spectrum[c] * self.turns[*turn];
                    *turn += step;
                    if *turn >= m {
                        *turn -= m;
                    }
                }
                continue;
            }
            let factors = &self.rows[self.row * k..(self.row + 1) * k];
            for &(slot, bin, len) in &self.runs {
                super::cmul(
                    &spectrum[bin..bin + len],
                    &factors[slot..slot + len],
                    &mut out[slot..slot + len],
                );
            }
            self.row += 1;
            if self.row * k == self.rows.len() {
                self.row = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;
    use rand::{Rng, SeedableRng};

    /// The definition in the module docs, in f64, for channel `k`.
    fn reference(h: &[f32], m: usize, d: usize, k: usize, x: &[Complex32]) -> Vec<Complex64> {
        (0..=(x.len() - 1) / d)
            .map(|n| {
                (0..h.len().min(n * d + 1))
                    .map(|i| {
                        let s = n * d - i;
                        let v = Complex64::new(x[s].re.into(), x[s].im.into());
                        let turn = ((k * s) % m) as f64 / m as f64;
                        v * f64::from(h[i]) * Complex64::from_polar(1.0, -TAU * turn)
                    })
                    .sum()
            })
            .collect()
    }

    fn noise(n: usize, seed: u64) -> Vec<Complex32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| Complex32::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
            .collect()
    }

    #[test]
    fn every_channel_matches_the_f64_definition_in_random_chunks() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(12);
        let cases: [(usize, usize, usize, Option<&[usize]>); 7] = [
            (16, 3, 40, None), // a 256-entry factor table: the per-frame fallback
            (8, 8, 32, None),
            (5, 5, 17, None),
            (12, 6, 60, None),
            (16, 8, 48, Some(&[3, 0, 15, 7])),
            (7, 3, 30, None),
            (64, 64, 1152, Some(&[1, 63])),
        ];
        for (m, d, taps, outputs) in cases {
            let h: Vec<f32> = (0..taps).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let x = noise(3000, m as u64);
            let mut ch = Channelizer::new(m, d, &h, outputs).unwrap();
            let k = ch.outputs().len();
            let (mut got, mut at) = (Vec::new(), 0);
            let mut out = vec![Complex32::default(); 50 * k];
            loop {
                let chunk = rng.gen_range(0..400).min(x.len() - at);
                // Once the input is all in, drain with full-size outputs.
                let cap = if at == x.len() {
                    out.len()
                } else {
                    rng.gen_range(0..=out.len())
                };
                let (c, p) = ch.process(&x[at..at + chunk], &mut out[..cap]);
                assert_eq!(p % k, 0);
                got.extend_from_slice(&out[..p]);
                at += c;
                if at == x.len() && p == 0 && chunk == 0 {
                    break;
                }
            }
            let frames = (x.len() - 1) / d + 1;
            assert_eq!(got.len(), frames * k, "M {m} D {d}");
            let scale = (taps as f64).sqrt();
            for (slot, &c) in ch.outputs().iter().enumerate() {
                let want = reference(&h, m, d, c, &x);
                for (n, w) in want.iter().enumerate() {
                    let g = got[n * k + slot];
                    let err = (Complex64::new(g.re.into(), g.im.into()) - w).norm();
                    assert!(
                        err < 2e-6 * scale,
                        "M {m} D {d} channel {c} frame {n}: {g} vs {w}"
                    );
                }
            }
            // The same bits in one call (a graph spread over machines cuts other chunks).
            ch.reset();
            let mut whole = vec![Complex32::default(); got.len()];
            let (_, p) = ch.process(&x, &mut whole);
            assert!(
                whole[..p] == got[..p],
                "M {m} D {d}: chunking changed the bits"
            );
        }
    }

    /// Reading in place, with windows of random lengths and outputs of random room (the caller
    /// keeping what it was not told to consume), gives the buffered path's bits, the frames
    /// near the start included.
    #[test]
    fn in_place_windows_give_the_buffered_bits() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for (m, d, taps, outputs) in [
            (16, 16, 64, None),
            (16, 8, 48, Some(&[3, 0, 15, 7][..])),
            (7, 3, 30, None),
            (12, 12, 7, None),
            (64, 64, 1152, None),
        ] {
            let h: Vec<f32> = (0..taps).map(|_| rng.gen_range(-1.0..1.0)).collect();
            for n in [1, 5, 29, 3000] {
                let x = noise(n, (m + n) as u64);
                let mut ch = Channelizer::new(m, d, &h, outputs).unwrap();
                let k = ch.outputs().len();
                let mut want = vec![Complex32::default(); (n / d + 2) * k];
                let (_, p) = ch.process(&x, &mut want);
                want.truncate(p);
                let mut ch = Channelizer::new(m, d, &h, outputs).unwrap();
                let (mut got, mut at, mut arrived) = (Vec::new(), 0, 0);
                let mut out = vec![Complex32::default(); 20 * k];
                for _ in 0..100_000 {
                    arrived = (arrived + rng.gen_range(0..500)).min(n);
                    let end = arrived == n;
                    let cap = rng.gen_range(0..=out.len());
                    let (c, p) = ch.process_window(&x[at..arrived], end, &mut out[..cap]);
                    assert_eq!(p % k, 0);
                    got.extend_from_slice(&out[..p]);
                    at += c;
                    if end && at == n {
                        break;
                    }
                }
                assert_eq!(at, n, "M {m} D {d} n {n}: input not all consumed");
                assert!(
                    got == want,
                    "M {m} D {d} n {n}: {} vs {} samples or other bits",
                    got.len(),
                    want.len()
                );
            }
        }
    }

    /// Power of each channel (dB, relative to the input tone) for a tone at channel `k`'s
    /// centre, after the filter has filled.
    fn leakage(ch: &mut Channelizer, k: usize) -> Vec<f64> {
        let m = ch.channels();
        let x: Vec<Complex32> = (0..40 * m * ch.taps_per_branch())
            .map(|n| Complex32::from_polar(1.0, (TAU * ((k * n) % m) as f64 / m as f64) as f32))
            .collect();
        ch.reset();
        let mut out = vec![Complex32::default(); x.len() / ch.decimation() * m + m];
        let (_, p) = ch.process(&x, &mut out);
        let skip = 2 * ch.taps_per_branch() * m / ch.decimation();
        let frames = &out[skip * m..p];
        (0..m)
            .map(|c| {
                let power: f64 = frames
                    .iter()
                    .skip(c)
                    .step_by(m)
                    .map(|v| f64::from(v.norm_sqr()))
                    .sum();
                10.0 * (power / (frames.len() / m) as f64).log10()
            })
            .collect()
    }

    #[test]
    fn a_tone_at_each_centre_stays_in_its_channel_by_60_db() {
        for (m, oversample) in [(16, 1), (15, 1), (16, 2), (10, 2)] {
            let h = Channelizer::prototype(m, 18).unwrap();
            let mut ch = Channelizer::new(m, m / oversample, &h, None).unwrap();
            let mut worst = f64::NEG_INFINITY;
            for k in 0..m {
                let db = leakage(&mut ch, k);
                assert!(db[k].abs() < 0.01, "M {m}: channel {k} gain {} dB", db[k]);
                for (c, &v) in db.iter().enumerate() {
                    if c != k {
                        worst = worst.max(v);
                    }
                }
            }
            assert!(worst < -60.0, "M {m} x{oversample}: leakage {worst} dB");
        }
    }

    #[test]
    fn invalid_configurations_are_refused() {
        let h = [1.0f32; 8];
        assert!(Channelizer::new(1, 1, &h, None).is_err());
        assert!(Channelizer::new(4, 0, &h, None).is_err());
        assert!(Channelizer::new(4, 5, &h, None).is_err());
        assert!(Channelizer::new(4, 4, &[], None).is_err());
        assert!(Channelizer::new(4, 4, &h, Some(&[4])).is_err());
        assert!(Channelizer::new(4, 4, &h, Some(&[1, 1])).is_err());
        let e = Channelizer::new(4, 4, &h, Some(&[])).unwrap_err();
        assert!(e.to_string().contains("outputs"), "{e}");
        assert!(Channelizer::prototype(4, 0).is_err());
    }
}
