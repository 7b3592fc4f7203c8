//! Burst detection by power: a moving average of `|x|²` over `window` samples against a
//! threshold with hysteresis and a hold-off.
//!
//! A burst opens when the average rises above `threshold`; it closes once the average has
//! stayed below `threshold − hysteresis` for `holdoff` samples (a dip shorter than that, or a
//! rise back above `threshold`, keeps it open), or after `max_len` samples. Its power is the
//! highest average seen in it (the plateau of a burst longer than the window). Because the
//! average lags, its edges are then moved back by how long an average of that power takes to
//! cross each threshold, so that a clean burst's start and end are found within a few samples
//! (the tests hold them to a quarter of the window at 20 dB SNR).

use crate::DspError;
use num_complex::Complex32;

/// A burst found: its first and last samples (absolute indices) and its power.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    /// Index of its first sample.
    pub start: u64,
    /// Index of its last sample (inclusive).
    pub end: u64,
    /// Its power, in dB (10·log10 of the mean `|x|²` on its plateau).
    pub power_db: f64,
    /// It reached `max_len` and was cut there.
    pub truncated: bool,
}

impl Burst {
    /// Samples in the burst.
    pub fn len(&self) -> u64 {
        self.end + 1 - self.start
    }

    /// Whether the burst has no samples (never: a burst has at least one).
    pub fn is_empty(&self) -> bool {
        false
    }
}

#[derive(Debug, Clone, Copy)]
enum State {
    Idle,
    Active {
        /// Where the average first rose above the threshold.
        detect: u64,
        peak: f64,
        /// Where it last fell below the lower threshold, while it stays there.
        fall: Option<u64>,
    },
}

/// Scans a stream for bursts; see the module docs.
#[derive(Debug, Clone)]
pub struct BurstScanner {
    on: f64,
    off: f64,
    holdoff: u64,
    max_len: u64,
    powers: Vec<f64>,
    pos: usize,
    sum: f64,
    next: u64,
    state: State,
}

impl BurstScanner {
    /// A scanner with threshold `threshold_db` (dB of `|x|²`), closing `hysteresis_db` below it,
    /// averaging over `window` samples, holding off `holdoff` samples, cutting bursts at
    /// `max_len` samples.
    pub fn new(
        threshold_db: f64,
        hysteresis_db: f64,
        window: usize,
        holdoff: u64,
        max_len: u64,
    ) -> Result<Self, DspError> {
        let bad = |name, value: String, expected| DspError::InvalidDesign {
            name,
            value,
            expected,
        };
        if !threshold_db.is_finite() {
            return Err(bad(
                "threshold_db",
                threshold_db.to_string(),
                "a finite number of dB",
            ));
        }
        if !(hysteresis_db.is_finite() && hysteresis_db >= 0.0) {
            return Err(bad(
                "hysteresis_db",
                hysteresis_db.to_string(),
                "0 dB or more",
            ));
        }
        if window == 0 || window > 1 << 20 {
            return Err(bad("window", window.to_string(), "1 to 1048576 samples"));
        }
        if max_len < window as u64 {
            return Err(bad("max_len", max_len.to_string(), "at least the window"));
        }
        Ok(BurstScanner {
            on: 10f64.powf(threshold_db / 10.0),
            off: 10f64.powf((threshold_db - hysteresis_db) / 10.0),
            holdoff,
            max_len,
            powers: vec![0.0; window],
            pos: 0,
            sum: 0.0,
            next: 0,
            state: State::Idle,
        })
    }

    /// Index of the next sample [`BurstScanner::scan`] expects.
    pub fn next_index(&self) -> u64 {
        self.next
    }

    /// The first sample that may still belong to a burst not reported yet: samples before it
    /// are settled (no tag will be put on them).
    pub fn settled(&self) -> u64 {
        let w = self.powers.len() as u64;
        match self.state {
            State::Idle => self.next.saturating_sub(w),
            State::Active { detect, .. } => (detect + 1).saturating_sub(w),
        }
    }

    /// Scans `x`, the samples from [`BurstScanner::next_index`] on, adding the bursts that
    /// close in it to `out`.
    pub fn scan(&mut self, x: &[Complex32], out: &mut Vec<Burst>) {
        let w = self.powers.len();
        for s in x {
            let n = self.next;
            let p = f64::from(s.norm_sqr());
            self.sum += p - self.powers[self.pos];
            self.powers[self.pos] = p;
            self.pos = (self.pos + 1) % w;
            self.next += 1;
            // Rounding drift of the running sum is removed once per window.
            if self.pos == 0 {
                self.sum = self.powers.iter().sum();
            }
            let avg = self.sum.max(0.0) / w as f64;
            self.state = match self.state {
                State::Idle if avg > self.on => State::Active {
                    detect: n,
                    peak: avg,
                    fall: None,
                },
                State::Idle => State::Idle,
                State::Active { detect, peak, fall } => {
                    let peak = peak.max(avg);
                    let start = self.start_of(detect, peak);
                    if n + 1 - start >= self.max_len {
                        out.push(self.close(detect, peak, n, true));
                        State::Idle
                    } else {
                        match fall {
                            None if avg < self.off => State::Active {
                                detect,
                                peak,
                                fall: Some(n),
                            },
                            Some(_) if avg > self.on => State::Active {
                                detect,
                                peak,
                                fall: None,
                            },
                            Some(f) if n - f >= self.holdoff => {
                                out.push(self.close(detect, peak, f, false));
                                State::Idle
                            }
                            fall => State::Active { detect, peak, fall },
                        }
                    }
                }
            };
        }
    }

    /// At the end of the stream: closes a burst still open at its last sample.
    pub fn finish(&mut self, out: &mut Vec<Burst>) {
        if let State::Active { detect, peak, fall } = self.state {
            let last = self.next.saturating_sub(1);
            let burst = match fall {
                Some(f) => self.close(detect, peak, f, false),
                None => Burst {
                    end: last,
                    ..self.close(detect, peak, last, true)
                },
            };
            out.push(burst);
            self.state = State::Idle;
        }
    }

    /// Where a burst of plateau power `peak` began, given where its average crossed the
    /// threshold: an average rising linearly over the window crosses `on` after `w·on/peak`.
    fn start_of(&self, detect: u64, peak: f64) -> u64 {
        let w = self.powers.len() as f64;
        let lag = (w * self.on / peak).ceil().clamp(1.0, w) as u64;
        (detect + 1).saturating_sub(lag)
    }

    fn close(&self, detect: u64, peak: f64, fall: u64, truncated: bool) -> Burst {
        let w = self.powers.len() as f64;
        let start = self.start_of(detect, peak);
        // The falling average crosses `off` `w·(1 − off/peak)` samples after the last one.
        let lag = if truncated {
            0
        } else {
            (w * (1.0 - self.off / peak)).round().clamp(0.0, w) as u64
        };
        Burst {
            start,
            end: fall.saturating_sub(lag).max(start),
            power_db: 10.0 * peak.log10(),
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Noise of power `noise` (deterministic) with bursts (start, len, amplitude).
    fn signal(len: usize, bursts: &[(usize, usize, f32)], noise: f32) -> Vec<Complex32> {
        let mut state = 12345u32;
        let mut uniform = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let sigma = (noise * 6.0).sqrt(); // a uniform of width 1 has variance 1/12, per part
        let mut x: Vec<Complex32> = (0..len)
            .map(|_| Complex32::new(uniform() * sigma, uniform() * sigma))
            .collect();
        for &(start, n, a) in bursts {
            for (k, s) in x[start..start + n].iter_mut().enumerate() {
                let ph = 0.3 * k as f32;
                *s += Complex32::new(a * ph.cos(), a * ph.sin());
            }
        }
        x
    }

    fn scan_in_chunks(x: &[Complex32], chunk: usize) -> Vec<Burst> {
        let mut s = BurstScanner::new(-10.0, 3.0, 32, 64, 100_000).unwrap();
        let mut out = Vec::new();
        for c in x.chunks(chunk) {
            s.scan(c, &mut out);
        }
        s.finish(&mut out);
        out
    }

    #[test]
    fn finds_every_burst_at_its_place_and_power_and_no_other() {
        // Noise at -30 dB, bursts at 0 dB and -6 dB (amplitude 1 and 0.5).
        let truth = [(1000, 500, 1.0), (3000, 2000, 0.5), (7000, 200, 1.0)];
        let x = signal(9000, &truth, 1e-3);
        let found = scan_in_chunks(&x, 4096);
        assert_eq!(found.len(), truth.len(), "{found:?}");
        for (b, &(start, len, a)) in found.iter().zip(&truth) {
            let end = (start + len - 1) as i64;
            assert!(
                (b.start as i64 - start as i64).abs() <= 8,
                "{b:?} vs {start}"
            );
            assert!((b.end as i64 - end).abs() <= 8, "{b:?} vs {end}");
            let db = 20.0 * f64::from(a).log10();
            assert!((b.power_db - db).abs() < 0.5, "{b:?} vs {db} dB");
            assert!(!b.truncated);
        }
    }

    #[test]
    fn chunking_does_not_change_what_is_found() {
        let x = signal(6000, &[(500, 700, 1.0), (2500, 90, 0.7)], 1e-3);
        let whole = scan_in_chunks(&x, x.len());
        for chunk in [1, 7, 64, 1000] {
            assert_eq!(scan_in_chunks(&x, chunk), whole, "chunks of {chunk}");
        }
    }

    #[test]
    fn a_short_dip_inside_the_holdoff_does_not_split_a_burst() {
        let mut x = signal(3000, &[(500, 1000, 1.0)], 1e-4);
        for s in &mut x[900..930] {
            *s *= 0.01; // 30 samples of fade, shorter than the hold-off of 64
        }
        let found = scan_in_chunks(&x, 512);
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn noise_alone_finds_nothing_and_bad_settings_are_refused() {
        assert!(scan_in_chunks(&signal(20_000, &[], 1e-3), 999).is_empty());
        assert!(BurstScanner::new(f64::NAN, 3.0, 32, 0, 100).is_err());
        assert!(BurstScanner::new(0.0, -1.0, 32, 0, 100).is_err());
        assert!(BurstScanner::new(0.0, 3.0, 0, 0, 100).is_err());
        assert!(BurstScanner::new(0.0, 3.0, 32, 0, 10).is_err());
    }
}
